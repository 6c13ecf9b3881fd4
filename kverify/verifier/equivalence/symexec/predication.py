"""Branches on input data in the equivalence walk (``int``/``bitexact``): an ``if`` whose
condition, or an instruction whose guard, depends on input data runs both sides under the
condition (if-conversion), when both sides only compute values, load, store and perform
atomics (no barrier, collective, exit, call or asynchronous copy, no jump out of the branch).

Under the condition ``q`` a register written by either side becomes ``q ? then : else``
(a lazy :class:`~..folds.Select`, materialized when read), a store writes ``q ? new : old``,
and an atomic contributes ``q ? v : identity`` (``v`` itself when ``q`` is ``v != identity``,
as in ``if (count != 0) atomicAdd(&bins[b], count)``). A load on the side not taken reads a
value that is then discarded. This is exact for race-free kernels. Any other branch on input
data still stops the run (``unknown``), as does every such branch under ``real``.
"""
from __future__ import annotations

from kverify.semantics.ir.nodes import Block, Break, Continue, If, Instr, Loop
from kverify.semantics.ir.nodes import where as _loc

from .. import folds as F
from ..algebra import DataDependent

PREDICABLE = frozenset({"h_value", "h_cvta", "h_ld", "h_st", "h_atom", "h_nop"})


class Predication:
    """The if-conversion part of :class:`~.executor.Executor`."""

    def _unpredicable(self, stmts, labels=()):
        """Why ``stmts`` cannot run under a data-dependent condition, or None."""
        for s in stmts:
            ty = type(s)
            if ty is Instr:
                h = self.handlers.get(s.op)
                if h is None or not s.supported or h.__name__ not in PREDICABLE:
                    return f"its body has {s.opcode} at {_loc(s)}"
            elif ty is If:
                r = self._unpredicable(s.then, labels) or self._unpredicable(s.orelse, labels)
                if r:
                    return r
            elif ty in (Loop, Block):
                r = self._unpredicable(s.body, labels + (s.label,))
                if r:
                    return r
            elif ty in (Break, Continue):
                if s.label not in labels:
                    return f"its body jumps out of it at {_loc(s)}"
        return None

    def exec_predicated(self, t, s, cond, what):
        """Run the ``If`` ``s`` whose condition ``cond`` is symbolic (a generator, like
        ``exec_stmts``; nothing inside blocks)."""
        reason = "the real model has no conditional values" if self.alg.model == "real" else None
        if reason is None:
            key = ("pred", id(s))
            reason = self._dec.get(key, 0)
            if reason == 0:
                reason = self._dec[key] = self._unpredicable(s.then) or self._unpredicable(s.orelse)
        if reason:
            raise DataDependent(f"{what} depends on input data ({reason})")
        q = self.alg.pnot(cond) if s.negated else cond
        outer = t.pred
        saved = t.regs
        sides = []
        for body, p in ((s.then, q), (s.orelse, self.alg.pnot(q))):
            t.regs = dict(saved)
            if body:
                t.pred = p if outer is None else F.pand(outer, p)
                try:
                    sig = yield from self.exec_stmts(t, body)
                finally:
                    t.pred = outer
                if sig is not None:
                    raise DataDependent(f"{what} depends on input data (its body leaves it)")
            sides.append(t.regs)
        a, b = sides
        merged = dict(saved)
        for name in set(a) | set(b):
            x = a.get(name, saved.get(name))
            y = b.get(name, saved.get(name))
            if x is y:
                if x is not None:
                    merged[name] = x
                continue
            w = self._merge_width(name, x, y)
            if x is None:
                x = False if w == 1 else 0
            if y is None:
                y = False if w == 1 else 0
            if type(x) is type(y) and type(x) in (int, bool) and x == y:
                merged[name] = x
            else:
                merged[name] = F.Select(q, x, y, w)
        t.regs = merged

    def _merge_width(self, name, x, y):
        for v in (x, y):
            if type(v) is bool:
                return 1
            if isinstance(v, F.Fold):
                return v.w
            if isinstance(v, (F.FoldPred,)):
                return 1
            if isinstance(v, F.Select):
                return v.w
            if v is not None and type(v) is not int:
                import z3

                return 1 if z3.is_bool(v) else v.size()
        try:
            return self.reg_width(name)
        except Exception:  # the carry flag
            return 1

    def predicated_store(self, t, space, addr, n, value):
        """The value a store under ``t.pred`` leaves: ``pred ? value : old``."""
        old = self.load(t, space, addr, n)
        return self.alg.ite(t.pred, value, old, 8 * n)

    def guarded_if(self, s):
        """An instruction with a guard as ``if (guard) instruction``."""
        key = ("guard", id(s))
        r = self._dec.get(key)
        if r is None:
            from dataclasses import replace

            r = self._dec[key] = (If(s.guard.reg, s.guard.negated, (replace(s, guard=None),), (), s.loc), s)
        return r[0]
