"""Order-independent folds: the value of a location updated by integer atomics
(``atom``/``red`` add, and, or, xor, min, max; PTX ISA 9.7.13.5-6) in the ``int`` and
``bitexact`` models, and the lazy values the symbolic executor keeps next to them.

A :class:`Fold` is ``const ⊕ plain_1 ⊕ ... ⊕ hit_1 ⊕ ...`` for one operator ``⊕`` on
``w``-bit vectors, where a *hit* ``(idx, k, v)`` contributes ``v`` when the index term
``idx`` equals ``k`` and the operator's identity otherwise (an atomic whose address depends
on input data, see ``symexec/atomics.py``). Bit-vector add, xor, and, or, min and max are
commutative and associative, so the order in which the threads' contributions arrive
does not change the value: a fold is a multiset of contributions (a set for the idempotent
and, or, min, max). Two folds with the same operator, width, constant and contributions
(z3 terms compared by identity: z3 terms are hash-consed) are equal. For add and xor the
common contributions cancel; the rest are paired one by one, each pair proved equal by z3
(a small question), or a difference is searched on them only.

Lazy values: :class:`FoldPred` (``fold == c`` / ``fold != c``, so ``if (count != 0)
atomicAdd(.., count)`` needs no z3 term of the count) and :class:`Select` (a register merged
after a branch on input data, ``symexec/predication.py``). Anything else that uses one
materializes it (:func:`force`), under a budget of :data:`MAX_TERMS` contributions.
"""
from __future__ import annotations

from collections import Counter

import numpy as np
import z3

from kverify.semantics.values import ConcreteDomain, Z3Domain, evaluate
from kverify.symbolic.budget import SolverBudget

#: Largest fold (contributions) turned into one z3 term.
MAX_TERMS = 300_000
#: Most differing contributions handed to the solver as one question.
MAX_SOLVER_TERMS = 256
#: Most differing contributions paired one by one by the solver.
MAX_MATCH = 1024

IDEMPOTENT = ("and", "or", "min.u", "min.s", "max.u", "max.s")


class FoldBudget(Exception):
    """A fold too large to materialize as one z3 term."""


def identity(op, w):
    m = (1 << w) - 1
    return {"add": 0, "xor": 0, "or": 0, "and": m, "min.u": m, "max.u": 0,
            "min.s": m >> 1, "max.s": 1 << (w - 1)}[op]


_CONCRETE, _SYMBOLIC = ConcreteDomain(), Z3Domain()


def _family(op, w):
    """The value-semantics family and PTX type of the fold operator ``op`` on ``w`` bits
    (``min.s`` -> ``min``, ``s32``; add on unsigned bits; and/or/xor on untyped bits)."""
    name, _, sign = op.partition(".")
    return name, f"{sign or ('u' if name == 'add' else 'b')}{w}"


def combine(op, w, a, b):
    """``a ⊕ b`` for two ``w``-bit values (ints), by the instruction's value semantics."""
    name, ty = _family(op, w)
    return int(evaluate(_CONCRETE, name, ty, (), np.uint64(a), np.uint64(b)))


def _zcombine(op, a, b):
    """``a ⊕ b`` for two z3 bit-vectors of one width, by the instruction's value semantics."""
    name, ty = _family(op, a.size())
    return evaluate(_SYMBOLIC, name, ty, (), a, b)


class Lazy:
    __slots__ = ()


def _vkey(v):
    return ("c", v) if type(v) is int else ("z", v.get_id())


class Fold(Lazy):
    """``const ⊕ plain... ⊕ hits...``; mutable while only the atomics of one location append
    to it, ``frozen`` once a load has observed it (then an update copies it)."""

    __slots__ = ("op", "w", "const", "plain", "hits", "frozen", "seen", "_z3")

    def __init__(self, op, w, const=None, plain=None, hits=None):
        self.op, self.w = op, w
        self.const = identity(op, w) if const is None else const
        self.plain = plain if plain is not None else []
        self.hits = hits if hits is not None else []
        self.frozen = False
        self.seen = None  # (CTA, barrier epoch) of the load that observed it
        self._z3 = None

    @classmethod
    def of(cls, op, w, old):
        """A fold for ``op`` starting from the value ``old`` of the location."""
        if isinstance(old, Fold) and old.op == op and old.w == w:
            return old.copy() if old.frozen else old
        f = cls(op, w)
        f.add(old)
        return f

    def copy(self):
        return Fold(self.op, self.w, self.const, list(self.plain), list(self.hits))

    def __len__(self):
        return len(self.plain) + len(self.hits)

    def add(self, v):
        """Contribute ``v`` (an int, a z3 bit-vector, or a fold: flattened when it has the
        same operator and width, by associativity)."""
        self._z3 = None
        if type(v) is int:
            self.const = combine(self.op, self.w, self.const, v & ((1 << self.w) - 1))
        elif isinstance(v, Fold) and v.op == self.op and v.w == self.w:
            self.const = combine(self.op, self.w, self.const, v.const)
            self.plain.extend(v.plain)
            self.hits.extend(v.hits)
        else:
            v = force(v)
            if z3.is_bv_value(v):
                self.add(v.as_long())
            else:
                self.plain.append(fit(v, self.w))

    def add_guarded(self, pred, v):
        """Contribute ``v`` when ``pred`` holds (the identity otherwise). ``pred`` saying
        "v differs from the identity" makes the guard redundant: ``v`` is contributed."""
        if isinstance(pred, FoldPred) and pred.fold is v and pred.op == "ne" \
                and pred.const == identity(self.op, self.w):
            self.add(v)
            return
        self.add(z3.If(force_bool(pred), lift(force(v), self.w), z3.BitVecVal(identity(self.op, self.w), self.w)))

    def keys(self):
        ks = [("p", p.get_id()) for p in self.plain]
        ks += [("h", i.get_id(), k, _vkey(v)) for i, k, v in self.hits]
        return ks

    def entries(self):
        out = {("p", p.get_id()): ("p", p) for p in self.plain}
        for h in self.hits:
            out[("h", h[0].get_id(), h[1], _vkey(h[2]))] = ("h", h)
        return out

    def z3(self, keys=None):
        """The fold as one z3 term (only the contributions with these ``keys``, if given)."""
        if keys is None and self._z3 is not None:
            return self._z3
        ent = self.entries()
        if keys is None:
            items = [(k, 1) for k in self.keys()]
        else:
            items = list(keys.items())
        n = sum(c for _, c in items)
        if n > MAX_TERMS:
            raise FoldBudget(f"a fold of {n} atomic contributions exceeds the budget of {MAX_TERMS} "
                             f"terms")
        w, op = self.w, self.op
        ident = z3.BitVecVal(identity(op, w), w)
        kv = {}
        terms = []
        for key, cnt in sorted(items):
            kind, e = ent[key]
            if kind == "p":
                t = e
            else:
                idx, k, v = e
                kk = kv.get((idx.size(), k))
                if kk is None:
                    kk = kv[(idx.size(), k)] = z3.BitVecVal(k, idx.size())
                t = z3.If(idx == kk, lift(v, w), ident)
            terms.extend([t] * cnt)
        out = z3.BitVecVal(self.const, w)
        for t in terms:
            out = _zcombine(op, out, t)
        if keys is None:
            self._z3 = out
        return out

    def __repr__(self):
        return f"Fold({self.op}.{self.w}, const={self.const}, {len(self.plain)} plain, {len(self.hits)} hits)"


class FoldPred(Lazy):
    """``fold == const`` (``op`` eq) or ``fold != const`` (ne), kept lazy."""

    __slots__ = ("fold", "op", "const")

    def __init__(self, fold, op, const):
        self.fold, self.op, self.const = fold, op, const

    def negate(self):
        return FoldPred(self.fold, "ne" if self.op == "eq" else "eq", self.const)

    def z3(self):
        e = force(self.fold) == z3.BitVecVal(self.const, self.fold.w)
        return e if self.op == "eq" else z3.Not(e)


class Select(Lazy):
    """``pred ? a : b`` for a register merged after a branch on input data."""

    __slots__ = ("pred", "a", "b", "w")

    def __init__(self, pred, a, b, w):
        self.pred, self.a, self.b, self.w = pred, a, b, w

    def z3(self):
        c = force_bool(self.pred)
        if self.w == 1:
            return z3.If(c, force_bool(self.a), force_bool(self.b))
        return z3.If(c, lift(force(self.a), self.w), lift(force(self.b), self.w))


# ---------------------------------------------------------------------- conversions
def lift(v, w):
    if type(v) is bool:
        return z3.BitVecVal(int(v), w)
    if type(v) is int:
        return z3.BitVecVal(v & ((1 << w) - 1), w)
    return fit(v, w)


def fit(v, w):
    n = v.size()
    if n == w:
        return v
    if n > w:
        return z3.Extract(w - 1, 0, v)
    return z3.ZeroExt(w - n, v)


def force(v):
    """A lazy value as a z3 term (anything else unchanged)."""
    if isinstance(v, Lazy):
        return v.z3()
    return v


def force_bool(v):
    if type(v) is bool:
        return z3.BoolVal(v)
    v = force(v)
    if type(v) is bool:
        return z3.BoolVal(v)
    if z3.is_bool(v):
        return v
    return v != 0


def pand(a, b):
    return z3.And(force_bool(a), force_bool(b))


def lazy_family(alg, fam, ty, mods, args, widths):
    """An instruction with a lazy operand (``BVAlgebra.family``): ``mov`` keeps it, ``setp``
    eq/ne of a fold against a constant stays lazy, anything else materializes."""
    if fam == "mov" and len(args) == 1:
        return args[0]
    if fam == "setp" and len(args) == 2 and isinstance(ty, str) and not (set(mods) & {"and", "or", "xor"}):
        f, c = args
        if type(f) is int and isinstance(c, Fold):
            f, c = c, f
        op = "eq" if "eq" in mods else ("ne" if "ne" in mods else None)
        if op and isinstance(f, Fold) and type(c) is int and widths[0] == f.w:
            p = FoldPred(f, op, c & ((1 << f.w) - 1))
            return (p, p.negate())
    args = [force_bool(a) if isinstance(a, (FoldPred,)) or (isinstance(a, Select) and a.w == 1)
            else force(a) for a in args]
    return alg.family(fam, ty, mods, args, widths)


# ---------------------------------------------------------------------- comparison
def compare(a, b, seed=0, tries=12):
    """Compare two output values of which at least one is lazy.

    Returns ``("equal", None)`` (same operator, constant and contributions: equal for all
    inputs by commutativity and associativity), ``("differ", assignment)`` (input values on
    which they differ, for the interpreter to confirm), ``("terms", (za, zb))`` (z3 terms
    to hand to the solver: for add/xor only the contributions that do not cancel) or
    ``("budget", reason)``."""
    try:
        cand = []
        if isinstance(a, Fold) and isinstance(b, Fold) and a.op == b.op and a.w == b.w:
            ka, kb = Counter(a.keys()), Counter(b.keys())
            if a.op in IDEMPOTENT:
                same = set(ka) == set(kb)
            else:
                same = ka == kb
            if same and a.const == b.const:
                return "equal", None
            if a.op in ("add", "xor"):
                da, db = ka - kb, kb - ka
                if a.const == b.const and _match(a, da, b, db):
                    return "equal", None
                za, zb = a.z3(da), b.z3(db)
                ea, eb = a.entries(), b.entries()
                cand = [ea[k] for k in da] + [eb[k] for k in db]
            else:
                za, zb = a.z3(), b.z3()
                cand = list(a.entries().values()) + list(b.entries().values())
        else:
            za, zb = _term(a), _term(b)
            for x in (a, b):
                if isinstance(x, Fold):
                    cand += list(x.entries().values())
        if type(za) is int or type(zb) is int:
            w = za.size() if not type(za) is int else (zb.size() if not type(zb) is int else 64)
            za, zb = lift(za, w), lift(zb, w)
        if za.size() != zb.size():
            return "terms", (za, zb)
        assign = _search(za, zb, cand[:tries])
        if assign is not None:
            return "differ", assign
        if len(cand) > MAX_SOLVER_TERMS:
            return "budget", (f"the atomic folds differ in {len(cand)} contributions and no input found by the "
                              f"targeted search tells them apart; more than {MAX_SOLVER_TERMS} are not given to the "
                              f"solver")
        return "terms", (za, zb)
    except FoldBudget as e:
        return "budget", str(e)
    except z3.Z3Exception as e:  # e.g. folds of different widths
        return "budget", f"the atomic folds could not be compared ({e})"


def _entry_term(f, e):
    kind, x = e
    if kind == "p":
        return x
    idx, k, v = x
    return z3.If(idx == z3.BitVecVal(k, idx.size()), lift(v, f.w), z3.BitVecVal(identity(f.op, f.w), f.w))


def _match(a, da, b, db, limit=MAX_MATCH):
    """Pair every remaining contribution of ``a`` with one of ``b`` over the same variables
    that z3 proves equal (each question is small). All paired: the folds are equal."""
    n = sum(da.values())
    if n != sum(db.values()) or n > limit:
        return False
    ea, eb = a.entries(), b.entries()
    pool = {}
    for key, c in db.items():
        t = _entry_term(b, eb[key])
        pool.setdefault(frozenset(_vars((t,))), []).extend([t] * c)
    for key, c in da.items():
        t = _entry_term(a, ea[key])
        cands = pool.get(frozenset(_vars((t,))), [])
        for _ in range(c):
            for j, u in enumerate(cands):
                s = z3.Solver()
                s.add(t != u)
                if SolverBudget(1.0, label="equiv.folds").check(s) == z3.unsat:
                    del cands[j]
                    break
            else:
                return False
    return True


def _term(v):
    if isinstance(v, Lazy):
        return force(v)
    return v


def _vars(exprs):
    from .counterexample import _z3_vars

    return _z3_vars(exprs)


def _search(za, zb, cand):
    """Inputs on which ``za`` and ``zb`` differ: all zero, then, for each differing
    contribution, its variables free and every other variable zero (a small problem for
    the solver)."""
    allv = _vars((za, zb))
    zero = {n: z3.BitVecVal(0, v.size()) for n, v in allv.items()}
    groups = [set()]
    for kind, e in cand:
        if kind == "p":
            vs = set(_vars((e,)))
        else:
            idx, _k, v = e
            vs = set(_vars((idx,) if type(v) is int else (idx, v)))
        if vs and vs not in groups:
            groups.append(vs)
    for free in groups:
        subs = [(allv[n], zero[n]) for n in allv if n not in free]
        ea = z3.simplify(z3.substitute(za, *subs)) if subs else za
        eb = z3.simplify(z3.substitute(zb, *subs)) if subs else zb
        if not free:
            if z3.is_bv_value(ea) and z3.is_bv_value(eb) and ea.as_long() != eb.as_long():
                return {n: 0 for n in allv}
            continue
        s = z3.Solver()
        s.add(ea != eb)
        b = SolverBudget(2.0, label="equiv.folds")
        if b.check(s) == z3.sat:
            m = b.model
            out = {n: 0 for n in allv}
            for d in m.decls():
                if z3.is_bv_value(m[d]):
                    out[d.name()] = m[d].as_long()
            return out
    return None
