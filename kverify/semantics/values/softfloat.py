"""Exact IEEE-754 arithmetic on bit patterns with Python integers (one value at a time).

Owns: correctly rounded add/sub/mul/fma/div/sqrt, round-to-integral, and conversions
(float<->float, int->float) for every format of :mod:`formats` and all four PTX rounding
modes (``rn`` nearest-even, ``rz`` toward zero, ``rm`` toward -inf, ``rp`` toward +inf).
The exact result is formed as a rational and rounded once, so there is no double
rounding.  NaN results are the format's canonical NaN.  The concrete domain uses this
wherever numpy cannot round directly (directed modes, fma, bf16, 64-bit integers).
PTX ISA: "Floating-Point Instructions", "Rounding Modifiers".
"""
from __future__ import annotations

from fractions import Fraction
from math import isqrt

from .formats import FloatFormat

NAN = ("nan", 0, 0, 0)


def decode(f: FloatFormat, b: int):
    """-> (kind, sign, M, E) with value = (-1)^sign * M * 2^E for kind 'fin'."""
    s = (b >> (f.width - 1)) & 1
    e = (b >> f.mbits) & ((1 << f.ebits) - 1)
    m = b & ((1 << f.mbits) - 1)
    if e == (1 << f.ebits) - 1:
        return ("nan", 0, 0, 0) if m else ("inf", s, 0, 0)
    if e == 0:
        return ("fin", s, m, f.emin - f.mbits)
    return ("fin", s, m | (1 << f.mbits), e - f.bias - f.mbits)


def _inf(f: FloatFormat, s: int) -> int:
    return f.exp_mask | (f.sign_bit if s else 0)


def _zero(f: FloatFormat, s: int) -> int:
    return f.sign_bit if s else 0


def round_rat(f: FloatFormat, s: int, num: int, den: int, exp: int, mode: str) -> int:
    """Round (-1)^s * num/den * 2^exp (num > 0, den > 0) to format ``f``."""
    p = f.p
    l = num.bit_length() - den.bit_length()
    if l >= 0:
        if num < (den << l):
            l -= 1
    elif (num << -l) < den:
        l -= 1
    emin_sub = f.emin - f.mbits
    e_out = max(l + exp - (p - 1), emin_sub)
    sh = exp - e_out
    if sh >= 0:
        q, r = divmod(num << sh, den)
        d = den
    else:
        d = den << -sh
        q, r = divmod(num, d)
    if r:
        if mode == "rn":
            up = 2 * r > d or (2 * r == d and q & 1)
        elif mode == "rz":
            up = False
        elif mode == "rm":
            up = bool(s)
        elif mode == "rp":
            up = not s
        else:
            raise ValueError(f"unknown rounding mode {mode!r}")
        q += up
    if q == 1 << p:
        q >>= 1
        e_out += 1
    if q == 0:
        return _zero(f, s)
    if e_out + p - 1 > f.emax:
        if mode == "rn" or (mode == "rm" and s) or (mode == "rp" and not s):
            return _inf(f, s)
        return f.max_finite | (f.sign_bit if s else 0)
    sign = f.sign_bit if s else 0
    if q < 1 << (p - 1):
        return sign | q
    return sign | ((e_out + p - 1 + f.bias) << f.mbits) | (q - (1 << (p - 1)))


def from_rational(f: FloatFormat, v: Fraction, mode: str, zero_sign: int = 0) -> int:
    if v == 0:
        return _zero(f, zero_sign)
    s = 1 if v < 0 else 0
    v = abs(v)
    return round_rat(f, s, v.numerator, v.denominator, 0, mode)


def _from_exact(f, s, n, e, mode):
    """(-1)^s * n * 2^e with integer n >= 0 (n == 0 handled by caller)."""
    return round_rat(f, s, n, 1, e, mode)


def _sum(f, mode, s1, m1, e1, s2, m2, e2):
    e = min(e1, e2)
    n = (-m1 if s1 else m1) * (1 << (e1 - e)) + (-m2 if s2 else m2) * (1 << (e2 - e))
    if n == 0:
        if m1 == 0 and m2 == 0 and s1 == s2:
            return _zero(f, s1)
        return _zero(f, 1 if mode == "rm" else 0)
    return _from_exact(f, 1 if n < 0 else 0, abs(n), e, mode)


def add(f: FloatFormat, mode: str, a: int, b: int) -> int:
    ka, sa, ma, ea = decode(f, a)
    kb, sb, mb, eb = decode(f, b)
    if ka == "nan" or kb == "nan":
        return f.canonical_nan
    if ka == "inf" or kb == "inf":
        if ka == "inf" and kb == "inf" and sa != sb:
            return f.canonical_nan
        return _inf(f, sa if ka == "inf" else sb)
    return _sum(f, mode, sa, ma, ea, sb, mb, eb)


def sub(f: FloatFormat, mode: str, a: int, b: int) -> int:
    if decode(f, b)[0] == "nan":
        return f.canonical_nan
    return add(f, mode, a, b ^ f.sign_bit)


def mul(f: FloatFormat, mode: str, a: int, b: int) -> int:
    ka, sa, ma, ea = decode(f, a)
    kb, sb, mb, eb = decode(f, b)
    s = sa ^ sb
    if ka == "nan" or kb == "nan":
        return f.canonical_nan
    if ka == "inf" or kb == "inf":
        if (ka == "fin" and ma == 0) or (kb == "fin" and mb == 0):
            return f.canonical_nan
        return _inf(f, s)
    if ma == 0 or mb == 0:
        return _zero(f, s)
    return _from_exact(f, s, ma * mb, ea + eb, mode)


def fma(f: FloatFormat, mode: str, a: int, b: int, c: int) -> int:
    ka, sa, ma, ea = decode(f, a)
    kb, sb, mb, eb = decode(f, b)
    kc, sc, mc, ec = decode(f, c)
    if "nan" in (ka, kb, kc):
        return f.canonical_nan
    sp = sa ^ sb
    if ka == "inf" or kb == "inf":
        if (ka == "fin" and ma == 0) or (kb == "fin" and mb == 0):
            return f.canonical_nan
        if kc == "inf" and sc != sp:
            return f.canonical_nan
        return _inf(f, sp)
    if kc == "inf":
        return _inf(f, sc)
    return _sum(f, mode, sp, ma * mb, ea + eb, sc, mc, ec)


def div(f: FloatFormat, mode: str, a: int, b: int) -> int:
    ka, sa, ma, ea = decode(f, a)
    kb, sb, mb, eb = decode(f, b)
    s = sa ^ sb
    if ka == "nan" or kb == "nan":
        return f.canonical_nan
    if ka == "inf":
        return f.canonical_nan if kb == "inf" else _inf(f, s)
    if kb == "inf":
        return _zero(f, s)
    if mb == 0:
        return f.canonical_nan if ma == 0 else _inf(f, s)
    if ma == 0:
        return _zero(f, s)
    return round_rat(f, s, ma, mb, ea - eb, mode)


def sqrt(f: FloatFormat, mode: str, a: int) -> int:
    k, s, m, e = decode(f, a)
    if k == "nan":
        return f.canonical_nan
    if k == "inf":
        return f.canonical_nan if s else a
    if m == 0:
        return a
    if s:
        return f.canonical_nan
    # scale so that the integer square root carries at least p + 3 bits
    t = max(0, 2 * (f.p + 3) - m.bit_length())
    if (e - t) & 1:
        t += 1
    n = m << t
    r = isqrt(n)
    sticky = r * r != n
    return round_rat(f, 0, 2 * r + sticky, 1, (e - t) // 2 - 1, mode)


def rint(f: FloatFormat, mode: str, a: int) -> int:
    """Round to an integral value in the same format (cvt.rni/.rzi/.rmi/.rpi.fXX.fXX)."""
    k, s, m, e = decode(f, a)
    if k == "nan":
        return f.canonical_nan
    if k == "inf" or m == 0 or e >= 0:
        return a
    q, r = divmod(m, 1 << -e)
    if r:
        half = 1 << (-e - 1)
        if mode == "rn":
            up = r > half or (r == half and q & 1)
        elif mode == "rz":
            up = False
        elif mode == "rm":
            up = bool(s)
        else:
            up = not s
        q += up
    if q == 0:
        return _zero(f, s)
    return _from_exact(f, s, q, 0, "rn")


def convert(dst: FloatFormat, src: FloatFormat, mode: str, a: int) -> int:
    k, s, m, e = decode(src, a)
    if k == "nan":
        return dst.canonical_nan
    if k == "inf":
        return _inf(dst, s)
    if m == 0:
        return _zero(dst, s)
    return _from_exact(dst, s, m, e, mode)


def from_int(f: FloatFormat, mode: str, v: int) -> int:
    if v == 0:
        return 0
    return _from_exact(f, 1 if v < 0 else 0, abs(v), 0, mode)


def to_fraction(f: FloatFormat, a: int):
    """Exact value of a finite pattern as a Fraction (None for NaN/inf)."""
    k, s, m, e = decode(f, a)
    if k != "fin":
        return None
    v = Fraction(m) * (Fraction(2) ** e)
    return -v if s else v
