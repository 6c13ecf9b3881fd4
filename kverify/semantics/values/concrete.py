"""Concrete value domain: numpy, bit-exact, vectorized over the lanes of a warp.

Owns: the primitive vocabulary that :mod:`ops` is written against, over numpy arrays.
A bit-vector of width w <= 64 is a ``numpy.uint64`` array (or 0-d value) holding the raw
pattern in its low w bits; a predicate is a ``numpy.bool_`` array.  Float primitives
take and return bit patterns.  Round-to-nearest-even add/sub/mul/div/sqrt in f16, f32
and f64 use numpy's IEEE arithmetic directly (f16 is computed by numpy in f32 and rounded
once more, which is exact for these operations since 24 >= 2*11+2); bf16 the same way
through f32 (24 >= 2*8+2).  Everything else (directed rounding, fma, f64 fma, 64-bit
integer sources) goes lane by lane through the exact rational arithmetic of
:mod:`softfloat`.  NaN results are the canonical NaN of the format.

Bit-vector primitives follow SMT-LIB semantics exactly, including division by zero
(``udiv x 0 = all ones``, ``urem x 0 = x``, ``sdiv x 0 = x<0 ? 1 : -1``,
``srem x 0 = x``) and shift amounts >= width (``shl``/``lshr`` give 0, ``ashr`` gives
the sign fill), so that the concrete and symbolic domains agree by construction.
"""
from __future__ import annotations

import functools

import numpy as np

from . import softfloat
from .types import FORMATS, mask

U64 = np.uint64
_NP_FLOAT = {"f16": (np.uint16, np.float16), "f32": (np.uint32, np.float32), "f64": (np.uint64, np.float64)}


def _u(v):
    return np.asarray(v, dtype=np.uint64)


def _m(w):
    return U64(mask(w))


def _to_signed(a, w):
    a = _u(a)
    if w == 64:
        return a.view(np.int64)
    sb = U64(1 << (w - 1))
    return ((a ^ sb).astype(np.int64) - np.int64(1 << (w - 1)))


def _lanes(fn, *arrays):
    """Apply a Python-int function lane by lane (exact slow path)."""
    arrs = np.broadcast_arrays(*[_u(a) for a in arrays])
    shape = arrs[0].shape
    flat = [a.ravel() for a in arrs]
    out = np.fromiter((fn(*(int(x) for x in xs)) for xs in zip(*flat)), dtype=np.uint64, count=flat[0].size)
    return out.reshape(shape)


_IGNORING = [0]  # depth of ``quiet()`` blocks open (one thread computes lanes)


class quiet:
    """``np.errstate(all="ignore")`` (lanes wrap, overflow and divide by zero as PTX defines),
    entered once however deeply nested: inside one, the domain's methods enter none of their
    own (numpy's context manager costs more than most lane operations)."""

    def __enter__(self):
        if not _IGNORING[0]:
            self._cm = np.errstate(all="ignore")
            self._cm.__enter__()
        _IGNORING[0] += 1
        return self

    def __exit__(self, *exc):
        _IGNORING[0] -= 1
        if not _IGNORING[0]:
            self._cm.__exit__(*exc)
        return False


def _quiet(fn):
    @functools.wraps(fn)
    def wrapper(*a, **k):
        if _IGNORING[0]:
            return fn(*a, **k)
        with quiet():
            return fn(*a, **k)

    return wrapper


class ConcreteDomain:
    """Numpy lanes.  Stateless; one instance can be shared."""

    name = "concrete"
    symbolic = False

    # ---------------------------------------------------------------- constants
    def const(self, v: int, w: int):
        return U64(v & mask(w))

    def boolc(self, v: bool):
        return np.bool_(bool(v))

    def is_const(self, x) -> bool:
        return False

    # ---------------------------------------------------------------- bit-vectors
    def add(self, a, b, w):
        return (_u(a) + _u(b)) & _m(w)

    def sub(self, a, b, w):
        return (_u(a) - _u(b)) & _m(w)

    def mul(self, a, b, w):
        return (_u(a) * _u(b)) & _m(w)

    def neg(self, a, w):
        return (U64(0) - _u(a)) & _m(w)

    def and_(self, a, b):
        return _u(a) & _u(b)

    def or_(self, a, b):
        return _u(a) | _u(b)

    def xor(self, a, b):
        return _u(a) ^ _u(b)

    def not_(self, a, w):
        return ~_u(a) & _m(w)

    def shl(self, a, s, w):
        a, s = _u(a), _u(s)
        big = s >= U64(w)
        return np.where(big, U64(0), (a << np.minimum(s, U64(63))) & _m(w))

    def lshr(self, a, s, w):
        a, s = _u(a), _u(s)
        big = s >= U64(w)
        return np.where(big, U64(0), a >> np.minimum(s, U64(63)))

    def ashr(self, a, s, w):
        sa = _to_signed(a, w)
        s = _u(s)
        sh = np.minimum(s, U64(w - 1)).astype(np.int64)
        return (sa >> sh).astype(np.uint64) & _m(w)

    def udiv(self, a, b, w):
        a, b = _u(a), _u(b)
        z = b == 0
        q = a // np.where(z, U64(1), b)
        return np.where(z, _m(w), q)

    def urem(self, a, b, w):
        a, b = _u(a), _u(b)
        z = b == 0
        return np.where(z, a, a % np.where(z, U64(1), b))

    def sdiv(self, a, b, w):
        # C-style truncating division, computed on magnitudes (no int64 overflow)
        sa, sb = _to_signed(a, w), _to_signed(b, w)
        na, nb = sa < 0, sb < 0
        ma = np.where(na, self.neg(a, w), _u(a)) & _m(w)
        mb = np.where(nb, self.neg(b, w), _u(b)) & _m(w)
        q = self.udiv(ma, mb, w)
        q = np.where(na != nb, self.neg(q, w), q)
        z = _u(b) == 0
        return np.where(z, np.where(na, U64(1), _m(w)), q)

    def srem(self, a, b, w):
        sa, sb = _to_signed(a, w), _to_signed(b, w)
        na, nb = sa < 0, sb < 0
        ma = np.where(na, self.neg(a, w), _u(a)) & _m(w)
        mb = np.where(nb, self.neg(b, w), _u(b)) & _m(w)
        r = self.urem(ma, mb, w)
        return np.where(na, self.neg(r, w), r)

    def mulhi(self, a, b, w, signed):
        """High w bits of the 2w-bit product."""
        a, b = _u(a), _u(b)
        if w <= 32:
            if signed:
                p = (_to_signed(a, w) * _to_signed(b, w)).astype(np.uint64)
            else:
                p = a * b
            return (p >> U64(w)) & _m(w)
        # 64 x 64 -> high 64, with 32-bit limbs
        lo32 = U64(0xFFFFFFFF)
        al, ah, bl, bh = a & lo32, a >> U64(32), b & lo32, b >> U64(32)
        ll, lh, hl, hh = al * bl, al * bh, ah * bl, ah * bh
        mid = (ll >> U64(32)) + (lh & lo32) + (hl & lo32)
        hi = hh + (lh >> U64(32)) + (hl >> U64(32)) + (mid >> U64(32))
        if signed:
            hi = hi - np.where(a >> U64(63) == 1, b, U64(0)) - np.where(b >> U64(63) == 1, a, U64(0))
        return hi

    def eq(self, a, b):
        return _u(a) == _u(b)

    def ult(self, a, b):
        return _u(a) < _u(b)

    def ule(self, a, b):
        return _u(a) <= _u(b)

    def slt(self, a, b, w):
        return _to_signed(a, w) < _to_signed(b, w)

    def sle(self, a, b, w):
        return _to_signed(a, w) <= _to_signed(b, w)

    def ite(self, c, a, b):
        return np.where(c, a, b)

    def band(self, a, b):
        return np.logical_and(a, b)

    def bor(self, a, b):
        return np.logical_or(a, b)

    def bxor(self, a, b):
        return np.logical_xor(a, b)

    def bnot(self, a):
        return np.logical_not(a)

    def extract(self, a, hi, lo):
        return (_u(a) >> U64(lo)) & _m(hi - lo + 1)

    def zext(self, a, fw, tw):
        return _u(a)

    def sext(self, a, fw, tw):
        a = _u(a)
        if tw == fw:
            return a
        neg = (a >> U64(fw - 1)) & U64(1)
        return np.where(neg == 1, a | (_m(tw) ^ _m(fw)), a)

    def concat(self, hi, lo, wlo):
        return (_u(hi) << U64(wlo)) | _u(lo)

    # ---------------------------------------------------------------- floats
    @staticmethod
    def _view(fmt, a):
        a = _u(a)
        if fmt == "bf16":
            return (a.astype(np.uint32) << np.uint32(16)).view(np.float32)
        it, ft = _NP_FLOAT[fmt]
        return np.ascontiguousarray(a.astype(it)).view(ft)

    @staticmethod
    def _unview(fmt, x):
        f = FORMATS[fmt]
        if fmt == "bf16":
            u = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
            r = (u + U64(0x7FFF) + ((u >> U64(16)) & U64(1))) >> U64(16)  # RNE f32 -> bf16
        else:
            it, ft = _NP_FLOAT[fmt]
            r = np.asarray(x, dtype=ft).view(it).astype(np.uint64)
        return np.where(np.isnan(x), U64(f.canonical_nan), r)

    def _native(self, fmt, fn, *args):
        xs = [self._view(fmt, a) for a in args]
        return self._unview(fmt, fn(*xs))

    def fadd(self, fmt, rm, a, b):
        if rm == "rn":
            return self._native(fmt, np.add, a, b)
        f = FORMATS[fmt]
        return _lanes(lambda x, y: softfloat.add(f, rm, x, y), a, b)

    def fsub(self, fmt, rm, a, b):
        if rm == "rn":
            return self._native(fmt, np.subtract, a, b)
        f = FORMATS[fmt]
        return _lanes(lambda x, y: softfloat.sub(f, rm, x, y), a, b)

    def fmul(self, fmt, rm, a, b):
        if rm == "rn":
            return self._native(fmt, np.multiply, a, b)
        f = FORMATS[fmt]
        return _lanes(lambda x, y: softfloat.mul(f, rm, x, y), a, b)

    def fdiv(self, fmt, rm, a, b):
        if rm == "rn":
            return self._native(fmt, np.divide, a, b)
        f = FORMATS[fmt]
        return _lanes(lambda x, y: softfloat.div(f, rm, x, y), a, b)

    def fsqrt(self, fmt, rm, a):
        if rm == "rn":
            return self._native(fmt, np.sqrt, a)
        f = FORMATS[fmt]
        return _lanes(lambda x: softfloat.sqrt(f, rm, x), a)

    def ffma(self, fmt, rm, a, b, c):
        f = FORMATS[fmt]
        if fmt != "f64":
            # product is exact in f64; the sum is made round-to-odd in f64 (TwoSum error
            # term), and rounding a round-to-odd f64 (53 >= 24 + 2 bits) once more to the
            # target is then correct for every mode.
            r = self._fma_via_f64(fmt, rm, a, b, c)
            if r is not None:
                return r
        return _lanes(lambda x, y, z: softfloat.fma(f, rm, x, y, z), a, b, c)

    def _fma_via_f64(self, fmt, rm, a, b, c):
        xa, xb, xc = (self._view(fmt, v).astype(np.float64) for v in (a, b, c))
        p = xa * xb
        s = p + xc
        bp = s - xc
        err = (p - bp) + (xc - (s - bp))
        fin = np.isfinite(s) & np.isfinite(err)
        sb = np.asarray(s, dtype=np.float64).view(np.uint64)
        fix = fin & (err != 0) & ((sb & U64(1)) == 0)
        towards = np.where(err > 0, np.inf, -np.inf)
        s = np.where(fix, np.nextafter(s, towards), s)
        # exact zero sum: IEEE sign rule (x + -x = +0 except toward -inf)
        zero = fin & (s == 0) & (err == 0)
        if rm == "rm":
            zs = np.where((p == 0) & (xc == 0) & ~np.signbit(p) & ~np.signbit(xc), 0.0, -0.0)
        else:
            zs = np.where((p == 0) & (xc == 0) & np.signbit(p) & np.signbit(xc), -0.0, 0.0)
        s = np.where(zero, zs, s)
        bits64 = np.asarray(s, dtype=np.float64).view(np.uint64)
        if rm == "rn" and fmt in ("f32", "f16"):
            return self.fcvt(fmt, "f64", "rn", bits64)
        f = FORMATS[fmt]
        f64 = FORMATS["f64"]
        return _lanes(lambda x: softfloat.convert(f, f64, rm, x), bits64)

    def frint(self, fmt, rm, a):
        fn = {"rn": np.rint, "rz": np.trunc, "rm": np.floor, "rp": np.ceil}[rm]
        x = self._view(fmt, a).astype(np.float64)
        f = FORMATS[fmt]
        r = fn(x)  # integral values of every format here are exact in f64
        if fmt == "f64":
            out = r.view(np.uint64)
        else:
            out = self._unview_exact(fmt, r)
        return np.where(np.isnan(x), U64(f.canonical_nan), out)

    def _unview_exact(self, fmt, x64):
        """f64 values known to be representable in ``fmt`` -> bits."""
        x64 = np.asarray(x64, dtype=np.float64)
        if fmt == "bf16":
            return x64.astype(np.float32).view(np.uint32).astype(np.uint64) >> U64(16)
        it, ft = _NP_FLOAT[fmt]
        return x64.astype(ft).view(it).astype(np.uint64)

    def fcvt(self, dfmt, sfmt, rm, a):
        df, sf = FORMATS[dfmt], FORMATS[sfmt]
        x = self._view(sfmt, a).astype(np.float64)  # exact
        if dfmt == "f64":
            out = np.ascontiguousarray(x).view(np.uint64)
            return np.where(np.isnan(x), U64(df.canonical_nan), out)
        if df.p >= sf.p and df.ebits >= sf.ebits:
            return np.where(np.isnan(x), U64(df.canonical_nan), self._unview_exact(dfmt, x))
        if rm == "rn" and dfmt in ("f32", "f16"):
            it, ft = _NP_FLOAT[dfmt]
            r = x.astype(ft)
            return np.where(np.isnan(x), U64(df.canonical_nan), r.view(it).astype(np.uint64))
        return _lanes(lambda v: softfloat.convert(df, sf, rm, v), a)

    def i2f(self, fmt, rm, a, w, signed):
        f = FORMATS[fmt]
        if w <= 32:
            v = _to_signed(a, w) if signed else _u(a).astype(np.int64)
            x = np.asarray(v.astype(np.float64)).view(np.uint64)  # exact
            return self.fcvt(fmt, "f64", rm, x)

        def one(v):
            if signed and v >> (w - 1):
                v -= 1 << w
            return softfloat.from_int(f, rm, v)

        return _lanes(one, a)

    def f2i(self, fmt, a, w, signed):
        """Integral, in-range float -> integer bits (other inputs give 0)."""
        x = self._view(fmt, a).astype(np.float64)
        lo, hi = (-(2.0 ** (w - 1)), 2.0 ** (w - 1)) if signed else (0.0, 2.0 ** w)
        ok = (x >= lo) & (x < hi)
        x = np.where(ok, x, 0.0)
        if signed or w < 64:
            return x.astype(np.int64).astype(np.uint64) & _m(w)
        return x.astype(np.uint64)

    def feq(self, fmt, a, b):
        return self._view(fmt, a) == self._view(fmt, b)

    def flt(self, fmt, a, b):
        return self._view(fmt, a) < self._view(fmt, b)

    def fle(self, fmt, a, b):
        return self._view(fmt, a) <= self._view(fmt, b)

    # ---------------------------------------------------------------- approximate
    _APPROX = {
        "rcp": lambda x: 1.0 / x,
        "sqrt": np.sqrt,
        "rsqrt": lambda x: 1.0 / np.sqrt(x),
        "ex2": np.exp2,
        "lg2": np.log2,
        "sin": np.sin,
        "cos": np.cos,
        "tanh": np.tanh,
        "div": lambda x, y: x / y,
        "div_full": lambda x, y: x / y,
    }

    def approx(self, name, fmt, *args):
        """Best-effort value of an approximate instruction (PTX documents only an error bound):
        computed in f64 and rounded to nearest; lies within the documented bound."""
        xs = [self._view(fmt, a).astype(np.float64) for a in args]
        r = self._APPROX[name](*xs)
        bits64 = np.asarray(r, dtype=np.float64).view(np.uint64)
        return self.fcvt(fmt, "f64", "rn", bits64)


# every method runs inside a ``quiet()`` block (its own when none is open): none enters another
for _name, _fn in list(vars(ConcreteDomain).items()):
    if callable(_fn) and not _name.startswith("__") and not isinstance(_fn, staticmethod):
        setattr(ConcreteDomain, _name, _quiet(_fn))
