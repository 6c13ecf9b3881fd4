"""The run's definedness shadow: which lanes of which registers hold a value derived from a
register no instruction wrote, and where such a value is a finding (rule
``uninitialized.register``).

A register read before any instruction wrote it in that lane holds whatever the hardware
register held (PTX ISA §5.1.1: a register has no initial value; ptxas maps it to a physical
register that earlier code left as it was). The interpreter reads such a register as 0, so a run
alone would take an uninitialized accumulator (``float acc; for (...) acc += ...;``) for a zeroed
one and agree with the reference; compute-sanitizer's initcheck reports uninitialized accesses to
global memory (its guide), not registers.

Compilers read undefined registers legitimately (a value computed for lanes that never use it, a
select that does not pick it, the accumulator of a ``wgmma`` whose scale-d is 0), so an undefined
read alone is not a finding. The run carries, per warp, the undefined lanes of each register
(``w.undef``) through the instructions that compute values and reports where such a value is used
as the op table's operand slots say (``semantics.ir.definedness.Sites``): stored to memory, an
address, a guard or branch condition, an operand of a synchronization or asynchronous operation.
Propagation: a result lane is undefined when a source operand's lane is (``selp``/``slct``: the
selected operand's and the selector's); ``shfl`` moves it from the source lane, the other warp
collectives (vote, match, reduce, mma, movmatrix) to every executing lane; ``wgmma.mma_async``
reads its accumulator only when scale-d is set, and an undefined A fragment reaches every lane.

The shadow is per lane, not per bit: a 64-bit register packed from a defined and an undefined
half (``mov.b64 %rd, {%r1, %r2}``) is undefined as a whole, also after the defined half is
unpacked again. A value stored to local memory is checked as any store; one passed to a called
function (``st.param`` of its arguments) is not followed: the callee reads its parameters as
defined. A finding names the register the value derives
from and the line that first read it undefined; the lanes it reports count as defined afterwards,
so one undefined value gives one finding.
"""
from __future__ import annotations

import numpy as np

from kverify.semantics.ir.definedness import Sites
from kverify.semantics.ir.nodes import where
from kverify.semantics.memory_model.execution import UNINITIALIZED_REGISTER
from kverify.semantics.values import evaluate, family_type, source_bits
from kverify.semantics.values.collectives import shfl_source

from .handlers.matrix import uniform_operand
from .state import D, U64

LANES = np.arange(32, dtype=np.int64)


class Shadow:
    """The run's definedness shadow (module docstring). Per warp: ``w.undef`` maps a register to
    its undefined lanes (only registers with one), ``w.undef_from`` to the register and line the
    value derives from; a register the warp never wrote (absent from ``w.regs``) is undefined in
    every lane."""

    def __init__(self, m):
        self.m = m
        self.sites: dict = {}

    def site(self, ins) -> Sites:
        s = self.sites.get(id(ins))
        if s is None:
            s = self.sites[id(ins)] = Sites(ins)
        return s

    # ------------------------------------------------------------------ reads
    def lanes(self, w, name):
        """Undefined lanes of register ``name`` (None: none)."""
        if name not in w.regs:
            return w.live.copy()
        return w.undef.get(name)

    def origin(self, w, name, ins):
        o = w.undef_from.get(name)
        if o is None:
            o = w.undef_from[name] = (name, ins.loc)
        return o

    def condition(self, w, reg, mask, ins_or_stmt, what):
        """A guard or branch condition: undefined in a lane of ``mask`` is a finding."""
        if reg.is_special or (reg.name in w.regs and reg.name not in w.undef):
            return
        u = self.lanes(w, reg.name)
        if u is not None and (u & mask).any():
            self._report(w, ins_or_stmt, u & mask, reg.name, what)

    # ------------------------------------------------------------------ an instruction
    def before(self, w, ins, mask):
        """Called before the handler: the undefined lanes flowing into the results, or None when
        nothing is undefined and every destination was written before (the common case)."""
        s = self.sites.get(id(ins)) or self.site(ins)
        regs, undef = w.regs, w.undef
        if regs.keys() >= s.every and (not undef or undef.keys().isdisjoint(s.every)):
            return None
        # undefined lanes outside the executing ones only (a register an elected lane wrote): the
        # destinations keep the flags of the lanes not written
        for n in s.names:
            u = undef.get(n) if n in regs else mask
            if u is not None and (u & mask).any():
                break
        else:
            for d in s.dests:
                if d not in regs:
                    break
                u = undef.get(d)
                if u is not None and (u & mask).any():
                    break
            else:
                return None
        for kind, n in s.sink:
            u = self.lanes(w, n)
            if u is not None and (u & mask).any():
                self._report(w, ins, u & mask, n, kind)
        flow, origin = self._flow(w, ins, s, mask)
        new = tuple(d for d in s.dests if d not in regs)
        return (flow, origin), new

    def _flow(self, w, ins, s, mask):
        """The undefined lanes of the results (None: none) and the origin they derive from."""
        out, origin = None, None

        def add(u, n):
            nonlocal out, origin
            if u is None or not (u & mask).any():
                return
            out = u.copy() if out is None else (out | u)
            if origin is None:
                origin = self.origin(w, n, ins)

        if s.how in ("selp", "slct"):  # the selected operand's lanes, and the selector's
            by = {name: n for name, n in s.flow}
            c = by.get("c")
            if c is not None:
                add(self.lanes(w, c), c)
            if s.how == "selp":
                sel = self.m.pred(w, ins.operands[3])
            else:  # slct: the value semantics' own choice, with a = 1 and b = 0
                ty = family_type("slct", ins.types())
                c = self.m.val(w, ins.operands[3], source_bits("slct", ty, ins.mods, 2))
                sel = np.broadcast_to(np.asarray(evaluate(D, "slct", ty, frozenset(ins.mods), U64(1), U64(0), c))
                                      != 0, (32,))
            for key, pick in (("a", sel), ("b", ~sel if sel is not None else None)):
                n = by.get(key)
                if n is not None:
                    u = self.lanes(w, n)
                    add(None if u is None else (u & pick if pick is not None else u), n)
            return out, origin
        if s.how == "shfl":  # from the source lane; the lane and clamp operands in each lane
            ops = ins.operands
            for name, n in s.flow:
                u = self.lanes(w, n)
                if u is None:
                    continue
                if name == "a":
                    b = np.broadcast_to(np.asarray(self.m.val(w, ops[2], 32)), (32,)).astype(np.int64)
                    c = np.broadcast_to(np.asarray(self.m.val(w, ops[3], 32)), (32,)).astype(np.int64)
                    mode = next(x for x in ins.mods if x in ("up", "down", "bfly", "idx"))
                    j, _ = shfl_source(mode, LANES, b, c)
                    u = u[j] & mask
                add(u, n)
            return out, origin
        if s.how == "wgmma":  # the accumulator only when scale-d is set; A's registers in every lane
            rest = ins.operands[3:]
            scale_d = bool(uniform_operand(self.m, w, rest[0])) if rest else True  # as the handler reads it
            for name, n in s.flow:
                if name == "d" and not scale_d:
                    continue
                u = self.lanes(w, n)
                if u is not None and name == "a" and (u & mask).any():
                    u = mask.copy()  # an A fragment feeds every row of the warpgroup's result
                add(u, n)
            return out, origin
        for name, n in s.flow:
            add(self.lanes(w, n), n)
        if out is not None and s.how == "lanes":  # exchanged among the executing lanes
            out = mask.copy() if (out & mask).any() else None
        return out, origin

    def after(self, w, ins, mask, token):
        """Called after the handler: the destinations' undefined lanes."""
        (flow, origin), new = token
        s = self.site(ins)
        undef = w.undef
        for d in s.dests:
            u = undef.get(d)
            if d in new:
                u = w.live & ~mask  # lanes no instruction wrote
            elif u is not None:
                u = u & ~mask
            if flow is not None:
                u = (flow & mask) if u is None else (u | (flow & mask))
            if u is not None and u.any():
                undef[d] = u
                if flow is not None and (flow & mask).any():
                    w.undef_from[d] = origin
                elif d in new:
                    w.undef_from.setdefault(d, (d, None))
            else:
                undef.pop(d, None)
                w.undef_from.pop(d, None)

    def _report(self, w, at, lanes, name, kind):
        m = self.m
        idx = np.flatnonzero(lanes)
        first = m._thread(w, int(idx[0]))
        src, read = w.undef_from.get(name, (name, None))
        if name not in w.regs or (src == name and read is None):
            whence = f"{name}, which no instruction wrote in those lanes"
        elif src == name:
            whence = f"{name}, read at {where(read)} where no instruction had written it in those lanes"
        else:
            whence = f"{name}, computed from {src}" + (f", read at {where(read)} where no instruction had written it"
                                                          if read is not None else ", which no instruction wrote")
        what = {"address": "an address", "stored value": "a stored value", "membermask": "a membermask",
                "operand": "an operand", "guard": "a guard predicate", "condition": "its condition"}[kind]
        opcode = getattr(at, "opcode", "the branch")
        m.report(UNINITIALIZED_REGISTER.id,
                 f"{opcode} uses {what} that is undefined in {len(idx)} lane(s) of {w.describe()}, first {first}: "
                 f"{whence} ({UNINITIALIZED_REGISTER.section})", [at.loc], thread=first)
        # reported once: the lanes count as defined from here on, so one value gives one finding
        if name in w.regs:
            u = w.undef.get(name)
            if u is not None:
                u = u & ~lanes
                if u.any():
                    w.undef[name] = u
                else:
                    w.undef.pop(name)
                    w.undef_from.pop(name, None)

