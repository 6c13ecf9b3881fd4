"""The arrivals obligation (rule ``mbarrier.arrival-overflow``): see :mod:`.static`."""
from __future__ import annotations

import dataclasses
import time

import z3

from kverify.semantics.memory_model.protocols import mbarrier as MB
from kverify.symbolic import mk_and
from kverify.verifier.report import Obligation

from .facts import ALIAS_UNITS, Facts, ob as _ob, unseparated
from .sites import MAPA


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
    nb = unseparated(chk, "arrivals", t0)
    if nb is not None:
        return nb
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
    arrs = [_in_ring(chk, a) for a in arrs]
    # an arrive of count 1 on a barrier no wait names and no byte count tracks (CUTLASS's
    # load-order barrier when no warp waits on it): its phases order nothing and block no thread,
    # and with no tx-count a phase completes at the arrival that brings its pending count to 0,
    # so no arrival can drive that count below 0 (§9.7.13.15.2) -- how many arrivals a phase gets
    # does not matter (whether the barrier was initialized is checked below with the others). A
    # barrier with expect-tx or copies is counted: an arrival while its bytes are pending would.
    # the sites that may name such a barrier: waits, and copies / expect-tx / complete-tx
    others = [_in_ring(chk, s) for s in chk.sites if s.kind not in ("init", "inval", "arrive") or s.tx is not None]

    def inert(a):
        count = z3.simplify(a.count) if a.count is not None else None
        return (a.rank is None and a.addr is not None and a.tx is None and z3.is_bv_value(count)
                and count.as_long() == 1 and not any(chk.may_alias(x, a) for x in others))

    unwaited = [a for a in arrs if inert(a)] if all(x.addr is not None for x in others) else []
    skip = {id(a) for a in unwaited}
    remote = [a for a in arrs if a.rank is not None]
    for a in remote:
        res = _remote(chk, a, arrs, inits, t0)
        if isinstance(res, Obligation):
            return res
        done.append((a, res))
        grouped.add(id(a))
    for a in arrs:
        if a.rank is not None or id(a) in skip:
            continue
        if a.note:
            return _ob("arrivals", "unknown", f"{chk.loc(a.instr)}: {a.note} (other CTAs' arrivals are "
                       "not counted)", t0, [chk.loc(a.instr)])
        if a.addr is None:
            return _ob("arrivals", "unknown", f"{chk.loc(a.instr)}: barrier address not understood", t0,
                       [chk.loc(a.instr)])
        n, res = chk.count_site(a)
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
        why = chk.residue_varies(a, res)
        if why:
            return _ob("arrivals", "unknown", f"{chk.loc(a.instr)}: {why}: a phase may miss its "
                       "arrivals", t0, [chk.loc(a.instr)])
        counted[id(a)] = n
    # a barrier's phases are numbered by its sites' iterations (the waits' uses, the ring's forms):
    # an arrive after a loop, outside it, on a barrier an arrive in that loop uses (a tail release
    # after a k loop) completes phases that numbering does not count -- a surplus the waits of the
    # next round would take for theirs
    local = [a for a in arrs if (id(a) in counted or a.rank is not None) and a.addr is not None]  # (remote too)
    for a in local:
        for b in local:
            if (b is not a and b.loops and all(i is not b.loops[-1][0] for i, _ in a.loops)
                    and chk.seq(a) > chk.seq(b) and chk.may_share_thread(a, b) and chk.may_alias(a, b)):
                return _ob("arrivals", "unknown", f"{chk.loc(a.instr)} arrives after the loop of {chk.loc(b.instr)} "
                           "on a barrier that loop's arrivals use: the phases it completes are not counted against "
                           "the waits' uses", t0, [chk.loc(a.instr), chk.loc(b.instr)])
    apart = _apart(chk, [a for a in arrs if id(a) in counted], t0)
    if apart is not None:
        return apart
    for a in arrs:
        if id(a) not in counted or id(a) in grouped:
            continue
        n = counted[id(a)]
        _, res = chk.count_site(a)
        hyp = mk_and(*[chk.in_range(i, k, k) for i, k in a.loops], res)
        mates, b = chk.phase_mates(a, [b for b in arrs if b is not a and (id(b) in counted or b.rank is not None)],
                                   chk.ranges(a.loops))
        if mates and any(x.rank is not None for x in mates):
            b = next(x for x in mates if x.rank is not None)
            return _ob("arrivals", "unknown", f"{chk.loc(a.instr)} and the remote arrive {chk.loc(b.instr)} may arrive "
                       "on one barrier in the same phase: local and remote arrivals of one phase are not counted "
                       "together", t0, [chk.loc(a.instr), chk.loc(b.instr)])
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
        cands = _candidates(chk, a, inits, hyp)
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
        addr_t = a.addr
        first = chk.first_counterexample(a.loops, got, init_count, hyp, addr_t)  # reached whenever the site is
        if first is not None:
            m, (got, init_count, hyp, addr_t) = first
        if chk.syms(got, init_count, hyp) & chk.env.approx:
            return _ob("arrivals", "unknown", f"{chk.loc(a.instr)}: arrivals may differ from the init count "
                       "only for approximated values", t0, [chk.loc(a.instr)])
        want = m.eval(init_count, model_completion=True).as_long()
        gotv = m.eval(got, model_completion=True).as_long()
        addr = m.eval(addr_t, model_completion=True).as_long()
        init_site = next((i for i in cands if m.eval(addr_t == i.addr, model_completion=True)), cands[-1])
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
    bad = _uninitialized(chk, [a for a in arrs if a.rank is None]
                         + [s if s.kind == "wait" else _in_ring(chk, s) for s in chk.sites
                            if s.kind in ("copy", "wait")], inits, t0)
    if bad is not None:
        return bad
    for w in (s for s in chk.sites if s.kind == "wait" and s.addr is not None):
        if not any(chk.may_alias(w, x) for x in chk.sites if x.kind in ("arrive", "copy", "other")):
            return _ob("arrivals", "unknown", f"{chk.loc(w.instr)} waits on a barrier no arrive instruction or "
                       "copy of the kernel can complete a phase of (its waits pass only a fresh barrier's "
                       "phase before phase 0)", t0, [chk.loc(w.instr)])
    skipped = (f"; not counted: the arrive{'s' if len(unwaited) > 1 else ''} at "
               f"{', '.join(str(chk.loc(a.instr)) for a in unwaited)}, on a barrier no wait names and no byte count "
               "tracks (its phases order nothing and block no thread)") if unwaited else ""
    return _ob("arrivals", "proved", "in each phase the arrivals on a barrier equal its init count (the arrive "
               "sites of one iteration with no wait on the barrier between them form one phase): "
               + ", ".join(f"{chk.loc(a.instr)} x{n}" for a, n in done) + skipped,
               t0, [chk.loc(a.instr) for a, _ in done])

def _apart(chk, arrs, t0):
    """None when no two arrive sites of ``arrs`` (of one loop nest) name one barrier in different
    iterations unless they name it together in each (then they are phase mates, counted together,
    and each iteration's instance is the ring's use of that barrier); else the obligation,
    ``unknown``. The obligation counts each site's arrivals per iteration, adding up only sites
    of the same iteration: ``arrive(&empty[s]); arrive(&empty[s ^ 1])`` hits empty[0] in every
    iteration, once from each site, and its phases get twice the arrivals of one site while
    each site alone matches the count."""
    for i, a in enumerate(arrs):
        for b in arrs[i + 1:]:
            if not a.loops or not chk.same_iteration(a, b) or not chk.may_alias(a, b):
                continue
            (other,), rng = chk.renamed(b, b.addr)
            with chk.budget.capped(ALIAS_UNITS):
                r, m = chk.solve([chk.ranges(a.loops), rng, a.addr == other, a.addr != b.addr])
            if r == "unsat":
                continue
            L = chk.loc
            why = "one barrier in different iterations"
            if r == "sat":
                def its(f):
                    vs = [str(m.eval(z3.BitVec(f(k), 64), model_completion=True).as_long()) for _, k in a.loops]
                    return vs[0] if len(vs) == 1 else f"({', '.join(vs)})"
                why += (f" (the first in iteration {its(str)}, the second in iteration {its(lambda k: f'{k}~other')} "
                        f"of loop{'s' if len(a.loops) > 1 else ''} {', '.join(info.name for info, _ in a.loops)})")
            return _ob("arrivals", "unknown", f"arrive sites {L(a.instr)} and {L(b.instr)} may arrive on {why}: the "
                       "arrivals of sites are added up only within an iteration, and a phase of that barrier may get "
                       "those of both", t0, [L(a.instr), L(b.instr)])
    return None


def _uninitialized(chk, sites, inits, t0):
    """None when every arrive, copy and wait of ``sites`` names a barrier an ``mbarrier.init`` of the
    kernel initializes (§9.7.13.15.3: any other operation on an uninitialized barrier is undefined;
    counting arrivals against the nearest init would prove a phase that never completes), else
    the obligation: ``violated`` (``mbarrier.uninitialized``) for an address outside every init
    that no approximated value brings about, ``unknown`` otherwise. A site in a proved ring is
    taken by the ring's addresses (its waits) or forms (``_in_ring``, its arrivals)."""
    addrs = [i.addr for i in inits if i.addr is not None]
    known = {z3.simplify(x).as_long() for x in addrs if z3.is_bv_value(z3.simplify(x))}
    rings = {id(w.instr): r for w, r in chk.rings}
    for s in sites:
        if s.addr is None or getattr(s, "rank", None) is not None or MAPA in chk.syms(s.addr):
            continue  # (a barrier of another CTA of the cluster: counted per receiving CTA, ``_remote``)
        ring = rings.get(id(s.instr)) if s.kind == "wait" else None
        vals = set(ring.addresses) if ring is not None and ring.determined else _values(s.addr)
        if vals is not None and len(known) == len(addrs) and vals <= known:
            continue
        if not addrs:
            r, m = "cex", None
        else:
            r, m = chk.prove(mk_and(chk.ranges(s.loops), s.pc), z3.Or(*[s.addr == x for x in addrs]))
        if r == "proved":
            continue
        outside = sorted(v for v in (vals or ()) if v not in known)
        what = f"{chk.loc(s.instr)}: the {'wait' if s.kind == 'wait' else 'arrive' if s.kind == 'arrive' else 'copy'}"
        approx = chk.syms(s.addr, s.pc) & chk.env.approx
        if s.kind == "wait" and approx and not (ring is not None and outside):
            continue  # (a wait completes no phase: only a concrete address outside every init is reported)
        if r == "cex" and m is not None and not approx:
            addr = m.eval(s.addr, model_completion=True).as_long()
            its = {info.name: m.eval(k, model_completion=True).as_long() for info, k in s.loops}
            cex = {"rule": MB.UNINITIALIZED.id, "barrier_address": addr, "iterations": its,
                   "location": str(chk.loc(s.instr))}
            msg, cex = chk.with_params(f"{what} names the barrier at shared address {addr:#x}"
                                       f"{' in iterations ' + str(its) if its else ''}, which no mbarrier.init of "
                                       "the kernel initializes", cex, m)
            return _ob("arrivals", "violated", msg, t0, [chk.loc(s.instr)], cex, MB.UNINITIALIZED.id)
        return _ob("arrivals", "unknown", f"{what} is not shown to name a barrier an mbarrier.init of the kernel "
                   "initializes" + (f" (it may name {', '.join(hex(v) for v in outside[:4])}, which none does)"
                                    if outside else ""), t0, [chk.loc(s.instr)])
    return None


def _init_count(chk, a, inits):
    """The init count of the barrier ``a.addr`` names, among the barriers of ``inits``
    (the last candidate when no other matches); None without one."""
    cands = _candidates(chk, a, inits, chk.ranges(a.loops))
    if not cands:
        return None
    count = cands[-1].count
    for i in reversed(cands[:-1]):
        count = z3.If(a.addr == i.addr, i.count, count)
    return count


def _candidates(chk, a, inits, hyp):
    """The barriers of ``inits`` that ``a.addr`` may name under ``hyp``: without a query where the
    difference of the two addresses is a term of selected constants (a ring form minus a barrier's
    address: the offsets it can take)."""
    def may_name(i):
        vals = _values(a.addr - i.addr) if i.addr is not None else None
        return 0 in vals if vals is not None else chk.solve([hyp, a.addr == i.addr])[0] != "unsat"

    return [i for i in inits if may_name(i)]


def _values(t, limit=64):
    """The values a term of constants selected by conditions and combined by ``+`` and ``*`` (the
    difference of a ring form and a barrier address, ``-8 + 8*If(c, 0, If(...))``) can take, at
    most ``limit`` of them, or None for any other term."""
    t = z3.simplify(t)

    def go(x):
        if z3.is_bv_value(x):
            return {x.as_long()}
        mask = (1 << x.size()) - 1
        if z3.is_app_of(x, z3.Z3_OP_ITE):
            a, b = go(x.arg(1)), go(x.arg(2))
            return None if a is None or b is None else a | b
        if z3.is_app_of(x, z3.Z3_OP_EXTRACT):
            v = go(x.arg(0))
            hi, lo = x.params()
            return None if v is None else {(p >> lo) & ((1 << (hi - lo + 1)) - 1) for p in v}
        if z3.is_app_of(x, z3.Z3_OP_ZERO_EXT):
            return go(x.arg(0))
        if any(z3.is_app_of(x, op) for op in (z3.Z3_OP_BADD, z3.Z3_OP_BMUL, z3.Z3_OP_CONCAT)):
            out = {0 if not z3.is_app_of(x, z3.Z3_OP_BMUL) else 1}
            for c in x.children():
                v = go(c)
                if v is None:
                    return None
                if z3.is_app_of(x, z3.Z3_OP_CONCAT):
                    out = {(p << c.size()) | q for p in out for q in v}
                elif z3.is_app_of(x, z3.Z3_OP_BADD):
                    out = {(p + q) & mask for p in out for q in v}
                else:
                    out = {(p * q) & mask for p in out for q in v}
                if len(out) > limit:
                    return None
            return out
        return None

    return go(t) if z3.is_bv(t) else None


def _in_ring(chk: Facts, a):
    """``a`` with its loop-head registers in the forms of a ring the parity obligation proved
    for its threads (``Facts.ring_view``: true in every reachable state), else ``a``."""
    if len(a.loops) not in (1, 2):
        return a
    view = chk.ring_view([a], chk.ranges(a.loops))
    if view is None:
        return a
    subst = view[0]
    return dataclasses.replace(a, **{f: z3.substitute(getattr(a, f), *subst) for f in ("addr", "pc", "count", "rank")
                                     if getattr(a, f) is not None})


def _remote(chk: Facts, a, arrs, inits, t0):
    """A remote arrive (``mapa`` + ``mbarrier.arrive.shared::cluster``, §9.7.9.17, §9.7.13.15.13):
    each CTA of the cluster runs it, each arriving thread on the barrier at ``a.addr`` of the CTA
    of rank ``a.rank``. Per phase (one step of every CTA, the only site of its phase), the
    arrivals the CTA at each cluster position receives -- from its peers' threads whose rank
    names it, each peer's terms being the site's with the peer's CTA index (``Facts.at_peer``;
    in a ring, its forms, ``Facts.ring_view``) -- must equal the barrier's init count: the
    description of what was proved, or an obligation (unknown, violated)."""
    L = chk.loc
    hyp = chk.ranges(a.loops)
    if not getattr(chk.launch, "cluster", None):
        return _ob("arrivals", "unknown", f"{L(a.instr)}: a remote arrive and no launch gives the cluster shape", t0,
                   [L(a.instr)])
    mates, b = chk.phase_mates(a, [x for x in arrs if x is not a], hyp)
    if mates is None or mates:
        b = b or mates[0]
        return _ob("arrivals", "unknown", f"{L(a.instr)} and {L(b.instr)} may arrive on one barrier in the same "
                   "phase: the arrivals of several sites are not counted together with remote ones", t0,
                   [L(a.instr), L(b.instr)])
    terms, _, same, assume = chk.peer_terms([a], (a.pc, a.addr, a.rank), hyp)
    positions = chk.cluster_positions()
    peers = [chk.at_peer(p, *terms, same=same) for p in positions]
    if any(t is None for t in peers):
        return _ob("arrivals", "unknown", f"{L(a.instr)}: the remote arrive's barrier, target CTA or arriving threads "
                   "depend on values of the arriving CTA's own run, which the encoding does not carry over to the "
                   "other CTAs of the cluster", t0, [L(a.instr)])
    addr = terms[1]
    for p, (_, addr_p, _) in zip(positions, peers):
        if chk.matches(addr_p, addr, hyp) != "same":
            return _ob("arrivals", "unknown", f"{L(a.instr)}: cannot decide that the CTA at cluster position {p} "
                       "arrives on the barrier at the same offset in the same step", t0, [L(a.instr)])
    if a.loops:
        chk.assumptions.add(assume)
    site = dataclasses.replace(a, addr=addr, pc=terms[0], rank=terms[2])
    init_count = _init_count(chk, site, inits)
    if init_count is None:
        return _ob("arrivals", "unknown", f"{L(a.instr)}: no mbarrier.init found for its barrier", t0, [L(a.instr)])
    cx, cy, _ = chk.launch.cluster
    per = []
    groups = chk.count_by_rank(terms[0], terms[2])  # one pass when each thread's target is a constant

    def count(q, p):
        if groups is None:
            return chk.count_at_peer(mk_and(terms[0], terms[2] == q), p, same)
        return chk.residue_at_peer(*groups.get(q, (0, None)), p, same)

    memo = {}

    def same_paths(x, y):  # one query per pair of residues (the ranks' groups often share theirs)
        key = (x.get_id(), y.get_id())
        if key not in memo:
            memo[key] = chk.prove(hyp, x == y)[0] == "proved"
        return memo[key]

    for q in positions:
        rank_q = q[0] + cx * (q[1] + cy * q[2])
        n_q, res_q = 0, None
        for p in positions:
            n, res = count(rank_q, p)
            if n is None:
                return _ob("arrivals", "unknown", f"{L(a.instr)}: cannot count the threads of the CTA at cluster "
                           f"position {p} arriving on cluster rank {rank_q} ({res})", t0, [L(a.instr)])
            if not n:
                continue
            if res_q is not None and not res.eq(res_q) and not same_paths(res, res_q):
                return _ob("arrivals", "unknown", f"{L(a.instr)}: the arrivals on cluster rank {rank_q} may come "
                           "in different iterations or paths of its peers", t0, [L(a.instr)])
            why = chk.residue_varies(a, res)
            if why:
                return _ob("arrivals", "unknown", f"{L(a.instr)}: {why}: a phase of the barrier on "
                           f"cluster rank {rank_q} may miss its arrivals", t0, [L(a.instr)])
            res_q = res if res_q is None else res_q
            n_q += n
        if not n_q:
            # no thread of the cluster arrives on this CTA's barrier: a phase only if the CTA waits
            # on it (dsmem's producer tail: only rank 0's barrier is initialized and waited on)
            here = [z3.URem(c, n) == v for c, n, v in zip(chk.env.ctaid, chk.launch.cluster, q)]
            w = next((w for w in chk.sites if w.kind == "wait" and (w.addr is None or chk.solve(
                [chk.ranges(w.loops), w.pc, *here, w.addr == addr])[0] != "unsat")), None)
            if w is not None:
                return _ob("arrivals", "unknown", f"{L(w.instr)} may wait in the CTA of cluster rank {rank_q} on "
                           f"the barrier the remote arrive {L(a.instr)} names, which brings it no arrival", t0,
                           [L(w.instr), L(a.instr)])
            per.append(0)
            continue
        got = a.count * n_q
        hq = mk_and(hyp, res_q) if res_q is not None else hyp
        r, m = chk.prove(hq, got == init_count)
        first = chk.first_counterexample(a.loops, got, init_count, hq, addr) if r == "cex" else None
        if first is not None:  # the first iterations, reached whenever the site is
            m, (got, init_count, hq, addr) = first
        if r == "unknown":
            return _ob("arrivals", "unknown", f"{L(a.instr)}: solver gave no answer", t0, [L(a.instr)])
        if r == "cex":
            if chk.syms(got, init_count, hq) & chk.env.approx:
                return _ob("arrivals", "unknown", f"{L(a.instr)}: arrivals may differ from the init count only for "
                           "approximated values", t0, [L(a.instr)])
            want = m.eval(init_count, model_completion=True).as_long()
            gotv = m.eval(got, model_completion=True).as_long()
            baddr = m.eval(addr, model_completion=True).as_long()
            init_site = next((i for i in inits if i.addr is not None
                              and m.eval(addr == i.addr, model_completion=True)), inits[-1])
            its = {info.name: m.eval(k, model_completion=True).as_long() for info, k in a.loops}
            rule = MB.ARRIVAL_OVERFLOW.id if gotv > want else "deadlock"
            cex = {"rule": rule, "arrivals": gotv, "init_count": want, "barrier_address": baddr, "cluster_rank": rank_q,
                   "iterations": its, "location": str(L(a.instr)), "init": str(L(init_site.instr))}
            msg = (f"the CTAs of the cluster execute the remote arrive {L(a.instr)} so that the CTA of cluster rank "
                   f"{rank_q} receives {gotv} arrival(s) per step on its barrier at shared address {baddr:#x}, "
                   f"initialized with count {want} at {L(init_site.instr)}: "
                   + ("the surplus arrivals count toward the next phase" if gotv > want else
                      "the phase cannot complete from these arrivals")
                   + (f"; iterations {its}" if its else ""))
            msg, cex = chk.with_params(msg, cex, m)
            return _ob("arrivals", "violated", msg, t0, [L(init_site.instr), L(a.instr)], cex, rule)
        per.append(n_q)
    each = f"{per[0]} on each cluster rank" if len(set(per)) == 1 else \
        ", ".join(f"{n} on cluster rank {r}" + (" (not waited on there)" if not n else "") for r, n in enumerate(per))
    return f"{each} (remote: the cluster's arrivals per step)"
