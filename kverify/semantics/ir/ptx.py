"""PTX front end: a lark LALR grammar (``ptx.lark``) turns PTX text into declarations and
a flat list of labelled instructions per function; ``structure`` then builds the CFG and
the structured body. Follows PTX ISA §4 (syntax), §5 (state spaces, types, variables),
§10 (special registers) and §11 (directives).

Scoped blocks (``{ .reg .pred p; L: ...; @!p bra L; }``, as inline asm produces) are
flattened: a register or label declared in a nested scope that clashes with another
declaration is renamed ``name$N``.

``parse_ptx`` reads function bodies with a hand-written fast path (see "fast path"
below) and everything else with lark; the result is the same as the pure-lark path,
which ``FASTPATH = False`` forces.
"""
from __future__ import annotations

import re
import threading
from functools import lru_cache
from pathlib import Path

from lark import Lark, Token, Transformer
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from .errors import KernelError
from dataclasses import replace

from . import optable as _optable
from .nodes import (Addr, Block, Break, Continue, FImm, Guard, If, Imm, InductionVar, Instr,
                    Kernel, Label, Loc, Loop, Module, Neg, PairOp, Param, ParenList, Reg,
                    RegDecl, Sink, Sym, VarDecl, VecOp)
from .optable import check_instr, split_opcode
from .symint import SymInt
from .types import Pointer, Scalar, Vector, is_type_name

GRAMMAR = Path(__file__).with_name("ptx.lark")


@lru_cache(maxsize=None)
def parser(start: str) -> Lark:
    return Lark(GRAMMAR.read_text(), parser="lalr", lexer="contextual", start=start,
                propagate_positions=False, maybe_placeholders=False, cache=False)


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


class ToRaw(Transformer):
    """Grammar callbacks (run inline by the LALR parser): build operands and raw
    statements. ``.loc`` is tracked as state because callbacks fire in source order."""

    def __init__(self, files: dict, path: str):
        super().__init__()
        self.files = files
        self.path = path
        self.cur_loc = (None, 0, 0)
        self.failed = False

    def _fail(self, err):
        """An error found by a callback. Run inline by the parser (``_inline_parse``), the
        callback records it and the parse goes on; the caller then repeats the parse in
        tree mode (``_tree_parse``), where the error surfaces exactly as it always has:
        after any syntax error, wrapped by lark's ``Transformer``."""
        if not self.inline:
            raise err
        self.failed = True

    inline = False

    # operands
    def reg(self, c):
        return Reg(str(c[0]))

    def name(self, c):
        s = str(c[0])
        return Sink() if s == "_" else ("name", s)

    def name_plus(self, c):
        return Sym(str(c[0]), _int(c[1]))

    def name_minus(self, c):
        return Sym(str(c[0]), -_int(c[1]))

    def int(self, c):
        return Imm(_int(c[0]))

    def float(self, c):
        return _float(c[0])

    def negated(self, c):
        t = c[1]
        return Neg(Reg(str(t))) if t.type == "REG" else ("neg-name", str(t))

    def pair(self, c):
        return PairOp(c[0], c[1])

    def vector(self, c):
        return VecOp(tuple(c))

    def paren_list(self, c):
        return ParenList(tuple(c))

    def addr_expr(self, c):
        base, off, sign = None, 0, 1
        for x in c:
            if isinstance(x, Token):
                sign = 1 if x == "+" else -1
            elif isinstance(x, Imm):
                off += sign * x.value
            elif base is None:
                base = x
            else:
                self._fail(KernelError("an address has at most one register or symbol", self.path))
        return base, off

    def address(self, c):
        (base, off) = c[0]
        coords = c[1].elems if len(c) > 1 else ()
        return ("addr", base, off, coords)

    def operands(self, c):
        return c

    def guard(self, c):
        neg = len(c) == 2
        t = c[-1]
        return (str(t), neg)

    def iloc(self, c):
        return tuple(_int(x) for x in c)

    def instr(self, c):
        guard = None
        i = 0
        if isinstance(c[0], tuple):
            guard = c[0]
            i = 1
        op_tok = c[i]
        ops = ()
        iloc = None
        for x in c[i + 1:]:
            if isinstance(x, list):
                ops = tuple(x)
            else:
                iloc = x
        if iloc is not None:
            f, ln, col, pl = iloc
            loc = Loc(self.files.get(f), ln, col, pl)
        else:
            f, ln, col = self.cur_loc
            loc = Loc(f, ln, col, op_tok.line)
        return _Raw("instr", (guard, str(op_tok), ops, loc), op_tok.line, op_tok.column)

    def label(self, c):
        return _Raw("label", str(c[0]), c[0].line, c[0].column)

    def loc_dir(self, c):
        f, ln, col = (_int(x) for x in c[:3])
        self.cur_loc = (self.files.get(f, f"<file {f}>"), ln, col) if ln else (None, 0, 0)
        for extra in c[3:]:
            kids = getattr(extra, "children", ())
            if len(kids) == 4 and str(kids[0]) == "inlined_at" and _int(kids[2]):
                # inlined code: report the call site in the kernel
                f2 = _int(kids[1])
                self.cur_loc = (self.files.get(f2, f"<file {f2}>"), _int(kids[2]), _int(kids[3]))
        return _Raw("loc", None)

    def pragma(self, c):
        return _Raw("pragma", tuple(str(s).strip('"') for s in c))

    def scope(self, c):
        return _Raw("scope", c)

    # declarations
    def decl_attr(self, c):
        if c[0].type == "ALIGN":
            return ("align", _int(c[1]))
        if c[0].type == "PTR":
            return ("ptr", None)
        return ("dir", str(c[0])[1:])

    def reg_range(self, c):
        return ("range", _int(c[0]))

    def array(self, c):
        return ("array", _int(c[0]) if c else None)

    def declarator(self, c):
        return (str(c[0]), [x for x in c[1:]], c[0].line, c[0].column)

    def initializer(self, c):
        out = []

        def flat(x):
            if isinstance(x, list):
                for y in x:
                    flat(y)
            elif isinstance(x, Imm):
                out.append(x.value)
            else:
                out.append(x)

        flat(c)
        return out

    def init_list(self, c):
        return list(c)

    def generic_init(self, c):
        return f"generic({c[0]})"

    def var_core(self, c):
        space = str(c[0])[1:]
        attrs = [x for x in c[1:] if isinstance(x, tuple) and len(x) == 2]
        decls = [x for x in c[1:] if isinstance(x, tuple) and len(x) == 4]
        init = next((x for x in c[1:] if isinstance(x, list)), None)
        line = decls[0][2] if decls else 0
        return _Raw("decl", ([space], attrs, decls, init), line, decls[0][3] if decls else 0)

    def var_decl(self, c):
        link = [x[1] for x in c[:-1]]
        raw = c[-1]
        raw.data = (link + raw.data[0],) + raw.data[1:]
        return raw

    def top_decl(self, c):
        link = [x[1] for x in c[:-1]]
        last = c[-1]
        if isinstance(last, _Raw):
            last.data = (link + last.data[0],) + last.data[1:]
            return last
        return ("function", [("linkage", l) for l in link] + last[1])

    # functions and module
    def param(self, c):
        attrs = [x for x in c if isinstance(x, tuple) and x[0] in ("align", "ptr", "dir")]
        name = next(x for x in c if isinstance(x, Token) and x.type == "NAME")
        arr = next((x for x in c if isinstance(x, tuple) and x[0] == "array"), None)
        return (str(name), attrs, arr[1] if arr else None, name.line, name.column)

    def params(self, c):
        return ("params", c)

    def ret_params(self, c):
        return ("rets", c)

    def linkage(self, c):
        return ("linkage", str(c[0])[1:])

    def perf_dir(self, c):
        if c and isinstance(c[0], Token) and c[0].type == "PERF_DIR":
            return ("perf", str(c[0])[1:], tuple(_int(x) for x in c[1:]))
        return ("perf", "pragma", tuple(str(s).strip('"') for s in c))

    def body(self, c):
        return ("body", c)

    def function(self, c):
        self.cur_loc = (None, 0, 0)
        return ("function", c)

    def version(self, c):
        return ("version", str(c[0]))

    def target(self, c):
        return ("target", tuple(str(x) for x in c))

    def address_size(self, c):
        return ("address_size", _int(c[0]))

    def file_dir(self, c):
        return ("file", _int(c[0]), str(c[1]).strip('"'))

    def section(self, c):
        return ("section", None)

    def module(self, c):
        return c

    # IR text: structured statements
    def ir_then(self, c):
        return ("then", c)

    def ir_else(self, c):
        return ("else", c)

    def ir_if(self, c):
        neg = isinstance(c[0], Token) and c[0].type == "BANG"
        rest = c[1:] if neg else c
        reg = str(rest[0])
        iloc = next((x for x in rest[1:] if isinstance(x, tuple) and isinstance(x[0], int)), None)
        then = next(x[1] for x in rest if isinstance(x, tuple) and x[0] == "then")
        orelse = next((x[1] for x in rest if isinstance(x, tuple) and x[0] == "else"), [])
        return _Raw("if", (reg, neg, iloc, then, orelse), rest[0].line, rest[0].column)

    def ir_iv(self, c):
        return ("iv", str(c[0]), c[1], c[2])

    def ir_loop(self, c):
        label = str(c[0])
        ivs = [x for x in c[1:] if isinstance(x, tuple) and x and x[0] == "iv"]
        trip = next((x for x in c[1:] if isinstance(x, SymInt)), None)
        iloc = next((x for x in c[1:] if isinstance(x, tuple) and x and isinstance(x[0], int)), None)
        body = [x for x in c[1:] if isinstance(x, _Raw)]
        return _Raw("loop", (label, ivs, trip, iloc, body), c[0].line, c[0].column)

    def ir_block(self, c):
        iloc = next((x for x in c[1:] if isinstance(x, tuple)), None)
        return _Raw("block", (str(c[0]), iloc, [x for x in c[1:] if isinstance(x, _Raw)]), c[0].line, c[0].column)

    def ir_break(self, c):
        return _Raw("break", (str(c[0]), c[1] if len(c) > 1 else None), c[0].line, c[0].column)

    def ir_continue(self, c):
        return _Raw("continue", (str(c[0]), c[1] if len(c) > 1 else None), c[0].line, c[0].column)

    def ir_blocking(self, c):
        c[0].kind = "blocking"
        return c[0]

    def sym_int(self, c):
        return SymInt.const(_int(c[0]))

    def sym_name(self, c):
        return SymInt.sym(str(c[0]))

    def sym_add(self, c):
        return c[0] + c[1]

    def sym_sub(self, c):
        return c[0] - c[1]

    def sym_mul(self, c):
        return c[0] * c[1]

    def sym_neg(self, c):
        return -c[0]

    def sym_call(self, c):
        fn = str(c[0])
        if fn not in ("floordiv", "mod", "min", "max"):
            self._fail(KernelError(f"unknown symbolic function {fn}", self.path, c[0].line, c[0].column))
            return c[1]
        return getattr(c[1], fn)(c[2])


def _scan_files(text: str) -> dict:
    return {int(m.group(1)): m.group(2)
            for m in re.finditer(r'^\s*\.file\s+(\d+)\s+"([^"]*)"', text, re.M)}


def _error_from_lark(e: UnexpectedInput, text: str, path: str) -> KernelError:
    if isinstance(e, UnexpectedEOF):
        lines = text.splitlines() or [""]
        return KernelError("unexpected end of input (truncated PTX?)", path, len(lines), len(lines[-1]) + 1)
    if isinstance(e, UnexpectedCharacters):
        ch = text[e.pos_in_stream] if e.pos_in_stream < len(text) else "?"
        return KernelError(f"unexpected character {ch!r}", path, e.line, e.column)
    if isinstance(e, UnexpectedToken):
        tok = e.token
        if tok.type == "$END":
            lines = text.splitlines() or [""]
            return KernelError("unexpected end of input (truncated PTX?)", path, len(lines), len(lines[-1]) + 1)
        what = str(tok)
        if tok.type == "DIRECTIVE":
            msg = f"unknown or misplaced directive {what}"
        else:
            exp = sorted(x for x in e.expected if not x.startswith("__"))[:6]
            msg = f"unexpected {what!r}" + (f" (expected one of: {', '.join(exp)})" if exp else "")
        return KernelError(msg, path, tok.line, tok.column)
    return KernelError(str(e).splitlines()[0], path, getattr(e, "line", 0), getattr(e, "column", 0))


#: Parse PTX through the fast path (``_fast_raw``). False forces the pure-lark path
#: everywhere; the results are the same either way (tests/test_parse_fastpath.py).
FASTPATH = True


def _tree_parse(text: str, path: str, start: str, files: dict):
    """The reference path: build the parse tree, then run ``ToRaw`` over it."""
    try:
        tree = parser(start).parse(text)
        return ToRaw(files, path).transform(tree)
    except UnexpectedInput as e:
        raise _error_from_lark(e, text, path) from None


class _InlineToRaw(ToRaw):
    inline = True

    def __init__(self):
        super().__init__({}, "<ptx>")


_INLINE: dict = {}
_INLINE_LOCK = threading.Lock()


def _inline_parser(start: str):
    p = _INLINE.get(start)
    if p is None:
        tr = _InlineToRaw()
        p = _INLINE[start] = (Lark(GRAMMAR.read_text(), parser="lalr", lexer="contextual",
                                   start=start, propagate_positions=False,
                                   maybe_placeholders=False, cache=False, transformer=tr), tr)
    return p


def _inline_parse(text: str, path: str, start: str, files: dict):
    """Same result as ``_tree_parse``, with ``ToRaw`` run by the parser as it reduces
    (no parse tree). Callbacks fire in the same order (post-order, left to right)."""
    with _INLINE_LOCK:
        lark, tr = _inline_parser(start)
        tr.files, tr.path, tr.cur_loc, tr.failed = files, path, (None, 0, 0), False
        try:
            raw = lark.parse(text)
        except UnexpectedInput as e:
            raise _error_from_lark(e, text, path) from None
        failed = tr.failed
    if failed:  # a callback error: let the reference path raise it as it always has
        return _tree_parse(text, path, start, files)
    return raw


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


# --------------------------------------------------------------------------- fast path
# Function bodies are where nearly all of a module's tokens are, and nvcc and Triton write
# them in a few regular shapes. The fast path reads each body with one master regex per
# statement (``_STMT``: label, instruction, ``.loc``, state-space declaration, ``.pragma``,
# scope braces) and a small operand reader, producing exactly the raw statements ``ToRaw``
# builds for them. It accepts only what it fully understands: any other shape makes that
# body go to lark unchanged. The rest of the module (header, parameter lists, module
# variables, ``.section`` blocks) is parsed by lark, with the fast-read bodies blanked out
# (newlines kept, so every position stays the same), and the bodies are spliced back in.
# Any error, anywhere, is reported by parsing the whole text with lark.
#
# The token regexes are lark's own terminals (``ptx.lark``), applied where lark's
# contextual lexer would apply them; every token must end at a character that cannot
# continue it, so the tokens are the ones lark would produce.

class _NoFast(Exception):
    """The fast path does not handle this text; lark reads it."""


_W = r"[ \t\f\r\n]"
_KEYWORDS = frozenset({"if", "else", "trip", "loop", "iv", "block", "break", "continue",
                       "blocking", "generic"})


class _Fast:
    """Compiled regexes of the fast path, built from the grammar's terminals."""

    def __init__(self):
        term = {t.name: t.pattern.to_regexp() for t in parser("module").terminals}
        name, reg, int_, flt = term["NAME"], term["REG"], term["INT"], term["FLOAT"]
        self.NAME = re.compile(name)
        self.REG = re.compile(reg)
        self.INT = re.compile(int_)
        self.FLOAT = re.compile(flt)
        self.DIRECTIVE = re.compile(term["DIRECTIVE"])
        self.WS = re.compile(_W + "*")
        skip = r"(?:[ \t\f\r\n]+|//[^\n]*|/\*[\s\S]*?\*/)*"
        w = _W
        self.STMT = re.compile(
            skip + "(?:"
            rf"(?P<I>(?:@{w}*(?P<neg>!{w}*)?(?=(?P<g>{reg}|{name}))(?P=g){w}*)?"
            rf"(?=(?P<op>{name}))(?P=op)(?:(?P<colon>{w}*:)|(?P<args>[^;]*);))"
            rf"|(?P<C>\.loc{w}+(?P<l1>{int_}){w}+(?P<l2>{int_}){w}+(?P<l3>{int_})(?![\w$.]))"
            rf"|(?P<D>{term['SPACE_DIR']})"
            r"|(?P<O>\{)|(?P<E>\})"
            rf'|(?P<P>\.pragma{w}*"[^"\n]*"(?:{w}*,{w}*"[^"\n]*")*{w}*;)'
            r"|(?P<Z>\Z))")
        # one ``, function_name NAME`` / ``, inlined_at INT INT INT`` tail item of .loc
        self.LOCX = re.compile(
            rf"{w}*,{w}*(?P<key>{name}){w}+(?:(?=(?P<n>{name}))(?P=n)(?![\w$.:])"
            rf"|(?P<i1>{int_}){w}+(?P<i2>{int_}){w}+(?P<i3>{int_})(?![\w$.]))")
        self.STRING = re.compile(term["STRING"])
        # operand lists that split at every comma: no vectors, lists, pairs or negations
        self.COMPLEX = re.compile(r"[{}()|!/\"]")
        # module level: function bodies are the braces after .entry/.func
        self.TOP = re.compile(r'//[^\n]*|/\*[\s\S]*?\*/|"[^"\n]*"|\.section\b'
                              r'|(?<![\w$])\.(?:entry|func)\b|[{};]')
        self.INNER = re.compile(r'//[^\n]*|/\*[\s\S]*?\*/|"[^"\n]*"|[{}]')


@lru_cache(maxsize=None)
def _fast() -> _Fast:
    return _Fast()


_NAME_START = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_$")
_INT_START = frozenset("-0123456789")
_SINK = Sink()
_NOT_SIMPLE = object()
_CACHE_LIMIT = 200_000
_simple_cache: dict = {}   # operand text -> operand (ToRaw's value) or _NOT_SIMPLE
_args_cache: dict = {}     # operand list text -> tuple of operands
_int_cache: dict = {}


def _int_c(s: str) -> int:
    v = _int_cache.get(s)
    if v is None:
        v = _int_cache[s] = _int(s)
    return v


def _simple_op(p: str):
    """The operand of a one-token operand text, as ToRaw builds it, or _NOT_SIMPLE."""
    v = _simple_cache.get(p)
    if v is not None:
        return v
    if len(_simple_cache) > _CACHE_LIMIT:
        _simple_cache.clear()
    F = _fast()
    v = _NOT_SIMPLE
    n = len(p)
    m = F.FLOAT.match(p)
    if m:
        if m.end() == n:
            v = _float(p)
    elif p:
        c = p[0]
        if c == "%":
            m = F.REG.match(p)
            if m and m.end() == n:
                v = Reg(p)
        elif c in _NAME_START:
            m = F.NAME.match(p)
            if m and m.end() == n:
                v = _SINK if p == "_" else ("name", p)
        elif c in _INT_START:
            m = F.INT.match(p)
            if m and m.end() == n:
                v = Imm(_int(p))
    if v is _NOT_SIMPLE and p:  # an address or ``sym+4``: one operand of the full reader
        try:
            ops = _Ops(p).read()
        except _NoFast:
            ops = ()
        if len(ops) == 1:
            v = ops[0]
    _simple_cache[p] = v
    return v


class _Ops:
    """Recursive-descent reader of an operand list (the ``operands`` rule)."""

    __slots__ = ("s", "n", "F")

    def __init__(self, s):
        self.s, self.n, self.F = s, len(s), _fast()

    def ws(self, i):
        return self.F.WS.match(self.s, i).end()

    def read(self):
        s, n = self.s, self.n
        out = []
        i = self.ws(0)
        if i == n:
            return out
        while True:
            c = s[i]
            if c == "[":
                v, i = self.address(i + 1)
            elif c == "{":
                v, i = self.vector(i + 1)
            elif c == "(":
                v, i = self.paren(i + 1)
            else:
                v, i = self.simple(i)
                i = self.ws(i)
                if i < n and s[i] == "|":
                    w, i = self.simple(self.ws(i + 1))
                    v = PairOp(v, w)
            out.append(v)
            i = self.ws(i)
            if i == n:
                return out
            if s[i] != ",":
                raise _NoFast
            i = self.ws(i + 1)
            if i == n:
                raise _NoFast

    def token(self, rx, i):
        m = rx.match(self.s, i)
        if m is None:
            raise _NoFast
        j = m.end()
        if j < self.n and self.s[j] not in " \t\f\r\n,;|]})+-<>":
            raise _NoFast  # the token is glued to something: leave it to lark
        return m.group(), j

    def simple(self, i):
        s, n, F = self.s, self.n, self.F
        if i >= n:
            raise _NoFast
        m = F.FLOAT.match(s, i)
        if m:
            t, j = self.token(F.FLOAT, i)
            return _float(t), j
        c = s[i]
        if c == "%":
            t, j = self.token(F.REG, i)
            return Reg(t), j
        if c in _NAME_START:
            t, j = self.token(F.NAME, i)
            k = self.ws(j)
            if k < n and s[k] in "+-":
                lit, j = self.token(F.INT, self.ws(k + 1))
                v = _int_c(lit)
                return Sym(t, v if s[k] == "+" else -v), j
            return (_SINK if t == "_" else ("name", t)), j
        if c in _INT_START:
            t, j = self.token(F.INT, i)
            return Imm(_int_c(t)), j
        if c == "!":
            k = self.ws(i + 1)
            if k < n and s[k] == "%":
                t, j = self.token(F.REG, k)
                return Neg(Reg(t)), j
            if k < n and s[k] in _NAME_START:
                t, j = self.token(F.NAME, k)
                return ("neg-name", t), j
        raise _NoFast

    def atom(self, i):
        s, n, F = self.s, self.n, self.F
        if i >= n:
            raise _NoFast
        c = s[i]
        if c == "%":
            t, j = self.token(F.REG, i)
            return Reg(t), j
        if c in _NAME_START:
            t, j = self.token(F.NAME, i)
            return (_SINK if t == "_" else ("name", t)), j
        if c in _INT_START:
            t, j = self.token(F.INT, i)
            return Imm(_int_c(t)), j
        raise _NoFast

    def address(self, i):
        s, n = self.s, self.n
        base, off, sign = None, 0, 1
        x, i = self.atom(self.ws(i))
        while True:
            if isinstance(x, Imm):
                off += sign * x.value
            elif base is None:
                base = x
            else:
                raise _NoFast  # two bases: ToRaw's error, raised by the lark path
            i = self.ws(i)
            if i < n and s[i] in "+-":
                sign = 1 if s[i] == "+" else -1
                x, i = self.atom(self.ws(i + 1))
                continue
            break
        coords = ()
        if i < n and s[i] == ",":
            i = self.ws(i + 1)
            if i >= n or s[i] != "{":
                raise _NoFast
            v, i = self.vector(i + 1)
            coords = v.elems
            i = self.ws(i)
        if i >= n or s[i] != "]":
            raise _NoFast
        return ("addr", base, off, coords), i + 1

    def vector(self, i):
        s, n = self.s, self.n
        out = []
        while True:
            v, i = self.simple(self.ws(i))
            out.append(v)
            i = self.ws(i)
            if i < n and s[i] == ",":
                i += 1
                continue
            if i < n and s[i] == "}":
                return VecOp(tuple(out)), i + 1
            raise _NoFast

    def paren(self, i):
        s, n = self.s, self.n
        out = []
        i = self.ws(i)
        if i < n and s[i] == ")":
            return ParenList(()), i + 1
        while True:
            v, i = self.simple(self.ws(i))
            out.append(v)
            i = self.ws(i)
            if i < n and s[i] == ",":
                i += 1
                continue
            if i < n and s[i] == ")":
                return ParenList(tuple(out)), i + 1
            raise _NoFast


def _operands(args: str) -> tuple:
    ops = _args_cache.get(args)
    if ops is not None:
        return ops
    if len(_args_cache) > _CACHE_LIMIT:
        _args_cache.clear()
    ops = None
    if _fast().COMPLEX.search(args) is None:
        parts = args.split(",")
        vals = [_simple_op(p.strip(" \t\f\r\n")) for p in parts]
        if _NOT_SIMPLE not in vals:
            ops = tuple(vals)
        elif len(parts) == 1 and not parts[0].strip(" \t\f\r\n"):
            ops = ()
    if ops is None:
        ops = tuple(_Ops(args).read())
    _args_cache[args] = ops
    return ops


def _fast_body(text: str, a: int, b: int, line: int, files: dict):
    """The statements of the function body ``text[a:b]`` (inside its braces) as ToRaw
    builds them; ``line`` is the line number at ``a``. Raises _NoFast."""
    F = _fast()
    match = F.STMT.match
    count = text.count
    rfind = text.rfind
    last = a
    cur = (None, 0, 0)
    items: list = []
    stack = []
    pos = a
    while True:
        m = match(text, pos, b)
        if m is None:
            raise _NoFast
        kind = m.lastgroup
        if kind == "I":  # an instruction or a label
            p = m.start("op")
            line += count("\n", last, p)
            last = p
            g, neg, op, colon, args = m.group("g", "neg", "op", "colon", "args")
            if op in _KEYWORDS:
                raise _NoFast
            if colon is not None:
                if g is not None:
                    raise _NoFast
                items.append(_Raw("label", op, line, p - rfind("\n", 0, p)))
            else:
                f, ln, col = cur
                items.append(_Raw("instr", (None if g is None else (g, neg is not None), op,
                                            _operands(args) if args else (), Loc(f, ln, col, line)),
                                  line, p - rfind("\n", 0, p)))
        elif kind == "C":
            fi, ln, col = _int_c(m.group("l1")), _int_c(m.group("l2")), _int_c(m.group("l3"))
            cur = (files.get(fi, f"<file {fi}>"), ln, col) if ln else (None, 0, 0)
            items.append(_Raw("loc", None))
            e = m.end()
            while True:
                mx = F.LOCX.match(text, e, b)
                if mx is None:
                    break
                if mx.group("i1") is not None and mx.group("key") == "inlined_at" and _int_c(mx.group("i2")):
                    # inlined code: report the call site in the kernel
                    fi2 = _int_c(mx.group("i1"))
                    cur = (files.get(fi2, f"<file {fi2}>"), _int_c(mx.group("i2")), _int_c(mx.group("i3")))
                e = mx.end()
            m = None
            pos = e
            continue
        elif kind == "D":
            raw, pos, line, last = _fast_decl(text, m.end(), b, m.group("D")[1:], line, last)
            items.append(raw)
            continue
        elif kind == "O":
            stack.append(items)
            items = []
        elif kind == "E":
            if not stack:
                raise _NoFast
            inner = items
            items = stack.pop()
            items.append(_Raw("scope", inner))
        elif kind == "P":
            items.append(_Raw("pragma", tuple(s.strip('"') for s in F.STRING.findall(m.group("P")))))
        else:  # end of the body
            if stack:
                raise _NoFast
            return items
        pos = m.end()


def _fast_decl(text, i, b, space, line, last):
    """``SPACE_DIR decl_attr* declarator ("," declarator)* ";"`` from just after the
    space directive (no initializer)."""
    F = _fast()
    ws = F.WS.match
    attrs = []
    while True:
        i = ws(text, i, b).end()
        if i >= b:
            raise _NoFast
        c = text[i]
        if c != ".":
            break
        if text.startswith(".align", i):
            j = i + 6
            if j < b and (text[j].isalnum() or text[j] in "_:$"):
                raise _NoFast
            m = F.INT.match(text, ws(text, j, b).end(), b)
            if m is None or (m.end() < b and text[m.end()] not in " \t\f\r\n"):
                raise _NoFast
            attrs.append(("align", _int(m.group())))
            i = m.end()
        elif text.startswith(".ptr", i):
            j = i + 4
            if j < b and (text[j].isalnum() or text[j] in "_:$"):
                raise _NoFast
            attrs.append(("ptr", None))
            i = j
        else:
            m = F.DIRECTIVE.match(text, i, b)
            if m is None or (m.end() < b and text[m.end()] not in " \t\f\r\n."):
                raise _NoFast
            attrs.append(("dir", m.group()[1:]))
            i = m.end()
    decls = []
    while True:
        i = ws(text, i, b).end()
        if i >= b:
            raise _NoFast
        c = text[i]
        if c == "%":
            m = F.REG.match(text, i, b)
        elif c in _NAME_START:
            m = F.NAME.match(text, i, b)
        else:
            raise _NoFast
        if m is None:
            raise _NoFast
        j = m.end()
        if j < b and text[j] not in " \t\f\r\n<[,;":
            raise _NoFast
        line += text.count("\n", last, i)
        last = i
        tok_line, tok_col = line, i - text.rfind("\n", 0, i)
        mods = []
        j = ws(text, j, b).end()
        if j < b and text[j] == "<":
            mi = F.INT.match(text, ws(text, j + 1, b).end(), b)
            if mi is None:
                raise _NoFast
            j = ws(text, mi.end(), b).end()
            if j >= b or text[j] != ">":
                raise _NoFast
            mods.append(("range", _int(mi.group())))
            j = ws(text, j + 1, b).end()
        while j < b and text[j] == "[":
            j = ws(text, j + 1, b).end()
            mi = F.INT.match(text, j, b)
            if mi is not None:
                j = ws(text, mi.end(), b).end()
            if j >= b or text[j] != "]":
                raise _NoFast
            mods.append(("array", _int(mi.group()) if mi is not None else None))
            j = ws(text, j + 1, b).end()
        decls.append((m.group(), mods, tok_line, tok_col))
        if j < b and text[j] == ",":
            i = j + 1
            continue
        if j < b and text[j] == ";":
            raw = _Raw("decl", ([space], attrs, decls, None), decls[0][2], decls[0][3])
            return raw, j + 1, line, last
        raise _NoFast


def _find_bodies(text: str) -> list:
    """``(header, open, close)`` offsets of each function body: ``header`` is where the
    ``.entry``/``.func`` directive starts, ``open``/``close`` are its braces."""
    F = _fast()
    top, inner = F.TOP.search, F.INNER.search
    out = []
    pos, depth, header = 0, 0, -1
    while True:
        m = top(text, pos)
        if m is None:
            return out
        tok = m.group()
        pos = m.end()
        c = tok[0]
        if c == "{":
            if header >= 0 and depth == 0:
                d = 1
                while d:
                    m2 = inner(text, pos)
                    if m2 is None:
                        return out
                    pos = m2.end()
                    t = m2.group()
                    if t == "{":
                        d += 1
                    elif t == "}":
                        d -= 1
                out.append((header, m.start(), pos - 1))
                header = -1
            else:
                depth += 1
        elif c == "}":
            depth -= 1
        elif c == ";":
            if depth == 0:
                header = -1
        elif tok == ".section":
            i = text.find("{", pos)
            j = text.find("}", i) if i >= 0 else -1
            if j < 0:
                return out
            pos = j + 1
        elif tok in (".entry", ".func"):
            if depth == 0:
                header = m.start()


def _blank(chunk: str) -> str:
    """Whitespace with the same newlines and the same length of last line."""
    k = chunk.count("\n")
    if not k:
        return " " * len(chunk)
    return "\n" * k + " " * (len(chunk) - chunk.rfind("\n") - 1)


def _fast_raw(text: str, path: str):
    """``parse_raw(text, path)`` through the fast path."""
    files = _scan_files(text)
    try:
        bodies = {}
        pieces = []
        last = 0
        line, lpos = 1, 0
        for header, a, b in _find_bodies(text):
            line += text.count("\n", lpos, a + 1)
            lpos = a + 1
            try:
                items = _fast_body(text, a + 1, b, line, files)
            except _NoFast:
                continue
            bodies[header] = items
            pieces.append(text[last:a + 1])
            pieces.append(_blank(text[a + 1:b]))
            last = b
        if not bodies:
            return _inline_parse(text, path, "module", files), files
        pieces.append(text[last:])
        raw = _inline_parse("".join(pieces), path, "module", files)
        used = 0
        for it in raw:
            if isinstance(it, tuple) and it[0] == "function":
                parts = it[1]
                hdr = next((p.start_pos for p in parts if isinstance(p, Token)
                            and p.type in ("ENTRY", "FUNC")), None)
                items = bodies.get(hdr)
                if items is None:
                    continue
                for k, p in enumerate(parts):
                    if isinstance(p, tuple) and p[0] == "body":
                        if p[1]:
                            raise _NoFast
                        parts[k] = ("body", items)
                        used += 1
                        break
        if used != len(bodies):
            raise _NoFast
        return raw, files
    except Exception:
        # anything unexpected (or an error to report): the whole text through lark
        return parse_raw(text, path)


# --------------------------------------------------------------------------- assembly
def _decl_type(attrs, path, line, col):
    vec = None
    scal = None
    align = None
    ptr = None
    for kind, v in attrs:
        if kind == "align":
            align = v
        elif kind == "ptr":
            ptr = True
        elif v in ("v2", "v4", "v8"):
            vec = int(v[1:])
        elif is_type_name(v):
            scal = Scalar(v)
        elif ptr and v in ("global", "shared", "const", "local"):
            ptr = v
        else:
            raise KernelError(f"unknown or misplaced directive .{v}", path, line, col)
    if scal is None:
        raise KernelError("a declaration needs a type", path, line, col)
    return (Vector(scal, vec) if vec else scal), align, ptr


def parse_ir(text: str, path: str = "<ir>") -> Module:
    """Parse the IR text format written by ``kverify.semantics.ir.printer``."""
    raw, files = parse_raw(text, path)
    return _Assembler(path, files, mode="ir").module(raw)


class _Assembler:
    def __init__(self, path: str, files: dict, mode: str = "ptx"):
        self.path = path
        self.files = files
        self.mode = mode
        self._guards = {}

    def err(self, msg, line=0, col=0):
        return KernelError(msg, self.path, line, col)

    def module(self, items) -> Module:
        version, target, asz = "", (), 64
        kernels, mvars = [], []
        for it in items:
            if isinstance(it, _Raw):  # module-scope variable
                mvars.extend(self.var_decls(it))
            elif it[0] == "version":
                version = it[1]
            elif it[0] == "target":
                target = it[1]
            elif it[0] == "address_size":
                asz = it[1]
            elif it[0] == "function":
                k = self.function(it[1], mvars)
                if k is not None:
                    kernels.append(k)
        return Module(version, target, asz, tuple(kernels), tuple(mvars),
                      tuple(sorted(self.files.items())), self.path)

    def var_decls(self, raw: _Raw, scope_rename=None):
        space_l, attrs, decls, init = raw.data
        linkage = [s for s in space_l[:-1]]
        space = space_l[-1]
        ty, align, _ = _decl_type(attrs, self.path, raw.line, raw.col)
        out = []
        for name, mods, line, col in decls:
            dims = tuple(m[1] for m in mods if m[0] == "array")
            loc = Loc(self.path, line, col, line)
            vals = tuple(x for x in init if isinstance(x, int)) if init else None
            out.append(VarDecl(space, ty, name, align, dims, "extern" in linkage,
                               linkage[0] if linkage else None, vals, loc))
        return out

    def function(self, parts, mvars):
        linkage, kind, name, params, rets, perf, body = None, None, None, [], [], [], None
        line = col = 0
        for p in parts:
            if isinstance(p, Token):
                if p.type in ("ENTRY", "FUNC"):
                    kind = p.type
                elif p.type == "NAME":
                    name, line, col = str(p), p.line, p.column
            elif p[0] == "linkage":
                linkage = p[1]
            elif p[0] == "params":
                params = p[1]
            elif p[0] == "rets":
                rets = p[1]
            elif p[0] == "perf":
                perf.append((p[1], p[2]))
            elif p[0] == "body":
                body = p[1]
        if body is None:  # a prototype (.extern .func f(...);)
            return None
        prm = tuple(self.param(x) for x in params)
        rts = tuple(self.param(x) for x in rets)
        from .cfg import structure

        loc = Loc(self.path, line, col, line)
        if self.mode == "ir":
            regs, vars_, stmts = self.ir_body(body)
            return Kernel(name, prm, tuple(stmts), tuple(regs), tuple(vars_), rts,
                          kind == "ENTRY", linkage, tuple(perf), loc)
        regs, vars_, flat = self.flatten(body)
        k = Kernel(name, prm, (), tuple(regs), tuple(vars_), rts, kind == "ENTRY", linkage,
                   tuple(perf), loc)
        return structure(k, flat, self.path)

    def _iloc(self, iloc):
        if iloc is None:
            return Loc()
        f, ln, col, pl = iloc
        return Loc(self.files.get(f), ln, col, pl)

    def ir_body(self, body):
        regs, vars_ = [], []
        env = {}
        for it in body:
            if it.kind == "decl":
                if it.data[0][-1] == "reg":
                    ty, _, _ = _decl_type(it.data[1], self.path, it.line, it.col)
                    for name, mods, line, col in it.data[2]:
                        rng = next((m[1] for m in mods if m[0] == "range"), None)
                        env[name] = name
                        regs.append(RegDecl(ty, name, rng))
                else:
                    vars_.extend(self.var_decls(it))

        def conv(items):
            out = []
            for it in items:
                k = it.kind
                if k in ("instr", "blocking"):
                    ins = self.instr(it, env, {})
                    if ins.op == "bra":
                        raise self.err("branches are not allowed in the IR text; use break/continue",
                                       it.line, it.col)
                    out.append(replace(ins, blocking=True) if k == "blocking" else ins)
                elif k == "if":
                    reg, neg, iloc, then, orelse = it.data
                    out.append(If(Reg(reg), neg, tuple(conv(then)), tuple(conv(orelse)), self._iloc(iloc)))
                elif k == "loop":
                    label, ivs, trip, iloc, b = it.data
                    out.append(Loop(label, tuple(conv(b)),
                                    tuple(InductionVar(Reg(r), i, st) for _, r, i, st in ivs),
                                    trip, self._iloc(iloc)))
                elif k == "block":
                    label, iloc, b = it.data
                    out.append(Block(label, tuple(conv(b)), self._iloc(iloc)))
                elif k == "break":
                    out.append(Break(it.data[0], self._iloc(it.data[1])))
                elif k == "continue":
                    out.append(Continue(it.data[0], self._iloc(it.data[1])))
                elif k == "label":
                    raise self.err("labels are not allowed in the IR text", it.line, it.col)
                elif k == "scope":
                    raise self.err("nested scopes are not allowed in the IR text", it.line, it.col)
            return out

        return regs, vars_, conv(body)

    def param(self, p):
        name, attrs, arr, line, col = p
        ty, align, ptr = _decl_type(attrs, self.path, line, col)
        return Param(name, ty, align, arr, Pointer(ptr if isinstance(ptr, str) else "generic", align) if ptr else None)

    def flatten(self, body):
        """Hoist declarations out of nested scopes, renaming clashing names, and resolve
        bare-name operands to registers, symbols or labels."""
        counts_regs: dict[str, int] = {}
        counts_labels: dict[str, int] = {}

        def count(items):
            for it in items:
                if it.kind == "decl" and it.data[0][-1] == "reg":
                    for d in it.data[2]:
                        counts_regs[d[0]] = counts_regs.get(d[0], 0) + 1
                elif it.kind == "label":
                    counts_labels[it.data] = counts_labels.get(it.data, 0) + 1
                elif it.kind == "scope":
                    count(it.data)

        count(body)
        regs, vars_, flat = [], [], []
        reg_ranges: dict[str, int] = {}
        serial = [0]

        def walk(items, env_regs: dict, env_labels: dict, depth: int):
            env_regs = dict(env_regs)
            env_labels = dict(env_labels)
            serial[0] += 1
            sid = serial[0]
            # declarations and labels of this scope first (labels may be used before defined)
            for it in items:
                if it.kind == "decl":
                    space = it.data[0][-1]
                    if space == "reg":
                        ty, _, _ = _decl_type(it.data[1], self.path, it.line, it.col)
                        for name, mods, line, col in it.data[2]:
                            rng = next((m[1] for m in mods if m[0] == "range"), None)
                            new = name if (depth == 0 or counts_regs[name] == 1) else f"{name}${sid}"
                            env_regs[name] = new
                            if rng is not None:
                                reg_ranges[new] = rng
                            regs.append(RegDecl(ty, new, rng))
                    else:
                        vars_.extend(self.var_decls(it))
                elif it.kind == "label":
                    nm = it.data
                    env_labels[nm] = nm if counts_labels[nm] == 1 else f"{nm}${sid}"
            for it in items:
                if it.kind == "instr":
                    flat.append(self.instr(it, env_regs, env_labels))
                elif it.kind == "label":
                    flat.append(("label", env_labels[it.data], it.line))
                elif it.kind == "scope":
                    walk(it.data, env_regs, env_labels, depth + 1)
                elif it.kind in ("if", "loop", "block", "break", "continue", "blocking"):
                    raise self.err(f"'{it.kind}' is IR text syntax, not PTX", it.line, it.col)

        walk(body, {}, {}, 0)
        self._reg_ranges = reg_ranges
        return regs, vars_, flat

    def instr(self, raw: _Raw, env_regs, env_labels) -> Instr:
        guard, opcode, ops, loc = raw.data
        sp = _split_cache.get(opcode)
        if sp is None:
            sp = _split_cache[opcode] = split_opcode(opcode)
        fam, mods, supported = sp
        out = []
        for x in ops:
            t = type(x)
            if t is Reg:
                r = env_regs.get(x.name)
                out.append(x if r is None or r == x.name else Reg(r))
            elif t is Imm or t is FImm or t is Sink:
                out.append(x)
            else:
                out.append(self._res(x, env_regs, env_labels, fam in ("bra", "brx.idx"), raw))
        g = None
        if guard:
            gn = env_regs.get(guard[0], guard[0])
            g = self._guards.get((gn, guard[1]))
            if g is None:
                g = self._guards[(gn, guard[1])] = Guard(Reg(gn), guard[1])
        ins = Instr(fam, mods, tuple(out), g, loc, False, supported)
        if supported:
            problems = _check_instr(ins)
            if problems:
                raise self.err(problems[0], raw.line, raw.col)
        return ins

    def _res(self, x, env_regs, env_labels, is_branch, raw):
        """Resolve the names in one operand of ``raw``."""
        if isinstance(x, tuple):
            if x[0] == "name":
                n = x[1]
                if n in env_regs:
                    return Reg(env_regs[n])
                if is_branch and n in env_labels:
                    return Label(env_labels[n])
                if is_branch:
                    raise self.err(f"branch to undefined label {n}", raw.line, raw.col)
                return Sym(n)
            if x[0] == "neg-name":
                return Neg(Reg(env_regs.get(x[1], x[1])))
            if x[0] == "addr":
                _, base, off, coords = x
                b = self._res(base, env_regs, env_labels, is_branch, raw) if base is not None else None
                if isinstance(b, Sym):
                    b, off = Sym(b.name), off + b.offset
                return Addr(b, off, tuple(self._res(c, env_regs, env_labels, is_branch, raw) for c in coords))
        if isinstance(x, Reg):
            r = env_regs.get(x.name)
            return x if r is None or r == x.name else Reg(r)
        if isinstance(x, Sym):
            if x.name in env_regs:
                raise self.err(f"register {x.name} used with an offset", raw.line, raw.col)
            return x
        if isinstance(x, VecOp):
            return VecOp(tuple(self._res(e, env_regs, env_labels, is_branch, raw) for e in x.elems))
        if isinstance(x, ParenList):
            return ParenList(tuple(self._res(e, env_regs, env_labels, is_branch, raw) for e in x.elems))
        if isinstance(x, PairOp):
            return PairOp(self._res(x.first, env_regs, env_labels, is_branch, raw),
                          self._res(x.second, env_regs, env_labels, is_branch, raw))
        if isinstance(x, Neg):
            return Neg(self._res(x.reg, env_regs, env_labels, is_branch, raw))
        return x


# ``split_opcode`` and ``check_instr`` of the op table, remembered. A row's checks are
# remembered per (family, modifiers, operand count) only when every check function is
# one known to look at nothing else (the modifiers and the opcode); otherwise they run.
_split_cache: dict = {}
_check_cache: dict = {}
_SHAPE_CHECKS = ("requires_type",
                 "mbarrier_shared_space", "mbarrier_remote_no_wait",
                 "bulk_completion_mechanism", "wgmma_aligned")
_INSTANCE_FIELDS = {"operands", "guard", "loc", "blocking", "supported"}


def _shape_only(fn) -> bool:
    code = getattr(fn, "__code__", None)
    return (fn.__name__ in _SHAPE_CHECKS and getattr(_optable, fn.__name__, None) is fn
            and code is not None and not (_INSTANCE_FIELDS & set(code.co_names)))


def _check_instr(ins: Instr) -> list:
    row = _optable.OPS.get(ins.op)
    if row is None:
        return []
    key = (ins.op, ins.mods, len(ins.operands))
    e = _check_cache.get(key)
    if e is not None and e[0] is row:
        return e[1]
    v = check_instr(ins)
    if all(_shape_only(c) for c in row.checks):
        if len(_check_cache) > _CACHE_LIMIT:
            _check_cache.clear()
        _check_cache[key] = (row, v)
    return v


def _clear_caches() -> None:
    """Forget every memo of the front end (for benchmarks that want a cold start)."""
    for c in (_simple_cache, _args_cache, _int_cache, _split_cache, _check_cache):
        c.clear()
