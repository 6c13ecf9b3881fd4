"""Comparing a kernel's outputs with the reference in float64 (B3 of docs/validation.md).

Integers and booleans compare exactly. Floats compare in float64 with a per-dtype relative
tolerance ``rtol`` (``RTOL``, or the user's) and an absolute slack tied to the size of the
reference itself, ``atol = rtol * rms(ref)`` (or the user's ``atol``), elementwise::

    |out - ref| <= atol + rtol * |ref|

and, over the whole buffer, ``||out - ref||_2 <= rtol * ||ref||_2``. A NaN or infinity in
the output passes only where the reference has the same non-finite value.

A reference too weak to tell a correct kernel from a trivial one (every output buffer
constant in every trial, or a user ``atol`` as large as the signal) makes the comparison
inconclusive rather than passing (``weak_reference``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: relative tolerance per output dtype: a few units in the last place of the format, for
#: results accumulated in at least that precision (fp64 reference, fp32 accumulation).
RTOL = {"float64": 1e-12, "float32": 1e-5, "float16": 2e-3, "bfloat16": 1.6e-2}


def to_float64(arr: np.ndarray, dtype: str) -> np.ndarray:
    """Values of a buffer as float64 (bfloat16 buffers hold raw uint16 bit patterns)."""
    a = np.asarray(arr)
    if dtype == "bfloat16" and a.dtype == np.uint16:
        return (a.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return a.astype(np.float64)


@dataclass
class Comparison:
    ok: bool
    mismatches: int = 0
    of: int = 0
    first_index: int | None = None
    got: object = None
    expected: object = None
    max_abs_err: float = 0.0
    rel_err: float = 0.0
    rtol: float = 0.0
    atol: float = 0.0

    def to_json(self) -> dict:
        return {k: v for k, v in self.__dict__.items()}


def compare(got: np.ndarray, ref: np.ndarray, dtype: str, where: np.ndarray | None = None,
            rtol: float | None = None, atol: float | None = None) -> Comparison:
    """Compare ``got`` with ``ref`` over the elements selected by ``where`` (all when
    ``None``), by the rules of this module."""
    g = np.asarray(got).reshape(-1)
    r = np.asarray(ref).reshape(-1)
    n = min(g.size, r.size)
    g, r = g[:n], r[:n]
    sel = np.ones(n, bool) if where is None else np.asarray(where).reshape(-1)[:n]
    if dtype not in RTOL:  # integers, bool: exact
        bad = sel & (g.astype(np.int64) != r.astype(np.int64)) if dtype != "uint64" else sel & (g != r.astype(g.dtype))
        idx = np.flatnonzero(bad)
        return Comparison(not idx.size, int(idx.size), int(sel.sum()),
                          int(idx[0]) if idx.size else None,
                          g[idx[0]].item() if idx.size else None, r[idx[0]].item() if idx.size else None)
    gf, rf = to_float64(g, dtype), to_float64(r, dtype)
    rt = RTOL[dtype] if rtol is None else rtol
    fin = np.isfinite(rf)
    scale = float(np.sqrt(np.mean(rf[sel & fin] ** 2))) if (sel & fin).any() else 0.0
    at = rt * scale if atol is None else atol
    with np.errstate(all="ignore"):
        err = np.abs(gf - rf)
        ok_fin = fin & np.isfinite(gf) & (err <= at + rt * np.abs(rf))
        ok_nonfin = ~fin & ((np.isnan(rf) & np.isnan(gf)) | (np.isinf(rf) & (gf == rf)))
    bad = sel & ~(ok_fin | ok_nonfin)
    both = sel & fin & np.isfinite(gf)
    num = float(np.sqrt(np.sum(err[both] ** 2))) if both.any() else 0.0
    den = float(np.sqrt(np.sum(rf[both] ** 2))) if both.any() else 0.0
    rel = num / den if den > 0 else (0.0 if num == 0 else float("inf"))
    norm_bad = rel > rt
    idx = np.flatnonzero(bad)
    c = Comparison(not idx.size and not norm_bad, int(idx.size), int(sel.sum()),
                   int(idx[0]) if idx.size else None,
                   float(gf[idx[0]]) if idx.size else None, float(rf[idx[0]]) if idx.size else None,
                   float(np.max(err[both])) if both.any() else 0.0, rel, rt, at)
    return c


def is_constant(ref: np.ndarray, dtype: str, where: np.ndarray | None = None) -> bool:
    """True when the selected reference elements hold a single value (or none)."""
    r = np.asarray(ref).reshape(-1)
    if where is not None:
        r = r[np.asarray(where).reshape(-1)[: r.size]]
    if r.size <= 1:
        return True
    if dtype in RTOL:
        rf = to_float64(r, dtype)
        return bool(np.all(rf == rf[0]) or np.all(np.isnan(rf)))
    return bool(np.all(r == r[0]))


def signal_below_tolerance(ref: np.ndarray, dtype: str, atol: float | None) -> bool:
    """A user ``atol`` at least half the largest reference magnitude lets a zero (or any
    small) output pass."""
    if atol is None or dtype not in RTOL:
        return False
    rf = to_float64(np.asarray(ref).reshape(-1), dtype)
    rf = rf[np.isfinite(rf)]
    return rf.size > 0 and atol >= 0.5 * float(np.max(np.abs(rf)))
