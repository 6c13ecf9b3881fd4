"""Symbolic integer expressions: polynomials with integer coefficients over named atoms.

Used for loop bounds, induction variables, trip counts and addresses in terms of kernel
parameters and special registers. A ``SymInt`` is kept in a canonical form (a sorted tuple
of ``(monomial, coefficient)``), so structural equality is semantic equality for
polynomials; ``floordiv``/``mod``/``min``/``max`` that do not simplify become opaque atoms.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Union

Atom = Union[str, "Opaque"]
Monomial = tuple  # sorted tuple of atoms (with repetition)


def _atom_key(a) -> tuple:
    return (0, a) if isinstance(a, str) else (1, str(a))


@dataclass(frozen=True, slots=True)
class Opaque:
    """An operation the polynomial form cannot absorb, e.g. ``floordiv(n + 3, 4)``."""

    op: str
    args: tuple  # of SymInt

    def __str__(self) -> str:
        return f"{self.op}({', '.join(str(a) for a in self.args)})"


@dataclass(frozen=True, slots=True)
class SymInt:
    terms: tuple = ()  # ((monomial, coeff), ...) sorted, coeff != 0

    # -- construction -------------------------------------------------------------
    @staticmethod
    def const(c: int) -> "SymInt":
        return SymInt(((((), int(c)),) if c else ()))

    @staticmethod
    def sym(name: str) -> "SymInt":
        return SymInt((((name,), 1),))

    @staticmethod
    def _atom(a: Opaque) -> "SymInt":
        return SymInt((((a,), 1),))

    @staticmethod
    def of(x) -> "SymInt":
        if isinstance(x, SymInt):
            return x
        if isinstance(x, int):
            return SymInt.const(x)
        if isinstance(x, str):
            return SymInt.sym(x)
        raise TypeError(f"cannot make a SymInt of {x!r}")

    @staticmethod
    def _norm(acc: dict) -> "SymInt":
        items = [(m, c) for m, c in acc.items() if c]
        items.sort(key=lambda mc: (-len(mc[0]), [_atom_key(a) for a in mc[0]]))
        return SymInt(tuple(items))

    # -- queries ------------------------------------------------------------------
    @property
    def is_const(self) -> bool:
        return all(not m for m, _ in self.terms)

    @property
    def value(self) -> int:
        if not self.is_const:
            raise ValueError(f"{self} is not a constant")
        return self.terms[0][1] if self.terms else 0

    def free_symbols(self) -> frozenset:
        out = set()
        for m, _ in self.terms:
            for a in m:
                if isinstance(a, str):
                    out.add(a)
                else:
                    for s in a.args:
                        out |= s.free_symbols()
        return frozenset(out)

    # -- arithmetic ---------------------------------------------------------------
    def __add__(self, other) -> "SymInt":
        other = SymInt.of(other)
        acc = dict(self.terms)
        for m, c in other.terms:
            acc[m] = acc.get(m, 0) + c
        return SymInt._norm(acc)

    __radd__ = __add__

    def __neg__(self) -> "SymInt":
        return SymInt(tuple((m, -c) for m, c in self.terms))

    def __sub__(self, other) -> "SymInt":
        return self + (-SymInt.of(other))

    def __rsub__(self, other) -> "SymInt":
        return SymInt.of(other) - self

    def __mul__(self, other) -> "SymInt":
        other = SymInt.of(other)
        acc: dict = {}
        for m1, c1 in self.terms:
            for m2, c2 in other.terms:
                m = tuple(sorted(m1 + m2, key=_atom_key))
                acc[m] = acc.get(m, 0) + c1 * c2
        return SymInt._norm(acc)

    __rmul__ = __mul__

    def floordiv(self, d) -> "SymInt":
        d = SymInt.of(d)
        if d.is_const and d.value != 0:
            k = d.value
            if self.is_const:
                return SymInt.const(self.value // k)
            if all(c % k == 0 for _, c in self.terms):
                return SymInt(tuple((m, c // k) for m, c in self.terms))
            if k == 1:
                return self
        return SymInt._atom(Opaque("floordiv", (self, d)))

    def mod(self, d) -> "SymInt":
        d = SymInt.of(d)
        if d.is_const and d.value != 0:
            k = d.value
            if self.is_const:
                return SymInt.const(self.value % k)
            if all(c % k == 0 for _, c in self.terms):
                return SymInt.const(0)
        return SymInt._atom(Opaque("mod", (self, d)))

    def min(self, other) -> "SymInt":
        other = SymInt.of(other)
        if self.is_const and other.is_const:
            return SymInt.const(min(self.value, other.value))
        if self == other:
            return self
        return SymInt._atom(Opaque("min", (self, other)))

    def max(self, other) -> "SymInt":
        other = SymInt.of(other)
        if self.is_const and other.is_const:
            return SymInt.const(max(self.value, other.value))
        if self == other:
            return self
        return SymInt._atom(Opaque("max", (self, other)))

    # -- substitution -------------------------------------------------------------
    def subs(self, mapping: Mapping[str, "SymInt | int"]) -> "SymInt":
        """Replace symbols and re-simplify (opaque atoms are rebuilt, so they fold)."""
        out = SymInt.const(0)
        for m, c in self.terms:
            term = SymInt.const(c)
            for a in m:
                if isinstance(a, str):
                    term = term * (SymInt.of(mapping[a]) if a in mapping else SymInt.sym(a))
                else:
                    args = [x.subs(mapping) for x in a.args]
                    term = term * getattr(args[0], a.op)(args[1])
            out = out + term
        return out

    def evaluate(self, env: Mapping[str, int]) -> int:
        r = self.subs(env)
        return r.value

    # -- printing -----------------------------------------------------------------
    def __str__(self) -> str:
        if not self.terms:
            return "0"
        parts = []
        for i, (m, c) in enumerate(self.terms):
            atoms = "*".join(str(a) for a in m)
            if not m:
                body, mag = str(abs(c)), None
            elif abs(c) == 1:
                body = atoms
            else:
                body = f"{abs(c)}*{atoms}"
            sign = "-" if c < 0 else "+"
            if i == 0:
                parts.append(("-" if c < 0 else "") + body)
            else:
                parts.append(f" {sign} {body}")
        return "".join(parts)

    def __repr__(self) -> str:
        return f"SymInt({str(self)!r})"
