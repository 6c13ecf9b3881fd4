"""Which source lines of two kernels compute the same values (``kverify audit --ref``).

Off unless the caller sets ``Executor.terms`` to a :class:`TermLog` (``check_pair(...,
value_terms=True)``): then the executor notes, per source line and kind of operation, the
distinct symbolic values it produced there:

  ``load``    the value of an ``ld`` (every element of a vector load), and the values an
              asynchronous copy (``cp.async``, ``cp.async.bulk``) moves from global memory
  ``store``   the value an ``st`` writes
  ``mma``     each accumulator element a ``wgmma.mma_async`` or ``mma.sync`` produces
  ``reduce``  the result of ``redux.sync`` and the new value of a float atomic add
  ``arith``   the result of a value instruction (add, fma, max, ex2, cvt, ...; not ``mov``
              and not comparisons)

A value is noted only when it depends on the inputs (concrete values such as addresses,
indices or constants are not), keyed by its identity in the model (elements packed side by side in one register or chunk, an
``f16x2`` or a copied 4-byte chunk, one by one): the ``real`` normal form
(hash-consed :class:`~..realterm.Poly` atoms, shared by the two kernels of a comparison; a
128-bit digest of the polynomial's canonical monomials is kept, not the polynomial) or the z3
term (``bitexact``/``int``: z3 terms are hash-consed, so two structurally equal terms are one
AST). Folds of integer atomics are not noted (they are compared as multisets, not as terms).

:func:`correspondence` matches them: a candidate line (and kind) corresponds to a reference
line when the reference line produced the very same value; it is matched for ``all`` of its
values when every distinct value it produced was produced there, else for ``some`` (k of n).
Identity of normal forms is sufficient for equality of the values (under the model), never
necessary: a line whose values are equal but whose normal forms differ is not matched.
"""
from __future__ import annotations

import hashlib
import pickle

import z3

from .. import folds as F
from ..algebra import Packed
from .. import realterm as R
from kverify.semantics.ir.nodes import where

#: Distinct values kept per (line, kind); past it the line's match is over the values kept.
MAX_VALUES = 50_000
KINDS = ("load", "mma", "reduce", "arith", "store")


def term_key(v):
    """The identity of a symbolic value, or None for a concrete one or one compared otherwise."""
    t = type(v)
    if t is int or t is bool or v is None:
        return None
    if isinstance(v, z3.ExprRef):
        if z3.is_bv_value(v) or z3.is_fp_value(v) or z3.is_true(v) or z3.is_false(v) or z3.is_rational_value(v):
            return None
        return ("z3", v.get_id())
    if isinstance(v, R.Poly):
        return None if v.is_const() else ("poly", _digest(v))
    if isinstance(v, (R.Inf, F.Lazy)):
        return None
    try:
        hash(v)
    except TypeError:
        return None
    return v


def _digest(p) -> bytes:
    """A 128-bit digest of a normal form's canonical content (its monomials: tuples of the ids of
    the hash-consed atoms shared by both kernels, with exact rational coefficients), kept instead
    of the polynomial itself: a loop's partial sums are large and would otherwise all stay alive."""
    # (pickle of flat tuples of ints is canonical: no object appears twice, so no memo references)
    items = sorted([(m, c.numerator, c.denominator) for m, c in p.terms.items()])
    return hashlib.blake2b(pickle.dumps(items, 4), digest_size=16).digest()


class TermLog:
    """The values one kernel's symbolic run produced, per (source line, kind)."""

    def __init__(self):
        self.sites: dict = {}  # (Loc, kind) -> {key: value}
        self.capped: set = set()

    def note(self, loc, kind, value):
        """``value`` was produced at ``loc``; several elements side by side in one register or
        memory chunk (a real-model ``Packed``, a z3 ``Concat``) are noted element by element."""
        if isinstance(value, Packed):
            for p, _ in value.pieces:
                self.note(loc, kind, p)
            return
        if isinstance(value, z3.ExprRef) and z3.is_app_of(value, z3.Z3_OP_CONCAT):
            for p in value.children():
                self.note(loc, kind, p)
            return
        k = term_key(value)
        if k is None:
            return
        d = self.sites.get((loc, kind))
        if d is None:
            d = self.sites[(loc, kind)] = {}
        elif len(d) >= MAX_VALUES:
            if k not in d:
                self.capped.add((loc, kind))
            return
        d[k] = value if type(k) is tuple and k[0] == "z3" else None  # a z3 term kept alive: its id stays unique

    def by_line(self) -> dict:
        """{(line, kind): {key: value}} with the PTX instructions of one source line merged."""
        out: dict = {}
        for (loc, kind), d in self.sites.items():
            out.setdefault((where(loc), kind), {}).update(d)
        return out

    def capped_lines(self) -> set:
        return {(where(loc), kind) for loc, kind in self.capped}


def correspondence(cand: TermLog, ref: TermLog, limit: int = 4) -> list:
    """[{"candidate": line, "kind": kind, "values": n, "capped": bool, "reference": [{"line", "kinds",
    "matched", "all"}]}] for every candidate (line, kind) with a value some reference line also
    produced; per candidate line the reference lines that produced all its values first (same kind
    first), then the best partial ones, at most ``limit``."""
    index: dict = {}  # value key -> {reference line: set of kinds}
    for (line, kind), d in ref.by_line().items():
        for k in d:
            index.setdefault(k, {}).setdefault(line, set()).add(kind)
    cand_capped, ref_capped = cand.capped_lines(), ref.capped_lines()
    out = []
    order = {k: i for i, k in enumerate(KINDS)}
    for (line, kind), d in sorted(cand.by_line().items(), key=lambda x: (x[0][0], order.get(x[0][1], 9))):
        counts: dict = {}
        kinds: dict = {}
        for k in d:
            for rline, ks in index.get(k, {}).items():
                counts[rline] = counts.get(rline, 0) + 1
                kinds.setdefault(rline, set()).update(ks)
        if not counts:
            continue
        n = len(d)
        best = sorted(counts, key=lambda r: (counts[r] < n, kind not in kinds[r], -counts[r], r))
        refs = [{"line": r, "kinds": sorted(kinds[r], key=lambda x: order.get(x, 9)), "matched": counts[r],
                 "all": counts[r] == n, "capped": any((r, x) in ref_capped for x in kinds[r])}
                for r in best[:limit]]
        out.append({"candidate": line, "kind": kind, "values": n, "capped": (line, kind) in cand_capped,
                    "reference": refs})
    return out
