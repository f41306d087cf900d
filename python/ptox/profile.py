"""Per-kernel profiles and task traces of compiled runs, from Python (the CLI's --profile / --trace).

    with ptox.profile() as p:
        model.prefill(ids)
    print(p.table)          # per kernel: calls, total and mean time, GB/s, GFLOP/s
    p.save("trace.json")    # one track per worker; open in ui.perfetto.dev or chrome://tracing

Every compiled run in the block is recorded, from any thread, one after another on one timeline;
interpreter runs have no tasks to record.
"""

from . import _core


class profile:
    """A context manager recording the tasks of the compiled runs inside it (they do not nest)."""

    def __init__(self):
        self.table = ""
        self.trace_json = ""

    def __enter__(self):
        _core.trace_begin()
        return self

    def __exit__(self, *exc):
        self.trace_json, self.table = _core.trace_end()
        return False

    def save(self, path):
        """Writes the Chrome / Perfetto trace JSON to `path`."""
        with open(path, "w") as f:
            f.write(self.trace_json)
