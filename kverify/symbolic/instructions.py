"""Instruction semantics of the symbolic per-thread engine: what one instruction does to
thread A's state -- value semantics over the Z3 domain (``kverify.semantics.values``),
memory accesses recorded as ``Access`` (space, mode, strength, byte address, width, path
condition, epoch), ``bar.sync 0`` as a barrier instance that advances the epoch (and a
full-mask ``bar.warp.sync`` as one of the warp's lanes, see ``records.CTA_BARRIER_STEP``), exits,
``elect.sync`` and pure calls. What the engine does not model leaves a *reason* (the
obligation cannot be proved) and, where it may order accesses, an unmodelled-ordering note
(a race found cannot be claimed). Which rows take which path is read from the op table
(:mod:`kverify.symbolic.families`).

PTX ISA (9.0): ld, st (§9.7.9.8, §9.7.9.10), atom, red (§9.7.13.5, §9.7.13.6),
§9.7.13.1 bar/barrier, §9.7.13.2 bar.warp.sync, §9.7.13.9 elect.sync, §9.7.12 call/ret/exit/trap; §8 memory
consistency model (morally strong accesses).
"""
from __future__ import annotations

import z3

from kverify.semantics.ir.nodes import Addr, Imm, Instr, PairOp, Reg, Sym, VecOp, where
from kverify.semantics.ir.optable import ALIGNED_COLLECTIVE, ATOMOP, OPS, space_of
from kverify.semantics.ir.types import SCALAR_BITS
from kverify.semantics.values import (FAMILIES, TWO_TYPES, Z3Domain, evaluate, is_float, source_widths,
                                      unspecified_at_zero)

from .families import (NO_ORDERING, UNCOUNTED_ORDERING, deref, handler, is_async, is_atomic,
                       is_unmodelled_memory, matrix_rows, operand)
from .provenance import is_local_region
from .records import CTA_BARRIER_STEP, WARP_BARRIER_STEP, Access, AtomicResult, State, SyncSite
from .terms import TRUE, Substitution, fit, is_false, is_true, mk_and, mk_ite, mk_not, mk_or

_D = Z3Domain()


class Instructions:
    """Mixin of :class:`kverify.symbolic.executor.Executor`: one method per kind of
    instruction (see the module docstring)."""

    def instr(self, ins: Instr, st: State) -> State:
        guard = TRUE
        if ins.guard is not None:
            guard = self.cond(st, ins.guard.reg, ins.guard.negated)
            if is_false(guard):
                return st
        if not ins.supported:
            self.reason(f"unsupported instruction {ins.opcode} at {where(ins)}", ordering=True)
            self.havoc_dests(st, ins, guard)
            return st
        if is_async(ins):
            return self.async_instr(ins, st, guard)
        return self.plain_instr(ins, st, guard)

    def note_address(self, region):
        """Remember that the parameter of ``region`` (``param:<name>``) is used as an address:
        a pointer, whose value a counterexample does not print (``Env.symbolic_param_values``)."""
        if region and region.startswith("param:"):
            self.address_params.add(region.split(":", 1)[1])

    def note_operand_addresses(self, ins: Instr, st: State):
        """``note_address`` for every address operand of ``ins`` (asynchronous copies)."""
        for op in ins.operands:
            if isinstance(op, Addr) and op.base is not None:
                self.note_address(self.read(st, op.base, None)[1])

    def async_instr(self, ins: Instr, st: State, guard) -> State:
        """Asynchronous copies, mbarriers, wgmma: not modelled here (an extension point
        for checkers that record them)."""
        self.note_operand_addresses(ins, st)
        self.reason(f"{ins.opcode} at {where(ins)}: asynchronous copies, mbarriers and "
                    "wgmma are not modelled by the classic race check yet", ordering=True)
        self.havoc_dests(st, ins, guard)
        return st

    def plain_instr(self, ins: Instr, st: State, guard) -> State:
        row = OPS[ins.op]
        if row.operands and any(slot.name == "membermask" for slot in row.operands):
            # which lanes a warp collective names: a value CTA symmetry compares (``masks``)
            masks = [self.read(st, op, 32)[0] if not isinstance(op, Imm) else z3.BitVecVal(op.value & 0xFFFFFFFF, 32)
                     for op, slot in zip(ins.operands, row.operands) if slot.name == "membermask"]
            self.masks.append(SyncSite("collective", ins, ins.loc, mk_and(st.pc, guard), st.exited, TRUE,
                                       tuple(self.loop_stack), "warp", self.seq_of(ins), tuple(masks)))
        elif row.sync in ALIGNED_COLLECTIVE:
            # a .sync.aligned collective with no membermask (mma, ldmatrix, ...: the warp; setmaxnreg:
            # the warpgroup): every thread of its group executes it, as a full mask says
            self.masks.append(SyncSite("collective", ins, ins.loc, mk_and(st.pc, guard), st.exited, TRUE,
                                       tuple(self.loop_stack), ALIGNED_COLLECTIVE[row.sync], self.seq_of(ins),
                                       (z3.BitVecVal(0xFFFFFFFF, 32),)))
        if is_unmodelled_memory(ins):
            self.reason(f"{ins.opcode} at {where(ins)}: per-lane addresses of this collective "
                        "memory access are not modelled",
                        "shared" if "shared" in " ".join(ins.mods) else None)
            self.havoc_dests(st, ins, guard)
            return st
        h = handler(ins)
        if h is not None:
            return getattr(self, h)(ins, st, guard)
        if row.sync == "bar":
            return self.barrier(ins, st, guard)
        if row.effect == "memory":
            st = self.memory(ins, st, guard)
            if matrix_rows(ins) and self.dests(ins):  # every lane receives fragments, not only those naming rows
                self.havoc_dests(st, ins, guard, ins.op)
            return st
        if row.sync == "bar.warp.sync" and _full_mask(operand(ins, "membermask")):
            return self.warp_barrier(ins, st, guard)
        if row.sync in UNCOUNTED_ORDERING:
            self.unmodelled(f"{UNCOUNTED_ORDERING[row.sync]} ({ins.opcode} at {where(ins)})")
            return st
        if row.effect in ("nop", "control") or row.sync in NO_ORDERING:
            return st
        if row.collective == "shuffle" and self.shuffle(ins, st, guard):
            return st
        if row.semantics not in FAMILIES and row.semantics != "cvta":
            self.havoc_dests(st, ins, guard, ins.op)
            return st
        return self.alu(ins, st, guard)

    def exit(self, ins: Instr, st: State, guard) -> State:
        """``ret`` / ``exit`` of the kernel: the thread leaves (it takes part in no later
        barrier)."""
        g = mk_and(st.pc, guard)
        return State(mk_and(st.pc, mk_not(guard)), st.regs, st.epoch, mk_or(st.exited, g))

    def trap(self, ins: Instr, st: State, guard) -> State:
        """``trap``: nothing after it runs on this path."""
        self.traps.append(mk_and(st.pc, guard))
        return State(mk_and(st.pc, mk_not(guard)), st.regs, st.epoch, st.exited)

    def shuffle(self, ins: Instr, st: State, guard) -> bool:
        """``shfl.sync.idx.b32 d, a, lane, 31, 0xffffffff`` with constant lane, clamp and mask, in a
        one-dimensional block of whole warps, of a value that reads no per-thread symbol but
        ``%tid.x`` (§9.7.9.6: lane ``lane`` of the thread's warp supplies ``a``): ``d`` is ``a`` at
        ``%tid.x`` with its low five bits replaced by ``lane`` -- the warp-index broadcast
        (``__shfl_sync(~0u, threadIdx.x / 32, 0)``). False when the form is another (the
        caller approximates the result)."""
        ops = ins.operands
        env = self.env
        if "idx" not in ins.mods or len(ops) < 5 or env.block is None or env.block[1:] != (1, 1) \
                or env.block[0] % 32:
            return False
        consts = [z3.simplify(self.read(st, o, 32)[0]) for o in ops[2:5]]
        if not all(z3.is_bv_value(x) for x in consts):
            return False
        lane, clamp, mask = (x.as_long() for x in consts)
        if clamp & 0x1FFF != 31 or mask != 0xFFFFFFFF:
            return False
        a = self.read(st, ops[1], 32)[0]
        if a is None or z3.is_bool(a):
            return False
        tx = env.tid[0]
        per_thread = {x.decl().name() for x, _ in env.pairs}
        if any(n in per_thread and n != str(tx) and not n.startswith("ctaid.") for n in self._syms(a)):
            return False
        lane = z3.BitVecVal(lane & 31, 32)
        v = z3.simplify(z3.substitute(a, (tx, (tx & z3.BitVecVal(~31 & 0xFFFFFFFF, 32)) | lane)))
        d = ops[0]
        if isinstance(d, PairOp):  # d|p: p (the source lane is in range) holds
            if isinstance(d.second, Reg):
                self.write(st, d.second.name, (z3.BoolVal(True), None), guard)
            d = d.first
        if isinstance(d, Reg):
            self.write(st, d.name, (fit(v, self.widths.get(d.name, 32)), None), guard)
        return True

    def alu(self, ins: Instr, st: State, guard) -> State:
        """An instruction with value semantics, over the Z3 domain; the operand widths follow
        its semantics family (``row.semantics``)."""
        fam, mods = OPS[ins.op].semantics, ins.mods
        types = ins.types()
        ops = ins.operands
        if not types:
            self.havoc_dests(st, ins, guard, fam)
            return st
        if fam == "cvta":
            d = ops[0]
            ty = types[-1]
            w = SCALAR_BITS[ty]
            t, region = self.read(st, ops[1], w)
            if "to" not in mods and any(m in ("shared", "shared::cta") for m in mods):
                region = "shared" if region in ("shared", None) else region
            if isinstance(d, Reg):
                self.write(st, d.name, (t, region), guard)
            return st
        if fam in TWO_TYPES:
            if len(types) < 2:
                self.havoc_dests(st, ins, guard, fam)
                return st
            ty = (types[0], types[1])
            fl = is_float(types[0]) or is_float(types[1])
        else:
            ty = types[-1]
            fl = is_float(ty)
        srcw = source_widths(fam, ty, mods, len(ops) - 1)
        bitwise = fam in ("mov", "selp") or (fam in ("and", "or", "xor", "not") and not fl)
        if fl and not bitwise:
            self.havoc_dests(st, ins, guard, f"f.{fam}")
            return st
        args, regions = [], []
        for o, w in zip(ops[1:], srcw):
            t, r = self.read(st, o, w)
            args.append(t)
            regions.append(r)
        if fam == "lop3":
            imm = ops[4]
            if not isinstance(imm, Imm):
                self.havoc_dests(st, ins, guard, fam)
                return st
            args.append(imm.value)
        if fam in ("addc", "subc", "madc") or (fam in ("add", "sub", "mad") and "cc" in mods):
            self.havoc_dests(st, ins, guard, fam)
            st.regs.pop("%cc", None)
            return st
        if fam == "mov" and isinstance(ops[1], VecOp) and isinstance(ops[0], Reg):
            # a vector pack (mov.b64 %rd, {%r1, %r2}): element 0 in the low bits (§9.7.9.10)
            ew = SCALAR_BITS[ty] // len(ops[1].elems)
            parts = [fit(self.read(st, e, ew)[0], ew) for e in ops[1].elems]
            whole = z3.Concat(*reversed(parts)) if len(parts) > 1 else parts[0]
            self.write(st, ops[0].name, (whole, None), guard)
            return st
        if fam == "mov" and len(args) == 1 and isinstance(ops[0], Reg):
            w = 1 if ty == "pred" else SCALAR_BITS[ty]
            self.write(st, ops[0].name, (fit(args[0], w), regions[0]), guard)
            return st
        if fam == "mov" and isinstance(ops[0], VecOp):
            whole = args[0]
            n = len(ops[0].elems)
            ew = whole.size() // n
            for i, e in enumerate(ops[0].elems):
                if isinstance(e, Reg):
                    self.write(st, e.name, (z3.Extract(ew * (i + 1) - 1, ew * i, whole), None), guard)
            return st
        try:
            res = evaluate(_D, fam, ty, mods, *args)
        except Exception:  # noqa: BLE001 - any form the semantics does not take
            self.havoc_dests(st, ins, guard, fam)
            return st
        if unspecified_at_zero(fam, ty) and not isinstance(res, tuple):
            # an integer division by zero yields an unspecified value (§9.7.1.8 div, §9.7.1.9 rem):
            # any value, approximate -- not SMT-LIB's x/0 = all ones, x%0 = x, which a proof could rest on
            b = args[1]
            if not (z3.is_bv_value(b) and b.as_long() != 0):
                w = res.size()
                res = z3.If(fit(b, w) == 0, self.approx(f"{fam}0.{ins.loc.ptx_line}", w), res)
        d = ops[0]
        region = self.region_of(fam, mods, regions)
        if fam == "selp" and region == "?" and len(args) == 3 and z3.is_bool(args[2]):
            region = self.select_region(args[2], regions[0], regions[1])  # c ? A : B (``provenance``)
        if isinstance(res, tuple):
            if isinstance(d, PairOp):
                for x, v in zip((d.first, d.second), res):
                    if isinstance(x, Reg):
                        self.write(st, x.name, (v, None), guard)
            elif isinstance(d, Reg):
                self.write(st, d.name, (res[0], None), guard)
            return st
        if isinstance(d, Reg):
            self.write(st, d.name, (res, region), guard)
        else:
            self.havoc_dests(st, ins, guard, fam)
        return st

    @staticmethod
    def region_of(fam, mods, regions):
        """Pointer provenance: a pointer plus or minus an integer keeps its region. A value read
        out of a by-value parameter the walk could not follow (``?struct:``) keeps that mark
        only through moves and pointer arithmetic on it alone; anywhere else it is no pointer."""
        if any((r or "").startswith("?struct:") for r in regions):
            plain = [None if (r or "").startswith("?struct:") else r for r in regions]
            if any(r is not None for r in plain) or fam not in ("mov", "cvt", "cvta", "add", "sub"):
                regions = plain
        rs = [r for r in regions if r is not None]
        if not rs:
            return None
        if fam in ("mov", "cvt", "cvta"):
            return regions[0]
        if fam == "add" and len(rs) == 1:
            return rs[0]
        if fam == "sub" and regions[0] is not None and regions[1] is None:
            return regions[0]
        if fam == "mad" and len(regions) >= 3 and regions[2] is not None and regions[:2] == [None, None]:
            return regions[2]
        if fam == "selp" and regions[0] == regions[1]:
            return regions[0]
        return "?"

    # ------------------------------------------------------------------ memory
    def memory(self, ins: Instr, st: State, guard) -> State:
        op, mods = ins.op, ins.mods
        if is_false(z3.simplify(mk_and(st.pc, guard))):  # a path no thread takes: no access, no reason
            self.havoc_dests(st, ins, guard, op)
            return st
        space = space_of(ins)
        slot, mode = deref(ins)
        ops = ins.operands
        addr_op = ops[slot] if slot < len(ops) else None
        atomic = is_atomic(ins)
        types = ins.types()
        ty = types[-1] if types else "b32"
        vec = next((int(m[1:]) for m in mods if m in ("v2", "v4", "v8")), 1)
        width = max(1, SCALAR_BITS.get(ty, 32) // 8) * vec
        rows = matrix_rows(ins)
        if rows:  # ldmatrix / stmatrix: the thread's address names a row of 16 bytes (lanes below ``rows``)
            width = 16
            if rows < 32:
                guard = mk_and(guard, z3.ULT(self.env.linear_tid() & 31, rows))
        if space in ("param", "param::entry", "param::func"):
            if mode == "read":
                self.load_param(ins, st, guard)
            elif isinstance(addr_op, Addr) and isinstance(addr_op.base, Sym):
                # a call's argument or a function's result (``calls``: pseudo-registers name+offset)
                name, off = addr_op.base.name, addr_op.base.offset + addr_op.offset
                self.store_param(st, ins, name, off, guard)
                if off == 0:  # what a marker call (``ir.gpuverify``) passes
                    val = next((o for i, o in enumerate(ops) if i != slot), None)
                    t = self.read(st, val, SCALAR_BITS.get(ty, 32))[0] if val is not None else None
                    self.call_params[name] = t
            elif mode != "read":
                # a store through a .param address held in a register: which variable it changes
                # is not followed, so no stored piece is known any more
                for k in [k for k in st.regs if "+" in k]:
                    del st.regs[k]
            return st
        if space == "const" and mode == "read" and isinstance(addr_op, Addr) and addr_op.base is not None:
            # a __constant__ table of function pointers: its initializer (else any value)
            t, region = self.read(st, addr_op.base, None)
            d = ops[0]
            if isinstance(d, Reg) and t is not None and not z3.is_bool(t) and vec == 1 and region in self.fn_tables():
                w = self.widths.get(d.name, 8 * width)
                v = self.initial_value(region, z3.simplify(fit(t, 64) + addr_op.offset), 8 * width,
                                       self.approx(f"const.{d.name}", 8 * width))
                self.write(st, d.name, (fit(v, w), None), guard)
                return st
        if space == "local":
            return self.local_access(ins, st, guard, addr_op, mode, atomic, width, vec, slot)
        if space == "const":
            self.havoc_dests(st, ins, guard, f"{space}")
            return st
        if space == "shared::cluster":
            self.reason(f"{ins.opcode} at {where(ins)}: distributed shared memory is not modelled")
            self.havoc_dests(st, ins, guard, op)
            return st
        if not isinstance(addr_op, Addr):
            self.reason(f"{ins.opcode} at {where(ins)}: address operand not understood")
            self.havoc_dests(st, ins, guard, op)
            return st
        if addr_op.base is None:
            base_t, region = z3.BitVecVal(0, 64), None
        else:
            base_t, region = self.read(st, addr_op.base, None)
            if base_t is None or z3.is_bool(base_t):
                base_t, region = self.approx("addr", 64), None
        if space == "generic" and is_local_region(region):
            return self.local_access(ins, st, guard, addr_op, mode, atomic, width, vec, slot)
        if region is not None and region.startswith("?sel:"):
            # a pointer selected between buffers: one access per case, under its condition
            for cond, r in self.region_cases(region):
                g = mk_and(guard, cond)
                if not is_false(z3.simplify(mk_and(st.pc, g))):
                    st = self.access_through(ins, st, g, space, base_t, r, addr_op, mode, atomic, width, vec, slot)
            return st
        return self.access_through(ins, st, guard, space, base_t, region, addr_op, mode, atomic, width, vec, slot)

    def access_through(self, ins: Instr, st: State, guard, space, base_t, region, addr_op, mode, atomic, width,
                       vec, slot) -> State:
        """The access of ``memory`` through an address ``base_t`` (+ the operand's offset) into
        ``region``, in state space ``space`` (``generic`` resolved here)."""
        op, mods, ops = ins.op, ins.mods, ins.operands
        pc = mk_and(st.pc, guard)
        self.note_address(region)
        if space == "generic" and region is not None and region.startswith("pstruct:") and mode == "read":
            # a generic load from a __grid_constant__ struct parameter (cvta.param of its address)
            self.load_param(ins, st, guard)
            return st
        if region is not None and region.startswith("?struct:"):
            pname, _, off = region.split(":", 1)[1].partition("@")
            if off:  # an 8-byte slot of the struct used as an address (``struct_slots``)
                self.struct_addresses.add((pname, int(off)))
            self.reason(f"{ins.opcode} at {where(ins)}: the address is a pointer read out of by-value parameter "
                        f"{self.param_label(pname)} that the launch spec does not give as a struct pointer field (raw "
                        f"bytes, or an offset the walk cannot fix): not followed", "global")
            self.havoc_dests(st, ins, guard, op)
            if mode != "read":
                self.unknown_region_write = True
            return st
        if space == "generic":
            if region == "shared":
                space = "shared"
            elif region is not None and (region.startswith("param:") or region.startswith("var:")):
                space = "global"
                self.note_once("generic addresses derived from a kernel pointer parameter are taken "
                               "to point to global memory")
            else:
                self.reason(f"{ins.opcode} at {where(ins)}: the state space of this generic "
                            "address cannot be determined")
                self.havoc_dests(st, ins, guard, op)
                if mode != "read":
                    self.unknown_region_write = True
                    self.forget_local(st)  # it may be the thread's local memory
                return st
        elif space in ("shared::cta",):
            space = "shared"
        elif space == "global":
            pass
        else:
            self.reason(f"{ins.opcode} at {where(ins)}: state space {space} not modelled")
            self.havoc_dests(st, ins, guard, op)
            return st
        if space == "shared":
            addr = fit(base_t, 32) + addr_op.offset
            region = "shared"
        else:
            addr = fit(base_t, 64) + addr_op.offset
            if region is None or region == "?" or region == "shared" or region.startswith("pstruct:"):
                self.reason(f"{ins.opcode} at {where(ins)}: the global buffer this address points "
                            "into cannot be determined", "global")
                region = None
        addr = z3.simplify(addr)
        # morally strong (PTX memory model §8): atomics, and ld/st with .volatile or with a
        # .relaxed/.acquire/.release semantics and a scope; the pair check compares scopes
        strong = atomic or "volatile" in mods or (
            bool({"relaxed", "acquire", "release", "acq_rel", "sc"} & set(mods))
            and any(m in ("cta", "cluster", "gpu", "sys") for m in mods))
        if {"acquire", "release", "acq_rel", "sc"} & set(mods):
            self.unmodelled(f"release/acquire synchronization ({ins.opcode} at {where(ins)})")
        if mode != "read":
            if region is None:
                self.unknown_region_write = True
            else:
                self.written_regions.add(region)
        value = None
        collective = bool(matrix_rows(ins))
        if mode == "write" and not atomic and vec == 1 and slot + 1 < len(ops) and not collective:
            try:
                value = self.read(st, ops[slot + 1], 8 * width)[0]
            except Exception:  # noqa: BLE001 - no value term: the race stays an error
                value = None
            if value is not None and (z3.is_bool(value) or value.size() != 8 * width):
                value = None
        acc = Access(self.seq_of(ins), ins, space, mode, strong, atomic, region, addr, width,
                     pc, st.epoch, tuple(self.loop_stack), value, collective)
        self.accesses.append(acc)
        # the loaded value: global memory is a function of the address, the same for both
        # threads (an input) when the kernel never writes that buffer -- decided in run(),
        # until then each load is tagged; anything else is a fresh approximate value
        dests = self.dests(ins)
        if dests:
            for i, r in enumerate(dests):
                w = self.widths.get(r, 32)
                if mode == "read" and space == "global" and region is not None:
                    eb = width // max(1, len(dests))
                    tag = z3.BitVec(f"ldtag{len(self.loads)}", 8)
                    f = self.env.uf_mem(region, w)
                    v = f(addr + i * eb, tag)
                    self.loads.append((tag, v, region, w, acc.seq))
                    v = self.initial_value(region, addr + i * eb, w, v)
                else:
                    v = self.approx(f"mem{acc.seq}.{r}", w)
                    if atomic and space == "global" and len(dests) == 1 and vec == 1:
                        self.atomic_results.append(self.atomic_result(ins, st, acc, v, slot))
                self.write(st, r, (v, None), guard)
        return st

    def atomic_result(self, ins: Instr, st: State, acc, v, slot: int):
        """What ``verifier.races.atomics`` needs of an atomic's returned value ``v``: its operation
        (the ``atom`` row's operation modifier) and its ``b`` operand (after the address)."""
        op = next((m for m in ins.mods if m in ATOMOP), None)
        ops = ins.operands
        operand = None
        if slot + 1 < len(ops):
            try:
                t = self.read(st, ops[slot + 1], v.size())[0]
            except Exception:  # noqa: BLE001 - an operand not understood: no operand term
                t = None
            if t is not None and not z3.is_bool(t) and t.size() == v.size():
                operand = z3.simplify(t)
        return AtomicResult(acc, v, op, operand)

    def fn_tables(self) -> dict:
        """``{"var:<name>": VarDecl}`` of the module's global and constant variables whose
        initializer names a function: tables of function pointers (``__device__ f_t t[] = {f,
        g};``), whose loads give the initial contents so that a call through them can dispatch."""
        if self._fn_tables is None:
            self._fn_tables = {}
            for v in tuple(self.env.module.vars) + tuple(self.kernel.vars):
                init = v.init or ()
                n = 1
                for x in v.dims:
                    n *= x or 0
                if v.space in ("global", "const") and any(isinstance(x, Sym) and x.name in self.func_addr
                                                         for x in init) and len(init) == n:
                    self._fn_tables[f"var:{v.name}"] = v
        return self._fn_tables

    def initial_value(self, region, addr, width: int, other):
        """A load of ``width`` bits at ``addr`` from a table of function pointers (``fn_tables``):
        the initializer's element at that address (a function's address, an integer), ``other``
        anywhere else. The run then assumes the kernel does not write the table (``run`` checks)
        and that the host did not change it before the launch (a note)."""
        v = self.fn_tables().get(region)
        if v is None or not hasattr(v.type, "bits") or v.type.bits != width:
            return other
        base = z3.BitVec(f"gvar.{v.name}", 64)
        out = other
        for i in reversed(range(len(v.init))):
            x = v.init[i]
            if isinstance(x, Sym):
                if x.name not in self.func_addr:
                    continue
                val = self.func_addr[x.name] + x.offset
            else:
                val = x
            out = mk_ite(addr == base + i * (width // 8), z3.BitVecVal(val & ((1 << width) - 1), width), out)
        self.init_reads.add(region)
        self.note_once(f"the table of function pointers {v.name} holds its initializer (the host does not write it "
                       "before the launch)")
        return out

    def unmodelled(self, msg):
        if msg not in self.unmodelled_sync:
            self.unmodelled_sync.append(msg)

    def note_once(self, msg):
        if msg not in self.notes:
            self.notes.append(msg)

    def load_param(self, ins: Instr, st: State, guard):
        a = ins.operands[1]
        d = ins.operands[0]
        name = a.base.name if isinstance(a, Addr) and isinstance(a.base, Sym) else None
        if isinstance(d, Reg) and name in self.env.params and a.offset == 0 and a.base.offset == 0:
            term, p = self.env.params[name]
            w = self.widths.get(d.name, term.size())
            region = f"param:{p.source_name or p.name}" if p.type.bits == 64 else None
            self.write(st, d.name, (fit(term, w), region), guard)
            return
        if isinstance(a, Addr) and isinstance(a.base, Sym) and self.param_read(ins, st, guard, a):
            return
        got = self.struct_field(ins, st, a) if isinstance(a, Addr) else None
        if got is not None:
            ty = (ins.types() or ["b32"])[-1]
            for e, (term, region) in zip(list(d.elems) if isinstance(d, VecOp) else [d], got):
                if not isinstance(e, Reg):
                    continue
                w = self.widths.get(e.name, 32)
                if term.size() < w:
                    term = z3.SignExt(w - term.size(), term) if ty.startswith("s") else z3.ZeroExt(w - term.size(), term)
                self.write(st, e.name, (fit(term, w), region), guard)
            return
        src = self._by_value_source(st, a) if isinstance(a, Addr) else None
        if src is not None:
            # a value read out of a by-value parameter the walk cannot follow: if it is used as
            # an address, the access says so (``memory``) instead of a generic "cannot be determined";
            # an 8-byte load at an offset the walk fixes names its slot (``struct_slots``)
            pname, off = src
            ty = (ins.types() or ["b32"])[-1]
            vec = next((int(m[1:]) for m in ins.mods if m in ("v2", "v4", "v8")), 1)
            nbytes = max(1, SCALAR_BITS.get(ty, 32) // 8)
            self.struct_reads.append((pname, off, nbytes * vec))
            elems = list(d.elems) if isinstance(d, VecOp) else [d]
            for i, e in enumerate(elems):
                if not isinstance(e, Reg):
                    continue
                w = self.widths.get(e.name, 32)
                slot = f"@{off + i * nbytes}" if off is not None and nbytes == 8 else ""
                self.write(st, e.name, (self.approx(f"param.{e.name}", w), f"?struct:{pname}{slot}"), guard)
            return
        tag = "param"
        if name in self.marker_rets:  # the result of an intrinsic kverify does not evaluate
            tag = f"gv{self.marker_rets[name]}"
        self.havoc_dests(st, ins, guard, tag)

    def param_read(self, ins: Instr, st: State, guard, a: Addr) -> bool:
        """``ld.param`` of a ``.param`` variable a call or a function stored into (a function's
        formal, a call's result: ``calls``); False when nothing was stored there."""
        d = ins.operands[0]
        name, off = a.base.name, a.base.offset + a.offset
        if not any(k.startswith(f"{name}+") for k in st.regs):
            return False
        ty = (ins.types() or ["b32"])[-1]
        w = SCALAR_BITS.get(ty, 32)
        elems = list(d.elems) if isinstance(d, VecOp) else [d]
        for i, e in enumerate(elems):
            if not isinstance(e, Reg):
                continue
            got = self.load_param_piece(st, name, off + i * (w // 8), w // 8)
            dw = self.widths.get(e.name, w)
            if got is None:
                self.write(st, e.name, (self.approx(f"param.{e.name}", dw), None), guard)
                continue
            term, region = got
            if term.size() < dw:
                term = z3.SignExt(dw - term.size(), term) if ty.startswith("s") else z3.ZeroExt(dw - term.size(), term)
            self.write(st, e.name, (fit(term, dw), region), guard)
        return True

    def _by_value_source(self, st: State, a: Addr):
        """``(PTX name, byte offset or None)`` of the by-value (``.b8`` array) kernel parameter a
        ``.param`` address reads from, if any."""
        off = None
        if isinstance(a.base, Sym):
            name = a.base.name
            off = a.base.offset + a.offset
        elif isinstance(a.base, Reg):
            t, region = self.read(st, a.base, None)
            name = region.split(":", 1)[1] if (region or "").startswith("pstruct:") else None
            if name is not None and t is not None and not z3.is_bool(t):
                o = z3.simplify(fit(t, 64) - z3.BitVec(f"paramaddr.{name}", 64) + a.offset)
                off = o.as_signed_long() if z3.is_bv_value(o) else None
        else:
            return None
        p = next((p for p in self.kernel.params if p.name == name and p.array), None)
        if p is None:
            return None
        return p.name, (off if off is not None and 0 <= off < p.size else None)

    def param_label(self, pname: str) -> str:
        """The name a message gives kernel parameter ``pname`` (its CUDA name when known)."""
        p = next((p for p in self.kernel.params if p.name == pname), None)
        return (p.source_name or p.name) if p is not None else pname

    def struct_field(self, ins: Instr, st: State, a: Addr):
        """``[(value, region)]``, one per element, of a (vector) load from a by-value struct
        parameter at an offset the walk knows, from the launch's fields (``SymEnv.struct_load``);
        else ``None`` (the destination is then havocked, and a pointer read that way points
        nowhere known)."""
        if isinstance(a.base, Sym):
            if a.base.name not in self.env.struct_fields:
                return None
            name, off = a.base.name, a.base.offset + a.offset
        else:
            t, region = self.read(st, a.base, None)
            if t is None or z3.is_bool(t) or not (region or "").startswith("pstruct:"):
                return None
            name = region.split(":", 1)[1]
            o = z3.simplify(fit(t, 64) - z3.BitVec(f"paramaddr.{name}", 64) + a.offset)
            if not z3.is_bv_value(o):
                return None
            off = o.as_long()
        ty = (ins.types() or ["b32"])[-1]
        vec = next((int(m[1:]) for m in ins.mods if m in ("v2", "v4", "v8")), 1)
        if off < 0:
            return None
        n = max(1, SCALAR_BITS.get(ty, 32) // 8)
        got = [self.env.struct_load(name, off + i * n, n) for i in range(vec)]  # a vector load: each element
        return None if any(g is None for g in got) else got

    # ------------------------------------------------------------------ barriers
    def barrier(self, ins: Instr, st: State, guard) -> State:
        mods = set(ins.mods)
        ops = ins.operands
        kind = "arrive" if "arrive" in mods else ("red" if "red" in mods else "sync")
        if kind == "red":  # bar.red.op d, a{, b}, {!}c
            ops = ops[1:-1]
        bid = ops[0] if ops else Imm(0)
        if not isinstance(bid, Imm):
            self.reason(f"{ins.opcode} at {where(ins)}: barrier id in a register is not modelled",
                        ordering=True)
            self.havoc_dests(st, ins, guard, "bar")
            return st
        if bid.value != 0:
            self.unmodelled(f"named barrier {bid.value} ({ins.opcode} at {where(ins)})")
            if kind == "red":
                self.havoc_dests(st, ins, guard, "bar")
            return st
        count = ops[1] if len(ops) > 1 else None
        if kind == "arrive":
            self.reason(f"{ins.opcode} at {where(ins)}: bar.arrive on barrier 0 is not modelled",
                        ordering=True)
            return st
        if count is not None:
            full = None
            if self.env.block is not None:
                full = self.env.block[0] * self.env.block[1] * self.env.block[2]
            if not (isinstance(count, Imm) and full is not None and count.value == full):
                self.reason(f"{ins.opcode} at {where(ins)}: barrier 0 with a thread count that "
                            "is not the whole CTA is not modelled", ordering=True)
                return st
        if kind == "red":
            self.havoc_dests(st, ins, guard, "bar")
        self.cta_barrier_count += 1
        return self._count_barrier(ins, st, guard, "cta", CTA_BARRIER_STEP)

    def warp_barrier(self, ins: Instr, st: State, guard) -> State:
        """``bar.warp.sync`` with every lane in the mask (``__syncwarp()``, §9.7.13.2): a
        barrier of the 32 lanes of the warp, counted like ``bar.sync`` but ordering only
        threads of one warp."""
        self.warp_barriers = True
        return self._count_barrier(ins, st, guard, "warp", WARP_BARRIER_STEP)

    def _count_barrier(self, ins: Instr, st: State, guard, scope: str, step: int) -> State:
        pc = mk_and(st.pc, guard)
        self.syncs.append(SyncSite("barrier", ins, ins.loc, pc, st.exited, TRUE, tuple(self.loop_stack), scope,
                                   self.seq_of(ins)))
        self.barrier_count += 1
        one = z3.BitVecVal(step, 64)
        epoch = z3.simplify(st.epoch + one) if is_true(guard) else mk_ite(guard, st.epoch + one, st.epoch)
        return State(st.pc, st.regs, epoch, st.exited)

    # ------------------------------------------------------------------ others
    def elect(self, ins: Instr, st: State, guard) -> State:
        """``elect.sync d|p, membermask``: one leader lane per warp; modelled as an uninterpreted
        choice of the (CTA, warp, loop iterations) -- the same for every thread of the warp --
        so ``p`` is true for exactly the leader's lane. "The same leader thread is elected for
        the same membermask every time" (§9.7.13.9): with a constant membermask the choice is
        one function of the warp for every elect.sync with that mask (any site, any iteration);
        with another membermask, a function of the site and the loop iterations."""
        env = self.env
        self.elect_sites += 1
        mask = z3.simplify(fit(self.read(st, ins.operands[1], 32)[0], 32)) if len(ins.operands) > 1 else None
        constant = mask is not None and z3.is_bv_value(mask)
        ks = [] if constant else [k for _, k in self.loop_stack]
        f = env.uf(f"elect.mask{mask.as_long():#x}" if constant else f"elect{self.elect_sites}", 4 + len(ks))
        warp = env.linear_tid() >> 5
        args = [z3.ZeroExt(32, c) for c in env.ctaid] + [z3.ZeroExt(32, warp)] + ks
        leader = f(*args)
        env.constraints_a.append((z3.ULT(leader, 32), frozenset((f.name(),))))
        if constant and mask.as_long() == 0xFFFFFFFF:  # every lane executes it (.sync)
            env.elect_full_mask.add(f.name())
        lane = env.linear_tid() & 31
        d = ins.operands[0]
        first, second = (d.first, d.second) if isinstance(d, PairOp) else (d, None)
        if isinstance(first, Reg):
            self.write(st, first.name, (leader, None), guard)
        if isinstance(second, Reg):
            self.write(st, second.name, (leader == lane, None), guard)
        self.note_once("elect.sync: one leader lane per warp (which one is left open)")
        return st

    def dispatch(self, ins: Instr, st: State, guard) -> State:
        """The check ``brx.idx index, N`` of a structured indirect branch (§9.7.12.4; the
        ifs after it take each thread to its target). An index of N or more branches to an
        undefined address: when the solver cannot show that no thread reaches the check with
        one, the obligations cannot be proved (``branch.index-range``, reported with a
        thread's values by the interpreter). Either way the path goes on with the index in
        range."""
        n = ins.operands[1].value
        idx = fit(self.read(st, ins.operands[0], 32)[0], 32)
        inside = z3.ULT(idx, z3.BitVecVal(n, 32))
        r, _ = self.check(mk_and(st.pc, guard, mk_not(inside)))
        if r != "unsat":
            self.reason(f"brx.idx at {where(ins)}: the index may be {n} or more, outside its .branchtargets "
                        f"list (undefined behaviour, branch.index-range)"
                        + (" (the solver could not decide)" if r == "unknown" else ""), ordering=True)
        if "uni" in ins.mods:
            self._uniform_index(ins, mk_and(st.pc, guard), idx)
        pc = mk_and(st.pc, inside) if is_true(guard) else mk_and(st.pc, mk_or(mk_not(guard), inside))
        return State(pc, st.regs, st.epoch, st.exited)

    def _uniform_index(self, ins: Instr, pc, idx):
        """``brx.idx.uni`` promises that the active threads of a warp branch with one index
        (§9.7.12.4); a divergent index is undefined behaviour (``branch.uni-divergence``, which the
        interpreter reports with the lanes' values). Two threads of one warp of one CTA (thread B
        by the substitution of the race checker's pairs) that both reach it with different
        indices: nothing can be proved."""
        env = self.env
        sub = Substitution(env.pairs)
        same_warp = mk_and(*[a == sub(a) for a in env.ctaid], (env.linear_tid() >> 5) == (sub(env.linear_tid()) >> 5))
        both = [sub(c) for c, _ in env.constraints_a]
        r, _ = self.check(mk_and(pc, sub(pc), same_warp, idx != sub(idx), *both))
        if r != "unsat":
            self.reason(f"brx.idx.uni at {where(ins)}: two threads of one warp may reach it with different indices "
                        f"(undefined behaviour, branch.uni-divergence)"
                        + (" (the solver could not decide)" if r == "unknown" else ""), ordering=True)

    def marker_call(self, ins: Instr, st: State, guard, name: str) -> State:
        """A call kverify gives a meaning of its own (``kverify.semantics.ir.gpuverify``):

        - an assertion (``__kverify_assert(holds)``, or ``__assertfail``: CUDA's ``assert()``
          failing) records an ``AssertionSite`` with the condition under which it fails; the path
          goes on where it holds (as after ``assert`` in GPUVerify's Boogie);
        - a precondition (``__kverify_requires`` / ``__kverify_assume(holds)``) becomes a constraint
          on thread A (and B): ``path condition -> holds``, and a ``PreconditionSite``;
        - ``__kverify_gv<intrinsic>``: the result is an approximate value named after the intrinsic
          (a condition that depends on it is never claimed to fail).
        """
        from kverify.semantics.ir import gpuverify as gv

        from .records import AssertionSite, PreconditionSite
        from .terms import keys

        pc = mk_and(st.pc, guard)
        if name == gv.ASSERTFAIL:
            self.assertions.append(AssertionSite(ins, pc, "CUDA assert()"))
            return State(mk_and(st.pc, mk_not(guard)), st.regs, st.epoch, st.exited)
        if name.startswith(gv.UNEVALUATED_PREFIX):
            for r in gv.call_rets(ins):
                self.marker_rets[r] = gv.intrinsic_of(name)
            return st
        args = gv.call_args(ins)
        t = self.call_params.get(args[0]) if args else None
        if t is None:
            holds = self.approx(f"gv{gv.intrinsic_of(name)}.arg", 1)
        else:
            holds = fit(t, 32) != 0
        if name == gv.ASSERT:
            self.assertions.append(AssertionSite(ins, mk_and(pc, mk_not(holds)), "__assert"))
            return State(mk_and(st.pc, mk_or(mk_not(guard), holds)), st.regs, st.epoch, st.exited)
        c = z3.Implies(pc, holds)
        if not z3.is_true(z3.simplify(c)):
            syms = _constants(c)
            self.env.constraints_a.append((c, keys(*syms)))
        self.preconditions.append(PreconditionSite(ins, pc, holds, gv.intrinsic_of(name)))
        unevaluated = sorted({str(x).split(".", 1)[0][2:] for x in _constants(holds) if str(x).startswith("gv__")})
        if unevaluated:
            # what it excludes is unknown: a race found may be one it rules out
            self.unmodelled(f"the precondition {gv.intrinsic_of(name)} at {where(ins)} uses "
                            f"{', '.join(unevaluated)}, which kverify does not evaluate")
        return st


def _constants(e) -> list:
    """The uninterpreted constants of ``e``."""
    out, seen, todo = {}, set(), [e]
    while todo:
        x = todo.pop()
        if x.get_id() in seen:
            continue
        seen.add(x.get_id())
        if z3.is_const(x) and x.decl().kind() == z3.Z3_OP_UNINTERPRETED:
            out[str(x)] = x
        elif z3.is_app(x):
            todo.extend(x.children())
    return list(out.values())


def _full_mask(mask) -> bool:
    """A ``membermask`` naming all 32 lanes (``__syncwarp()``'s ``0xffffffff``, or ``-1``)."""
    return isinstance(mask, Imm) and isinstance(mask.value, int) and mask.value & 0xFFFFFFFF == 0xFFFFFFFF
