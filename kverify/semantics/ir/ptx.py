"""PTX front end: PTX text (and the IR text format) to a ``Module``. Follows PTX ISA §4
(syntax), §5 (state spaces, types, variables), §10 (special registers) and §11 (directives).

Three stages, one module each: ``ptx_grammar`` (the lark grammar ``ptx.lark`` and its
transformer to raw statements), ``ptx_fast`` (a hand-written reader of function bodies and of
the module level giving the same raw statements, much faster) and ``ptx_build`` (raw
statements to IR nodes, checked against the op table, then structured). ``parse_ptx`` reads
what the fast path understands with it and everything else with lark (loaded only then);
``FASTPATH = False`` forces the pure lark path, with the same result
(tests/test_parse_fastpath.py).
"""
from __future__ import annotations

import re
from pathlib import Path

from . import ptx_build, ptx_fast
from .errors import KernelError
from .nodes import Module
from .ptx_build import _Assembler
from .ptx_fast import _fast_raw
from .ptx_raw import _scan_files

#: Parse PTX through the fast path (``ptx_fast``). False forces the pure-lark path
#: everywhere; the results are the same either way (tests/test_parse_fastpath.py).
FASTPATH = True


#: Input limits (PTX ISA §4.5: PTX's widest integer constants are 64 bits, 128 for ``.b128``):
#: a longer literal or identifier is bad input, reported before parsing, never a crash deep in
#: the front end (``int()``'s digit limit, file names the file system cannot hold).
MAX_LITERAL_DIGITS = 40        # decimal digits; hex and octal literals: as many as 128 bits take
MAX_IDENTIFIER_CHARS = 16384   # CUTLASS's mangled kernel names run to a few thousand
_LONG_TOKEN = re.compile(r"(?<![\w$%.])(?:0[xX][0-9a-fA-F]{33,}|0[fFdD][0-9a-fA-F]{17,}|\d{"
                         + str(MAX_LITERAL_DIGITS + 1) + r",}|[A-Za-z_$%][\w$]{" + str(MAX_IDENTIFIER_CHARS) + ",})")


def check_limits(text: str, path: str) -> None:
    """``KernelError`` at the first literal or identifier over the input limits."""
    m = _LONG_TOKEN.search(text)
    if m is None:
        return
    line = text.count("\n", 0, m.start()) + 1
    col = m.start() - (text.rfind("\n", 0, m.start()) + 1) + 1
    tok = m.group(0)
    what = (f"identifier of {len(tok)} characters (at most {MAX_IDENTIFIER_CHARS})" if tok[0].isalpha() or tok[0] in "_$%"
            else f"numeric literal of {len(tok)} characters (PTX constants are at most 128 bits)")
    raise KernelError(what, path, line, col)


def parse_raw(text: str, path: str, start: str = "module"):
    check_limits(text, path)
    from .ptx_grammar import _inline_parse, _tree_parse

    files = _scan_files(text)
    if FASTPATH:
        return _inline_parse(text, path, start, files), files
    return _tree_parse(text, path, start, files), files


def parse_ptx(text: str, path: str = "<ptx>") -> Module:
    """Parse a PTX module and structure every function body."""
    check_limits(text, path)
    if FASTPATH:
        raw, files = _fast_raw(text, path)
    else:
        raw, files = parse_raw(text, path)
    return _Assembler(path, files).module(raw)


def load_ptx(path: str | Path) -> Module:
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as e:
        raise KernelError(f"cannot read: {e.strerror}", str(p), 0, 0) from None
    return parse_ptx(text, str(p))


def parse_ir(text: str, path: str = "<ir>") -> Module:
    """Parse the IR text format written by ``kverify.semantics.ir.printer``."""
    raw, files = parse_raw(text, path)
    return _Assembler(path, files, mode="ir").module(raw)


def _clear_caches() -> None:
    """Forget every memo of the front end (for benchmarks that want a cold start)."""
    for c in (ptx_fast._simple_cache, ptx_fast._args_cache, ptx_fast._int_cache,
              ptx_build._split_cache, ptx_build._check_cache):
        c.clear()
