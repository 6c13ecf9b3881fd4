"""Barriers, mbarriers and asynchronous copies in the equivalence walk: ``bar``/
``barrier`` (PTX ISA 9.7.13), the ``mbarrier`` object through the mbarrier protocol's
step (PTX ISA 9.7.13.15), and ``cp.async``/``cp.async.bulk`` (PTX ISA 9.7.9), which
complete at issue (exact for race-free kernels).
"""
from __future__ import annotations

from kverify.launch.layout import SHARED_WINDOW
from kverify.semantics.ir.errors import Unsupported
from kverify.semantics.ir.nodes import Addr, Imm, Reg, Sink
from kverify.semantics.ir.optable import cp_async_source, sync_of
from kverify.semantics.memory_model.protocols import mbarrier as MB

from ..algebra import DataDependent, is_concrete
from .memory import SPACES


class MbarState:
    """An mbarrier of the walk: the mbarrier protocol's state, changed only by its step. A
    violation the protocol does not run on past stops the walk (``Unsupported``)."""

    __slots__ = ("state",)

    def __init__(self):
        self.state = MB.MbarrierState()

    @property
    def phase(self):
        return self.state.phase

    def step(self, cmd, ins):
        out = MB.step(self.state, cmd)
        if out.violation is not None:
            v, out = MB.run_on(self.state, cmd, out.violation)
            if out is None:
                raise Unsupported(f"{v.rule}: {v.message} ({v.section})", ins)
        self.state = out.state
        return out


class BarrierHandlers:
    """The barrier, mbarrier and copy handlers of :class:`~.executor.Executor`."""

    def h_bar(self, t, ins):
        ops = ins.operands
        mods = set(ins.mods)
        if sync_of(ins) == "cluster.barrier":
            raise Unsupported("cluster barriers", ins)
        if "red" in mods:
            raise Unsupported("bar.red", ins)
        bid = self.val(t, ops[0], 32) if ops else 0
        count = self.val(t, ops[1], 32) if len(ops) > 1 else 0
        if not (is_concrete(bid) and is_concrete(count)):
            raise DataDependent("a barrier id or count depends on input data")
        if "arrive" in mods:
            t.cta.bar_arrived[bid] = t.cta.bar_arrived.get(bid, 0) + 1
            return None
        return self._block(("bar", bid, count, ins))

    def _block(self, event):
        def g():
            r = yield event
            return r
        return g()

    # async copies, completed at issue (exact for race-free kernels)
    def h_cp_async(self, t, ins):
        ops = ins.operands
        dst = self.addr(t, ops[0])
        src = self.addr(t, ops[1])
        size = self.val(t, ops[2], 32)
        src_size_op, ignore_src = cp_async_source(ins, self.reg_width)
        src_size = size if src_size_op is None else self.val(t, src_size_op, 32)
        if ignore_src is not None:
            ignore = self.pred(t, ignore_src)
            if not isinstance(ignore, bool):
                raise DataDependent("a cp.async's ignore-src depends on input data")
            src_size = 0 if ignore else size
        if not (is_concrete(size) and is_concrete(src_size)):
            raise DataDependent("a cp.async size depends on input data")
        for j in range(0, size, 4 if size % 4 == 0 else 1):
            step = 4 if size % 4 == 0 else 1
            if j < src_size:
                v = self.load(t, "global", src + j, step, ins)
                if self.terms is not None:
                    self.terms.note(ins.loc, "load", v)
            else:
                v = 0
            self.store(t, "shared", dst + j, step, v, ins.loc)

    def h_bulk(self, t, ins):
        ops = ins.operands
        mods = ins.mods
        dst = self.addr(t, ops[0])
        src = self.addr(t, ops[1])
        size = self.val(t, ops[2], 32)
        if not is_concrete(size):
            raise DataDependent("a bulk copy size depends on input data")
        dspace, sspace = [m for m in mods if m in SPACES][:2]
        step = 4 if size % 4 == 0 else 1
        for j in range(0, size, step):
            v = self.load(t, sspace, src + j, step, ins)
            if self.terms is not None and sspace == "global":
                self.terms.note(ins.loc, "load", v)
            self.store(t, dspace, dst + j, step, v, ins.loc)
        if "mbarrier::complete_tx::bytes" in mods:
            self._mbar(t, ops[3], ins).step(MB.CompleteTx(size), ins)

    def _mbar(self, t, op, ins):
        a = self.addr(t, op) if isinstance(op, Addr) else self.val(t, op, 64)
        if not is_concrete(a):
            raise DataDependent("an mbarrier address depends on input data")
        if a >= SHARED_WINDOW:
            a -= SHARED_WINDOW
        st = t.cta.mbars.get(a)
        if st is None:
            if sync_of(ins) != "mbarrier.init":
                raise Unsupported("use of an mbarrier before mbarrier.init", ins)
        return st

    def h_mbar_init(self, t, ins):
        a = self.addr(t, ins.operands[0])
        if a >= SHARED_WINDOW:
            a -= SHARED_WINDOW
        c = self.val(t, ins.operands[1], 32)
        if not is_concrete(c):
            raise DataDependent("an mbarrier count depends on input data")
        t.cta.mbars[a] = MbarState()
        t.cta.mbars[a].step(MB.Init(int(c)), ins)

    def h_mbar_arrive(self, t, ins):
        ops = ins.operands
        st = self._mbar(t, ops[1], ins)
        mods = ins.mods
        cnt, tx = 1, 0
        rest = ops[2:]
        if "expect_tx" in mods:
            tx = self.val(t, rest[0], 32)
            rest = rest[1:]
        if rest:
            cnt = self.val(t, rest[0], 32)
        if not is_concrete(cnt) or not is_concrete(tx):
            raise DataDependent("an mbarrier arrival count or tx-count depends on input data")
        out = st.step(MB.Arrive(count=int(cnt), expect_tx=int(tx), no_complete="noComplete" in mods,
                                drop=sync_of(ins) == "mbarrier.arrive_drop"), ins)
        if not isinstance(ops[0], Sink):
            self.write(t, ops[0], out.value if out.value is not None else st.phase)

    def h_mbar_tx(self, t, ins):
        st = self._mbar(t, ins.operands[0], ins)
        n = self.val(t, ins.operands[1], 32)
        if not is_concrete(n):
            raise DataDependent("an mbarrier tx-count depends on input data")
        st.step(MB.ExpectTx(int(n)) if sync_of(ins) == "mbarrier.expect_tx" else MB.CompleteTx(int(n)), ins)

    def h_mbar_wait(self, t, ins):
        ops = ins.operands
        st = self._mbar(t, ops[1], ins)
        if "parity" not in ins.mods:
            raise Unsupported("mbarrier waits with a state token (only the parity form)", ins)
        if not ins.blocking:
            raise Unsupported("a polling mbarrier.test_wait/try_wait outside a recognized retry loop", ins)
        parity = self.val(t, ops[2], 32) & 1
        if not is_concrete(parity):
            raise DataDependent("an mbarrier wait parity depends on input data")
        return self._mbar_wait_gen(t, ins, st, parity)

    def _mbar_wait_gen(self, t, ins, st, parity):
        if st.phase % 2 == parity:
            yield ("mbar", st, parity, ins)
        st.step(MB.TestWait(parity=int(parity)), ins)  # observes the completed phase
        if not isinstance(ins.operands[0], Sink):
            self.write(t, ins.operands[0], True)
        return None
