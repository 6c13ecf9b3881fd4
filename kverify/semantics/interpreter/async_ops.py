"""Operations of the asynchronous units in flight: ``CopyOp`` (cp.async, cp.async.bulk,
cp.async.bulk.tensor) and ``WgmmaOp`` (a warpgroup's wgmma.mma_async). Each is one agent of
the happens-before clocks whose single event is its completion, chosen by the scheduler;
completing one performs its data movement / matrix product, records its accesses in the race
shadow and steps the protocol its completion signals (mbarrier complete-tx, async group).
PTX ISA §9.7.9.25, §9.7.15.
"""
from __future__ import annotations

import numpy as np

from kverify.semantics.memory_model import wgmma
from kverify.semantics.values.narrow import FP8, round_to, to_f32
from kverify.semantics.memory_model.protocols import async_groups as AG

from .hb import ASYNC, join, tick
from .state import U64

class AsyncOp:
    """One operation of an asynchronous unit; its agent's single event is completion."""

    kind = "async"
    per_warp = True  # numbered among its warp's operations (``dpor_key``)

    def __init__(self, m, warp, instr, agent):
        self.m, self.warp, self.instr, self.agent = m, warp, instr, agent
        if self.per_warp:  # its place among the operations ``warp`` issued
            self.seq = warp.op_seq
            warp.op_seq += 1
        if m.fp is not None:  # dpor: issued by the step running now
            m.fp_spawned.append(self)
        self.vc = tick(warp.vc.copy(), agent)  # issue snapshot plus its own completion event
        self.loc = m.loc_id(instr.loc)
        m.ops_by_agent[agent] = self
        self.done = False
        if m.trace is not None:
            m.trace.issue(self, warp, instr)

    def enabled(self) -> bool:
        return True

    def dpor_key(self) -> tuple:
        """Its identity in every run of the launch (``dpor.thread_key``)."""
        return (self.kind, self.warp.cta.ctaid, self.warp.index, self.seq)

    def complete(self):
        raise NotImplementedError

    def release(self):
        """Once its cluster ended (``Machine._release``): keep what reports name (agent,
        instruction, warp, location) and drop the operands and the issue snapshot, which no later
        agent can acquire."""
        if self.m.trace is None:
            self.vc = _NO_CLOCK
        self.drop_operands()

    def drop_operands(self):
        """Once it completed: what it read and wrote (byte indices, register values), which only
        its completion uses; the clock stays for the waits that acquire it."""

    def drop_clock(self):
        """Once no wait can acquire it any more (released into an mbarrier phase at completion and
        in no async-group; a wgmma every warp of its warpgroup acquired): the issue snapshot, as
        long as the run's agents (kept, every operation's clock makes the run quadratic)."""
        if self.m.trace is None:
            self.vc = _NO_CLOCK


_NO_CLOCK = np.zeros(0, np.int64)
_ZERO_LANES = np.zeros(32, U64)  # a register never written (read only)
_ZERO_LANES.flags.writeable = False

#: an async operation's agent clock once its source reads completed (``CopyOp.complete``)
READ_DONE = 1


class CopyOp(AsyncOp):
    """cp.async (per lane), cp.async.bulk and cp.async.bulk.tensor in either direction."""

    def __init__(self, m, warp, instr, agent, kind, writes, reads, action, mbar=None, group=None,
                 nbytes=0, proxy=ASYNC):
        super().__init__(m, warp, instr, agent)
        self.kind, self.writes, self.reads, self.action = kind, writes, reads, action
        self.mbar, self.group, self.nbytes, self.proxy = mbar, group, nbytes, proxy

    def complete(self):
        """Its source reads complete at its agent's clock 1, its writes at 2: a wait that
        observes the reads only (``cp.async.bulk.wait_group.read``, ``READ_DONE``) acquires
        clock 1, which does not order a later access of the destination."""
        m = self.m
        self.action()
        for region, idx in self.reads:
            if region.shadow is not None:
                region.shadow.record_async_read(idx, self.agent, self.vc, self.loc)
        if self.writes:
            self.vc = tick(self.vc, self.agent)
        for region, idx in self.writes:
            sh = region.shadow
            if sh is None:  # race freedom proved before the run (``Region.untrack``)
                continue
            mine = sh.pend_w[idx] == self.agent
            sh.pend_w[idx[mine]] = -1
            sh.record_write(idx, self.agent, int(self.vc[self.agent]), self.loc, None, self.proxy)
        self.done = True
        if self.mbar is not None:
            m.mbar_complete_tx(self, self.mbar, self.nbytes)
        if self.group is not None:
            m.step(self.group, AG.Complete(self.agent), self.instr)
        self.drop_operands()
        if self.mbar is not None and self.group is None and self.instr.row.sync == "bulk.copy":
            self.drop_clock()  # a TMA / bulk copy's completion: released into the mbarrier phase, no group

    def drop_operands(self):
        self.writes, self.reads, self.action = (), (), None


class WgmmaOp(AsyncOp):
    """One warpgroup-wide wgmma.mma_async: enabled once all four warps issued it."""

    kind = "wgmma"
    per_warp = False  # one per warpgroup: whichever of its warps issues first creates it

    def __init__(self, m, warp, instr, agent, key):
        super().__init__(m, warp, instr, agent)
        self.key = key
        self.acquired_by: set = set()  # the warps of the warpgroup whose wait acquired it
        self.parts = {}  # warp index in group -> (warp, d regs, a regs or None)
        self.reads = []
        self.earlier = [o for o in m.inflight if isinstance(o, WgmmaOp) and o.key[:2] == key[:2]]
        # the last of them: it completes only after every one before it (``enabled``)
        self.prev = self.earlier[-1] if self.earlier else None

    def dpor_key(self) -> tuple:
        return ("wgmma", self.warp.cta.ctaid) + tuple(self.key[1:])

    def enabled(self):
        # the tensor core runs a warpgroup's mma_async in issue order (each may use the
        # accumulator the previous one produced)
        return len(self.parts) == 4 and (self.prev is None or self.prev.done)

    def complete(self):
        ins = self.instr
        shape = next(x for x in ins.mods if x.startswith("m64n"))
        n = int(shape[4:].split("k")[0])
        k = int(shape.split("k")[1])
        tys = ins.types()
        dty, aty, bty = tys[0], tys[1], tys[2]
        w0, aregs0, desc_a, desc_b, scale_d, tn_a, tn_b, neg_a, neg_b, _ = self.parts[0]
        cta = w0.cta
        smem = cta.smem.data
        if aregs0 is None:
            a = _smem_operand(smem, desc_a, 64, k, aty, tn_a)
        else:
            layout = wgmma.a_register_fragment_layout(wgmma.OPERAND_STORAGE[aty])
            vals = np.zeros((128, layout.shape[1]), np.float32)
            for wi in range(4):
                w, aregs, *_ = self.parts[wi]
                per = layout.shape[1] // len(aregs)  # elements per 32-bit register
                width = 32 // per
                for r, regv in enumerate(aregs):
                    for h in range(per):
                        bits = (regv >> U64(width * h)) & U64((1 << width) - 1)
                        vals[wi * 32:(wi + 1) * 32, r * per + h] = to_f32(bits, aty)
            a = wgmma.fragment_to_matrix(vals, layout, (64, k))
        b = _smem_operand(smem, desc_b, n, k, bty, tn_b)
        layout = wgmma.accumulator_fragment_layout(n)
        dvals = np.zeros((128, n // 2), np.float32)
        for wi in range(4):  # the accumulator as it is now (an earlier mma_async may have written it),
            w, *_, names = self.parts[wi]  # one warp's registers as a (32 lanes, registers) array
            dregs = [w.regs.get(nm, _ZERO_LANES) for nm in names]  # (stacked: a copy)
            if not dregs:
                continue
            regs = np.stack(dregs, axis=1)
            rows = slice(wi * 32, (wi + 1) * 32)
            if dty == "f32":
                dvals[rows, :len(dregs)] = regs.astype(np.uint32).view(np.float32)
            else:  # two halves per register: elements 2r and 2r+1
                dvals[rows, 0:2 * len(dregs):2] = to_f32(regs, dty)
                dvals[rows, 1:2 * len(dregs):2] = to_f32(regs >> U64(16), dty)
        dmat = wgmma.fragment_to_matrix(dvals, layout, (64, n))
        # One rule for every operand type (f16/bf16/tf32/e4m3/e5m2): the elements are decoded
        # exactly (values.narrow), the products are exact in f64 (fp8 x fp8 has at most 8
        # significant bits, exact even in f32), the K products and D are summed in f64 and
        # rounded once to the accumulator type (RN). PTX leaves the tensor core's accumulation
        # order and internal precision open (FP8 sums on Hopper are reported to keep fewer
        # bits than f32), so a GPU may differ in the low bits: bench/conformance.py compares
        # wgmma kernels by their largest ULP difference, not bit for bit; results agree
        # exactly when every partial sum is representable.
        out = wgmma.wgmma_mma(dmat, a, b, bool(scale_d), neg_a, neg_b,
                              dtype=np.float32 if dty == "f32" else np.float64)
        frag = wgmma.matrix_to_fragment(out, layout)  # (128, n/2)
        for wi in range(4):  # each register's 32 lanes: one row of a (registers, 32 lanes) array
            w, *_, names = self.parts[wi]
            block = frag[wi * 32:(wi + 1) * 32]
            if dty == "f32":
                regs = np.ascontiguousarray(block[:, :len(names)].T.astype(np.float32).view(np.uint32).astype(U64))
            else:
                lo = round_to(block[:, 0:2 * len(names):2], dty)
                hi = round_to(block[:, 1:2 * len(names):2], dty)
                regs = np.ascontiguousarray((lo | (hi << U64(16))).T)
            for r, name in enumerate(names):
                w.regs[name] = regs[r]
        # the warpgroup's earlier mma_async complete first, and every wait that covers this
        # one covers them
        earlier = {o.agent for o in self.earlier}
        for region, idx in self.reads:
            region.shadow.record_async_read(idx, self.agent, self.vc, self.loc, earlier)
        self.done = True
        for wi in range(4):
            w = self.parts[wi][0]
            self.m.step(w.wgmma, AG.Complete(self.agent), self.instr)
        self.drop_operands()

    def drop_operands(self):
        self.parts, self.reads, self.earlier, self.prev = {}, [], [], None


def _smem_operand(smem, desc, rows, k, ty, trans):
    """A wgmma operand (``rows x K`` float32 values) read from shared memory: the bytes at
    the descriptor's canonical layout, decoded per the operand type (fp8 by
    ``values.narrow``)."""
    vals = wgmma.load_operand(smem, desc, rows, k, wgmma.OPERAND_STORAGE[ty], "MN" if trans else "K")
    return to_f32(vals, ty) if ty in FP8 else vals


class ArriveOnCopies(AsyncOp):
    """The arrive-on of ``cp.async.mbarrier.arrive`` for one lane: it happens once every cp.async
    that lane issued before it completed (``enabled``), releasing what they wrote."""

    kind = "cp.async.mbarrier.arrive"

    def __init__(self, m, warp, instr, agent, key, copies, lane):
        super().__init__(m, warp, instr, agent)
        self.key, self.copies, self.lane = key, copies, lane

    def enabled(self):
        return all(c.done for c in self.copies)

    def complete(self):
        for c in self.copies:
            self.vc = join(self.vc, c.vc)
        self.done = True
        self.m.mbar_arrive_on_copies(self)
        self.drop_operands()

    def drop_operands(self):
        self.copies = ()
