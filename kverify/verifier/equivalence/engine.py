"""Equivalence of a candidate kernel against a reference kernel for one launch each.

Owns: the pairing of buffers (by name when both kernels use the same names, else by
position among the buffer parameters), the comparison of the output terms under the
chosen model, counterexamples (inputs from the z3 model or from the real normal forms,
minimized, replayed on the interpreter) and the bounded differential-testing fallback.

Verdicts (``EquivResult.verdict``):
  ``proved``   every output element is equal for all input values, at this launch
  ``refuted``  an input on which the outputs differ, confirmed by the interpreter
  ``tested``   the proof did not go through; hypothesis-chosen inputs found no difference
  ``unknown``  neither (unsupported construct, data-dependent control flow, timeout)
Every verdict names the model and assumes the kernels are free of data races.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import z3

from kverify.symbolic.budget import SolverBudget

from kverify.launch import dtypes, lookup, param_key
from kverify.launch.dtypes import np_dtype
from kverify.semantics.ir.errors import Unsupported

from . import realterm as R
from .algebra import DataDependent, ModelUnsupported, make_algebra
from .symexec import Budget, Executor

MODELS = ("real", "bitexact", "int")
UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


@dataclass
class Side:
    """One kernel of the pair."""

    path: str
    module: object
    kernel: object
    spec: object
    launch_path: str | None = None

    @property
    def name(self):
        return self.kernel.name


@dataclass
class EquivResult:
    verdict: str  # proved | refuted | tested | unknown
    model: str
    message: str
    elements: int = 0
    time_s: float = 0.0
    sym_time_s: float = 0.0
    solve_time_s: float = 0.0
    counterexample: dict | None = None
    tested: dict | None = None
    correspondence: list = field(default_factory=list)
    assumptions: list = field(default_factory=list)
    scope: str = ""
    structural: int = 0
    solver: int = 0


def buffer_names(cand: Side, ref: Side) -> tuple[dict, dict]:
    """(candidate key -> shared name, reference key -> shared name)."""
    def keys(side):
        out = []
        for i, p in enumerate(side.kernel.params):
            if lookup(side.spec.buffers, side.kernel, i) is not None:
                out.append(param_key(side.kernel, i))
        return out

    ck, rk = keys(cand), keys(ref)
    rmap = {k: k for k in rk}
    if set(ck) == set(rk):
        return {k: k for k in ck}, rmap
    if len(ck) != len(rk):
        raise ValueError(f"the kernels have different numbers of buffers ({len(ck)} vs {len(rk)}); "
                         f"cannot pair them by position")
    return dict(zip(ck, rk)), rmap


def _outputs(side: Side, names: dict):
    outs = side.spec.outputs
    if not outs:
        return [names[k] for k in names]
    return [names.get(o, o) for o in outs]


def symbolic_run(side: Side, alg, names, tag, max_steps):
    ex = Executor(side.module, side.kernel, side.spec, alg, names, tag, max_steps=max_steps)
    ex.run()
    return ex


def check_pair(cand: Side, ref: Side, model: str = "real", timeout_s: float = 60.0, cex_dir: str | None = None,
               test_examples: int = 8, seed: int = 0, max_steps: int = 5_000_000, test_on_unknown: bool = True,
               ) -> EquivResult:
    t0 = time.perf_counter()
    assumptions = ["both kernels are free of data races (kverify check establishes this); threads run "
                   "barrier interval by barrier interval and asynchronous copies complete when issued"]
    if model == "real":
        assumptions.append("real model: floats are reals; rounding, .ftz and the error of approximate "
                           "instructions are abstracted (ex2/rcp .approx read as exact); narrowing conversions "
                           "stay visible; inputs are finite")
    elif model == "bitexact":
        assumptions.append("bitexact model: IEEE-754 with each instruction's rounding mode; approximate "
                           "instructions are uninterpreted functions of their arguments")
    else:
        assumptions.append("int model: bit-vector semantics")
    scope = _scope(cand, ref)
    try:
        cnames, rnames = buffer_names(cand, ref)
    except ValueError as e:
        return EquivResult("unknown", model, str(e), time_s=time.perf_counter() - t0, assumptions=assumptions,
                           scope=scope)
    alg = make_algebra(model)
    try:
        ex_c = symbolic_run(cand, alg, cnames, "cand", max_steps)
        ex_r = symbolic_run(ref, alg, rnames, "ref", max_steps)
    except (Unsupported, DataDependent, ModelUnsupported, R.RealUnsupported, Budget) as e:
        kind = {"DataDependent": "control flow or an address depends on input data",
                "Unsupported": "unsupported", "ModelUnsupported": f"not expressible in the {model} model",
                "RealUnsupported": f"not expressible in the {model} model",
                "Budget": "budget"}[type(e).__name__]
        loc = getattr(e, "instr", None)
        where = f" at {_loc(loc)}" if loc is not None and getattr(loc, "loc", None) else ""
        msg = f"symbolic execution stopped ({kind}): {e}{where}"
        res = EquivResult("unknown", model, msg, time_s=time.perf_counter() - t0, assumptions=assumptions,
                          scope=scope)
        res.sym_time_s = res.time_s
        if test_on_unknown:
            _fallback_test(res, cand, ref, cnames, rnames, model, test_examples, seed, cex_dir)
        res.time_s = time.perf_counter() - t0
        return res
    t1 = time.perf_counter()
    oc, orf = ex_c.output_terms(), ex_r.output_terms()
    res = EquivResult("proved", model, "", assumptions=assumptions, scope=scope)
    res.sym_time_s = t1 - t0
    out_names = _outputs(ref, rnames)
    for name in out_names:
        if name not in oc:
            res.verdict = "unknown"
            res.message = f"the candidate has no output buffer paired with {name!r}"
            res.time_s = time.perf_counter() - t0
            return res
        if len(oc[name]) != len(orf[name]):
            res.verdict = "refuted" if False else "unknown"
            res.message = (f"output {name!r} has {len(oc[name])} elements in the candidate and "
                           f"{len(orf[name])} in the reference")
            res.time_s = time.perf_counter() - t0
            return res
    dtypes = {b.name: b.dtype for b in ex_r.buffers}
    first = None
    pending = []
    corr = {}
    solver = z3.Solver()
    budget = SolverBudget(max(timeout_s, 0.1))  # solver work, not wall-clock time
    timed_out = False
    n_el = 0
    for name in out_names:
        for i, ((cv, cl), (rv, rl)) in enumerate(zip(oc[name], orf[name])):
            n_el += 1
            cv, rv = alg.as_output(cv, dtypes[name]), alg.as_output(rv, dtypes[name])
            eq = _structurally_equal(cv, rv)
            if eq:
                res.structural += 1
                if cl is not None and rl is not None:
                    corr.setdefault(_loc_key(cl), set()).add(_loc_key(rl))
                continue
            if model == "real":
                first = first or (name, i, cv, rv, cl, rl)
                if first is not None:
                    break
                continue
            # bit-vectors: ask z3
            if budget.exhausted():
                timed_out = True
                break
            probe = _probe(cv, rv, seed)
            if probe is not None:
                first = (name, i, cv, rv, cl, rl, probe)
                break
            res.solver += 1
            solver.push()
            solver.add(_bv(cv, rv)[0] != _bv(cv, rv)[1])
            st = budget.check(solver)
            if st == z3.unsat:
                solver.pop()
                if cl is not None and rl is not None:
                    corr.setdefault(_loc_key(cl), set()).add(_loc_key(rl))
                continue
            if st == z3.sat:
                model_ = solver.model()
                solver.pop()
                assign = {d.name(): model_[d].as_long() for d in model_.decls()
                          if z3.is_bv_value(model_[d])}
                first = (name, i, cv, rv, cl, rl, assign)
                break
            solver.pop()
            timed_out = True
            pending.append((name, i))
            break
        if first is not None or timed_out:
            break
    res.elements = n_el
    res.correspondence = [{"candidate": k, "reference": sorted(v)} for k, v in sorted(corr.items())]
    t2 = time.perf_counter()
    res.solve_time_s = t2 - t1
    if first is None and not timed_out:
        res.verdict = "proved"
        res.message = (f"all {n_el} output elements equal for all inputs ({res.structural} by identical "
                       f"normal forms, {res.solver} by the solver)")
        res.time_s = time.perf_counter() - t0
        return res
    if timed_out:
        res.verdict = "unknown"
        res.message = f"solver budget ({timeout_s:g} solver seconds) spent on output element {pending[0] if pending else '?'}"
        _fallback_test(res, cand, ref, cnames, rnames, model, test_examples, seed, cex_dir)
        res.time_s = time.perf_counter() - t0
        return res
    # a difference: build inputs, replay on the interpreter
    name, idx = first[0], first[1]
    if model == "real":
        inputs = _real_cex(alg, first[2], first[3], ex_r, seed)
    else:
        inputs = _bv_cex(first[6], ex_r)
    cex = _replay(cand, ref, cnames, rnames, ex_r, inputs, name, idx, model, cex_dir, first[4], first[5])
    if cex is not None and cex.get("confirmed"):
        res.verdict = "refuted"
        res.counterexample = cex
        res.message = (f"{name}[{_unflat(idx, ex_r, name)}] differs: candidate {cex['candidate_value']}, "
                       f"reference {cex['reference_value']}")
    else:
        detail = ""
        if model == "real":
            detail = (f"; normal forms differ at {name}[{idx}]: candidate {R.show(first[2], alg.A, 3)} vs "
                      f"reference {R.show(first[3], alg.A, 3)}")
        res.verdict = "unknown"
        res.message = "the outputs' terms differ but no input confirmed the difference on the interpreter" + detail
        _fallback_test(res, cand, ref, cnames, rnames, model, test_examples, seed, cex_dir)
    res.time_s = time.perf_counter() - t0
    return res


# ---------------------------------------------------------------------- helpers
def _scope(cand, ref):
    def one(s):
        g, b = s.spec.grid, s.spec.block
        args = ", ".join(f"{k}={v}" for k, v in s.spec.args.items())
        return f"{s.name} grid {g[0]}x{g[1]}x{g[2]} block {b[0]}x{b[1]}x{b[2]}" + (f" ({args})" if args else "")
    return f"concrete launch: {one(cand)}; {one(ref)}"


from kverify.semantics.ir.nodes import where as _loc  # noqa: E402


def _loc_key(loc):
    return _loc(loc)


def _structurally_equal(a, b):
    if type(a) is int or type(b) is int:
        return type(a) is type(b) and a == b
    if isinstance(a, z3.ExprRef) or isinstance(b, z3.ExprRef):
        return isinstance(a, z3.ExprRef) and isinstance(b, z3.ExprRef) and a.eq(b)
    return a == b if type(a) is type(b) else (a is b)


def _bv(a, b):
    w = a.size() if isinstance(a, z3.BitVecRef) else (b.size() if isinstance(b, z3.BitVecRef) else 64)
    za = a if isinstance(a, z3.ExprRef) else z3.BitVecVal(a, w)
    zb = b if isinstance(b, z3.ExprRef) else z3.BitVecVal(b, w)
    return za, zb


def _unflat(idx, ex, name):
    for b in ex.buffers:
        if b.name == name:
            return ", ".join(map(str, np.unravel_index(idx, b.shape))) if len(b.shape) > 1 else str(idx)
    return str(idx)


def _zero_inputs(ex):
    return {b.name: np.zeros(b.shape, np_dtype(b.dtype)) for b in ex.buffers}


def _set_bits(arr, idx, bits, esize):
    flat = arr.reshape(-1).view(UINT[esize])
    flat[idx] = bits


def _bv_cex(assign, ex):
    """Inputs from an assignment of input variables (a z3 model or a probe): the
    variables it names take its values, all other elements are zero."""
    inputs = _zero_inputs(ex)
    by = {b.name: b for b in ex.buffers}
    for nm, v in assign.items():
        if "[" not in nm or nm.startswith("uninit."):
            continue
        buf, _, rest = nm.partition("[")
        if buf not in by:
            continue
        _set_bits(inputs[buf], int(rest.rstrip("]")), v, by[buf].esize)
    return inputs


_FLOAT_OF_WIDTH = {16: np.float16, 32: np.float32, 64: np.float64}


def _probe(cv, rv, seed, tries=12):
    """Cheap search before the solver: evaluate both terms on random inputs (z3
    simplification of ground terms). Returns an assignment on which they differ, or None."""
    za, zb = _bv(cv, rv)
    vs = _z3_vars((za, zb))
    if not vs or len(vs) > 4096:
        return None
    rng = np.random.default_rng(seed)
    for k in range(tries):
        assign, subs = {}, []
        for nm, v in sorted(vs.items()):
            w = v.size()
            ft = _FLOAT_OF_WIDTH.get(w)
            if ft is not None:
                x = ft(rng.integers(-8, 9) if k < 3 else rng.standard_normal() * 2.0 ** int(rng.integers(-6, 7)))
                bits = int(np.array([x], ft).view({16: np.uint16, 32: np.uint32, 64: np.uint64}[w])[0])
            else:
                bits = int(rng.integers(0, 1 << min(w, 16)))
            assign[nm] = bits
            subs.append((v, z3.BitVecVal(bits, w)))
        a = z3.simplify(z3.substitute(za, *subs))
        b = z3.simplify(z3.substitute(zb, *subs))
        if z3.is_bv_value(a) and z3.is_bv_value(b) and a.as_long() != b.as_long():
            return _minimize(za, zb, assign, vs)
    return None


def _z3_vars(exprs):
    """Uninterpreted constants of z3 terms (DAG walk, each node once)."""
    seen, out, todo = set(), {}, list(exprs)
    while todo:
        e = todo.pop()
        i = e.get_id()
        if i in seen:
            continue
        seen.add(i)
        if z3.is_const(e) and e.decl().kind() == z3.Z3_OP_UNINTERPRETED:
            out[e.decl().name()] = e
            continue
        todo.extend(e.children())
    return out


def _minimize(za, zb, assign, vs):
    """Zero variables one at a time while the terms still differ."""
    cur = dict(assign)
    for nm in sorted(cur):
        if cur[nm] == 0:
            continue
        trial = dict(cur)
        trial[nm] = 0
        subs = [(vs[n], z3.BitVecVal(b, vs[n].size())) for n, b in trial.items()]
        a = z3.simplify(z3.substitute(za, *subs))
        b = z3.simplify(z3.substitute(zb, *subs))
        if z3.is_bv_value(a) and z3.is_bv_value(b) and a.as_long() != b.as_long():
            cur = trial
    return cur


def _vars_of(alg, p, acc):
    if isinstance(p, R.Poly):
        for m in p.terms:
            for a in m:
                at = alg.A.by_id[a]
                if at.kind == "var":
                    acc.add(at.name)
                elif at.kind in ("max", "min"):
                    for x in at.args:
                        _vars_of(alg, x, acc)
                else:
                    for x in at.args:
                        _vars_of(alg, x, acc)
    return acc


def _eval(alg, p, env):
    """float64 value of a normal form (None if it mentions an uninterpreted function)."""
    if isinstance(p, R.Inf):
        return float("inf") * p.sign
    total = 0.0
    for m, c in p.terms.items():
        v = float(c)
        for a in m:
            at = alg.A.by_id[a]
            x = _eval_atom(alg, at, env)
            if x is None:
                return None
            v *= x
        total += v
    return total


def _eval_atom(alg, at, env):
    k = at.kind
    if k == "var":
        return env.get(at.name, 0.0)
    args = [_eval(alg, x, env) for x in at.args] if k not in ("max", "min") else [_eval(alg, x, env) for x in at.args]
    if any(a is None for a in args):
        return None
    if k == "max":
        return max(args)
    if k == "min":
        return min(args)
    if k == "ex2":
        return 2.0 ** min(args[0], 1000)
    if k == "inv":
        return 1.0 / args[0] if args[0] else float("inf")
    if k == "sat":
        return min(max(args[0], 0.0), 1.0)
    if k == "round":
        return float({"f16": np.float16, "bf16": np.float32, "f32": np.float32}.get(at.name, np.float64)(args[0]))
    return None


def _differs(x, y, model):
    if x is None or y is None:
        return True
    if np.isnan(x) and np.isnan(y):
        return False
    return not np.isclose(x, y, rtol=1e-3, atol=1e-3)


def _real_cex(alg, cv, rv, ex, seed):
    """Small integer inputs on which the two normal forms differ, greedily minimized
    (Schwartz-Zippel: a nonzero polynomial is nonzero at a random point w.h.p.)."""
    rng = np.random.default_rng(seed)
    names = sorted(_vars_of(alg, cv, set()) | _vars_of(alg, rv, set()))
    best = None
    for trial in range(20):
        env = {n: float(rng.integers(-3, 4)) for n in names}
        a, b = _eval(alg, cv, env), _eval(alg, rv, env)
        if a is None or b is None:
            break
        if _differs(a, b, "real"):
            best = env
            break
    inputs = _zero_inputs(ex)
    if best is None:
        env = {n: float(rng.integers(-3, 4)) for n in names}
        best = env
    else:
        for n in list(best):
            if best[n] == 0:
                continue
            trial = dict(best)
            trial[n] = 0.0
            a, b = _eval(alg, cv, trial), _eval(alg, rv, trial)
            if a is not None and b is not None and _differs(a, b, "real"):
                best = trial
    by = {b.name: b for b in ex.buffers}
    for n, v in best.items():
        buf, _, rest = n.partition("[")
        if buf in by:
            inputs[buf].reshape(-1)[int(rest.rstrip("]"))] = v
    return inputs


def _side_inputs(side, names, inputs):
    """Shared-name inputs -> this kernel's parameter keys."""
    inv = {v: k for k, v in names.items()}
    return {inv[n]: a for n, a in inputs.items() if n in inv}


def _run(side, inputs):
    from kverify.semantics.interpreter import run_kernel

    return run_kernel(side.module, side.kernel, side.spec, inputs={k: np.array(v, copy=True) for k, v in inputs.items()},
                      check=False)


def _values_differ(a, b, model):
    a, b = np.asarray(a).reshape(-1), np.asarray(b).reshape(-1)
    if model == "real" and np.issubdtype(a.dtype, np.floating):
        af, bf = a.astype(np.float64), b.astype(np.float64)
        return ~np.isclose(af, bf, rtol=1e-3, atol=1e-3, equal_nan=True)
    if a.dtype.itemsize == b.dtype.itemsize:
        return a.view(UINT[a.dtype.itemsize]) != b.view(UINT[b.dtype.itemsize])
    return a != b


def _write_launch(side, path):
    s = side.spec
    d = {"kernel": side.kernel.name, "grid": list(s.grid), "block": list(s.block), "cluster": list(s.cluster),
         "args": s.args, "buffers": s.buffers, "outputs": list(s.outputs)}
    if s.dynamic_smem:
        d["dynamic_smem"] = s.dynamic_smem
    Path(path).write_text(json.dumps(d, indent=1))


def _replay(cand, ref, cnames, rnames, ex_r, inputs, name, idx, model, cex_dir, cloc, rloc):
    ci, ri = _side_inputs(cand, cnames, inputs), _side_inputs(ref, rnames, inputs)
    rc, rr = _run(cand, ci), _run(ref, ri)
    if rc.status != "complete" or rr.status != "complete":
        return {"confirmed": False, "reason": f"interpreter: {rc.status} / {rr.status}"}
    inv_c = {v: k for k, v in cnames.items()}
    inv_r = {v: k for k, v in rnames.items()}
    oc, orr = rc.outputs[inv_c[name]], rr.outputs[inv_r[name]]
    bad = _values_differ(oc, orr, model)
    if not bad.any():
        # the element the terms pointed to agrees; look at every output
        return {"confirmed": False, "reason": "the interpreter outputs agree on these inputs"}
    first = int(np.flatnonzero(bad)[0])
    cexd = Path(cex_dir or "kverify-cex")
    cexd.mkdir(parents=True, exist_ok=True)
    stem = f"{Path(cand.path).stem}__vs__{Path(ref.path).stem}"
    cin, rin = cexd / f"{stem}.candidate.npz", cexd / f"{stem}.reference.npz"
    # the reference's outputs ride along as expectations: `kverify run --inputs` compares with them
    expect = {f"expected__{inv_c[n]}": np.asarray(rr.outputs[inv_r[n]]) for n in _outputs(ref, rnames)
              if n in inv_c and inv_r.get(n) in rr.outputs}
    np.savez(cin, **ci, **expect)
    np.savez(rin, **ri)
    cl, rl = cexd / f"{stem}.candidate.launch.json", cexd / f"{stem}.reference.launch.json"
    _write_launch(cand, cl)
    _write_launch(ref, rl)
    nonzero = {n: [int(i) for i in np.flatnonzero(np.asarray(a).reshape(-1) != 0)[:16]] for n, a in inputs.items()}
    shape = ex_r.buffers[[b.name for b in ex_r.buffers].index(name)].shape
    cv, rv = np.asarray(oc).reshape(-1)[first].item(), np.asarray(orr).reshape(-1)[first].item()
    return {
        "confirmed": True,
        "buffer": name,
        "index": first,
        "index_nd": [int(x) for x in np.unravel_index(first, shape)],
        "candidate_value": cv,
        "reference_value": rv,
        "mismatches": int(bad.sum()),
        "of": int(bad.size),
        "candidate_line": (_loc(cloc) if cloc is not None else "never written") if first == idx else None,
        "reference_line": (_loc(rloc) if rloc is not None else "never written") if first == idx else None,
        "inputs": {n: {"nonzero": {str(i): np.asarray(a).reshape(-1)[i].item() for i in nz}}
                   for n, a in inputs.items() for nz in [nonzero[n]] if nz},
        "inputs_file": {"candidate": str(cin), "reference": str(rin)},
        "launch": {"candidate": str(cl), "reference": str(rl)},
        "replay": f"kverify run {cand.path} --launch {cl} --inputs {cin}",
        "replay_reference": f"kverify run {ref.path} --launch {rl} --inputs {rin} --no-ref",
    }


# ---------------------------------------------------------------------- testing
def _fallback_test(res, cand, ref, cnames, rnames, model, n, seed, cex_dir):
    """Bounded differential testing on the interpreter: hypothesis-chosen inputs
    (including NaN/Inf/denormals under bitexact), outputs poisoned with two different
    values (both must give the same result), inputs checked for mutation."""
    if n <= 0:
        return
    try:
        out = differential_test(cand, ref, cnames, rnames, model, n, seed)
    except Exception as e:  # the interpreter cannot run it either
        res.tested = {"error": f"{type(e).__name__}: {e}"}
        return
    res.tested = out
    if out.get("counterexample"):
        cex = out["counterexample"]
        ex_like = _Bufs(ref, rnames)
        rep = _replay(cand, ref, cnames, rnames, ex_like, cex["inputs_arrays"], cex["buffer"], cex["index"], model,
                      cex_dir, None, None)
        out["counterexample"] = {k: v for k, v in cex.items() if k != "inputs_arrays"}
        if rep and rep.get("confirmed"):
            res.verdict = "refuted"
            res.counterexample = rep
            res.message += (f"; testing found a difference: {rep['buffer']}[{rep['index']}] candidate "
                            f"{rep['candidate_value']}, reference {rep['reference_value']}")
            return
    if res.verdict == "unknown" and out.get("examples", 0) and not out.get("counterexample") \
            and not out.get("problems"):
        res.verdict = "tested"
        res.message += f"; tested on {out['examples']} inputs without a difference (not a proof)"


class _Bufs:
    """Buffer list of a kernel (for replay when the symbolic run did not finish)."""

    def __init__(self, side, names):
        from .symexec import Buffer

        self.buffers = []
        for i, p in enumerate(side.kernel.params):
            b = lookup(side.spec.buffers, side.kernel, i)
            if b is None:
                continue
            key = param_key(side.kernel, i)
            self.buffers.append(Buffer(names.get(key, key), key, b["dtype"], tuple(b["shape"]), 0,
                                       dtypes.itemsize(b["dtype"])))


def differential_test(cand, ref, cnames, rnames, model, n, seed):
    from hypothesis import HealthCheck, given, settings, strategies as st
    from hypothesis.errors import HypothesisException

    bufs = _Bufs(ref, rnames).buffers
    outs = set(_outputs(ref, rnames))
    inputs_only = [b for b in bufs if b.name not in outs]
    tried = []
    problems = []
    found = {}

    styles = ["small integers", "uniform [-1, 1]", "wide magnitudes"] + (
        ["NaN/Inf/subnormal mix"] if model == "bitexact" else [])

    def make(style, k, b):
        rng = np.random.default_rng(k)
        shape = b.shape
        if b.dtype in ("float16", "float32", "float64", "bfloat16"):
            ft = np_dtype(b.dtype) if b.dtype != "bfloat16" else np.float32
            if style == "small integers":
                x = rng.integers(-4, 5, shape).astype(ft)
            elif style == "uniform [-1, 1]":
                x = rng.uniform(-1, 1, shape).astype(ft)
            elif style == "wide magnitudes":
                x = (rng.standard_normal(shape) * 2.0 ** rng.integers(-12, 12, shape)).astype(ft)
            else:
                specials = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, np.finfo(ft).tiny / 4, 1.0, -2.5], ft)
                x = np.where(rng.random(shape) < 0.3, specials[rng.integers(0, len(specials), shape)],
                             rng.uniform(-8, 8, shape).astype(ft)).astype(ft)
            if b.dtype == "bfloat16":
                x = (x.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
            return x
        if b.dtype == "bool":
            return rng.integers(0, 2, shape).astype(np.bool_)
        info = np.iinfo(np_dtype(b.dtype))
        hi = 5 if style == "small integers" else min(int(info.max), 1 << 20)
        lo = max(int(info.min), -hi)
        return rng.integers(lo, hi, shape, endpoint=True).astype(np_dtype(b.dtype))

    strat = st.tuples(st.sampled_from(styles), st.integers(0, 2**32 - 1)).map(
        lambda sk: {"_style": sk[0], "_seed": sk[1], **{b.name: make(sk[0], sk[1] + j, b)
                                                         for j, b in enumerate(bufs)}})

    @settings(max_examples=n, database=None, derandomize=True, deadline=None,
              suppress_health_check=list(HealthCheck), print_blob=False)
    @given(strat)
    def prop(drawn):
        inputs = {k: v for k, v in drawn.items() if not k.startswith("_")}
        tried.append((drawn["_style"], drawn["_seed"]))
        ci, ri = _side_inputs(cand, cnames, inputs), _side_inputs(ref, rnames, inputs)
        rc, rr = _run(cand, ci), _run(ref, ri)
        for name in outs:
            inv_c = {v: k for k, v in cnames.items()}
            inv_r = {v: k for k, v in rnames.items()}
            a, b_ = rc.outputs[inv_c[name]], rr.outputs[inv_r[name]]
            bad = _values_differ(a, b_, model)
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                found.update(buffer=name, index=i, style=drawn["_style"], seed=drawn["_seed"],
                             inputs_arrays={k: np.array(v) for k, v in inputs.items()})
                raise AssertionError("differs")
        for b in inputs_only:
            inv_c = {v: k for k, v in cnames.items()}
            after = rc.outputs.get(inv_c.get(b.name))
            if after is not None and not np.array_equal(np.asarray(after).view(UINT[b.esize]),
                                                        np.asarray(inputs[b.name]).view(UINT[b.esize])):
                problems.append(f"the candidate modifies input {b.name}")
                raise AssertionError("mutation")

    def poison_check():
        """Both kernels with every output buffer pre-filled by NaN, then by 12345: each
        pair of runs must agree under the model (an output that keeps stale contents in one
        kernel only shows up here)."""
        rng = np.random.default_rng(seed)
        base = {}
        for b in bufs:
            if b.dtype.startswith("float"):
                base[b.name] = rng.uniform(-1, 1, b.shape).astype(np_dtype(b.dtype))
            else:
                base[b.name] = rng.integers(0, 50, b.shape).astype(np_dtype(b.dtype))
        inv_c = {v: k for k, v in cnames.items()}
        inv_r = {v: k for k, v in rnames.items()}
        for pv in (np.nan, 12345.0):
            inp = dict(base)
            for b in bufs:
                if b.name in outs and b.dtype.startswith("float"):
                    inp[b.name] = np.full(b.shape, pv, np_dtype(b.dtype))
            rc = _run(cand, _side_inputs(cand, cnames, inp))
            rr = _run(ref, _side_inputs(ref, rnames, inp))
            for o in outs:
                if _values_differ(rc.outputs[inv_c[o]], rr.outputs[inv_r[o]], model).any():
                    problems.append(f"with output buffers poisoned by {pv}, output {o} differs")

    t = time.perf_counter()
    try:
        prop()
    except AssertionError:
        pass
    except HypothesisException as e:
        problems.append(str(e))
    try:
        poison_check()
    except Exception as e:  # noqa: BLE001
        problems.append(f"poison check: {e}")
    out = {"examples": len(tried), "strategy": "hypothesis (derandomized) chooses a style and a seed per "
           "example; numpy draws every input element from it: " + ", ".join(styles),
           "tried": [{"style": s_, "seed": k} for s_, k in tried],
           "poisoned_outputs": ["NaN", 12345.0], "input_mutation_checked": [b.name for b in inputs_only],
           "time_s": round(time.perf_counter() - t, 3)}
    if problems:
        out["problems"] = problems
    if found:
        out["counterexample"] = found
    return out

