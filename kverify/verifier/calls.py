"""Calls through a pointer that holds no function, symbolically: the static evidence for the
obligation "memory safety" under rule ``call.invalid-target``.

The symbolic executor (:mod:`kverify.symbolic.calls`, the race checker's run) records each
indirect call thread A reaches where its pointer may be none of the module's function
addresses (``CallSite``: the condition ``bad``, path condition included, and the pointer's
term). The kernel's preconditions (GPUVerify ``__requires`` / ``__assume``) are constraints on
thread A. For each site z3 decides ``bad``, a null pointer first (a value no function can have,
whatever the linker does), then any value:

    unsat          the pointer holds a function's address wherever the call is reached
                   (no evidence: the interpreter decides the obligation)
    sat, exact     a launch whose thread reaches the call with that pointer: ``violated``,
                   with the thread, the parameter values and the pointer's value; exact means
                   for every value of the over-approximated symbols (loaded data, loop
                   registers, intrinsics kverify does not evaluate), as the race checker's
                   ``_Checker.is_exact`` says
    otherwise      ``unknown``, with the reason (the pointer comes from memory kverify does not
                   track, the solver's budget, ...)

What the encoding does not cover (an unsupported instruction, a call it does not inline, ...)
leaves a satisfiable site ``unknown``: a callee without a body may not return, so the call may
not be reached. Function addresses are kverify's layout (``launch.layout.function_addresses``,
the interpreter's): a value that is not null is reported with the function it lies past when
there is one (``divide + 0x14``).

PTX ISA (9.0): §9.7.12.5 call (an indirect call's target must be the address of a function of
the prototype's signature).
"""
from __future__ import annotations

import time

import z3

from kverify.semantics.memory_model.execution import CALL_INVALID_TARGET
from kverify.symbolic import Unsupported
from kverify.symbolic.budget import SolverBudget

from .report import Location, Obligation

TITLE = "memory safety"


def check_calls(module, kernel, spec, timeout_s: float, prior=None, safe: list | None = None) -> list:
    """The static evidence for "memory safety" about indirect calls (a list of at most one
    obligation), from the race checker ``prior`` (its executor already ran) or a run of its
    own; ``[]`` when it has none. ``safe`` (a list) gets ``True`` appended when the run covered
    the whole kernel and no reachable call may go through a pointer that holds no function."""
    from .races.smt import executed_checker

    t0 = time.perf_counter()
    try:
        c, early = executed_checker(module, kernel, spec, timeout_s, t0, prior)
        if early is not None:
            return []
        ob = _decide(c, SolverBudget(timeout_s, label="calls"))
    except Unsupported as e:
        ob = Obligation(TITLE, "calls", "unknown", f"calls through function pointers not checked: {e}")
    except z3.Z3Exception as e:
        ob = Obligation(TITLE, "calls", "unknown", f"calls through function pointers not checked: solver error: {e}")
    if ob is None:
        if safe is not None and not (c.ex.reasons["shared"] or c.ex.reasons["global"]):
            safe.append(True)
        return []
    ob.time_s = time.perf_counter() - t0
    return [ob]


def _decide(c, budget):
    ex, env, mod = c.ex, c.env, c.module
    sites = [s for s in ex.invalid_calls if not z3.is_false(z3.simplify(s.bad))]
    if not sites:
        return None
    base = env.shared_constraints + env.constraints_a
    if ex.preconditions:
        r, _ = c.solve([x for x, _ in base], budget, want_model=False)
        if r == "unsat":
            return None  # no thread meets the preconditions: the races checker says so
    own = {s.why for s in ex.invalid_calls}
    gaps = [r for r in dict.fromkeys(ex.reasons["shared"] + ex.reasons["global"]) if r not in own]
    blind_pre = [p for p in ex.preconditions if any(n in env.approx for n in c.symbols(p.holds))]
    why, locs = [], []
    for s in sites:
        loc = Location.of(s.instr.loc, mod.path)
        if any(n.startswith("mem[") for n in c.symbols(s.target)):
            r, _ = c.solve([s.bad], budget, want_model=False, base=base)
            if r != "unsat":
                locs.append(loc)
                why.append(f"the call at {loc} goes through a pointer read from memory (the host's data): kverify "
                           "does not claim which values it holds, nor that it holds a function")
            continue
        found, maybe = None, False
        for extra in ([s.target == 0], []):  # null first: no function has that address
            r, m = c.solve([s.bad] + extra, budget, base=base)
            if r == "unknown":
                why.append(f"solver budget spent on the call at {loc}")
                break
            if r == "unsat":
                continue
            m1 = c.confirm(extra, s.bad, m, budget, base)
            if m1 is None:
                maybe = True
                continue
            found = _small(c, s, extra, m1, budget, base)
            break
        if found is not None and not (gaps or blind_pre):
            return _violation(c, s, found)
        if found is not None or maybe:
            locs.append(loc)
            if found is not None and gaps:
                why.append(f"the call at {loc} may go through a pointer that holds no function, but the encoding "
                           f"does not cover everything its reaching depends on ({gaps[0]})")
            elif found is not None:
                why.append(f"the call at {loc} may go through a pointer that holds no function, under a precondition "
                           f"kverify does not evaluate ({blind_pre[0].what} at line {blind_pre[0].instr.loc.line or '?'})")
            else:
                why.append(f"the call at {loc} may go through a pointer that holds no function for values the "
                           "encoding over-approximates (loaded data, loop registers, intrinsics kverify does not "
                           "evaluate)")
    if not why:
        return None
    return Obligation(TITLE, "calls", "unknown", "; ".join(why[:3]), None, locs[:1])


def _small(c, s, extra, model, budget, base):
    """A model of the site with the parameters it mentions as small as a few bounds allow (a
    counterexample a person reads), else ``model``."""
    env = c.env
    names = c.symbols(s.bad)
    terms = [t for t, p in env.params.values() if not z3.is_bv_value(t) and str(t) in names
             and str(t) != str(s.target)]
    if not terms:
        return model
    for bound in (0, 1, 2, 16, 256, 1 << 16):
        r, m = c.solve([s.bad] + extra + [z3.ULE(t, bound) for t in terms], budget, base=base)
        if r == "sat":
            m1 = c.confirm(extra, s.bad, m, budget, base)
            if m1 is not None:
                return m1
    return model


def _violation(c, s, m) -> Obligation:
    env, mod = c.env, c.module

    def val(e):
        return m.eval(e, model_completion=True).as_long()

    tid, cta = [val(t) for t in env.tid], [val(x) for x in env.ctaid]
    mentioned = c.symbols(s.bad) | c.symbols(s.target)
    params = {k: v for k, v in env.symbolic_param_values(m, c.ex.address_params).items()
              if any(str(t) in mentioned for t, p in env.params.values() if (p.source_name or p.name) == k)}
    params = {**env.param_values, **params}
    loc = Location.of(s.instr.loc, mod.path)
    g = list(env.grid) if env.grid else [val(n) for n in env.nctaid]
    b = list(env.block) if env.block else [val(n) for n in env.ntid]
    target = val(s.target)
    fptr = next((str(o) for o in s.instr.operands if type(o).__name__ == "Reg"), "a register")
    msg = (f"call through {fptr}: {show_target(c, target)} is not the address of a function "
           f"(thread tid=({tid[0]},{tid[1]},{tid[2]}) ctaid=({cta[0]},{cta[1]},{cta[2]}); "
           f"grid {g[0]}x{g[1]}x{g[2]}, block {b[0]}x{b[1]}x{b[2]}")
    if params:
        msg += ", " + ", ".join(f"{k}={env.show_value(v)}" for k, v in params.items())
    msg += ")"
    ce = {"thread": {"tid": tid, "ctaid": cta}, "params": params, "grid": g, "block": b, "location": str(loc),
          "target": target}
    return Obligation(TITLE, "calls", "violated", msg, locations=[loc], counterexample=ce,
                      rule=CALL_INVALID_TARGET.id)


def show_target(c, v: int) -> str:
    """The pointer's value, with the function it lies just past (within 4 KiB of its entry)."""
    past = [(v - a, n) for n, a in c.ex.func_addr.items() if 0 < v - a < 4096]
    if past:
        d, n = min(past)
        return f"{v:#x} ({n} + {d:#x})"
    return f"{v:#x}"
