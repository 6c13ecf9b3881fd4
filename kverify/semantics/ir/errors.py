"""Diagnostics for bad input: every user-facing error is ``file:line:col: message``."""
from __future__ import annotations


class KernelError(Exception):
    """Bad input (syntax, unsupported structure, compile failure) at a source position.

    The CLI prints ``str(err)`` and exits with code 2; it never shows a traceback.
    """

    def __init__(self, message: str, file: str | None = None, line: int = 0, col: int = 0):
        super().__init__(message)
        self.message = message
        self.file = file or "<input>"
        self.line = line
        self.col = col

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}: {self.message}"


class Unsupported(Exception):
    """A construct an analysis does not model (an instruction, a form, a summary it cannot
    build): whatever it would have decided is ``unknown``, with this message as the reason.
    ``instr`` is the instruction at fault when there is one."""

    def __init__(self, message, instr=None):
        super().__init__(message)
        self.instr = instr
