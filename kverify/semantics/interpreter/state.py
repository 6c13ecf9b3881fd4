"""The interpreter's run state: CTAs, warps (lanes, registers, per-warp async-group
protocol states), what a blocked warp waits for, findings, and the shared constants
(lanes, the concrete value domain).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from kverify.semantics.ir.nodes import Instr
from kverify.semantics.memory_model.protocols import async_groups as AG
from kverify.semantics.memory_model.protocols import named_barrier as NB
from kverify.semantics.memory_model.protocols.common import Protocol
from kverify.semantics.values import ConcreteDomain

from .hb import LaneOrder, tick

D = ConcreteDomain()
ASYNC_GENERIC = 2  # written by an async operation that acts in the generic proxy (cp.async)
LANES = np.arange(32)
U64 = np.uint64


def low_mask(bits: int) -> int:
    return (1 << bits) - 1


class StepBudget(Exception):  # args: () for the instruction budget, (seconds,) for the wall clock
    pass


@dataclass
class RunFinding:
    rule: str
    message: str
    locs: list
    details: dict = field(default_factory=dict)
    count: int = 1


@dataclass(eq=False)
class SyncObject:
    """One synchronization object of the run: its protocol, its current state (changed only
    by ``Machine.step``), how findings name it, and a version bumped at every change (a
    polling wait resumes when it moves)."""

    protocol: Protocol
    state: object
    title: str
    version: int = 0

    def related_locs(self, finding) -> tuple:
        """Source locations a finding on this object cites besides the instruction's."""
        return ()


@dataclass
class Wait:
    """What a blocked warp waits for: ``ready()`` says whether it may resume."""

    kind: str
    ready: object
    describe: object
    instr: Instr | None = None


def on_change(obj: SyncObject, pred):
    """``pred`` -- a function of ``obj``'s protocol state alone -- as a ``Wait.ready`` that
    evaluates it again only after ``obj`` changed (``Machine.step`` is the one place it does):
    the scheduler asks every blocked warp at every turn."""
    memo = [-1, False]

    def ready():
        if memo[0] != obj.version:
            memo[0], memo[1] = obj.version, bool(pred())
        return memo[1]
    return ready



class CTA:
    def __init__(self, m, ctaid, rank, cluster_ctas):
        self.m, self.ctaid, self.rank = m, ctaid, rank
        self.cluster_ctas = cluster_ctas
        self.maxnreg: dict = {}  # warp index -> the setmaxnreg instructions it executed, in order
        self.named = SyncObject(NB.PROTOCOL, NB.NamedBarrierState(m.threads_per_block), f"the named barriers of {self.describe()}")
        self.bar_vc: dict[int, np.ndarray] = {}
        self.bar_locs: dict[int, dict] = {}  # barrier -> loc -> (instr, aligned) of its arrivals
        self.bar_gen = [0] * 16
        self.mbars: dict = {}  # shared offset -> mbarriers.MbarInfo
        self.mbar_names: dict = {}  # (state space, address) -> (CTA, MbarInfo) its warps named (``mbar_at``)
        self.warps: list[Warp] = []
        self.exited_threads = 0
        self.bar_value: dict = {}
        self.bar_release: dict = {}
        self.cluster_barrier = None  # handlers.barriers.ClusterBarrier, shared by the cluster
        # accesses of other CTAs to this CTA's shared memory: agent -> (its clock there, loc, who);
        # its exit must be ordered after each (``Machine.remote_smem``, ``Machine.warp_gone``)
        self.remote: dict = {}
        self.warps_gone = 0
        self.exit_vc = np.zeros(0, np.int64)
        self.exited = False

    def describe(self):
        return "CTA (%d,%d,%d)" % self.ctaid


class Warp:
    def __init__(self, m, cta, index, agent):
        self.m, self.cta, self.index, self.agent = m, cta, index, agent
        nthreads = m.threads_per_block
        t = index * 32 + LANES
        self.valid = t < nthreads
        self.live = self.valid.copy()
        bx, by, _ = m.spec.block
        self.tid = (t % bx, (t // bx) % by, t // (bx * by))
        self.linear_tid = t
        self.regs: dict[str, np.ndarray] = {}
        self.undef: dict[str, np.ndarray] = {}  # register -> lanes whose value no instruction wrote (definedness)
        self.undef_from: dict = {}  # register -> (the register, line) its undefined value derives from
        self.vc = np.zeros(0, np.int64)
        self.vc = tick(self.vc, agent)
        self.lane_order = LaneOrder()  # warp-synchronizing points among its lanes (hb)
        self.fence_rel = None  # clock at its last releasing fence (hb: release patterns)
        self.proxy_fence_vc = {}  # "global"/"shared" -> its vector clock at its last fence.proxy.async covering it
        self.acq_pending = None  # release clocks its relaxed reads observed, acquired at its next fence
        self.iters: list = []
        self.brk: dict = {}
        self.cont: dict = {}
        self.wait: Wait | None = None
        self.done = False
        self.cp_async = SyncObject(AG.CP_ASYNC, AG.CpAsyncState(), f"the cp.async groups of {self.describe()}")
        self.bulk = SyncObject(AG.BULK_GROUP, AG.BulkGroupState(), f"the bulk async groups of {self.describe()}")
        self.wgmma = SyncObject(AG.WGMMA, AG.WgmmaState(), f"the wgmma groups of {self.describe()}")
        self.wgmma_regs: dict = {}  # in-flight wgmma agent -> register names
        self.wgmma_seq = 0
        self.mbar_next: dict = {}
        self.mbar_inits_seen: list = []  # (own clock, init-only clock) per cluster-barrier wait
        self.cluster_waits = 0  # cluster-barrier waits it completed (any arrive: its CTAs all started)
        self.last_group_wait = {}
        self.params: dict[str, np.ndarray] = {}  # call-site .param variables, per lane
        # lanes that called an intrinsic kverify does not evaluate (``ir.gpuverify``) since their last
        # assertion or precondition, and the intrinsics' names
        self.unevaluated = np.zeros(32, bool)
        self.unevaluated_names: set = set()
        self.frames: list = []
        self.returned = np.zeros(32, bool)
        self.pdl_waited = np.zeros(32, bool)  # lanes past griddepcontrol.wait (``dependent``)
        self.exited_reported = False
        self.gen = None
        self.fp_last: set = set()  # dpor: the synchronization objects its last step touched
        self.op_seq = 0  # asynchronous operations it issued (``AsyncOp.dpor_key``)

    def describe(self):
        lanes = np.flatnonzero(self.valid)
        lo, hi = self.index * 32 + lanes[0], self.index * 32 + lanes[-1]
        return f"warp {self.index} (threads {lo}-{hi}) of {self.cta.describe()}"

    def clock(self):
        return int(self.vc[self.agent])

    def release_tick(self):
        self.vc = tick(self.vc, self.agent)

