"""CTA symmetry: when no CTA can affect another, a few representative CTAs stand for all.

The argument (docs/semantics.md, "CTA symmetry"): with no cluster, no distributed shared
memory, no asynchronous or mbarrier operation, no strong (atomic, volatile, relaxed/acquire/
release) global access, no synchronization the race encoding does not model, and the SMT race
checker's proof over two symbolic CTAs that no global bytes accessed by one CTA are written by
another, a CTA's run does not depend on any other CTA. Every CTA then behaves like a run of its
own; what differs between CTAs is only what depends on ``%ctaid``. The representatives are the
first, second, second-to-last and last CTA and, for every memory access and every barrier or
loop decision of the symbolic execution whose path condition depends on ``%ctaid``, one CTA
where the condition holds, one where it fails and one where it holds for some threads and not
others (a tail tile), so every such access is executed by some interpreted CTA.

What differs between CTAs must be ``%ctaid`` alone: a barrier, a loop decision, or (unless the SMT
checker proved shared memory race-free for every value) a shared-memory access whose condition
reads data loaded from memory or a register over-approximated in a loop summary may go another
way in a CTA that was not interpreted, with the same inputs (``if (flags[blockIdx.x]) ...``), so
such a kernel is not reduced. Anything not established is ``None``: the caller interprets every
CTA.
"""

from __future__ import annotations

import re
import time

import z3

from kverify.symbolic import Unsupported
from kverify.symbolic.budget import SolverBudget

from .smt import _Checker

MIN_GRID = 8  # smaller grids are interpreted in full


def representatives(module, kernel, spec, timeout_s: float = 10.0, prior=None):
    """``(ctas, why)``: the CTA coordinates to interpret and the reason they stand for all,
    or ``(None, why_not)``. ``prior`` is ``(checker, obligations)`` of a race check already
    run for the same launch (``check_races(..., keep=...)``), reused instead of a second one."""
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
    varies = _data_dependence(c, ex, obs)
    if varies:
        return None, f"control may differ between CTAs beyond %ctaid ({varies})"
    base = env.shared_constraints + env.constraints_a
    ids = {str(x) for x in env.ctaid}
    reps = {(0, 0, 0), (g[0] - 1, g[1] - 1, g[2] - 1)}
    lin = [(i % g[0], (i // g[0]) % g[1], i // (g[0] * g[1])) for i in (1, total - 2)]
    reps.update(lin)
    conds = [a.pc for a in ex.accesses] + [s.pc for s in ex.syncs]
    seen = set()
    budget = SolverBudget(timeout_s)
    for pc in conds:
        if z3.is_true(pc) or z3.is_false(pc):
            continue
        key = pc.get_id()
        if key in seen or not (c.symbols(pc) & ids):
            continue
        seen.add(key)
        for f in (pc, z3.Not(pc)):
            r, m = c.solve([f], budget, base=base)
            if r == "unknown":
                return None, "independence not established (solver budget spent choosing representatives)"
            if r == "sat":
                reps.add(tuple(m.eval(x, model_completion=True).as_long() for x in env.ctaid))
        # a partial CTA (a tail tile): the condition holds for one of its threads and not another
        r, m = c.solve(c.same_cta() + [pc, z3.Not(c.b(pc))], budget, base=c.base())
        if r == "unknown":
            return None, "independence not established (solver budget spent choosing representatives)"
        if r == "sat":
            reps.add(tuple(m.eval(x, model_completion=True).as_long() for x in env.ctaid))
        if len(reps) > 64:
            return None, "too many ctaid-dependent control paths (more than 64 representatives)"
    reps = sorted(reps, key=lambda t: (t[2], t[1], t[0]))
    return reps, "no inter-CTA communication (proved)"


_SAME_IN_EVERY_CTA = ("nctaid.", "ntid.", "buffer.", "paramaddr.", "gvar.", "tid.", "ctaid.")


def _data_dependence(c, ex, obs) -> str:
    """Where a decision that matters to the interpreted obligations reads something other than the
    launch, the thread's index and exact loop counters (loaded data, over-approximated values);
    "" when nothing does."""
    params = set(c.env.params)

    def same(name: str) -> bool:
        return (name in params or name.startswith(_SAME_IN_EVERY_CTA) or name.split(".byte")[0] in params
                or re.fullmatch(r"k\d+\..*![AB]", name) is not None)

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
    shared = obs.get("race-free: shared")
    if shared is None or shared.status not in ("proved", "vacuous"):
        for a in ex.accesses:
            if a.space == "shared" and data(a.pc):
                return (f"a shared-memory access at {at(a.instr.loc)} depends on loaded data "
                        "and race-free: shared is not proved")
    return ""
