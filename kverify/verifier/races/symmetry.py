"""CTA symmetry: when no CTA can affect another, a few representative CTAs stand for all.

The argument (docs/verdicts.md, "When a few CTAs stand for the grid"): with no cluster, no
distributed shared memory, no asynchronous or mbarrier operation, no strong (atomic, volatile,
relaxed/acquire/release) global access, no synchronization the race encoding does not model, and
the SMT race checker's proof over two symbolic CTAs that no global bytes accessed by one CTA are
written by another, a CTA's run does not depend on any other CTA. What then differs between
CTAs is what depends on ``%ctaid``: which threads reach each barrier, loop decision, trap and
memory access of the symbolic execution (its path condition) and, for barriers, which threads
have exited. Two CTAs whose threads agree on every one of these conditions (thread by thread,
for every loop iteration) take the same control flow. The representatives are the first,
second, second-to-last and last CTA, and then, for as long as z3 finds one, a CTA that disagrees
with every representative chosen so far on some condition for some thread: when it finds none,
every CTA of the grid agrees with a representative on every condition, whatever combination of
``%ctaid`` tests a bug needs (``blockIdx.x == 3`` and ``blockIdx.y == 5`` in one CTA only).

What differs between CTAs must be ``%ctaid`` alone: a barrier, a loop decision, a trap, or
(unless the SMT checker proved shared memory race-free for every value) a shared-memory access
whose condition reads data loaded from memory or a register over-approximated in a loop summary
may go another way in a CTA that was not interpreted, with the same inputs (``if
(flags[blockIdx.x]) ...``), so such a kernel is not reduced; nor one whose shared-memory
addresses depend on ``%ctaid`` while shared memory is not proved race-free. A global access
guarded by data is no obstacle (races between CTAs are proved for every value; memory safety of
the other CTAs is not claimed) -- but an access whose address depends on loaded data is, when the
other CTAs' accesses are not proved in bounds (which CTA goes out of bounds is the data's). Anything not established is ``None``: the caller interprets every
CTA.
"""

from __future__ import annotations

import re
import time

import z3

from kverify.semantics.ir.errors import KernelError
from kverify.semantics.ir.nodes import where
from kverify.symbolic import Substitution, Unsupported
from kverify.symbolic.budget import SolverBudget

from .extents import IN_BOUNDS, NOT_IN_BOUNDS, prove_in_bounds
from .smt import _Checker

MIN_GRID = 8  # smaller grids are interpreted in full
MAX_REPS = 64  # more representatives than this: every CTA is interpreted


def representatives(module, kernel, spec, timeout_s: float = 10.0, prior=None):
    """``(ctas, why)``: the CTA coordinates to interpret and the reason they stand for all,
    or ``(None, why_not)``. ``prior`` is ``(checker, obligations)`` of a race check already
    run for the same launch (``check_races(..., keep=...)``), reused instead of a second one."""
    try:
        spec = spec.for_kernel(kernel)  # the clusters the driver runs (``__cluster_dims__``)
    except KernelError as e:
        return None, f"launch error ({e})"
    g = tuple(spec.grid)
    total = g[0] * g[1] * g[2]
    if getattr(spec, "grid_assumed", False) or total < MIN_GRID:
        return None, "small grid"
    if tuple(spec.cluster) != (1, 1, 1):
        return None, "clusters of more than one CTA"
    if prior is not None:
        c, got = prior
        obs = {o.title: o for o in got}
    else:
        c = _Checker(module, kernel, spec, timeout_s, time.perf_counter())
    try:
        if prior is None:
            obs = {o.title: o for o in c.run()}
    except (Unsupported, z3.Z3Exception) as e:
        return None, f"independence not established ({e})"
    except Exception as e:  # noqa: BLE001 - fail closed
        return None, f"independence not established (internal error {type(e).__name__})"
    glob = obs.get("race-free: global")
    if glob is None or glob.status != "proved" or not hasattr(c, "ex"):
        return None, "independence not established (race-free: global is not proved)"
    ex = c.ex
    if ex.unmodelled_sync or any(ex.reasons.values()):
        return None, "independence not established (synchronization or accesses outside the encoding)"
    for a in ex.accesses:
        if a.space == "global" and (a.strong or a.atomic) and not z3.is_false(z3.simplify(a.pc)):
            return None, "global atomics or strong accesses (counted as inter-CTA communication)"
    env = c.env
    same = _sameness(c, ex)
    varies = _data_dependence(c, ex, obs, same)
    if varies:
        return None, f"control may differ between CTAs beyond %ctaid ({varies})"
    reps = {(0, 0, 0), (g[0] - 1, g[1] - 1, g[2] - 1)}
    reps.update((i % g[0], (i // g[0]) % g[1], i // (g[0] * g[1])) for i in (1, total - 2))
    conds = _conditions(c, ex, obs, same)
    if isinstance(conds, str):
        return None, conds
    at_launch = Substitution(env.values_from(spec))  # the scalar values the interpreter runs with
    conds = [z3.simplify(at_launch(f)) for f in conds]
    conds = [f for f in conds if not (z3.is_true(f) or z3.is_false(f)) and c.symbols(f) & {str(x) for x in env.ctaid}]
    reps = _cover(c, env, conds, reps, same, SolverBudget(timeout_s))
    if reps is None:
        return None, "independence not established (solver budget spent choosing representatives)"
    if len(reps) > MAX_REPS:
        return None, f"too many ctaid-dependent control paths (more than {MAX_REPS} representatives)"
    unproved, suspect = prove_in_bounds(c, spec, timeout_s)
    data = next((a for a in ex.accesses if unproved and a.space in ("global", "shared")
                 and any(not same(n) for n in c.symbols(a.addr))), None)
    if data is not None:  # z3's model CTA stands for no CTA in particular: any may go out of bounds
        return None, (f"memory safety of the CTAs not interpreted is not shown ({unproved}) and the address of "
                      f"the {data.space} access at {where(data.instr)} depends on loaded data")
    if suspect is not None and suspect not in reps:  # a CTA z3 could not keep in bounds: the run decides
        reps = sorted({*reps, suspect})
        if len(reps) > MAX_REPS:
            return None, f"too many ctaid-dependent control paths (more than {MAX_REPS} representatives)"
    return sorted(reps, key=lambda t: (t[2], t[1], t[0])), \
        "no inter-CTA communication (proved); " + (NOT_IN_BOUNDS if unproved else IN_BOUNDS).format(unit="CTAs")


def _conditions(c, ex, obs, same):
    """The path conditions (thread A's terms) on which control flow depends and that mention
    ``%ctaid``: barriers and loop decisions with the threads that exited before them, every
    loop's decision, traps, memory accesses (those guarded by loaded data only where the interpreter's
    shared-memory race check is the evidence: ``_data_dependence`` refuses them); and the values
    two CTAs must agree on: shared- and local-memory addresses and warp collectives' membermasks that
    mention ``%ctaid`` (which bytes a CTA reads before writing them, local bounds, the lanes a
    shuffle names are the run's). Why not, as a string, when the shared-memory addresses depend on
    ``%ctaid`` and shared memory is not proved race-free, a local address is not followed, or a
    membermask reads data."""
    ids = {str(x) for x in c.env.ctaid}
    shared = obs.get("race-free: shared")
    shared_proved = shared is not None and shared.status in ("proved", "vacuous")
    out, seen = [], set()

    def add(pc, data_ok=False):
        if pc is None or z3.is_true(pc) or z3.is_false(pc) or pc.get_id() in seen:
            return
        syms = c.symbols(pc)
        if not syms & ids:
            return
        if data_ok and any(not same(n) for n in syms):
            return  # a global access guarded by data: not a control decision the argument needs
        seen.add(pc.get_id())
        out.append(pc)

    def value(t):  # a value two CTAs must agree on (``_cover``: thread by thread)
        if t.get_id() not in seen and c.symbols(t) & ids:
            seen.add(t.get_id())
            out.append(t)

    for sy in ex.syncs:
        add(sy.pc)
        add(sy.exited)
    for info in ex.loops:
        add(info.cont_pc)
    for t in ex.traps:
        add(t)
    for a in ex.accesses:  # (an access guarded by data matters only to a race check the SMT did not prove)
        add(a.pc, data_ok=a.space != "shared" or shared_proved)
        if a.space == "shared" and c.symbols(a.addr) & ids:
            if not shared_proved:
                return ("the shared-memory addresses depend on %ctaid and race-free: shared is not proved: "
                        "the interpreter's race check of some CTAs does not stand for the others")
            value(a.addr)  # which bytes a CTA reads and writes decides what it reads uninitialized
    for ins, pc, addr in ex.local_sites:  # local memory: bounds and initialization are the run's, per CTA
        if addr is None:
            return f"a local-memory address at {where(ins)} is not followed (it may differ between CTAs)"
        add(pc)
        value(addr)
    for site in ex.masks:  # the lanes a warp collective names (a mask not met is the run's finding)
        ins = site.instr
        add(site.pc)
        for t in site.masks:
            if t is None or any(not same(n) for n in c.symbols(t)):
                return f"the membermask of {ins.opcode} at {where(ins)} is not a function of %ctaid and the launch"
            value(t)
    return out


def _cover(c, env, conds, reps, same, budget, cluster=(1, 1, 1), per_cta=frozenset()):
    """``reps`` grown until every CTA of the grid agrees, thread by thread, with one of them on
    every condition of ``conds``; None when the solver gives no answer. Each round asks z3 for a
    CTA (thread A's ``%ctaid``) that, for every representative, differs from it on some condition
    for some thread (per representative, a fresh copy of the thread's own symbols: ``%tid``, loop
    counters); the per-thread constraints that mention only those symbols (``%tid < %ntid``) hold
    for each copy. Constraints left out only admit more differences: more representatives, never
    fewer. With clusters of more than one CTA, ``reps`` are cluster indices and a CTA is compared
    with the CTA of the same rank in each representative cluster. A condition is a predicate or
    a value (a barrier's address, a tx count): a value must be equal. A symbol of ``per_cta`` gets
    a copy per side, with the constraints that mention it: z3 may choose the two copies apart
    only where those constraints let it (more representatives, never fewer)."""
    if not conds:
        return reps
    ids = {str(x) for x in env.ctaid}
    consts = {}
    for a, _ in env.pairs:
        consts[a.decl().name()] = a
    # ``per_cta``: symbols that are values of the CTA rather than of the thread and iteration
    # compared (the iteration a loop leaves in, where the launch decides it: a persistent
    # kernel's last tile), one copy per side, pinned by their constraints (``_reached``)
    dep = sorted({n for f in conds for n in c.symbols(f) if n in per_cta})
    free = sorted({n for f in conds for n in c.symbols(f) if n in consts and n not in ids and n not in dep})
    own = [(t, k) for t, k in env.constraints_a
           if k and k <= set(free) and not (c.symbols(t) & ids)
           and all(n in free or same(n) for n in c.symbols(t))]
    pinned = [t for t, _ in env.constraints_a
              if c.symbols(t) & set(dep) and all(n in free or n in dep or n in ids or same(n) for n in c.symbols(t))]
    base = [t for t, _ in env.shared_constraints] + [z3.ULT(x, n) for x, n in zip(env.ctaid, env.nctaid)]

    def differ(f, g):
        return z3.Xor(f, g) if z3.is_bool(f) else f != g

    def at(x, q, cl):  # the CTA of x's rank in cluster q
        v = z3.BitVecVal(q * cl, x.size())
        return v if cl == 1 else v + z3.URem(x, z3.BitVecVal(cl, x.size()))

    reps = set(reps)
    while len(reps) <= MAX_REPS:
        parts = []
        for j, r in enumerate(sorted(reps)):
            ren = Substitution([(consts[n], z3.Const(f"{n}@{j}", consts[n].sort())) for n in free])
            at_r = Substitution([(x, at(x, v, cl)) for x, v, cl in zip(env.ctaid, r, cluster)])
            ren_x = Substitution([(consts[n], z3.Const(f"{n}@{j}x", consts[n].sort())) for n in dep])
            ren_r = Substitution([(consts[n], z3.Const(f"{n}@{j}r", consts[n].sort())) for n in dep])

            def mine(t):
                return ren_x(ren(t))

            def theirs(t):
                return at_r(ren_r(ren(t)))

            parts.append(z3.And(*[ren(t) for t, _ in own], *[mine(t) for t in pinned], *[theirs(t) for t in pinned],
                                z3.Or(*[differ(mine(f), theirs(f)) for f in conds])))
        res, m = budget.solve(*base, *parts)
        if res == z3.unsat:
            return reps
        if res != z3.sat:
            return None
        reps.add(tuple(m.eval(x, model_completion=True).as_long() // cl for x, cl in zip(env.ctaid, cluster)))
    return reps


_SAME_IN_EVERY_CTA = ("nctaid.", "ntid.", "buffer.", "paramaddr.", "gvar.", "tid.", "ctaid.")


def _sameness(c, ex):
    """A test of whether a symbol means the same in every CTA (for a given thread and loop
    iteration): the launch (parameters, dimensions, buffer addresses), the thread's own index, loop
    iteration counters, and the registers a loop summary over-approximates when their value at
    the loop's head and at each of its continues reads nothing else (``d >>= 1`` from
    ``blockDim.x / 2``: by induction over the iterations, the same sequence in every CTA), and the
    result of a warp collective (shuffle, vote, match, reduce: ``ex.derived``) over such values
    only -- not loaded data or anything computed from it, nor anything computed from ``%ctaid``
    that the engine approximates (the condition would no longer name it). ``%ctaid`` itself passes:
    it is what the representatives vary."""
    env = c.env
    params = env.params
    ids = {str(x) for x in env.ctaid}
    ok = set()

    def same(name: str) -> bool:
        if name in ok or re.fullmatch(r"k\d+\..*![AB]", name):
            return True
        if name in env.approx:
            return False
        return (name in params or name.startswith(_SAME_IN_EVERY_CTA) or name.split(".byte")[0] in params
                or re.fullmatch(r"kx\d+\..*![AB]", name) is not None)

    derived = getattr(ex, "derived", {})  # warp collectives' results and what they read

    def collectives():
        changed = True
        while changed:
            changed = False
            for n, srcs in derived.items():
                if n not in ok and all(same(x) and x not in ids for t in srcs for x in c.symbols(t)):
                    ok.update((n, n[:-1] + "B"))
                    changed = True

    collectives()
    for info in ex.loops:  # outer loops first: an inner loop's registers may start from theirs
        hv = {r: h.decl().name() for r, h in (info.havocs or {}).items()}
        heads = info.head_regs or {}
        live = set(hv.values())  # the greatest set closed under "reads only same symbols and these"

        def fine(t):
            return all((same(n) or n in live) and n not in ids for n in c.symbols(t))

        changed = True
        while changed and live:
            changed = False
            # which continue a thread takes matters only to a register the continues update
            # differently (the iteration reached is itself a condition the representatives cover)
            pcs_fine = all(fine(pc) for pc, _ in info.conts)
            for r, name in hv.items():
                if name not in live:
                    continue
                terms = ([heads[r][0]] if r in heads else []) + [regs[r][0] for _, regs in info.conts if r in regs]
                updates = {regs[r][0].get_id() for _, regs in info.conts if r in regs}
                if not all(fine(t) for t in terms) or (len(updates) > 1 and not pcs_fine):
                    live.discard(name)
                    changed = True
        ok |= live | {n[:-1] + "B" for n in live if n.endswith("!A")}
        if info.conts and all(all(same(n) and n not in ids for n in c.symbols(pc)) for pc, _ in info.conts) \
                and info.kx is not None:  # every CTA leaves the loop in the same iteration
            kx = info.kx.decl().name() if z3.is_const(info.kx) else None
            if kx:
                ok |= {kx, kx[:-1] + "B"}
    collectives()
    return same


def _data_dependence(c, ex, obs, same) -> str:
    """Where a decision that matters to the interpreted obligations reads something that may
    differ between CTAs besides ``%ctaid`` (``same``: ``_sameness``): loaded data, values
    over-approximated in a loop; "" when nothing does."""

    def data(pc) -> bool:
        return pc is not None and not z3.is_true(pc) and any(not same(n) for n in c.symbols(pc))

    def at(loc) -> str:
        line = getattr(loc, "line", None) or getattr(loc, "ptx_line", None)
        return f"line {line}" if line else "an unknown line"

    for s in ex.syncs:
        if data(s.pc):
            what = "a barrier" if s.kind == "barrier" else "the decision of a loop holding a barrier"
            return f"{what} at {at(s.loc)} depends on loaded data"
    for info in ex.loops:
        if data(info.cont_pc) or data(info.trip):
            return f"the trip count of loop {info.name} depends on loaded data"
    for t in ex.traps:
        if data(t):
            return "a trap depends on loaded data"
    shared = obs.get("race-free: shared")
    if shared is None or shared.status not in ("proved", "vacuous"):
        for a in ex.accesses:
            if a.space == "shared" and data(a.pc):
                return (f"a shared-memory access at {at(a.instr.loc)} depends on loaded data "
                        "and race-free: shared is not proved")
    return ""
