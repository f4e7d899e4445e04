"""Tessera's errors as Python exceptions.

Every error carries the stable code of docs/errors.md (``"E203"``...), the
message, and, when it comes from IR text, the file, line and column. The class
follows the code's family, so callers catch as broadly or as narrowly as they
need::

    Error                  every Tessera error
      ParseError           E1xx       IR text that does not parse (and misuse of the builder API, E13x)
      VerifyError          E2xx-E5xx  IR that is not valid, or cannot be scheduled, lowered or rendered
      ExecutionError       E6xx-E7xx  the runtime refused a call or failed (shape guards, devices, toolchains)
      CheckError           E8xx       the oracle disagreed with a kernel or a result (check=True)
      ArgumentError        E9xx       arguments from Python Tessera cannot take as they are (E930-E935)
        TraceError         E940-E959  an operation a traced function cannot express in Graph IR
      InternalError        E999       a bug in Tessera, never in its input

``str(e)`` is the one-line diagnostic the CLI would print, e.g.
``<input>:3:5: error[E203]: axis 2 out of range for rank 2``.
"""
from __future__ import annotations

from typing import Optional

__all__ = ["Error", "ParseError", "VerifyError", "ExecutionError", "CheckError", "ArgumentError",
           "TraceError", "InternalError", "error_class", "from_diagnostic"]


class Error(Exception):
    """A Tessera diagnostic.

    Attributes:
        code: the stable code, ``"E203"``; docs/errors.md lists them all.
        message: the message without location or code.
        file, line, col: where in IR text the error is (``None`` when it is not about IR text).
    """

    code: str
    message: str
    file: Optional[str]
    line: Optional[int]
    col: Optional[int]

    def __init__(self, code: str, message: str, file: Optional[str] = None, line: Optional[int] = None,
                 col: Optional[int] = None, text: Optional[str] = None):
        self.code = code
        self.message = message
        self.file = file
        self.line = line
        self.col = col
        if text is None:
            where = f"{file}:{line}:{col}: " if file is not None and line is not None else ""
            text = f"{where}error[{code}]: {message}"
        super().__init__(text)

    def __reduce__(self):
        # Exception pickles as cls(*self.args), which would lose the fields (multiprocessing pickles errors).
        return (type(self), (self.code, self.message, self.file, self.line, self.col, str(self)))


class ParseError(Error):
    """E1xx: IR text that does not parse (or an IR file that cannot be read, E109)."""


class VerifyError(Error):
    """E2xx-E5xx: IR that is not valid (types, shapes, attributes), or that cannot be lowered or rendered."""


class ExecutionError(Error):
    """E6xx-E7xx: the runtime refused a call (wrong count, shape or dtype, E610/E611; misaligned data, E603)
    or a kernel could not be built or run (no compiler, no GPU: E702, E730)."""


class CheckError(Error):
    """E8xx: a kernel or a result disagreed with the oracle (check=True); the report is ``fn.last_check``."""


class ArgumentError(Error):
    """E9xx: an argument from Python Tessera cannot take as it is. Arrays are never copied or converted:
    not C-contiguous (E930), on another device (E931), an element type Tessera lacks (E932), not an
    array at all (E934), a torch tensor that autograd tracks (E935)."""


class TraceError(ArgumentError):
    """E940-E959: what a traced function does that Graph IR cannot express (docs/python.md lists them)."""


class InternalError(Error):
    """E999: a broken invariant inside Tessera: a bug to report, not a problem with the input."""


_FAMILIES = {"1": ParseError, "2": VerifyError, "3": VerifyError, "4": VerifyError, "5": VerifyError,
             "6": ExecutionError, "7": ExecutionError, "8": CheckError, "9": ArgumentError}


def error_class(code: str) -> type:
    """The exception class of a diagnostic code (``"E940"`` -> TraceError)."""
    if code == "E999":
        return InternalError
    if code[:3] in ("E94", "E95"):
        return TraceError
    return _FAMILIES.get(code[1:2], Error)


def from_diagnostic(code: str, message: str, file: Optional[str], line: Optional[int], col: Optional[int],
                    text: str) -> Error:
    """The exception for one diagnostic of the native core; tessera._core calls it and raises the result."""
    return error_class(code)(code, message, file, line, col, text)
