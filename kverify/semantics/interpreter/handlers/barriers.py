"""CTA named barriers (bar/barrier sync, arrive, red; §9.7.13.1) and the cluster barrier
(barrier.cluster.arrive/wait; §9.7.13 barrier.cluster) on top of their protocol step functions.

Cluster barrier memory semantics: ``barrier.cluster.arrive`` is ``.release`` unless
``.relaxed`` (no ordering of the arriving thread's prior accesses); ``barrier.cluster.wait`` is
``.acquire``. A ``fence.mbarrier_init.release.cluster`` is a release fence restricted to the
thread's prior mbarrier.init operations (§9.7.12.4): followed by an arrive of either
semantics, it makes those inits visible to the threads whose wait completes that phase
(release fence, morally strong arrive, acquire wait: §8 release/acquire patterns). That
ordering covers only the inits, so it travels on its own init-only clock
(``Warp.mbar_inits_seen``), never in the happens-before clock of data accesses.
"""
from __future__ import annotations

import numpy as np

from kverify.semantics.ir.errors import Unsupported
from kverify.semantics.ir.nodes import Reg, where as _fmt_loc
from kverify.semantics.ir.optable import aligned_barrier
from kverify.semantics.memory_model.protocols import cluster_barrier as CB
from kverify.semantics.memory_model.protocols import named_barrier as NB
from kverify.semantics.memory_model.execution import BARRIER_ALIGNED_SPLIT, BARRIER_DIVERGENCE

from ..hb import hb_after, join
from ..state import U64, SyncObject, Wait, on_change
from .common import registry

HANDLERS, handler = registry()


# --------------------------------------------------------------------------- named barriers


@handler("bar", "barrier")
def h_bar(m, w, ins, mask):
    """``bar{.cta}.sync/arrive/red`` (``barrier{.cta}...aligned``) and ``barrier{.cta}.sync/arrive/red{.aligned}``."""
    return _named_barrier(m, w, ins, mask, aligned_barrier(ins))


def _named_barrier(m, w, ins, mask, aligned):
    mods = set(ins.mods)
    ops = ins.operands
    kind = "red" if "red" in mods else "arrive" if "arrive" in mods else "sync"
    i = 0
    red_dst = None
    if kind == "red":
        red_dst = ops[0]
        i = 1
    bid = np.broadcast_to(np.asarray(m.val(w, ops[i], 32), U64), (32,))
    lanes = np.flatnonzero(mask)
    bar_id = int(bid[lanes[0]])
    count = None
    rest = ops[i + 1:]
    red_pred = None
    if kind == "red":
        if len(rest) == 2:
            count = int(np.broadcast_to(np.asarray(m.val(w, rest[0], 32), U64), (32,))[lanes[0]])
            red_pred = rest[1]
        else:
            red_pred = rest[0]
    elif rest:
        count = int(np.broadcast_to(np.asarray(m.val(w, rest[0], 32), U64), (32,))[lanes[0]])
    expected = w.valid & w.live
    if not aligned and (expected & ~mask).any():
        # a warp arrives once all its non-exited threads execute the barrier (§9.7.13.1): its lanes
        # may reach it from different places, which the warp-at-a-time model does not follow
        raise Unsupported(f"{ins.opcode} reached by part of a warp (lanes {lanes[0]}..{lanes[-1]} of "
                          f"{w.describe()}): a non-aligned barrier whose warp arrives from several places is "
                          "not modelled", ins)
    if aligned and (expected & ~mask).any():
        missing = np.flatnonzero(expected & ~mask)
        m.report(BARRIER_DIVERGENCE.id,
                 f"{ins.opcode} {bar_id} (aligned) reached by lanes {lanes[0]}..{lanes[-1]} of {w.describe()} but "
                 f"not by lanes {', '.join(map(str, missing[:8]))}: the condition around it differs between the "
                 f"threads of the warp (§9.7.13.1)", [ins.loc], barrier=bar_id)
    return _bar_gen(m, w, ins, mask, kind, bar_id, count, red_dst, red_pred, aligned)


def _bar_gen(m, w, ins, mask, kind, bar_id, count, red_dst, red_pred, aligned):
    cta = w.cta
    wt = int(w.valid.sum())
    if kind == "red":
        op = next(x for x in ins.mods if x in ("popc", "and", "or"))
        pv = m.pred(w, red_pred.reg) if not isinstance(red_pred, Reg) and hasattr(red_pred, "reg") else m.pred(w, red_pred)
        if not isinstance(red_pred, Reg) and hasattr(red_pred, "reg"):
            pv = ~pv
        value = int((pv & mask).sum()) if op == "popc" else (bool((pv | ~mask).all()) if op == "and" else bool((pv & mask).any()))
        cmd = NB.Red(w.index, bar_id, op, value, count, wt)
    elif kind == "arrive":
        if count is None:
            raise Unsupported("bar.arrive without a thread count", ins)
        cmd = NB.Arrive(w.index, bar_id, count, wt)
    else:
        cmd = NB.Sync(w.index, bar_id, count, wt)
    out = m.step(cta.named, cmd, ins, w.describe(), barrier=bar_id)
    if out.violation is not None:
        return
    gen = cta.bar_gen[bar_id]
    prev = cta.bar_release.get((bar_id, gen - 1))
    if prev is not None and not hb_after(w.vc, prev):
        m.depend(f"{_fmt_loc(ins.loc)}: {w.describe()} arrives at barrier {bar_id} (instance {gen}) without being "
                 f"ordered after instance {gen - 1}; in another schedule it may join that instance")
    cta.bar_vc[bar_id] = join(cta.bar_vc.get(bar_id, np.zeros(0, np.int64)), w.vc)
    if m.trace is not None:
        m.trace.release(("bar", id(cta), bar_id, cta.bar_gen[bar_id]), w, ins, f"barrier {bar_id}",
                        cta.bar_gen[bar_id])
    cta.bar_locs.setdefault(bar_id, {})[ins.loc] = (ins, aligned)
    w.release_tick()
    gen = cta.bar_gen[bar_id]
    completed = [e for e in out.effects if e[0] == "barrier-completed"]
    if completed:
        _bar_complete(m, cta, bar_id, completed[0][2], out.value, red_dst)
    elif complete_with_exited(m, cta, bar_id):
        completed = True
    if completed:
        if kind != "arrive":
            _bar_after(m, w, ins, (bar_id, gen), red_dst, mask)
        yield None
        return
    if kind == "arrive":
        yield None
        return
    wt = Wait("bar", lambda: cta.bar_gen[bar_id] != gen, lambda: _bar_describe(m, cta, bar_id, count), ins)
    wt.barrier = (cta, bar_id)
    yield wt
    _bar_after(m, w, ins, (bar_id, gen), red_dst, mask)


def complete_with_exited(m, cta, bar_id):
    """Threads that exited count as arrived (§9.7.13.1): complete a CTA-wide instance that
    only waits for them."""
    if any(len(i.operands) > (2 if "red" in i.mods else 1) for i, _ in cta.bar_locs.get(bar_id, {}).values()):
        return False  # an explicit thread count: exited threads do not take part
    out = m.step(cta.named, NB.ExitedArrive(bar_id, cta.exited_threads))
    done = out.effect("barrier-completed")
    if done is None:
        return False
    _bar_complete(m, cta, bar_id, done[2], out.value, None)
    return True


def _bar_describe(m, cta, bar_id, count):
    return "waits at " + NB.waiting_for(cta.named.state, bar_id)


def _bar_complete(m, cta, bar_id, released, value, red_dst):
    vc = cta.bar_vc.pop(bar_id, np.zeros(0, np.int64))
    locs = cta.bar_locs.pop(bar_id, {})
    gen = cta.bar_gen[bar_id]
    cta.bar_gen[bar_id] += 1
    cta.bar_value[(bar_id, gen)] = value
    cta.bar_release[(bar_id, gen)] = vc
    cta_wide = all(aligned for _, aligned in locs.values()) and \
        all(not any(x in i.mods for x in ("arrive", "red")) and len(i.operands) == 1 for i, _ in locs.values())
    if len(locs) > 1 and cta_wide:
        instrs = sorted(locs, key=lambda l: l.ptx_line)
        m.report(BARRIER_DIVERGENCE.id,
                 f"one instance of barrier {bar_id} was completed by different barrier instructions at "
                 f"{', '.join(_fmt_loc(l) for l in instrs)}: the threads of {cta.describe()} did not reach "
                 f"the same barrier (§9.7.13.1)", instrs, barrier=bar_id)
    elif len(locs) > 1 and all(aligned for _, aligned in locs.values()):
        # counted instances (bar.sync ID, N) met from different .aligned instructions: the
        # warp-specialized producer/consumer idiom; the instance completes as counted
        instrs = sorted(locs, key=lambda l: l.ptx_line)
        m.report(BARRIER_ALIGNED_SPLIT.id,
                 f"one instance of barrier {bar_id} was completed by different .aligned barrier instructions at "
                 f"{', '.join(_fmt_loc(l) for l in instrs)} in {cta.describe()} (.aligned requires one instruction; "
                 f"{BARRIER_ALIGNED_SPLIT.section})", instrs, barrier=bar_id)


def _bar_after(m, w, ins, key, red_dst, mask):
    cta = w.cta
    m.acquire(w, cta.bar_release.get(key, np.zeros(0, np.int64)), ins, f"barrier {key[0]}", key[1],
              key=("bar", id(cta), key[0], key[1]))
    w.lane_order.sync(mask, w.valid)
    if red_dst is not None:
        v = cta.bar_value.get(key)
        m.write(w, red_dst, np.full(32, int(v), U64) if not isinstance(v, bool) else np.full(32, v), mask)


@handler("barrier.cluster")
def h_cluster_barrier(m, w, ins, mask):
    expected = w.valid & w.live
    if (expected & ~mask).any():  # every non-exited thread of the cluster takes part (§9.7.13 barrier.cluster)
        lanes, missing = np.flatnonzero(mask), np.flatnonzero(expected & ~mask)
        if "aligned" not in ins.mods:
            raise Unsupported(f"{ins.opcode} reached by part of a warp (lanes {lanes[0]}..{lanes[-1]} of "
                              f"{w.describe()}): a cluster barrier whose warp arrives from several places is not "
                              "modelled", ins)
        m.report(BARRIER_DIVERGENCE.id,
                 f"{ins.opcode} (aligned) reached by lanes {lanes[0]}..{lanes[-1]} of {w.describe()} but not by lanes "
                 f"{', '.join(map(str, missing[:8]))}: the condition around it differs between the threads of the "
                 "warp (§9.7.13 barrier.cluster)", [ins.loc])
    cl = w.cta.cluster_ctas
    bar = cl[0].cluster_barrier
    if bar is None:  # the cluster's live warps take part
        live = frozenset((c.rank, x.index) for c in cl for x in c.warps if x.valid.any() and not x.exited_reported)
        bar = ClusterBarrier(CB.PROTOCOL, CB.ClusterBarrierState(live), "the cluster barrier")
        for c in cl:
            c.cluster_barrier = bar
    if "arrive" in ins.mods:
        return _cluster_arrive(m, w, ins, bar, cl)
    return _cluster_wait(m, w, ins, bar)


class ClusterBarrier(SyncObject):
    """The cluster barrier of one cluster: protocol state plus the happens-before clock each
    phase releases (``.relaxed`` arrivals add no release)."""

    def __init__(self, protocol, state, title):
        super().__init__(protocol, state, title)
        self.vc = np.zeros(0, np.int64)  # joined release clocks of the current phase's arrivals
        self.release: dict = {}  # phase -> clock a wait on it acquires
        self.init_vc = np.zeros(0, np.int64)  # joined fence.mbarrier_init clocks of its arrivals
        self.init_release: dict = {}  # phase -> init-only clock a wait on it acquires


def _cluster_arrive(m, w, ins, bar, cl):
    relaxed = "relaxed" in ins.mods
    prev = bar.release.get(bar.state.phase - 1)
    if prev is not None and not hb_after(w.vc, prev):
        m.depend(f"{_fmt_loc(ins.loc)}: {w.describe()} arrives at the cluster barrier without being ordered "
                 f"after its previous instance")
    ph = bar.state.phase
    out = m.step(bar, CB.Arrive((w.cta.rank, w.index), relaxed), ins, w.describe())
    if out.violation is None:
        if not relaxed:
            bar.vc = join(bar.vc, w.vc)
            if m.trace is not None:
                m.trace.release(("cluster", id(bar), ph), w, ins, "cluster barrier", ph)
        if w.agent < len(m.mbar_fence_clk) and m.mbar_fence_clk[w.agent]:
            fenced = np.zeros(w.agent + 1, np.int64)
            fenced[w.agent] = m.mbar_fence_clk[w.agent]
            bar.init_vc = join(bar.init_vc, fenced)
        _cluster_completed(m, bar, out, cl, ins.loc)
    w.release_tick()
    yield None


def _cluster_completed(m, bar, out, cl, loc):
    done = out.effect("phase-completed")
    if done is None:
        return
    if len(bar.state.participants) < sum(1 for c in cl for x in c.warps if x.valid.any()):
        m.depend(f"{_fmt_loc(loc)}: a warp exited before the cluster barrier completed; when it exits "
                 f"decides which arrivals complete the instance")
    bar.release[done[1]] = bar.vc
    bar.init_release[done[1]] = bar.init_vc
    bar.vc = bar.init_vc = np.zeros(0, np.int64)


def cluster_barrier_exit(m, w):
    """A warp of the cluster exited: the cluster barrier no longer waits for it."""
    bar = w.cta.cluster_barrier
    me = (w.cta.rank, w.index)
    if bar is not None and me in bar.state.participants:
        _cluster_completed(m, bar, m.step(bar, CB.Exit(me)), w.cta.cluster_ctas, getattr(w, "last_loc", None))


def _cluster_wait(m, w, ins, bar):
    me = (w.cta.rank, w.index)
    cmd = CB.Wait(me)
    ph = bar.state.token(me)
    out = bar.protocol.step(bar.state, cmd)
    if out.violation is None and out.has("blocked"):
        yield Wait("cluster", on_change(bar, lambda: not bar.protocol.step(bar.state, cmd).has("blocked")),
                   lambda: "waits at " + CB.waiting_for(bar.state, me), ins)
    out = m.step(bar, cmd, ins, w.describe())
    if out.violation is not None:
        yield None
        return
    m.acquire(w, bar.release.get(ph, np.zeros(0, np.int64)), ins, "cluster barrier", ph, key=("cluster", id(bar), ph))
    w.cluster_waits += 1
    inits = bar.init_release.get(ph)
    if inits is not None and len(inits):
        w.mbar_inits_seen.append((w.clock(), inits))
        w.release_tick()  # uses after this wait have a later own clock than the record
