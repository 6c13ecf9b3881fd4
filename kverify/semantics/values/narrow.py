"""Narrow floating-point formats as the tensor cores read and write them: the exact value
of an f16, bf16, tf32, e4m3 or e5m2 element as a float32 (``to_f32``; every value of these
formats is a float32 value), and the rounding of a result to an f16/bf16 accumulator
element (``round_to``).

Owns the two 8-bit formats (``FP8``; PTX ISA 9.0 §5.2.3 "Alternate Floating-Point Data
Formats" for ``.e4m3``/``.e5m2`` and §5.2.5.1 "Packed Floating Point Data Types" for the
``.e4m3x2``/``.e5m2x2`` pairs; the sub-section numbers of §5.2.5.x differ between ISA
releases), following the OCP 8-bit floating point specification (OFP8):

* ``e4m3`` (CUDA ``__nv_fp8_e4m3``, torch ``float8_e4m3fn``): 1 sign, 4 exponent bits with
  bias 7, 3 mantissa bits; no infinities: ``S.1111.111`` (0x7F, 0xFF) is NaN and every other
  code with exponent 15 is finite, so the largest value is ``1.75 * 2^8 = 448``; subnormals
  (exponent 0) are ``m/8 * 2^-6``.
* ``e5m2`` (CUDA ``__nv_fp8_e5m2``, torch ``float8_e5m2``): 1 sign, 5 exponent bits with bias
  15, 2 mantissa bits, IEEE-754-like: exponent 31 is infinity (mantissa 0) or NaN; the
  largest finite value is ``1.75 * 2^15 = 57344``; it is the upper byte of an f16.

The decoding is written once here; the interpreter's wgmma/mma.sync and the equivalence
engine's tensor-core terms both read fp8 operands through it.
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np


@dataclass(frozen=True)
class Fp8Format:
    """An 8-bit float: ``ebits`` exponent bits with ``bias``, ``mbits`` mantissa bits;
    ``ieee``: the all-ones exponent is inf/NaN (e5m2), else only all-ones exponent and
    mantissa is NaN and there is no infinity (e4m3)."""

    name: str
    ebits: int
    mbits: int
    bias: int
    ieee: bool

    @property
    def max_finite(self) -> float:
        emax = (1 << self.ebits) - (2 if self.ieee else 1) - self.bias
        top = (1 << self.mbits) - (1 if self.ieee else 2)  # e4m3: mantissa 111 at emax is NaN
        return (1 + top / (1 << self.mbits)) * 2.0 ** emax


FP8 = {
    "e4m3": Fp8Format("e4m3", 4, 3, 7, ieee=False),
    "e5m2": Fp8Format("e5m2", 5, 2, 15, ieee=True),
}


def fp8_to_f32(codes, fmt: str) -> np.ndarray:
    """The float32 value of each fp8 code (an integer array or scalar, low 8 bits used).

    Exact: a normal code is ``(1.m) * 2^(e - bias)``, a subnormal (``e == 0``) is
    ``(0.m) * 2^(1 - bias)``, both representable in float32. e4m3 ``S.1111.111`` and e5m2
    ``S.11111.mm`` with ``mm != 0`` give a NaN, e5m2 ``S.11111.00`` gives ``+-inf``; the sign
    of a zero is kept (0x80 is -0.0).
    """
    f = FP8[fmt]
    c = np.asarray(codes).astype(np.int64) & 0xFF
    s = (c >> 7) & 1
    e = (c >> f.mbits) & ((1 << f.ebits) - 1)
    m = c & ((1 << f.mbits) - 1)
    sig = np.where(e == 0, m, m | (1 << f.mbits))
    exp = np.where(e == 0, 1, e) - f.bias - f.mbits
    v = np.ldexp(sig.astype(np.float64), exp.astype(np.int64))
    top = e == (1 << f.ebits) - 1
    if f.ieee:
        v = np.where(top, np.where(m == 0, np.inf, np.nan), v)
    else:
        v = np.where(top & (m == (1 << f.mbits) - 1), np.nan, v)
    v = np.where(s == 1, -v, v)
    return v.astype(np.float32)


def fp8_fraction(code: int, fmt: str) -> Fraction | None:
    """The exact value of one fp8 code as a Fraction; ``None`` for a NaN or an infinity."""
    v = float(fp8_to_f32(int(code), fmt))
    return Fraction(v) if np.isfinite(v) else None


def fp8_code(value: float, fmt: str) -> int | None:
    """The fp8 code whose value is exactly ``value`` (+0.0 for zero), or ``None`` when ``value``
    is not an fp8 value of ``fmt``."""
    table = _FP8_CODES.get(fmt)
    if table is None:
        vals = fp8_to_f32(np.arange(256), fmt)
        table = _FP8_CODES[fmt] = {}
        for code in range(255, -1, -1):  # the lower code wins: +0.0 (0x00) over -0.0 (0x80)
            v = float(vals[code])
            if np.isfinite(v):
                table[v] = code
    return table.get(float(value))


_FP8_CODES: dict = {}

#: element width in bits of each operand format ``to_f32`` reads
ELEMENT_BITS = {"f16": 16, "bf16": 16, "tf32": 32, "e4m3": 8, "e5m2": 8}


def to_f32(bits, ty: str) -> np.ndarray:
    """The float32 value of each element bit pattern ``bits`` (an integer array, the element
    in the low bits) of operand format ``ty``: f16 and bf16 widened exactly, tf32 as the
    float32 with its 13 low mantissa bits cleared (the tensor core reads 19 bits), e4m3 and
    e5m2 by ``fp8_to_f32``."""
    b = np.asarray(bits).astype(np.uint64)
    if ty in FP8:
        return fp8_to_f32(b & np.uint64(0xFF), ty)
    if ty == "bf16":
        return ((b & np.uint64(0xFFFF)).astype(np.uint32) << np.uint32(16)).view(np.float32)
    if ty == "f16":
        return (b & np.uint64(0xFFFF)).astype(np.uint16).view(np.float16).astype(np.float32)
    if ty in ("tf32", "f32"):
        keep = 0xFFFFE000 if ty == "tf32" else 0xFFFFFFFF
        return (b & np.uint64(keep)).astype(np.uint32).view(np.float32)
    raise ValueError(f"no tensor-core operand format {ty!r} (known: {sorted(ELEMENT_BITS)}, f32)")


def round_to(vals, ty: str) -> np.ndarray:
    """Bit patterns (uint64) of ``vals`` rounded to nearest even in ``ty`` (f16 or bf16).
    f16: float32 or float64 values are rounded once (numpy's conversion); bf16: from the
    float32 value (a float64 is first rounded to float32)."""
    v = np.asarray(vals)
    if ty == "f16":
        return v.astype(np.float16).view(np.uint16).astype(np.uint64)
    if ty == "bf16":
        u = v.astype(np.float32).view(np.uint32).astype(np.uint64)
        return ((u + np.uint64(0x7FFF) + ((u >> np.uint64(16)) & np.uint64(1))) >> np.uint64(16)) & np.uint64(0xFFFF)
    raise ValueError(f"no narrow accumulator format {ty!r} (f16, bf16)")
