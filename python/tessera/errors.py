"""Tessera's errors as Python exceptions.

Every error carries the stable code of docs/errors.md (``E203``...), the
message, and for IR text the file, line and column. The class follows the
code's family, so callers can catch as broadly or narrowly as they need::

    Error                  every Tessera error
      ParseError           E1xx  IR text that does not parse
      VerifyError          E2xx-E5xx  IR that is not valid, or cannot be lowered or rendered
      ExecutionError       E6xx-E7xx  the runtime refused or failed (shapes, devices, toolchains)
      CheckError           E8xx  the oracle disagreed with a kernel (check=True)
      ArgumentError        E9xx  bad arguments from Python (arrays, tracing)
        TraceError         E94x  an operation a traced function cannot express
"""
from __future__ import annotations

from typing import Optional


class Error(Exception):
    """A Tessera diagnostic: ``code``, ``message``, and ``file``/``line``/``col`` (None when not from IR text)."""

    def __init__(self, code: str, message: str, file: Optional[str] = None, line: Optional[int] = None,
                 col: Optional[int] = None, text: Optional[str] = None):
        self.code = code
        self.message = message
        self.file = file
        self.line = line
        self.col = col
        if text is None:
            where = f"{file}:{line}:{col}: " if line else ""
            text = f"{where}error[{code}]: {message}"
        super().__init__(text)


class ParseError(Error):
    """E1xx: IR text that does not parse."""


class VerifyError(Error):
    """E2xx-E5xx: IR that is not valid, or that cannot be lowered or rendered."""


class ExecutionError(Error):
    """E6xx-E7xx: the runtime refused a call or a kernel could not be built or run."""


class CheckError(Error):
    """E8xx: a kernel or result disagreed with the oracle (check=True); see ``last_check``."""


class ArgumentError(Error):
    """E9xx: a bad argument from Python (an array Tessera cannot take without a copy, a bad option)."""


class TraceError(ArgumentError):
    """E940-E959: an operation on a traced tensor that Graph IR cannot express."""


_FAMILIES = {"1": ParseError, "2": VerifyError, "3": VerifyError, "4": VerifyError, "5": VerifyError,
             "6": ExecutionError, "7": ExecutionError, "8": CheckError, "9": ArgumentError}


def class_of(code: str) -> type:
    if code.startswith("E94") or code.startswith("E95"):
        return TraceError
    return _FAMILIES.get(code[1:2], Error)


def from_diagnostic(code: str, message: str, file: Optional[str], line: Optional[int], col: Optional[int],
                    text: str) -> Error:
    """The exception for one diagnostic of the native core (called by tessera._core)."""
    return class_of(code)(code, message, file, line, col, text)


def trace_error(code: str, message: str) -> TraceError:
    return TraceError(code, message)
