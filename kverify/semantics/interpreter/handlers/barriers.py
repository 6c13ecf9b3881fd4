"""CTA named barriers (bar/barrier sync, arrive, red; §9.7.13.1) and the cluster barrier
(barrier.cluster.arrive/wait; §9.7.13 barrier.cluster) on top of their protocol step functions.
"""
from __future__ import annotations

import numpy as np

from kverify.semantics.ir.errors import Unsupported
from kverify.semantics.ir.nodes import Reg, where as _fmt_loc
from kverify.semantics.memory_model.protocols import named_barrier as NB

from ..hb import hb_after, join
from ..state import U64, Wait
from .common import registry

HANDLERS, handler = registry()


# --------------------------------------------------------------------------- named barriers


@handler("bar")
def h_bar(m, w, ins, mask):
    """``bar{.cta}.sync/arrive/red``: ``barrier{.cta}...aligned`` (always aligned)."""
    return _named_barrier(m, w, ins, mask, True)


@handler("barrier")
def h_barrier(m, w, ins, mask):
    """``barrier{.cta}.sync/arrive/red{.aligned}``."""
    return _named_barrier(m, w, ins, mask, "aligned" in ins.mods)


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
    if aligned and (expected & ~mask).any():
        missing = np.flatnonzero(expected & ~mask)
        m.report("barrier.divergence",
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
    out = NB.step(cta.named, cmd)
    if out.violation is not None:
        v = out.violation
        m.report(v.rule, f"{v.message} ({w.describe()}, {v.section})", [ins.loc], barrier=bar_id)
        if v.rule == "barrier.named-reuse" and kind == "arrive":
            return
        # continue as if it arrived with the active count (to find further problems)
        slot = cta.named.slots[bar_id] if 0 <= bar_id < 16 else None
        if slot is None:
            return
        out = NB.step(cta.named, type(cmd)(**{**cmd.__dict__, "count": slot.count}) if slot.count else cmd)
        if out.violation is not None:
            return
    cta.named = out.state
    gen = cta.bar_gen[bar_id]
    prev = cta.bar_release.get((bar_id, gen - 1))
    if prev is not None and not hb_after(w.vc, prev):
        m.depend(f"{_fmt_loc(ins.loc)}: {w.describe()} arrives at barrier {bar_id} (instance {gen}) without being "
                 f"ordered after instance {gen - 1}; in another schedule it may join that instance")
    cta.bar_vc[bar_id] = join(cta.bar_vc.get(bar_id, np.zeros(0, np.int64)), w.vc)
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
            _bar_after(m, w, (bar_id, gen), red_dst, mask)
        yield None
        return
    if kind == "arrive":
        yield None
        return
    wt = Wait("bar", lambda: cta.bar_gen[bar_id] != gen, lambda: _bar_describe(m, cta, bar_id, count), ins)
    wt.barrier = (cta, bar_id)
    yield wt
    _bar_after(m, w, (bar_id, gen), red_dst, mask)


def complete_with_exited(m, cta, bar_id):
    """Threads that exited count as arrived (§9.7.13.1): complete a CTA-wide instance that
    only waits for them."""
    slot = cta.named.slots[bar_id]
    if slot.idle or not cta.exited_threads or slot.count != cta.named.cta_threads:
        return False
    if any(len(i.operands) > (2 if "red" in i.mods else 1) for i, _ in cta.bar_locs.get(bar_id, {}).values()):
        return False  # an explicit thread count: exited threads do not take part
    if slot.arrived_threads + cta.exited_threads < slot.count:
        return False
    value = None
    if slot.mode and slot.mode.startswith("red."):
        value = NB._reduce(slot.mode[4:], [v for _, v in slot.red_values])
    slots = cta.named.slots[:bar_id] + (NB.BarrierSlot(),) + cta.named.slots[bar_id + 1:]
    from dataclasses import replace

    cta.named = replace(cta.named, slots=slots)
    _bar_complete(m, cta, bar_id, tuple(sorted(slot.blocked)), value, None)
    return True


def _bar_describe(m, cta, bar_id, count):
    slot = cta.named.slots[bar_id]
    return (f"waits at barrier {bar_id}: {slot.arrived_threads} of {slot.count} threads arrived "
            f"(warps {sorted(slot.arrived)})")


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
        m.report("barrier.divergence",
                 f"one instance of barrier {bar_id} was completed by different barrier instructions at "
                 f"{', '.join(_fmt_loc(l) for l in instrs)}: the threads of {cta.describe()} did not reach "
                 f"the same barrier (§9.7.13.1)", instrs, barrier=bar_id)


def _bar_after(m, w, key, red_dst, mask):
    cta = w.cta
    w.vc = join(w.vc, cta.bar_release.get(key, np.zeros(0, np.int64)))
    if red_dst is not None:
        v = cta.bar_value.get(key)
        m.write(w, red_dst, np.full(32, int(v), U64) if not isinstance(v, bool) else np.full(32, v), mask)


@handler("barrier.cluster")
def h_cluster_barrier(m, w, ins, mask):
    mods = set(ins.mods)
    cl = w.cta.cluster_ctas
    st = getattr(cl[0], "cluster_bar", None)
    if st is None:
        st = {"phase": 0, "arrived": {}, "vc": np.zeros(0, np.int64), "release": {}, "token": {}}
        for c in cl:
            c.cluster_bar = st
    key = (w.cta.rank, w.index)
    if "arrive" in mods:
        return _cluster_arrive(m, w, ins, st, key, cl)
    return _cluster_wait(m, w, ins, st, key, cl)


def _cluster_arrive(m, w, ins, st, key, cl):
    if key in st["token"]:
        m.report("barrier.cluster-double-arrive", f"{w.describe()} arrives on the cluster barrier twice "
                 f"without a wait (§9.7.13 barrier.cluster)", [ins.loc])
    prev = st["release"].get(st["phase"] - 1)
    if prev is not None and not hb_after(w.vc, prev):
        m.depend(f"{_fmt_loc(ins.loc)}: {w.describe()} arrives at the cluster barrier without being ordered "
                 f"after its previous instance")
    st["token"][key] = st["phase"]
    st["arrived"][key] = True
    if "relaxed" not in ins.mods:
        st["vc"] = join(st["vc"], w.vc)
    w.release_tick()
    total = sum(1 for c in cl for x in c.warps if x.valid.any() and not x.exited_reported)
    if len(st["arrived"]) >= total:
        if total < sum(1 for c in cl for x in c.warps if x.valid.any()):
            m.depend(f"{_fmt_loc(ins.loc)}: a warp exited before the cluster barrier completed; when it exits "
                     f"decides which arrivals complete the instance")
        st["release"][st["phase"]] = st["vc"]
        st["phase"] += 1
        st["arrived"] = {}
        st["vc"] = np.zeros(0, np.int64)
    yield None


def _cluster_wait(m, w, ins, st, key, cl):
    ph = st["token"].pop(key, None)
    if ph is None:
        m.report("barrier.cluster-wait-without-arrive", f"{w.describe()} waits on the cluster barrier without "
                 f"arriving first (§9.7.13 barrier.cluster)", [ins.loc])
        yield None
        return
    yield Wait("cluster", lambda: st["phase"] > ph,
               lambda: f"waits at the cluster barrier (phase {ph}): {len(st['arrived'])} warps arrived", ins)
    w.vc = join(w.vc, st["release"].get(ph, np.zeros(0, np.int64)))
