"""Symbolic value domain: the same primitive vocabulary as :mod:`concrete` over z3 terms.

Owns: one lane's worth of z3.  A bit-vector of width w is a z3 ``BitVec`` of width w, a
predicate a z3 ``Bool``.  Float primitives take and return bit patterns and go through
z3's IEEE floating-point theory (``FPSort`` f16 = (5, 11), bf16 = (8, 8), f32 = (8, 24),
f64 = (11, 53); rounding modes RNE/RTZ/RTN/RTP for rn/rz/rm/rp).  A NaN result is mapped to
the format's canonical NaN so that bit patterns are functions of the inputs, as in the
concrete domain.  Approximate instructions are uninterpreted functions
``approx_<name>_<fmt>`` over bit-vectors.
"""
from __future__ import annotations

import z3

from .types import FORMATS

_RM = {"rn": z3.RNE, "rz": z3.RTZ, "rm": z3.RTN, "rp": z3.RTP}


def fp_sort(fmt: str):
    f = FORMATS[fmt]
    return z3.FPSort(f.ebits, f.p)


class Z3Domain:
    name = "z3"
    symbolic = True

    def __init__(self, ctx: z3.Context | None = None):
        self.ctx = ctx
        self._ufs: dict = {}

    # ---------------------------------------------------------------- constants
    def const(self, v: int, w: int):
        return z3.BitVecVal(v & ((1 << w) - 1), w, self.ctx)

    def boolc(self, v: bool):
        return z3.BoolVal(bool(v), self.ctx)

    # ---------------------------------------------------------------- bit-vectors
    def add(self, a, b, w):
        return a + b

    def sub(self, a, b, w):
        return a - b

    def mul(self, a, b, w):
        return a * b

    def neg(self, a, w):
        return -a

    def and_(self, a, b):
        return a & b

    def or_(self, a, b):
        return a | b

    def xor(self, a, b):
        return a ^ b

    def not_(self, a, w):
        return ~a

    def shl(self, a, s, w):
        return a << s

    def lshr(self, a, s, w):
        return z3.LShR(a, s)

    def ashr(self, a, s, w):
        return a >> s

    def udiv(self, a, b, w):
        return z3.UDiv(a, b)

    def urem(self, a, b, w):
        return z3.URem(a, b)

    def sdiv(self, a, b, w):
        return a / b

    def srem(self, a, b, w):
        return z3.SRem(a, b)

    def mulhi(self, a, b, w, signed):
        ext = z3.SignExt if signed else z3.ZeroExt
        return z3.Extract(2 * w - 1, w, ext(w, a) * ext(w, b))

    def eq(self, a, b):
        return a == b

    def ult(self, a, b):
        return z3.ULT(a, b)

    def ule(self, a, b):
        return z3.ULE(a, b)

    def slt(self, a, b, w):
        return a < b

    def sle(self, a, b, w):
        return a <= b

    def ite(self, c, a, b):
        return z3.If(c, a, b)

    def band(self, a, b):
        return z3.And(a, b)

    def bor(self, a, b):
        return z3.Or(a, b)

    def bxor(self, a, b):
        return z3.Xor(a, b)

    def bnot(self, a):
        return z3.Not(a)

    def extract(self, a, hi, lo):
        return z3.Extract(hi, lo, a)

    def zext(self, a, fw, tw):
        return a if tw == fw else z3.ZeroExt(tw - fw, a)

    def sext(self, a, fw, tw):
        return a if tw == fw else z3.SignExt(tw - fw, a)

    def concat(self, hi, lo, wlo):
        return z3.Concat(hi, lo)

    # ---------------------------------------------------------------- floats
    def to_fp(self, fmt, a):
        return z3.fpBVToFP(a, fp_sort(fmt))

    def from_fp(self, fmt, x):
        f = FORMATS[fmt]
        return z3.If(z3.fpIsNaN(x), self.const(f.canonical_nan, f.width), z3.fpToIEEEBV(x))

    def _rm(self, rm):
        return _RM[rm](self.ctx)

    def fadd(self, fmt, rm, a, b):
        return self.from_fp(fmt, z3.fpAdd(self._rm(rm), self.to_fp(fmt, a), self.to_fp(fmt, b)))

    def fsub(self, fmt, rm, a, b):
        return self.from_fp(fmt, z3.fpSub(self._rm(rm), self.to_fp(fmt, a), self.to_fp(fmt, b)))

    def fmul(self, fmt, rm, a, b):
        return self.from_fp(fmt, z3.fpMul(self._rm(rm), self.to_fp(fmt, a), self.to_fp(fmt, b)))

    def fdiv(self, fmt, rm, a, b):
        return self.from_fp(fmt, z3.fpDiv(self._rm(rm), self.to_fp(fmt, a), self.to_fp(fmt, b)))

    def ffma(self, fmt, rm, a, b, c):
        return self.from_fp(
            fmt, z3.fpFMA(self._rm(rm), self.to_fp(fmt, a), self.to_fp(fmt, b), self.to_fp(fmt, c))
        )

    def fsqrt(self, fmt, rm, a):
        return self.from_fp(fmt, z3.fpSqrt(self._rm(rm), self.to_fp(fmt, a)))

    def frint(self, fmt, rm, a):
        return self.from_fp(fmt, z3.fpRoundToIntegral(self._rm(rm), self.to_fp(fmt, a)))

    def fcvt(self, dfmt, sfmt, rm, a):
        return self.from_fp(dfmt, z3.fpToFP(self._rm(rm), self.to_fp(sfmt, a), fp_sort(dfmt)))

    def i2f(self, fmt, rm, a, w, signed):
        conv = z3.fpSignedToFP if signed else z3.fpUnsignedToFP
        return self.from_fp(fmt, conv(self._rm(rm), a, fp_sort(fmt)))

    def f2i(self, fmt, a, w, signed):
        conv = z3.fpToSBV if signed else z3.fpToUBV
        return conv(z3.RTZ(self.ctx), self.to_fp(fmt, a), z3.BitVecSort(w, self.ctx))

    def feq(self, fmt, a, b):
        return z3.fpEQ(self.to_fp(fmt, a), self.to_fp(fmt, b))

    def flt(self, fmt, a, b):
        return z3.fpLT(self.to_fp(fmt, a), self.to_fp(fmt, b))

    def fle(self, fmt, a, b):
        return z3.fpLEQ(self.to_fp(fmt, a), self.to_fp(fmt, b))

    # ---------------------------------------------------------------- approximate
    def approx_function(self, name, fmt, arity):
        key = (name, fmt, arity)
        if key not in self._ufs:
            s = z3.BitVecSort(FORMATS[fmt].width, self.ctx)
            self._ufs[key] = z3.Function(f"approx_{name}_{fmt}", *([s] * (arity + 1)))
        return self._ufs[key]

    def approx(self, name, fmt, *args):
        return self.approx_function(name, fmt, len(args))(*args)
