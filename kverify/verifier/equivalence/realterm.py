"""Normal forms of the ``real`` floating-point model.

Owns: terms over the reals that are equal exactly when their normal forms are equal
structurally (for the identities listed here), so that two kernels computing the same
function modulo rounding, reassociation and commutation produce the same term. Every
rewrite below is an identity of real arithmetic (where both sides are defined); the few
that need a side condition record it (:attr:`Atoms.nonzero`, :attr:`Atoms.log2e_read`) so
that the report can list it among its assumptions.

A value is a :class:`Poly`: a sum of monomials with exact rational coefficients, each
monomial a sorted multiset of *atoms*. Sums and products are flattened and sorted, so
``(a+b)+c == a+(b+c) == c+(a+b)`` and a tree reduction equals a sequential one; products
distribute over sums, so a tiled dot product equals the naive one. Atoms and the
polynomials inside them are hash-consed in one :class:`Atoms` table shared by the two
kernels of a comparison (equal subterms are one object; ``ex2``/``inv``/``max``/``lg2`` of
an argument are computed once):

  ``var``    an input element (``A[3]``) or the initial content of an output element
  ``log2e``  the constant log2(e). Inside an exponent, a coefficient that is a simple
             rational multiple of a float rounding of log2(e) (f32 ``0x3FB8AA3B``, the
             f64 rounding, CUDA ``expf``'s hi+lo pair) is read as that multiple of log2(e),
             so ``ex2(x*1.4426950f)`` (``tl.exp2``, ``exp2f``, ``__expf``) and ``expf(x)``
             meet (recorded in :attr:`Atoms.log2e_read`)
  ``max``    over a set of polynomials, in a normal form that makes it a lattice operation
             with translation and positive scaling: ``max(S) = p0 + c*max(R)`` where ``p0``
             is the least element of ``S`` in a translation-invariant total order on
             polynomials, ``R = {(p - p0)/c}`` and ``c > 0`` makes the greatest element of
             ``R`` have leading coefficient 1. So ``max`` is associative, commutative and
             idempotent, ``max(a,b) - c == max(a-c, b-c)`` and ``max(2a, 2b) == 2*max(a,b)``.
             ``min(S) = -max(-S)``; ``-inf`` / ``+inf`` are the identities
  ``ex2``    ``2**p``; ``ex2(p)*ex2(q) = ex2(p+q)`` and ``ex2(0) = 1``; ``ex2`` of an integer
             constant is folded
  ``inv``    ``1/p`` (``div`` is multiplication by ``inv``); constants are folded,
             ``inv(a*b) = inv(a)*inv(b)``, ``inv(ex2(p)) = ex2(-p)``, ``inv(inv(p)) = p``, and
             ``inv(a)*a = 1`` (recorded: ``a`` is assumed nonzero). A sum is factored as
             ``k * ex2(e0) * q`` with ``e0`` the least exponent of its monomials (in the
             order above) and ``q``'s leading coefficient 1, so ``1/sum_i exp(x_i - m)``
             becomes ``exp(m - x0) / sum_i exp(x_i - x0)`` for *any* ``m``: the online-softmax
             rescaling identity ``sum exp(x_i - m) = exp(m' - m) * sum exp(x_i - m')``, and a
             softmax ratio whose max-dependence cancels
  ``lg2``    ``log2 p`` with ``lg2(ex2(p)) = p``, ``lg2(k*ex2(e)*q) = lg2(k) + e + lg2(q)``
             (``k > 0``; both sides are undefined where ``q <= 0``)
  ``sat``    clamp to [0, 1] (``cvt.sat``, ``.sat``)
  ``round``  rounding to a narrower format (``cvt.rn.f16.f32``): a precision downgrade is
             kept visible, not abstracted away
  ``fn``     any other function (approximate ``sin``/``rsqrt``..., bit-level
             operations on real values): uninterpreted, equal only on equal arguments

Infinities are the sentinels :data:`POS_INF` / :data:`NEG_INF` with the few rules real
kernels need (``max(-inf, x) = x``, ``-inf - x = -inf``, ``ex2(-inf) = 0``,
``sat(-inf) = 0``); anything else on them is unsupported. Inputs are finite reals.
"""
from __future__ import annotations

import struct
from fractions import Fraction


class RealUnsupported(Exception):
    """An operation the real model cannot express (the caller reports ``unknown``)."""


class Inf:
    __slots__ = ("sign",)

    def __init__(self, sign):
        self.sign = sign

    def __repr__(self):
        return "+inf" if self.sign > 0 else "-inf"


POS_INF = Inf(1)
NEG_INF = Inf(-1)


class Atom:
    __slots__ = ("id", "kind", "args", "name")

    def __init__(self, id_, kind, args, name=None):
        self.id, self.kind, self.args, self.name = id_, kind, args, name

    def __repr__(self):
        if self.kind == "var":
            return self.name
        if self.kind in ("max", "min"):
            return f"{self.kind}({', '.join(sorted(map(str, self.args)))})"
        if self.kind == "fn":
            return f"{self.name}({', '.join(map(str, self.args))})"
        if self.kind == "log2e":
            return "log2e"
        if self.kind == "round":
            return f"round_{self.name}({self.args[0]})"
        return f"{self.kind}({self.args[0]})"


class Poly:
    """Immutable sum of monomials: ``terms`` maps a sorted tuple of atom ids to a
    nonzero Fraction."""

    __slots__ = ("terms", "_h")

    def __init__(self, terms: dict):
        self.terms = terms
        self._h = None

    def __hash__(self):
        if self._h is None:
            # numerator/denominator pairs: Fraction.__hash__ computes a modular inverse
            self._h = hash(frozenset((m, c.numerator, c.denominator) for m, c in self.terms.items()))
        return self._h

    def __eq__(self, other):
        return isinstance(other, Poly) and (self is other or (hash(self) == hash(other) and self.terms == other.terms))

    def is_const(self):
        return not self.terms or (len(self.terms) == 1 and () in self.terms)

    def const(self) -> Fraction:
        return self.terms.get((), Fraction(0))

    def __repr__(self):
        return show(self, None)


ZERO = Poly({})


def const(c) -> Poly:
    c = Fraction(c)
    return Poly({(): c}) if c else ZERO


def _f32(bits: int) -> Fraction:
    return Fraction(struct.unpack("<f", struct.pack("<I", bits))[0])


#: float roundings of log2(e) that kernels multiply by before ``ex2``: f32 (``__expf``,
#: ``exp2f(x * M_LOG2E_F)``, Triton's ``tl.exp``/``tl.exp2(x * 1.4426950408889634)``), f64, and
#: the hi+lo pair of CUDA's ``expf`` sequence (``0x3FB8AA3B + 0x32A57060``)
LOG2E_ROUNDINGS = {
    "f32 0x3FB8AA3B": _f32(0x3FB8AA3B),
    "f64 0x3FF71547652B82FE": Fraction(struct.unpack("<d", struct.pack("<Q", 0x3FF71547652B82FE))[0]),
    "expf hi+lo 0x3FB8AA3B+0x32A57060": _f32(0x3FB8AA3B) + _f32(0x32A57060),
}
_SIMPLE_DEN = 1 << 16
_SIMPLE_NUM = 1 << 24
_DYADIC_NUM = 1 << 64


def _simple(r: Fraction) -> bool:
    """``r`` is a multiplier a kernel writes next to log2(e): a dyadic rational (a float, e.g.
    a softmax scale 1/sqrt(d) rounded to f32) or a small fraction. A float constant ``k`` other
    than ``log2(e)*2**j`` never has a dyadic ratio to a rounding of log2(e): the odd part of
    the rounding's numerator would have to divide ``k``'s."""
    d = r.denominator
    if d & (d - 1) == 0:
        return abs(r.numerator) < _DYADIC_NUM
    return d <= _SIMPLE_DEN and abs(r.numerator) <= _SIMPLE_NUM


class Atoms:
    """The hash-consing table: one per comparison, shared by both kernels."""

    def __init__(self):
        self.by_key: dict = {}
        self.by_id: list = []
        self.polys: dict = {}  # interned polynomials (atom arguments)
        self._memo: dict = {}  # (operation, argument) -> result
        #: polynomials assumed nonzero because ``inv(a) * a`` was simplified to 1
        self.nonzero: dict = {}
        #: the roundings of log2(e) read as log2(e) (keys of LOG2E_ROUNDINGS)
        self.log2e_read: set = set()
        self._log2e = None
        self._mul_memo: dict = {}
        self._max_info: dict = {}  # max atom id -> (its greatest residual, residuals of constant elements)
        self._special: set = set()  # ids of ex2 and inv atoms (the factors _mono_mul combines)

    def intern(self, p: Poly) -> Poly:
        q = self.polys.get(p)
        if q is None:
            self.polys[p] = p
            return p
        return q

    def atom(self, kind, args, name=None) -> Atom:
        key = (kind, args, name)
        a = self.by_key.get(key)
        if a is None:
            if kind != "max":
                args = tuple(self.intern(x) if isinstance(x, Poly) else x for x in args)
                key = (kind, args, name)
            a = Atom(len(self.by_id), kind, args, name)
            self.by_key[key] = a
            self.by_id.append(a)
            if kind in ("ex2", "inv"):
                self._special.add(a.id)
        return a

    def mono(self, a: Atom) -> Poly:
        return Poly({(a.id,): Fraction(1)})

    def var(self, name) -> Poly:
        return self.mono(self.atom("var", (), name))

    def log2e_id(self) -> int:
        if self._log2e is None:
            self._log2e = self.atom("log2e", ()).id
        return self._log2e

    # ------------------------------------------------------------------ order
    def compare(self, p: Poly, q: Poly) -> int:
        """A total order on polynomials invariant under translation and positive scaling:
        the sign of the coefficient of ``p - q`` at its least monomial (atom ids sorted)."""
        if p is q:
            return 0
        pt, qt = p.terms, q.terms
        for k in sorted(pt.keys() | qt.keys()):
            a, b = pt.get(k, 0), qt.get(k, 0)
            if a != b:
                return 1 if a > b else -1
        return 0

    def least(self, ps):
        best = None
        for p in ps:
            if best is None or self.compare(p, best) < 0:
                best = p
        return best

    def greatest(self, ps):
        best = None
        for p in ps:
            if best is None or self.compare(p, best) > 0:
                best = p
        return best

    # ------------------------------------------------------------------ arithmetic
    def add(self, p: Poly, q: Poly) -> Poly:
        if not q.terms:
            return p
        if not p.terms:
            return q
        if len(q.terms) > len(p.terms):
            p, q = q, p
        t = dict(p.terms)
        for m, c in q.terms.items():
            v = t.get(m)
            if v is None:
                t[m] = c
            else:
                v = v + c
                if v:
                    t[m] = v
                else:
                    del t[m]
        return Poly(t)

    def scale(self, p: Poly, c: Fraction) -> Poly:
        if not c:
            return ZERO
        if c == 1:
            return p
        return Poly({m: v * c for m, v in p.terms.items()})

    def neg(self, p):
        return self.scale(p, Fraction(-1))

    def sub(self, p, q):
        return self.add(p, self.neg(q))

    def _mono_mul(self, m1: tuple, m2: tuple):
        """Product of two monomials: merged sorted ids, ex2 factors combined, ``inv(a)*a``
        cancelled. Returns (monomial, coefficient factor)."""
        if not m1:
            return m2, 1
        if not m2:
            return m1, 1
        ids = m1 + m2
        if self._special.isdisjoint(ids):  # no ex2 or inv factor: the common case
            return tuple(sorted(ids)), 1
        byid = self.by_id
        coef = Fraction(1)
        ex = [i for i in ids if byid[i].kind == "ex2"]
        if len(ex) >= 2:
            e = ZERO
            for i in ex:
                e = self.add(e, byid[i].args[0])
            ids = [i for i in ids if byid[i].kind != "ex2"]
            f = self.ex2(e)
            for mm, c in f.terms.items():  # ex2 of a constant folds to a constant
                ids.extend(mm)
                coef = c
        invs = [i for i in ids if byid[i].kind == "inv"]
        if invs:
            ids = list(ids)
            for i in invs:
                arg = byid[i].args[0]
                if len(arg.terms) == 1:
                    (am, ac), = arg.terms.items()
                    if ac == 1 and len(am) == 1 and am[0] in ids and i in ids:
                        ids.remove(am[0])
                        ids.remove(i)
                        self.nonzero.setdefault(arg, None)
        return tuple(sorted(ids)), coef

    def mul(self, p: Poly, q: Poly) -> Poly:
        if not p.terms or not q.terms:
            return ZERO
        if p.is_const():
            return self.scale(q, p.const())
        if q.is_const():
            return self.scale(p, q.const())
        big = len(p.terms) + len(q.terms) > 8
        if big:  # the same product recurs across lanes (a shfl passes the same object): keyed by identity
            key = (id(p), id(q)) if id(p) <= id(q) else (id(q), id(p))
            hit = self._mul_memo.get(key)
            if hit is not None:
                return hit[2]
        if len(q.terms) > 1 or len(p.terms) > 1:
            r = self._cancel_inverse(p, q)
            if r is not None:
                if big:
                    self._mul_memo[key] = (p, q, r)
                return r
        t: dict = {}
        for m1, c1 in p.terms.items():
            for m2, c2 in q.terms.items():
                m, f = self._mono_mul(m1, m2)
                v = t.get(m, 0) + c1 * c2 * f
                if v:
                    t[m] = v
                else:
                    t.pop(m, None)
        r = Poly(t)
        if big:
            self._mul_memo[key] = (p, q, r)  # holds p and q: their ids stay unique
        return r

    def _cancel_inverse(self, p, q):
        """``(r * inv(s)) * s' = r * k * ex2(e)`` where ``s' = k * ex2(e) * s`` (the factored
        form of a sum, see :meth:`factor`); None when neither side divides the other."""
        byid = self.by_id
        for a, b in ((p, q), (q, p)):
            if len(b.terms) < 2:
                continue
            common = None
            for m in a.terms:
                ids = {i for i in m if byid[i].kind == "inv"}
                common = ids if common is None else common & ids
                if not common:
                    break
            if not common:
                continue
            k, e, s = self.factor(b)
            at = self.by_key.get(("inv", (s,), None))
            if at is None or at.id not in common:
                continue
            self.nonzero.setdefault(s, None)
            out = ZERO
            for m, c in a.terms.items():
                rest = list(m)
                rest.remove(at.id)
                out = self.add(out, Poly({tuple(rest): c}))
            return self.mul(self.scale(out, k), self.ex2(e))
        return None

    # ------------------------------------------------------------------ functions
    def _log2e_form(self, p: Poly) -> Poly:
        """Coefficients that are simple multiples of a rounding of log2(e) become multiples
        of the ``log2e`` atom (inside an exponent only)."""
        lid = None
        out = None
        for m, k in p.terms.items():
            if k.denominator == 1 or (lid is not None and lid in m):
                continue
            for label, L in LOG2E_ROUNDINGS.items():
                r = k / L
                if _simple(r):
                    if lid is None:
                        lid = self.log2e_id()
                        if lid in m:
                            break
                    if out is None:
                        out = dict(p.terms)
                    del out[m]
                    nm = tuple(sorted(m + (lid,)))
                    v = out.get(nm, 0) + r
                    if v:
                        out[nm] = v
                    else:
                        out.pop(nm, None)
                    self.log2e_read.add(label)
                    break
        return p if out is None else Poly(out)

    def ex2(self, p: Poly) -> Poly:
        key = ("ex2", p)
        r = self._memo.get(key)
        if r is not None:
            return r
        q = self._log2e_form(p)
        if q.is_const() and q.const().denominator == 1:
            r = const(Fraction(2) ** int(q.const()))
        else:
            r = self.mono(self.atom("ex2", (q,)))
        self._memo[key] = r
        return r

    def factor(self, p: Poly):
        """``p = k * ex2(e) * q``: ``e`` the least exponent among ``p``'s monomials (0 for a
        monomial without ``ex2``), ``k`` the coefficient of ``q``'s least monomial, which is
        1. Invariant: ``ex2(s) * p`` factors with the same ``q`` for every ``s``."""
        key = ("factor", p)
        r = self._memo.get(key)
        if r is not None:
            return r
        byid = self.by_id
        parts = []
        for m, c in p.terms.items():
            ex = [i for i in m if byid[i].kind == "ex2"]
            if ex:
                rest = list(m)
                rest.remove(ex[0])
                parts.append((tuple(rest), c, byid[ex[0]].args[0]))
            else:
                parts.append((m, c, ZERO))
        e = self.least({x[2] for x in parts})
        if e.terms:
            q = ZERO
            for rest, c, ex in parts:
                f = self.ex2(self.sub(ex, e))
                q = self.add(q, self.scale(self.mul(Poly({rest: Fraction(1)}), f), c))
        else:
            q = p
        k = q.terms[min(q.terms)] if q.terms else Fraction(1)
        if k != 1:
            q = self.scale(q, 1 / k)
        r = (k, e, self.intern(q))
        self._memo[key] = r
        return r

    def inv(self, p: Poly) -> Poly:
        if p.is_const():
            c = p.const()
            if not c:
                raise RealUnsupported("division by zero")
            return const(1 / c)
        key = ("inv", p)
        r = self._memo.get(key)
        if r is not None:
            return r
        byid = self.by_id
        if len(p.terms) == 1:
            (m, c), = p.terms.items()
            r = const(1 / c)
            for i in m:  # inv(a*b) = inv(a)*inv(b)
                a = byid[i]
                if a.kind == "inv":
                    f = a.args[0]
                elif a.kind == "ex2":
                    f = self.ex2(self.neg(a.args[0]))
                else:
                    f = self.mono(self.atom("inv", (self.mono(a),)))
                r = self.mul(r, f)
        else:
            k, e, q = self.factor(p)
            r = self.scale(self.mono(self.atom("inv", (q,))), 1 / k)
            if e.terms:
                r = self.mul(r, self.ex2(self.neg(e)))
        self._memo[key] = r
        return r

    def lg2(self, p: Poly) -> Poly:
        if p.is_const():
            c = p.const()
            if c <= 0:
                raise RealUnsupported("lg2 of a constant <= 0")
            if c.numerator == 1 and c.denominator & (c.denominator - 1) == 0:
                return const(-(c.denominator.bit_length() - 1))
            if c.denominator == 1 and c.numerator & (c.numerator - 1) == 0:
                return const(c.numerator.bit_length() - 1)
            return self.mono(self.atom("lg2", (p,)))
        key = ("lg2", p)
        r = self._memo.get(key)
        if r is not None:
            return r
        k, e, q = self.factor(p)
        if k < 0:
            r = self.mono(self.atom("lg2", (p,)))
            self._memo[key] = r
            return r
        # lg2(k * ex2(e) * q) = lg2(k) + e + lg2(q): k > 0 and ex2 > 0, so q has the sign of p
        # (both sides are undefined where p <= 0). Only positive factors are split off.
        byid = self.by_id
        r = self.add(self.lg2(const(k)), e)
        if len(q.terms) == 1:
            (m, _c), = q.terms.items()  # _c == 1
            rest = []
            for i in m:
                if byid[i].kind == "ex2":
                    r = self.add(r, byid[i].args[0])
                else:
                    rest.append(i)
            if rest:
                r = self.add(r, self.mono(self.atom("lg2", (Poly({tuple(rest): Fraction(1)}),))))
        else:
            r = self.add(r, self.mono(self.atom("lg2", (q,))))
        self._memo[key] = r
        return r

    def maxmin(self, kind, xs) -> object:
        """max/min over polynomials and infinities (flattened, deduplicated, normalized:
        see the module docstring; ``min(S) = -max(-S)``)."""
        if kind == "min":
            neg = []
            for x in xs:
                neg.append(NEG_INF if x is POS_INF else POS_INF if x is NEG_INF else self.neg(x))
            r = self.maxmin("max", neg)
            return NEG_INF if r is POS_INF else POS_INF if r is NEG_INF else self.neg(r)
        byid = self.by_id
        groups, singles = [], set()
        for x in xs:
            if x is NEG_INF:
                continue
            if x is POS_INF:
                return POS_INF
            # a + c*max(R) with c > 0 is max({a + c*r})
            hits = [(m, c) for m, c in x.terms.items() if len(m) == 1 and byid[m[0]].kind == "max" and c > 0]
            if len(hits) == 1:
                (m, c), = hits
                a = Poly({mm: cc for mm, cc in x.terms.items() if mm != m})
                groups.append((a, c, byid[m[0]]))
                continue
            singles.add(x)
        if not groups and not singles:
            return NEG_INF
        if any(x.is_const() for x in singles) or any(self.add(a, self.scale(x, c)).is_const()
                                                      for a, c, g in groups for x in self._max_info[g.id][1]):
            return self._max_items(singles, groups)
        key = ("max", frozenset(singles), frozenset((a, c, g.id) for a, c, g in groups))
        r = self._memo.get(key)
        if r is not None:
            return r
        # each group's least element is its a (0 is in R, every r >= 0), its greatest a + c*top(R)
        p0 = self.least(list(singles) + [a for a, _, _ in groups])
        g = self.greatest(list(singles) + [self.add(a, self.scale(self._max_info[at.id][0], c)) for a, c, at in groups])
        if self.compare(g, p0) == 0:
            r = p0  # one distinct element
        else:
            d = self.sub(g, p0)
            c = d.terms[min(d.terms)]
            negp0, inv_c = self.neg(p0), 1 / c
            args = set()
            for a, cg, at in groups:
                if cg == c and a == p0:  # the residuals are unchanged
                    args.update(at.args)
                    continue
                for x in at.args:
                    args.add(self.intern(self.scale(self.add(self.add(a, self.scale(x, cg)), negp0), inv_c)))
            for x in singles:
                args.add(self.intern(self.scale(self.add(x, negp0), inv_c)))
            r = self._max_atom(p0, c, args, self.scale(d, inv_c), ())
        self._memo[key] = r
        return r

    def _max_atom(self, p0, c, args, top, const_residuals):
        """``p0 + c*max(args)``; remembers the greatest residual and the residuals of constant
        elements (a group holding a constant goes through :meth:`_max_items`)."""
        at = self.atom("max", frozenset(args))
        if at.id not in self._max_info:
            self._max_info[at.id] = (top, const_residuals)
        return self.add(p0, self.scale(self.mono(at), c))

    def _max_items(self, singles, groups):
        """max over the explicit set of elements (used when constants are among them: of
        several constants only the greatest is kept)."""
        items = set(singles)
        for a, c, at in groups:
            for x in at.args:
                items.add(self.add(a, self.scale(x, c)))
        consts = [x for x in items if x.is_const()]
        if len(consts) > 1:
            pick = max(consts, key=Poly.const)
            items = {x for x in items if not x.is_const()} | {pick}
        if len(items) == 1:
            return next(iter(items))
        key = ("max", frozenset(items))
        r = self._memo.get(key)
        if r is not None:
            return r
        p0 = self.least(items)
        top = self.sub(self.greatest(items), p0)
        c = top.terms[min(top.terms)]
        negp0 = self.neg(p0)
        res = {x: self.intern(self.scale(self.add(x, negp0), 1 / c)) for x in items}
        r = self._max_atom(p0, c, set(res.values()), self.scale(top, 1 / c),
                           tuple(v for x, v in res.items() if x.is_const()))
        self._memo[key] = r
        return r

    def sat(self, p):
        if p is NEG_INF:
            return ZERO
        if p is POS_INF:
            return const(1)
        if p.is_const():
            return const(min(max(p.const(), Fraction(0)), Fraction(1)))
        return self.mono(self.atom("sat", (p,)))

    def round_to(self, fmt, p):
        if p.is_const():
            return p
        return self.mono(self.atom("round", (p,), fmt))

    def fn(self, name, *args):
        return self.mono(self.atom("fn", tuple(args), name))


#: log2(e) as the double nearest to it: the canonical coefficient of ``exp`` in an ``ex2`` argument
LOG2E = Fraction(1.4426950408889634)


def is_finite_poly(x) -> bool:
    return isinstance(x, Poly)


def show(p, atoms: Atoms | None, limit: int = 6) -> str:
    """A short human-readable rendering (for messages)."""
    if isinstance(p, Inf):
        return repr(p)
    if not isinstance(p, Poly):  # an integer value of the real model (Bits) or a constant
        return str(p)[:80]
    if not p.terms:
        return "0"
    parts = []
    for i, (m, c) in enumerate(sorted(p.terms.items(), key=lambda kv: kv[0])):
        if i >= limit:
            parts.append(f"... ({len(p.terms) - limit} more terms)")
            break
        names = [repr(atoms.by_id[a]) if atoms else f"#{a}" for a in m]
        cs = str(c)
        if not names:
            parts.append(cs)
        elif c == 1:
            parts.append("*".join(names))
        else:
            parts.append(f"{cs}*" + "*".join(names))
    return " + ".join(parts)
