"""Every memory access of a run against the happens-before shadow (``hb``): race checks
and records of plain, strong and atomic accesses (§8 memory model: release clocks left by
strong writes, acquired by strong reads and acquiring fences), uninitialized reads, the
registers of an in-flight wgmma, and how a race is described. Mixed into ``Machine``."""
from __future__ import annotations

import numpy as np

from kverify.semantics.ir.nodes import Sink, operand_regs
from kverify.semantics.ir.optable import non_coherent
from kverify.semantics.ir.nodes import where as _fmt_loc
from kverify.semantics.memory_model.execution import (RACE_ASYNC_PENDING, RACE_GLOBAL, RACE_GLOBAL_NON_COHERENT,
                                                     RACE_GLOBAL_SAME_VALUE,
                                                     RACE_SHARED, RACE_SHARED_SAME_VALUE, UNINITIALIZED)
from kverify.semantics.memory_model.protocols import async_groups as AG

from . import dependent
from .hb import ACQUIRING, GENERIC, RELEASING, join, strength, vget
from .memory import Region, proxy_space


def _atomic_result_used(m, ins) -> bool:
    """An ``atom`` (a memory row defining a result from an updated location) whose result is
    read afterwards: its value says which agent was first."""
    row = ins.row
    if not (row.effect == "memory" and row.operands and row.operands[0].access == "def"
            and any(o.access == "update" for o in row.operands)):
        return False
    if m.unread_atomics is None:
        from kverify.semantics.ir.visit import unread_atomic_results

        m.unread_atomics = unread_atomic_results(m.module, m.kernel)
    return not (isinstance(ins.operands[0], Sink) or getattr(ins.operands[0], "name", None) in m.unread_atomics)


class AccessMixin:
    """Shadow checks of ``Machine`` (its ``check``, ``fence_clks``, ``agents``, ``locs``, ``report``,
    ``depend`` and ``dropped_reader``)."""

    def strength(self, w, ins, atomic=False):
        """The memory order and scope of an access by warp ``w`` (``hb.strength``)."""
        cl = w.cta.cluster_ctas
        return strength(ins.mods, w.cta.ctaid, cl[0].ctaid if cl else w.cta.ctaid, atomic)

    def access(self, w, ins, region, offs, nbytes, m, kind, proxy=GENERIC, agent=None, vc=None, strong=None,
               new=None):
        """Race-check and record an access of ``region`` (``strong``: its ``hb.Strength``, for
        a strong ld/st); a strong write with a release pattern leaves its release clock, a
        strong read acquires the release clocks it observes (at once when it acquires, else at
        the warp's next acquiring fence)."""
        if kind != "read":
            self.changes += 1
        if not self.check or not isinstance(region, Region) or region.shadow is None:
            return
        lanes = np.flatnonzero(m)
        idx = (offs[lanes][:, None] + np.arange(nbytes)[None, :]).reshape(-1)
        if strong is not None and self.fp is not None:
            self.touch_memory(region, idx, kind != "read")
        lane_of = np.repeat(lanes, nbytes)
        agent = w.agent if agent is None else agent
        vc = w.vc if vc is None else vc
        sh = region.shadow
        order = w.lane_order if agent == w.agent else None
        if region is self.gmem and (self.footprint is not None or self.pdl_prior is not None):
            self._grid_footprint(w, ins, region, idx, lane_of, kind)
        if kind == "read":
            conf = sh.check_read(idx, agent, vc, self.fence_clks[proxy_space(region)], lane_of, proxy, order, strong)
            if region is self.gmem and non_coherent(ins):
                self._non_coherent(w, ins, region, sh, idx, lane_of)
            if sh.uninit is not None and sh.uninit[idx].any():
                i = int(np.flatnonzero(sh.uninit[idx])[0])
                self.report(UNINITIALIZED.id, f"read of uninitialized {region.space} memory "
                            f"{region.owner(int(idx[i]))} by {self._thread(w, lane_of[i])}", [ins.loc],
                            address=int(idx[i]))
        else:
            conf = sh.check_write(idx, agent, vc, self.fence_clks[proxy_space(region)], lane_of, proxy, order=order,
                                  strong=strong)
        for c in conf:
            if new is not None and c.kind.startswith("write-after-write") and c.rule in (RACE_SHARED.id,
                                                                                        RACE_GLOBAL.id):
                _same_value(c, region, offs, nbytes, new)
            self._race(w, ins, region, c, kind)
        loc = self.loc_id(ins.loc)
        if self.trace is not None:
            self.trace.access(sh, idx, agent, vc, loc, ins, kind, proxy, w)
        clk = int(vget(vc, np.array([agent]))[0])
        if kind == "read":
            if sh.dense:
                col = w.index if agent == w.agent and w.cta.smem is region else None
                sh.record_read(idx, agent, clk, loc, lane_of, col, order=order, strong=strong)
            else:
                sh.record_read(idx, agent, clk, loc, lane_of.astype(np.int8), vc=vc, order=order, strong=strong)
            if strong is not None and (rel := sh.released(idx, strong)) is not None:
                self._observe_release(w, ins, sh, idx, strong, rel)
        else:
            if sh.lossy(idx):
                self.dropped_reader(f"{_fmt_loc(ins.loc)}: a write to {region.space} bytes whose earlier readers the "
                            f"race shadow could not all keep")
            rel = self._release_clock(w, strong)
            sh.record_write(idx, agent, clk, loc, lane_of.astype(np.int8), proxy, order, strong, rel)
            if strong is not None and strong.sem in RELEASING:
                w.release_tick()

    def _non_coherent(self, w, ins, region, sh, idx, lane_of):
        """An ``ld.global.nc`` / ``ldu`` of bytes this launch wrote before (by any thread, ordered or not)."""
        written = np.asarray(sh.w_agent[idx]) >= 0
        if not written.any():
            return
        i = int(np.flatnonzero(written)[0])
        wloc = self.locs[int(np.asarray(sh.w_loc[idx[i:i + 1]])[0])]
        self.report(RACE_GLOBAL_NON_COHERENT.id,
                    f"{ins.opcode} of {region.owner(int(idx[i]))} by {self._thread(w, lane_of[i])} reads bytes the "
                    f"launch wrote at {_fmt_loc(wloc) if wloc is not None else 'an earlier write'}: the non-coherent "
                    "path may return the value from before that write", [ins.loc, wloc], address=int(idx[i]),
                    space="global", object=region.owner(int(idx[i])))

    def _grid_footprint(self, w, ins, region, idx, lane_of, kind):
        """A global access of a grid checked as a PDL pair (``dependent``): recorded in the
        primary's footprint, or checked against it by a lane of the dependent grid that has not
        executed ``griddepcontrol.wait``."""
        if self.pdl_prior is not None:
            dependent.check(self, w, ins, region, idx, lane_of, kind)
        if self.footprint is not None:
            self.footprint.record(idx, ins.loc, kind != "read")

    def _observe_release(self, w, ins, sh, idx, strong, rel, releasers=None):
        """A strong read observed the release clock ``rel``: acquired at once by an acquiring
        read, else at the warp's next acquiring fence (``releasers``: the trace's releases, when
        taken before the access overwrote the bytes' record)."""
        if self.trace is not None and releasers is None:
            releasers = self.trace.strong_release(sh, idx)
        if strong.sem in ACQUIRING:
            self.acquire(w, rel, ins, "a release pattern (strong write)", releases=releasers)
        else:
            w.acq_pending = rel if w.acq_pending is None else join(w.acq_pending, rel)
            if self.trace is not None:
                self.trace.pending_strong.setdefault(w.agent, []).extend(releasers or [])

    @staticmethod
    def _release_clock(w, strong):
        """The clock a strong write releases: the warp's own for a releasing write, the one at
        its last releasing fence for a relaxed one, none for a weak write (§8.8)."""
        if strong is None:
            return None
        return w.vc.copy() if strong.sem in RELEASING else w.fence_rel

    def atomic_access(self, w, ins, region, offs, nbytes, m, op, ty):
        strong = self.strength(w, ins, atomic=True)
        """An ``atom``/``red``: race-checked against plain and async accesses, and against
        atomics whose scope does not contain its thread (morally strong atomics do not race);
        the run stands for every order of the atomics only when
        they commute and no returned value is used."""
        self.changes += 1
        lanes = np.flatnonzero(m)
        idx = (offs[lanes][:, None] + np.arange(nbytes)[None, :]).reshape(-1)
        if self.fp is not None:
            self.touch_memory(region, idx, True)
        sh = region.shadow
        if self.check and region is self.gmem and (self.footprint is not None or self.pdl_prior is not None):
            self._grid_footprint(w, ins, region, idx, np.repeat(lanes, nbytes), "atomic")
        if self.check:
            for c in sh.check_write(idx, w.agent, w.vc, self.fence_clks[proxy_space(region)],
                                    np.repeat(lanes, nbytes), atomic=True, strong=strong):
                self._race(w, ins, region, c, "atomic")
            if self.trace is not None:
                self.trace.access(sh, idx, w.agent, w.vc, self.loc_id(ins.loc), ins, "atomic", GENERIC, w)
        observed = sh.released(idx, strong)
        releasers = self.trace.strong_release(sh, idx) if self.trace is not None and observed is not None else None
        used = _atomic_result_used(self, ins)
        mixed, unordered, read, races = sh.record_atomic(idx, w.vc, self.loc_id(ins.loc), (op, ty), strong,
                                                         self._release_clock(w, strong), used, w.agent,
                                                         np.repeat(lanes, nbytes))
        if self.check:
            for c in races:
                self._race(w, ins, region, c, "atomic")
        if strong.sem in RELEASING:
            w.release_tick()
        if observed is not None:
            self._observe_release(w, ins, sh, idx, strong, observed, releasers)
        # The order of two atomics on one location is fixed by the run when one happens before
        # the other (the run's synchronization is the same in every schedule it stands for);
        # otherwise it matters unless they commute and no returned value (this one's or an
        # earlier one's) is read. An atomic whose locations no unordered atomic touches has one
        # outcome.
        if not unordered:
            return
        commutes = op in ("and", "or", "xor") or (op in ("add", "min", "max") and not ty.startswith("f"))
        if used or read or not commutes or mixed:
            why = ("its returned value is used" if used else "an earlier atomic's returned value is used" if read
                   else f"{op}.{ty} atomics do not commute bit for bit"
                   if not commutes else "different atomic operations update one location")
            self.depend(f"{_fmt_loc(ins.loc)}: {ins.op}.{op}: {why}, so the order of atomics matters")

    def _thread(self, w, lane):
        t = w.index * 32 + int(lane)
        return f"thread {t} (warp {w.index}, lane {int(lane)}) of {w.cta.describe()}"

    def _race(self, w, ins, region, c, kind):
        other = self.agents[c.other_agent] if 0 <= c.other_agent < len(self.agents) else "?"
        if c.other_lane >= 0 and other.startswith("warp "):
            wi = int(other.split()[1])
            other = f"thread {wi * 32 + c.other_lane} ({other})"
        mine = self._thread(w, c.mine_lane) if c.mine_lane >= 0 else w.describe()
        other_loc = self.locs[c.other_loc] if c.other_loc else None
        at = "" if " at " in other else f" at {_fmt_loc(other_loc)}"
        msg = (f"{c.kind}: {kind} of {region.space} {region.owner(c.byte)} by {mine} at {_fmt_loc(ins.loc)} "
               f"and an access by {other}{at}")
        if w.iters:
            msg += f" (iterations {', '.join(str(k) for _, k in w.iters)})"
        if c.ordering:  # no data race (§8.7), but the outcome depends on the schedule
            if msg not in self.strong_unordered and len(self.strong_unordered) < 8:
                self.strong_unordered.append(msg)
            self.depend(msg)
            return
        details = {"address": c.byte, "space": region.space, "object": region.owner(c.byte), "this": mine,
                   "other": other, "iterations": [k for _, k in w.iters]}
        locs = [ins.loc, other_loc]
        if c.rule == RACE_ASYNC_PENDING.id:
            op = self.ops_by_agent.get(c.other_agent)
            issuer = op.warp if op is not None else w
            kind = {"wgmma": "wgmma", "cp.async": "cp_async"}.get(op.kind if op else "", "bulk")
            l = issuer.last_group_wait.get(kind) or (w.last_group_wait.get("cp_async") if op is None else None)
            if l is not None:
                locs.append(l)
        self.report(c.rule, msg, locs, **details)

    def _check_wgmma_regs(self, w, ins):
        if ins.row.sync in AG.WGMMA_SYNC:
            return
        names = {r.name for op in ins.operands for r in operand_regs(op)}
        for agent, regs in list(w.wgmma_regs.items()):
            clash = names & regs
            if clash:
                self.report(RACE_ASYNC_PENDING.id,
                            f"registers {', '.join(sorted(clash)[:4])} of an in-flight wgmma.mma_async accessed "
                            f"by {w.describe()} before a wgmma.wait_group covering it (§9.7.15.7)",
                            [ins.loc], registers=sorted(clash))
                return


def _same_value(c, region, offs, nbytes, new):
    """A write racing an earlier write (the last one of these bytes, whose value memory still
    holds) that stores the very same bytes: the race's outcome does not depend on the order
    (``race.same-value``, a warning)."""
    lane = c.mine_lane
    if lane < 0:
        return
    o, v = int(offs[lane]), int(np.asarray(new)[lane] if np.ndim(new) else new)
    cur = region.data[o:o + nbytes]
    if len(cur) == nbytes and all((v >> (8 * i)) & 0xFF == int(cur[i]) for i in range(nbytes)):
        c.rule = (RACE_SHARED_SAME_VALUE if c.rule == RACE_SHARED.id else RACE_GLOBAL_SAME_VALUE).id
        c.kind = "same-value " + c.kind
