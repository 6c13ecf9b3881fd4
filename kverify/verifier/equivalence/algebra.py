"""Value algebras of the symbolic executor: what a register or memory cell holds under
each floating-point model.

Owns: the evaluation of one instruction family on operands that are concrete (Python
ints / bools: thread ids, addresses, loop counters, constants) or symbolic (input data).
Concrete operands always go through the concrete domain of ``kverify.semantics.values`` (the
interpreter's bit-exact definitions). Symbolic operands go

  * ``bitexact`` / ``int``: through the *same* definitions over ``Z3Domain`` (z3
    bit-vectors, IEEE floating point with the instruction's rounding mode, approximate
    instructions as uninterpreted functions);
  * ``real``: through the normal forms of :mod:`realterm` (values as reals, rounding
    modes, ``.ftz`` and the error of approximate instructions abstracted away: ``ex2``,
    ``rcp``/``div``/``lg2`` ``.approx`` are read as the exact functions; ``sin``, ``cos``,
    ``tanh``, ``sqrt`` are uninterpreted, ``rsqrt(a)`` is ``inv(sqrt(a))``). Integer or bit-level
    operations on real values become uninterpreted terms, except the exponent
    construction of the CUDA ``expf`` sequence (see :meth:`RealAlgebra.as_real`).

A predicate that decides control flow or an address must be concrete; when it is
symbolic the executor stops with :class:`DataDependent` (the verdict is ``unknown``).
"""
from __future__ import annotations

from fractions import Fraction

import numpy as np
import z3

from kverify.launch import dtypes
from kverify.semantics.values import ConcreteDomain, Z3Domain, evaluate
from kverify.semantics.values.types import FORMATS, bits_to_float, float_to_bits, is_float

from . import folds as F
from . import realterm as R

CD = ConcreteDomain()
U64 = np.uint64


class DataDependent(Exception):
    """Control flow, an address or a protocol operand depends on symbolic data."""


class ModelUnsupported(Exception):
    """The chosen model cannot express an operation."""


def is_concrete(v) -> bool:
    return type(v) is int or type(v) is bool


_INT_W = {"b8": 8, "u8": 8, "s8": 8, "b16": 16, "u16": 16, "s16": 16, "b32": 32, "u32": 32, "s32": 32,
          "b64": 64, "u64": 64, "s64": 64}


def _sx(v, w):
    return v - (1 << w) if v >> (w - 1) else v


def fast_int(fam, ty, mods, args):
    """Plain-Python evaluation of the common integer forms (the same results as the
    concrete domain; anything unusual returns None and goes through ``evaluate``)."""
    if type(ty) is tuple:
        if fam != "cvt" or ty[0] not in _INT_W or ty[1] not in _INT_W or "sat" in mods:
            return None
        dw, sw = _INT_W[ty[0]], _INT_W[ty[1]]
        a = args[0] & ((1 << sw) - 1)
        if dw > sw and ty[1][0] == "s":
            a = _sx(a, sw)
        return a & ((1 << dw) - 1)
    w = _INT_W.get(ty)
    if w is None:
        return None
    m = (1 << w) - 1
    signed = ty[0] == "s"
    if fam == "add" and not mods:
        return (args[0] + args[1]) & m
    if fam == "sub" and not mods:
        return (args[0] - args[1]) & m
    if fam in ("mul", "mad") and not (mods - {"lo", "wide"}):
        a, b = args[0] & m, args[1] & m
        if signed:
            a, b = _sx(a, w), _sx(b, w)
        if "wide" in mods:
            r = a * b
            if fam == "mad":
                r += args[2]
            return r & ((1 << (2 * w)) - 1)
        r = a * b
        if fam == "mad":
            r += args[2]
        return r & m
    if fam == "and":
        return args[0] & args[1]
    if fam == "or":
        return args[0] | args[1]
    if fam == "xor":
        return args[0] ^ args[1]
    if fam == "shl":
        return (args[0] << args[1]) & m if args[1] < w else 0
    if fam == "shr":
        a = args[0] & m
        n = args[1]
        if signed:
            return (_sx(a, w) >> min(n, w)) & m
        return a >> n if n < w else 0
    if fam == "setp" and len(args) == 2:
        a, b = args[0] & m, args[1] & m
        if signed:
            a, b = _sx(a, w), _sx(b, w)
        for op, f in (("eq", a == b), ("ne", a != b), ("lt", a < b), ("le", a <= b), ("gt", a > b),
                      ("ge", a >= b), ("lo", a < b), ("ls", a <= b), ("hi", a > b), ("hs", a >= b)):
            if op in mods:
                return (f, not f)
        return None
    if fam == "selp":
        return args[0] if args[2] else args[1]
    if fam == "mov" and len(args) == 1:
        return args[0]
    if fam in ("min", "max") and not mods:
        a, b = args[0] & m, args[1] & m
        if signed:
            a, b = _sx(a, w), _sx(b, w)
        r = min(a, b) if fam == "min" else max(a, b)
        return r & m
    if fam == "neg":
        return (-args[0]) & m
    return None


def concrete_eval(fam, ty, mods, args):
    r = fast_int(fam, ty, mods, args)
    if r is not None:
        return r
    a = [np.array([x], dtype=np.bool_) if type(x) is bool else np.array([x & 0xFFFFFFFFFFFFFFFF], dtype=U64)
         for x in args]
    with np.errstate(all="ignore"):
        r = evaluate(CD, fam, ty, mods, *a)
    if isinstance(r, tuple):
        return tuple(_py(x) for x in r)
    return _py(r)


def _py(x):
    x = np.asarray(x).reshape(-1)[0]
    return bool(x) if isinstance(x, np.bool_) else int(x)


class BVAlgebra:
    """bitexact / int: symbolic values are z3 bit-vectors and Bools."""

    def __init__(self, model: str):
        self.model = model
        self.D = Z3Domain()
        self.ufs = self.D._ufs
        self.solver_checks = 0

    # -------------------------------------------------------------- values
    def input_value(self, name: str, dtype: str, nbits: int):
        return z3.BitVec(name, nbits)

    def fresh(self, name: str, nbits: int):
        return z3.BitVec(name, nbits)

    def width(self, v):
        return v.size()

    def fit(self, v, w, signed=False):
        """``v`` as a ``w``-bit operand (truncate or extend)."""
        if type(v) is bool:
            return v
        if type(v) is int:
            return v & ((1 << w) - 1)
        if isinstance(v, F.Lazy):  # atomic folds and merged registers (folds.py)
            if isinstance(v, F.Fold) and v.w == w or isinstance(v, F.FoldPred):
                return v
            v = F.force(v)
        if z3.is_bool(v):
            return v
        n = v.size()
        if n == w:
            return v
        if n > w:
            return z3.Extract(w - 1, 0, v)
        return (z3.SignExt if signed else z3.ZeroExt)(w - n, v)

    def _lift(self, x, w):
        if type(x) is bool:
            return z3.BoolVal(x)
        if type(x) is int:
            return z3.BitVecVal(x & ((1 << w) - 1), w)
        return x

    def _lower(self, r):
        if z3.is_bv_value(r):
            return r.as_long()
        if z3.is_true(r):
            return True
        if z3.is_false(r):
            return False
        return r

    def family(self, fam, ty, mods, args, widths):
        if all(is_concrete(a) for a in args):
            return concrete_eval(fam, ty, mods, args)
        if any(isinstance(a, F.Lazy) for a in args):
            return F.lazy_family(self, fam, ty, mods, args, widths)
        zargs = [self._lift(a, w) for a, w in zip(args, widths)]
        try:
            r = evaluate(self.D, fam, ty, mods, *zargs)
        except NotImplementedError as e:  # a mode the value semantics does not implement (prmt.ecl, ...)
            raise ModelUnsupported(str(e)) from None
        if isinstance(r, tuple):
            return tuple(self._lower(x) for x in r)
        return self._lower(r)

    def truth(self, v, what="a branch condition") -> bool:
        if type(v) is bool:
            return v
        if type(v) is int:
            return v != 0
        if isinstance(v, F.FoldPred):
            raise DataDependent(f"{what} depends on input data")
        v = F.force(v)
        e = v if z3.is_bool(v) else (v != 0)
        s = z3.simplify(e)
        if z3.is_true(s):
            return True
        if z3.is_false(s):
            return False
        raise DataDependent(f"{what} depends on input data")

    def truth_or_none(self, v):
        """``truth`` without raising: None when ``v`` depends on input data."""
        try:
            return self.truth(v)
        except DataDependent:
            return None

    def ite(self, c, a, b, w):
        c, a, b = F.force_bool(c), F.force(a), F.force(b)
        return self._lower(z3.If(c, self._lift(a, w), self._lift(b, w)))

    def pnot(self, v):
        if type(v) is bool:
            return not v
        if isinstance(v, F.FoldPred):
            return v.negate()
        return z3.Not(F.force_bool(v))

    # -------------------------------------------------------------- bytes
    def extract_bytes(self, v, lo, n, total):
        """Bytes ``lo .. lo+n`` (little endian) of a value of ``total`` bytes."""
        if type(v) is int:
            return (v >> (8 * lo)) & ((1 << (8 * n)) - 1)
        if lo == 0 and n == total:
            return v
        v = F.force(v)
        return z3.Extract(8 * (lo + n) - 1, 8 * lo, v)

    def concat_bytes(self, pieces):
        """``pieces``: list of (value, nbytes), least significant first."""
        if all(type(p) is int for p, _ in pieces):
            out, sh = 0, 0
            for p, n in pieces:
                out |= p << sh
                sh += 8 * n
            return out
        zs = [self._lift(F.force(p), 8 * n) for p, n in pieces]
        r = zs[0]
        for z in zs[1:]:
            r = z3.Concat(z, r)
        return r

    def as_output(self, v, dtype):
        return v


class Bits:
    """Bit-level result of an integer instruction applied to real values (``real``
    model): kept as an uninterpreted term unless recognized (see RealAlgebra.as_real)."""

    __slots__ = ("fam", "ty", "mods", "args", "_h")

    def __init__(self, fam, ty, mods, args):
        self.fam, self.ty, self.mods, self.args = fam, ty, tuple(sorted(mods)), tuple(args)
        self._h = hash((fam, str(ty), self.mods, self.args))

    def __hash__(self):
        return self._h

    def __eq__(self, o):
        return isinstance(o, Bits) and (o.fam, o.ty, o.mods, o.args) == (self.fam, self.ty, self.mods, self.args)

    def __repr__(self):
        return f"{self.fam}.{self.ty}({', '.join(map(str, self.args))})"


class Packed:
    """Several values side by side in one register or memory cell (``real`` model): the
    two halves of an ``.f16x2`` register, or a 4-byte ``cp.async`` chunk of two f16
    elements. ``pieces`` are (value, bytes), least significant first; a piece is taken
    back out whole (an access that splits a real value stays unsupported)."""

    __slots__ = ("pieces", "_h")

    def __init__(self, pieces):
        self.pieces = tuple(pieces)
        self._h = hash(self.pieces)

    def __hash__(self):
        return self._h

    def __eq__(self, o):
        return isinstance(o, Packed) and o.pieces == self.pieces

    def __repr__(self):
        return "{" + ", ".join(f"{v!r}:{n}" for v, n in self.pieces) + "}"


EXPF_MAGIC = 12582912  # 1.5 * 2**23: integers in [MAGIC, MAGIC + 2**22) have ulp 1 in f32


class RealAlgebra:
    """real: floats as reals in the normal forms of :mod:`realterm`."""

    def __init__(self):
        self.model = "real"
        self.A = R.Atoms()
        self.input_formats: dict = {}  # input element name -> the PTX float format of its buffer
        self.input_ints: dict = {}  # input element name -> the PTX integer type of its buffer

    # -------------------------------------------------------------- values
    def input_value(self, name, dtype, nbits):
        r = dtypes.lookup(dtype)
        if r is not None and r.is_float:
            self.input_formats[name] = r.ptx
        elif r is not None:
            self.input_ints[name] = r.ptx
        return self.A.var(name)

    def _input_int(self, v):
        """The integer type of the input buffer ``v`` is one element of, as loaded; else None
        (its value used as a float is its bits reinterpreted: ``as_real``)."""
        if isinstance(v, R.Poly) and len(v.terms) == 1:
            (m, c), = v.terms.items()
            if c == 1 and len(m) == 1:
                return self.input_ints.get(self.A.by_id[m[0]].name)
        return None

    def input_format(self, v):
        """The float format of the input buffer ``v`` is an element of, when ``v`` is one input
        element as loaded (its value under that format); else None."""
        if isinstance(v, R.Poly) and len(v.terms) == 1:
            (m, c), = v.terms.items()
            if c == 1 and len(m) == 1:
                return self.input_formats.get(self.A.by_id[m[0]].name)
        return None

    def fresh(self, name, nbits):
        return self.A.var(name)

    def fit(self, v, w, signed=False):
        if type(v) is int:
            return v & ((1 << w) - 1)
        return v

    def truth(self, v, what="a branch condition"):
        if type(v) is bool:
            return v
        if type(v) is int:
            return v != 0
        raise DataDependent(f"{what} depends on input data")

    def truth_or_none(self, v):
        try:
            return self.truth(v)
        except DataDependent:
            return None

    def ite(self, c, a, b, w):
        raise ModelUnsupported("a selection on a data-dependent predicate (real model)")

    def pnot(self, v):
        if type(v) is bool:
            return not v
        raise DataDependent("a predicate depends on input data")

    # -------------------------------------------------------------- conversions
    def real_of_bits(self, bits: int, fty: str):
        F = FORMATS[fty]
        bits &= (1 << F.width) - 1
        mag = bits & ((1 << (F.width - 1)) - 1)
        if mag == F.exp_mask:
            return R.NEG_INF if bits >> (F.width - 1) else R.POS_INF
        if mag > F.exp_mask:
            raise ModelUnsupported("a NaN constant (real model)")
        return R.const(Fraction(bits_to_float(fty, bits)))

    def as_real(self, v, fty):
        """A float operand as a real (Poly or infinity)."""
        if type(v) is int:
            return self.real_of_bits(v, fty)
        if isinstance(v, R.Poly) and self._input_int(v) is not None:  # an integer element's bits as a float
            return self.A.fn(f"asfloat.{fty}", self._term(v))
        if isinstance(v, (R.Poly, R.Inf)):
            return v
        if isinstance(v, Bits):
            # CUDA's expf builds 2**n from n = c - (MAGIC + 127), c = fma.rm(sat(..), 252, MAGIC + 1)
            # in [MAGIC, MAGIC + 2**8], by shifting c's bits left by 23 into the exponent field.
            if v.fam == "shl" and v.ty in ("b32", "u32", "s32") and len(v.args) == 2 and v.args[1] == 23 \
                    and isinstance(v.args[0], R.Poly) and self._magic_range(v.args[0]):
                return self.A.ex2(self.A.add(v.args[0], R.const(-(EXPF_MAGIC + 127))))
            return self.A.fn(f"asfloat.{fty}", self._term(v))
        if type(v) is bool:
            raise ModelUnsupported("a predicate used as a float")
        raise ModelUnsupported(f"cannot read {type(v).__name__} as a real")

    def _magic_range(self, p: R.Poly) -> bool:
        c = p.const()
        if not EXPF_MAGIC <= c <= EXPF_MAGIC + 1:
            return False
        for m, k in p.terms.items():
            if m == ():
                continue
            if len(m) != 1 or self.A.by_id[m[0]].kind != "sat" or not 0 < k < 256:
                return False
        return True

    def _term(self, v):
        if isinstance(v, (R.Poly,)):
            return v
        if type(v) is int:
            return R.const(v)
        if isinstance(v, R.Inf):
            return self.A.fn(repr(v))
        if isinstance(v, Bits):
            return self.A.fn(f"{v.fam}.{v.ty}.{'.'.join(v.mods)}", *(self._term(a) for a in v.args))
        raise ModelUnsupported(f"cannot use {type(v).__name__} in a term")

    def _bits_operand(self, v, w):
        """A real value used as an integer operand: a constant becomes its float bits."""
        if isinstance(v, R.Poly) and v.is_const():
            fty = {16: "f16", 32: "f32", 64: "f64"}.get(w)
            if fty is None:
                raise ModelUnsupported("a real constant used as an integer")
            return float_to_bits(fty, v.const())
        if isinstance(v, R.Inf):
            fty = {16: "f16", 32: "f32", 64: "f64"}[w]
            F = FORMATS[fty]
            return F.exp_mask | (F.sign_bit if v.sign < 0 else 0)
        return v

    # -------------------------------------------------------------- families
    def family(self, fam, ty, mods, args, widths):
        if all(is_concrete(a) for a in args):
            return concrete_eval(fam, ty, mods, args)
        dty, sty = (ty if isinstance(ty, tuple) else (ty, ty))
        if fam == "mov" and len(args) == 1:
            return args[0]
        if fam == "selp":
            c = args[2]
            if type(c) is bool:
                return args[0] if c else args[1]
            raise ModelUnsupported("selp on a data-dependent predicate (real model)")
        floaty = is_float(dty) or is_float(sty)
        if floaty and (dty in ("f16x2", "bf16x2") or sty in ("f16x2", "bf16x2")):
            raise ModelUnsupported(f"packed {dty} arithmetic (real model)")
        if not floaty or fam in ("and", "or", "xor", "not", "shl", "shr", "lop3", "prmt", "bfe", "bfi"):
            args = [self._bits_operand(a, w) if not is_concrete(a) else a for a, w in zip(args, widths)]
            if all(is_concrete(a) for a in args):
                return concrete_eval(fam, ty, mods, args)
            if fam in ("setp", "set", "slct"):
                raise DataDependent(f"{fam} on a bit-level function of input data")
            return Bits(fam, ty, mods, [a if not isinstance(a, R.Poly) else a for a in args])
        return self._float_family(fam, dty, sty, mods, args)

    def _float_family(self, fam, dty, sty, mods, args):
        A = self.A
        r = lambda v: self.as_real(v, sty)  # noqa: E731
        if fam in ("add", "sub"):
            a, b = r(args[0]), r(args[1])
            out = self._addsub(a, b, fam == "sub")
        elif fam == "mul":
            out = self._mul(r(args[0]), r(args[1]))
        elif fam in ("fma", "mad"):
            out = self._addsub(self._mul(r(args[0]), r(args[1])), r(args[2]), False)
        elif fam == "neg":
            a = r(args[0])
            out = R.Inf(-a.sign) if isinstance(a, R.Inf) else A.neg(a)
            out = R.POS_INF if (isinstance(out, R.Inf) and out.sign > 0) else (R.NEG_INF if isinstance(out, R.Inf) else out)
        elif fam == "abs":
            a = r(args[0])
            if isinstance(a, R.Inf):
                out = R.POS_INF
            elif a.is_const():
                out = R.const(abs(a.const()))
            else:
                out = A.fn("abs", a)
        elif fam in ("max", "min"):
            out = A.maxmin(fam, [r(args[0]), r(args[1])])
        elif fam == "div":
            out = self._mul(r(args[0]), self._inv(r(args[1])))
        elif fam == "rcp":
            out = self._inv(r(args[0]))
        elif fam == "ex2":
            a = r(args[0])
            if isinstance(a, R.Inf):
                out = R.ZERO if a.sign < 0 else R.POS_INF
            else:
                out = A.ex2(a)
        elif fam == "lg2":
            a = r(args[0])
            if isinstance(a, R.Inf):
                if a.sign < 0:
                    raise ModelUnsupported("lg2 of -inf (real model)")
                out = R.POS_INF
            else:
                out = A.lg2(a)
        elif fam in ("sqrt", "rsqrt", "sin", "cos", "tanh"):
            a = r(args[0])
            if isinstance(a, R.Inf):
                raise ModelUnsupported(f"{fam} of an infinity (real model)")
            if fam == "rsqrt":  # rsqrt(a) = inv(sqrt(a)): the atom 1/sqrt(a) and torch's rsqrt also give
                out = self._inv(A.fn("sqrt", a))
            else:
                out = A.fn(fam, a)
        elif fam == "cvt":
            return self._cvt(dty, sty, mods, args[0])
        elif fam == "setp":
            t = self._compare(mods, r(args[0]), r(args[1]))
            if len(args) > 2:
                c = args[2]
                if type(c) is not bool:
                    raise DataDependent("setp combined with a data-dependent predicate")
                if "and" in mods:
                    return (t and c, (not t) and c)
                if "or" in mods:
                    return (t or c, (not t) or c)
                if "xor" in mods:
                    return (t != c, (not t) != c)
            return (t, not t)
        elif fam == "testp":
            a = r(args[0])
            op = next(m for m in ("finite", "infinite", "number", "notanumber", "normal", "subnormal") if m in mods)
            if op in ("number",):
                return True
            if op == "notanumber":
                return False
            if isinstance(a, R.Inf):
                return op == "infinite"
            if op == "finite":
                return True
            if op == "infinite":
                return False
            raise DataDependent(f"testp.{op} on input data")
        else:
            raise ModelUnsupported(f"{fam}.{dty} on input data (real model)")
        if "sat" in mods:
            out = A.sat(out)
        return out

    def _inv(self, a):
        if isinstance(a, R.Inf):
            return R.ZERO
        return self.A.inv(a)

    def _mul(self, a, b):
        if isinstance(a, R.Inf) or isinstance(b, R.Inf):
            inf, other = (a, b) if isinstance(a, R.Inf) else (b, a)
            if isinstance(other, R.Inf):
                return R.POS_INF if inf.sign * other.sign > 0 else R.NEG_INF
            if other.is_const() and other.const() != 0:
                return R.POS_INF if inf.sign * (1 if other.const() > 0 else -1) > 0 else R.NEG_INF
            raise ModelUnsupported("an infinity times a data-dependent value (real model)")
        return self.A.mul(a, b)

    def _addsub(self, a, b, sub):
        if isinstance(b, R.Inf) and sub:
            b = R.NEG_INF if b.sign > 0 else R.POS_INF
        elif isinstance(b, R.Poly) and sub:
            b = self.A.neg(b)
        if isinstance(a, R.Inf) and isinstance(b, R.Inf):
            if a.sign != b.sign:
                raise ModelUnsupported("inf - inf (real model)")
            return a
        if isinstance(a, R.Inf):
            return a
        if isinstance(b, R.Inf):
            return b
        return self.A.add(a, b)

    def _compare(self, mods, a, b) -> bool:
        op = next(m for m in ("equ", "neu", "ltu", "leu", "gtu", "geu", "eq", "ne", "lt", "le", "gt", "ge",
                              "num", "nan") if m in mods)
        if op == "num":
            return True
        if op == "nan":
            return False
        base = op[:-1] if op.endswith("u") and op not in ("equ",) or op == "equ" else op
        base = {"equ": "eq", "neu": "ne", "ltu": "lt", "leu": "le", "gtu": "gt", "geu": "ge"}.get(op, op)

        def key(x):
            if isinstance(x, R.Inf):
                return (x.sign, 0)
            if x.is_const():
                return (0, x.const())
            return None

        ka, kb = key(a), key(b)
        if ka is None or kb is None:
            # a finite data value against an infinity is decided; anything else is not
            if ka is not None and ka[0] != 0:
                ka, kb = ka, (0, 0)
            elif kb is not None and kb[0] != 0:
                ka = (0, 0)
            else:
                raise DataDependent("a floating-point comparison depends on input data")
        return {"eq": ka == kb, "ne": ka != kb, "lt": ka < kb, "le": ka <= kb, "gt": ka > kb,
                "ge": ka >= kb}[base]

    def _cvt(self, dty, sty, mods, a):
        A = self.A
        if dty == "tf32" and is_float(sty):  # cvt.rna.tf32.f32: a narrowing, kept visible
            x = self.as_real(a, sty)
            return x if isinstance(x, R.Inf) else A.round_to("tf32", x)
        if is_float(dty) and is_float(sty):
            x = self.as_real(a, sty)
            irnd = next((m for m in ("rni", "rzi", "rmi", "rpi") if m in mods), None)
            if irnd:
                out = x if isinstance(x, R.Inf) else A.fn(f"rint.{irnd}", x)
            elif FORMATS[dty].p < FORMATS[sty].p and not isinstance(x, R.Inf):
                out = A.round_to(dty, x)
            else:
                out = x
            if "sat" in mods:
                out = A.sat(out)
            return out
        if is_float(dty):  # int -> float: the integer's value, as an atom of what was converted
            if isinstance(a, R.Poly):  # an input element (its integer value, or a float's bits): the
                # conversion of that value read as signed or unsigned, never the element itself
                return A.fn(f"i2f.{sty[0] if sty[0] in 'su' else sty}", self._term(a))
            return A.fn(f"i2f.{sty}", self._term(a))
        # float -> int
        x = self.as_real(a, sty)
        return Bits("cvt", (dty, sty), mods, [x])

    def truth_of(self, v):
        return self.truth(v)

    # -------------------------------------------------------------- bytes
    def extract_bytes(self, v, lo, n, total):
        if type(v) is int:
            return (v >> (8 * lo)) & ((1 << (8 * n)) - 1)
        if lo == 0 and n == total:
            return v
        if isinstance(v, Packed):
            out, at = [], 0
            for p, k in v.pieces:
                if at + k > lo and at < lo + n:
                    if at >= lo and at + k <= lo + n:
                        out.append((p, k))
                    elif type(p) is int:
                        a, b = max(at, lo), min(at + k, lo + n)
                        out.append(((p >> (8 * (a - at))) & ((1 << (8 * (b - a))) - 1), b - a))
                    else:
                        raise ModelUnsupported("a partial access to a real value (real model)")
                at += k
            return self.concat_bytes(out)
        raise ModelUnsupported("a partial access to a real value (real model)")

    def concat_bytes(self, pieces):
        if all(type(p) is int for p, _ in pieces):
            out, sh = 0, 0
            for p, n in pieces:
                out |= p << sh
                sh += 8 * n
            return out
        if len(pieces) == 1:
            return pieces[0][0]
        flat = []
        for p, n in pieces:
            flat.extend(p.pieces if isinstance(p, Packed) else ((p, n),))
        return Packed(flat)

    def as_output(self, v, dtype):
        r = dtypes.lookup(dtype)
        if r is None or not r.is_float or r.ptx not in FORMATS:
            return v
        return self.as_real(v, r.ptx)


def make_algebra(model: str):
    if model == "real":
        return RealAlgebra()
    if model in ("bitexact", "int"):
        return BVAlgebra(model)
    raise ValueError(f"unknown model {model!r} (real, bitexact, int)")
