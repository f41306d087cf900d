"""The exceptions ptox raises: one base class, one subclass per kind of failure.

Every message carries the C++ diagnostic; for a program written with ``@ptox.jit`` it starts with
the Python file:line:col of the offending expression.
"""


class Error(Exception):
    """Anything ptox reports."""


class InvalidError(Error, ValueError):
    """Bad input: a malformed or ill-typed program, or arguments that do not fit it."""


class CompileError(InvalidError):
    """The program is not valid ptox (a syntax, type or verifier error, or a Python construct
    the language does not have)."""


class ShapeError(InvalidError):
    """Arguments that do not fit the kernel: their number, ndim, dtype or shape, an output that
    aliases another argument, a symbolic dim two arguments disagree on."""


class UnsupportedError(Error):
    """A documented limitation, or a target this host cannot run."""


class ToolchainError(Error):
    """The host C++ compiler failed."""


class KernelError(Error, RuntimeError):
    """A kernel failed while it ran (an out-of-bounds offset, an integer overflow, a NaN with
    check_nan, ...): the message names the op and its position."""


class CheckError(Error):
    """``check=True``: the target's result differs from the interpreter's beyond the documented
    bound."""


class InternalError(Error):
    """A bug in ptox; please report it with the program."""
