"""Bounded differential testing of a candidate against a reference on the interpreter
(the fallback when the proof does not go through): hypothesis-chosen inputs, poisoned
outputs, an input-mutation check; a difference found is replayed as a counterexample."""
from __future__ import annotations

import time

import numpy as np

from kverify.launch import dtypes, lookup, param_key
from kverify.launch.dtypes import np_dtype

from .counterexample import (UINT, _outputs, _replay, _run, _side_inputs, _values_differ, output_names,
                             undefined_output)


def _fallback_test(res, cand, ref, cnames, rnames, model, n, seed, cex_dir, outs=None, lines=None, progress=None):
    """Bounded differential testing on the interpreter: hypothesis-chosen inputs
    (including NaN/Inf/denormals under bitexact), outputs poisoned with two different
    values (both must give the same result), inputs checked for mutation. ``outs``: the
    output buffers (shared names; default: named by a launch spec, else those a run of
    either kernel changes); ``lines(name, i)``: the store lines of an element when the
    symbolic runs finished."""
    if n <= 0:
        return
    try:
        if outs is None:
            outs = output_names(cand, ref, cnames, rnames, None if (ref.spec.outputs or cand.spec.outputs)
                                else changed_buffers(cand, ref, cnames, rnames, seed))
        out = differential_test(cand, ref, cnames, rnames, model, n, seed, outs=outs, progress=progress)
    except Exception as e:  # the interpreter cannot run it either
        res.tested = {"error": f"{type(e).__name__}: {e}"}
        return
    res.tested = out
    if out.get("counterexample"):
        cex = out["counterexample"]
        ex_like = _Bufs(ref, rnames)
        small = _shrink(cand, ref, cnames, rnames, cex["inputs_arrays"], cex["buffer"], cex["index"], model)
        runs = None
        if lines is None:  # the symbolic runs did not finish: the interpreter's race shadow knows the stores
            from .witness import shadow_lines

            runs, lines = shadow_lines(cand, ref, cnames, rnames, small)
        rep = _replay(cand, ref, cnames, rnames, ex_like, small, cex["buffer"], cex["index"], model,
                      cex_dir, None, None, lines=lines, outs=outs, runs=runs)
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
    elif res.verdict == "unknown" and not out.get("examples", 0) and out.get("problems"):
        res.message += f"; not tested: {out['problems'][-1]}"


def _differs_at(cand, ref, cnames, rnames, inputs, name, idx, model) -> bool:
    inv_c = {v: k for k, v in cnames.items()}
    inv_r = {v: k for k, v in rnames.items()}
    rc = _run(cand, _side_inputs(cand, cnames, inputs))
    rr = _run(ref, _side_inputs(ref, rnames, inputs))
    if rc.status != "complete" or rr.status != "complete":
        return False
    return bool(_values_differ(np.asarray(rc.outputs[inv_c[name]]).reshape(-1)[idx:idx + 1],
                               np.asarray(rr.outputs[inv_r[name]]).reshape(-1)[idx:idx + 1], model).any())


SHRINK_RUNS = 24  # pairs of runs the element-wise shrinking may spend


def _shrink(cand, ref, cnames, rnames, inputs, name, idx, model, max_runs=SHRINK_RUNS):
    """Smaller inputs for a difference at ``name[idx]``, found on the interpreter while that
    element still differs: every element of every buffer zeroed except those within 1 of the
    element (an n-d box for a buffer with the output's number of dimensions, else a window of
    flat indices; else within 4; else the inputs stay whole), then each buffer zeroed whole,
    then each remaining element, the last two steps for at most ``max_runs`` runs of the pair
    (a count, not seconds: the counterexample must not depend on the machine's speed)."""
    runs = 0

    def spent():
        nonlocal runs
        runs += 1
        return runs > max_runs

    try:
        trial = None
        oshape = np.asarray(inputs[name]).shape
        pos = np.unravel_index(idx, oshape) if len(oshape) > 1 else None
        for radius in (1, 4):
            t = {}
            for n, a in inputs.items():
                a = np.asarray(a)
                z = np.zeros_like(a)
                if pos is not None and a.ndim == len(oshape):
                    # an n-d box around the element (a 2D stencil reads the rows above and below)
                    box = tuple(slice(max(0, p - radius), min(d, p + radius + 1)) for p, d in zip(pos, a.shape))
                    z[box] = a[box]
                else:
                    zf, af = z.reshape(-1), a.reshape(-1)
                    lo, hi = max(0, idx - radius), min(a.size, idx + radius + 1)
                    zf[lo:hi] = af[lo:hi]
                t[n] = z
            if _differs_at(cand, ref, cnames, rnames, t, name, idx, model):
                trial = t
                break
        if trial is None:
            return inputs
        for n in sorted(trial, key=lambda n: n != name):  # the output's initial contents first
            if not trial[n].any() or spent():
                continue
            keep = trial[n]
            trial[n] = np.zeros_like(keep)
            if not _differs_at(cand, ref, cnames, rnames, trial, name, idx, model):
                trial[n] = keep
        for n in trial:
            flat = trial[n].reshape(-1)
            for i in np.flatnonzero(flat != 0):
                if spent():
                    return trial
                keep = flat[i].copy()
                flat[i] = 0
                if not _differs_at(cand, ref, cnames, rnames, trial, name, idx, model):
                    flat[i] = keep
        return trial
    except Exception:  # noqa: BLE001 - shrinking is best effort; the original inputs still replay
        return inputs


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


def changed_buffers(cand, ref, cnames, rnames, seed) -> set:
    """Buffers (shared names) whose contents a run of either kernel on random inputs changes:
    the outputs when no launch spec names them and the symbolic runs did not finish."""
    rng = np.random.default_rng(seed)
    bufs = _Bufs(ref, rnames).buffers
    base = {}
    for b in bufs:
        if b.dtype.startswith("float"):
            base[b.name] = rng.uniform(-1, 1, b.shape).astype(np_dtype(b.dtype))
        else:
            base[b.name] = rng.integers(0, 50, b.shape).astype(np_dtype(b.dtype))
    out = set()
    for side, names in ((cand, cnames), (ref, rnames)):
        r = _run(side, _side_inputs(side, names, base))
        for key, shared in names.items():
            after = r.outputs.get(key)
            if after is not None and shared in base and \
                    _values_differ(np.asarray(after), base[shared], "bitexact").any():
                out.add(shared)
    return out


def differential_test(cand, ref, cnames, rnames, model, n, seed, outs=None, progress=None):
    from hypothesis import HealthCheck, Phase, given, settings, strategies as st
    from hypothesis.errors import HypothesisException

    bufs = _Bufs(ref, rnames).buffers
    outs = set(outs if outs is not None else _outputs(ref, rnames))
    inputs_only = [b for b in bufs if b.name not in outs]
    tried = []
    problems = []
    found = {}
    incomplete = []  # a run that did not complete compared nothing: no example counts

    def completed(*runs) -> bool:
        for side, r in runs:
            status = getattr(r, "status", "complete")  # a torch reference has none
            if status != "complete":
                incomplete.append(f"the {side} kernel's run on the interpreter ended {status}: {r.reason}")
                return False
            why = undefined_output(side, r)
            if why is not None:  # its output is not what a GPU gives: the comparison says nothing
                incomplete.append(why)
                return False
        return True

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

    # no shrinking: every example is replayable from its seed, and a shrink run costs a pair of
    # interpreter runs per step
    @settings(max_examples=n, database=None, derandomize=True, deadline=None, phases=(Phase.generate,),
              suppress_health_check=list(HealthCheck), print_blob=False)
    @given(strat)
    def prop(drawn):
        inputs = {k: v for k, v in drawn.items() if not k.startswith("_")}
        tried.append((drawn["_style"], drawn["_seed"]))
        if progress is not None:
            progress.update("testing", f"example {len(tried)}/{n} ({drawn['_style']})")
        ci, ri = _side_inputs(cand, cnames, inputs), _side_inputs(ref, rnames, inputs)
        rc, rr = _run(cand, ci), _run(ref, ri)
        if not completed(("candidate", rc), ("reference", rr)):
            raise AssertionError("incomplete")
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
            if not completed(("candidate", rc), ("reference", rr)):
                return
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
           "outputs": sorted(outs), "poisoned_outputs": ["NaN", 12345.0], "input_mutation_checked": [b.name for b in inputs_only],
           "time_s": round(time.perf_counter() - t, 3)}
    if incomplete:
        out["examples"] = 0
        problems.append(incomplete[0])
    if problems:
        out["problems"] = problems
    if found:
        out["counterexample"] = found
    return out
