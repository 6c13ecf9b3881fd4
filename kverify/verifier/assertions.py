"""The kernel's own assertions, symbolically: the obligation "assertions" (``assert.failed``) for
every thread of the launch and every value of its free parameters, and the report's list of the
GPUVerify annotations kverify accepts without checking them.

Assertions are CUDA's ``assert()`` (a call of ``__assertfail`` where it fails) and GPUVerify's
``__assert`` (``__kverify_assert(holds)``, from ``kverify/semantics/ir/gpuverify.h``). The symbolic
executor (:mod:`kverify.symbolic`, the race checker's run when there is one) records each one
thread A reaches with the condition under which it is false (``AssertionSite.fails``); the
kernel's preconditions (GPUVerify ``__requires`` / ``__assume``) are constraints on thread A. For
each site z3 decides whether ``fails`` is satisfiable:

    unsat          the assertion holds for every thread, parameter value and loop iteration
                   (``proved``, the scope says which launch and which preconditions)
    sat, exact     it fails: a counterexample with the thread and the parameter values
                   (``violated``); exact means it fails for every value of the over-approximated
                   symbols (loaded data, loop registers, intrinsics kverify does not evaluate,
                   such as ``__other_int``), as in the race checker (``_Checker.is_exact``)
    otherwise      ``unknown``, with the reason (an intrinsic it depends on is named)

What the encoding does not cover (an unsupported instruction, a call it does not inline, ...)
leaves the obligation ``unknown``: a missed write could make a loaded value look exact. The
interpreter gives its own evidence for the same obligation (a failing assertion on the run's
values; ``bounded`` when none fails). ``check.combine`` joins the two.

GPUVerify's proof hints (``__invariant``, ``__ensures``, ``__axiom``, ...) compile to nothing;
``unchecked_annotations`` lists them from the source as ``annotation.unchecked`` notes. An axiom
restricts the executions GPUVerify considers in a way kverify does not evaluate, so with one
present a violation found is not claimed (``check`` makes it ``unknown``).
"""
from __future__ import annotations

import time

import z3

from kverify.rules import Rule
from kverify.semantics.ir import gpuverify as gv
from kverify.semantics.memory_model.execution import ASSERT_FAILED
from kverify.symbolic import Unsupported, is_false
from kverify.symbolic.budget import SolverBudget

from .report import Finding, Location, Obligation

TITLE = "assertions"

ANNOTATION_UNCHECKED = Rule(
    "annotation.unchecked", "GPUVerify's annotation language (kverify/semantics/ir/gpuverify.h)", "",
    "a GPUVerify proof hint (__invariant, __global_invariant, __ensures, __requires_fresh_array, __axiom, ...) "
    "that kverify accepts without checking it: no verdict rests on it", severity="note")


def uses_assertions(module, kernel) -> bool:
    """Whether the kernel (or a function it calls) has an assertion kverify checks."""
    from kverify.semantics.ir.visit import reachable_instructions

    return any(gv.marker_of(i) in (gv.ASSERT, gv.ASSERTFAIL) for i in reachable_instructions(module, kernel))


def check_assertions(module, kernel, spec, timeout_s: float, prior=None) -> list:
    """The "assertions" obligation (a list of one), from the race checker ``prior`` (its
    executor already ran) or a run of its own."""
    from .races.smt import executed_checker

    t0 = time.perf_counter()
    try:
        c, early = executed_checker(module, kernel, spec, timeout_s, t0, prior)
        if early is not None:
            return [Obligation(TITLE, "assertions", "unknown", early[0], None, early[1], None,
                               time.perf_counter() - t0)]
        ob = _decide(c, SolverBudget(timeout_s, label="assertions"))
    except Unsupported as e:
        ob = Obligation(TITLE, "assertions", "unknown", str(e))
    except z3.Z3Exception as e:
        ob = Obligation(TITLE, "assertions", "unknown", f"solver error: {e}")
    ob.time_s = time.perf_counter() - t0
    return [ob]


def _decide(c, budget) -> Obligation:
    ex, env, mod = c.ex, c.env, c.module
    sites = [a for a in ex.assertions if not is_false(a.fails)]
    base = env.shared_constraints + env.constraints_a
    if ex.preconditions:
        r, _ = c.solve([x for x, _ in base], budget, want_model=False)
        if r == "unsat":
            where = ", ".join(f"{p.what} at {_where(p.instr, mod)}" for p in ex.preconditions[:3])
            return Obligation(TITLE, "assertions", "unknown", f"no thread of the launch meets the kernel's "
                              f"preconditions ({where}): a proof would be vacuous")
    reasons = list(dict.fromkeys(ex.reasons["shared"] + ex.reasons["global"]))
    blind_pre = [p for p in ex.preconditions if _approx_in(c, p.holds)]
    holds, maybe, undecided = 0, [], []
    for a in sites:
        r, m = c.solve([a.fails], budget, base=base)
        if r == "unsat":
            holds += 1
            continue
        if r == "unknown":
            undecided.append(a)
            continue
        m1 = c.confirm([], a.fails, m, budget, base)
        if m1 is None:
            maybe.append((a, _gv_names(c, a.fails)))
            continue
        if reasons or blind_pre:
            maybe.append((a, []))
            continue
        return _violation(c, a, m1)
    if not (maybe or undecided or reasons):
        n = len(ex.assertions)
        msg = (f"every assertion holds ({n} reached)" if n else "no assertion is reachable")
        return Obligation(TITLE, "assertions", "proved", msg, c.scope().replace(
            "; every schedule (two arbitrary distinct threads)", "; every thread"))
    why = []
    for a, names in maybe[:3]:
        if names:
            why.append(f"{a.what} at {_where(a.instr, mod)} depends on {', '.join(names)}, which kverify does "
                       "not evaluate")
        elif reasons or blind_pre:
            why.append(f"{a.what} at {_where(a.instr, mod)} may fail, but the encoding does not cover everything "
                       "it depends on")
        else:
            why.append(f"{a.what} at {_where(a.instr, mod)} may fail for values the encoding over-approximates "
                       "(loaded data, floating point, loop registers)")
    for a in undecided[:3]:
        why.append(f"solver budget spent on {a.what} at {_where(a.instr, mod)}")
    if blind_pre and maybe:
        why.append("a precondition uses an intrinsic kverify does not evaluate ("
                   + ", ".join(f"{p.what} at {_where(p.instr, mod)}" for p in blind_pre[:2]) + ")")
    why += reasons[:3]
    locs = [Location.of(a.instr.loc, mod.path) for a, _ in maybe[:1]] or \
        [Location.of(a.instr.loc, mod.path) for a in undecided[:1]]
    return Obligation(TITLE, "assertions", "unknown", "; ".join(why), None, locs)


def _violation(c, a, m) -> Obligation:
    env, mod = c.env, c.module

    def val(e):
        return m.eval(e, model_completion=True).as_long()

    tid, cta = [val(t) for t in env.tid], [val(x) for x in env.ctaid]
    params = {**env.param_values, **env.symbolic_param_values(m, c.ex.address_params)}
    loc = Location.of(a.instr.loc, mod.path)
    g = list(env.grid) if env.grid else [val(n) for n in env.nctaid]
    b = list(env.block) if env.block else [val(n) for n in env.ntid]
    msg = (f"assertion failed: {a.what} is false for thread tid=({tid[0]},{tid[1]},{tid[2]}) "
           f"ctaid=({cta[0]},{cta[1]},{cta[2]}); grid {g[0]}x{g[1]}x{g[2]}, block {b[0]}x{b[1]}x{b[2]}")
    if params:
        msg += ", " + ", ".join(f"{k}={env.show_value(v)}" for k, v in params.items())
    ce = {"thread": {"tid": tid, "ctaid": cta}, "params": params, "grid": g, "block": b, "location": str(loc)}
    return Obligation(TITLE, "assertions", "violated", msg, locations=[loc], counterexample=ce,
                      rule=ASSERT_FAILED.id)


def _approx_in(c, term) -> bool:
    return any(n in c.env.approx for n in c.symbols(term))


def _gv_names(c, term) -> list:
    """The GPUVerify intrinsics whose (unevaluated) results ``term`` depends on."""
    out = []
    for n in sorted(c.symbols(term)):
        if n.startswith("gv__") and n in c.env.approx:
            name = n.split(".", 1)[0][2:]
            if name not in out:
                out.append(name)
    return out


def _where(instr, module) -> str:
    return str(Location.of(instr.loc, module.path))


def unchecked_annotations(path: str) -> tuple[list, list]:
    """``(findings, axioms)`` for a GPUVerify test at ``path``: one ``annotation.unchecked`` note
    per intrinsic used (its lines), and the locations of its ``__axiom`` declarations."""
    if not path or not path.endswith((".cu", ".cuh")) or not gv.is_test(path):
        return [], []
    try:
        with open(path, errors="replace") as f:
            text = f.read()
    except OSError:
        return [], []
    by: dict = {}
    for name, line, col in gv.annotations(text):
        by.setdefault(name, []).append((line, col))
    findings, axioms = [], []
    for name, places in by.items():
        lines = ", ".join(str(ln) for ln, _ in places[:8]) + (", ..." if len(places) > 8 else "")
        if name == "__axiom":
            what = ("an assumption about the launch that kverify does not evaluate: no violation is claimed "
                    "while it stands")
            axioms += [Location(path, ln, col) for ln, col in places]
        else:
            what = "a proof hint kverify does not check (no verdict rests on it)"
        findings.append(Finding(ANNOTATION_UNCHECKED.id, f"GPUVerify {name} (line{'s' if len(places) > 1 else ''} "
                                f"{lines}) not checked: {what}", [Location(path, ln, col) for ln, col in places[:1]]))
    return findings, axioms


def precondition_values(c, missing_params) -> dict:
    """Values for the scalar parameters the launch leaves out, chosen to satisfy the kernel's
    preconditions (GPUVerify ``__requires`` / ``__assume`` over parameters only), smallest first;
    ``{}`` unless every such parameter is constrained by one (kverify picks no value a
    precondition does not ask for) and the preconditions are satisfiable. ``c`` is a race checker
    whose executor ran (``_Checker.execute``); ``missing_params`` names (CUDA or PTX) the
    parameters the launch gives no value or buffer."""
    ex, env = getattr(c, "ex", None), getattr(c, "env", None)
    if not getattr(c, "executed", False) or not ex.preconditions:
        return {}
    syms = {str(t): (t, p) for t, p in env.params.values() if not z3.is_bv_value(t)}
    missing = {n for n, (_, p) in syms.items() if p.name in missing_params or p.source_name in missing_params}
    if not missing:
        return {}
    forms, mentioned = [], set()
    for p in ex.preconditions:
        f = z3.Implies(p.pc, p.holds)
        names = c.symbols(f)
        if names and names <= set(syms):
            forms.append(f)
            mentioned |= names
    if not forms or not missing <= mentioned:
        return {}
    terms = [syms[n][0] for n in sorted(mentioned)]
    budget = SolverBudget(2.0, label="precondition.values")
    model = None
    for bound in (0, 1, 2, 16, 256, 1 << 16, (1 << 31) - 1):
        r, m = c.solve(forms + [z3.ULE(t, bound) for t in terms], budget)
        if r == "sat":
            model = m
            break
    if model is None:
        r, model = c.solve(forms, budget)
        if r != "sat":
            return {}
    out = {}
    for n in sorted(mentioned):
        t, p = syms[n]
        v, w = model.eval(t, model_completion=True).as_long(), t.size()
        out[p.source_name or p.name] = v - (1 << w) if p.type.name.startswith("s") and v >> (w - 1) else v
    return out
