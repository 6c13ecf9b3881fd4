"""IEEE-754 binary format parameters (f16, bf16, f32, f64) and the bit mask helper.

Owns ``FloatFormat`` (exponent bits, precision and the derived fields: bias, sign bit,
exponent mask, canonical NaN), the one thing both ``types`` (the PTX type vocabulary) and
``softfloat`` (exact arithmetic on bit patterns) need, so neither imports the other's
dependents. PTX ISA "Floating Point Data Types".
"""
from __future__ import annotations

from dataclasses import dataclass


def mask(w: int) -> int:
    return (1 << w) - 1


@dataclass(frozen=True)
class FloatFormat:
    """An IEEE-754 binary format: ``ebits`` exponent bits, precision ``p`` (incl. hidden bit)."""

    name: str
    ebits: int
    p: int

    @property
    def width(self) -> int:
        return 1 + self.ebits + self.p - 1

    @property
    def mbits(self) -> int:
        return self.p - 1

    @property
    def bias(self) -> int:
        return (1 << (self.ebits - 1)) - 1

    @property
    def emax(self) -> int:
        return self.bias

    @property
    def emin(self) -> int:
        return 1 - self.bias

    @property
    def sign_bit(self) -> int:
        return 1 << (self.width - 1)

    @property
    def exp_mask(self) -> int:
        """Bit pattern of +inf (exponent all ones, mantissa zero)."""
        return mask(self.ebits) << self.mbits

    @property
    def canonical_nan(self) -> int:
        """The NaN every arithmetic op produces (NVIDIA's canonical NaN: all ones but the sign)."""
        return mask(self.width - 1)

    @property
    def min_normal(self) -> int:
        return 1 << self.mbits

    @property
    def max_finite(self) -> int:
        return self.exp_mask - 1

    @property
    def one(self) -> int:
        return self.bias << self.mbits
