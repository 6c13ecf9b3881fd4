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

plus ``n == n0 + k1`` in the outer loop's iteration 0 (the wait runs once per inner iteration;
``n0`` is 0 for a wait counted alone, see below), which makes a counterexample found there a
reachable execution, and ``n <= k0 * (2**31 + n0) + n0 + k1`` (iterations are bounded by 2**31,
as the executor assumes), so ``n`` never wraps around. With the forms proved, the
loop heads' havocked registers may be replaced by their forms (``substitution``) in every
site's terms: each reachable state satisfies them.

A ring may be waited on at several sites by the same threads: CUTLASS's consumer waits for a
tile's first k-tile in the outer loop, before the inner loop, and for the others in it, advancing
one ring state after each. ``n`` is then the sum of the sites' counts (``n0`` of them at the
nested wait's first execution: each wait before the inner loop once), and the outer loop's own
ring registers are forms ``T0_r[n mod P]`` at its head too, guessed by running the outer step on
concrete values (``_outer_tables``) and proved with the rest: the outer invariant says they hold
their forms, and the inner loop starts at position ``n + n0`` (the count ``n`` at the outer head).

PTX ISA (9.x): §9.7.13.15.4 phase of the mbarrier object, §9.7.13.15.16 try_wait.parity.
"""
from __future__ import annotations

from dataclasses import dataclass

import math

import z3

from kverify.symbolic import mk_and, name

from .sites import SAMPLES

ZERO = z3.BitVecVal(0, 64)


@dataclass
class Ring:
    """The proved forms of one nested wait."""

    period: int  # P: every ring register is T_r[n mod P]
    tables: dict  # register -> [value at position 0 .. P-1]
    n: object  # the ring count at the wait (BV64 term: the sum of its sites' counts)
    inv: object  # the invariant at the wait's inner-loop head (z3 Bool, over n mod P)
    addresses: list  # barrier address of the ring's executions 0, 1, ... (the wait's tables by position)
    parities: list  # parity operand (mod 2) of executions 0, 1, ...
    determined: bool  # the wait's address and parity are proved to be A[n mod P], p[n mod P]
    substitution: list  # (havocked head value, its form): valid in every reachable state
    count_at_head: object  # the wait's count at the inner head (k0, k1): its entry count + k1 (z3 Bool)
    first: int = 0  # the ring count at the wait's first execution (the waits before the inner loop: m)
    hoisted: list = ()  # the ring's waits in the outer loop before the inner one, in program order
    ghosts: list = ()  # the ghost registers whose sum is the ring count (the wait's first)
    outer: object = None  # the invariant at the outer head, at ring position ``u0`` (z3 Bool)
    u0: object = None
    role: object = None  # the waiting threads' path condition that no iteration changes (z3 Bool)


def select(vals, u, width):
    """``vals[u]`` for the ring position ``u`` (BV8, below ``len(vals)``): numbers as BVs of
    ``width``, or terms."""
    def v(t):
        return z3.BitVecVal(t, width) if isinstance(t, int) else t

    out = v(vals[-1])
    for j in range(len(vals) - 2, -1, -1):
        out = z3.If(u == j, v(vals[j]), out)
    return out


def _pos(x, P):
    return z3.Extract(7, 0, z3.URem(x, z3.BitVecVal(P, 64)))


def prove_ring(chk, w, hoisted=(), extra=()):
    """``(Ring, None)`` or ``(None, why not)`` for the wait ``w`` in exactly two loops, the waits
    ``hoisted`` (in the outer loop only, before the inner one, in program order) being earlier
    executions of the same ring by the same threads: the ring count is the sum of their counts.
    ``extra``: further registers of the inner loop to give forms too (the stage a consumer
    releases, which trails the one it waits for: CUTLASS's ``smem_pipe_release``)."""
    (L0, k0), (L1, k1) = w.loops
    ghost = chk.ex.ghosts.get(id(w.instr))
    hghosts = [chk.ex.ghosts.get(id(h.instr)) for h in hoisted]
    if ghost is None or None in hghosts or w.uses is None or L0.havocs is None or L1.havocs is None:
        return None, "the wait's execution count is not tracked through its loops"
    if len(L1.conts) != 1 or not L0.conts:
        return None, f"loop {L1.name} has {len(L1.conts)} continue paths: its ring step is not simulated"
    hr1, hr0 = L1.head_regs, L0.head_regs
    if ghost not in L1.havocs or ghost not in L0.havocs:
        return None, "the wait's execution count is not carried by both loops"
    if any(g not in L0.havocs or g in L1.havocs for g in hghosts):
        return None, f"the counts of the waits before loop {L1.name} are not carried by loop {L0.name} alone"
    ghosts = [ghost] + hghosts
    m = len(hoisted)  # the ring's executions before the inner loop, per outer iteration

    def count(regs):  # the ring count: the thread's executions of all its wait sites
        return _total([regs[g][0] for g in ghosts])

    h1 = {name(h): r for r, h in L1.havocs.items()}
    a, p = w.addr, w.parity
    cregs = L1.conts[0][1]
    # the registers a and p are computed from, closed under the inner loop's step
    rel = {h1[x] for x in chk.syms(a, p) if x in h1} | {ghost} | set(extra)
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
    first = [(k0, ZERO), (k1, ZERO)]
    cur = {}
    for r in rel:
        v = z3.simplify(z3.substitute(hr1[r][0], *first))
        if not z3.is_bv_value(v):
            return None, f"register {r} has no constant value at the first execution"
        cur[r] = v
    n0 = z3.simplify(z3.substitute(count(hr1), *first))
    if not z3.is_bv_value(n0) or n0.as_long() > 64:
        return None, f"the ring count at the first execution of the wait in loop {L1.name} is not a small constant"
    n0 = n0.as_long()
    if m and n0 != m:
        return None, (f"the waits before loop {L1.name} do not run exactly once each before its first "
                      f"iteration ({n0} executions for {m} waits)")
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

    def by_pos(sq):  # sample j is the ring's execution n0 + j: the value at ring position u
        return [sq[(u - n0) % P] for u in range(P)]

    tables = {r: by_pos(seqs[r]) for r in ring_regs}
    atab, ptab = by_pos(addrs), by_pos(pars)
    per = z3.BitVecVal(1 << 31, 64)  # iterations are bounded by 2**31 (symbolic/loops.py K_LIMIT)
    # ring executions per outer iteration are fewer than per0 (a power of two: a multiplier by it
    # is a shift for z3)
    per0 = z3.BitVecVal(1 << 31 if not m else 1 << 32, 64)

    def regs_at(regs, u, only=None):
        cs = [regs[r][0] == select(t, u, L1.havocs[r].size()) for r, t in tables.items()
              if r in regs and (only is None or r in only)]
        return mk_and(*cs) if cs else z3.BoolVal(True)

    g_entry = z3.substitute(count(hr1), (k1, ZERO))  # the count when the inner loop starts

    def side1(regs, kk0, kk1):
        g = count(regs)
        return mk_and(z3.Implies(kk0 == ZERO, g == n0 + kk1), z3.ULE(g, kk0 * per0 + m + kk1), g == g_entry + kk1)

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

    def plus(u, j):  # position u advanced j executions
        return z3.URem(u + (j % P), z3.BitVecVal(P, 8)) if j % P else u

    # the outer loop's own ring registers: those the hoisted waits and the inner loop's entry
    # values are computed from, closed under the outer step (only with hoisted waits: without
    # them the inner loop's entry values carry the ring)
    outer_forms, dom = {}, None
    if m:
        outer_forms, dom, why = _outer_tables(chk, w, hoisted, ghosts, tables, P, n0)
        if outer_forms is None:
            return None, why
    g1, g0 = count(hr1), count(hr0)
    role = _role(chk, w)
    rng0 = mk_and(chk.in_range(L0, k0, k0), chk.in_range(L0, k0, k0 + 1))
    rng1 = mk_and(chk.in_range(L1, k1, k1), chk.in_range(L1, k1, k1 + 1), chk.in_range(L0, k0, k0))
    u, u0, ux = z3.BitVec("ring.u", 8), z3.BitVec("ring.u0", 8), z3.BitVec("ring.ux", 8)
    small = mk_and(z3.ULT(u, P), z3.ULT(u0, P), z3.ULT(ux, P))
    # the outer invariant (a predicate of the outer head's state at ring position u0): the
    # outer loop's ring registers hold their forms, the state the inner loop would start from
    # is the ring at position u0 + m, its count is the outer head's plus m, the bound
    inv1 = mk_and(regs_at(hr1, u), side1(hr1, k0, k1))
    own = [hr0[r][0] == select(t, u0, L0.havocs[r].size()) for r, t in outer_forms.items()]
    if dom is not None:
        own.append(z3.Or(*[u0 == x for x in sorted(dom)]))
    outer = mk_and(*own, at(regs_at(hr1, plus(u0, m)), k1=ZERO), at(g1, k1=ZERO) == g0 + m,
                   z3.ULE(g0, k0 * per0), at(side1(hr1, k0, k1), k1=ZERO))
    goals = [("at the first execution", mk_and(role, at(L0.head_pc, k0=ZERO)), at(z3.substitute(outer, (u0, z3.BitVecVal(0, 8))),
                                                                   k0=ZERO))]
    for pc, regs in L1.conts:
        g_next = shift(g1, L1, k1, regs)
        goals.append((f"from one iteration of loop {L1.name} to the next", mk_and(role, rng1, pc, small, inv1),
                      mk_and(g_next == g1 + 1, z3.substitute(shift(inv1, L1, k1, regs), (u, nxt(u))))))
    last_reached = at(L1.head_pc, k1=L1.kx)
    # the position at the inner loop's last iteration kx is the entry position advanced kx times
    # (as a quotient and a residue: linear, where a 64-bit remainder costs z3 a divider)
    qx = z3.BitVec("ring.qx", 64)
    ux_link = mk_and(z3.ZeroExt(56, u0) + m + L1.kx == qx * P + z3.ZeroExt(56, ux),
                     z3.ULT(qx, z3.BitVecVal((1 << 63) // P, 64)))
    last = z3.Implies(last_reached, mk_and(at(z3.substitute(inv1, (u, ux)), k1=L1.kx), ux_link))
    gx = at(g1, k1=L1.kx)
    for pc, regs in L0.conts:
        g_next = shift(g0, L0, k0, regs)
        ran = z3.And(last_reached, g_next == gx + 1)
        u_next = z3.If(ran, nxt(ux), z3.If(g_next == g0 + m, plus(u0, m), u0)) if m else z3.If(ran, nxt(ux), u0)
        went = [g_next == g0, ran] + ([g_next == g0 + m] if m else [])
        goals.append((f"from one iteration of loop {L0.name} to the next (over loop {L1.name})",
                      mk_and(role, rng0, pc, small, outer, last),
                      mk_and(z3.Or(*went), z3.substitute(shift(outer, L0, k0, regs), (u0, u_next)))))
    for where, hyp, goal in goals:
        r, _ = chk.prove(hyp, goal)
        if r == "unknown":
            return None, f"solver gave no answer within its budget ({chk.budget.seconds:g} solver seconds)"
        if r != "proved":
            return None, (f"the ring registers ({', '.join(ring_regs)}) cycle with period {P} within loop "
                          f"{L1.name} from the first execution, but as a function of the "
                          f"{'ring' if m else 'wait'}'s execution count they do not hold {where}: the ring "
                          "position is not carried as one count across the loops")
    # the wait's barrier and parity as functions of the ring position
    hyp = mk_and(chk.ranges(w.loops), w.pc, z3.ULT(u, P), inv1)
    determined, _ = chk.prove(hyp, mk_and(a == select(atab, u, 32), (p & 1) == select(ptab, u, 32)))
    n_w = sum_counts(w, ghosts)
    if n_w is None:
        return None, "the ring count is not tracked at the wait"
    inv_n = z3.substitute(inv1, (u, _pos(n_w, P)))
    # (the hoisted waits' counts are not written in the inner loop)
    n1 = _total([L1.havocs[ghost]] + [z3.substitute(hr1[g][0], (k1, ZERO)) for g in hghosts])
    n0h = _total([L0.havocs[g] for g in ghosts])
    subst = [(L1.havocs[r], select(t, _pos(n1, P), L1.havocs[r].size())) for r, t in tables.items()]
    # (valid for k0 > 0, where the outer head holds the havocked values; positions outside the
    # reached ones never occur)
    subst += [(L0.havocs[r], select(t, _pos(n0h, P), L0.havocs[r].size())) for r, t in outer_forms.items()]
    # the outer head's registers the inner loop starts from (``mov`` copies, or the ring
    # registers themselves) hold the forms at the outer head's count (plus m), for k0 > 0
    one = z3.BitVecVal(1, 64)
    for r, t in tables.items():
        e = z3.simplify(z3.substitute(hr1[r][0], (k1, ZERO), (k0, one)))
        if any(e.eq(h) for h in L0.havocs.values()) and not any(e.eq(L0.havocs[x]) for x in outer_forms):
            ok, _ = chk.prove(mk_and(k0 != ZERO, chk.in_range(L0, k0, k0)), at(hr1[r][0], k1=ZERO) == e)
            if ok == "proved":
                subst.append((e, select(t, _pos(n0h + m, P), e.size())))
    full = [addrs[(n - n0) % P] for n in range(SAMPLES)]
    fullp = [pars[(n - n0) % P] for n in range(SAMPLES)]
    return Ring(P, tables, n_w, inv_n, full, fullp, determined == "proved", subst, side1(hr1, k0, k1), n0,
                list(hoisted), ghosts, outer, u0, role), None


def sum_counts(s, ghosts):
    """The ring count at site ``s``: the thread's executions of the waits ``ghosts`` count, before
    this one (None when one is not tracked there)."""
    cs = [(s.counts or {}).get(g) for g in ghosts]
    return None if any(c is None for c in cs) else _total(cs)


def _total(terms):
    """``terms[0] + terms[1] + ...``, folded from the left (one term: itself)."""
    return sum(terms[1:], terms[0])


def _signed(v):
    x = v.as_long()
    return x - (1 << v.size()) if x >> (v.size() - 1) else x


def _outer_tables(chk, w, hoisted, ghosts, tables, P, n0):
    """The outer loop's ring registers of a ring with waits ``hoisted`` before the inner loop:
    ``(forms, positions, None)`` -- each register as a table over the ring position at the outer
    loop's head, guessed by running the outer step on concrete values from its first iteration
    (the inner loop's trip count a constant there, its last iteration's ring registers given by
    ``tables``), and the positions the outer head reaches -- or ``(None, None, why not)``. Only a
    guess: :func:`prove_ring` proves it by induction."""
    (L0, k0), (L1, k1) = w.loops
    hr0, hr1 = L0.head_regs, L1.head_regs
    h0 = {name(h): r for r, h in L0.havocs.items()}
    gs = set(ghosts)
    need = [t for h in hoisted for t in (h.addr, h.parity)] + [z3.substitute(hr1[r][0], (k1, ZERO)) for r in tables]
    regs0 = {h0[x] for x in chk.syms(*need) if x in h0} - gs
    while True:
        grow = set(regs0)
        for _, cr in L0.conts:
            for r in regs0:
                if r not in cr or cr[r][0] is None or z3.is_bool(cr[r][0]):
                    return None, None, f"register {r} is not carried to the next iteration of loop {L0.name}"
                grow |= {h0[x] for x in chk.syms(cr[r][0]) if x in h0}
        grow -= gs
        if grow == regs0:
            break
        regs0 = grow
    regs0 = sorted(regs0)
    if len(regs0) > 12:
        return None, None, f"the waits before loop {L1.name} depend on {len(regs0)} registers carried by loop {L0.name}"
    role = _role(chk, w)
    cur = {}
    for r in regs0 + ghosts:
        v = z3.simplify(z3.substitute(hr0[r][0], (k0, ZERO)))
        if not z3.is_bv_value(v):
            return None, None, f"register {r} has no constant value at the first iteration of loop {L0.name}"
        cur[r] = v
    seen = {}
    for j in range(2 * P + 2):
        n = sum(cur[g].as_long() for g in ghosts)
        vals = tuple(cur[r].as_long() for r in regs0)
        if n % P in seen:
            if seen[n % P] != vals:
                return None, None, (f"the ring registers of loop {L0.name} ({', '.join(regs0)}) are not a function "
                                    f"of the ring position at its head")
            break
        seen[n % P] = vals
        sub = [(k0, z3.BitVecVal(j, 64))] + [(L0.havocs[r], cur[r]) for r in regs0 + ghosts]
        t = _inner_trips(chk, L1, k1, sub, role)
        if t is None:
            return None, None, (f"the iterations of loop {L1.name} are not a constant in iteration {j} of loop "
                                f"{L0.name}: the ring's step over loop {L0.name} is not simulated")
        entry = {}
        for g in ghosts:
            v = z3.simplify(z3.substitute(hr1[g][0], (k1, ZERO), *sub))
            if not z3.is_bv_value(v):
                return None, None, f"the ring count is not a constant at the entry of loop {L1.name}"
            entry[g] = v.as_long()
        ux = (sum(entry.values()) + max(t, 1) - 1) % P
        kx = z3.BitVecVal(max(t, 1) - 1, 64)
        sub1 = sub + [(L1.havocs[r], z3.BitVecVal(tb[ux], L1.havocs[r].size())) for r, tb in tables.items()]
        sub1.append((L1.havocs[ghosts[0]], z3.BitVecVal(entry[ghosts[0]] + max(t, 1) - 1, 64)))
        if z3.is_const(L1.kx) and not z3.is_bv_value(L1.kx):
            sub1.append((L1.kx, kx))
        outs = set()
        for _, cr in L0.conts:
            if any(r not in cr or cr[r][0] is None or z3.is_bool(cr[r][0]) for r in regs0 + ghosts):
                return None, None, f"the ring registers are not carried to the next iteration of loop {L0.name}"
            nv = {r: z3.simplify(z3.substitute(cr[r][0], *sub1)) for r in regs0 + ghosts}
            bad = next((r for r, v in nv.items() if not z3.is_bv_value(v)), None)
            if bad is not None:
                return None, None, (f"the step of register {bad} in loop {L0.name} is not determined by the ring "
                                    "registers")
            outs.add(tuple(sorted((r, v.as_long()) for r, v in nv.items())))
        if len(outs) != 1:
            return None, None, f"the continue paths of loop {L0.name} step the ring differently"
        cur = {r: z3.BitVecVal(v, hr0[r][0].size()) for r, v in outs.pop()}
    some = next(iter(seen.values()))
    forms = {r: [seen.get(u, some)[i] for u in range(P)] for i, r in enumerate(regs0)}
    return forms, set(seen), None


def _role(chk, w):
    """The part of the wait's path condition that no iteration changes (its role: warp, elected
    lane, parameters): the invariant is proved for the threads meeting it, the only ones that
    ever execute the wait."""
    return invariant_part(chk, w.pc, w.loops)


def variant_names(chk, loops) -> set:
    """Names of the values an iteration of ``loops`` changes: their counters, their head
    registers' havocked values and the symbols made in their bodies."""
    return ({name(k) for _, k in loops} | {name(h) for L, _ in loops for h in L.havocs.values()}
            | set().union(*[chk.ex.loop_syms.get(id(L), set()) for L, _ in loops]))


def invariant_part(chk, pc, loops):
    """The conjuncts of ``pc`` that no iteration of ``loops`` changes (``variant_names``)."""
    variant = variant_names(chk, loops)
    todo, fixed = [pc], []
    while todo:
        c = todo.pop()
        if z3.is_and(c):
            todo.extend(c.children())
        elif not (chk.syms(c) & variant):
            fixed.append(c)
    return mk_and(*fixed) if fixed else z3.BoolVal(True)


#: iterations of the inner loop ``_inner_trips`` follows before it gives up
MAX_INNER = 4096


def _inner_trips(chk, L1, k1, sub, role):
    """How many iterations the inner loop runs from the state ``sub`` (the outer head's registers
    and counter, concrete), for the threads meeting ``role``: its trip count there, or its
    registers run on concrete values until the continue condition fails; None when undecided."""
    if L1.trip is not None:
        trip = z3.simplify(z3.substitute(L1.trip, *sub))
        return max(_signed(trip), 0) if z3.is_bv_value(trip) else None

    def holds(c):
        c = z3.simplify(c)
        if z3.is_true(c) or z3.is_false(c):
            return z3.is_true(c)
        if chk.prove(role, c)[0] == "proved":
            return True
        return False if chk.prove(role, z3.Not(c))[0] == "proved" else None

    hr1 = L1.head_regs
    h1 = {name(h): r for r, h in L1.havocs.items()}
    cpc, cregs = L1.conts[0]
    rel = {h1[x] for x in chk.syms(cpc) if x in h1}
    while True:
        grow = set(rel)
        for r in rel:
            if r not in cregs or cregs[r][0] is None or z3.is_bool(cregs[r][0]):
                return None
            grow |= {h1[x] for x in chk.syms(cregs[r][0]) if x in h1}
        if grow == rel:
            break
        rel = grow
    zero = [(k1, ZERO)]
    entered = holds(z3.substitute(L1.head_pc, *zero, *sub))
    if not entered:
        return 0 if entered is False else None
    cur = {}
    for r in rel:
        v = z3.simplify(z3.substitute(hr1[r][0], *zero, *sub))
        if not z3.is_bv_value(v):
            return None
        cur[r] = v
    for i in range(MAX_INNER):
        si = sub + [(k1, z3.BitVecVal(i, 64))] + [(L1.havocs[r], cur[r]) for r in rel]
        go = holds(z3.substitute(cpc, *si))
        if go is None:
            return None
        if not go:
            return i + 1
        cur = {r: z3.simplify(z3.substitute(cregs[r][0], *si)) for r in rel}
        if not all(z3.is_bv_value(v) for v in cur.values()):
            return None
    return None
