"""PTX front end, what both readers share: the raw statements they produce (``_Raw``), the
literal conversions, the ``.file`` table, and the grammar's token regexes. Imports no lark:
a module the fast path reads whole never loads the parser (``ptx_fast``).
"""
from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

from .nodes import FImm

GRAMMAR = Path(__file__).with_name("ptx.lark")
#: Entries a front-end memo holds before it is emptied.
_CACHE_LIMIT = 200_000


def _int(tok) -> int:
    s = str(tok).rstrip("uU")
    neg = s.startswith("-")
    s = s.lstrip("-")
    if s[:2] in ("0x", "0X"):
        v = int(s, 16)
    elif len(s) > 1 and s[0] == "0":
        v = int(s, 8)
    else:
        v = int(s)
    return -v if neg else v


def _float(tok) -> FImm:
    s = str(tok)
    if s[:2] in ("0f", "0F"):
        return FImm(int(s[2:], 16), 32)
    if s[:2] in ("0d", "0D"):
        return FImm(int(s[2:], 16), 64)
    import struct

    return FImm(struct.unpack("<Q", struct.pack("<d", float(s)))[0], 64)


class _Raw:
    """A raw statement produced by the grammar callbacks, resolved by ``_Assembler``."""

    __slots__ = ("kind", "data", "line", "col")

    def __init__(self, kind, data, line=0, col=0):
        self.kind, self.data, self.line, self.col = kind, data, line, col


class _Tok(str):
    """A named token of the fast path: its text, and what a lark ``Token`` carries that the
    assembler reads (``type``, ``start_pos``, ``line``, ``column``, 1-based as lark's)."""

    __slots__ = ("type", "start_pos", "line", "column")

    def __new__(cls, type_: str, value: str, start_pos: int, line: int, column: int):
        t = super().__new__(cls, value)
        t.type, t.start_pos, t.line, t.column = type_, start_pos, line, column
        return t


def _scan_files(text: str) -> dict:
    return {int(m.group(1)): m.group(2)
            for m in re.finditer(r'^\s*\.file\s+(\d+)\s+"([^"]*)"', text, re.M)}


@lru_cache(maxsize=1)
def literals() -> dict:
    """``{name: text}`` of the grammar's terminals written as one string (``ENTRY.3: ".entry"``)."""
    return dict(re.findall(r'^([A-Z_]+)(?:\.\d+)?:\s*"([^"]*)"\s*$', GRAMMAR.read_text(), re.M))


@lru_cache(maxsize=1)
def terminals() -> dict:
    """``{name: regex}`` of the grammar's terminals written as one ``/regex/`` or one string
    (``ptx.lark``), read from the grammar file itself: the fast path lexes with the grammar's own
    terminals without building the parser."""
    out = {name: re.escape(text) for name, text in literals().items()}
    for m in re.finditer(r"^([A-Z_]+)(?:\.\d+)?:\s*/(.*)/\s*$", GRAMMAR.read_text(), re.M):
        if "/ |" not in m.group(2):  # one regex, not alternatives
            out[m.group(1)] = m.group(2)
    return out
