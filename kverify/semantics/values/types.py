"""PTX scalar types as seen by the value semantics.

Owns: the type-name vocabulary (``"u32"``, ``"f16x2"``, ``"pred"``, ...), their bit
widths, and the parameters of the IEEE-754 binary formats (f16, bf16, f32, f64) that
the float operations use.  PTX ISA section "Fundamental Types" and "Floating Point
Data Types".
"""
from __future__ import annotations

import struct
from fractions import Fraction

from .formats import FloatFormat, mask  # noqa: F401  (mask: re-exported to concrete and ops)
from .softfloat import decode, from_rational

_WIDTHS = {
    "pred": 1,
    "b8": 8, "b16": 16, "b32": 32, "b64": 64, "b128": 128,
    "u8": 8, "u16": 16, "u32": 32, "u64": 64,
    "s8": 8, "s16": 16, "s32": 32, "s64": 64,
    "f16": 16, "f16x2": 32, "bf16": 16, "bf16x2": 32,
    "f32": 32, "f64": 64,
}

TYPES = tuple(_WIDTHS)
FLOAT_TYPES = ("f16", "f16x2", "bf16", "bf16x2", "f32", "f64")
PACKED_TYPES = {"f16x2": "f16", "bf16x2": "bf16"}


def bits(ty: str) -> int:
    """Width in bits of a PTX type (``pred`` is 1)."""
    try:
        return _WIDTHS[ty]
    except KeyError:
        raise ValueError(f"unknown PTX type {ty!r}") from None


def is_float(ty: str) -> bool:
    return ty in FLOAT_TYPES


def is_signed(ty: str) -> bool:
    """Signed integer types (s8..s64).  Floats are not 'signed' in this sense."""
    return ty in ("s8", "s16", "s32", "s64")


def is_int(ty: str) -> bool:
    return ty[0] in "bus" and ty != "b128" and ty in _WIDTHS


def is_packed(ty: str) -> bool:
    return ty in PACKED_TYPES


def element(ty: str) -> str:
    """Element type of a packed type (``f16x2`` -> ``f16``); identity otherwise."""
    return PACKED_TYPES.get(ty, ty)


FORMATS = {
    "f16": FloatFormat("f16", 5, 11),
    "bf16": FloatFormat("bf16", 8, 8),
    "f32": FloatFormat("f32", 8, 24),
    "f64": FloatFormat("f64", 11, 53),
}


def fmt(ty: str) -> FloatFormat:
    return FORMATS[element(ty)]


def float_to_bits(ty: str, value) -> int:
    """Bit pattern of ``value`` (int, float or Fraction) in format ``ty``, rounded to nearest even."""
    f = fmt(ty)
    if isinstance(value, float):
        if value != value:
            return f.canonical_nan
        if value in (float("inf"), float("-inf")):
            return f.exp_mask | (f.sign_bit if value < 0 else 0)
        if value == 0.0:
            return f.sign_bit if struct.pack(">d", value)[0] & 0x80 else 0
        value = Fraction(value)
    return from_rational(f, Fraction(value), "rn")


def bits_to_float(ty: str, b: int) -> float:
    """Python float (binary64) of a bit pattern; exact for every format here."""
    f = fmt(ty)
    kind, s, m, e = decode(f, b)
    if kind == "nan":
        return float("nan")
    if kind == "inf":
        return float("-inf") if s else float("inf")
    v = float(m) * 2.0 ** e if m else 0.0
    return -v if s else v
