"""Poisoned output buffers (B1 of docs/validation.md).

Every output buffer starts each run filled with a *poison* pattern, and each trial runs
twice with two different poisons: pattern ``A`` is a NaN (an integer pattern for integer
buffers) and pattern ``B`` a plausible finite value, both drawn per trial from the seed so a
kernel cannot special-case a constant. An element that still holds the poison after the
run was never written; an element whose value differs between the two runs depends on
memory the kernel did not initialize (or on a race).

The reference sees the same poisoned contents as its initial output buffers, so a kernel
that legitimately accumulates into its output (a histogram) is compared against
``initial + counts`` in each run, and the two runs are required to agree exactly where the
two references agree.
"""
from __future__ import annotations

import numpy as np

from kverify.launch import dtype as _dtype

_UINT = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}

# exponent-all-ones masks (NaN when the mantissa is non-zero) and layouts
_FLOAT = {  # dtype: (width, exponent mask, mantissa bits, bias)
    "float16": (16, 0x7C00, 10, 15),
    "bfloat16": (16, 0x7F80, 7, 127),
    "float32": (32, 0x7F800000, 23, 127),
    "float64": (64, 0x7FF0000000000000, 52, 1023),
}


def is_float_dtype(dtype: str) -> bool:
    return dtype in _FLOAT


def poison_bits(dtype: str, which: str, rng: np.random.Generator) -> int:
    """One poison bit pattern for ``dtype``: ``which`` is ``"A"`` (a NaN with a random
    non-zero payload; for integers 0xA5-style bytes with a random low byte) or ``"B"`` (a
    finite value between 2^10 and 2^13 with a random mantissa; for integers 0x5A-style)."""
    if dtype in _FLOAT:
        w, emask, mbits, bias = _FLOAT[dtype]
        mant = int(rng.integers(1, 1 << mbits))
        if which == "A":
            return emask | mant | (1 << (mbits - 1))  # a quiet NaN with a random payload
        exp = bias + int(rng.integers(10, 13))
        sign = int(rng.integers(0, 2)) << (w - 1)
        return sign | (exp << mbits) | mant
    w = _dtype(dtype).bits
    if dtype == "bool":
        return 0xA5 if which == "A" else 0x5A
    byte = 0xA5 if which == "A" else 0x5A
    pat = int.from_bytes(bytes([byte]) * (w // 8), "little")
    low = int(rng.integers(1, 255))
    return (pat & ~0xFF) | low


def filled(dtype: str, shape, bits: int) -> np.ndarray:
    """An array of ``dtype`` whose every element has the bit pattern ``bits``."""
    r = _dtype(dtype)
    raw = np.full(tuple(shape), bits, _UINT[r.bits])
    return raw.view(r.np)


def as_bits(arr: np.ndarray) -> np.ndarray:
    """The raw bit patterns of an array (for exact comparisons: NaN payloads count)."""
    a = np.ascontiguousarray(arr)
    if a.dtype == np.bool_:
        return a.view(np.uint8)
    return a.view(_UINT[a.dtype.itemsize * 8])


def still_poisoned(out: np.ndarray, bits: int) -> np.ndarray:
    """Mask of elements that still hold the poison pattern ``bits``."""
    return as_bits(out) == np.array(bits).astype(as_bits(out).dtype)


def runs_disagree(out_a: np.ndarray, out_b: np.ndarray, ref_a: np.ndarray, ref_b: np.ndarray) -> np.ndarray:
    """Mask of elements where the two poisoned runs differ although the two references
    agree there (bit for bit): the output depends on memory the kernel did not write."""
    same_ref = as_bits(np.asarray(ref_a, dtype=out_a.dtype)) == as_bits(np.asarray(ref_b, dtype=out_b.dtype))
    return same_ref & (as_bits(out_a) != as_bits(out_b))
