"""Buffer extents from the symbolic accesses: how many bytes past each pointer parameter
the threads of one launch can touch, so that a launch given only its grid, block and scalar
arguments (``kverify check --grid --block --arg``, GPUVerify headers with scalar values)
still gets buffers for the interpreter.

For every global access whose address is a pointer parameter plus an offset
(``Access.region == "param:<name>"``), z3 maximizes the end of the access over every
thread of the launch and every loop iteration (the encoding of one symbolic thread,
:mod:`kverify.symbolic`); a buffer is as long as the largest end, in the element type of its
accesses. An offset that can be negative, that depends on a value the encoding cannot know
(a loaded index) or on an unknown scalar, or that exceeds ``LIMIT`` leaves the buffer
unsized, with the reason. An iteration of a loop without a trip count (a grid-stride loop)
counts as reached only when every earlier one took the loop's continue condition.
"""
from __future__ import annotations

import z3

from kverify.launch import dtypes, lookup, param_key
from kverify.semantics.ir.nodes import Sym
from kverify.semantics.ir.visit import names_of, reachable_instructions
from kverify.symbolic.budget import SolverBudget
from kverify.symbolic import Env, Executor, Unsupported, outside_classic_model

LIMIT = 1 << 28  # bytes per inferred buffer



def buffer_extents(module, kernel, launch, timeout_s: float = 10.0) -> tuple[dict, dict]:
    """``({param name: {"dtype", "shape"}}, {param name: reason not sized})`` for the pointer
    parameters ``launch`` gives no buffer for (``launch.buffers`` may be empty)."""
    wanted = {}
    for i, p in enumerate(kernel.params):
        if p.array or p.type.bits != 64 or lookup(launch.buffers, kernel, i) is not None:
            continue
        if lookup(launch.args, kernel, i) is not None:
            continue
        wanted[p.source_name or p.name] = param_key(kernel, i)
    if not wanted:
        return {}, {}
    if any(outside_classic_model(i) for i in reachable_instructions(module, kernel)):
        return {}, {k: "asynchronous copies: give the buffers in the launch spec" for k in wanted.values()}
    env = Env(module, kernel, launch)

    def check_a(f):
        s = z3.Solver()
        s.add(f, *[c for c, _ in env.shared_constraints + env.constraints_a])
        r = SolverBudget(timeout_s).check(s)
        if r == z3.sat:
            return "sat", s.model()
        return ("unsat" if r == z3.unsat else "unknown"), None

    ex = Executor(env, check_a)
    try:
        ex.run()
    except Unsupported as e:
        return {}, {k: f"accesses not summarized ({e})" for k in wanted.values()}
    base = [c for c, _ in env.shared_constraints + env.constraints_a]
    ends: dict = {}
    types: dict = {}
    why: dict = {}
    for a in ex.accesses:
        if a.space != "global" or not a.region or not a.region.startswith("param:"):
            continue
        name = a.region.split(":", 1)[1]
        if name not in wanted or name in why:
            continue
        term = next((t for pn, (t, p) in env.params.items() if (p.source_name or p.name) == name), None)
        if term is None:
            continue
        off = a.addr - term
        # iteration k of a loop without a trip count is reached only if every earlier
        # iteration went on (the loop's continue condition)
        reach = []
        for info, k in a.loops:
            if info.cont_pc is not None and info.trip is None:
                j = z3.BitVec(f"{k}.earlier", k.size())
                reach.append(z3.ForAll([j], z3.Implies(z3.ULT(j, k), z3.substitute(info.cont_pc, (k, j)))))
        bad = _solve(base + reach + [a.pc, z3.Or(off < 0, z3.UGT(off, LIMIT))], timeout_s)
        if bad != "unsat":
            why[name] = (f"offsets of {a.instr.opcode} (line {a.instr.loc.line or a.instr.loc.ptx_line}) are not "
                         f"bounded to [0, {LIMIT}) by the launch" if bad == "sat" else "solver budget spent")
            continue
        end = _maximize(base + reach + [a.pc], off + a.width, timeout_s, quantified=bool(reach))
        if end is None:
            why[name] = "solver budget spent"
            continue
        ends[name] = max(ends.get(name, 0), end)
        dt = next((d for d in map(dtypes.of_ptx, a.instr.types()) if d is not None), None)
        if dt is not None:
            types.setdefault(name, dt.name)
    mentioned = set(names_of([i.operands for i in reachable_instructions(module, kernel)], Sym))
    out = {}
    for name, key in wanted.items():
        if name in why:
            continue
        if name not in ends:
            ptx = next(p.name for p in kernel.params if (p.source_name or p.name) == name)
            if ptx not in mentioned:  # never read: any buffer will do
                out[key] = {"dtype": "uint8", "shape": [1]}
            else:
                why[name] = "no access through it could be summarized"
            continue
        dt = types.get(name, "uint8")
        esz = dtypes.itemsize(dt)
        out[key] = {"dtype": dt, "shape": [max(1, -(-ends[name] // esz))]}
    return out, {wanted[n]: r for n, r in why.items() if n in wanted}


def _solve(fs, timeout_s):
    s = z3.Solver()
    s.add(*fs)
    r = SolverBudget(timeout_s).check(s)
    return "sat" if r == z3.sat else "unsat" if r == z3.unsat else "unknown"


def _maximize(fs, term, timeout_s, quantified=False):
    """The largest unsigned value of ``term`` (at most ``LIMIT + 64``) under ``fs``; ``None``
    on a timeout. ``z3.Optimize`` does not take quantifiers: those are searched by halving."""
    if quantified:
        if _solve(fs, timeout_s) != "sat":
            return 0
        lo, hi = 0, LIMIT + 64
        while lo < hi:
            mid = (lo + hi + 1) // 2
            r = _solve(fs + [z3.UGE(term, mid)], timeout_s)
            if r == "unknown":
                return None
            lo, hi = (mid, hi) if r == "sat" else (lo, mid - 1)
        return lo
    o = z3.Optimize()
    o.add(*fs)
    h = o.maximize(term)
    r = SolverBudget(timeout_s).check(o)
    if r == z3.unsat:
        return 0
    if r != z3.sat:
        return None
    v = o.upper(h)
    return v.as_long() if z3.is_bv_value(v) else o.model().eval(term, model_completion=True).as_long()
