"""Value semantics of the float-only families: fma, sqrt, rsqrt, rcp, the approximate
ex2/lg2/sin/cos/tanh, copysign and testp -- §Floating-Point and §Half Precision.
"""
from __future__ import annotations

from ..types import FORMATS
from .common import _approx, _farith, f_isinf, f_isnan, f_issub


def fma(D, ty, mods, a, b, c):
    """fma.rnd{.ftz}{.sat}.type: a*b+c with a single rounding -- §Floating-Point: fma,
    §Half Precision: fma (incl. .relu)."""
    return _farith(D, ty, mods, D.ffma, a, b, c)


def sqrt(D, ty, mods, a):
    """sqrt{.rnd,.approx}{.ftz}.type -- §Floating-Point: sqrt (.approx uninterpreted)."""
    if "approx" in mods:
        return _approx(D, ty, mods, "sqrt", a)
    return _farith(D, ty, mods, D.fsqrt, a)


def rsqrt(D, ty, mods, a):
    """rsqrt.approx{.ftz}.type -- §Floating-Point: rsqrt (approximate only)."""
    return _approx(D, ty, mods, "rsqrt", a)


def rcp(D, ty, mods, a):
    """rcp{.rnd,.approx}{.ftz}.type -- §Floating-Point: rcp (.rn/.rz/.rm/.rp are IEEE 1/a)."""
    if "approx" in mods:
        return _approx(D, ty, mods, "rcp", a)

    def prim(et, rm, x):
        F = FORMATS[et]
        return D.fdiv(et, rm, D.const(F.one, F.width), x)

    return _farith(D, ty, mods, prim, a)


def _approx_family(name, section):
    def op(D, ty, mods, a):
        return _approx(D, ty, mods, name, a)

    op.__name__ = name
    op.__doc__ = (
        f"{name}.approx{{.ftz}}.type -- {section}: {name}.  Approximate: concrete gives a"
        f" best-effort value, symbolic the uninterpreted approx_{name}_<fmt>."
    )
    return op


ex2 = _approx_family("ex2", "§Floating-Point / §Half Precision")
lg2 = _approx_family("lg2", "§Floating-Point")
sin = _approx_family("sin", "§Floating-Point")
cos = _approx_family("cos", "§Floating-Point")
tanh = _approx_family("tanh", "§Floating-Point / §Half Precision")


def copysign(D, ty, mods, a, b):
    """copysign.type d, a, b: b with the sign of a -- §Floating-Point: copysign."""
    F = FORMATS[ty]
    sb = D.const(F.sign_bit, F.width)
    return D.or_(D.and_(b, D.not_(sb, F.width)), D.and_(a, sb))


_TESTP = ("finite", "infinite", "number", "notanumber", "normal", "subnormal")


def testp(D, ty, mods, a):
    """testp.op.type p, a -- §Floating-Point: testp (normal excludes zero)."""
    F = FORMATS[ty]
    nan, inf = f_isnan(D, F, a), f_isinf(D, F, a)
    op = next(m for m in _TESTP if m in mods)
    if op == "finite":
        return D.bnot(D.bor(nan, inf))
    if op == "infinite":
        return inf
    if op == "number":
        return D.bnot(nan)
    if op == "notanumber":
        return nan
    sub_ = f_issub(D, F, a)
    if op == "subnormal":
        return sub_
    # "normal (not NaN, not Inf)": sm_90 answers true for a zero too (f32 and f64 checked on
    # an H200); subnormals are not normal
    return D.bnot(D.bor(D.bor(nan, inf), sub_))
