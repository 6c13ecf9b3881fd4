"""Loop induction variables and trip counts of structured loops.

Owns the register definitions of a function (``_Defs``: which instructions define a
register, by the op table's ``def``/``update`` operand slots, and the symbolic value
(``SymInt``) of a register defined once), the registers a loop updates by a loop-invariant
step on every iteration (``InductionVar``), and the trip count of a do-while loop that
ends in ``if (setp.cmp iv, bound) continue``.
"""
from __future__ import annotations

from dataclasses import replace

from .nodes import Block, Continue, If, Imm, InductionVar, Instr, Loop, PairOp, Reg, Sym, VecOp
from .optable import OPS, param_access, semantics_of
from .symint import SymInt


class _Defs:
    """Register definitions of a function, for symbolic values of single-def registers."""

    def __init__(self, flat):
        self._flat = flat
        self._defs = None  # built on first use: only functions with loops need it
        self._defs_of: dict[int, tuple] = {}  # id(instr) -> (instr, registers it defines)
        self._cache: dict[str, SymInt] = {}

    @property
    def defs(self) -> dict:
        if self._defs is None:
            self._defs = {}
            for it in self._flat:
                if isinstance(it, Instr):
                    for r in self.defs_of(it):
                        self._defs.setdefault(r, []).append(it)
        return self._defs

    def defs_of(self, ins: Instr) -> list:
        """``_defs_of(ins)``, remembered per instruction."""
        e = self._defs_of.get(id(ins))
        if e is not None and e[0] is ins:
            return e[1]
        r = _defs_of(ins)
        self._defs_of[id(ins)] = (ins, r)
        return r

    def value(self, op, depth=0) -> SymInt | None:
        if isinstance(op, Imm):
            return SymInt.const(op.value)
        if isinstance(op, Sym):
            return SymInt.sym(op.name) if not op.offset else SymInt.sym(op.name) + op.offset
        if not isinstance(op, Reg):
            return None
        n = op.name
        if op.is_special:
            return SymInt.sym(n)
        if n in self._cache:
            return self._cache[n]
        d = self.defs.get(n, [])
        if len(d) != 1 or depth > 40:
            return None
        v = self._eval(d[0], depth + 1)
        self._cache[n] = v
        return v

    def _eval(self, ins: Instr, depth) -> SymInt | None:
        if ins.guard is not None or not ins.supported:
            return None
        ops = ins.operands
        if param_access(ins) == "load" and ops[1].base is not None:
            b = ops[1].base
            return SymInt.sym(b.name if isinstance(b, Sym) else str(b))
        vals = [self.value(o, depth) for o in ops[1:]]
        if any(v is None for v in vals):
            return None
        sem, m = semantics_of(ins), set(ins.mods)
        if sem in ("mov", "cvt", "cvta") and len(vals) == 1:
            return vals[0]
        if sem == "add" and not (m & {"f32", "f64", "f16", "bf16", "cc"}):
            return vals[0] + vals[1]
        if sem == "sub" and not (m & {"f32", "f64", "f16", "bf16", "cc"}):
            return vals[0] - vals[1]
        if sem in ("mul", "mul24") and m & {"lo", "wide"}:
            return vals[0] * vals[1]
        if sem in ("mad", "mad24") and m & {"lo", "wide"}:
            return vals[0] * vals[1] + vals[2]
        if sem == "shl" and vals[1].is_const and 0 <= vals[1].value < 64:  # else clamped or negative: not linear
            return vals[0] * (1 << vals[1].value)
        if sem == "neg" and not (m & {"f32", "f64"}):
            return -vals[0]
        return None


def _defs_of(ins: Instr):
    r = OPS.get(ins.op)
    ops = ins.operands
    if r is None or not ops or not ins.supported:
        return [o.name for o in ops[:1] if isinstance(o, Reg)]
    slots = _DEF_SLOTS.get(ins.op)
    if slots is None or slots[0] is not r:
        slots = _DEF_SLOTS[ins.op] = (r, tuple((k, s.access == "update") for k, s in enumerate(r.operands)
                                               if s.access in ("def", "update")))
    out = []
    n = len(ops)
    for k, upd in slots[1]:
        if k >= n:
            break
        op = ops[k]
        t = type(op)
        if t is Reg:
            out.append(op.name)
        elif t is VecOp:
            out.extend([x.name for x in op.elems if isinstance(x, Reg)])
        elif upd:
            continue
        elif t is PairOp:
            out.extend([x.name for x in (op.first, op.second) if isinstance(x, Reg)])
        elif isinstance(op, Reg):
            out.append(op.name)
    return out


_DEF_SLOTS: dict = {}  # op -> (row, ((slot index, is update), ...))


def _instrs(stmts):
    for s in stmts:
        if isinstance(s, Instr):
            yield s
        elif isinstance(s, If):
            yield from _instrs(s.then)
            yield from _instrs(s.orelse)
        elif isinstance(s, (Loop, Block)):
            yield from _instrs(s.body)



def _induction(loop: Loop, defs: _Defs) -> Loop:
    """Registers updated exactly once per iteration by ``add r, r, c`` with ``c`` loop
    invariant, at the top level of the loop body."""
    inner = list(_instrs(loop.body))
    defined: dict[str, list] = {}
    for ins in inner:
        for r in defs.defs_of(ins):
            defined.setdefault(r, []).append(ins)
    every = None
    inner_ids = None
    ivs = []
    for name, ds in defined.items():
        if len(ds) != 1:
            continue
        if every is None:
            every = _EveryIteration(loop)
        if not every(ds[0]):
            continue
        ins = ds[0]
        sem = semantics_of(ins)
        if sem not in ("add", "sub") or ins.guard is not None or not ins.supported or len(ins.operands) != 3 or any(
                t in ins.mods for t in ("f32", "f64", "f16", "bf16", "cc")):
            continue
        a, b = ins.operands[1], ins.operands[2]
        if not (isinstance(a, Reg) and a.name == name):
            if sem == "add" and isinstance(b, Reg) and b.name == name:
                a, b = b, a
            else:
                continue
        if isinstance(b, Reg) and b.name in defined:
            continue
        step = defs.value(b)
        if step is None:
            step = SymInt.sym(b.name) if isinstance(b, Reg) else None
        if step is None:
            continue
        if sem == "sub":
            step = -step
        if inner_ids is None:
            inner_ids = _Members(inner)
        outside = [d for d in defs.defs.get(name, []) if d not in inner_ids]
        init = None
        if len(outside) == 1:
            init = defs._eval(outside[0], 1)
        if init is None:
            init = SymInt.sym(name)
        ivs.append(InductionVar(Reg(name), init, step))
    ivs.sort(key=lambda iv: iv.reg.name)
    return replace(loop, ivs=tuple(ivs), trip_count=_trip_count(loop, ivs, defs, inner))


class _Members:
    """``x in items`` for a list of instructions (identity, then equality), without
    comparing ``x`` with every item."""

    def __init__(self, items):
        self.ids = {id(i) for i in items}
        self.by_key: dict = {}
        for i in items:
            self.by_key.setdefault((i.op, i.loc.ptx_line), []).append(i)

    def __contains__(self, x):
        if id(x) in self.ids:
            return True
        return any(i == x for i in self.by_key.get((x.op, x.loc.ptx_line), ()))


class _EveryIteration:
    """``_on_every_iteration(loop, ins)`` for the instructions of one loop, from one walk
    over its body: ``ins`` runs on every iteration when it is not inside an inner loop
    and, for every ``continue`` of the loop, it is a statement of a list enclosing that
    ``continue``, placed before it."""

    def __init__(self, loop: Loop):
        self.pos: dict[int, tuple] = {}  # id(instr) -> (id(list), index, in inner loop)
        self.conts: list[dict] = []  # per continue: {id(enclosing list): index}
        self.label = loop.label
        self._walk(loop.body, {}, False)

    def _walk(self, stmts, anc, nested):
        lid = id(stmts)
        for k, s in enumerate(stmts):
            if isinstance(s, Instr):
                self.pos.setdefault(id(s), (lid, k, nested))
            elif isinstance(s, Continue):
                if s.label == self.label:
                    d = dict(anc)
                    d[lid] = k
                    self.conts.append(d)
            elif isinstance(s, If):
                a = dict(anc)
                a[lid] = k
                self._walk(s.then, a, nested)
                self._walk(s.orelse, a, nested)
            elif isinstance(s, Block):
                a = dict(anc)
                a[lid] = k
                self._walk(s.body, a, nested)
            elif isinstance(s, Loop):
                a = dict(anc)
                a[lid] = k
                self._walk(s.body, a, True)

    def __call__(self, ins: Instr) -> bool:
        p = self.pos.get(id(ins))
        if p is None:  # not in the loop
            return False
        lid, k, nested = p
        if nested:
            return False
        for c in self.conts:
            j = c.get(lid)
            if j is None or j <= k:
                return False
        return True


def _on_every_iteration(loop: Loop, ins: Instr) -> bool:
    """Does ``ins`` execute (outside any inner loop) before every ``continue`` of ``loop``?
    The plain definition, one walk per instruction; ``_EveryIteration`` answers the same
    for all instructions of a loop at once (tests compare the two)."""
    ok = True

    def visit(stmts, seen, depth_loops):
        nonlocal ok
        for s in stmts:
            if s is ins:
                if depth_loops:
                    ok = False
                seen = True
            elif isinstance(s, Continue) and s.label == loop.label and not seen:
                ok = False
            elif isinstance(s, If):
                visit(s.then, seen, depth_loops)
                visit(s.orelse, seen, depth_loops)
            elif isinstance(s, Block):
                visit(s.body, seen, depth_loops)
            elif isinstance(s, Loop):
                visit(s.body, seen, depth_loops + 1)
        return seen

    visit(loop.body, False, 0)
    return ok and ins in set(_instrs(loop.body))


def _trip_count(loop: Loop, ivs, defs: _Defs, inner):
    """A do-while loop whose last statement is ``if (setp.cmp iv, bound) continue``."""
    if not loop.body or not isinstance(loop.body[-1], If):
        return None
    tail = loop.body[-1]
    if tail.orelse or tail.then != (Continue(loop.label, tail.then[0].loc),) if tail.then else True:
        return None
    setps = [i for i in inner if semantics_of(i) == "setp" and i.supported and len(i.operands) >= 3
             and i.operands[0] == tail.cond]
    if len(setps) != 1 or tail.negated:
        return None
    st = setps[0]
    cmp = next((m for m in st.mods if m in ("eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs")), None)
    a, b = st.operands[1], st.operands[2]
    iv = next((v for v in ivs if v.reg == a), None)
    if iv is None or not iv.step.is_const or iv.step.value == 0:
        return None
    # the IV update must come before the compare in the body (value init + (k+1)*step)
    order = list(loop.body)
    upd = next((i for i, s in enumerate(order) if isinstance(s, Instr) and iv.reg.name in defs.defs_of(s)), None)
    cmp_i = next((i for i, s in enumerate(order) if s is st), None)
    if upd is None or cmp_i is None or upd > cmp_i:
        return None
    bound = defs.value(b)
    if bound is None or (isinstance(b, Reg) and b.name in {r for i in inner for r in defs.defs_of(i)}):
        return None
    s = iv.step.value
    span = bound - iv.init
    if cmp == "ne":
        return span.floordiv(s)
    if cmp in ("lt", "lo") and s > 0:
        return (span + (s - 1)).floordiv(s).max(1)
    if cmp in ("le", "ls") and s > 0:
        return (span + s).floordiv(s).max(1)
    if cmp in ("gt", "hi") and s < 0:
        return (-span + (-s - 1)).floordiv(-s).max(1)
    if cmp in ("ge", "hs") and s < 0:
        return (-span - s).floordiv(-s).max(1)
    return None
