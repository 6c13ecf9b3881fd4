"""Cheap concrete witnesses for the ``bitexact`` and ``int`` models: both kernels run on the
interpreter on a few input sets designed to expose floating-point contraction (``fma(a, b,
c)`` against ``a*b + c``) and rounding-order differences, and integer wrap-around. A bitwise
difference found this way is a counterexample already confirmed by the interpreter, so
neither the symbolic runs nor the solver are needed (a few interpreter runs of each kernel
instead of per-thread z3 terms). The engine tries the first input set before symbolic
execution (two interpreter runs, so a proof pays little), and the others after it, before
the solver, only when some output element's terms are not identical.

The input sets (every element of every buffer, output buffers' initial contents included):
  ``1+2^-12``        +-(1 + 2^-12) with random signs (2^-6 for f16, 2^-27 for f64): the
                     exact product (1+e)^2 = 1 + 2e + e^2 has a low bit that rounding drops
                     and an FMA keeps, and opposite signs cancel the high part
  ``full mantissas`` random 24-bit (f32) significands with random signs and exponents in
                     [-3, 3]: products whose low bits matter, mixed magnitudes
  ``cancellation``   pairs x, -x*(1 + tiny) side by side, so neighbouring terms cancel
  ``uniform``        uniform [-1, 1]
Integer buffers get random values over the whole range, small values, and values near the
extremes.

When a difference shows, the inputs are shrunk on the interpreter (``testing._shrink``:
everything outside a window around the element zeroed, then each remaining element in turn,
as long as that element still differs), and the replay confirms the final inputs. The source
lines of the stores that produced the element come from the interpreter's write shadow
(``ShadowRun``: the confirming run of each kernel has the shadow on), "never written" only when
that run wrote no byte of it.
"""
from __future__ import annotations

import time

import numpy as np

from kverify.launch.dtypes import np_dtype

from .counterexample import _run, _side_inputs, _values_differ

STYLES = ("1+2^-12", "full mantissas", "cancellation", "uniform")
_EPS_BITS = {"float16": 6, "bfloat16": 4, "float32": 12, "float64": 27}


def design(style: str, b, rng) -> np.ndarray:
    """One buffer's contents for an input style (see the module docstring)."""
    shape, n = tuple(b.shape), int(np.prod(b.shape, dtype=np.int64)) if b.shape else 1
    if b.dtype in ("float16", "float32", "float64", "bfloat16"):
        ft = np.float32 if b.dtype == "bfloat16" else np_dtype(b.dtype)
        sign = np.where(rng.random(n) < 0.5, -1.0, 1.0)
        if style == "1+2^-12":
            x = sign * (1.0 + 2.0 ** -_EPS_BITS[b.dtype])
        elif style == "full mantissas":
            mant = {"float16": 10, "bfloat16": 7, "float32": 23, "float64": 52}[b.dtype]
            frac = rng.integers(1, 1 << min(mant, 52), n, dtype=np.int64).astype(np.float64) / float(1 << min(mant, 52))
            x = sign * (1.0 + frac) * 2.0 ** rng.integers(-3, 4, n)
        elif style == "cancellation":
            base = (1.0 + rng.random(n)) * 2.0 ** rng.integers(-2, 3, n)
            x = np.where(np.arange(n) % 2 == 0, base, -np.roll(base, 1) * (1.0 + 2.0 ** -_EPS_BITS[b.dtype]))
        else:
            x = rng.uniform(-1.0, 1.0, n)
        x = x.astype(ft).reshape(shape)
        if b.dtype == "bfloat16":
            x = (x.view(np.uint32) >> 16).astype(np.uint16)
        return x
    if b.dtype == "bool":
        return rng.integers(0, 2, shape).astype(np.bool_)
    it = np_dtype(b.dtype)
    info = np.iinfo(it)
    if style == "1+2^-12":
        return rng.integers(-4, 5, shape).clip(info.min, info.max).astype(it)
    if style == "cancellation":
        edge = np.array([info.max, info.max - 1, info.min, info.min + 1, 0, 1], dtype=object)
        return np.array(edge[rng.integers(0, len(edge), n)].tolist(), dtype=it).reshape(shape)
    return rng.integers(int(info.min), int(info.max), shape, endpoint=True, dtype=np.int64 if info.bits < 64
                        else it).astype(it)


def find_witness(cand, ref, cnames, rnames, buffers, outs, model, seed=0, time_cap=4.0, progress=None,
                 styles=STYLES):
    """Run both kernels on the designed input sets; the first bitwise difference as
    ``(buffer, flat index, inputs, style)`` (inputs keyed by shared buffer name), or None.
    Stops after ``time_cap`` seconds of interpreter runs (an input set already started runs to
    its end)."""
    t0 = time.perf_counter()
    inv_c = {v: k for k, v in cnames.items()}
    inv_r = {v: k for k, v in rnames.items()}
    for style in styles:
        k = STYLES.index(style)
        if time.perf_counter() - t0 > time_cap:
            return None
        if progress is not None:
            progress.update("concrete witnesses before the solver", f"input set {k + 1}/{len(STYLES)} ({style})")
        rng = np.random.default_rng([seed, k])
        inputs = {b.name: design(style, b, rng) for b in buffers}
        try:
            rc = _run(cand, _side_inputs(cand, cnames, inputs))
            rr = _run(ref, _side_inputs(ref, rnames, inputs))
        except Exception:  # noqa: BLE001 - the interpreter cannot run it: no cheap witness
            return None
        if rc.status != "complete" or rr.status != "complete":
            continue
        for name in outs:
            a, b_ = rc.outputs.get(inv_c.get(name)), rr.outputs.get(inv_r.get(name))
            if a is None or b_ is None:
                continue
            bad = _values_differ(a, b_, model)
            if bad.any():
                return name, int(np.flatnonzero(bad)[0]), inputs, style
    return None


class ShadowRun:
    """One interpreter run with the race shadow on: ``status`` and ``outputs`` as a
    ``RunResult`` has them, and ``line(key, idx)``: ``(found, loc)`` for the last store to
    element ``idx`` of buffer parameter ``key`` (``(True, None)``: no byte of it was written;
    ``(False, None)``: the run does not tell)."""

    def __init__(self, side, inputs: dict):
        from kverify.launch import initial_inputs
        from kverify.semantics.interpreter import _machine
        from kverify.semantics.interpreter.scheduler import Deterministic

        full = initial_inputs(side.kernel, side.spec, {k: np.array(v, copy=True) for k, v in inputs.items()}, 0)
        self.m = _machine(side.module, side.kernel, side.spec, full, Deterministic(), 500_000, True).run()
        self.status = self.m.status
        self.outputs = self.m.outputs()

    def line(self, key: str, idx: int):
        m = self.m
        try:
            if m.status != "complete" or key not in m.buffers:
                return False, None
            start, dtype, _shape = m.buffers[key]
            es = np.dtype(dtype).itemsize
            sh = m.gmem.shadow
            lo = start + idx * es
            agents = sh.w_agent[lo:lo + es]
            if (agents < 0).all():
                return True, None
            j = int(np.flatnonzero(agents >= 0)[-1])
            return True, m.locs[int(sh.w_loc[lo + j])]
        except Exception:  # noqa: BLE001 - the lines are a courtesy; the refutation stands without them
            return False, None


def shadow_lines(cand, ref, cnames, rnames, inputs):
    """Both kernels on ``inputs`` (shared names) with the race shadow on: ``(runs, lines)``
    for ``counterexample._replay`` (``lines(name, i)``: the store locations of an output
    element, None when the runs do not tell), or ``(None, None)`` when they cannot run."""
    try:
        runs = (ShadowRun(cand, _side_inputs(cand, cnames, inputs)), ShadowRun(ref, _side_inputs(ref, rnames, inputs)))
    except Exception:  # noqa: BLE001 - replay without the shadow (no store lines)
        return None, None
    inv_c = {v: k for k, v in cnames.items()}
    inv_r = {v: k for k, v in rnames.items()}

    def lines(n, i):
        okc, lc = runs[0].line(inv_c[n], i)
        okr, lr = runs[1].line(inv_r[n], i)
        return (lc, lr) if okc and okr else None

    return runs, lines
