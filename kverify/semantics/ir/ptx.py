"""PTX front end: PTX text (and the IR text format) to a ``Module``. Follows PTX ISA §4
(syntax), §5 (state spaces, types, variables), §10 (special registers) and §11 (directives).

Three stages, one module each: ``ptx_grammar`` (the lark grammar ``ptx.lark`` and its
transformer to raw statements), ``ptx_fast`` (a hand-written reader of function bodies
giving the same raw statements, much faster) and ``ptx_build`` (raw statements to IR
nodes, checked against the op table, then structured). ``parse_ptx`` reads function bodies
through the fast path and everything else with lark; ``FASTPATH = False`` forces the pure
lark path, with the same result (tests/test_parse_fastpath.py).
"""
from __future__ import annotations

from pathlib import Path

from . import ptx_build, ptx_fast
from .errors import KernelError
from .nodes import Module
from .ptx_build import _Assembler
from .ptx_fast import _fast_raw
from .ptx_grammar import _inline_parse, _scan_files, _tree_parse

#: Parse PTX through the fast path (``ptx_fast``). False forces the pure-lark path
#: everywhere; the results are the same either way (tests/test_parse_fastpath.py).
FASTPATH = True


def parse_raw(text: str, path: str, start: str = "module"):
    files = _scan_files(text)
    if FASTPATH:
        return _inline_parse(text, path, start, files), files
    return _tree_parse(text, path, start, files), files


def parse_ptx(text: str, path: str = "<ptx>") -> Module:
    """Parse a PTX module and structure every function body."""
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
