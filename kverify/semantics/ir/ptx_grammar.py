"""PTX front end, grammar side: the lark LALR grammar (``ptx.lark``) and the transformer
(``ToRaw``) that turns its parse of PTX (or of the IR text) into raw statements:
declarations, labels, instructions with unresolved operands (PTX ISA §4 syntax, §5 state
spaces and variables, §11 directives). Two ways to run it give the same result: the
reference path builds a parse tree (``_tree_parse``); ``_inline_parse`` runs ``ToRaw`` as
the parser reduces.
"""
from __future__ import annotations

import threading
from functools import lru_cache
from pathlib import Path

from lark import Lark, Token, Transformer
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from .errors import KernelError
from .nodes import Imm, Loc, Neg, PairOp, ParenList, Reg, Sink, Sym, VecOp
from .ptx_raw import GRAMMAR, _float, _int, _Raw
from .symint import SymInt


def _lark(start: str, transformer=None) -> Lark:
    """The LALR parser of ``ptx.lark`` from ``start``. Building its tables takes about 0.15 s, once
    per process and parser, so the tables are kept in ``$XDG_CACHE_HOME/kverify/lark`` (default
    ~/.cache) through lark's own ``cache`` (which checks the grammar, the options and lark's
    version before it uses a file); a missing file is written under a temporary name and moved
    into place, so that processes starting together never read a partial one. Without a writable
    cache directory the tables are built every time."""
    import hashlib
    import os

    import lark

    text = GRAMMAR.read_text()
    kw = dict(parser="lalr", lexer="contextual", start=start, propagate_positions=False, maybe_placeholders=False)
    if transformer is not None:
        kw["transformer"] = transformer
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    d = Path(base) / "kverify" / "lark"
    tag = hashlib.sha256(f"{lark.__version__}\0{start}\0{transformer is not None}\0{text}".encode()).hexdigest()[:16]
    path = d / f"ptx-{start}-{tag}.lark"
    if path.exists():
        return Lark(text, cache=str(path), **kw)
    try:
        d.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        out = Lark(text, cache=str(tmp), **kw)
        os.replace(tmp, path)
        return out
    except OSError:
        return Lark(text, cache=False, **kw)


@lru_cache(maxsize=None)
def parser(start: str) -> Lark:
    return _lark(start)


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

    def branchtargets(self, c):
        """``ts: .branchtargets L0, L1;``: (table name, [(label, line, col)])."""
        return _Raw("branchtargets", (str(c[0]), [(str(t), t.line, t.column) for t in c[2:]]),
                    c[0].line, c[0].column)

    def callprototype(self, c):
        """``p: .callprototype (.param .b32 _) _ (.param .b32 _);``: (name, rets, params)."""
        rets = next((x[1] for x in c if isinstance(x, tuple) and x[0] == "rets"), [])
        prms = next((x[1] for x in c if isinstance(x, tuple) and x[0] == "params"), [])
        return _Raw("callprototype", (str(c[0]), rets, prms), c[0].line, c[0].column)

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

    def proto_rets(self, c):
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
        p = _INLINE[start] = (_lark(start, tr), tr)
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
