"""Cluster symmetry: when no cluster can affect another, a few representative clusters stand
for the grid -- for kernels with asynchronous copies, mbarriers, wgmma, distributed shared
memory and clusters, which the classic CTA symmetry (:mod:`.symmetry`) does not take.

The argument (docs/verdicts.md, "When a few clusters stand for the grid"):

1. **No cluster reads or writes what another writes.** No global atomic or strong access, no
   write whose buffer is unknown, no asynchronous write to global memory but tile-mode TMA
   stores (a bulk store or reduction, an im2col or scatter store: their footprint is not
   encoded), no cooperative launch; every buffer an asynchronous copy reads (a tensor map's, a
   bulk copy's source) is written by no access; a buffer TMA stores write is accessed by
   nothing else and no two of its stores write overlapping boxes (``_boxes_overlap``);
   and z3 proves over two symbolic threads that no global byte one thread writes is accessed by
   another thread at all (any two distinct threads of the grid, every loop iteration). Then the
   only channels between CTAs are distributed shared memory, multicast copies, cluster barriers
   and remote mbarrier operations, which reach the CTAs of one cluster only (§9.7.9.27,
   §9.7.13.15, §9.7.13.3 barrier.cluster).
2. **What differs between clusters is a function of ``%ctaid``.** One symbolic thread runs the
   kernel (the mbarrier executor, :mod:`kverify.verifier.mbarrier.sites`) and records every
   instruction with an effect beyond its registers: barriers and loop decisions (with the
   threads that exited), traps, shared- and local-memory accesses (condition and address), global
   accesses (condition only: their addresses are the subject of 1.), and every
   synchronization and asynchronous instruction with its condition and operand values -- the
   barrier, counts, tx bytes, parity, shared destinations, sizes, masks, wgmma descriptors --
   leaving out global-memory operands and the data a store carries. The cluster registers are
   functions of ``%ctaid`` (``Env``). Two clusters whose CTAs agree rank by rank, thread by
   thread and iteration by iteration on all of these run alike, but for their global addresses
   and the values they move. Representatives: the first and the last cluster, then, for as
   long as z3 finds one, a cluster that disagrees with every chosen one somewhere
   (``symmetry._cover`` over cluster indices: complete on its own, so two to start with suffice).
3. **Nothing else varies.** If one of these conditions or values reads data loaded from
   memory or a value the engine over-approximates -- except loop registers that read only the
   launch and each other, and warp collectives (shuffle, vote, match, reduce) over such values
   (``symmetry._sameness``) -- the kernel is not reduced.

Anything not established returns ``(None, why)``: the interpreter runs every cluster.
"""
from __future__ import annotations

import time
from typing import NamedTuple

import z3

from kverify.semantics.ir.errors import KernelError
from kverify.semantics.ir.nodes import Addr, Imm, Reg, VecOp, where
from kverify.semantics.ir.optable import SPACES, space_of
from kverify.symbolic import Substitution, Unsupported, is_false, mk_and, mk_not, mk_or, row_of
from kverify.symbolic.families import deref, is_atomic
from kverify.symbolic.budget import RLIMIT_PER_SECOND, SolverBudget
from kverify.verifier.mbarrier.sites import MAPA, MbarExecutor
from kverify.verifier.report import Obligation

from .extents import IN_BOUNDS, NOT_IN_BOUNDS, launch_tensor_map, prove_in_bounds
from .smt import _Checker
from .symmetry import MAX_REPS, _cover, _sameness

MIN_CLUSTERS = 3  # fewer: the first and the last are all of them
TITLE_GLOBAL = "race-free: global"
#: what the independence proof (module docstring, 1.) says of global memory
INDEPENDENT = ("no global byte one thread writes is read or written by another thread of the grid, in any loop "
               "iteration (z3, over two symbolic threads); no global atomic, no asynchronous write to global "
               "memory but tile-mode TMA stores of boxes no two stores share into buffers nothing else accesses, "
               "and every buffer an asynchronous copy reads is written by no access")
#: solver seconds one query over two families of global accesses may take: CUTLASS ex48's
#: epilogue stores (128 sites a family) take 6.9-10.6 million units (1.4-2.1 s) from 2048x1024 to
#: 4096x4096 problems, and how many depends on z3's numbering of the terms: 2 s decided them in
#: some runs and not others (a whole 4096x4096 grid then interpreted, 7.5 GB)
GROUP_S = 6.0
_DATA_BITS = ("t", "t2")  # a slot typed as the instruction: the data a store or an atomic carries
_ACCESS = ("load", "store", "update")


class TensorStore(NamedTuple):
    """A tile-mode TMA store the effect executor met (``_boxes_overlap`` compares them)."""

    instr: object
    pc: object  # its condition
    tmap: dict  # the launch spec's tensor map
    coords: list  # coordinate terms (thread A), innermost first
    region: str | None  # the global buffer the map describes
    loops: tuple  # the loops around it: ((LoopInfo, counter), ...)
    src: object  # the shared source address (None: not followed)


class _EffectExecutor(MbarExecutor):
    """The mbarrier executor, recording what ``cluster_representatives`` compares between
    clusters (module docstring, 2.) and the global buffers asynchronous copies touch."""

    def __init__(self, env, check, launch):
        super().__init__(env, check, launch)
        self.effects: list = []  # (instr, pc, [terms])
        self.global_async: list = []  # (instr, "read" | "write", region or None)
        self.tensor_stores: list = []  # TensorStore
        self.derived: dict = {}  # approximate symbol (thread A) of a warp collective -> its operand terms

    def plain_instr(self, ins, st, guard):
        row = row_of(ins)
        if row.effect in ("sync", "async") and not is_false(z3.simplify(mk_and(st.pc, guard))):
            self._record(ins, st, guard, row)
        # a warp collective's result is a function of what its lanes read
        derived = row.collective in ("shuffle", "vote", "match", "reduce")
        srcs = self._sources(ins, st) if derived else None
        st = super().plain_instr(ins, st, guard)
        if srcs is not None:
            for r in self.dests(ins):
                t = st.regs.get(r, (None,))[0]
                if t is not None and z3.is_const(t):
                    self.derived.setdefault(t.decl().name(), []).extend(srcs)
        return st

    def memory(self, ins, st, guard):
        """A distributed shared memory access (``ld``/``st``/``atom`` ``.shared::cluster``): within
        the cluster, so a condition and an address like any other; its value is approximated."""
        if space_of(ins) != "shared::cluster":
            return super().memory(ins, st, guard)
        if not is_false(z3.simplify(mk_and(st.pc, guard))):
            slot, _ = deref(ins)
            op = ins.operands[slot] if slot < len(ins.operands) else None
            terms = []
            if isinstance(op, Addr) and op.base is not None:
                t = self.read(st, op.base, None)[0]
                if t is not None and not z3.is_bool(t):
                    terms.append(z3.simplify(t + op.offset))
            self.effects.append((ins, mk_and(st.pc, guard), terms))
        self.havoc_dests(st, ins, guard, ins.op)
        return st

    def async_instr(self, ins, st, guard):
        if not is_false(z3.simplify(mk_and(st.pc, guard))):
            self._record(ins, st, guard, row_of(ins))
        return super().async_instr(ins, st, guard)

    def _sources(self, ins, st) -> list:
        out = []
        for op, slot, _ in _operand_slots(ins, row_of(ins)):
            if slot.access == "def":
                continue
            for r in (op.elems if isinstance(op, VecOp) else (op,)):
                if isinstance(r, Reg):
                    out.append(self.read(st, r, None)[0])
        return [t for t in out if t is not None]

    def _record(self, ins, st, guard, row):
        """The instruction's path condition and the operand values that matter (module
        docstring, 2.); the buffers of its global-memory operands."""
        pc = mk_and(st.pc, guard)
        terms = []
        for op, slot, space in _operand_slots(ins, row):
            if slot.access in ("def", "target") or slot.bits in _DATA_BITS:
                continue
            if row.collective is not None and slot.name != "membermask":
                continue  # a warp collective's values are data; its lanes follow its condition
            if isinstance(op, Addr):
                t, region = (self.read(st, op.base, None) if op.base is not None else (z3.BitVecVal(0, 64), None))
                if space == "global" or (region or "").startswith(("param:", "var:")) or op.coords:
                    if slot.access == "store" and _tensor_store(ins, op):
                        tm, _ = self.tensor_map(ins)
                        if tm is not None:
                            coords = [self.read(st, r, None)[0] if isinstance(r, Reg) else
                                      z3.BitVecVal(r.value, 32) if isinstance(r, Imm) else None for r in op.coords]
                            src = ins.operands[1]  # ``load:src``, the shared tile
                            s_t = (self.read(st, src.base, None)[0] if isinstance(src, Addr) and src.base is not None
                                   else None)
                            s_t = z3.simplify(s_t + src.offset) if s_t is not None and not z3.is_bool(s_t) else None
                            self.tensor_stores.append(TensorStore(ins, pc, tm, coords,
                                                                  self._global_region(ins, op, region),
                                                                  tuple(self.loop_stack), s_t))
                            continue
                    if slot.access in _ACCESS:
                        self.global_async.append((ins, "read" if slot.access == "load" else "write",
                                                  self._global_region(ins, op, region)))
                    continue
                if t is not None and not z3.is_bool(t):
                    terms.append(z3.simplify(t + op.offset))
                continue
            if isinstance(op, VecOp):
                if slot.access == "update":
                    continue  # wgmma's accumulators: data
                terms += [self.read(st, r, None)[0] for r in op.elems if isinstance(r, Reg)]
            elif isinstance(op, Reg):
                terms.append(self.read(st, op, None)[0])
            elif not isinstance(op, Imm):
                terms.append(self.read(st, op, None)[0])
        self.effects.append((ins, pc, [t for t in terms if t is not None]))

    def _global_region(self, ins, op, region):
        if op.coords:  # a tensor copy: the buffer its tensor map describes
            tm, _ = self.tensor_map(ins)
            name = (tm or {}).get("buffer")
            return f"param:{name}" if isinstance(name, str) else None
        return region if (region or "").startswith(("param:", "var:")) else None


class _EffectChecker(_Checker):
    """The race checker's two-thread machinery over the effect executor (no classic-model
    refusal: the questions asked here do not rest on barrier intervals)."""

    def outside_scope(self):
        return None

    def make_executor(self, env, check_a):
        return _EffectExecutor(env, check_a, self.launch)


def cluster_representatives(module, kernel, spec, timeout_s: float = 10.0, proof: list | None = None):
    """``(origins, why)``: the first CTA of each cluster to interpret and the reason they stand
    for all, or ``(None, why_not)``. ``proof`` (a list) receives the "race-free: global"
    obligation, proved for the launch, once no cluster is shown to read or write what another
    writes (module docstring, 1.: a stronger statement than race freedom)."""
    try:
        spec = spec.for_kernel(kernel)  # the clusters the driver runs (``__cluster_dims__``)
    except KernelError as e:
        return None, f"launch error ({e})"
    g, cl = tuple(spec.grid), tuple(spec.cluster)
    n = tuple(a // b for a, b in zip(g, cl))
    total = n[0] * n[1] * n[2]
    if getattr(spec, "grid_assumed", False) or total < MIN_CLUSTERS:
        return None, "few clusters"
    if getattr(spec, "cooperative", None):
        return None, "a cooperative launch (grid-wide synchronization)"
    early = _static_communication(module, kernel)
    if early:
        return None, f"independence not established ({early})"
    c = _EffectChecker(module, kernel, spec, timeout_s, time.perf_counter())
    try:
        c.execute()
        return _representatives(c, spec, n, timeout_s, proof)
    except (Unsupported, z3.Z3Exception) as e:
        return None, f"independence not established ({e})"
    except Exception as e:  # noqa: BLE001 - fail closed
        return None, f"independence not established (internal error {type(e).__name__})"


def _representatives(c, spec, n, timeout_s, proof=None):
    ex, env = c.ex, c.env
    why = _communication(c, timeout_s)
    if why:
        return None, f"independence not established ({why})"
    if proof is not None:
        proof.append(Obligation(TITLE_GLOBAL, "races", "proved", INDEPENDENT, c.scope(), [], None,
                                time.perf_counter() - c.t0))
    plain = _sameness(c, ex)
    # the iteration a loop leaves in, where it may differ between CTAs, is a value of the CTA that
    # the cover pins per side (``_cover``)
    exits = {info.kx.decl().name() for info in ex.loops
             if info.kx is not None and z3.is_const(info.kx) and not z3.is_bv_value(info.kx)
             and not plain(info.kx.decl().name())}

    def same(name: str) -> bool:  # an elect.sync leader of the full mask: the same lane in every CTA
        return name in env.elect_full_mask or name in exits or name == MAPA or plain(name)

    conds, varies = _conditions(c, ex, same)
    if varies:
        return None, f"control may differ between clusters beyond %ctaid ({varies})"
    at_launch = Substitution(env.values_from(spec))
    conds = [z3.simplify(_one_leader(env, at_launch(f))) for f in conds]
    varying = {str(x) for x in env.ctaid} | exits  # what may differ between CTAs
    conds = [f for f in conds if not (z3.is_true(f) or z3.is_false(f)) and c.symbols(f) & varying]
    total = n[0] * n[1] * n[2]
    # the cover is complete on its own; the last cluster is there for the memory safety of the
    # ones not interpreted, unless z3 proves every access of every cluster in bounds
    unproved, suspect = prove_in_bounds(c, spec, timeout_s)
    reps = {(i % n[0], (i // n[0]) % n[1], i // (n[0] * n[1])) for i in ((0, total - 1) if unproved else (0,))}
    if suspect is not None:  # the cluster of a thread z3 could not keep in bounds: the run decides
        reps.add(tuple(x // y for x, y in zip(suspect, spec.cluster)))
    reps = _cover(c, env, conds, reps, same, SolverBudget(timeout_s), cluster=tuple(spec.cluster),
                  per_cta=frozenset(exits))
    if reps is None:
        return None, "independence not established (solver budget spent choosing representatives)"
    if len(reps) > MAX_REPS:
        return None, f"too many ctaid-dependent control paths (more than {MAX_REPS} representative clusters)"
    cl = spec.cluster
    origins = sorted((q[0] * cl[0], q[1] * cl[1], q[2] * cl[2]) for q in reps)
    return sorted(origins, key=lambda t: (t[2], t[1], t[0])), \
        ("no communication between clusters (proved); clusters agree with one of these on every synchronization; "
         + (NOT_IN_BOUNDS if unproved else IN_BOUNDS).format(unit="clusters"))


def _static_communication(module, kernel) -> str:
    """What the instructions alone show to communicate between CTAs, before any symbolic run: an
    atomic on global memory, or an asynchronous write to it (a TMA store, a bulk reduction)."""
    from kverify.semantics.ir.visit import reachable_instructions

    for ins in reachable_instructions(module, kernel):
        row = row_of(ins)
        if row is None:
            continue
        if is_atomic(ins) and space_of(ins) == "global":
            return f"a global atomic at {where(ins)} (inter-CTA communication)"
        if row.effect == "async" and any(space == "global" and slot.access in _ACCESS and slot.access != "load"
                                         and not (slot.access == "store" and _tensor_store(ins, op))
                                         for op, slot, space in _operand_slots(ins, row)):
            return f"{ins.opcode} at {where(ins)} writes global memory asynchronously (its footprint is not encoded)"
    return ""


def _tensor_store(ins, op) -> bool:
    """``op``, a global destination of ``ins``, is a tensor store's ``[tmap, {coords}]`` in tile
    mode: it writes the in-bounds elements of one box of the map at those coordinates
    (§9.7.9.25.5.1: ``.tile`` mode; im2col and scatter modes are not encoded)."""
    return isinstance(op, Addr) and bool(op.coords) and not any(
        m.startswith(("im2col", "tile::scatter4", "tile::gather4")) for m in ins.mods)


def _operand_slots(ins, row):
    """``(operand, slot, space)`` for each operand of ``ins``: its op-table slot (the last one
    repeats for a variadic tail) and, for a slot that accesses memory, its state space. A copy
    names its spaces in its modifiers in the order of its memory operands (``dst`` then ``src``);
    a row of one space names it in its ``space`` column."""
    if not row.operands:
        return
    spaces = iter([m for m in ins.mods if m in SPACES])
    for i, op in enumerate(ins.operands):
        slot = row.operands[min(i, len(row.operands) - 1)]
        yield op, slot, (next(spaces, row.space if row.space != "mods" else None) if slot.access in _ACCESS else None)


def _communication(c, timeout_s) -> str:
    """Why a cluster may affect another (module docstring, 1.); "" when none can."""
    ex = c.ex
    reasons = [r for rs in ex.reasons.values() for r in rs]
    if reasons:
        return reasons[0]
    if ex.unknown_region_write:
        return "a write whose buffer is unknown"
    accs = [a for a in ex.accesses if a.space == "global" and not is_false(z3.simplify(a.pc))]
    for a in accs:
        if a.strong or a.atomic:
            return f"a global atomic or strong access at {where(a.instr)} (inter-CTA communication)"
        if a.region is None:
            return f"the buffer of the global access at {where(a.instr)} is unknown"
    written = {a.region for a in accs if a.writes}
    stored = {}  # buffer -> the tensor stores into it
    for st in ex.tensor_stores:
        if st.region is None:
            return f"the global buffer {st.instr.opcode} at {where(st.instr)} writes is unknown"
        stored.setdefault(st.region, []).append(st)
    for ins, mode, region in ex.global_async:
        if mode == "write":
            return f"{ins.opcode} at {where(ins)} writes global memory asynchronously (its footprint is not encoded)"
        if region is None:
            return f"the global buffer {ins.opcode} at {where(ins)} reads is unknown"
        if region in written or region in stored:
            return f"{ins.opcode} at {where(ins)} reads {region.split(':', 1)[1]}, which the kernel writes"
    for region, sts in stored.items():  # (a buffer is one region: a pointer parameter's or a named one)
        a = next((a for a in accs if a.region == region), None)
        if a is not None:
            return (f"{where(a.instr)} accesses {region.split(':', 1)[1]}, which the tensor store at "
                    f"{where(sts[0].instr)} writes (a tensor store's footprint is compared with other tensor stores "
                    "only)")
        why = _boxes_overlap(c, sts, SolverBudget(timeout_s, label="symmetry.tensor-store"))
        if why:
            return why
    if not written:
        return ""
    accs.sort(key=lambda a: a.seq)
    found = _overlap(c, accs, SolverBudget(timeout_s, label="symmetry.global"))
    if found is None:
        return ""
    a, b, answer = found
    if answer == "sat":
        return (f"two threads may access the same global bytes, one writing (at {where(a.instr)} and "
                f"{where(b.instr)})")
    return f"the solver did not decide whether {where(a.instr)} and {where(b.instr)} touch the same global bytes"


def _boxes_overlap(c, sts, budget) -> str:
    """"" when no two instances of the tensor stores ``sts`` (of one buffer) write overlapping
    boxes -- two warps', one thread's at two sites or in two iterations, or two lanes' of one warp
    unless they copy the same bytes to the same box (one copy) -- else why not. A box's
    footprint is the in-bounds elements of ``[c_i, c_i + box_i)`` in each dimension i of the map
    (tile mode, traversal strides only thin it out), and the map sends distinct in-bounds
    coordinates to distinct bytes when each dimension's byte stride is at least the span of the
    ones inside it (checked: every map the launch gives, the same for all stores of the buffer).
    Two boxes of one map share a byte only if they overlap in every dimension:
    ``c_i < c'_i + box_i`` and ``c'_i < c_i + box_i`` (coordinates are signed 32-bit, compared
    without wrapping) -- the query, over two symbolic threads, every loop iteration. One thread's
    stores count too: where they overlap, what orders them (a wait_group) is the run's to see,
    and a CTA not interpreted is not run."""
    from kverify.semantics.memory_model.tma import TensorMap

    maps = []
    for st in sts:
        ins = st.instr
        try:
            m = launch_tensor_map(c.launch, st.tmap)
        except Exception as e:  # noqa: BLE001 - a map this cannot read is no proof
            return f"the tensor map of the store at {where(ins)} is not understood ({e})"
        if not isinstance(m, TensorMap):
            return f"the tensor store at {where(ins)} is not in tile mode"
        maps.append(m)
        if any(x is None for x in st.coords) or len(st.coords) != len(m.box):
            return f"the coordinates of the tensor store at {where(ins)} are not followed"
        span = m.element_size
        for d, stride in zip(m.shape, m.strides):  # innermost first: stride of dim i+1 vs span of 0..i
            span *= d
            if stride < span:
                return (f"the tensor map of the store at {where(ins)} has a byte stride ({stride}) below the span "
                        f"of the dimensions inside it ({span}): two coordinates may name one byte")
            span = stride
    first = maps[0]
    if any((m.dtype, m.shape, m.strides) != (first.dtype, first.shape, first.strides) for m in maps[1:]):
        return f"the tensor stores at {where(sts[0].instr)} and others write one buffer through different tensor maps"
    base = c.base()
    one_warp = mk_and(*c.same_cta(), c.same_warp)

    def wide(t):
        return z3.SignExt(64 - t.size(), t) if t.size() < 64 else t

    for i, a in enumerate(sts):
        for j in range(i, len(sts)):
            b = sts[j]
            # two instances of one store: another warp's, the same warp's in another iteration (one
            # thread's stores may be in flight together: a write-after-write the cover would not
            # compare), or another lane's copy of other bytes. The lanes of one warp that issue it
            # with the same coordinates and shared source make one copy of the same bytes
            # (CUTLASS's warp-wide TMA store; the interpreter performs it once).
            same_copy = (mk_and(*[c.b(x) == x for x in a.coords], c.b(a.src) == a.src) if a.src is not None
                         else z3.BoolVal(False))
            distinct = ([mk_or(mk_not(one_warp), *[k != c.b(k) for _, k in a.loops], mk_not(same_copy))]
                        if i == j else [])
            near = [mk_and(wide(x) < wide(c.b(y)) + box_b, wide(c.b(y)) < wide(x) + box_a)
                    for x, y, box_a, box_b in zip(a.coords, b.coords, maps[i].box, maps[j].box)]
            r, _ = c.solve(distinct + [a.pc, c.b(b.pc)] + near, budget, base=base)
            if r == "unsat":
                continue
            where_ab = f"the tensor stores at {where(a.instr)} and {where(b.instr)}"
            if r == "sat":
                return f"two stores may write overlapping boxes ({where_ab})"
            return f"the solver did not decide whether {where_ab} overlap"
    return ""


def _overlap(c, accs, budget):
    """``(a, b, "sat" | "unknown")`` for two global accesses that two distinct threads may make
    to overlapping bytes, one of them writing (or that the solver does not separate), else
    None. Accesses of one buffer whose addresses differ by constants (an unrolled epilogue's
    stores: one address plus each element's offset) form a family, under the conjuncts of the
    path condition all its members share (what one member alone tests, its element's bounds,
    is left out: more overlaps, never fewer). For two families the bytes overlap exactly when
    the difference ``E`` of their base addresses (thread B's minus thread A's) lies in one of
    the intervals the offsets and widths give, merged: one query per pair of families however
    many sites they have."""
    fams = []  # [region, base access, common path condition, [(access, offset)]]
    for a in accs:
        for f in fams:
            if f[0] == a.region:
                d = z3.simplify(a.addr - f[1].addr)
                if z3.is_bv_value(d):
                    f[3].append((a, d.as_signed_long()))
                    break
        else:
            fams.append([a.region, a, None, [(a, 0)]])
    for f in fams:  # the conjuncts every member's condition has (a member's own bounds test left out)
        common = None
        for a, _ in f[3]:
            mine = {x.get_id(): x for x in _conjuncts(a.pc)}
            common = mine if common is None else {i: x for i, x in common.items() if i in mine}
        f[2] = mk_and(*common.values())
    base = c.base()
    distinct = c.distinct_threads("global")
    for i, fa in enumerate(fams):
        for fb in fams[i:]:
            if fa[0] != fb[0]:
                continue
            spans = _spans(fa[3], fb[3])
            if not spans:
                continue
            e = c.b(fb[1].addr) - fa[1].addr
            near = mk_or(*[z3.ULE(e - lo, z3.BitVecVal(hi - lo, 64)) for lo, hi, _, _ in spans])
            with budget.capped(GROUP_S * RLIMIT_PER_SECOND):
                r, m = c.solve(distinct + [fa[2], c.b(fb[2]), near], budget, base=base)
            if r == "unsat":
                continue
            if r != "sat":
                return fa[1], fb[1], "unknown"
            ev = m.eval(e, model_completion=True).as_signed_long()
            hit = next(((x, y) for lo, hi, x, y in spans if lo <= ev <= hi), (fa[1], fb[1]))
            return hit[0], hit[1], "sat"
    return None


def _conjuncts(t):
    t = z3.simplify(t)
    return t.children() if z3.is_and(t) else [t]


def _spans(xs, ys):
    """Merged ``[lo, hi]`` ranges (with one pair of accesses each, for the message) of the base
    difference ``E`` at which an access of ``xs`` (thread A: offset ``ci``, width ``wi``) and one
    of ``ys`` (thread B) overlap, one of them writing: ``ci - cj - wj < E < ci - cj + wi``."""
    raw = sorted(((ci - cj - b.width + 1, ci - cj + a.width - 1, a, b)
                  for a, ci in xs for b, cj in ys if a.writes or b.writes), key=lambda t: t[:2])
    out = []
    for lo, hi, a, b in raw:
        if out and lo <= out[-1][1] + 1:
            out[-1][1] = max(out[-1][1], hi)
        else:
            out.append([lo, hi, a, b])
    return [tuple(x) for x in out]


def _one_leader(env, t):
    """``t`` with each full-mask ``elect.sync`` leader chosen as in CTA (0, 0, 0): the engine
    leaves the leader open per CTA, warp and iteration, but the ISA elects the same leader for
    the same membermask every time (§9.7.13.9), so two CTAs whose warps run alike elect alike."""
    subs = []
    for name in env.elect_full_mask:
        f = env.uf_decls.get(name)
        if f is None:
            continue
        args = [z3.BitVecVal(0, 64)] * 3 + [z3.Var(i, z3.BitVecSort(64)) for i in range(3, f.arity())]
        subs.append((f, f(*args)))
    return z3.substitute_funs(t, *subs) if subs else t


def _conditions(c, ex, same):
    """``(terms, "")``: every condition and value of the module docstring's 2. (thread A's
    terms), or ``(_, why)`` where one of them reads something that may differ between clusters
    besides ``%ctaid`` (3.)."""
    items = []  # (term, where, data_ok)
    for s in ex.syncs:
        items += [(s.pc, s.loc, False), (s.exited, s.loc, False)]
    for info in ex.loops:
        items += [(info.cont_pc, info.name, False), (info.trip, info.name, False)]
    items += [(t, None, False) for t in ex.traps]
    for a in ex.accesses:
        if a.space == "global":
            items.append((a.pc, a.instr.loc, True))  # its address and bytes: 1.
        else:
            items += [(a.pc, a.instr.loc, False), (a.addr, a.instr.loc, False)]
    for ins, pc, terms in ex.effects:
        items += [(pc, ins.loc, False)] + [(t, ins.loc, False) for t in terms]
    for ins, pc, addr in ex.local_sites:  # local memory: bounds and initialization are the run's, per CTA
        if addr is None:
            return [], f"a local-memory address at {where(ins)} is not followed (it may differ between clusters)"
        items += [(pc, ins.loc, False), (addr, ins.loc, False)]
    out, seen = [], set()
    for t, loc, data_ok in items:
        if t is None or t.get_id() in seen:
            continue
        seen.add(t.get_id())
        t = z3.simplify(t)  # (a value merged in from a path no thread takes drops out)
        if z3.is_true(t) or z3.is_false(t):
            continue
        if not data_ok and any(not same(n) for n in c.symbols(t)):
            at = where(loc) if not isinstance(loc, str) else f"loop {loc}"
            return out, f"a condition or operand at {at} depends on loaded data or an approximated value"
        out.append(t)
    return out, ""
