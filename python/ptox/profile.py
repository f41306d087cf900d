"""Per-kernel profiles and task traces of compiled runs, from Python (the CLI's --profile / --trace).

    with ptox.profile() as p:
        model.prefill(ids)
    print(p.table)          # per kernel: calls, total and mean time, GB/s, GFLOP/s
    p.save("trace.json")    # one track per worker; open in ui.perfetto.dev or chrome://tracing

Every compiled run in the block is recorded, from any thread, one after another on one timeline;
interpreter runs have no tasks to record.
"""

from . import _core

# "<jit name>" -> the function mapping that label's positions in a text to the Python source, for
# every @ptox.jit function: a kernel's name holds the position of its incore scope.
_jit_positions = {}


def _python_positions(name):
    for label, where in _jit_positions.items():
        if label in name:
            name = where(name)
    return name


class profile:
    """A context manager recording the tasks of the compiled runs inside it (they do not nest)."""

    def __init__(self):
        self.table = ""
        self.trace_json = ""

    def __enter__(self):
        _core.trace_begin()
        return self

    def __exit__(self, *exc):
        self.trace_json, self.table = _core.trace_end(_python_positions)
        return False

    def save(self, path):
        """Writes the Chrome / Perfetto trace JSON to `path`."""
        with open(path, "w") as f:
            f.write(self.trace_json)
