"""The arrivals obligation (rule ``mbarrier.arrival-overflow``): see :mod:`.static`."""
from __future__ import annotations

import time

import z3

from kverify.semantics.memory_model.protocols import mbarrier as MB
from kverify.symbolic import mk_and
from kverify.verifier.report import Obligation

from .facts import Facts, ob as _ob


def check(chk: Facts) -> Obligation:
    t0 = time.perf_counter()
    inits = [s for s in chk.sites if s.kind == "init"]
    arrs = [s for s in chk.sites if s.kind == "arrive"]
    others = [s for s in chk.sites if s.kind == "other"]
    if others:
        s = others[0]
        return _ob("arrivals", "unknown", f"{chk.loc(s.instr)}: {s.instr.opcode} is not modelled", t0,
                   [chk.loc(s.instr)])
    if not arrs:
        return _ob("arrivals", "proved", "no arrive instruction", t0)
    if any(a.drop for a in arrs):
        a = next(a for a in arrs if a.drop)
        return _ob("arrivals", "unknown", f"{chk.loc(a.instr)}: arrive_drop changes the expected count of later "
                   "phases (not modelled statically)", t0, [chk.loc(a.instr)])
    for i in inits:
        if i.addr is None or i.count is None or i.loops:
            return _ob("arrivals", "unknown", f"{chk.loc(i.instr)}: init address/count not understood or "
                       "init inside a loop", t0, [chk.loc(i.instr)])
    done, grouped = [], set()
    counted = {}
    for a in arrs:
        if a.note:
            return _ob("arrivals", "unknown", f"{chk.loc(a.instr)}: {a.note} (other CTAs' arrivals are "
                       "not counted)", t0, [chk.loc(a.instr)])
        if a.addr is None:
            return _ob("arrivals", "unknown", f"{chk.loc(a.instr)}: barrier address not understood", t0,
                       [chk.loc(a.instr)])
        n, res = chk.count_threads(a.pc)
        if n is None:
            return _ob("arrivals", "unknown", f"{chk.loc(a.instr)}: cannot count the arriving threads ({res})",
                       t0, [chk.loc(a.instr)])
        if n == 0:
            continue
        # the counting takes the site's remaining condition as given: one that reads values the
        # encoding approximates (loaded data, a wgmma accumulator, loop registers) may skip the
        # arrive in some iterations and not others, and those phases would never complete
        data = (chk.syms(res) & chk.env.approx) - {str(k) for _, k in a.loops}
        if data:
            return _ob("arrivals", "unknown", f"{chk.loc(a.instr)}: whether its threads arrive depends on values "
                       f"the encoding approximates ({', '.join(sorted(data)[:3])}): a phase may get none of its "
                       "arrivals", t0, [chk.loc(a.instr)])
        counted[id(a)] = n
    for a in arrs:
        if id(a) not in counted or id(a) in grouped:
            continue
        n = counted[id(a)]
        _, res = chk.count_threads(a.pc)
        hyp = mk_and(*[chk.in_range(i, k, k) for i, k in a.loops], res)
        mates, b = chk.phase_mates(a, [b for b in arrs if b is not a and id(b) in counted], chk.ranges(a.loops))
        if mates is None:
            return _ob("arrivals", "unknown", f"cannot decide whether {chk.loc(b.instr)} and "
                       f"{chk.loc(a.instr)} arrive on the same barrier in the same phase", t0,
                       [chk.loc(a.instr), chk.loc(b.instr)])
        if mates:
            group = [a] + mates
            grouped.update(id(x) for x in group)
            got = sum((x.count * counted[id(x)] for x in group[1:]), a.count * n)
            init_count = _init_count(chk, a, inits)
            if init_count is None:
                return _ob("arrivals", "unknown", f"{chk.loc(a.instr)}: no mbarrier.init found for its barrier",
                           t0, [chk.loc(a.instr)])
            r, _ = chk.prove(chk.ranges(a.loops), got == init_count)
            where = ", ".join(str(chk.loc(x.instr)) for x in group)
            if r != "proved":
                return _ob("arrivals", "unknown", f"arrive sites {where} all arrive on one barrier in the same "
                           "phase (same iteration, no wait on it between them) and their arrivals together are "
                           "not proved to be its init count: more than one phase per wait is not modelled", t0,
                           [chk.loc(x.instr) for x in group])
            done.append((a, f"{'+'.join(str(counted[id(x)]) for x in group)} (sites {where})"))
            continue
        cands = []
        for i in inits:
            r, _ = chk.solve([hyp, a.addr == i.addr])
            if r != "unsat":
                cands.append(i)
        if not cands:
            return _ob("arrivals", "unknown", f"{chk.loc(a.instr)}: no mbarrier.init found for its barrier", t0,
                       [chk.loc(a.instr)])
        init_count = _init_count(chk, a, cands)
        got = a.count * n
        r, m = chk.prove(hyp, got == init_count)
        if r == "proved":
            done.append((a, n))
            continue
        if r == "unknown":
            return _ob("arrivals", "unknown", f"{chk.loc(a.instr)}: solver gave no answer", t0,
                       [chk.loc(a.instr)])
        if chk.syms(got, init_count, hyp) & chk.env.approx:
            return _ob("arrivals", "unknown", f"{chk.loc(a.instr)}: arrivals may differ from the init count "
                       "only for approximated values", t0, [chk.loc(a.instr)])
        want = m.eval(init_count, model_completion=True).as_long()
        gotv = m.eval(got, model_completion=True).as_long()
        addr = m.eval(a.addr, model_completion=True).as_long()
        init_site = next((i for i in cands if m.eval(a.addr == i.addr, model_completion=True)), cands[-1])
        its = {info.name: m.eval(k, model_completion=True).as_long() for info, k in a.loops}
        rule = MB.ARRIVAL_OVERFLOW.id if gotv > want else "deadlock"
        cex = {"rule": rule, "arrivals": gotv, "init_count": want, "barrier_address": addr,
               "iterations": its, "location": str(chk.loc(a.instr)), "init": str(chk.loc(init_site.instr))}
        msg = (f"{gotv} threads execute {chk.loc(a.instr)} per instance, arriving on the barrier at shared "
               f"address {addr:#x} initialized with count {want} at {chk.loc(init_site.instr)}: "
               + ("the surplus arrivals count toward the next phase" if gotv > want else
                  "the phase cannot complete from these arrivals"))
        locs = [chk.loc(init_site.instr), chk.loc(a.instr)]
        msg, cex = chk.with_params(msg, cex, m)
        return _ob("arrivals", "violated", msg, t0, locs, cex, rule)
    for w in (s for s in chk.sites if s.kind == "wait" and s.addr is not None):
        if not any(chk.may_alias(w, x) for x in chk.sites if x.kind in ("arrive", "copy", "other")):
            return _ob("arrivals", "unknown", f"{chk.loc(w.instr)} waits on a barrier no arrive instruction or "
                       "copy of the kernel can complete a phase of (its waits pass only a fresh barrier's "
                       "phase before phase 0)", t0, [chk.loc(w.instr)])
    return _ob("arrivals", "proved", "in each phase the arrivals on a barrier equal its init count (the arrive "
               "sites of one iteration with no wait on the barrier between them form one phase): "
               + ", ".join(f"{chk.loc(a.instr)} x{n}" for a, n in done),
               t0, [chk.loc(a.instr) for a, _ in done])

def _init_count(chk, a, inits):
    """The init count of the barrier ``a.addr`` names, among the barriers of ``inits``
    (the last candidate when no other matches); None without one."""
    hyp = chk.ranges(a.loops)
    cands = [i for i in inits if chk.solve([hyp, a.addr == i.addr])[0] != "unsat"]
    if not cands:
        return None
    count = cands[-1].count
    for i in reversed(cands[:-1]):
        count = z3.If(a.addr == i.addr, i.count, count)
    return count
