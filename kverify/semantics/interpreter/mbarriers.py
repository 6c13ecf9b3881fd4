"""The interpreter's side of mbarrier objects: ``MbarInfo`` (one object's protocol state
plus its happens-before bookkeeping) and the ``Machine`` methods that locate an mbarrier,
feed it commands and check that one run's matching of its phases stands for every schedule.
PTX ISA §9.7.13.15.
"""
from __future__ import annotations

import bisect


import numpy as np

from kverify.semantics.ir.errors import Unsupported
from kverify.semantics.ir.nodes import where as _fmt_loc
from kverify.semantics.memory_model.protocols import mbarrier as MB

from .hb import hb_after, join, vget
from .memory import Region
from .state import SyncObject

#: completed phases of an mbarrier whose clocks are kept (``phase_completed``)
KEEP_PHASES = 8


class MbarInfo(SyncObject):
    """Interpreter-side companion of one mbarrier object: protocol state plus ordering."""

    def __init__(self, key, name):
        super().__init__(MB.PROTOCOL, MB.MbarrierState(), f"mbarrier {name}")
        self.key, self.name = key, name
        self.lifetime = 0  # successful mbarrier.inits so far: each starts a new lifetime at phase 0
        self.init_loc = None  # the mbarrier.init of the current lifetime
        # clocks of the current phase's operations: all of them (``phase_vc``, which orders
        # phases for schedule robustness) and the releasing ones (``release_vc``: .release
        # arrives and copy completions, what an acquiring wait on the phase makes visible)
        self.phase_vc = np.zeros(0, np.int64)
        self.release_vc = np.zeros(0, np.int64)
        self.done_vc: dict[int, np.ndarray] = {}
        self.done_release: dict[int, np.ndarray] = {}
        # lanes' releasing arrives of the current phase, per warp: its LaneOrder point of each
        # lane's arrive (0: none) -- what a lane of the same warp acquires with the phase
        self.lane_points: dict = {}
        self.done_lane_points: dict[int, dict] = {}
        self.init = None  # (agent, clock, loc id, fence required)
        self.arrive_locs: dict = {}  # arrive-on instructions seen (ordered set)
        self.arrivers: set = set()  # warps that arrived (or issued copies signalling it)
        self.expect_loc = None  # last arrive.expect_tx / expect_tx
        self.copy_loc = None  # last copy signalling complete-tx
        # schedule robustness (Machine.mbar_order): per phase, the waits that observed it
        # (agent, clock), the waits and standalone expect-tx still to be ordered before an
        # arrival of that phase (agent, clock, loc)
        self.completed = 0  # phases completed over the barrier's lifetime (all its inits)
        self.observers: dict[int, list] = {}
        self.pending_waits: dict[int, list] = {}
        self.pending_expect: dict[int, list] = {}

    @property
    def waiter_key(self):
        """Key of a waiter's own record of this barrier (the phase after the last one it
        observed): per lifetime, since mbarrier.inval and a new mbarrier.init restart the
        phase at 0 and nothing a waiter observed before carries over (§9.7.13.15.3)."""
        return self.key, self.lifetime

    def related_locs(self, finding) -> tuple:
        # an arrival past an unobserved phase: the init names the expected count
        if finding.detail("kind") == "unobserved-phase" and self.init_loc is not None:
            return (self.init_loc,)
        return ()


class MbarrierMixin:
    """mbarrier bookkeeping of the ``Machine``."""

    def mbar_at(self, w, space, addr_value, ins):
        """(CTA, ``MbarInfo``) of the mbarrier at ``addr_value`` in ``space`` as ``w`` names it.
        The answer depends only on ``w``'s CTA, the space and the address (shared layouts are
        fixed and an ``MbarInfo`` lives as long as the launch), so it is remembered; a remote
        barrier still records the access to the other CTA's shared memory, as ``resolve`` does."""
        key = (space, addr_value)
        hit = w.cta.mbar_names.get(key)
        if hit is not None:
            if hit[0] is not w.cta:
                self.remote_smem(w, hit[0], w.agent, w.clock(), w.last_loc, w.describe())
        else:
            hit = w.cta.mbar_names[key] = self._mbar_lookup(w, space, addr_value, ins)
        if self.fp is not None:
            self.fp.sync.add((hit[1].title, None))
        return hit

    def _mbar_lookup(self, w, space, addr_value, ins):
        addrs = np.array([addr_value], np.int64)
        region, offs = self.resolve(w, space, addrs, np.array([True]), 8)
        if not isinstance(region, Region) or region.space != "shared":
            raise Unsupported("mbarrier outside shared memory", ins)
        cta = next(c for c in [w.cta] + list(w.cta.cluster_ctas) if c.smem is region)
        off = int(offs[0])
        info = cta.mbars.get(off)
        if info is None:
            info = cta.mbars[off] = MbarInfo((cta.rank, off), f"{region.owner(off)} of {cta.describe()}")
        return cta, info

    def mbar_step(self, info, cmd, ins, who):
        """Step the mbarrier through the choke point; a completed phase settles its clocks."""
        out = self.step(info, cmd, ins, who, mbarrier=info.name)
        if out.violation is None:
            for e in out.effects:
                if e[0] == "phase-completed":
                    self.phase_completed(info, e[1])
        return out

    # Schedule robustness. One run stands for every schedule of the launch when the order in
    # which synchronization operations meet is fixed by happens-before, so that no schedule
    # can match them differently: every operation on an mbarrier phase k is ordered after all
    # operations of phase k-1; every wait that observes phase k is ordered after phase k-1
    # completed and before some arrival of phase k+1 (it cannot see an older or a newer
    # phase of the same parity); every arrival of phase k+1 is ordered after some wait that
    # observed phase k; a standalone expect-tx is ordered before an arrival of its phase (the
    # phase cannot complete without it). Named-barrier and cluster-barrier instances are
    # checked the same way in handlers/barriers.py. A data race, an atomic, a non-blocking test whose
    # result steers control flow, or a race-shadow record that had to be dropped also leaves
    # the question open. ``depend`` records each reason.
    def mbar_order(self, info, kind, agent, vc, ins):
        """Robustness of one ``kind`` (arrive | expect | complete) operation on the current
        phase of ``info`` by ``agent`` with clock ``vc``."""
        k = info.state.phase
        where = _fmt_loc(ins.loc) if ins is not None else "?"
        prev = info.done_vc.get(k - 1) if k >= 1 else None
        if prev is not None and not hb_after(vc, prev):
            self.depend(f"{where}: {kind} on mbarrier {info.name} in phase {k} is not ordered after every "
                        f"operation of phase {k - 1}; in another schedule it may count toward phase {k - 1}")
        if kind == "arrive":
            for pend in (info.pending_waits, info.pending_expect):
                left = [e for e in pend.get(k, ()) if vget(vc, np.array([e[0]]))[0] < e[1]]
                if left:
                    pend[k] = left
                else:
                    pend.pop(k, None)
            obs = info.observers.get(k - 1)
            if k >= 1 and obs and not any(vget(vc, np.array([a]))[0] >= c for a, c in obs):
                self.depend(f"{where}: arrival on mbarrier {info.name} in phase {k} is not ordered after any "
                            f"wait that observed phase {k - 1}")
        elif kind == "expect":
            info.pending_expect.setdefault(k, []).append((agent, int(vget(vc, np.array([agent]))[0]), where))

    def mbar_observed(self, info, phase, agent, vc, ins):
        """A wait by ``agent`` issued with clock ``vc`` observed ``phase`` complete."""
        where = _fmt_loc(ins.loc)
        prev = info.done_vc.get(phase - 1) if phase >= 1 else None
        if phase >= 1 and (prev is None or not hb_after(vc, prev)):
            self.depend(f"{where}: the wait for phase {phase} of mbarrier {info.name} is not ordered after "
                        f"phase {phase - 1} completed; in another schedule it may see that phase's parity")
        clk = int(vget(vc, np.array([agent]))[0])
        info.observers.setdefault(phase, []).append((agent, clk))
        info.observers.pop(phase - 2, None)
        if phase + 1 in info.done_vc:
            self.depend(f"{where}: the wait for phase {phase} of mbarrier {info.name} ran after phase "
                        f"{phase + 1} completed")
        else:
            info.pending_waits.setdefault(phase + 1, []).append((agent, clk, where))

    def _mbar_order_completed(self, info, phase):
        for where in (w for _, _, w in info.pending_waits.pop(phase, ())):
            self.depend(f"{where}: the wait for phase {phase - 1} of mbarrier {info.name} is not ordered before "
                        f"the arrivals of phase {phase}; in another schedule it may see phase {phase} complete")
        for where in (w for _, _, w in info.pending_expect.pop(phase, ())):
            self.depend(f"{where}: expect-tx on mbarrier {info.name} in phase {phase} is not ordered before an "
                        f"arrival of that phase; in another schedule the phase may complete without it")

    @staticmethod
    def _init_reaches(w, vc, agent, clock) -> bool:
        """Whether point ``clock`` of ``agent`` (an init, or the fence after it) is visible to a use
        by warp ``w`` issued with clock ``vc``: ordered by happens-before, or by the init-only
        clock ``w`` acquired before that use (fence.mbarrier_init then a cluster barrier, relaxed
        or not; ``mbar_inits_seen``)."""
        own = int(vget(vc, np.array([w.agent]))[0])
        return (vget(vc, np.array([agent]))[0] >= clock
                or any(c < own and vget(inits, np.array([agent]))[0] >= clock for c, inits in w.mbar_inits_seen))

    def mbar_check_init(self, info, w, vc, ins, who):
        """Ask the protocol whether ``info``'s init is visible to a use by warp ``w`` issued with
        clock ``vc`` (``_init_reaches``)."""
        if info.init is None:
            return
        ia, ic, iloc, _ = info.init
        v = MB.init_visibility(w.agent == ia or self._init_reaches(w, vc, ia, ic), who)
        if v is not None:
            self.report(v.rule, f"{v.message} (mbarrier {info.name})", [ins.loc, self.locs[iloc]],
                        mbarrier=info.name)

    def mbar_check_init_fenced(self, info, op, who):
        """A copy's complete-tx: ask the protocol whether the initializing thread fenced the init
        (its first fence after the init reaches the copy's issue: ``_init_reaches``, which covers
        CUTLASS's fence.mbarrier_init + relaxed barrier.cluster sequence)."""
        if info.init is None:
            return
        ia, ic, iloc, _ = info.init
        fences = self.init_fences.get(ia, ())
        i = bisect.bisect_left(fences, ic)
        fenced = i < len(fences) and self._init_reaches(op.warp, op.vc, ia, fences[i])
        v = MB.init_fenced(fenced, who)
        if v is not None:
            self.report(v.rule, f"{v.message} (mbarrier {info.name})", [op.instr.loc, self.locs[iloc]],
                        mbarrier=info.name)

    def mbar_check_remote_init(self, info, ins, who):
        """A remote arrive: ask the protocol whether the init was fenced for the cluster."""
        if info.init is None or not info.state.initialized:
            return
        ia, ic, iloc, _ = info.init
        v = MB.remote_init_visibility(vget(self.mbar_fence_clk, np.array([ia]))[0] >= ic, who)
        if v is not None:
            self.report(v.rule, f"{v.message} (mbarrier {info.name})", [ins.loc, self.locs[iloc]])

    def mbar_quiescent(self, info):
        """Every warp is blocked: ask the protocol about a barrier stuck with tx-count != 0."""
        in_flight = any((getattr(o, "mbar", None) or (None, None))[1] is info for o in self.inflight)
        v = MB.quiescent(info.state, in_flight)
        if v is not None:
            self.report(v.rule, f"mbarrier {info.name} is {v.message}",
                        [l for l in (info.expect_loc, info.copy_loc) if l is not None], mbarrier=info.name,
                        tx=info.state.tx)

    def phase_completed(self, info, phase):
        """A phase completed: copies still in flight that signal this barrier were counted
        into it by expect-tx but have not landed (tx mismatch)."""
        info.done_vc[phase], info.done_release[phase] = info.phase_vc, info.release_vc
        info.phase_vc = info.release_vc = np.zeros(0, np.int64)
        info.done_lane_points[phase], info.lane_points = info.lane_points, {}
        for done in (info.done_vc, info.done_release, info.done_lane_points):
            # a wait observes one of the last two phases: older clocks (as long as the run's agents)
            # only made a long pipeline's memory quadratic; a wait that still named one would
            # acquire nothing (more races reported, none missed)
            done.pop(phase - KEEP_PHASES, None)
        info.completed += 1
        self._mbar_order_completed(info, phase)
        if self.events is not None:
            self.events.append((self.turns, None, None, "phase", f"{info.name.split(' of CTA')[0]} phase {phase}", None))
        pending = [o for o in self.inflight if (getattr(o, "mbar", None) or (None, None))[1] is info and not o.done]
        v = MB.completed_in_flight(phase, len(pending), sum(o.nbytes for o in pending))
        if v is not None:
            self.report(v.rule, f"mbarrier {info.name}: {v.message}",
                        [l for l in (info.expect_loc, pending[0].instr.loc) if l is not None], mbarrier=info.name)

    def mbar_arrive_on_copies(self, op):
        """The arrive-on of ``cp.async.mbarrier.arrive`` (``async_ops.ArriveOnCopies``), now that
        the lane's earlier cp.async completed: one arrival, releasing their writes (its clock)."""
        cta, info = op.key
        who = f"the arrive-on of {op.instr.opcode} at {_fmt_loc(op.instr.loc)} (lane {op.lane} of {op.warp.describe()})"
        self._op_releases(info, op, "arrive", "arrive")
        info.arrive_locs[op.instr.loc] = True
        self.mbar_step(info, MB.Arrive(count=1), op.instr, who)

    def _op_releases(self, info, op, order_kind, trace_kind):
        """An asynchronous operation's completion releases into the barrier's current phase
        (complete-tx of a copy, the arrive-on of cp.async.mbarrier.arrive)."""
        self.mbar_order(info, order_kind, op.agent, op.vc, op.instr)
        info.arrivers.add(op.warp)
        info.phase_vc = join(info.phase_vc, op.vc)
        info.release_vc = join(info.release_vc, op.vc)
        if self.trace is not None:
            self.trace.release_op(("mbar", id(info), info.lifetime, info.state.phase), op, trace_kind, info.name,
                                  info.state.phase)

    def mbar_complete_tx(self, op, key, nbytes):
        """A copy signalling the barrier completed: complete-tx of its bytes."""
        cta, info = key
        who = f"the {op.kind} issued at {_fmt_loc(op.instr.loc)}"
        if not info.state.initialized:
            self.mbar_step(info, MB.CompleteTx(nbytes), op.instr, who)  # the protocol reports it
            return
        self.mbar_check_init(info, op.warp, op.vc, op.instr, who)
        self.mbar_check_init_fenced(info, op, who)
        self._op_releases(info, op, "complete-tx", "complete_tx")
        if nbytes <= 0:
            self.depend(f"{_fmt_loc(op.instr.loc)}: a copy of {nbytes} bytes signals mbarrier {info.name}")
        info.copy_loc = op.instr.loc
        self.mbar_step(info, MB.CompleteTx(nbytes), op.instr, who)
