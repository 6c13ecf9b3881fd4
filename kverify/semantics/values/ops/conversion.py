"""Value semantics of data movement and conversion: mov (incl. the vector pack form) and cvt
between integer and float types, tf32 and the packed f16x2/bf16x2 destinations -- §Data
Movement and Conversion.
"""
from __future__ import annotations

from ..types import FORMATS, bits, element, float_to_bits, is_float, is_packed, is_signed
from .common import _fabs_bits, _irm, _rm, f_canon, f_ftz, f_isinf, f_isnan, f_quiet, f_relu, f_sat


# ================================================================= data movement and conversion
def mov(D, ty, mods, *args):
    """mov.type d, a (identity on bit patterns); with several operands, the vector pack form
    mov.bN d, {a0, a1, ...} (a0 is the least significant) -- §Data Movement: mov."""
    if len(args) == 1:
        return args[0]
    ew = bits(ty) // len(args)
    r = args[0]
    for i, x in enumerate(args[1:], start=1):
        r = D.concat(x, r, ew * i)
    return r


def _int_sat_bounds(dty):
    dw = bits(dty)
    if is_signed(dty):
        return -(1 << (dw - 1)), (1 << (dw - 1)) - 1
    return 0, (1 << dw) - 1


def _cvt_int_int(D, dty, sty, mods, a):
    dw, sw = bits(dty), bits(sty)
    sg = is_signed(sty)
    if dw <= sw:
        r = D.extract(a, dw - 1, 0) if dw < sw else a
    else:
        r = (D.sext if sg else D.zext)(a, sw, dw)
    if "sat" not in mods:
        return r
    lo, hi = _int_sat_bounds(dty)
    smin, smax = (-(1 << (sw - 1)), (1 << (sw - 1)) - 1) if sg else (0, (1 << sw) - 1)
    too_big = (D.slt(D.const(hi, sw), a, sw) if sg else D.ult(D.const(hi, sw), a)) if hi < smax else D.boolc(False)
    too_small = D.slt(a, D.const(lo, sw), sw) if lo > smin else D.boolc(False)
    return D.ite(too_big, D.const(hi, dw), D.ite(too_small, D.const(lo, dw), r))


def _pow2_bits(F, k, negative=False):
    """Bits of +-2^k in F, or None if it overflows F."""
    if k > F.emax:
        return None
    return float_to_bits(F.name, -(2**k) if negative else 2**k)


def _cvt_float_int(D, dty, sty, mods, a):
    rm = _irm(mods)
    if rm is None:
        raise ValueError("cvt float->int needs one of .rni/.rzi/.rmi/.rpi")
    F = FORMATS[sty]
    dw = bits(dty)
    sg = is_signed(dty)
    x = f_ftz(D, F, a) if "ftz" in mods else a
    r = D.frint(sty, rm, x)
    lo, hi = _int_sat_bounds(dty)
    hb = _pow2_bits(F, dw - 1 if sg else dw)
    pinf = D.const(F.exp_mask, F.width)
    big = D.fle(sty, D.const(hb, F.width), r) if hb is not None else D.eq(r, pinf)
    if sg:
        lb = _pow2_bits(F, dw - 1, negative=True)
        ninf = D.const(F.exp_mask | F.sign_bit, F.width)
        small = D.flt(sty, r, D.const(lb, F.width)) if lb is not None else D.eq(r, ninf)
    else:
        small = D.flt(sty, r, D.const(0, F.width))
    val = D.f2i(sty, r, dw, sg)
    # NaN: 0, except from f64 or into a 64-bit integer: only the top bit set (sm_90)
    nan_val = (1 << (dw - 1)) if (F.width == 64 or dw == 64) else 0
    return D.ite(
        f_isnan(D, F, x),
        D.const(nan_val, dw),
        D.ite(big, D.const(hi, dw), D.ite(small, D.const(lo, dw), val)),
    )


def _cvt_to_float_post(D, dty, mods, r):
    F = FORMATS[dty]
    if "ftz" in mods and dty == "f32":
        r = f_ftz(D, F, r)
    if "satfinite" in mods:
        maxf = D.const(F.max_finite, F.width)
        r = D.ite(f_isinf(D, F, r), D.or_(maxf, D.and_(r, D.const(F.sign_bit, F.width))), r)
    if "sat" in mods:
        r = f_sat(D, F, r)
    if "relu" in mods:
        r = f_relu(D, F, r)
    return r


def cvt(D, ty, mods, a, b=None):
    """cvt{.irnd,.frnd}{.ftz}{.sat}{.relu}{.satfinite}.dtype.atype -- §Data Movement and
    Conversion: cvt; ty = (dtype, atype).
      int -> int: truncate or sign/zero-extend by atype; .sat clamps to the dtype range.
      int -> float: .rn (default)/.rz/.rm/.rp.
      float -> int: .rni/.rzi/.rmi/.rpi required; always clamps to the dtype range, NaN -> 0.
      float -> float: narrowing rounds with .rn (default)/.rz/.rm/.rp, widening is exact;
        same type with .rni/.rzi/.rmi/.rpi rounds to an integral value.  .ftz flushes f32
        subnormal sources/results; .sat clamps to [0, 1].
      cvt.frnd.{f16x2,bf16x2}.f32 d, a, b: d = {cvt(a) in the upper half, cvt(b) lower}."""
    dty, sty = ty
    if dty == "tf32":
        return _cvt_tf32(D, sty, mods, a)
    if is_packed(dty):
        e = element(dty)
        hi = cvt(D, (e, sty), mods, a)
        lo = cvt(D, (e, sty), mods, b)
        return D.concat(hi, lo, 16)
    if not is_float(dty) and not is_float(sty):
        return _cvt_int_int(D, dty, sty, mods, a)
    if not is_float(dty):
        return _cvt_float_int(D, dty, sty, mods, a)
    if not is_float(sty):
        r = D.i2f(dty, _rm(mods), a, bits(sty), is_signed(sty))
        return _cvt_to_float_post(D, dty, mods, r)
    SF, DF = FORMATS[sty], FORMATS[dty]
    # .ftz flushes an f32 source, except into f16: the H200 rounds a subnormal f32 into the
    # f16 range as it is (cvt.rm.ftz.f16.f32 of -2^-126+ gives -2^-24, not -0)
    x = f_ftz(D, SF, a) if ("ftz" in mods and sty == "f32" and dty != "f16") else a
    irm = _irm(mods)
    if irm is not None:
        if sty != dty:
            raise ValueError("cvt with integer rounding between different float types")
        r = D.frint(sty, irm, x)
        if sty == "f64":
            r = D.ite(f_isnan(D, SF, x), f_quiet(D, SF, x), r)
    elif sty == dty:
        r = f_canon(D, DF, x)
    else:
        r = D.fcvt(dty, sty, _rm(mods), x)
        r = D.ite(f_isnan(D, SF, x), _cvt_nan(D, dty, sty, mods, x), r)
    return _cvt_to_float_post(D, dty, mods, r)


def _cvt_tf32(D, sty, mods, a):
    """cvt.rna.tf32.f32 d, a: the tf32 value of a, in a 32-bit register whose 13 low
    mantissa bits are zero -- §Data Movement and Conversion: cvt (sm_90 has only .rna
    without .satfinite). As ptxas 13.0 expands it for sm_90a (FSETP.GEU |a|, +INF; @!P
    IADD a, 0x1000; LOP3 a & 0xFFFFE000): a finite a is rounded to nearest, ties away from
    zero, on its magnitude bits (from 0x7F7FF000 on to an infinity); an infinity or NaN
    keeps its bits with the 13 low ones cleared (a NaN whose payload lies only there
    becomes an infinity)."""
    if sty != "f32" or "rna" not in mods or "satfinite" in mods:
        raise ValueError(f"cvt to tf32 is cvt.rna.tf32.f32 on sm_90, not {sorted(mods)} from {sty}")
    F = FORMATS["f32"]
    nonfinite = D.ule(D.const(F.exp_mask, 32), _fabs_bits(D, F, a))
    r = D.ite(nonfinite, a, D.add(a, D.const(0x1000, 32), 32))
    return D.and_(r, D.const(0xFFFFE000, 32))


def _cvt_nan(D, dty, sty, mods, x):
    """The NaN a float-to-float cvt gives on sm_90 (checked on an H200): bf16 -> f32 is
    exact (bits shifted, not even quieted); f32 -> f64 and f16 -> f64 keep sign and
    payload, quieted (with .ftz the f32 NaN is canonical first); f64 -> f16 keeps the sign
    and the top payload bits, quieted; every other pair gives the canonical NaN."""
    SF, DF = FORMATS[sty], FORMATS[dty]
    if (dty, sty) == ("f32", "bf16"):
        return D.concat(x, D.const(0, 16), 16)
    if dty == "f64" and sty in ("f32", "f16"):
        if "ftz" in mods and sty == "f32":
            x = D.const(SF.canonical_nan, 32)
        sign = D.extract(x, SF.width - 1, SF.width - 1)
        mant = D.extract(x, SF.mbits - 1, 0)
        body = D.concat(D.const(0x7FF, 11), D.concat(mant, D.const(0, 52 - SF.mbits), 52 - SF.mbits), 52)
        return f_quiet(D, DF, D.concat(sign, body, 63))
    if sty == "f64" and dty in ("f16", "f32"):
        sign = D.extract(x, 63, 63)
        top = D.extract(x, 51, 52 - DF.mbits)
        body = D.concat(D.const((1 << DF.ebits) - 1, DF.ebits), top, DF.mbits)
        return f_quiet(D, DF, D.concat(sign, body, DF.width - 1))
    return D.const(DF.canonical_nan, DF.width)
