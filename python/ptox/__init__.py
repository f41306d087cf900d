"""ptox: tile programs written once, run on every target, checked against a reference interpreter.

    import numpy as np
    import ptox
    import ptox.lang as pl

    @ptox.jit
    def scale_add(x: pl.In["N", 128, pl.f32], y: pl.In["N", 128, pl.f32]) -> pl.Out["N", 128, pl.f32]:
        return x * 2.0 + y

    z = scale_add(np.ones((7, 128), np.float32), np.ones((7, 128), np.float32))

docs/python.md has the language, the calling convention, dtypes, caching and errors.
"""

import os as _os
import re as _re
import threading as _threading

# The CPU targets compile generated code against the kernel headers shipped in this package
# (a user's PTOX_KERNELS_DIR wins).
_here = _os.path.dirname(_os.path.abspath(__file__))
if _os.path.isdir(_os.path.join(_here, "kernels")):
    _os.environ.setdefault("PTOX_KERNELS_DIR", _here)

from . import errors  # noqa: E402
from ._core import __version__  # noqa: E402
from . import _core  # noqa: E402
from .errors import (CheckError, CompileError, Error, InternalError, InvalidError,  # noqa: E402
                     KernelError, ShapeError, ToolchainError, UnsupportedError)
from .kernel import Kernel  # noqa: E402
from .profile import _jit_positions, profile  # noqa: E402
from . import lang  # noqa: E402

__all__ = ["jit", "load", "parse", "Kernel", "JitFunction", "available_targets", "build_manifest",
           "cache_dir", "rank", "world_size",
           "lang", "profile",
           "Error", "InvalidError", "CompileError", "ShapeError", "UnsupportedError",
           "ToolchainError", "KernelError", "CheckError", "InternalError", "__version__"]


def _end_every_rank_on_uncaught_exceptions():
    """Under an MPI launcher (`mpirun -np N python ...`), an exception that ends this rank ends
    every rank, as `ptox run` does: the others would otherwise wait in their next collective
    until its timeout (docs/distributed.md)."""
    if not any(_os.environ.get(v) for v in ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK")):
        return
    import sys
    previous = sys.excepthook

    def hook(kind, value, tb):
        previous(kind, value, tb)  # the traceback first
        _core.abort_run(f"uncaught {kind.__name__}: {value}", 1)

    sys.excepthook = hook


_end_every_rank_on_uncaught_exceptions()


def rank():
    """This process's rank in a distributed run (0 alone; under mpirun, MPI starts here)."""
    return _core.rank_info()[0]


def world_size():
    """The ranks of the distributed run this process is part of (1 alone)."""
    return _core.rank_info()[1]


def available_targets():
    """The targets this host runs, best first ("interp" last)."""
    return _core.available_targets()


def build_manifest():
    """What this package was built from and how (as `ptox version --verbose --json`): version,
    commit, whether the tree was dirty, the source tree id, build time, compiler and flags, and
    per target the identity its compile cache entries are keyed on. `ptox doctor` compares it
    with the CLI's to find a stale package; benchmarks record it."""
    import json
    return json.loads(_core.build_manifest_json())


def cache_dir():
    """The compile cache's folder: $PTOX_CACHE_DIR, else ~/.cache/ptox (the CLI's rule)."""
    return _core.cache_dir()


def _program(text, filename):
    try:
        return _core.Program.parse(text, filename)
    except InvalidError as e:
        raise CompileError(str(e)) from None


def parse(text, function="", filename="<input>", **kwargs):
    """A Kernel of .pto text."""
    return Kernel(_program(text, filename), function, **kwargs)


def load(path, function="", **kwargs):
    """A Kernel of a .pto file."""
    try:
        program = _core.Program.from_file(path)
    except InvalidError as e:
        raise CompileError(str(e)) from None
    return Kernel(program, function, **kwargs)


class JitFunction(Kernel):
    """A Python function compiled from its AST (``@ptox.jit``); call it like the function.

    Decorating only records the function: its translation to IR (and any language error, as a
    CompileError at the Python file:line:col) happens on first use (a call, ``.ir()``,
    ``.params``, ``.source()``), as Triton's ``@jit`` does, so importing a module of kernels costs
    nothing and the module constants the function reads may be defined after it."""

    # What the translation makes; the first read of any of them translates (see __getattr__).
    _TRANSLATED = frozenset({"program", "_params", "_n", "_written", "_name", "_text",
                             "_line_map"})

    def __init__(self, fn, target="cpu", threads=0, constants=None):
        self.__wrapped__ = fn
        self.__name__ = fn.__name__
        self.__doc__ = fn.__doc__
        self._constants = constants
        self._translating = _threading.Lock()
        super().__init__(None, fn.__name__, target, threads, self._python_positions)

    def __getattr__(self, name):
        # Called only for attributes not set yet: after the first translation these are plain
        # instance attributes, so a call pays nothing for the laziness.
        if name not in JitFunction._TRANSLATED:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        self._translate()
        return self.__dict__[name]

    def _translate(self):
        """Translates the function to .pto text and parses it into the program (once, whatever
        threads call it first); a language error is a CompileError naming the Python source."""
        with self._translating:
            if "program" in self.__dict__:
                return
            fn = self.__wrapped__
            text, self._line_map = lang.translate(fn, self._constants)
            try:
                program = _core.Program.parse(text, f"<jit {fn.__name__}>")
            except InvalidError as e:
                raise CompileError(self._python_positions(str(e))) from None
            self._text = text
            # the kernel names in ptox.profile tables
            _jit_positions[f"<jit {fn.__name__}>"] = self._python_positions
            self._set_program(program)  # other threads wait on the lock, then see it all

    def _python_positions(self, message):
        """The message with each position in the generated text replaced by the Python
        file:line:col of the expression that wrote that line."""
        fn = self.__wrapped__
        line_map = self.__dict__.get("_line_map", {})
        pattern = _re.compile(_re.escape(f"<jit {fn.__name__}>") + r":(\d+)(?::\d+)?")

        def python_position(m):
            line = int(m.group(1)) - 1  # text line 1 is the func header
            return line_map.get(line) or f"{fn.__code__.co_filename}:{fn.__code__.co_firstlineno}"
        return pattern.sub(python_position, message)

    def ir(self):
        return self._text

    @property
    def __ptox_function__(self):
        """The Python function: a kernel that calls this one inlines it (ptox.lang)."""
        return self.__wrapped__


def inline(fn):
    """Marks a Python function written in the ptox language as one @ptox.jit kernels may call
    (``@ptox.jit`` functions may be called too). It is written once per kind of arguments —
    compile-time constants (ints, floats, bools: ``if HEAD_DIM == 64`` keeps one arm) and the
    types of tensors, tiles and scalars — and inlined where it is called. It returns one value,
    a tuple, or nothing; parameters without annotations take their arguments' types."""
    fn.__ptox_function__ = fn
    return fn


def jit(fn=None, *, target="cpu", threads=0, constants=None):
    """Compiles a Python function written in the ptox language (``ptox.lang``) from its AST.
    ``constants={"D": 576}``: compile-time values the function reads by name (shapes, loop
    bounds, immediates, and ifs that keep only the arm taken) — one program per set of values,
    as a model's layer is specialized on its configuration."""
    if fn is None:
        return lambda f: JitFunction(f, target, threads, constants)
    return JitFunction(fn, target, threads, constants)
