"""The parity obligation (rule ``mbarrier.parity``): see :mod:`.static`."""
from __future__ import annotations

import copy
import dataclasses
import math
import time

import z3

from kverify.semantics.memory_model.protocols import mbarrier as MB
from kverify.symbolic import mk_and, name
from kverify.verifier.report import Obligation

from .facts import MAX_REUSE, Facts, ob as _ob
from .ring import ZERO, _pos, select, prove_ring, sum_counts


def check(chk: Facts) -> Obligation:
    """Each wait names the phase its use of the barrier must wait for: the first use the
    phase given by the waiting role (see ``role``), and every later use of the barrier the
    next phase (the parity flips between uses ``d`` iterations apart)."""
    t0 = time.perf_counter()
    # the waits of the pipeline loops first: they carry the protocol (and its seeded bugs), and
    # they get the budget before the straight-line waits after the loops (CUTLASS's producer
    # tail), which go on with a ring proved for a wait in two nested loops (``_tail``)
    waits = sorted((s for s in chk.sites if s.kind == "wait"), key=lambda s: (not s.loops, chk.seq(s)))
    proved, unknown = [], []
    chk.rings = []
    rings, tails = {}, {}  # id(nested wait) -> (Ring, offset, reuse distance, strengthened facts); -> tail waits proved
    shrunk = False
    hoisted = _hoisted_waits(chk, waits)  # id(nested wait) -> the ring's waits before its inner loop
    members = {id(h) for hs in hoisted.values() for h in hs}
    for w in waits:
        if id(w) in members:
            continue  # examined with the ring of its nested wait (``_hoisted``)
        if unknown and not shrunk and not chk.budget.exhausted():
            # the obligation can no longer be proved: the waits left are examined only for a
            # violation, within a fifth of the budget (a verdict of rlimit units, not of time)
            chk.budget.units = min(chk.budget.units, chk.budget.spent + chk.budget.units // 5)
            shrunk = True
        if not w.instr.blocking:
            unknown.append((w, "the wait is not a recognized blocking retry loop"))
            continue
        if w.parity is None or w.addr is None:
            unknown.append((w, f"{w.note}: the phase it names is not checked statically" if w.note
                            else "barrier address or parity not understood"))
            continue
        if len(w.loops) > 2:
            unknown.append((w, f"the wait is inside {len(w.loops)} nested loops: the ring invariant is checked "
                            "over two loop levels only"))
            continue
        if not w.loops:
            res = _tail(chk, w, rings, tails, decide=not unknown)
            if res == "skip":
                continue
            if res is not None:  # proved or unknown: a tail is never found violated (see ``_tail``)
                (proved if res[0] == "proved" else unknown).append((w, res[1]))
                continue
        ck, ring, hs = chk, None, hoisted.get(id(w), [])
        if len(w.loops) == 2:
            ring, why = None, ""
            extra = _released_registers(chk, w)
            if extra:  # with the registers of the ring's other sites; without them if they do not cycle
                ring, why = prove_ring(chk, w, hs, extra)
            if ring is None:
                ring, why = prove_ring(chk, w, hs)
            if ring is None:
                also = f" (a ring waited on here and at {', '.join(str(chk.loc(h.instr)) for h in hs)})" if hs else ""
                unknown.append((w, f"the wait is inside nested loops{also}: {why}"))
                continue
            chk.rings.append((w, ring))  # the ring's forms hold whatever the parity turns out (tx bytes use them)
            ck = _strengthened(chk, ring.substitution)
        off, case = ck.role(ck.site_of(w))
        if off is None:
            unknown.append((w, f"cannot tell which phase its first use waits for: {case}"))
            continue
        pre = _before_loop(chk, w, waits) if len(w.loops) == 1 else []
        uses, why = ck.earlier_uses(ck.site_of(w), counted={id(ck.site_of(h)) for h in hs + pre})
        if uses is None:
            unknown.append((w, why))
            continue
        for j, h in enumerate(hs):
            res = _hoisted(chk, ck, h, j, w, ring, off, case)
            if res[0] == "violated" and id(ck.site_of(w)) in ck.guessed_roles:
                res = ("unknown", f"the parity may differ from the phase it must name, but the waiting role ({case}) "
                                  "rests on barrier addresses the encoding over-approximates")
            if res[0] == "violated":
                return _ob("parity", "violated", res[1], t0, [chk.loc(h.instr)], res[2], MB.PARITY.id)
            (proved if res[0] == "proved" else unknown).append((h, res[1]))
        if not w.loops:
            res = _straight(chk, w, off, case, uses)
        elif len(w.loops) == 1:
            res = _loop(chk, w, off, case, pre)
        else:
            res = _nested(chk, w, off, case, ring)
            if res[0] == "unknown":
                res = ("unknown", f"the wait is inside nested loops: {res[1]}")
            elif res[0] == "proved":
                rings[id(w)] = (ring, off, _reuse_distance(ring.addresses), ck)
        if res[0] == "violated" and id(ck.site_of(w)) in ck.guessed_roles:
            res = ("unknown", f"the parity may differ from the phase it must name, but the waiting role ({case}) "
                              "rests on barrier addresses the encoding over-approximates")
        if res[0] == "violated":
            return _ob("parity", "violated", res[1], t0, [chk.loc(w.instr)], res[2], MB.PARITY.id)
        (proved if res[0] == "proved" else unknown).append((w, res[1]))
    if unknown:
        w, why = min(unknown, key=lambda u: chk.seq(u[0]))  # the first in program order
        return _ob("parity", "unknown", f"{chk.loc(w.instr)}: {why}", t0, [chk.loc(w.instr)])
    if not proved:
        return _ob("parity", "proved", "no parity wait", t0)
    desc = "; ".join(f"{chk.loc(w.instr)}: {d}" for w, d in proved)
    return _ob("parity", "proved", "each wait names the phase its use of the barrier waits for (first use and "
               f"every later one): {desc}", t0, [chk.loc(w.instr) for w, _ in proved])

def _released_registers(chk, w):
    """The inner loop's registers (other than those of the wait's own barrier and parity) that
    the arrive, expect-tx and copy sites of the wait's two loops name their barrier (and target
    CTA) with: a ring's second state, proved with the ring when it cycles alike."""
    L1 = w.loops[1][0]
    if L1.havocs is None:
        return []
    h1 = {name(h): r for r, h in L1.havocs.items()}
    own = {h1[x] for x in chk.syms(*(t for t in (w.addr, w.parity) if t is not None)) if x in h1}
    out = set()
    for s in chk.sites:
        if s.kind in ("arrive", "expect_tx", "copy") and chk.same_iteration(s, w):
            out |= {h1[x] for x in chk.syms(*(t for t in (s.addr, s.rank) if t is not None)) if x in h1}
    return sorted(out - own)


def _parity_of(use, off):
    """The parity use ``use`` (0-based) of a barrier must name: it waits for phase ``use - off``."""
    return (use + off) & 1


def _straight(chk, w, off, case, uses):
    want = _parity_of(uses, off)
    p = w.parity
    r, m = chk.prove(w.pc, (p & 1) == want)
    if r == "proved":
        return "proved", f"use {uses} waits on parity {want} ({case})"
    if r == "unknown":
        return "unknown", f"solver gave no answer within its budget ({chk.budget.seconds:g} solver seconds)"
    if chk.syms(w.pc, p) & chk.env.approx:
        return "unknown", "the parity may differ from the phase it must name, but only for approximated values"
    addr = m.eval(w.addr, model_completion=True).as_long()
    cex = {"rule": MB.PARITY.id, "use": uses, "parity": 1 - want, "expected_parity": want,
           "barrier_address": addr, "location": str(chk.loc(w.instr)), "role": case}
    return ("violated",) + chk.with_params(
        f"mbarrier.try_wait.parity at {chk.loc(w.instr)} is use {uses} of the barrier at shared address {addr:#x} "
        f"and names parity {1 - want}, but it must wait on parity {want} ({case})"
        + _consequence(1 - want, off, uses), cex, m)

def _consequence(p, off, use):
    if off == 0 and use == 0 and p == 1:
        return ": on a fresh barrier (phase 0 in progress) parity 1 returns at once, before the phase completes"
    if off == 0:
        return ": the wait returns before the phase it must wait for completes"
    return ": the wait waits for a phase one ahead of the one released for it (a hang)"

def _loop(chk, w, off, case, pre=()):
    """A wait in one loop; ``pre``: the straight-line waits of the same ring before the loop
    (``_before_loop``), executions ``0 .. m-1`` of it, iteration ``k`` being execution ``m + k``."""
    info, k = w.loops[-1]
    variant = chk.ex.loop_syms.get(id(info), set())
    used = chk.syms(w.addr, w.parity)
    if used & variant:
        return "unknown", ("the barrier address or parity depends on a value the loop summary does not track ("
                           + ", ".join(sorted(used & variant))[:120] + ")")
    j = z3.BitVec(f"{k}~earlier", 64)
    earlier = mk_and(chk.in_range(info, k, k), z3.ULT(j, k), w.pc)  # ran in every iteration before
    if chk.syms(w.pc) & variant or (str(k) in chk.syms(w.pc)
                                     and chk.prove(earlier, z3.substitute(w.pc, (k, j)))[0] != "proved"):
        return "unknown", (f"the wait may skip an iteration of loop {info.name} before one it runs in: its "
                           "uses of a barrier are not counted by the iteration")
    a, p = w.addr, w.parity
    d_found = None
    for d in range(1, MAX_REUSE + 1):
        hyp = mk_and(chk.in_range(info, k, k), chk.in_range(info, k, k + d), w.pc)
        r, _ = chk.prove(hyp, chk.shift(a, k, d) == a)
        if r == "proved":
            d_found = d
            break
    if d_found is None:
        return "unknown", f"no reuse distance of the barrier address within {MAX_REUSE} iterations was proved"
    d = d_found
    if d > 1:  # no shorter repeat: one query over every distance 1 <= e < d
        e = z3.BitVec(f"{k}~shorter", 64)
        hyp = mk_and(chk.in_range(info, k, k), chk.in_range(info, k, k + e), z3.ULE(1, e), z3.ULT(e, d))
        r, _ = chk.prove(hyp, chk.shift(a, k, e) != a)
        if r != "proved":
            return "unknown", f"the barrier address repeats every {d} iterations but not only then"
    if pre:
        res = _first_round_after(chk, w, off, case, pre, d)
        if res is not None:
            return res
    # the first use of each barrier: iterations 0 .. d-1
    hyp = mk_and(chk.in_range(info, k, k), z3.ULT(k, z3.BitVecVal(d, 64)), w.pc)
    r, m = ("proved", None) if pre else chk.prove(hyp, (p & 1) == off)  # (with ``pre``: decided above)
    if r == "unknown":
        return "unknown", f"solver gave no answer within its budget ({chk.budget.seconds:g} solver seconds)"
    if r == "cex":
        k0, m = _earliest(chk, hyp, (p & 1) != off, k, m.eval(k, model_completion=True).as_long(), m)
        approx = (chk.syms(hyp, p) & chk.env.approx) - {str(k)}
        if approx or not (info.exact or _reached(chk, info, k, w, 0, k0)):
            why = ("values the encoding approximates" if approx else
                   f"iteration {k0} of loop {info.name} is not known to be reached")
            return "unknown", (f"the first use (iteration {k0}) may name parity {1 - off}, but the "
                               f"counterexample involves {why}")
        addr = m.eval(a, model_completion=True).as_long()
        cex = {"rule": MB.PARITY.id, "loop": info.name, "reuse_distance": d, "iterations": [k0],
               "use": 0, "barrier_address": addr, "parity": [1 - off], "expected_parity": off,
               "location": str(chk.loc(w.instr)), "role": case}
        return ("violated",) + chk.with_params(
            f"mbarrier.try_wait.parity at {chk.loc(w.instr)} in iteration {k0} of loop {info.name} is the first "
            f"use of the barrier at shared address {addr:#x} (reuse distance {d}) and names parity {1 - off}, but "
            f"it must wait on parity {off} ({case})" + _consequence(1 - off, off, 0), cex, m)
    hyp = mk_and(chk.in_range(info, k, k), chk.in_range(info, k, k + d), w.pc, chk.shift(w.pc, k, d))
    goal = (chk.shift(p, k, d) & 1) != (p & 1)
    r, m = chk.prove(hyp, goal)
    if r == "proved" and pre:
        return "proved", (f"iteration k of loop {info.name} is execution {len(pre)} + k of the ring it shares with "
                          f"the waits at {', '.join(str(chk.loc(h.instr)) for h in pre)} before the loop: iterations "
                          f"0 .. {d - 1} each name the phase of its barrier's use after those waits ({case}), "
                          f"flipping every {d} iterations")
    if r == "proved":
        return "proved", (f"first use parity {off} ({case}), flipping every {d} iterations of loop "
                          f"{info.name}")
    if r == "unknown":
        return "unknown", f"solver gave no answer within its budget ({chk.budget.seconds:g} solver seconds)"
    k0 = m.eval(k, model_completion=True).as_long()
    approx = (chk.syms(hyp, goal) & chk.env.approx) - {str(k)}
    reached = info.exact or _reached(chk, info, k, w, k0, d)
    if not approx and not reached and k0 >= d:
        # the solver's iteration may lie past what can be shown reached: the first round's
        r2, m2 = chk.prove(mk_and(hyp, z3.ULT(k, z3.BitVecVal(d, 64))), goal)
        if r2 == "cex":
            k2 = m2.eval(k, model_completion=True).as_long()
            if _reached(chk, info, k, w, k2, d):
                m, k0, reached = m2, k2, True
    cex = {"rule": MB.PARITY.id, "loop": info.name, "reuse_distance": d,
           "iterations": [k0, k0 + d],
           "barrier_address": m.eval(a, model_completion=True).as_long(),
           "parity": [m.eval(p & 1, model_completion=True).as_long(),
                      m.eval(chk.shift(p, k, d) & 1, model_completion=True).as_long()],
           "location": str(chk.loc(w.instr)), "role": case}
    if approx or not reached:
        why = ("values the encoding approximates" if approx else
               f"iteration {k0 + d} of loop {info.name} is not known to be reached")
        return "unknown", (f"parity may not flip (iterations {k0} and {k0 + d}), but the counterexample "
                           f"involves {why}")
    return ("violated",) + chk.with_params(
        f"mbarrier.try_wait.parity at {chk.loc(w.instr)} waits on the barrier at shared address "
        f"{cex['barrier_address']:#x} in iterations {k0} and {k0 + d} of loop {info.name} (reuse distance {d}) "
        f"with the same parity {cex['parity'][0]}: the second wait names an already completed phase (or two "
        "phases ahead)", cex, m)


def _before_loop(chk, w, waits):
    """The straight-line waits before the loop of the one-loop wait ``w`` that its threads may run on
    its barriers (CUTLASS's consumer in a kernel without a tile loop: the first k-tile's wait before
    the k loop): executions of the same ring, counted by ``_first_round_after``."""
    return [h for h in waits if not h.loops and chk.seq(h) < chk.seq(w) and _may_share_ring(chk, w, h)]


def _may_share_ring(chk, w, h):
    """The blocking wait ``h`` (barrier and parity understood) may run in a thread of ``w`` on one of
    ``w``'s barriers: a candidate for an earlier execution of ``w``'s ring."""
    return (h.instr.blocking and h.parity is not None and h.addr is not None and chk.may_share_thread(w, h)
            and chk.may_alias(w, h))


def _earliest(chk, hyp, bad, k, k0, m):
    """``(iteration, model)``: the earliest iteration below ``k0`` at which ``bad`` holds under
    ``hyp``, else ``k0`` and its model ``m``. A counterexample names the first iteration that goes
    wrong, not whichever one the solver's model picked."""
    for j in range(k0):
        r, mj = chk.solve([hyp, bad, k == j])
        if r == "sat":
            return j, mj
    return k0, m


def _first_round_after(chk, w, off, case, pre, d):
    """Iterations ``0 .. d-1`` of the one-loop wait ``w`` after the straight-line waits ``pre`` of
    its threads (each run once before the loop by every thread running ``w``): iteration ``kc`` is
    use ``c`` of its barrier, ``c`` the waits of ``pre`` on that barrier (no earlier iteration uses
    it: the reuse distance is ``d``), so it must name parity ``(c + off) mod 2``. None when every
    one does; else the outcome."""
    info, k = w.loops[-1]
    for h in pre:
        if not chk.every_waiter_runs(w, h):
            return "unknown", (f"the threads waiting here need not all wait at {chk.loc(h.instr)} before the loop: "
                               "its uses of the barrier are not counted")
    for kc in range(d):
        kv = z3.BitVecVal(kc, 64)
        hyp = z3.substitute(mk_and(chk.in_range(info, k, k), w.pc), (k, kv))
        a = z3.substitute(w.addr, (k, kv))
        c = 0
        for h in pre:
            same = chk.matches(a, h.addr, hyp)
            if same is None:
                return "unknown", (f"cannot tell whether iteration {kc} of loop {info.name} waits on the barrier of "
                                   f"the wait at {chk.loc(h.instr)} before the loop")
            c += same == "same"
        want = _parity_of(c, off)
        p = z3.substitute(w.parity, (k, kv))
        r, m = chk.prove(hyp, (p & 1) == want)
        if r == "proved":
            continue
        if r == "unknown":
            return "unknown", f"solver gave no answer within its budget ({chk.budget.seconds:g} solver seconds)"
        approx = (chk.syms(hyp, p) & chk.env.approx) - {str(k)}
        if approx or not (info.exact or _reached(chk, info, k, w, 0, kc)):
            why = ("values the encoding approximates" if approx else
                   f"iteration {kc} of loop {info.name} is not known to be reached")
            return "unknown", (f"iteration {kc} (use {c} of its barrier) may name parity {1 - want}, but the "
                               f"counterexample involves {why}")
        addr = m.eval(a, model_completion=True).as_long()
        cex = {"rule": MB.PARITY.id, "loop": info.name, "reuse_distance": d, "iterations": [kc], "use": c,
               "execution": len(pre) + kc, "barrier_address": addr, "parity": [1 - want], "expected_parity": want,
               "location": str(chk.loc(w.instr)), "role": case}
        return ("violated",) + chk.with_params(
            f"mbarrier.try_wait.parity at {chk.loc(w.instr)} in iteration {kc} of loop {info.name} is execution "
            f"{len(pre) + kc} of the ring it shares with the waits at {', '.join(str(chk.loc(h.instr)) for h in pre)} "
            f"before the loop, use {c} of the barrier at shared address {addr:#x} (reuse distance {d}), and names "
            f"parity {1 - want}, but it must wait on parity {want} ({case})" + _consequence(1 - want, off, c), cex, m)
    return None


def _reached(chk, info, k, w, k0, d):
    """Iterations k0..k0+d of ``info`` run whenever iteration k0's site runs."""
    if info.cont_pc is None:
        return False
    variant = chk.ex.loop_syms.get(id(info), set())
    if chk.syms(info.cont_pc) & variant:
        return False
    k0v = z3.BitVecVal(k0, 64)
    goal = mk_and(*[z3.substitute(info.cont_pc, (k, z3.BitVecVal(k0 + j, 64))) for j in range(d)])
    r, _ = chk.prove(z3.substitute(w.pc, (k, k0v)), goal)
    if r != "proved":
        return False
    r, _ = chk.solve([z3.substitute(w.pc, (k, k0v))])
    return r == "sat"



# ---------------------------------------------------------------------- nested loops (ring state)
def _strengthened(chk, subst):
    """``chk`` with every site's terms under ``subst`` (havocked loop-head registers replaced by
    their proved ring forms, true in every reachable state): the waiting role and the aliasing
    of barriers are then decided for the ring positions the loops actually reach."""
    ck = copy.copy(chk)
    ck.memo = {}
    ck.originals = {}
    sites = []
    for s in chk.sites:
        kw = {f: z3.substitute(getattr(s, f), *subst) for f in ("addr", "pc", "count", "tx", "parity", "size", "uses")
              if getattr(s, f) is not None}
        if s.counts:
            kw["counts"] = {g: z3.substitute(c, *subst) for g, c in s.counts.items()}
        t = dataclasses.replace(s, **kw)
        ck.originals[id(s)] = t
        sites.append(t)
    ck.sites = sites
    return ck


def _nested(chk, w, off, case, ring):
    """A wait in an inner loop nested in an outer one, its ring proved (:mod:`.ring`): the n-th
    execution of the wait (``n`` counted over both loops) uses barrier ``A[n mod d]`` (``d``
    distinct barriers) for the ``(n div d)``-th time, so it must name parity
    ``((n div d) + offset) mod 2``. The ring gives the address and parity of every execution as
    ``P``-periodic tables; comparing them with the required sequence over ``lcm(P, 2d)``
    executions decides all of them."""
    (L0, k0), (L1, k1) = w.loops
    seq, P = ring.addresses, ring.period
    if not ring.determined:
        return "unknown", "the wait's barrier and parity are not proved to be functions of the ring position"
    d = _reuse_distance(seq)
    if d is None:
        return "unknown", ("the barrier addresses of the wait's executions do not cycle through distinct barriers "
                           f"(period at most {MAX_REUSE}) from the first execution on")
    span = P * 2 * d // math.gcd(P, 2 * d)
    n0 = ring.first  # the wait's first execution is the ring's execution n0 (after the hoisted waits)
    if n0 + span > len(seq):
        return "unknown", f"the ring period {P} and the phase period {2 * d} repeat only after {span} executions"
    want = [_parity_of(n // d, off) for n in range(n0 + span)]
    over = (f"the waits at {', '.join(str(chk.loc(h.instr)) for h in ring.hoisted)} and here, "
            if ring.hoisted else "")
    ringdesc = (f"the n-th execution (counted over {over}loops {L0.name} and {L1.name}) uses barrier "
                f"{', '.join(hex(x) for x in seq[:d])}[n mod {d}] for the (n div {d})-th time")
    bad = next((n for n in range(n0, n0 + span) if ring.parities[n] != want[n]), None)
    if bad is None:
        return "proved", (f"first use parity {off} ({case}), flipping every {d} executions: {ringdesc}; the ring "
                          f"registers are periodic in n (period {P}), proved by induction at the first execution, "
                          "across each inner and each outer iteration")
    # the bad execution in the outer loop's first iteration is inner iteration ``bad - n0`` (n == n0 + k1 there)
    nb = z3.BitVecVal(bad - n0, 64)
    sub = [(k0, z3.BitVecVal(0, 64)), (k1, nb)]
    hyp = z3.substitute(mk_and(chk.ranges(w.loops), w.pc, ring.inv), *sub)
    r, m = chk.solve([hyp])
    fixed = {str(h) for h, _ in ring.substitution}
    ghosts = {str(L.havocs[g]) for L in (L0, L1) for g in chk.ex.ghosts.values() if g in (L.havocs or {})}
    approx = (chk.syms(hyp) & chk.env.approx) - fixed - ghosts - {str(k0), str(k1)}
    use = bad // d
    if r == "sat" and L1.exact and not approx:
        addr = seq[bad]
        cex = {"rule": MB.PARITY.id, "loops": [L0.name, L1.name], "iterations": [0, bad - n0], "execution": bad,
               "use": use, "barrier_address": addr, "parity": ring.parities[bad], "expected_parity": want[bad],
               "reuse_distance": d, "location": str(chk.loc(w.instr)), "role": case}
        return ("violated",) + chk.with_params(
            f"mbarrier.try_wait.parity at {chk.loc(w.instr)} in iteration 0 of loop {L0.name} and iteration {bad - n0} "
            f"of loop {L1.name} is use {use} of the barrier at shared address {addr:#x} ({ringdesc}) and names "
            f"parity {ring.parities[bad]}, but it must wait on parity {want[bad]} ({case})"
            + _consequence(ring.parities[bad], off, use), cex, m)
    why = ("it is not reached in the first iteration of loop " + L0.name if r == "unsat" else
           "its reachability involves approximated values" if r == "sat" else "the solver gave no answer")
    return "unknown", (f"{ringdesc}; execution {bad} (use {use} of its barrier) names parity {ring.parities[bad]} "
                       f"instead of {want[bad]}, but {why}")


# ---------------------------------------------------------------------- waits before the inner loop
def _hoisted_waits(chk, waits):
    """id(nested wait) -> the waits of the same ring in its outer loop only, before its inner
    loop (program order): CUTLASS's consumer waits for the first k-tile of a tile before the k loop
    (its prologue MMA) and for the others in it, advancing one ring state after each. Those of its
    threads that may wait on its barriers there."""
    out = {}
    for w in waits:
        if len(w.loops) != 2 or not w.instr.blocking or w.parity is None or w.addr is None:
            continue
        k0 = str(w.loops[0][1])
        hs = [h for h in waits if len(h.loops) == 1 and str(h.loops[0][1]) == k0 and chk.seq(h) < chk.seq(w)
              and _may_share_ring(chk, w, h)]
        if hs:
            out[id(w)] = sorted(hs, key=chk.seq)
    return out


def _hoisted(chk, ck, h, j, w, ring, off, case):
    """The ring's wait ``h`` before the inner loop of the nested wait ``w``, ``j`` of the ring's
    waits before it in each outer iteration: with the ring proved (:func:`.ring.prove_ring`, the
    outer head at ring position ``u0``, its count ``G``), its execution is the ring's execution
    ``G + j``, so it must use barrier ``A[(G + j) mod P]`` and name parity ``p[(G + j) mod P]`` of the
    ring's tables, which ``_nested`` compares with the phases every execution must name."""
    (L0, k0), = h.loops
    L1 = w.loops[1][0]
    P, seq, u0 = ring.period, ring.addresses, ring.u0
    d = _reuse_distance(seq)
    if d is None or not ring.determined:
        return "unknown", f"the ring of {chk.loc(w.instr)} has no barrier sequence for it to follow"
    others = {id(ck.site_of(x)) for x in ring.hoisted if x is not h} | {id(ck.site_of(w))}
    uses, why = ck.earlier_uses(ck.site_of(h), counted=others)
    if uses is None or uses:
        return "unknown", why or f"its threads use its barrier {uses} times before it outside the ring"
    base = mk_and(chk.ranges(h.loops), h.pc)
    r, _ = chk.prove(base, ring.role)
    if r != "proved":
        return "unknown", f"the threads waiting here are not shown to be those waiting at {chk.loc(w.instr)}"
    g0 = z3.Sum(*[L0.head_regs[g][0] for g in ring.ghosts])  # the ring count at the outer head
    n_h = sum_counts(h, ring.ghosts)
    if n_h is None:
        return "unknown", "the ring count is not tracked at the wait"
    pos = z3.URem(u0 + j, z3.BitVecVal(P, 8)) if j else u0
    atab, ptab = seq[:P], ring.parities[:P]
    hyp = mk_and(base, ring.role, z3.ULT(u0, P), ring.outer)
    goal = mk_and(n_h == g0 + j, h.addr == select(atab, pos, 32), (h.parity & 1) == select(ptab, pos, 32))
    r, _ = chk.prove(hyp, goal)
    desc = (f"before loop {L1.name}: execution G + {j} of the ring of {chk.loc(w.instr)} (G: the ring count at "
            f"the head of loop {L0.name})")
    if r == "proved":
        # (the ring's parities are those every execution must name: ``_nested`` decides it for the
        # ring's tables, and the obligation is proved only with that)
        return "proved", (f"{desc}, so barrier {', '.join(hex(x) for x in seq[:d])}[(G + {j}) mod {d}] and parity "
                          f"((G + {j}) div {d} + {off}) mod 2, as the ring's tables give")
    if r == "unknown":
        return "unknown", f"{desc}; solver gave no answer within its budget ({chk.budget.seconds:g} solver seconds)"
    # the first of them, in iteration 0 of the outer loop, is the ring's first execution: use 0 of its
    # barrier (no earlier use by its threads outside the ring)
    z = [(k0, ZERO)]
    a0, p0 = z3.simplify(z3.substitute(h.addr, *z)), z3.simplify(z3.substitute(h.parity & 1, *z))
    want, use = _parity_of(j // d, off), j // d
    n_first = z3.simplify(z3.substitute(n_h, *z))
    if j == 0 and z3.is_bv_value(n_first) and n_first.as_long() == 0 and z3.is_bv_value(a0) \
            and z3.is_bv_value(p0) and a0.as_long() == seq[0] and p0.as_long() != want:
        hyp0 = z3.substitute(mk_and(base, ring.role), *z)
        r0, m = chk.solve([hyp0])
        ghosts = {str(L.havocs[g]) for L in (L0, L1) for g in ring.ghosts if g in (L.havocs or {})}
        approx = (chk.syms(hyp0) & chk.env.approx) - ghosts - {str(k0)}
        if r0 == "sat" and not approx:
            q = p0.as_long()
            cex = {"rule": MB.PARITY.id, "loops": [L0.name], "iterations": [0], "execution": j, "use": use,
                   "barrier_address": seq[j], "parity": q, "expected_parity": want, "reuse_distance": d,
                   "location": str(chk.loc(h.instr)), "role": case}
            return ("violated",) + chk.with_params(
                f"mbarrier.try_wait.parity at {chk.loc(h.instr)} in iteration 0 of loop {L0.name} (before loop "
                f"{L1.name}) is execution {j} of the ring it shares with {chk.loc(w.instr)} and use {use} of the "
                f"barrier at shared address {seq[j]:#x}, and names parity {q}, but it must wait on parity {want} "
                f"({case})" + _consequence(q, off, use), cex, m)
    return "unknown", (f"{desc} must use barrier {', '.join(hex(x) for x in seq[:d])}[(G + {j}) mod {d}] and the "
                       "ring's parity there, which is not proved")


#: solver units one tail query may spend (``_tail``): with symbolic trip counts 4-9 million a wait,
#: which would eat the obligation's budget (the launch's values are then tried); with the launch's
#: trip counts 0.1-2.7 million (CUTLASS's GEMMs, the zoo's persistent pipeline) -- and up to three
#: times what one process took in another, where z3 numbers the terms otherwise: the proof the
#: verdict rests on gets ``TAIL_UNITS_CONCRETE``
TAIL_UNITS = 3_000_000
TAIL_UNITS_CONCRETE = 12_000_000


def _reuse_distance(seq):
    """The least ``d`` such that executions cycle through ``d`` distinct barriers, or None."""
    return next((d for d in range(1, MAX_REUSE + 1) if len(set(seq[:d])) == d
                 and all(seq[i] == seq[i + d] for i in range(len(seq) - d))), None)


# ---------------------------------------------------------------------- after the loops (the ring's tail)
def _tail(chk, w, rings, tails, decide=True):
    """A wait after the loops whose threads also wait on its barrier in two nested loops: a
    CUTLASS producer's tail (``load_tail``), which waits once more on each stage's empty barrier,
    going on from the ring state the loops left. None when no wait in loops shares its threads and
    barrier (the straight-line count applies), "skip" when ``decide`` is off (the obligation is
    already unknown, and a tail wait is never found violated) and its threads wait in loops
    before it, else the outcome.

    With the nested wait ``v``'s ring proved (``_nested``: its n-th execution uses barrier
    ``A[n mod d]`` for the ``(n div d)``-th time, the first use naming phase offset ``off``), a wait
    after the loops, preceded by ``j`` such tail waits of its threads, is execution ``E = G + j``
    of the same ring, ``G`` the thread's executions of ``v`` before it (the ghost count of ``v``
    at the wait): it must use barrier ``A[E mod d]`` and name parity ``((E div d) + off) mod 2``.
    Proved for every ``G`` (as one query over ``E mod lcm(P, 2d)``), with the loop-carried
    registers the wait reads in their ring forms (``Ring.substitution``) and the count at the
    last inner-loop head the loops left from tied to its entry (``Ring.count_at_head``)."""
    mates = [v for v in chk.sites if v.kind == "wait" and v is not w and chk.seq(v) < chk.seq(w)
             and chk.may_share_thread(w, v)]
    if not any(v.loops for v in mates):
        return None
    if not decide:  # (skipped before any aliasing query: skipping a wait never makes a proof)
        return "skip"
    nested = [v for v in mates if v.loops and chk.may_alias(w, v)]
    if not nested:
        return None
    v = nested[0]
    if len(nested) > 1 or id(v) not in rings:
        why = ("its ring is not proved" if len(nested) == 1 and len(v.loops) == 2 else
               "uses are counted per wait site only")
        return "unknown", f"the same threads also wait on that barrier at {chk.loc(v.instr)}: {why}"
    ring, off, d, ck = rings[id(v)]
    # the ring's executions after the loops before this one: the tails proved so far (whichever
    # barrier they use) of the threads that run this wait; an earlier wait on this barrier that is
    # not one of them is a use the count leaves out
    before = [x for x in chk.sites if id(x) in tails.get(id(v), ()) and chk.may_share_thread(w, x)]
    # (an earlier tail of the count is one whatever barrier it names: no aliasing query for it)
    stray = [x for x in mates if not x.loops and x not in before and chk.may_alias(w, x)] + \
        [x for x in before if not chk.every_waiter_runs(w, x)]
    if stray:
        return "unknown", (f"cannot count the earlier wait at {chk.loc(stray[0].instr)} as an execution of the "
                           f"ring of {chk.loc(v.instr)} by the same threads")
    ghost = chk.ex.ghosts.get(id(v.instr))
    ws = ck.site_of(w)
    G = (ws.counts or {}).get(ghost)
    if G is None or ws.addr is None or ws.parity is None:
        return "unknown", f"its threads' executions of the wait at {chk.loc(v.instr)} are not counted here"
    P, seq = ring.period, ring.addresses
    span = P * 2 * d // math.gcd(P, 2 * d)
    if span > 255:
        return "unknown", f"the ring period {P} and the phase period {2 * d} repeat only after {span} executions"
    (L0, k0), (L1, k1) = v.loops
    if L0.kx is None or L1.kx is None:
        return "unknown", "the iterations the loops are left in are not known"
    j = len(before)
    side = z3.substitute(z3.substitute(ring.count_at_head, (k1, L1.kx)), (k0, L0.kx))
    side = z3.substitute(side, *ring.substitution)
    # the residues as small variables with their quotients (``x == m*q + u``, no wrap-around:
    # counts stay below 2**63, iterations below 2**31 as the executor assumes): linear terms,
    # where 64-bit remainders would make z3 build a divider for every one
    defs, pos = [], []
    for n, (x, mod) in enumerate([(L.havocs[ghost], P) for L in (L0, L1)] + [(G + j, span)]):
        u, q = z3.BitVec(f"tail.u{n}", 8), z3.BitVec(f"tail.q{n}", 64)
        defs += [z3.ULT(u, mod), z3.ULT(q, z3.BitVecVal((1 << 63) // mod, 64)),
                 x == q * mod + z3.ZeroExt(56, u)]
        pos.append((_pos(x, mod), u))
    e = pos.pop()[1]
    want_a = [seq[i % d] for i in range(span)]
    want_p = [_parity_of(i // d, off) for i in range(span)]  # (2d divides span)
    goal = mk_and(ws.addr == select(want_a, e, 32), (ws.parity & 1) == select(want_p, e, 32))
    hyp = z3.substitute(mk_and(ws.pc, side), *pos)
    goal = z3.substitute(goal, *pos)
    env = chk.env
    free = {p.name for t, p in env.params.values() if not z3.is_bv_value(t)
            and not {p.name, p.source_name} & chk.ex.address_params}  # the scalar parameters left symbolic
    units = TAIL_UNITS if chk.syms(hyp, goal) & free else TAIL_UNITS_CONCRETE
    with chk.budget.capped(units):
        r, m = ck.prove(mk_and(hyp, *defs), goal)
    desc = (f"execution G + {j} of the ring of {chk.loc(v.instr)} (G: the thread's executions of that wait before "
            f"it), so barrier {', '.join(hex(x) for x in seq[:d])}[(G + {j}) mod {d}] and parity "
            f"((G + {j}) div {d} + {off}) mod 2")
    if r == "proved":
        tails.setdefault(id(v), []).append(id(w))
        return "proved", f"after the loops: {desc}"
    if r == "unknown":
        return "unknown", (f"after the loops it must be {desc}; the solver gave no answer within {units:,} "
                           "units (symbolic trip counts make the count's residue hard to follow)")
    gv = m.eval(G, model_completion=True).as_long()
    got_a = m.eval(ws.addr, model_completion=True).as_long()
    got_p = m.eval(ws.parity & 1, model_completion=True).as_long()
    i = (gv + j) % span
    # the model's count rests on loop-carried values the loop summaries havoc: a state it may not reach
    return "unknown", (f"after the loops it must be {desc}, but for G = {gv} it names barrier {got_a:#x} and parity "
                       f"{got_p} instead of {want_a[i]:#x} and {want_p[i]}; the counterexample rests on loop-carried "
                       "values the summaries havoc, which the run decides")
