"""Counterexamples of the equivalence engine: inputs from a z3 model or from the real
normal forms (probed, minimized), and their replay on the interpreter (both kernels run on
the same inputs; the first differing element, both source lines, and the launch / input files
`kverify run` replays)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import z3

from kverify.launch.dtypes import lookup, np_dtype
from kverify.semantics.ir.nodes import where as _loc
from kverify.semantics.memory_model.execution import UNINITIALIZED_REGISTER
from kverify.semantics.values.narrow import fp8_code

from . import realterm as R

UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def _outputs(side, names: dict):
    """The output buffers (shared names) one launch spec names; all its buffers when it
    names none (see :func:`output_names` for the rule the engine uses)."""
    outs = side.spec.outputs
    if not outs:
        return [names[k] for k in names]
    return [names.get(o, o) for o in outs]


def output_names(cand, ref, cnames: dict, rnames: dict, written: set | None = None) -> list:
    """The outputs compared: those the reference's launch spec names, else those the
    candidate's names, else the buffers either kernel stores to (``written``, shared names),
    else (nothing known about the stores) every buffer."""
    if ref.spec.outputs:
        return _outputs(ref, rnames)
    if cand.spec.outputs:
        return _outputs(cand, cnames)
    allb = [rnames[k] for k in rnames]
    if written is not None:
        return [n for n in allb if n in written]
    return allb


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
    if not isinstance(p, R.Poly):  # an integer result (Bits) of the real model: no real value here
        return None
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
    if k == "log2e":
        return float(np.log2(np.e))
    if k == "lg2":
        return float(np.log2(args[0])) if args[0] > 0 else float("nan")
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
            fmt = getattr(lookup(by[buf].dtype), "ptx", None)
            if fmt in ("e4m3", "e5m2"):  # fp8 elements are stored as their codes (small integers are exact)
                v = fp8_code(v, fmt)
            inputs[buf].reshape(-1)[int(rest.rstrip("]"))] = v
    return inputs


def _side_inputs(side, names, inputs):
    """Shared-name inputs -> this kernel's parameter keys."""
    inv = {v: k for k, v in names.items()}
    return {inv[n]: a for n, a in inputs.items() if n in inv}


def _run(side, inputs):
    if hasattr(side, "run_reference"):  # a reference that is not a kernel (torchref.TorchReference)
        return side.run_reference(inputs)
    from kverify.semantics.interpreter import run_kernel

    return run_kernel(side.module, side.kernel, side.spec, inputs={k: np.array(v, copy=True) for k, v in inputs.items()},
                      check=False)


def undefined_output(side: str, run) -> str | None:
    """Why a run's outputs are not what a GPU gives: it stored or used a value derived from a
    register no instruction wrote (``uninitialized.register``; the interpreter read it as 0)."""
    for f in getattr(run, "findings", ()):
        if f.rule == UNINITIALIZED_REGISTER.id:
            at = f" at {_loc(f.locs[0])}" if f.locs else ""
            return (f"the {side} kernel's run uses a value derived from a register no instruction wrote "
                    f"({UNINITIALIZED_REGISTER.id}{at}): a GPU need not give the output the interpreter computed")
    return None


def _values_differ(a, b, model):
    """Per element: do the two outputs differ under the model (``real``: beyond 1e-3;
    otherwise bitwise, with NaN canonical: two NaNs agree whatever their payloads)."""
    a, b = np.asarray(a).reshape(-1), np.asarray(b).reshape(-1)
    if model == "real" and np.issubdtype(a.dtype, np.floating):
        af, bf = a.astype(np.float64), b.astype(np.float64)
        return ~np.isclose(af, bf, rtol=1e-3, atol=1e-3, equal_nan=True)
    if a.dtype.itemsize == b.dtype.itemsize:
        bad = a.view(UINT[a.dtype.itemsize]) != b.view(UINT[b.dtype.itemsize])
        if np.issubdtype(a.dtype, np.floating) and np.issubdtype(b.dtype, np.floating):
            bad &= ~(np.isnan(a) & np.isnan(b))
        return bad
    return a != b


def _write_launch(side, path):
    s = side.spec
    d = {"kernel": side.kernel.name, "grid": list(s.grid), "block": list(s.block), "cluster": list(s.cluster),
         "args": s.args, "buffers": s.buffers, "outputs": list(s.outputs)}
    if s.dynamic_smem:
        d["dynamic_smem"] = s.dynamic_smem
    Path(path).write_text(json.dumps(d, indent=1))


def _replay(cand, ref, cnames, rnames, ex_r, inputs, name, idx, model, cex_dir, cloc, rloc, lines=None, outs=None,
            runs=None):
    """Both kernels on ``inputs``; a confirmed counterexample at the first differing element
    of output ``name`` (``idx`` is the element the terms pointed to, with the store lines
    ``cloc``/``rloc``). ``lines(name, i)`` gives the store lines of any element when the
    symbolic runs finished (None: they are not known, and the report says so instead of
    claiming "never written"); ``outs`` are the output buffers (shared names); ``runs``: the
    two kernels' runs on exactly these inputs when the caller has them already."""
    ci, ri = _side_inputs(cand, cnames, inputs), _side_inputs(ref, rnames, inputs)
    rc, rr = runs if runs is not None else (_run(cand, ci), _run(ref, ri))
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
    outs = list(outs) if outs is not None else _outputs(ref, rnames)
    expect = {f"expected__{inv_c[n]}": np.asarray(rr.outputs[inv_r[n]]) for n in outs
              if n in inv_c and inv_r.get(n) in rr.outputs}
    np.savez(cin, **ci, **expect)
    np.savez(rin, **ri)
    cl, rl = cexd / f"{stem}.candidate.launch.json", cexd / f"{stem}.reference.launch.json"
    _write_launch(cand, cl)
    _write_launch(ref, rl)
    nz_all = {n: np.flatnonzero(np.asarray(a).reshape(-1) != 0) for n, a in inputs.items()}
    nonzero = {n: [int(i) for i in v[:16]] for n, v in nz_all.items()}  # the report shows the first 16
    shape = ex_r.buffers[[b.name for b in ex_r.buffers].index(name)].shape
    cv, rv = np.asarray(oc).reshape(-1)[first].item(), np.asarray(orr).reshape(-1)[first].item()
    if lines is not None:
        known = lines(name, first)
    elif first == idx and (cloc is not None or rloc is not None):
        known = (cloc, rloc)
    else:
        known = None  # the symbolic runs did not finish: which store wrote it is not known
    if known is not None:
        cline = _loc(known[0]) if known[0] is not None else "never written"
        rline = _loc(known[1]) if known[1] is not None else "never written"
    else:
        cline = rline = None
    return {
        "confirmed": True,
        "buffer": name,
        "index": first,
        "index_nd": [int(x) for x in np.unravel_index(first, shape)],
        "candidate_value": cv,
        "reference_value": rv,
        "mismatches": int(bad.sum()),
        "of": int(bad.size),
        "candidate_line": cline,
        "reference_line": rline,
        "lines_known": known is not None,
        # output buffers' initial contents are inputs of the run too (an element one kernel
        # never writes keeps them), but they are labelled as what they are
        "inputs": {n: {"nonzero": {str(i): np.asarray(a).reshape(-1)[i].item() for i in nz},
                       "nonzero_count": int(nz_all[n].size),
                       "role": "output (initial contents)" if n in outs else "input"}
                   for n, a in inputs.items() for nz in [nonzero[n]] if nz},
        "inputs_file": {"candidate": str(cin), "reference": str(rin)},
        "launch": {"candidate": str(cl), "reference": str(rl)},
        # bitexact/int: the replay compares exactly (a last-bit difference is the point)
        "replay": f"kverify run {cand.path} --launch {cl} --inputs {cin}" + (
            " --rtol 0 --atol 0" if model != "real" else ""),
        "replay_reference": f"kverify run {ref.path} --launch {rl} --inputs {rin} --no-ref",
    }
