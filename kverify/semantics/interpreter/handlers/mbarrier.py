"""mbarrier instructions (§9.7.13.15): init, inval, arrive(.expect_tx)/arrive_drop,
expect_tx/complete_tx, test_wait/try_wait, fed to the mbarrier protocol.

Memory semantics (.sem): an arrive is ``.release`` unless ``.relaxed`` (§9.7.13.15.16:
``.relaxed`` gives no ordering of the arriving thread's prior accesses), so only a releasing
arrive adds its clock to the phase's release clock; ``mbarrier.complete_tx`` is ``.relaxed``
only (``…-mbarrier-complete-tx``) and releases nothing; a test_wait/try_wait is ``.acquire`` unless
``.relaxed`` (§9.7.13.15.17), so only an acquiring wait that returns True joins the completed
phase's release clock. The protocol state (counts, phases, observation) and the clock that
orders phases for schedule robustness take every operation, whatever its semantics.
"""
from __future__ import annotations

import numpy as np

from kverify.semantics.ir.nodes import Reg, Sink, where as _fmt_loc
from kverify.semantics.memory_model.protocols import mbarrier as MB

from ..async_ops import ArriveOnCopies, CopyOp
from ..hb import hb_after, join
from ..memory import CTA_SHIFT, SHARED_WINDOW
from ..state import U64, Wait, on_change
from .common import registry, replicas, space_of, yield_once

HANDLERS, handler = registry()


# --------------------------------------------------------------------------- mbarrier


def _lane_addrs(m, w, a, mask):
    v = m.addr_values(w, a)
    return v


@handler("mbarrier.init")
def h_mbar_init(m, w, ins, mask):
    space = space_of(ins)
    addrs = m.addr_values(w, ins.operands[0])
    count = np.broadcast_to(np.asarray(m.val(w, ins.operands[1], 32), U64), (32,))
    # lanes of this execution that run the same init (same barrier, same count): undefined by
    # the ISA's letter after the first (init of a valid mbarrier), one initialization on current
    # hardware; a warning, and the interpreter performs it once (the first lane's)
    mask, shared = replicas(mask, lambda lane: (int(addrs[lane]), int(count[lane])))
    for lanes in shared:
        c = int(count[lanes[0]])
        _, info = m.mbar_at(w, space, int(addrs[lanes[0]]), ins)
        m.report(MB.INIT_REPLICATED.id, f"mbarrier.init of {info.name} with count {c} executed by {len(lanes)} "
                 f"lanes of warp {w.index} of {w.cta.describe()} (lanes {lanes[0]}..{lanes[-1]}) in one "
                 f"instruction: all but the first initialize a valid mbarrier; performed once "
                 f"({MB.INIT_REPLICATED.section})", [ins.loc], mbarrier=info.name, count=c, lanes=len(lanes))
    for lane in np.flatnonzero(mask):
        cta, info = m.mbar_at(w, space, int(addrs[lane]), ins)
        who = m._thread(w, lane)
        used = join(info.phase_vc, max(info.done_vc.items())[1]) if info.done_vc else info.phase_vc
        if not hb_after(w.vc, used):
            m.depend(f"{_fmt_loc(ins.loc)}: mbarrier.init of {info.name} is not ordered after every earlier use")
        out = m.mbar_step(info, MB.Init(int(count[lane])), ins, who)
        if out.violation is None:
            info.lifetime += 1
            info.observers, info.pending_waits, info.pending_expect = {}, {}, {}
            info.init = (w.agent, w.clock(), m.loc_id(ins.loc), True)
            info.init_loc = ins.loc
            info.phase_vc = info.release_vc = np.zeros(0, np.int64)
            info.done_vc, info.done_release = {}, {}
    # the init is a generic-proxy write of the barrier object
    region, offs = m.resolve(w, space, addrs, mask, 8)
    m.access(w, ins, region, offs, 8, mask, "write")
    return yield_once()


@handler("mbarrier.inval")
def h_mbar_inval(m, w, ins, mask):
    space = space_of(ins)
    addrs = m.addr_values(w, ins.operands[0])
    for lane in np.flatnonzero(mask):
        cta, info = m.mbar_at(w, space, int(addrs[lane]), ins)
        m.mbar_step(info, MB.Inval(), ins, m._thread(w, lane))
    return yield_once()


def _remote(m, w, space, addr):
    if space == "shared::cluster":
        r = addr >> CTA_SHIFT
        return r != 0 and r - 1 != w.cta.rank
    if space is None and addr >= SHARED_WINDOW:
        r = (addr - SHARED_WINDOW) >> CTA_SHIFT
        return r != 0 and r - 1 != w.cta.rank
    return False


@handler("mbarrier.arrive", "mbarrier.arrive_drop")
def h_mbar_arrive(m, w, ins, mask):
    space = space_of(ins)
    ops = ins.operands
    addrs = m.addr_values(w, ops[1])
    mods = set(ins.mods)
    extra = np.broadcast_to(np.asarray(m.val(w, ops[2], 32), U64), (32,)) if len(ops) > 2 else None
    drop = ins.row.sync == "mbarrier.arrive_drop"
    point = w.lane_order.point() if "relaxed" not in mods else 0  # the lanes' release point
    for lane in np.flatnonzero(mask):
        addr = int(addrs[lane])
        cta, info = m.mbar_at(w, space, addr, ins)
        remote = _remote(m, w, space, addr)
        who = m._thread(w, lane)
        m.mbar_check_init(info, w, w.vc, ins, who)
        if remote:
            m.mbar_check_remote_init(info, ins, who)
        if "expect_tx" in mods:
            cmd = MB.Arrive(count=1, expect_tx=int(extra[lane]), no_complete="noComplete" in mods,
                            drop=drop, remote=remote)
        else:
            cmd = MB.Arrive(count=int(extra[lane]) if extra is not None else 1,
                            no_complete="noComplete" in mods, drop=drop, remote=remote)
        m.mbar_order(info, "arrive", w.agent, w.vc, ins)
        info.phase_vc = join(info.phase_vc, w.vc)
        if "relaxed" not in mods:
            info.release_vc = join(info.release_vc, w.vc)
            if m.trace is not None:
                m.trace.release(("mbar", id(info), info.lifetime, info.state.phase), w, ins, info.name,
                                info.state.phase)
            info.lane_points.setdefault(w, np.zeros(32, np.int64))[lane] = point
        info.arrive_locs[ins.loc] = True
        info.arrivers.add(w)
        if "expect_tx" in mods:
            info.expect_loc = ins.loc
        out = m.mbar_step(info, cmd, ins, who)
        if out.violation is None and isinstance(ops[0], Reg):
            st = np.asarray(m.reg(w, ops[0].name)).copy()
            st[lane] = U64(out.value or 0)
            w.regs[ops[0].name] = st
    w.release_tick()
    return yield_once()


@handler("mbarrier.expect_tx", "mbarrier.complete_tx")
def h_mbar_tx(m, w, ins, mask):
    space = space_of(ins)
    addrs = m.addr_values(w, ins.operands[0])
    tx = np.broadcast_to(np.asarray(m.val(w, ins.operands[1], 32), U64), (32,))
    expect = ins.row.sync == "mbarrier.expect_tx"
    for lane in np.flatnonzero(mask):
        cta, info = m.mbar_at(w, space, int(addrs[lane]), ins)
        who = m._thread(w, lane)
        m.mbar_check_init(info, w, w.vc, ins, who)
        cmd = MB.ExpectTx(int(tx[lane])) if expect else MB.CompleteTx(int(tx[lane]))
        m.mbar_order(info, "expect" if expect else "complete-tx", w.agent, w.vc, ins)
        if expect:
            info.expect_loc = ins.loc
        else:
            info.phase_vc = join(info.phase_vc, w.vc)
        m.mbar_step(info, cmd, ins, who)
    return yield_once()


@handler("mbarrier.test_wait", "mbarrier.try_wait")
def h_mbar_wait(m, w, ins, mask):
    return _mbar_wait(m, w, ins, mask)


def _mbar_wait(m, w, ins, mask):
    space = space_of(ins)
    ops = ins.operands
    parity_form = "parity" in ins.mods
    acquire = "relaxed" not in ins.mods
    addrs = m.addr_values(w, ops[1])
    arg = np.broadcast_to(np.asarray(m.val(w, ops[2], 64), U64), (32,))
    lanes = np.flatnonzero(mask)
    issue_vc = w.vc  # the wait's own clock (a wait does not tick; joins make new arrays)
    targets = []
    for lane in lanes:
        addr = int(addrs[lane])
        cta, info = m.mbar_at(w, space, addr, ins)
        remote = _remote(m, w, space, addr)
        targets.append((lane, info, int(arg[lane]), remote))
    # one logical wait per (warp, barrier): lanes of a warp wait together
    seen = {}
    for lane, info, a, remote in targets:
        seen.setdefault(info.key, (lane, info, a, remote))
    plans = []
    for lane, info, a, remote in seen.values():
        who = m._thread(w, lane)
        m.mbar_check_init(info, w, w.vc, ins, who)
        if not info.state.initialized:  # the protocol reports the wait
            m.mbar_step(info, MB.TestWait(parity=a & 1) if parity_form else MB.TestWait(state_phase=a), ins, who)
            plans.append(None)
            continue
        if parity_form:
            q = a & 1
            named, v = MB.waited_phase(info.state, q, w.mbar_next.get(info.waiter_key))
            if v is not None:
                m.report(v.rule, f"{who} on mbarrier {info.name} {v.message}", [ins.loc], mbarrier=info.name,
                         phase=v.detail("phase"))
            plans.append((info, q, named, who))
        else:
            plans.append((info, None, a, who))

    def ready_of(plan):
        info, q, named, who = plan
        if q is None:
            return info.state.phase > named
        return info.state.phase % 2 != q

    def test(plan):
        info, q, named, who = plan
        if q is not None:
            cmd = MB.TestWait(parity=q, waiter_phase=named) if named is not None and named >= 0 else MB.TestWait(parity=q)
        else:
            cmd = MB.TestWait(state_phase=named)
        out = m.mbar_step(info, cmd, ins, who)
        if out.violation is not None:
            return True  # reported; treat as returning (hardware returns on parity)
        ok = bool(out.value)
        if ok:
            ph = named if named is not None else (info.state.phase - 1)
            if q is not None and named is None:
                ph = info.state.phase - 1
            w.mbar_next[info.waiter_key] = ph + 1
            m.mbar_observed(info, ph, w.agent, issue_vc, ins)
            if acquire:
                m.acquire(w, info.done_release.get(ph, np.zeros(0, np.int64)), ins, info.name, ph,
                          key=("mbar", id(info), info.lifetime, ph))
                pts = info.done_lane_points.get(ph, {}).get(w)
                if pts is not None:  # lanes of this warp that arrived: ordered before the waiting lanes
                    w.lane_order.acquire(pts, lanes)
        return ok

    plans = [p for p in plans if p is not None]
    if ins.blocking:
        if plans and not all(ready_of(p) for p in plans):
            ready = lambda: all(ready_of(p) for p in plans)  # noqa: E731
            wt = Wait("mbarrier", on_change(plans[0][0], ready) if len(plans) == 1 else ready,
                      lambda: "; ".join(_mbar_describe(p) for p in plans), ins)
            wt.mbars = [p[0] for p in plans]
            yield wt
        for p in plans:
            test(p)
        if ops and not isinstance(ops[0], Sink):
            m.write(w, ops[0], np.ones(32, bool), mask)
        return
    m.depend(f"{_fmt_loc(ins.loc)}: a non-blocking {ins.op} whose result the schedule decides")
    results = [test(p) for p in plans]
    ok = all(results)
    if not isinstance(ops[0], Sink):
        m.write(w, ops[0], np.full(32, ok), mask)
    if not ok:
        versions = [p[0].version for p in plans]
        wt = Wait("mbarrier-poll", lambda: any(p[0].version != v for p, v in zip(plans, versions)),
                  lambda: "; ".join(_mbar_describe(p) for p in plans), ins)
        wt.mbars = [p[0] for p in plans]
        yield wt
    else:
        yield None


def _mbar_describe(plan):
    info, q, named, who = plan
    what = f"phase {named}" if named is not None else f"parity {q}"
    return f"waits in mbarrier wait for {what} of {info.name} ({MB.waiting_for(info.state)})"


@handler("cp.async.mbarrier.arrive")
def h_cp_async_mbar_arrive(m, w, ins, mask):
    """``cp.async.mbarrier.arrive{.noinc}`` (§9.7.9.25.3.3): for each executing lane, an arrive-on
    the mbarrier at ``[a]`` that happens once every cp.async the lane issued before it completed,
    and releases what they wrote. Without ``.noinc`` the barrier's pending count rises by one at
    issue, so the phase's count is unchanged (``MB.CpAsyncArriveIssue``); with it the arrive counts
    against the init count."""
    space = space_of(ins) or "shared::cta"
    addrs = m.addr_values(w, ins.operands[0])
    noinc = "noinc" in ins.mods
    for lane in np.flatnonzero(mask):
        key = m.mbar_at(w, space, int(addrs[lane]), ins)
        info = key[1]
        who = m._thread(w, lane)
        m.mbar_check_init(info, w, w.vc, ins, who)
        out = m.mbar_step(info, MB.CpAsyncArriveIssue(noinc), ins, who)
        if out.violation is not None:
            continue
        copies = [op for op in m.inflight if isinstance(op, CopyOp) and op.group is w.cp_async  # this warp's cp.async
                  and op.lanes[lane]]
        agent = m.new_agent(f"the arrive-on of cp.async.mbarrier.arrive by {who} at {_fmt_loc(ins.loc)}")
        m.inflight.append(ArriveOnCopies(m, w, ins, agent, key, copies, lane))
    w.release_tick()
    return yield_once()
