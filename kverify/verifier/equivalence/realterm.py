"""Normal forms of the ``real`` floating-point model.

Owns: terms over the reals that are equal exactly when their normal forms are equal
structurally (for the identities listed here), so that two kernels computing the same
function modulo rounding, reassociation and commutation produce the same term.

A value is a :class:`Poly`: a sum of monomials with exact rational coefficients, each
monomial a sorted multiset of *atoms*. Sums and products are flattened and sorted, so
``(a+b)+c == a+(b+c) == c+(a+b)`` and a tree reduction equals a sequential one; products
distribute over sums, so a tiled dot product equals the naive one. Atoms are hash-consed
in one :class:`Atoms` table shared by the two kernels of a comparison:

  ``var``    an input element (``A[3]``) or the initial content of an output element
  ``max`` / ``min``   over a set of polynomials (associative, commutative, idempotent;
             ``-inf`` / ``+inf`` are their identities)
  ``ex2``    ``2**p``; ``ex2(p)*ex2(q) = ex2(p+q)`` and ``ex2(0) = 1`` (the exponent law
             the online softmax needs); ``ex2`` of an integer constant is folded; a
             coefficient of ``p`` within two f32 ulps of ``k*log2(e)`` is snapped to it
             (:func:`snap_log2e`: ``exp`` spelled with different roundings of log2(e))
  ``inv``    ``1/p`` (``div`` is multiplication by ``inv``); constants are folded
  ``sat``    clamp to [0, 1] (``cvt.sat``, ``.sat``)
  ``round``  rounding to a narrower format (``cvt.rn.f16.f32``): a precision downgrade is
             kept visible, not abstracted away
  ``fn``     any other function (approximate ``lg2``/``sin``/``rsqrt``..., bit-level
             operations on real values): uninterpreted, equal only on equal arguments

Infinities are the sentinels :data:`POS_INF` / :data:`NEG_INF` with the few rules real
kernels need (``max(-inf, x) = x``, ``-inf - x = -inf``, ``ex2(-inf) = 0``,
``sat(-inf) = 0``); anything else on them is unsupported. Inputs are finite reals.
"""
from __future__ import annotations

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
            self._h = hash(frozenset(self.terms.items()))
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


class Atoms:
    """The hash-consing table: one per comparison, shared by both kernels."""

    def __init__(self):
        self.by_key: dict = {}
        self.by_id: list = []

    def atom(self, kind, args, name=None) -> Atom:
        key = (kind, args, name)
        a = self.by_key.get(key)
        if a is None:
            a = Atom(len(self.by_id), kind, args, name)
            self.by_key[key] = a
            self.by_id.append(a)
        return a

    def mono(self, a: Atom) -> Poly:
        return Poly({(a.id,): Fraction(1)})

    def var(self, name) -> Poly:
        return self.mono(self.atom("var", (), name))

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
        """Product of two monomials: merged sorted ids, ex2 factors combined. Returns
        (monomial, coefficient factor)."""
        if not m1:
            return m2, 1
        if not m2:
            return m1, 1
        ids = m1 + m2
        byid = self.by_id
        ex = [i for i in ids if byid[i].kind == "ex2"]
        if len(ex) >= 2:
            e = ZERO
            for i in ex:
                e = self.add(e, byid[i].args[0])
            rest = [i for i in ids if byid[i].kind != "ex2"]
            f = self.ex2(e)
            coef = Fraction(1)
            for mm, c in f.terms.items():  # ex2 of a constant folds to a constant
                rest.extend(mm)
                coef = c
            return tuple(sorted(rest)), coef
        return tuple(sorted(ids)), 1

    def mul(self, p: Poly, q: Poly) -> Poly:
        if not p.terms or not q.terms:
            return ZERO
        if p.is_const():
            return self.scale(q, p.const())
        if q.is_const():
            return self.scale(p, q.const())
        t: dict = {}
        for m1, c1 in p.terms.items():
            for m2, c2 in q.terms.items():
                m, f = self._mono_mul(m1, m2)
                v = t.get(m, 0) + c1 * c2 * f
                if v:
                    t[m] = v
                else:
                    t.pop(m, None)
        return Poly(t)

    # ------------------------------------------------------------------ functions
    def ex2(self, p: Poly) -> Poly:
        if p.is_const():
            c = p.const()
            if c.denominator == 1:
                return const(Fraction(2) ** int(c))
        return self.mono(self.atom("ex2", (snap_log2e(p),)))

    def inv(self, p: Poly) -> Poly:
        if p.is_const():
            c = p.const()
            if not c:
                raise RealUnsupported("division by zero")
            return const(1 / c)
        if len(p.terms) == 1:
            (m, c), = p.terms.items()
            if len(m) == 1 and self.by_id[m[0]].kind == "inv":
                return self.scale(self.by_id[m[0]].args[0], 1 / c)
            if len(m) == 1 and self.by_id[m[0]].kind == "ex2":
                return self.scale(self.ex2(self.neg(self.by_id[m[0]].args[0])), 1 / c)
            if c != 1:
                return self.scale(self.inv(Poly({m: Fraction(1)})), 1 / c)
        return self.mono(self.atom("inv", (p,)))

    def maxmin(self, kind, xs) -> object:
        """max/min over polynomials and infinities (flattened, deduplicated)."""
        ident = NEG_INF if kind == "max" else POS_INF
        absorb = POS_INF if kind == "max" else NEG_INF
        items = set()
        for x in xs:
            if x is ident:
                continue
            if x is absorb:
                return absorb
            if len(x.terms) == 1:
                (m, c), = x.terms.items()
                if c == 1 and len(m) == 1 and self.by_id[m[0]].kind == kind:
                    items.update(self.by_id[m[0]].args)
                    continue
            items.add(x)
        if not items:
            return ident
        consts = [x for x in items if x.is_const()]
        if len(consts) > 1:
            pick = max(consts, key=Poly.const) if kind == "max" else min(consts, key=Poly.const)
            items = {x for x in items if not x.is_const()} | {pick}
        if len(items) == 1:
            return next(iter(items))
        return self.mono(self.atom(kind, frozenset(items)))

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
_SNAP_TOL = Fraction(1, 1 << 22)  # about two f32 ulps, relative


def snap_log2e(p: Poly) -> Poly:
    """``exp(x)`` reaches the normal forms as ``ex2(x * L)`` where ``L`` is log2(e) as each compiler
    spells it: f32 ``0f3FB8AA3B`` (Triton's ``tl.exp``, ``__expf``), a hi + lo pair (CUDA's
    ``expf``), or the product with a scale folded in by the compiler. A coefficient within about two
    f32 ulps of ``k * log2(e)`` (``k`` a rational with denominator at most 64) becomes
    ``k * LOG2E``: constant rounding is abstracted like every other rounding of the real model."""
    out = None
    for m, c in p.terms.items():
        if not c:
            continue
        r = c / LOG2E
        k = r.limit_denominator(64)
        if not k or k == r:
            continue
        if abs(r / k - 1) <= _SNAP_TOL:
            out = out if out is not None else dict(p.terms)
            out[m] = k * LOG2E
    return Poly(out) if out is not None else p


def is_finite_poly(x) -> bool:
    return isinstance(x, Poly)


def show(p, atoms: Atoms | None, limit: int = 6) -> str:
    """A short human-readable rendering (for messages)."""
    if isinstance(p, Inf):
        return repr(p)
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
