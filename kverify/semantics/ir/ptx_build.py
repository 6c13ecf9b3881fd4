"""PTX front end, building the IR: raw statements (from ``ptx_grammar`` or the fast path)
become ``Module``/``Kernel``/``Instr`` nodes. Nested scopes are flattened (a clashing
register or label declared in a nested scope is renamed ``name$N``), names resolve to
registers, symbols or labels, each opcode is split by the op table and checked against its
row (modifier forms, operand count, check functions), and PTX bodies are structured
(``structure.structure``).
"""
from __future__ import annotations

from dataclasses import replace

from . import optable as _optable
from .errors import KernelError
from .nodes import (Addr, Block, Break, CallPrototype, Continue, FImm, Guard, If, Imm, InductionVar, Instr,
                    Kernel, Label, Loc, Loop, Module, Neg, PairOp, Param, ParenList, Reg,
                    RegDecl, Sink, Sym, GenericOf, VarDecl, VecOp, operand_regs)
from .optable import check_instr, split_opcode
from .ptx_raw import _CACHE_LIMIT, _Raw
from .types import Pointer, Scalar, Vector, is_type_name


#: the largest .align accepted (a power of two; shared-memory swizzle atoms need 1024)
MAX_ALIGN = 1 << 16


def _decl_type(attrs, path, line, col):
    vec = None
    scal = None
    align = None
    ptr = None
    for kind, v in attrs:
        if kind == "align":
            align = v
            if not isinstance(v, int) or v < 1 or v > MAX_ALIGN or v & (v - 1):
                raise KernelError(f".align {v} is not a power of two up to {MAX_ALIGN}", path, line, col)
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


def _init_value(x, ty, path, line, col):
    """One initializer element as the IR keeps it (§5.4.4): an integer holding the element's bits
    (a float literal -- ``0f``/``0d`` or decimal -- rounded to the element's format), a ``Sym``
    for a function or variable the initializer names (its address: a function pointer table
    ``{f, g}``, ``p = x``), a ``GenericOf`` for ``generic(x)``."""
    elem = ty.elem if isinstance(ty, Vector) else ty
    if isinstance(x, bool) or isinstance(x, int):
        return int(x)
    if isinstance(x, FImm):
        if not elem.is_float:  # a bit pattern: ``.b32 x = 0f3F800000`` (its width must fit)
            if x.width > elem.bits:
                raise KernelError(f"the {x.width}-bit literal {x} does not fit .{elem.name}", path, line, col)
            return x.bits
        return float_bits(x, elem.name, path, line, col)
    if isinstance(x, tuple) and x[0] == "name":
        return Sym(x[1])
    if isinstance(x, str) and x.startswith("generic(") and x.endswith(")"):
        return GenericOf(x[len("generic("):-1])
    raise KernelError(f"initializer element {x} is not supported", path, line, col)


def float_bits(x: FImm, name: str, path=None, line=0, col=0) -> int:
    """The bits of float literal ``x`` in format ``name`` (f16, bf16, f32, f64), rounded to
    nearest even when the literal is wider (a decimal literal is a double)."""
    import numpy as np

    if x.width == 32:
        v = np.array([x.bits], np.uint32).view(np.float32)
    else:
        v = np.array([x.bits], np.uint64).view(np.float64)
    if name == "f32":
        return int(v.astype(np.float32).view(np.uint32)[0])
    if name == "f64":
        return int(v.astype(np.float64).view(np.uint64)[0])
    if name == "f16":
        return int(v.astype(np.float16).view(np.uint16)[0])
    if name == "bf16":  # round the f32 to nearest even on its upper half
        b = int(v.astype(np.float32).view(np.uint32)[0])
        if (b & 0x7F800000) == 0x7F800000 and b & 0x7FFFFF:
            return (b >> 16) | 0x40
        return ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) & 0xFFFF
    raise KernelError(f"a float literal cannot initialize .{name}", path, line, col)


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
            vals = tuple(_init_value(x, ty, self.path, line, col) for x in init) if init else None
            out.append(VarDecl(space, ty, name, align, dims, "extern" in linkage,
                               linkage[0] if linkage else None, vals, loc))
        return out

    def function(self, parts, mvars):
        linkage, kind, name, params, rets, perf, body = None, None, None, [], [], [], None
        line = col = 0
        for p in parts:
            if isinstance(p, str):  # a token (lark's, or the fast path's ``_Tok``)
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
        from .structure import structure

        loc = Loc(self.path, line, col, line)
        if self.mode == "ir":
            regs, vars_, stmts = self.ir_body(body)
            return Kernel(name, prm, tuple(stmts), tuple(regs), tuple(vars_), rts,
                          kind == "ENTRY", linkage, tuple(perf), loc, self._protos)
        regs, vars_, flat = self.flatten(body)
        k = Kernel(name, prm, (), tuple(regs), tuple(vars_), rts, kind == "ENTRY", linkage,
                   tuple(perf), loc, self._protos)
        return structure(k, flat, self.path)

    def _iloc(self, iloc):
        if iloc is None:
            return Loc()
        f, ln, col, pl = iloc
        return Loc(self.files.get(f), ln, col, pl)

    def ir_body(self, body):
        regs, vars_ = [], []
        protos: dict = {}
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
            elif it.kind == "callprototype":
                nm, rets, prms = it.data
                protos[nm] = CallPrototype(nm, tuple(self.param(x) for x in rets),
                                           tuple(self.param(x) for x in prms), Loc(self.path, it.line, it.col, it.line))
        self._protos = tuple(protos.values())

        def conv(items):
            out = []
            for it in items:
                k = it.kind
                if k in ("instr", "blocking"):
                    ins = self._control_operands(self.instr(it, env, {}), it, (), protos)
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
        prm = Param(name, ty, align, arr, Pointer(ptr if isinstance(ptr, str) else "generic", align) if ptr else None)
        if prm.size > PARAM_SPACE_LIMIT:
            raise KernelError(f"parameter {name} of {prm.size} bytes exceeds the {PARAM_SPACE_LIMIT}-byte kernel "
                              f"parameter space", self.path, line, col)
        return prm

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
                elif it.kind in ("branchtargets", "callprototype"):
                    counts_labels[it.data[0]] = counts_labels.get(it.data[0], 0) + 1
                elif it.kind == "scope":
                    count(it.data)

        count(body)
        regs, vars_, flat = [], [], []
        tables: set = set()
        protos: dict = {}
        reg_ranges: dict[str, int] = {}
        serial = [0]

        def walk(items, env_regs: dict, env_labels: dict, depth: int):
            env_regs = dict(env_regs)
            env_labels = dict(env_labels)
            serial[0] += 1
            sid = serial[0]
            # declarations and labels of this scope first (labels may be used before defined)
            here: set = set()
            for it in items:
                if it.kind == "label":
                    if it.data in here:  # ptxas: "Duplicate definition of label"
                        raise self.err(f"label {it.data} is defined twice in one scope", it.line, it.col)
                    here.add(it.data)
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
                elif it.kind in ("label", "branchtargets", "callprototype"):
                    nm = it.data if it.kind == "label" else it.data[0]
                    env_labels[nm] = nm if counts_labels[nm] == 1 else f"{nm}${sid}"
                    if it.kind == "branchtargets":
                        tables.add(env_labels[nm])
                    elif it.kind == "callprototype":
                        _, rets, prms = it.data
                        protos[env_labels[nm]] = CallPrototype(
                            env_labels[nm], tuple(self.param(x) for x in rets),
                            tuple(self.param(x) for x in prms), Loc(self.path, it.line, it.col, it.line))
            for it in items:
                if it.kind == "instr":
                    flat.append(self._control_operands(self.instr(it, env_regs, env_labels), it,
                                                       tables, protos))
                elif it.kind == "label":
                    flat.append(("label", env_labels[it.data], it.line))
                elif it.kind == "branchtargets":
                    name, targets = it.data
                    resolved = []
                    for t, line, col in targets:
                        if t not in env_labels or env_labels[t] in tables or env_labels[t] in protos:
                            raise self.err(f".branchtargets {name}: {t} is not a label of this function",
                                           line, col)
                        resolved.append(env_labels[t])
                    flat.append(("branchtargets", env_labels[name], tuple(resolved), it.line))
                elif it.kind == "scope":
                    walk(it.data, env_regs, env_labels, depth + 1)
                elif it.kind in ("if", "loop", "block", "break", "continue", "blocking"):
                    raise self.err(f"'{it.kind}' is IR text syntax, not PTX", it.line, it.col)

        walk(body, {}, {}, 0)
        if self.mode != "ir":
            self._declared(regs, flat)
        self._reg_ranges = reg_ranges
        self._protos = tuple(protos.values())
        return regs, vars_, flat

    def _declared(self, regs, flat):
        """Every register an instruction names is declared (``.reg .b32 %r<6>;`` declares %r0 ..
        %r5); ptxas rejects the function otherwise ("Unknown symbol"), and its value would be
        nothing the PTX defines."""
        names = {r.name for r in regs if r.count is None}
        ranges = {r.name: r.count for r in regs if r.count is not None}

        def ok(n):
            if n in names or n.startswith("%") and Reg(n).is_special:
                return True
            base = n.rstrip("0123456789")
            return base != n and base in ranges and int(n[len(base):]) < ranges[base]

        for it in flat:
            if not isinstance(it, Instr):
                continue
            used = [r.name for o in it.operands for r in operand_regs(o)]
            if it.guard is not None:
                used.append(it.guard.reg.name)
            for n in used:
                if not ok(n):
                    raise KernelError(f"register {n} is not declared", self.path, it.loc.ptx_line, 1)

    def _control_operands(self, ins: Instr, raw: _Raw, tables: set, protos: dict) -> Instr:
        """``brx.idx``'s list operand must name a ``.branchtargets`` of the function (PTX ISA
        §9.7.12.4); a ``call``'s trailing name that is a ``.callprototype`` becomes a
        ``Label`` (it names the prototype, not a function)."""
        flow = _optable.flow_of(ins)
        if flow == "branch.indirect" and self.mode == "ir":
            # structured: the dispatch check ``brx.idx index, N`` of an N-target list (structure.py)
            if len(ins.operands) != 2 or not isinstance(ins.operands[1], Imm) or ins.operands[1].value < 1:
                raise self.err(f"{ins.opcode}: in the IR text the list operand is the number of targets",
                               raw.line, raw.col)
        elif flow == "branch.indirect":
            t = ins.operands[1] if len(ins.operands) > 1 else None
            if not isinstance(t, Label) or t.name not in tables:
                raise self.err(f"{ins.opcode}: {t if t is not None else '(none)'} is not a .branchtargets "
                               f"list declared in this function", raw.line, raw.col)
        elif flow == "call" and any(isinstance(o, Sym) and o.name in protos for o in ins.operands):
            ins = replace(ins, operands=tuple(Label(o.name) if isinstance(o, Sym) and o.name in protos else o
                                              for o in ins.operands))
        return ins

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
            why = _operand_error(ins)
            if why:
                raise self.err(why, raw.line, raw.col)
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
                if is_branch and (self.mode == "ir" or raw.data[1].startswith("brx")):
                    return Label(n)  # a brx.idx list: checked by _control_operands (IR: its name only)
                if is_branch:
                    raise self.err(f"branch to undefined label {n}", raw.line, raw.col)
                if n == "WARP_SZ":  # PTX ISA §4.4 predefined identifier, a constant 32
                    return Imm(32)
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


#: the largest kernel parameter list (CUDA 12.1+ on sm_70 and later: 32,764 bytes)
PARAM_SPACE_LIMIT = 32764


def _operand_error(instr) -> str | None:
    """An operand of the wrong kind for its slot (slots before the first optional or variadic
    one, where positions are fixed): a memory access (``load``/``store``/``update``) or an
    ``addr`` slot (a barrier, a tensor map) needs an address ``[...]``, wgmma's register slots a
    register or vector, a ``def`` a register (or ``_``, a vector or a predicate pair), a value
    operation's ``use`` a value, not an address."""
    r = _optable.OPS.get(instr.op)
    if r is None or not instr.supported:
        return None
    for i, x in enumerate(instr.operands):
        if isinstance(x, Addr) and isinstance(x.base, Sink):
            return f"{instr.opcode}: operand {i + 1}: an address needs a register or a variable, got {x}"
        if isinstance(x, Addr) and not -(1 << 63) <= x.offset < (1 << 63):
            return f"{instr.opcode}: operand {i + 1}: the address offset {x.offset:#x} does not fit in 64 bits"
    for i, (slot, x) in enumerate(zip(r.operands, instr.operands)):
        if slot.optional or slot.variadic:
            break
        if r.mnemonic in _optable.REGISTER_MEMORY_SLOTS and slot.access in ("load", "update"):
            if not isinstance(x, (Reg, VecOp)):
                return f"{instr.opcode}: operand {i + 1} ({slot.name}) must be a register or a vector, got {x}"
        elif slot.access in ("load", "store", "update", "addr") and not isinstance(x, Addr):
            return f"{instr.opcode}: operand {i + 1} ({slot.name}) must be an address [...], got {x}"
        if slot.access == "use" and r.semantics is not None and isinstance(x, Addr):
            return f"{instr.opcode}: operand {i + 1} ({slot.name}) is a value, not an address, got {x}"
        if slot.access == "def" and not isinstance(x, (Reg, Sink, VecOp, PairOp)):
            return f"{instr.opcode}: operand {i + 1} ({slot.name}) must be a register it writes, got {x}"
        written = slot.access == "def" or (r.mnemonic in _optable.REGISTER_MEMORY_SLOTS
                                           and slot.access in ("load", "update"))
        if written and isinstance(x, VecOp):
            bad = next((e for e in x.elems if not isinstance(e, (Reg, Sink))), None)
            if bad is not None:
                return f"{instr.opcode}: operand {i + 1} ({slot.name}) must be a vector of registers, got {bad} in it"
    return None


def _check_instr(ins: Instr) -> list:
    row = _optable.OPS.get(ins.op)
    if row is None:
        return []
    # the operand kinds are part of the key: check_instr also checks each slot's kind
    # (an address where an addr slot is, a register where a def is), not only the count
    key = (ins.op, ins.mods, tuple(type(o) for o in ins.operands))
    e = _check_cache.get(key)
    if e is not None and e[0] is row:
        return e[1]
    v = check_instr(ins)
    if all(_shape_only(c) for c in row.checks):
        if len(_check_cache) > _CACHE_LIMIT:
            _check_cache.clear()
        _check_cache[key] = (row, v)
    return v
