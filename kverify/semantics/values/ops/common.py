"""Helpers shared by the op families: rounding-mode modifiers, packed f16x2/bf16x2 lanes,
float bit predicates and the float pipeline (.ftz inputs, the rounded or approximate
operation, sm_90 f64 NaN results, .ftz/.sat/.relu results), and integer helpers
(signed saturation, 32-bit shift amounts, predicates as bit vectors).

Owns no family: every function here is a building block in the domain ``D``'s vocabulary.
"""
from __future__ import annotations

from ..types import FORMATS, element, is_packed, mask


_RMODES = ("rn", "rz", "rm", "rp")
_IRMODES = {"rni": "rn", "rzi": "rz", "rmi": "rm", "rpi": "rp"}


def _rm(mods, default="rn"):
    for m in _RMODES:
        if m in mods:
            return m
    return default


def _irm(mods):
    for m, r in _IRMODES.items():
        if m in mods:
            return r
    return None


def _lanewise(D, ty, fn, *args):
    """Apply ``fn(elem_ty, *args)`` to each 16-bit half of packed f16x2/bf16x2 operands."""
    if not is_packed(ty):
        return fn(ty, *args)
    e = element(ty)
    lo = fn(e, *[D.extract(a, 15, 0) for a in args])
    hi = fn(e, *[D.extract(a, 31, 16) for a in args])
    return D.concat(hi, lo, 16)


# ----------------------------------------------------------------- float bit helpers
def _fabs_bits(D, F, x):
    return D.and_(x, D.const(mask(F.width - 1), F.width))


def f_isnan(D, F, x):
    return D.ult(D.const(F.exp_mask, F.width), _fabs_bits(D, F, x))


def f_isinf(D, F, x):
    return D.eq(_fabs_bits(D, F, x), D.const(F.exp_mask, F.width))


def f_iszero(D, F, x):
    return D.eq(_fabs_bits(D, F, x), D.const(0, F.width))


def f_issub(D, F, x):
    m = _fabs_bits(D, F, x)
    return D.band(D.ult(m, D.const(F.min_normal, F.width)), D.bnot(D.eq(m, D.const(0, F.width))))


def f_signbit(D, F, x):
    return D.eq(D.extract(x, F.width - 1, F.width - 1), D.const(1, 1))


def f_ftz(D, F, x):
    """Flush a subnormal to the zero of the same sign (PTX .ftz)."""
    return D.ite(f_issub(D, F, x), D.and_(x, D.const(F.sign_bit, F.width)), x)


def f_canon(D, F, x):
    return D.ite(f_isnan(D, F, x), D.const(F.canonical_nan, F.width), x)


def f_sat(D, F, x):
    """PTX .sat on floats: clamp to [0.0, 1.0]; NaN -> +0.0; -0.0 -> +0.0."""
    one = D.const(F.one, F.width)
    zero = D.const(0, F.width)
    low = D.bor(f_isnan(D, F, x), f_signbit(D, F, x))
    return D.ite(low, zero, D.ite(D.flt(F.name, one, x), one, x))


def f_relu(D, F, x):
    """PTX .relu: negative results (and -0.0) become +0.0; NaN -> canonical NaN."""
    return D.ite(
        f_isnan(D, F, x),
        D.const(F.canonical_nan, F.width),
        D.ite(f_signbit(D, F, x), D.const(0, F.width), x),
    )


F64_DEFAULT_NAN = 0xFFF8000000000000  # the NaN an invalid f64 operation produces on sm_90


def f_quiet(D, F, x):
    """``x`` with the quiet bit set (a NaN keeps its sign and payload)."""
    return D.or_(x, D.const(1 << (F.mbits - 1), F.width))


def f64_nan(D, F, xs, r):
    """f64 NaN results as sm_90 hardware gives them (checked against an H200, see
    docs/validation.md): with a NaN operand, that operand made quiet (the first NaN operand
    in PTX order; with several, which one the hardware returns follows the SASS operand
    order ptxas picks); an invalid operation without NaN operands gives 0xFFF8000000000000.
    (f32 and narrower formats give the canonical NaN 0x7FFFFFFF / 0x7FFF.)"""
    out = D.ite(f_isnan(D, F, r), D.const(F64_DEFAULT_NAN, 64), r)
    for x in reversed(xs):
        out = D.ite(f_isnan(D, F, x), f_quiet(D, F, x), out)
    return out


def _farith(D, ty, mods, prim, *args):
    """Shared float pipeline: .ftz inputs, op with rounding mode, .ftz/.sat/.relu result."""
    rm = _rm(mods)

    def one(et, *xs):
        F = FORMATS[et]
        if "ftz" in mods:
            xs = [f_ftz(D, F, x) for x in xs]
        r = prim(et, rm, *xs)
        if et == "f64":
            r = f64_nan(D, F, xs, r)
        if "ftz" in mods:
            r = f_ftz(D, F, r)
        if "sat" in mods:
            r = f_sat(D, F, r)
        if "relu" in mods:
            r = f_relu(D, F, r)
        return r

    return _lanewise(D, ty, one, *args)


def _approx(D, ty, mods, name, *args):
    """Approximate instruction: ``D.approx`` (uninterpreted symbolically), .ftz around it."""

    def one(et, *xs):
        F = FORMATS[et]
        if "ftz" in mods:
            xs = [f_ftz(D, F, x) for x in xs]
        r = D.approx(name, et, *xs)
        if "ftz" in mods:
            r = f_ftz(D, F, r)
        if "sat" in mods:
            r = f_sat(D, F, r)
        return r

    return _lanewise(D, ty, one, *args)


# ----------------------------------------------------------------- integer helpers
def _neg_bool(D, x, w):
    return D.slt(x, D.const(0, w), w)


def _sat_signed(D, a, b, s, w, is_sub):
    """Saturate a two's-complement add/sub result ``s`` of ``a`` and ``b`` to [MIN, MAX]."""
    sa, sb, ss = _neg_bool(D, a, w), _neg_bool(D, b, w), _neg_bool(D, s, w)
    same = D.bxor(sa, sb) if is_sub else D.bnot(D.bxor(sa, sb))
    ovf = D.band(same, D.bxor(ss, sa))
    return D.ite(ovf, D.ite(sa, D.const(1 << (w - 1), w), D.const(mask(w - 1), w)), s)


def _amount(D, s, w):
    """A 32-bit unsigned shift amount as a w-bit amount, clamped so that >= w stays >= w."""
    if w == 32:
        return s
    if w > 32:
        return D.zext(s, 32, w)
    return D.ite(D.ult(s, D.const(w, 32)), D.extract(s, w - 1, 0), D.const(w, w))


def _bool_to_bv(D, c, w):
    return D.ite(c, D.const(1, w), D.const(0, w))
