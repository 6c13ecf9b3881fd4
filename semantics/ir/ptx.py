"""PTX front end: a lark LALR grammar (``ptx.lark``) turns PTX text into declarations and
a flat list of labelled instructions per function; ``structure`` then builds the CFG and
the structured body. Follows PTX ISA §4 (syntax), §5 (state spaces, types, variables),
§10 (special registers) and §11 (directives).

Scoped blocks (``{ .reg .pred p; L: ...; @!p bra L; }``, as inline asm produces) are
flattened: a register or label declared in a nested scope that clashes with another
declaration is renamed ``name$N``.
"""
from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

from lark import Lark, Token, Transformer
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from .errors import KernelError
from dataclasses import replace

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
                raise KernelError("an address has at most one register or symbol", self.path)
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
            raise KernelError(f"unknown symbolic function {fn}", self.path, c[0].line, c[0].column)
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


def parse_raw(text: str, path: str, start: str = "module"):
    files = _scan_files(text)
    try:
        tree = parser(start).parse(text)
        return ToRaw(files, path).transform(tree), files
    except UnexpectedInput as e:
        raise _error_from_lark(e, text, path) from None


def parse_ptx(text: str, path: str = "<ptx>") -> Module:
    """Parse a PTX module and structure every function body."""
    raw, files = parse_raw(text, path)
    return _Assembler(path, files).module(raw)


def load_ptx(path: str | Path) -> Module:
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as e:
        raise KernelError(f"cannot read: {e.strerror}", str(p), 0, 0) from None
    return parse_ptx(text, str(p))


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
    """Parse the IR text format written by ``semantics.ir.printer``."""
    raw, files = parse_raw(text, path)
    return _Assembler(path, files, mode="ir").module(raw)


class _Assembler:
    def __init__(self, path: str, files: dict, mode: str = "ptx"):
        self.path = path
        self.files = files
        self.mode = mode

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
        fam, mods, supported = split_opcode(opcode)
        is_branch = fam in ("bra", "brx.idx")

        def res(x):
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
                    b = res(base) if base is not None else None
                    if isinstance(b, Sym):
                        b, off = Sym(b.name), off + b.offset
                    return Addr(b, off, tuple(res(c) for c in coords))
            if isinstance(x, Reg):
                return Reg(env_regs.get(x.name, x.name))
            if isinstance(x, Sym):
                if x.name in env_regs:
                    raise self.err(f"register {x.name} used with an offset", raw.line, raw.col)
                return x
            if isinstance(x, VecOp):
                return VecOp(tuple(res(e) for e in x.elems))
            if isinstance(x, ParenList):
                return ParenList(tuple(res(e) for e in x.elems))
            if isinstance(x, PairOp):
                return PairOp(res(x.first), res(x.second))
            if isinstance(x, Neg):
                return Neg(res(x.reg))
            return x

        g = None
        if guard:
            g = Guard(Reg(env_regs.get(guard[0], guard[0])), guard[1])
        ins = Instr(fam, mods, tuple(res(o) for o in ops), g, loc, False, supported)
        if supported:
            problems = check_instr(ins)
            if problems:
                raise self.err(problems[0], raw.line, raw.col)
        return ins
