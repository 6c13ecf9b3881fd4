"""Value semantics of comparison and selection: the CmpOp of setp/set (``compare``), setp,
set, selp, slct -- §Comparison and Selection, §Half Precision Comparison.
"""
from __future__ import annotations

from ..types import FORMATS, bits, element, is_float, is_packed, is_signed, mask
from .common import _neg_bool, f_ftz, f_isnan


# ================================================================= comparison and selection
_FCMP = ("eq", "ne", "lt", "le", "gt", "ge", "equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan")
_ICMP = ("eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs")


def _cmp_op(ty, mods):
    ops = _FCMP if is_float(ty) else _ICMP
    for o in ops:
        if o in mods:
            return o
    raise ValueError(f"no comparison operator in {sorted(mods)}")


def compare(D, ty, mods, a, b):
    """The CmpOp of setp/set -- §Comparison and Selection: 'Comparison' tables.  Ordered float
    comparisons are false when either operand is NaN, unordered (..u) ones true."""
    op = _cmp_op(ty, mods)
    if is_float(ty):
        F = FORMATS[ty]
        if "ftz" in mods:
            a, b = f_ftz(D, F, a), f_ftz(D, F, b)
        nan = D.bor(f_isnan(D, F, a), f_isnan(D, F, b))
        base = op[:-1] if op.endswith("u") else op
        if op in ("num", "nan"):
            return D.bnot(nan) if op == "num" else nan
        if base == "eq":
            t = D.feq(ty, a, b)
        elif base == "ne":
            t = D.band(D.bnot(nan), D.bnot(D.feq(ty, a, b)))
        elif base == "lt":
            t = D.flt(ty, a, b)
        elif base == "le":
            t = D.fle(ty, a, b)
        elif base == "gt":
            t = D.flt(ty, b, a)
        else:
            t = D.fle(ty, b, a)
        return D.bor(nan, t) if op.endswith("u") else t
    w = bits(ty)
    if op == "eq":
        return D.eq(a, b)
    if op == "ne":
        return D.bnot(D.eq(a, b))
    signed = is_signed(ty) and op in ("lt", "le", "gt", "ge")
    lt = (lambda x, y: D.slt(x, y, w)) if signed else D.ult
    le = (lambda x, y: D.sle(x, y, w)) if signed else D.ule
    if op in ("lt", "lo"):
        return lt(a, b)
    if op in ("le", "ls"):
        return le(a, b)
    if op in ("gt", "hi"):
        return lt(b, a)
    return le(b, a)


def _combine(D, mods, t, c):
    if "and" in mods:
        return D.band(t, c)
    if "or" in mods:
        return D.bor(t, c)
    if "xor" in mods:
        return D.bxor(t, c)
    return t


def setp(D, ty, mods, a, b, c=None):
    """setp.CmpOp{.BoolOp}{.ftz}.type p|q, a, b{, {!}c}: p = (a CmpOp b) BoolOp c,
    q = !(a CmpOp b) BoolOp c.  Returns (p, q); a negated c is negated by the caller
    -- §Comparison and Selection: setp.

    Packed f16x2/bf16x2 (§Half Precision Comparison: setp): p is the comparison of the
    lower halves, q that of the upper halves, each combined with c."""
    if is_packed(ty):
        e = element(ty)
        t_lo = compare(D, e, mods, D.extract(a, 15, 0), D.extract(b, 15, 0))
        t_hi = compare(D, e, mods, D.extract(a, 31, 16), D.extract(b, 31, 16))
        if c is None:
            return t_lo, t_hi
        return _combine(D, mods, t_lo, c), _combine(D, mods, t_hi, c)
    t = compare(D, ty, mods, a, b)
    if c is None:
        return t, D.bnot(t)
    return _combine(D, mods, t, c), _combine(D, mods, D.bnot(t), c)


def set(D, ty, mods, a, b, c=None):  # noqa: A001
    """set.CmpOp{.BoolOp}{.ftz}.dtype.stype d, a, b{, c}: d = 1.0f (f32) or 0xffffffff
    (u32/s32) when true, else 0 -- §Comparison and Selection: set."""
    dty, sty = ty
    t = compare(D, sty, mods, a, b)
    if c is not None:
        t = _combine(D, mods, t, c)
    w = bits(dty)
    one = FORMATS[dty].one if is_float(dty) else mask(w)
    return D.ite(t, D.const(one, w), D.const(0, w))


def selp(D, ty, mods, a, b, c):
    """selp.type d, a, b, c: d = c ? a : b -- §Comparison and Selection: selp."""
    return D.ite(c, a, b)


def slct(D, ty, mods, a, b, c):
    """slct{.ftz}.dtype.{s32,f32} d, a, b, c: d = (c >= 0) ? a : b (NaN c selects b;
    -0.0 >= 0) -- §Comparison and Selection: slct."""
    _dty, cty = ty
    if is_float(cty):
        F = FORMATS[cty]
        if "ftz" in mods:
            c = f_ftz(D, F, c)
        cond = D.fle(cty, D.const(0, F.width), c)
    else:
        cond = D.bnot(_neg_bool(D, c, bits(cty)))
    return D.ite(cond, a, b)
