"""Atomics in the equivalence walk: ``atom`` whose returned value is never read and ``red``
(PTX ISA 9.7.13.5 atom, 9.7.13.6 red), in global and shared memory.

* Integer add, and, or, xor, min, max (``int``/``bitexact``): the location holds a
  :class:`~..folds.Fold` of its value before the first atomic and every contribution.
  These operators are commutative and associative on bit-vectors, so the final value does
  not depend on the order in which threads perform the atomics; the fold is a multiset of
  contributions and is compared as one (``folds.compare``).
* A data-dependent address (``atomicAdd(&bins[data[i] % NBINS], 1)``) stays exact: the
  address is ``start + o`` inside one buffer or shared variable, ``o`` aligned and in
  bounds for all inputs (proved once per shape of the address term, syntactically or by
  z3), and the atomic contributes ``v`` to element ``k`` when the index term ``o / size``
  equals ``k`` (a hit), for every element it can reach. The work is bounded by
  :data:`MAX_HITS`; past it the verdict is ``unknown`` with the reason.
* Float ``add`` (f32/f64): under ``real`` a sum, which the normal form keeps order-free;
  under ``bitexact``/``int`` rounding makes the sum depend on the order, so a second float
  atomic on one location (or one at a data-dependent address) stops the run (``unknown``).
* ``exch``, ``cas``, ``inc``, ``dec``, an ``atom`` whose result is read, and atomics of two
  operations or widths on one location depend on the order: ``unknown``, then testing, with that
  reason.
"""
from __future__ import annotations

import re

import z3

from kverify.launch.layout import LOCAL_WINDOW, PARAM_WINDOW, SHARED_WINDOW, WINDOW_SIZE, shared_layout
from kverify.semantics.ir.errors import Unsupported
from kverify.semantics.ir.nodes import Reg, Sink, VecOp
from kverify.semantics.ir.visit import unread_atomic_results
from kverify.semantics.values import atom_float_mods
from kverify.symbolic.budget import SolverBudget

from .. import folds as F
from ..algebra import ModelUnsupported, is_concrete
from .memory import space_of

#: Most hits (element x data-dependent atomic pairs) one launch may create.
MAX_HITS = 4_000_000

INT_OPS = ("add", "and", "or", "xor", "min", "max")
ORDERED = ("exch", "cas", "inc", "dec")
_VAR = re.compile(r"\|[^|]*\||\b[A-Za-z_][\w.]*\[\d+\]")


class AtomicHandlers:
    """The atomic handlers of :class:`~.executor.Executor`."""

    def h_atom(self, t, ins):
        try:
            return self._atom(t, ins)
        except z3.Z3Exception as e:  # a combination of widths or sorts this walk does not model
            raise Unsupported(f"{ins.opcode}: not modelled symbolically ({e})", ins) from None

    def _atom(self, t, ins):
        row_def = ins.row.operands[0].access == "def"  # atom returns the old value; red does not
        ops = ins.operands
        a, b = (ops[1], ops[2]) if row_def else (ops[0], ops[1])
        op = next((x for x in ins.mods if x in INT_OPS + ORDERED), None)
        if op is None:
            raise Unsupported(f"{ins.opcode}: unknown atomic operation", ins)
        if row_def and not self._result_unused(ins):
            raise Unsupported(f"{ins.opcode}: the value it returns is read, and it depends on the order in "
                              f"which threads perform the atomics", ins)
        if op in ORDERED:
            raise Unsupported(f"{ins.opcode}: the final value of atom.{op} depends on the order of the "
                              f"updates", ins)
        if isinstance(b, VecOp) or any(m in ins.mods for m in ("v2", "v4", "v8")):
            raise Unsupported(f"{ins.opcode}: vector atomics", ins)
        ty, nb = self._elem_bytes(ins)
        space = space_of(ins)
        v = self.val(t, b, 8 * nb)
        base = a.base
        av = None
        if isinstance(base, Reg):
            av = self.reg(t, base.name)
            if isinstance(av, F.Lazy):
                av = F.force(av)
        if ty[0] == "f":
            return self._float_atomic(t, ins, op, ty, nb, space, a, av, v)
        if self.alg.model == "real":
            raise ModelUnsupported(f"{ins.opcode}: integer atomics in the real model (use --fp int)")
        fop = op if op not in ("min", "max") else f"{op}.{'s' if ty[0] == 's' else 'u'}"
        if av is not None and not is_concrete(av):
            return self._scattered(t, ins, fop, nb, space, a, av, v)
        addr = self.addr(t, a)
        store, key, kind = self._atomic_cell(t, ins, space, addr, nb)
        self._one_operation(t, ins, kind, key, nb, fop)
        f = self._fold_at(t, store, key, kind, space, addr, nb, fop, ins)
        if t.pred is None:
            f.add(v)
        else:
            f.add_guarded(t.pred, v)
        return None

    def _float_atomic(self, t, ins, op, ty, nb, space, a, av, v):
        if op != "add" or ty not in ("f32", "f64"):
            raise Unsupported(f"{ins.opcode}: float atomics other than add.f32/add.f64", ins)
        model = self.alg.model
        if av is not None and not is_concrete(av):
            if model == "real":
                raise ModelUnsupported(f"{ins.opcode}: a float atomic at a data-dependent address (the real "
                                       f"normal form has no conditional sums)")
            raise ModelUnsupported(f"{ins.opcode}: float atomic adds at a data-dependent address are "
                                   f"order-dependent under the {model} model (rounding depends on the order "
                                   f"of the additions; --fp real proves the sum over reals)")
        addr = self.addr(t, a)
        store, key, kind = self._atomic_cell(t, ins, space, addr, nb)
        self._one_operation(t, ins, kind, key, nb, f"add.{ty}")
        if model != "real":
            seen = getattr(self, "_fp_atomic_cells", None)
            if seen is None:
                seen = self._fp_atomic_cells = set()
            cell = (kind, t.cta.ctaid if kind == "shared" else None, key)
            if cell in seen:
                raise ModelUnsupported(f"{ins.opcode}: two or more float atomic adds to one location are "
                                       f"order-dependent under the {model} model (rounding depends on the order "
                                       f"of the additions; --fp real proves the sum over reals)")
            seen.add(cell)
        old = self.load(t, space, addr, nb, ins)
        mods = atom_float_mods("add", ty, ins.mods, space)
        new = self.alg.family("add", ty, mods, [old, v], [8 * nb, 8 * nb])
        if t.pred is not None:
            new = self.alg.ite(t.pred, new, old, 8 * nb)
        self._clear(store, key, nb, kind, t)
        store[key] = (nb, new, ins.loc)
        if self.terms is not None:
            self.terms.note(ins.loc, "reduce", new)
        return None

    # ------------------------------------------------------------------ loads of folds
    def observe_fold(self, t, f, kind, ins=None):
        """A load reads a location atomics updated. Global: other CTAs may still update it
        (CTAs are not ordered), so its value depends on the schedule. Shared: later atomics
        must come after a barrier (checked in :meth:`_check_unobserved`)."""
        if kind != "shared" or t is None:
            raise Unsupported("a load of a global location that atomics update: the value it reads depends on "
                              "the order of the CTAs", ins)
        f.frozen = True
        f.seen = (t.cta, t.cta.epoch)

    def _check_unobserved(self, t, f, ins):
        """An atomic on a fold a load already read: fine after a barrier of the same CTA,
        else the value the load read depends on the order of the atomics."""
        if f.seen is not None and not (f.seen[0] is t.cta and t.cta.epoch > f.seen[1]):
            raise Unsupported(f"{ins.opcode}: a load read this location before this atomic with no barrier "
                              f"between them; the value it read depends on the order of the atomics", ins)

    # ------------------------------------------------------------------ helpers
    def _one_operation(self, t, ins, kind, key, nb, op):
        """Every atomic on a byte is one operation of one width: atomics of two operations (add
        and max, and and or, an f32 add and an s32 add) or two widths on one location do not
        commute, so the final value depends on their order (each was folded as if the earlier
        ones came first: proved against one order)."""
        cells = getattr(self, "_atomic_ops", None)
        if cells is None:
            cells = self._atomic_ops = {}
        cta = t.cta.ctaid if kind == "shared" else None
        for b in range(key, key + nb):
            got = cells.setdefault((kind, cta, b), (op, nb, key))
            if got != (op, nb, key):
                raise Unsupported(f"{ins.opcode}: atomics of different operations or widths update one location "
                                  f"(atom.{got[0]} of {got[1]} bytes before atom.{op} of {nb}): the final value "
                                  f"depends on their order", ins)

    def _result_unused(self, ins):
        un = getattr(self, "_unread_atomics", None)
        if un is None:
            un = self._unread_atomics = unread_atomic_results(self.module, self.kernel)
        d = ins.operands[0]
        return isinstance(d, Sink) or getattr(d, "name", None) in un

    def _atomic_cell(self, t, ins, space, addr, nb):
        store, key, kind = self._region(t, space, addr)
        if kind not in ("global", "shared"):
            raise Unsupported(f"{ins.opcode}: atomics on {kind} memory", ins)
        if kind == "global":
            self.global_buffer(key, nb, ins, "atomic")
        return store, key, kind

    def _fold_at(self, t, store, key, kind, space, addr, nb, fop, ins):
        """The mutable fold of one location (created from its current value)."""
        e = store.get(key)
        if e is not None and e[0] == nb and isinstance(e[1], F.Fold) and e[1].op == fop and not e[1].frozen:
            return e[1]
        if e is not None and isinstance(e[1], F.Fold):
            self._check_unobserved(t, e[1], ins)
            old = e[1] if e[0] == nb else F.force(e[1])
        else:
            old = self.load(t, space, addr, nb, ins) if e is None or e[0] != nb else e[1]
        f = F.Fold.of(fop, 8 * nb, old)
        if e is None or e[0] != nb:
            self._clear(store, key, nb, kind, t)
        store[key] = (nb, f, ins.loc)
        return f

    # ------------------------------------------------------------------ data-dependent addresses
    def _scattered(self, t, ins, fop, nb, space, a, av, v):
        A = av + a.offset if a.offset else av
        # the region of this instruction's last execution, if the address provably stays in it
        # (the bound below is proved for all inputs, so the region found at zero inputs
        # the first time is as good as any); else find it again
        regions = self._dec.setdefault(("atom.region", id(ins)), [])
        got = None
        for reg in regions:
            o = z3.simplify(A - reg[1], mul2concat=True)
            r = self._index_bits(ins, o, reg[0], reg[3], reg[4], raise_=False, nb=nb) if reg[5] == nb else None
            if r is not None:
                got = reg, o, r
                break
        if got is None:
            reg = self._scatter_region(t, ins, space, A) + (nb,)
            o = z3.simplify(A - reg[1], mul2concat=True)
            got = reg, o, self._index_bits(ins, o, reg[0], reg[3], reg[4], nb=nb)
            regions.append(reg)
        (kind, astart, kstart, size, label, _nb), o, (lbits, top, key) = got
        nel = size // nb
        # bits [l, top) of o are the element index; when the region's start is a multiple of
        # 2**top they are also bits [l, top) of A itself (no carry), which z3 keeps simpler
        use_a = astart % (1 << top) == 0 and top <= A.size()
        src = A if use_a else o
        idx = z3.simplify(z3.Extract(top - 1, lbits, src), mul2concat=True) if top > lbits else None
        mbits = top - lbits
        if idx is not None:
            # top bits of the index that are zero for every input (valid for one term of this
            # shape, so for all: validity does not depend on the names of the variables)
            mkey = ("atom.mbits", key, use_a)
            m = self._dec.get(mkey)
            if m is None:
                m = mbits
                while m > 1 and _zero_bits(idx, m - 1, m - 1):
                    m -= 1
                self._dec[mkey] = m
            if m != mbits:
                idx = z3.simplify(z3.Extract(m - 1, 0, idx))
                mbits = m
        if idx is None or z3.is_bv_value(idx):
            k = idx.as_long() if idx is not None else 0
            store, key, kind = self._atomic_cell(t, ins, space, self._addr_of(kind, astart, k, nb, space), nb)
            f = self._fold_at(t, store, key, kind, space, self._addr_of(kind, astart, k, nb, space), nb, fop, ins)
            f.add(v) if t.pred is None else f.add_guarded(t.pred, v)
            return None
        reach = min(nel, 1 << mbits)
        self._hits = getattr(self, "_hits", 0) + reach
        if self._hits > MAX_HITS:
            raise F.FoldBudget(f"atomics at data-dependent addresses reach more than {MAX_HITS} (element, atomic) "
                         f"pairs (last: {ins.opcode} into {label}, {reach} elements)")
        if t.pred is not None:
            v = z3.If(F.force_bool(t.pred), F.lift(F.force(v), 8 * nb),
                      z3.BitVecVal(F.identity(fop, 8 * nb), 8 * nb))
        elif isinstance(v, F.Lazy):
            v = F.force(v)
        store = self.gmem if kind == "global" else t.cta.smem
        for k in range(reach):
            key = kstart + k * nb
            e = store.get(key)
            if e is not None and e[0] == nb and type(e[1]) is F.Fold and e[1].op == fop and not e[1].frozen:
                f = e[1]
                f._z3 = None
            else:
                ad = self._addr_of(kind, astart, k, nb, space)
                f = self._fold_at(t, store, key, kind, space, ad, nb, fop, ins)
            f.hits.append((idx, k, v))
        return None

    def _addr_of(self, kind, astart, k, nb, space):
        return astart + k * nb

    def _scatter_region(self, t, ins, space, A):
        """(kind, address of the region in A's space, key of its first byte, bytes, name) of
        the buffer or shared variable the data-dependent address ``A`` points into (the
        one holding its value at all-zero inputs)."""
        from ..counterexample import _z3_vars

        vs = _z3_vars((A,))
        a0 = z3.simplify(z3.substitute(A, *[(x, z3.BitVecVal(0, x.size())) for x in vs.values()]))
        if not z3.is_bv_value(a0):
            raise Unsupported(f"{ins.opcode}: cannot evaluate its data-dependent address", ins)
        a0 = a0.as_long()
        sp = space or "generic"
        if sp == "generic":
            if SHARED_WINDOW <= a0 < SHARED_WINDOW + WINDOW_SIZE:
                return self._shared_var(ins, a0 - SHARED_WINDOW, SHARED_WINDOW)
            if LOCAL_WINDOW <= a0 < LOCAL_WINDOW + WINDOW_SIZE or PARAM_WINDOW <= a0 < PARAM_WINDOW + WINDOW_SIZE:
                raise Unsupported(f"{ins.opcode}: atomics on local or param memory", ins)
            sp = "global"
        if sp == "global":
            buf = self.global_buffer(a0, 1, ins, "atomic")
            if buf is None:
                raise Unsupported(f"{ins.opcode}: atomics on a module-scope .global variable", ins)
            return "global", buf.start, buf.start, buf.nbytes, f"buffer {buf.name}"
        if sp.startswith("shared"):
            return self._shared_var(ins, a0, 0)
        raise Unsupported(f"{ins.opcode}: atomics on {sp} memory", ins)

    def _shared_var(self, ins, key0, window):
        regions = getattr(self, "_smem_regions", None)
        if regions is None:
            regions = self._smem_regions = shared_layout(self.module, self.kernel, self.spec.dynamic_smem,
                                                         red_zone=0)[0]
        for name, (off, size) in regions.items():
            if off <= key0 < off + size:
                return "shared", off + window, off, size, f"shared variable {name}"
        raise Unsupported(f"{ins.opcode}: its data-dependent address can fall outside every shared variable", ins)

    def _index_bits(self, ins, o, kind, size, label, raise_=True, nb=1):
        """(l, top, key): ``o`` is a multiple of 2**l = nb below ``size`` <= 2**top for every
        input, so the element index is bits [l, top) of ``o``; ``key`` names the shape of ``o``.
        Proved once per shape of ``o`` (the term with its variables renamed in order):
        syntactically (z3.simplify) or by the solver."""
        cache = getattr(self, "_shape_cache", None)
        if cache is None:
            cache = self._shape_cache = {}
        key = (_shape(o), nb, size)
        r = cache.get(key)
        if r is None:
            r = cache[key] = _analyze(o, nb, size)
        if isinstance(r, str):
            if not raise_:
                return None
            raise Unsupported(f"{ins.opcode}: its data-dependent address into {label} {r}", ins)
        return r + (key,)


def _shape(o):
    names = {}

    def sub(m):
        return names.setdefault(m.group(0), f"v{len(names)}")

    return _VAR.sub(sub, o.sexpr())


def _zero_bits(e, hi, lo):
    return z3.is_bv_value(s := z3.simplify(z3.Extract(hi, lo, e))) and s.as_long() == 0


def _valid(claim, timeout_ms=5000):
    s = z3.Solver()
    s.add(z3.Not(claim))
    return SolverBudget(timeout_ms / 1000, label="equiv.atomics").check(s) == z3.unsat


def _analyze(o, nb, size):
    w = o.size()
    lbits = nb.bit_length() - 1
    if lbits and not _zero_bits(o, lbits - 1, 0) and not _valid(z3.Extract(lbits - 1, 0, o) == 0):
        return "may be misaligned"
    top = max((size - 1).bit_length(), lbits)
    if top < w and not (size == 1 << top and _zero_bits(o, w - 1, top)):
        if not _valid(z3.ULT(o, z3.BitVecVal(size, w))):
            return f"may fall outside it ({size} bytes)"
    return (lbits, top)
