"""Ring-state invariants of a wait inside two nested loops, for the parity obligation
(:mod:`.parity`): a persistent tile loop around a k loop with the ring state (stage index and
phase bit) carried across both, as CUTLASS's sm90 ``PipelineState`` is.

Owns: the closed forms of the loop-carried registers a wait's barrier and parity are computed
from, as functions of ``n`` -- the number of the thread's earlier executions of that wait (a
ghost register the symbolic run carries, :mod:`.sites`) -- and their proof by induction over
both loops. The forms are guessed by running the inner loop's transition on concrete values
from the first execution: each register is ``T_r[n mod P]`` for a table ``T_r`` (``P`` at most
64, the same for all of them, the ring from the first execution on), and then proved with z3 for
all parameter values, the ring position ``n mod P`` abstracted as a small number ``u < P``
whose successor is ``u + 1`` wrapped at ``P`` (the ghost count is proved to advance by one):

* first execution: both loops in iteration 0;
* inner step: from the head of iteration ``k1`` of the inner loop to the head of ``k1 + 1``;
* outer step: from the head of iteration ``k0`` of the outer loop (the inner loop not yet
  entered) to the head of ``k0 + 1``, given the forms at the head of the inner loop's last
  iteration (``kx``);

plus ``n == k1`` in the outer loop's iteration 0 (the wait runs once per inner iteration),
which makes a counterexample found there a reachable execution, and ``n <= k0 * 2**31 + k1``
(iterations are bounded by 2**31, as the executor assumes), so ``n`` never wraps around. With the forms proved, the
loop heads' havocked registers may be replaced by their forms (``substitution``) in every
site's terms: each reachable state satisfies them.

PTX ISA (9.x): §9.7.13.15.4 phase of the mbarrier object, §9.7.13.15.16 try_wait.parity.
"""
from __future__ import annotations

from dataclasses import dataclass

import math

import z3

from kverify.symbolic import mk_and

from .sites import SAMPLES

ZERO = z3.BitVecVal(0, 64)


@dataclass
class Ring:
    """The proved forms of one nested wait."""

    period: int  # P: every ring register is T_r[n mod P]
    tables: dict  # register -> [value at position 0 .. P-1]
    n: object  # the wait's execution count (BV64 term at the wait)
    inv: object  # the invariant at the wait's inner-loop head (z3 Bool, over n mod P)
    addresses: list  # barrier address of executions 0, 1, ... (simulated in the first outer iteration)
    parities: list  # parity operand (mod 2) of executions 0, 1, ...
    determined: bool  # the wait's address and parity are proved to be A[n mod P], p[n mod P]
    substitution: list  # (havocked head value, its form): valid in every reachable state
    count_at_head: object  # the wait's count at the inner head (k0, k1): its entry count + k1 (z3 Bool)


def _select(vals, u, width):
    out = z3.BitVecVal(vals[-1], width)
    for j in range(len(vals) - 2, -1, -1):
        out = z3.If(u == j, z3.BitVecVal(vals[j], width), out)
    return out


def _pos(x, P):
    return z3.Extract(7, 0, z3.URem(x, z3.BitVecVal(P, 64)))


def prove_ring(chk, w):
    """``(Ring, None)`` or ``(None, why not)`` for the wait ``w`` in exactly two loops."""
    (L0, k0), (L1, k1) = w.loops
    ghost = chk.ex.ghosts.get(id(w.instr))
    if ghost is None or w.uses is None or L0.havocs is None or L1.havocs is None:
        return None, "the wait's execution count is not tracked through its loops"
    if len(L1.conts) != 1 or not L0.conts:
        return None, f"loop {L1.name} has {len(L1.conts)} continue paths: its ring step is not simulated"
    hr1, hr0 = L1.head_regs, L0.head_regs
    if ghost not in L1.havocs or ghost not in L0.havocs:
        return None, "the wait's execution count is not carried by both loops"
    h1 = {str(h): r for r, h in L1.havocs.items()}
    a, p = w.addr, w.parity
    cregs = L1.conts[0][1]
    # the registers a and p are computed from, closed under the inner loop's step
    rel = {h1[x] for x in chk.syms(a, p) if x in h1} | {ghost}
    while True:
        grow = set(rel)
        for r in rel:
            if r not in cregs:
                return None, f"register {r} is not carried to the next iteration of loop {L1.name}"
            grow |= {h1[x] for x in chk.syms(cregs[r][0]) if x in h1}
        if grow == rel:
            break
        rel = grow
    rel = sorted(rel)
    if len(rel) > 12:
        return None, f"the barrier and parity depend on {len(rel) - 1} loop-carried registers"
    # run the inner step on concrete values from the first execution
    cur = {}
    for r in rel:
        v = z3.simplify(z3.substitute(hr1[r][0], (k0, ZERO), (k1, ZERO)))
        if not z3.is_bv_value(v):
            return None, f"register {r} has no constant value at the first execution"
        cur[r] = v
    seqs = {r: [] for r in rel}
    addrs, pars = [], []
    for j in range(SAMPLES):
        sub = [(k0, ZERO), (k1, z3.BitVecVal(j, 64))] + [(L1.havocs[r], cur[r]) for r in rel]
        av, pv = z3.simplify(z3.substitute(a, *sub)), z3.simplify(z3.substitute(p, *sub))
        if not (z3.is_bv_value(av) and z3.is_bv_value(pv)):
            return None, "the barrier address or parity is not determined by the loop-carried registers"
        addrs.append(av.as_long())
        pars.append(pv.as_long() & 1)
        for r in rel:
            seqs[r].append(cur[r].as_long())
        nxt = {}
        for r in rel:
            v = z3.simplify(z3.substitute(cregs[r][0], *sub))
            if not z3.is_bv_value(v):
                return None, f"the step of register {r} in loop {L1.name} is not determined by the ring registers"
            nxt[r] = v
        cur = nxt
    if seqs[ghost] != list(range(SAMPLES)):
        return None, f"the wait does not run exactly once per iteration of loop {L1.name}"
    ring_regs = [r for r in rel if r != ghost]
    P = 1
    for r in ring_regs + ["addr", "parity"]:
        sq = addrs if r == "addr" else pars if r == "parity" else seqs[r]
        pr = next((q for q in range(1, 65) if all(sq[i] == sq[i + q] for i in range(SAMPLES - q))), None)
        if pr is None:
            return None, (f"{'register ' + r if r in seqs else 'the ' + r} does not cycle with a period of at "
                          "most 64 from the first execution on")
        P = P * pr // math.gcd(P, pr)
    if P > 64:
        return None, f"the ring registers cycle with a common period of {P} (more than 64)"
    tables = {r: seqs[r][:P] for r in ring_regs}
    per = z3.BitVecVal(1 << 31, 64)  # iterations are bounded by 2**31 (symbolic/loops.py K_LIMIT)

    def regs_at(regs, u, only=None):
        cs = [regs[r][0] == _select(t, u, L1.havocs[r].size()) for r, t in tables.items()
              if r in regs and (only is None or r in only)]
        return mk_and(*cs) if cs else z3.BoolVal(True)

    g_entry = z3.substitute(hr1[ghost][0], (k1, ZERO))  # the count when the inner loop starts

    def side1(regs, kk0, kk1):
        g = regs[ghost][0]
        return mk_and(z3.Implies(kk0 == ZERO, g == kk1), z3.ULE(g, kk0 * per + kk1), g == g_entry + kk1)

    def shift(t, L, k, regs):
        pairs = [(k, k + 1)]
        for r, h in L.havocs.items():
            v = regs.get(r)
            if v is not None and v[0] is not None and v[0].sort() == h.sort():
                pairs.append((h, v[0]))
        return z3.substitute(t, *pairs)

    def at(t, **ks):
        return z3.substitute(t, *[({"k0": k0, "k1": k1}[n], v) for n, v in ks.items()])

    def nxt(u):
        return z3.If(u == P - 1, z3.BitVecVal(0, 8), u + 1)

    g1, g0 = hr1[ghost][0], hr0[ghost][0]
    # the part of the wait's path condition that no iteration changes (its role: warp, elected
    # lane, parameters): the invariant is proved for the threads meeting it, the only ones that
    # ever execute the wait
    variant = {str(k0), str(k1)} | {str(h) for L in (L0, L1) for h in L.havocs.values()}
    variant |= set().union(*[chk.ex.loop_syms.get(id(L), set()) for L in (L0, L1)])  # values made per iteration
    todo, fixed = [w.pc], []
    while todo:
        c = todo.pop()
        if z3.is_and(c):
            todo.extend(c.children())
        elif not (chk.syms(c) & variant):
            fixed.append(c)
    role = mk_and(*fixed) if fixed else z3.BoolVal(True)
    rng0 = mk_and(chk.in_range(L0, k0, k0), chk.in_range(L0, k0, k0 + 1))
    rng1 = mk_and(chk.in_range(L1, k1, k1), chk.in_range(L1, k1, k1 + 1), chk.in_range(L0, k0, k0))
    u, u0, ux = z3.BitVec("ring.u", 8), z3.BitVec("ring.u0", 8), z3.BitVec("ring.ux", 8)
    small = mk_and(z3.ULT(u, P), z3.ULT(u0, P), z3.ULT(ux, P))
    # the outer invariant (a predicate of the outer head's state): the state the inner loop
    # would start from is the ring at position u0, its count is the outer head's, the bound
    inv1 = mk_and(regs_at(hr1, u), side1(hr1, k0, k1))
    outer = mk_and(at(regs_at(hr1, u0), k1=ZERO), at(g1, k1=ZERO) == g0,
                   z3.ULE(g0, k0 * per), at(side1(hr1, k0, k1), k1=ZERO))
    goals = [("at the first execution", mk_and(role, at(L0.head_pc, k0=ZERO)), at(z3.substitute(outer, (u0, z3.BitVecVal(0, 8))),
                                                                   k0=ZERO))]
    for pc, regs in L1.conts:
        g_next = shift(g1, L1, k1, regs)
        goals.append((f"from one iteration of loop {L1.name} to the next", mk_and(role, rng1, pc, small, inv1),
                      mk_and(g_next == g1 + 1, z3.substitute(shift(inv1, L1, k1, regs), (u, nxt(u))))))
    last_reached = at(L1.head_pc, k1=L1.kx)
    # the position at the inner loop's last iteration kx is the entry position advanced kx times
    ux_link = ux == z3.Extract(7, 0, z3.URem(z3.ZeroExt(56, u0) + L1.kx, z3.BitVecVal(P, 64)))
    last = z3.Implies(last_reached, mk_and(at(z3.substitute(inv1, (u, ux)), k1=L1.kx), ux_link))
    gx = at(g1, k1=L1.kx)
    for pc, regs in L0.conts:
        g_next = shift(g0, L0, k0, regs)
        u_next = z3.If(z3.And(last_reached, g_next == gx + 1), nxt(ux), u0)
        goals.append((f"from one iteration of loop {L0.name} to the next (over loop {L1.name})",
                      mk_and(role, rng0, pc, small, outer, last),
                      mk_and(z3.Or(g_next == g0, z3.And(last_reached, g_next == gx + 1)),
                             z3.substitute(shift(outer, L0, k0, regs), (u0, u_next)))))
    for where, hyp, goal in goals:
        r, _ = chk.prove(hyp, goal)
        if r == "unknown":
            return None, f"solver gave no answer within its budget ({chk.budget.seconds:g} solver seconds)"
        if r != "proved":
            return None, (f"the ring registers ({', '.join(ring_regs)}) cycle with period {P} within loop "
                          f"{L1.name} from the first execution, but as a function of the wait's execution count "
                          f"they do not hold {where}: the ring position is not carried as one count across "
                          "the loops")
    # the wait's barrier and parity as functions of the ring position
    hyp = mk_and(chk.ranges(w.loops), w.pc, z3.ULT(u, P), inv1)
    determined, _ = chk.prove(hyp, mk_and(a == _select(addrs[:P], u, 32), (p & 1) == _select(pars[:P], u, 32)))
    inv_n = z3.substitute(inv1, (u, _pos(w.uses, P)))
    subst = [(L1.havocs[r], _select(t, _pos(L1.havocs[ghost], P), L1.havocs[r].size())) for r, t in tables.items()]
    # the outer head's registers the inner loop starts from (``mov`` copies, or the ring
    # registers themselves) hold the forms at the outer head's count, for k0 > 0
    one = z3.BitVecVal(1, 64)
    for r, t in tables.items():
        e = z3.simplify(z3.substitute(hr1[r][0], (k1, ZERO), (k0, one)))
        if any(e.eq(h) for h in L0.havocs.values()):
            ok, _ = chk.prove(mk_and(k0 != ZERO, chk.in_range(L0, k0, k0)), at(hr1[r][0], k1=ZERO) == e)
            if ok == "proved":
                subst.append((e, _select(t, _pos(L0.havocs[ghost], P), e.size())))
    return Ring(P, tables, w.uses, inv_n, addrs, pars, determined == "proved", subst, side1(hr1, k0, k1)), None
