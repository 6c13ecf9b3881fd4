"""Value semantics of the arithmetic families over integers and floats: add, addc, sub, subc,
mul, mad, madc, mul24, mad24, div, rem, abs, neg, min, max.

Each family reads its type: integer forms follow §Integer Arithmetic and §Extended-Precision
Integer Arithmetic, float forms §Floating-Point and §Half Precision (float mad is fma).
"""
from __future__ import annotations

from ..types import FORMATS, bits, is_float, is_signed
from .common import (_approx, _bool_to_bv, _fabs_bits, _farith, _lanewise, _neg_bool, _sat_signed, f_ftz,
                     f_isnan, f_iszero, f_quiet, f_relu, f_signbit)
from .floating import fma


# ================================================================= arithmetic
def add(D, ty, mods, a, b):
    """add{.sat,.cc}.type / add{.rnd}{.ftz}{.sat}.f32 etc. -- §Integer Arithmetic: add,
    §Extended-Precision: add.cc, §Floating-Point: add, §Half Precision: add.
    .sat applies to s32 (clamp to MININT..MAXINT).  .cc returns (d, carry-out)."""
    if is_float(ty):
        return _farith(D, ty, mods, D.fadd, a, b)
    w = bits(ty)
    s = D.add(a, b, w)
    if "sat" in mods:
        s = _sat_signed(D, a, b, s, w, False)
    if "cc" in mods:
        return s, D.ult(s, a)
    return s


def addc(D, ty, mods, a, b, cin):
    """addc{.cc}.type d, a, b: d = a + b + CC.CF -- §Extended-Precision Integer Arithmetic."""
    w = bits(ty)
    t = D.add(a, b, w)
    s = D.add(t, _bool_to_bv(D, cin, w), w)
    if "cc" in mods:
        return s, D.bor(D.ult(t, a), D.ult(s, t))
    return s


def sub(D, ty, mods, a, b):
    """sub -- §Integer Arithmetic: sub, §Floating-Point: sub.  .cc returns (d, borrow-out)."""
    if is_float(ty):
        return _farith(D, ty, mods, D.fsub, a, b)
    w = bits(ty)
    s = D.sub(a, b, w)
    if "sat" in mods:
        s = _sat_signed(D, a, b, s, w, True)
    if "cc" in mods:
        return s, D.ult(a, b)
    return s


def subc(D, ty, mods, a, b, cin):
    """subc{.cc}.type d, a, b: d = a - (b + CC.CF) -- §Extended-Precision Integer Arithmetic."""
    w = bits(ty)
    s = D.sub(D.sub(a, b, w), _bool_to_bv(D, cin, w), w)
    if "cc" in mods:
        return s, D.bor(D.ult(a, b), D.band(D.eq(a, b), cin))
    return s


def mul(D, ty, mods, a, b):
    """mul{.hi,.lo,.wide}.type -- §Integer Arithmetic: mul (.wide doubles the width and is
    defined for 16/32-bit types; .hi is the upper half of the 2w-bit product);
    §Floating-Point: mul."""
    if is_float(ty):
        return _farith(D, ty, mods, D.fmul, a, b)
    w = bits(ty)
    sg = is_signed(ty)
    if "wide" in mods:
        ext = D.sext if sg else D.zext
        return D.mul(ext(a, w, 2 * w), ext(b, w, 2 * w), 2 * w)
    if "hi" in mods:
        return D.mulhi(a, b, w, sg)
    return D.mul(a, b, w)


def mad(D, ty, mods, a, b, c):
    """mad{.hi,.lo,.wide}{.sat}.type -- §Integer Arithmetic: mad (.sat only for .hi.s32:
    the add is saturating); float mad{.rnd} is fma (§Floating-Point: mad)."""
    if is_float(ty):
        return fma(D, ty, mods, a, b, c)
    w = bits(ty)
    if "wide" in mods:
        return D.add(mul(D, ty, mods, a, b), c, 2 * w)
    p = mul(D, ty, mods, a, b)
    s = D.add(p, c, w)
    if "sat" in mods:
        s = _sat_signed(D, p, c, s, w, False)
    if "cc" in mods:  # mad{.hi,.lo}.cc: the carry-out of the addition (§Extended-Precision: mad.cc)
        return s, D.ult(s, p)
    return s


def madc(D, ty, mods, a, b, c, cin):
    """madc{.hi,.lo}{.cc}.type d, a, b, c: d = (a * b)<.hi or .lo half> + c + CC.CF
    -- §Extended-Precision Integer Arithmetic: madc (ptxas requires .lo or .hi; read as
    .lo without). .cc returns (d, carry-out of the two additions)."""
    w = bits(ty)
    p = mul(D, ty, mods - {"cc"}, a, b)
    t = D.add(p, c, w)
    s = D.add(t, _bool_to_bv(D, cin, w), w)
    if "cc" in mods:
        return s, D.bor(D.ult(t, p), D.ult(s, t))
    return s


def _mul24(D, ty, a, b):
    ext = D.sext if is_signed(ty) else D.zext
    a24 = ext(D.extract(a, 23, 0), 24, 64)
    b24 = ext(D.extract(b, 23, 0), 24, 64)
    p = D.mul(a24, b24, 64)
    return D.extract(p, 31, 0), D.extract(p, 47, 16)


def mul24(D, ty, mods, a, b):
    """mul24{.hi,.lo}.{u32,s32}: 24x24 -> 48-bit product; .lo = bits 31..0, .hi = bits 47..16
    -- §Integer Arithmetic: mul24."""
    lo, hi = _mul24(D, ty, a, b)
    return hi if "hi" in mods else lo


def mad24(D, ty, mods, a, b, c):
    """mad24{.hi,.lo}{.sat}.{u32,s32} -- §Integer Arithmetic: mad24 (.sat: .hi.s32 only)."""
    lo, hi = _mul24(D, ty, a, b)
    p = hi if "hi" in mods else lo
    s = D.add(p, c, 32)
    if "sat" in mods:
        s = _sat_signed(D, p, c, s, 32, False)
    return s


def div(D, ty, mods, a, b):
    """div.type -- §Integer Arithmetic: div (division by zero is unspecified in PTX; we use the
    SMT-LIB value: unsigned -> all ones, signed -> -1 for a >= 0 and 1 for a < 0;
    MININT / -1 wraps to MININT); §Floating-Point: div (.rn/.rz/.rm/.rp are IEEE,
    .approx and .full are approximate)."""
    if is_float(ty):
        if "approx" in mods:
            return _approx(D, ty, mods, "div", a, b)
        if "full" in mods:
            return _approx(D, ty, mods, "div_full", a, b)
        return _farith(D, ty, mods, D.fdiv, a, b)
    w = bits(ty)
    return D.sdiv(a, b, w) if is_signed(ty) else D.udiv(a, b, w)


def rem(D, ty, mods, a, b):
    """rem.type: remainder with the sign of the dividend -- §Integer Arithmetic: rem
    (remainder by zero unspecified in PTX; we return a)."""
    w = bits(ty)
    return D.srem(a, b, w) if is_signed(ty) else D.urem(a, b, w)


def _sign_op_nan(D, F, x, r):
    """abs/neg of a NaN on sm_90: f64 returns the operand made quiet, f32/f16/bf16 the
    canonical NaN (the sign-bit operation is not applied to NaNs)."""
    nan = f_quiet(D, F, x) if F.width == 64 else D.const(F.canonical_nan, F.width)
    return D.ite(f_isnan(D, F, x), nan, r)


def abs(D, ty, mods, a):  # noqa: A001 - PTX name
    """abs -- §Integer Arithmetic: abs (abs(MININT) = MININT); §Floating-Point: abs (clears
    the sign bit, also of NaN; .ftz flushes first)."""
    if is_float(ty):

        def one(et, x):
            F = FORMATS[et]
            if "ftz" in mods:
                x = f_ftz(D, F, x)
            return _sign_op_nan(D, F, x, _fabs_bits(D, F, x))

        return _lanewise(D, ty, one, a)
    w = bits(ty)
    return D.ite(_neg_bool(D, a, w), D.neg(a, w), a)


def neg(D, ty, mods, a):
    """neg -- §Integer Arithmetic: neg (two's complement); §Floating-Point: neg (flips the
    sign bit, also of NaN; .ftz flushes first)."""
    if is_float(ty):

        def one(et, x):
            F = FORMATS[et]
            if "ftz" in mods:
                x = f_ftz(D, F, x)
            return _sign_op_nan(D, F, x, D.xor(x, D.const(F.sign_bit, F.width)))

        return _lanewise(D, ty, one, a)
    return D.neg(a, bits(ty))


def _fminmax(D, ty, mods, a, b, is_max):
    def one(et, x, y):
        F = FORMATS[et]
        if "ftz" in mods:
            x, y = f_ftz(D, F, x), f_ftz(D, F, y)
        xn, yn = f_isnan(D, F, x), f_isnan(D, F, y)
        both_zero = D.band(f_iszero(D, F, x), f_iszero(D, F, y))
        if is_max:
            pick_x = D.bor(D.flt(et, y, x), D.band(both_zero, f_signbit(D, F, y)))
        else:
            pick_x = D.bor(D.flt(et, x, y), D.band(both_zero, f_signbit(D, F, x)))
        r = D.ite(pick_x, x, y)
        nan = f_quiet(D, F, x) if et == "f64" else D.const(F.canonical_nan, F.width)
        if "NaN" in mods:
            r = D.ite(D.bor(xn, yn), nan, r)
        else:
            r = D.ite(xn, D.ite(yn, nan, y), D.ite(yn, x, r))
        if "relu" in mods:
            r = f_relu(D, F, r)
        return r

    return _lanewise(D, ty, one, a, b)


def _iminmax(D, ty, mods, a, b, is_max):
    w = bits(ty)
    lt = D.slt(a, b, w) if is_signed(ty) else D.ult(a, b)
    r = D.ite(lt, b, a) if is_max else D.ite(lt, a, b)
    if "relu" in mods:
        r = D.ite(_neg_bool(D, r, w), D.const(0, w), r)
    return r


def min(D, ty, mods, a, b):  # noqa: A001
    """min -- §Integer Arithmetic: min; §Floating-Point: min: a NaN operand is ignored (both
    NaN -> canonical NaN), .NaN propagates NaN; -0.0 is taken as smaller than +0.0."""
    if is_float(ty):
        return _fminmax(D, ty, mods, a, b, False)
    return _iminmax(D, ty, mods, a, b, False)


def max(D, ty, mods, a, b):  # noqa: A001
    """max -- §Integer Arithmetic: max; §Floating-Point: max (NaN rules as min; +0.0 > -0.0)."""
    if is_float(ty):
        return _fminmax(D, ty, mods, a, b, True)
    return _iminmax(D, ty, mods, a, b, True)


def _byte_products(D, aty, bty, pairs, a, b, c):
    """c + the products of the sign- (.s32) or zero-extended (.u32) fields ``(a_hi, a_lo, b_hi,
    b_lo)`` of ``pairs``, 32-bit wrapping."""
    s = c
    for ahi, alo, bhi, blo in pairs:
        ext_a = D.sext if is_signed(aty) else D.zext
        ext_b = D.sext if is_signed(bty) else D.zext
        x = ext_a(D.extract(a, ahi, alo), ahi - alo + 1, 32)
        y = ext_b(D.extract(b, bhi, blo), bhi - blo + 1, 32)
        s = D.add(s, D.mul(x, y, 32), 32)
    return s


def dp4a(D, ty, mods, a, b, c):
    """dp4a.atype.btype d, a, b, c: d = c + the four products of a's and b's bytes, each byte
    sign-extended (.s32) or zero-extended (.u32) per its operand's type, modulo 2^32 -- §Integer
    Arithmetic: dp4a. ``ty`` is ``(atype, btype)``."""
    aty, bty = ty
    return _byte_products(D, aty, bty, [(8 * i + 7, 8 * i, 8 * i + 7, 8 * i) for i in range(4)], a, b, c)


def dp2a(D, ty, mods, a, b, c):
    """dp2a.mode.atype.btype d, a, b, c: d = c + a's two 16-bit halves times bytes 0 and 1 (.lo) or 2
    and 3 (.hi) of b, extended per type, modulo 2^32 -- §Integer Arithmetic: dp2a."""
    aty, bty = ty
    k = 2 if "hi" in mods else 0
    return _byte_products(D, aty, bty, [(16 * i + 15, 16 * i, 8 * (k + i) + 7, 8 * (k + i)) for i in range(2)],
                          a, b, c)
