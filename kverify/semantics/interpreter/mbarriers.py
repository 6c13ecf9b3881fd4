"""The interpreter's side of mbarrier objects: ``MbarInfo`` (one object's protocol state
plus its happens-before bookkeeping) and the ``Machine`` methods that locate an mbarrier,
feed it commands and check that one run's matching of its phases stands for every schedule.
PTX ISA §9.7.13.15.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from kverify.semantics.ir.errors import Unsupported
from kverify.semantics.ir.nodes import where as _fmt_loc
from kverify.semantics.memory_model.protocols import mbarrier as MB

from .hb import hb_after, join, vget
from .memory import Region

class MbarInfo:
    """Interpreter-side companion of one mbarrier object: protocol state plus ordering."""

    def __init__(self, key, name):
        self.key, self.name = key, name
        self.state = MB.MbarrierState()
        self.phase_vc = np.zeros(0, np.int64)
        self.done_vc: dict[int, np.ndarray] = {}
        self.init = None  # (agent, clock, loc id, fence required)
        self.version = 0
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


class MbarrierMixin:
    """mbarrier bookkeeping of the ``Machine``."""

    def mbar_at(self, w, space, addr_value, ins):
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
        out = MB.step(info.state, cmd)
        if out.violation is not None:
            v = out.violation
            kind = dict(v.details).get("kind")
            locs = [ins.loc]
            rule, msg = v.rule, v.message
            if kind == "unobserved-phase":
                # the arrival lands in the next phase: more arrivals per phase than the count
                rule = "mbarrier.arrival-overflow"
                msg = (f"{v.message}: the arrival counts toward phase {info.state.phase}, so phase "
                       f"{info.state.phase - 1} received more arrivals than its expected count "
                       f"{info.state.expected} before anyone observed it")
                if info.init is not None:
                    locs.append(self.locs[info.init[2]])
            self.report(rule, f"{msg} on mbarrier {info.name} by {who} ({v.section})", locs,
                        mbarrier=info.name)
            if kind == "unobserved-phase":
                # continue as the hardware does: the arrival counts toward the current phase
                out2 = MB.step(replace(info.state, observed_prev=True), cmd)
                if out2.violation is None:
                    info.state = out2.state
                    info.version += 1
                    for e in out2.effects:
                        if e[0] == "phase-completed":
                            self.phase_completed(info, e[1])
                    return out2
            return out
        info.state = out.state
        info.version += 1
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
    # checked the same way in ops.py. A data race, an atomic, a non-blocking test whose
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

    def mbar_check_init(self, info, agent, vc, ins, who):
        if info.init is None:
            return
        ia, ic, iloc, _ = info.init
        if agent != ia and vget(vc, np.array([ia]))[0] < ic:
            self.report("mbarrier.init-visibility",
                        f"{who} uses mbarrier {info.name} with no happens-before edge from its mbarrier.init "
                        f"(a barrier / fence.mbarrier_init must make the init visible first; §9.7.13.15.3)",
                        [ins.loc, self.locs[iloc]], mbarrier=info.name)

    def _tx_at_deadlock(self, info):
        s = info.state
        if s.initialized and s.tx != 0 and not any((getattr(o, "mbar", None) or (None, None))[1] is info for o in self.inflight):
            how = ("more bytes completed than expected" if s.tx < 0 else "expected bytes never arrive")
            self.report("mbarrier.tx-mismatch",
                        f"mbarrier {info.name} is stuck in phase {s.phase} with tx-count {s.tx}: {how} (the "
                        f"expect-tx bytes do not match the copies that signal it; §9.7.13.15.5)",
                        [l for l in (info.expect_loc, info.copy_loc) if l is not None], mbarrier=info.name,
                        tx=s.tx)

    def phase_completed(self, info, phase):
        """A phase completed: copies still in flight that signal this barrier were counted
        into it by expect-tx but have not landed (tx mismatch)."""
        info.done_vc[phase] = info.phase_vc
        info.phase_vc = np.zeros(0, np.int64)
        info.completed += 1
        self._mbar_order_completed(info, phase)
        pending = [o for o in self.inflight if (getattr(o, "mbar", None) or (None, None))[1] is info and not o.done]
        if pending:
            self.report("mbarrier.tx-mismatch",
                        f"phase {phase} of mbarrier {info.name} completed while {len(pending)} copy(ies) signalling "
                        f"it were still in flight ({sum(o.nbytes for o in pending)} bytes): expect-tx announced "
                        f"fewer bytes than the copies deliver (§9.7.13.15.5)",
                        [l for l in (info.expect_loc, pending[0].instr.loc) if l is not None], mbarrier=info.name)

    def mbar_complete_tx(self, op, key, nbytes):
        cta, info = key
        if not info.state.initialized:
            self.report("mbarrier.uninitialized", f"complete-tx of {op.kind} on uninitialized mbarrier {info.name}",
                        [op.instr.loc], mbarrier=info.name)
            return
        self.mbar_check_init(info, op.agent, op.vc, op.instr, f"the {op.kind} issued at {_fmt_loc(op.instr.loc)}")
        self.mbar_order(info, "complete-tx", op.agent, op.vc, op.instr)
        if nbytes <= 0:
            self.depend(f"{_fmt_loc(op.instr.loc)}: a copy of {nbytes} bytes signals mbarrier {info.name}")
        info.copy_loc = op.instr.loc
        info.arrivers.add(op.warp)
        info.phase_vc = join(info.phase_vc, op.vc)
        out = MB.step(info.state, MB.CompleteTx(nbytes))
        if out.violation is not None:
            v = out.violation
            self.report(v.rule, f"{v.message} on mbarrier {info.name} ({v.section})", [op.instr.loc],
                        mbarrier=info.name)
            return
        info.state = out.state
        info.version += 1
        for e in out.effects:
            if e[0] == "phase-completed":
                self.phase_completed(info, e[1])

