"""Value semantics of logic, shift and bit manipulation: and, or, xor, not, cnot, shl, shr,
lop3, shf (§Logic and Shift), bfe, bfi, brev, popc, clz (§Integer Arithmetic) and prmt
(§Data Movement).
"""
from __future__ import annotations

from ..types import bits, is_signed, mask
from .common import _amount, _bool_to_bv, _neg_bool


# ================================================================= logic and shift
def and_(D, ty, mods, a, b):
    """and.type -- §Logic and Shift: and."""
    return D.band(a, b) if ty == "pred" else D.and_(a, b)


def or_(D, ty, mods, a, b):
    """or.type -- §Logic and Shift: or."""
    return D.bor(a, b) if ty == "pred" else D.or_(a, b)


def xor(D, ty, mods, a, b):
    """xor.type -- §Logic and Shift: xor."""
    return D.bxor(a, b) if ty == "pred" else D.xor(a, b)


def not_(D, ty, mods, a):
    """not.type -- §Logic and Shift: not."""
    return D.bnot(a) if ty == "pred" else D.not_(a, bits(ty))


def cnot(D, ty, mods, a):
    """cnot.type: d = (a == 0) ? 1 : 0 -- §Logic and Shift: cnot."""
    w = bits(ty)
    return _bool_to_bv(D, D.eq(a, D.const(0, w)), w)


def shl(D, ty, mods, a, b):
    """shl.type d, a, b (b: u32; amounts >= width give 0) -- §Logic and Shift: shl."""
    w = bits(ty)
    return D.shl(a, _amount(D, b, w), w)


def shr(D, ty, mods, a, b):
    """shr.type (b: u32): arithmetic for .s types (sign fill for amounts >= width), logical
    otherwise -- §Logic and Shift: shr."""
    w = bits(ty)
    n = _amount(D, b, w)
    return D.ashr(a, n, w) if is_signed(ty) else D.lshr(a, n, w)


def lop3(D, ty, mods, a, b, c, lut):
    """lop3.b32 d, a, b, c, immLut: bitwise function given by its truth table (ta=0xF0,
    tb=0xCC, tc=0xAA) -- §Logic and Shift: lop3.  ``lut`` is a Python int."""
    w = bits(ty)
    lut = int(lut) & 0xFF
    if lut == 0:
        return D.const(0, w)
    if lut == 0xFF:
        return D.const(mask(w), w)
    na, nb, nc = D.not_(a, w), D.not_(b, w), D.not_(c, w)
    r = None
    for i in range(8):
        if (lut >> i) & 1:
            t = D.and_(D.and_(a if i & 4 else na, b if i & 2 else nb), c if i & 1 else nc)
            r = t if r is None else D.or_(r, t)
    return r


def shf(D, ty, mods, a, b, c):
    """shf.{l,r}.{wrap,clamp}.b32 d, a, b, c: funnel shift of the 64-bit {b, a};
    .wrap: n = c & 31, .clamp: n = min(c, 32); .l: d = upper 32 bits of ({b,a} << n),
    .r: d = lower 32 bits of ({b,a} >> n) -- §Logic and Shift: shf."""
    if "clamp" in mods:
        n = D.ite(D.ult(c, D.const(32, 32)), c, D.const(32, 32))
    else:
        n = D.and_(c, D.const(31, 32))
    x = D.concat(b, a, 32)
    n64 = D.zext(n, 32, 64)
    if "l" in mods:
        return D.extract(D.shl(x, n64, 64), 63, 32)
    return D.extract(D.lshr(x, n64, 64), 31, 0)


def bfe(D, ty, mods, a, b, c):
    """bfe.type d, a, b, c: extract len = c & 0xff bits from pos = b & 0xff, zero-extended
    (.u) or sign-extended from bit min(pos+len-1, msb) (.s); len 0 gives 0
    -- §Integer Arithmetic: bfe."""
    w = bits(ty)
    m8 = D.const(0xFF, 32)
    pos, ln = D.and_(b, m8), D.and_(c, m8)
    posw, lenw = _amount(D, pos, w), _amount(D, ln, w)
    ones = D.const(mask(w), w)
    m = D.not_(D.shl(ones, lenw, w), w)
    if not is_signed(ty):
        return D.and_(D.lshr(a, posw, w), m)
    field = D.and_(D.ashr(a, posw, w), m)
    idx = D.sub(D.add(pos, ln, 32), D.const(1, 32), 32)
    bit_at = D.eq(D.extract(D.lshr(a, _amount(D, idx, w), w), 0, 0), D.const(1, 1))
    sbit = D.ite(D.ult(idx, D.const(w, 32)), bit_at, _neg_bool(D, a, w))
    sbit = D.band(sbit, D.bnot(D.eq(ln, D.const(0, 32))))
    return D.ite(sbit, D.or_(field, D.not_(m, w)), field)


def bfi(D, ty, mods, a, b, c, d):
    """bfi.type f, a, b, c, d: insert the low len = d & 0xff bits of a into b at
    pos = c & 0xff (bits beyond the msb are dropped) -- §Integer Arithmetic: bfi."""
    w = bits(ty)
    m8 = D.const(0xFF, 32)
    posw = _amount(D, D.and_(c, m8), w)
    lenw = _amount(D, D.and_(d, m8), w)
    m = D.not_(D.shl(D.const(mask(w), w), lenw, w), w)
    ms = D.shl(m, posw, w)
    return D.or_(D.and_(b, D.not_(ms, w)), D.and_(D.shl(a, posw, w), ms))


def _shc(D, x, k, w):
    return D.const(k, w)


def brev(D, ty, mods, a):
    """brev.type: reverse the bits -- §Integer Arithmetic: brev."""
    w = bits(ty)
    x = a
    k = 1
    while k < w:
        # masks selecting the low k bits of every 2k-bit group
        grp = sum(((1 << k) - 1) << i for i in range(0, w, 2 * k))
        mlo = D.const(grp, w)
        kk = D.const(k, w)
        x = D.or_(D.shl(D.and_(x, mlo), kk, w), D.and_(D.lshr(x, kk, w), mlo))
        k *= 2
    return x


def popc(D, ty, mods, a):
    """popc.type d, a: number of one bits, d is .u32 -- §Integer Arithmetic: popc."""
    w = bits(ty)

    def c(v):
        return D.const(v, w)

    rep = lambda byte: sum(byte << i for i in range(0, w, 8))  # noqa: E731
    x = D.sub(a, D.and_(D.lshr(a, c(1), w), c(rep(0x55))), w)
    x = D.add(D.and_(x, c(rep(0x33))), D.and_(D.lshr(x, c(2), w), c(rep(0x33))), w)
    x = D.and_(D.add(x, D.lshr(x, c(4), w), w), c(rep(0x0F)))
    x = D.lshr(D.mul(x, c(rep(0x01)), w), c(w - 8), w)
    return x if w == 32 else D.extract(x, 31, 0)


def clz(D, ty, mods, a):
    """clz.type d, a: leading zeros (width for 0), d is .u32 -- §Integer Arithmetic: clz."""
    w = bits(ty)
    n = D.const(0, 32)
    x = a
    k = w // 2
    while k >= 1:
        top_zero = D.eq(D.lshr(x, D.const(w - k, w), w), D.const(0, w))
        n = D.ite(top_zero, D.add(n, D.const(k, 32), 32), n)
        x = D.ite(top_zero, D.shl(x, D.const(k, w), w), x)
        k //= 2
    return D.ite(D.eq(a, D.const(0, w)), D.const(w, 32), n)


def prmt(D, ty, mods, a, b, c):
    """prmt.b32 d, a, b, c (default mode): byte i of d is byte c[4i+2:4i] of {b, a}, or that
    byte's sign replicated when c[4i+3] is set -- §Data Movement: prmt."""
    if mods & {"f4e", "b4e", "rc8", "ecl", "ecr", "rc16"}:
        raise NotImplementedError("prmt: only the default mode is implemented")
    src = [D.extract(a, 8 * i + 7, 8 * i) for i in range(4)] + [D.extract(b, 8 * i + 7, 8 * i) for i in range(4)]
    out = None
    for i in range(4):
        sel = D.extract(c, 4 * i + 2, 4 * i)
        byte = src[7]
        for k in range(6, -1, -1):
            byte = D.ite(D.eq(sel, D.const(k, 3)), src[k], byte)
        rep = D.eq(D.extract(c, 4 * i + 3, 4 * i + 3), D.const(1, 1))
        msb = D.eq(D.extract(byte, 7, 7), D.const(1, 1))
        byte = D.ite(rep, D.ite(msb, D.const(0xFF, 8), D.const(0, 8)), byte)
        out = byte if out is None else D.concat(byte, out, 8 * i)
    return out
