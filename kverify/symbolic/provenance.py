"""Pointer provenance the symbolic engine follows beyond one register: pointers a thread keeps
in its own local memory, and pointers selected between buffers by a condition.

*Local memory.* A ``.local`` variable (nvcc's ``__local_depot<N>`` stack frame, or a named
``.local`` variable) has a fixed base term ``local.<name>`` and region ``local:<name>``;
``cvta.local`` / ``cvta.to.local`` keep both, so a generic address of the frame and its local
address are one term. A store of a value to local memory (``st.local``, or a generic store
whose address has a ``local:`` region) is remembered in the thread's state as the
pseudo-register ``@local:<name>:<address>`` (its value and its region); a load of the same
width at the same address (the same term after simplification) gets that value and region back
-- this is what follows a pointer the thread stored to its stack and loads again (a pointer
passed by address to a device function, a local copy of a struct parameter). Local memory is
private to the thread (PTX ISA §5.1.5), so only the thread's own stores matter; a store that
may overlap a remembered entry without being provably the same bytes forgets it, a store
through an address whose state space is unknown forgets every entry, entries present on only
one arm of a branch are forgotten at the join, a loop that may store to local memory forgets
them at its head, and a called function's own frame is forgotten when it returns. Anything
not remembered is loaded as before: an approximate value with no region.

*Selections.* ``selp`` (and the join of an ``if``) of two pointers into different buffers
(``c ? A : B``) gets a region ``?sel:<n>`` naming the cases: ``[(condition, region), ...]``
over thread A's terms. An access through it is one access per case, each under its case's
condition (``Instructions.memory``), so the race check and the buffer extents see a pointer
that is A's on some paths and B's on others. At most ``MAX_CASES`` cases; a selection
involving a pointer whose buffer is unknown, or local memory, stays unknown (``?``).
"""
from __future__ import annotations

import z3

from kverify.semantics.ir.nodes import Addr, Instr, Reg
from kverify.semantics.ir.optable import space_of
from kverify.semantics.ir.visit import walk

from .families import deref, handler
from .terms import TRUE, fit, mk_and, mk_not, mk_or

LOCAL = "@local:"
MAX_CASES = 8


class Provenance:
    """Mixin of :class:`kverify.symbolic.executor.Executor` (see the module docstring)."""

    # ------------------------------------------------------------------ local memory
    def local_vars(self) -> set:
        """Names of the module's ``.local`` variables (kernel and functions)."""
        got = getattr(self, "_local_vars", None)
        if got is None:
            module = self.env.module
            got = {v.name for f in module.kernels for v in f.vars if v.space == "local"}
            got |= {v.name for v in module.vars if v.space == "local"}
            self._local_vars = got
        return got

    def local_base(self, name: str):
        return z3.BitVec(f"local.{name}", 64)

    @staticmethod
    def local_key(region: str, addr) -> str:
        return f"{LOCAL}{region.split(':', 1)[1]}:{addr.sexpr()}"

    def _local_info(self):
        info = getattr(self, "_local_addrs", None)
        if info is None:
            info = self._local_addrs = {}
        return info

    def forget_local(self, st, region: str | None = None, addr=None, width: int | None = None):
        """Forget the remembered local stores a store of ``width`` bytes at ``addr`` in
        ``region`` may overlap (all of them when ``region`` is None)."""
        info = self._local_info()
        for k in [k for k in st.regs if k.startswith(LOCAL)]:
            if region is None or addr is None:
                del st.regs[k]
                continue
            reg, a, w = info[k]
            if reg != region:
                continue  # another variable (frame): disjoint
            d = z3.simplify(addr - a)
            if z3.is_bv_value(d):
                dv = d.as_signed_long()
                if dv >= w or -dv >= (width or 1):
                    continue
            del st.regs[k]

    def local_store(self, st, region: str, addr, value, vregion, width: int, guard):
        """Remember ``value`` (with its region) stored at ``addr`` of local ``region``."""
        addr = z3.simplify(addr)
        key = self.local_key(region, addr)
        old = st.regs.get(key) if self._local_info().get(key, (None, None, None))[2] == width else None
        self.forget_local(st, region, addr, width)
        if value is None or z3.is_bool(value) or value.size() != 8 * width:
            return
        if not z3.is_true(guard):
            if old is None:
                return  # stored on some paths only, nothing known before it: not remembered
            st.regs[key] = old
        self._local_info()[key] = (region, addr, width)
        self.write(st, key, (value, vregion), guard)

    def local_load(self, st, region: str, addr, width: int):
        """``(value, region)`` remembered at ``addr`` of local ``region`` for a ``width``-byte
        load, or None."""
        key = self.local_key(region, z3.simplify(addr))
        got = st.regs.get(key)
        if got is None or self._local_info().get(key, (None, None, None))[2] != width:
            return None
        return got

    def local_access(self, ins, st, guard, addr_op, mode, atomic, width: int, vec: int, slot: int):
        """A load or store in the thread's local memory (``ld.local``/``st.local``, or a generic
        access through a ``local:`` address): follows the stores it can (module docstring);
        records no access (local memory is private)."""
        base_t, region = None, None
        if isinstance(addr_op, Addr) and addr_op.base is not None:
            base_t, region = self.read(st, addr_op.base, None)
        known = not (base_t is None or z3.is_bool(base_t) or not is_local_region(region))
        self.local_sites.append((ins, mk_and(st.pc, guard),
                                 z3.simplify(fit(base_t, 64) + addr_op.offset) if known else None))
        if not known:
            if mode != "read":
                self.forget_local(st)  # an address in local memory the walk does not know
            self.havoc_dests(st, ins, guard, "local")
            return st
        addr = z3.simplify(fit(base_t, 64) + addr_op.offset)
        if mode == "read":
            d = ins.operands[0]
            got = self.local_load(st, region, addr, width) if vec == 1 and isinstance(d, Reg) else None
            if got is None:
                self.havoc_dests(st, ins, guard, "local")
                return st
            term, vregion = got
            w = self.widths.get(d.name, term.size())
            ty = (ins.types() or ["b32"])[-1]
            if term.size() < w and ty.startswith("s"):
                term = z3.SignExt(w - term.size(), term)
            self.write(st, d.name, (fit(term, w), vregion), guard)
            return st
        if mode == "write" and not atomic and vec == 1 and slot + 1 < len(ins.operands):
            value, vregion = self.read(st, ins.operands[slot + 1], 8 * width)
            self.local_store(st, region, addr, value, vregion, width, guard)
            return st
        self.forget_local(st, region, addr, width)  # an atomic, a vector store: not remembered
        self.havoc_dests(st, ins, guard, "local")
        return st

    def may_store_local(self, lp) -> bool:
        """Whether the body of loop ``lp`` may store to the thread's local memory: a store or
        atomic in the local or generic state space, or a call."""
        cache = getattr(self, "_may_store_local", None)
        if cache is None:
            cache = self._may_store_local = {}
        got = cache.get(id(lp))
        if got is None:
            got = False
            for s, _ in walk(lp.body):
                if not isinstance(s, Instr):
                    continue
                if handler(s) == "call":
                    got = True
                    break
                d = deref(s)
                if d is not None and d[1] != "read" and space_of(s) in ("local", "generic"):
                    got = True
                    break
            cache[id(lp)] = got
        return got

    def keep_local(self, regs: dict, after: dict, callee) -> dict:
        """The caller's registers after a call: its local entries replaced by those the callee
        left (``after``), less the callee's own frame (it is gone)."""
        own = {v.name for v in callee.vars if v.space == "local"}
        out = {k: v for k, v in regs.items() if not k.startswith(LOCAL)}
        for k, v in after.items():
            if k.startswith(LOCAL) and k[len(LOCAL):].split(":", 1)[0] not in own:
                out[k] = v
        return out

    # ------------------------------------------------------------------ selections
    def _cases(self, region):
        if region is None or region == "?" or region == "shared" or region.startswith(("?struct:", "pstruct:",
                                                                                         "local:")):
            return None
        if region.startswith("?sel:"):
            return self.selections[region]
        return ((TRUE, region),)

    def select_region(self, cond, r1, r2):
        """The region of ``cond ? x : y`` for ``x`` in ``r1`` and ``y`` in ``r2``."""
        if r1 == r2:
            return r1
        if r1 is None or r2 is None:
            return "?"
        c1, c2 = self._cases(r1), self._cases(r2)
        if c1 is None or c2 is None:
            return "?"
        merged: dict = {}
        for c, r in [(mk_and(cond, c), r) for c, r in c1] + [(mk_and(mk_not(cond), c), r) for c, r in c2]:
            merged[r] = mk_or(merged[r], c) if r in merged else c
        if len(merged) > MAX_CASES:
            return "?"
        if not hasattr(self, "selections"):
            self.selections = {}
        key = f"?sel:{len(self.selections)}"
        self.selections[key] = tuple((z3.simplify(c), r) for r, c in merged.items())
        return key

    def region_cases(self, region):
        """``[(condition, region)]`` of a selection region; ``[(TRUE, region)]`` otherwise."""
        if region is not None and region.startswith("?sel:"):
            return list(self.selections[region])
        return [(TRUE, region)]


def is_local_region(region) -> bool:
    return region is not None and region.startswith("local:")


__all__ = ["LOCAL", "MAX_CASES", "Provenance", "is_local_region"]
