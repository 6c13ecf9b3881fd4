"""Tensor-core operations in the equivalence walk: ``wgmma.mma_async`` and its
``wgmma.fence``/``commit_group``/``wait_group`` (PTX ISA §9.7.15), and the warp-level
``mma.sync.aligned`` (§9.7.14), as exact dot products in the ``real`` model; and the warp
collectives that feed them, ``ldmatrix``/``stmatrix`` (§9.7.9.19-20).

``wgmma.mma_async`` is warpgroup-wide: each thread blocks at it with its part (accumulator
registers, A registers or descriptor, B descriptor, scale-d, immediate scales and
transposes); once the four warps of the warpgroup have issued it, the MMA is performed and
every thread's accumulator registers hold the result. As for ``cp.async``, the operation
completes at issue: in a race-free kernel nobody reads the accumulator or writes the
shared operands before the ``wgmma.wait_group`` that covers it, so the values are the
same, and fence/commit/wait have nothing left to do. ``mma.sync`` is a warp collective
(all 32 lanes, the ``coll`` event of :mod:`collectives`).

The layouts are those of the interpreter, from ``kverify.semantics.memory_model.wgmma``:
shared-memory descriptors and swizzles (``operand_byte_addresses``), the accumulator and
A-register fragments of wgmma, and the mma.sync fragments (``mma_fragment_layout``).

Models. ``real``: ``D = (±A)·(±B)ᵀ + (D if scale-d)`` with exact products and sums in the
normal forms of :mod:`..realterm`; f16/bf16 (and fp8 e4m3/e5m2) operands are read as their
values, tf32 operands as ``round_tf32(x)`` of the f32 value (the operand is narrowed, as
``cvt.rna.tf32.f32`` would; a value already narrowed to tf32 or below is kept), an f16
accumulator as ``round_f16(sum)``. ``bitexact``/``int``: the ISA leaves the accumulation
order and intermediate precision of a tensor-core sum unspecified, so no bit-exact term
exists; the walk stops with :class:`AccumulationOrder` (the verdict is ``unknown``, and no
bit-level testing is attempted, as the interpreter's order would be one arbitrary choice).
Integer mma.sync (s8/u8, s4/u4) is exact and computed in the bit-vector models (``--fp int`` /
``bitexact``); .b1 and sparse forms are not modelled (``unknown``).
"""
from __future__ import annotations

from contextlib import contextmanager
from fractions import Fraction

from kverify.semantics.ir.errors import Unsupported
from kverify.semantics.ir.nodes import Reg, VecOp, where
from kverify.semantics.memory_model import wgmma as WG
from kverify.semantics.values.narrow import fp8_fraction

from .. import realterm as R
from ..algebra import DataDependent, ModelUnsupported, is_concrete

#: operand type -> (element bytes, name for the shared-memory layout rules)
OPERANDS = {"f16": (2, "float16"), "bf16": (2, "bfloat16"), "tf32": (4, "tf32"),
            "e4m3": (1, "uint8"), "e5m2": (1, "uint8")}
#: integer mma.sync operand types (``_int_mma_check``)
INT_MMA = WG.MMA_INT8 + WG.MMA_INT4
#: formats at least as narrow as tf32 (a value already rounded to one is a tf32 value)
_NARROW = ("tf32", "f16", "bf16", "e4m3", "e5m2")


@contextmanager
def _located(ins):
    """Name the instruction in a stop raised while a group operation runs (outside the walk
    over one thread's statements, which locates the others)."""
    try:
        yield
    except (DataDependent, ModelUnsupported) as e:
        if not getattr(e, "located", False):
            e.args = (f"{e.args[0] if e.args else e} at {where(ins)} ({ins.opcode})",)
            e.located = True
        raise


class AccumulationOrder(ModelUnsupported):
    """A tensor-core sum under a bit-exact model: the ISA does not fix its order."""

    no_fallback = True  # the engine reports unknown without bit-level testing


def _fp8_value(bits: int, fmt: str) -> Fraction:
    """The value of an fp8 bit pattern (``values.narrow``: OCP FP8 e4m3 / e5m2)."""
    v = fp8_fraction(bits, fmt)
    if v is None:
        raise ModelUnsupported(f"a NaN or infinite {fmt} constant (real model)")
    return v


class TensorCoreHandlers:
    """The tensor-core handlers of :class:`~.executor.Executor`."""

    # ------------------------------------------------------------------ model checks
    def _tc_model(self, ins, aty):
        if aty not in OPERANDS:
            raise ModelUnsupported(f"{ins.opcode}: .{aty} operands (integer or sub-byte tensor-core "
                                   f"operations are not modelled by the symbolic engine)")
        if self.alg.model != "real":
            raise AccumulationOrder(f"the accumulation order of a tensor-core sum is not specified by the ISA "
                                    f"(no {self.alg.model} result exists): use --fp real")

    def _operand(self, v, aty):
        """A stored A/B element (bits, real value) as a real, per the operand type."""
        A = self.alg.A
        fmt = self.alg.input_format(v)
        if fmt is not None and fmt != aty and not (aty == "tf32" and fmt == "f32"):
            # the element's value is known only under its buffer's format
            raise ModelUnsupported(f"a .{aty} operand read from an input element of a .{fmt} buffer: the bytes "
                                   f"reinterpreted in another format are not modelled (real model)")
        if aty in ("e4m3", "e5m2"):
            if type(v) is int:
                return R.const(_fp8_value(v & 0xFF, aty))
            return self.alg.as_real(v, "f16")  # an input element: its (fp8) value
        if aty == "tf32":
            x = self.alg.as_real(v, "f32")
            if isinstance(x, R.Inf):
                raise ModelUnsupported("an infinite tf32 operand (real model)")
            if len(x.terms) == 1:
                (m, c), = x.terms.items()
                if c == 1 and len(m) == 1 and A.by_id[m[0]].kind == "round" and A.by_id[m[0]].name in _NARROW:
                    return x
            return A.round_to("tf32", x)
        x = self.alg.as_real(v, aty)
        if isinstance(x, R.Inf):
            raise ModelUnsupported(f"an infinite {aty} operand of a tensor-core operation (real model)")
        return x

    def _dot(self, d0, arow, bcol):
        """``d0 + Σ_k arow[k]·bcol[k]`` in the real normal form."""
        A = self.alg.A
        acc = d0
        for x, y in zip(arow, bcol):
            if x.terms and y.terms:
                acc = A.add(acc, A.mul(x, y))
        return acc

    def _acc_in(self, v, dty):
        x = self.alg.as_real(v, dty)
        if isinstance(x, R.Inf):
            raise ModelUnsupported("an infinite accumulator of a tensor-core operation (real model)")
        return x

    # ------------------------------------------------------------------ wgmma
    def h_wgmma_sync(self, t, ins):
        """wgmma.fence / commit_group / wait_group: the operations completed at issue."""
        return None

    def h_wgmma(self, t, ins):
        if "sp" in ins.mods:
            raise Unsupported("sparse wgmma is not modelled", ins)
        tys = ins.types()
        self._tc_model(ins, tys[1])
        ops = ins.operands
        d, a_op = ops[0], ops[1]
        if not isinstance(d, VecOp):
            raise Unsupported(f"{ins.opcode}: the accumulator must be a register vector", ins)
        rest = ops[3:]

        def imm(o):
            v = self.pred(t, o) if isinstance(o, Reg) and self.reg_width(o.name) == 1 else self.val(t, o, 32)
            if not is_concrete(v):
                raise DataDependent(f"an operand of {ins.opcode} depends on input data")
            return int(v)

        desc_b = self.val(t, ops[2], 64)
        a_regs = None
        if isinstance(a_op, VecOp):
            a_regs = [self.val(t, e, 32) for e in a_op.elems]
            desc_a = None
            trans = (0, imm(rest[3]) if len(rest) > 3 else 0)
        else:
            desc_a = self.val(t, a_op, 64)
            trans = (imm(rest[3]) if len(rest) > 3 else 0, imm(rest[4]) if len(rest) > 4 else 0)
        if not (is_concrete(desc_b) and (desc_a is None or is_concrete(desc_a))):
            raise DataDependent(f"a matrix descriptor of {ins.opcode} depends on input data")
        scale_d = imm(rest[0]) != 0 if rest else True
        scales = tuple((imm(o) & 0xFFFFFFFF) == 0xFFFFFFFF for o in rest[1:3]) + (False, False)
        part = (desc_a, desc_b, scale_d, scales[:2], trans, a_regs, [self.reg(t, e.name) for e in d.elems])
        return self._block(("wgmma", ins, part, t, ins))

    def _wgmma_groups(self, cta, live):
        """Perform every wgmma.mma_async that all 128 threads of its warpgroup have issued;
        returns the threads to resume."""
        groups = {}
        for t in live:
            if t.event[0] == "wgmma":
                groups.setdefault((t.linear // 128, id(t.event[1])), []).append(t)
        out = []
        for (wg, _), members in groups.items():
            wg_live = [t for t in live if t.linear // 128 == wg]
            if len(members) != len(wg_live):
                continue  # others of the warpgroup have not issued it yet
            if len(members) != 128:
                raise Unsupported(f"wgmma.mma_async executed by {len(members)} threads of warpgroup {wg} "
                                  f"(all 128 must issue it)", members[0].event[1])
            self._wgmma_perform(sorted(members, key=lambda t: t.linear))
            out.extend(members)
        return out

    def _wgmma_perform(self, members):
        ins = members[0].event[1]
        with _located(ins):
            self._wgmma_compute(ins, members)

    def _wgmma_compute(self, ins, members):
        tys = ins.types()
        dty, aty, bty = tys[0], tys[1], tys[2]
        if aty != bty and not (aty in ("e4m3", "e5m2") and bty in ("e4m3", "e5m2")):
            raise Unsupported(f"{ins.opcode}: A and B of different types", ins)
        shape = next(x for x in ins.mods if x.startswith("m64n"))
        n, k = int(shape[4:].split("k")[0]), int(shape.split("k")[1])
        parts = [t.event[2] for t in members]
        desc_a, desc_b, scale_d, (neg_a, neg_b), (tn_a, tn_b), _, _ = parts[0]
        for p in parts[1:]:
            if p[:5] != parts[0][:5]:
                raise Unsupported(f"{ins.opcode}: descriptors, scale-d, scales or transposes differ between "
                                  f"the threads of the warpgroup", ins)
        if dty not in ("f32", "f16"):
            raise ModelUnsupported(f"{ins.opcode}: a .{dty} accumulator", ins)
        t0 = members[0]
        A = self.alg.A

        def smem_operand(desc, rows, ty, trans):
            esz, name = OPERANDS[ty]
            try:
                addrs = WG.operand_byte_addresses(desc, rows, k, name, "MN" if trans else "K")
            except (ValueError, NotImplementedError) as e:
                raise Unsupported(f"wgmma operand layout: {e}", ins)
            return [[self._operand(self.load(t0, "shared", int(a), esz, ins), ty) for a in row] for row in addrs]

        if desc_a is not None:
            amat = smem_operand(desc_a, 64, aty, tn_a)
        else:
            esz, name = OPERANDS[aty]
            lay = WG.a_register_fragment_layout(name if aty != "tf32" else "tf32")
            per = 4 // esz
            amat = [[R.ZERO] * k for _ in range(64)]
            for t in members:
                regs = t.event[2][5]
                tl = t.linear % 128
                for e in range(lay.shape[1]):
                    v = self.alg.extract_bytes(regs[e // per], (e % per) * esz, esz, 4) if per > 1 else regs[e]
                    r, c = lay[tl, e]
                    amat[r][c] = self._operand(v, aty)
        bmat = smem_operand(desc_b, n, bty, tn_b)
        if neg_a:
            amat = [[A.neg(x) for x in row] for row in amat]
        if neg_b:
            bmat = [[A.neg(x) for x in row] for row in bmat]
        lay = WG.accumulator_fragment_layout(n)
        for t in members:
            tl = t.linear % 128
            dregs = t.event[2][6]
            names = ins.operands[0].elems
            if dty == "f32":
                for i, nm in enumerate(names):
                    r, c = lay[tl, i]
                    d0 = self._acc_in(dregs[i], "f32") if scale_d else R.ZERO
                    s = self._dot(d0, amat[r], bmat[c])
                    self.write(t, nm, s)
                    if self.terms is not None:
                        self.terms.note(ins.loc, "mma", s)
            else:
                for j, nm in enumerate(names):
                    halves = []
                    for h in range(2):
                        i = 2 * j + h
                        r, c = lay[tl, i]
                        d0 = self._acc_in(self.alg.extract_bytes(dregs[j], 2 * h, 2, 4), "f16") if scale_d else R.ZERO
                        s = self._dot(d0, amat[r], bmat[c])
                        halves.append((A.round_to("f16", s), 2))
                        if self.terms is not None:
                            self.terms.note(ins.loc, "mma", halves[-1][0])
                    self.write(t, nm, self.alg.concat_bytes(halves))

    # ------------------------------------------------------------------ mma.sync
    def h_mma(self, t, ins):
        tys = WG.mma_types(ins)
        shape = WG.mma_shape(ins)
        if "sp" in ins.mods or any(m.startswith("sp::") or m.startswith("kind::") for m in ins.mods):
            raise Unsupported(f"{ins.opcode}: sparse or kind:: mma is not modelled", ins)
        if len(tys) != 4:
            raise Unsupported(f"{ins.opcode}: expected .dtype.atype.btype.ctype", ins)
        if tys[1] in INT_MMA and tys[2] in INT_MMA:
            self._int_mma_check(ins, tys, shape)
        else:
            self._float_mma_check(ins, tys, shape)
        d, a, b, c = ins.operands[:4]

        def regs(op):
            els = op.elems if isinstance(op, VecOp) else (op,)
            return [self.val(t, e, 32) for e in els]

        return self._mma_gen(t, ins, (regs(a), regs(b), regs(c)))

    def _float_mma_check(self, ins, tys, shape):
        """``Unsupported`` / ``ModelUnsupported`` unless the symbolic engine models this float
        mma.sync form."""
        self._tc_model(ins, tys[1])
        self._tc_model(ins, tys[2])
        fp8 = ("e4m3", "e5m2")
        same = tys[1] == tys[2] or (tys[1] in fp8 and tys[2] in fp8)  # fp8 A and B may differ (§9.7.14.5.14)
        if (shape, tys[1]) not in WG.MMA_SHAPES or tys[1] not in OPERANDS or not same or tys[0] != tys[3] \
                or tys[0] not in ("f32", "f16") or (tys[0] == "f16" and tys[1] not in ("f16",) + fp8) \
                or not ("row" in ins.mods and "col" in ins.mods):
            raise Unsupported(f"{ins.opcode}: the symbolic engine models mma.sync.aligned.row.col with an f32 "
                              f"accumulator and {', '.join(f'{s}.{a}' for s, a in WG.MMA_SHAPES if a in OPERANDS)} "
                              f"operands, and an f16 accumulator with f16 or fp8 operands (not integer or .f64 "
                              f"mma.sync)", ins)

    def _int_mma_check(self, ins, tys, shape):
        """Integer mma.sync (.s8/.u8, .s4/.u4 with .s32 C and D): its sums are exact, so every model
        but ``real`` (where integer data stays opaque) computes them: each D element is C plus the
        products of the sign- or zero-extended elements, modulo 2^32 (clamped to the s32 range
        under ``.satfinite``)."""
        if self.alg.model == "real":
            raise ModelUnsupported(f"{ins.opcode}: an integer tensor-core sum on integer data (the real model keeps "
                                   f"integer data opaque): use --fp int or --fp bitexact")
        if (shape, tys[1]) not in WG.MMA_SHAPES or (shape, tys[2]) not in WG.MMA_SHAPES or tys[0] != "s32" \
                or tys[3] != "s32" or not ("row" in ins.mods and "col" in ins.mods):
            raise Unsupported(f"{ins.opcode}: an integer mma.sync form the fragment layouts do not cover", ins)

    def _int_mma_values(self, ins, members):
        """``_mma_sync_values`` for the integer forms (``_int_mma_check``)."""
        tys = WG.mma_types(ins)
        shape = WG.mma_shape(ins)
        mm, nn, kk = WG.mma_dims(shape)
        per = WG.MMA_SHAPES[(shape, tys[1])]
        bits = 32 // per
        ai, bi, ci = WG.mma_fragment_layout(shape, tys[1])
        sat = "satfinite" in ins.mods
        w = 64 if sat else 32  # a sum to clamp is formed exactly first
        alg = self.alg
        amat = [[None] * kk for _ in range(mm)]
        bmat = [[None] * nn for _ in range(kk)]
        cmat = [[None] * nn for _ in range(mm)]
        lanes = {m.linear % 32: m.event[2] for m in members}
        for lane, (av, bv, cv) in lanes.items():
            for mat, idx, rv, ty in ((amat, ai, av, tys[1]), (bmat, bi, bv, tys[2])):
                if len(rv) * per != len(idx):
                    raise Unsupported(f"{ins.opcode}: expected {len(idx) // per} registers, got {len(rv)}", ins)
                for e in range(len(idx)):
                    # element e: bits (e mod per)*bits .. of register e // per, sign- or zero-extended
                    x = alg.family("bfe", "s32" if ty[0] == "s" else "u32", frozenset(),
                                   [rv[e // per], (e % per) * bits, bits], [32, 32, 32])
                    mat[int(idx[e][0][lane])][int(idx[e][1][lane])] = alg.fit(x, w, signed=True)
            if len(cv) != len(ci):
                raise Unsupported(f"{ins.opcode}: expected {len(ci)} accumulator registers, got {len(cv)}", ins)
            for e in range(len(ci)):
                cmat[int(ci[e][0][lane])][int(ci[e][1][lane])] = alg.fit(cv[e], w, signed=True)
        ty = f"s{w}"
        res = {}
        for lane in lanes:
            out = []
            for e in range(len(ci)):
                r, cc = int(ci[e][0][lane]), int(ci[e][1][lane])
                acc = cmat[r][cc]
                for q in range(kk):
                    prod = alg.family("mul", ty, frozenset({"lo"}), [amat[r][q], bmat[q][cc]], [w, w])
                    acc = alg.family("add", ty, frozenset(), [acc, prod], [w, w])
                if sat:
                    acc = alg.family("max", ty, frozenset(), [acc, -(1 << 31) & ((1 << 64) - 1)], [w, w])
                    acc = alg.family("min", ty, frozenset(), [acc, (1 << 31) - 1], [w, w])
                out.append(alg.fit(acc, 32))
            res[lane] = out
        return res

    def _mma_gen(self, t, ins, vals):
        r = yield ("coll", ins, vals, t)
        for e, v in zip(ins.operands[0].elems, r):
            self.write(t, e, v)
            if self.terms is not None:
                self.terms.note(ins.loc, "mma", v)
        return None

    def _mma_sync(self, ins, members):
        """The collective part of mma.sync: {lane: D values} for the 32 lanes of a warp."""
        with _located(ins):
            return self._mma_sync_values(ins, members)

    def _mma_sync_values(self, ins, members):
        if len(members) != 32:
            raise Unsupported(f"{ins.opcode} executed by {len(members)} lanes of a warp (.aligned: all 32 "
                              f"must execute it)", ins)
        if WG.mma_types(ins)[1] in INT_MMA:
            return self._int_mma_values(ins, members)
        tys = ins.types()
        shape = WG.mma_shape(ins)
        mm, nn, kk = WG.mma_dims(shape)
        per = WG.MMA_SHAPES[(shape, tys[1])]
        esz = 4 // per
        ai, bi, ci = WG.mma_fragment_layout(shape, tys[1])
        amat = [[None] * kk for _ in range(mm)]
        bmat = [[None] * nn for _ in range(kk)]
        cmat = [[None] * nn for _ in range(mm)]
        lanes = {t.linear % 32: t.event[2] for t in members}
        acc16 = tys[3] == "f16"  # C/D: two registers, elements 2r and 2r + 1 in the low and high half of r
        for lane, (av, bv, cv) in lanes.items():
            for mat, idx, regs, ty in ((amat, ai, av, tys[1]), (bmat, bi, bv, tys[2])):
                if len(regs) * per != len(idx):
                    raise Unsupported(f"{ins.opcode}: expected {len(idx) // per} registers, got {len(regs)}", ins)
                for e in range(len(idx)):
                    v = self.alg.extract_bytes(regs[e // per], (e % per) * esz, esz, 4) if per > 1 else regs[e]
                    mat[int(idx[e][0][lane])][int(idx[e][1][lane])] = self._operand(v, ty)
            if len(cv) != (2 if acc16 else 4):
                raise Unsupported(f"{ins.opcode}: expected {2 if acc16 else 4} accumulator registers, got {len(cv)}",
                                  ins)
            for e in range(4):
                v = self.alg.extract_bytes(cv[e // 2], 2 * (e % 2), 2, 4) if acc16 else cv[e]
                cmat[int(ci[e][0][lane])][int(ci[e][1][lane])] = self._acc_in(v, "f16" if acc16 else "f32")
        bcols = [[bmat[q][j] for q in range(kk)] for j in range(nn)]
        A = self.alg.A
        res = {}
        for lane in lanes:
            out = []
            for e in range(4):
                r, cc = int(ci[e][0][lane]), int(ci[e][1][lane])
                out.append(self._dot(cmat[r][cc], amat[r], bcols[cc]))
            if tys[0] == "f16":  # each sum rounded to f16 once, as the wgmma f16 accumulator is
                out = [self.alg.concat_bytes([(A.round_to("f16", out[2 * j]), 2), (A.round_to("f16", out[2 * j + 1]), 2)])
                       for j in range(2)]
            res[lane] = out
        return res


    # ------------------------------------------------------------------ ldmatrix / stmatrix
    def _matrix_check(self, ins):
        if "m8n8" not in ins.mods or not any(x in ins.mods for x in ("x1", "x2", "x4")):
            raise Unsupported(f"{ins.opcode}: only .m8n8 .x1/.x2/.x4 with 16-bit elements is modelled", ins)
        return {"x1": 1, "x2": 2, "x4": 4}[next(x for x in ins.mods if x in ("x1", "x2", "x4"))]

    def h_ldmatrix(self, t, ins):
        self._matrix_check(ins)
        a = ins.operands[1]
        return self._matrix_gen(t, ins, self.addr(t, a), None)

    def h_stmatrix(self, t, ins):
        self._matrix_check(ins)
        src = ins.operands[1]
        regs = [self.val(t, e, 32) for e in (src.elems if isinstance(src, VecOp) else (src,))]
        return self._matrix_gen(t, ins, self.addr(t, ins.operands[0]), regs)

    def _matrix_gen(self, t, ins, addr, regs):
        r = yield ("coll", ins, (addr, regs), t)
        if regs is None:
            dst = ins.operands[0]
            for e, v in zip(dst.elems if isinstance(dst, VecOp) else (dst,), r):
                self.write(t, e, v)
        return None

    def _matrix(self, ins, members):
        """The collective part of ldmatrix/stmatrix (.m8n8, 16-bit elements): lane 8i + r
        gives the address of row r of matrix i (``memory_model.wgmma.ldmatrix_element``)."""
        with _located(ins):
            if len(members) != 32:
                raise Unsupported(f"{ins.opcode} executed by {len(members)} lanes of a warp (.aligned: all 32 "
                                  f"must execute it)", ins)
            nmat = self._matrix_check(ins)
            trans = "trans" in ins.mods
            space = next((m for m in ins.mods if m.startswith("shared")), "shared")
            lanes = {t.linear % 32: t for t in members}
            addrs = {l: t.event[2][0] for l, t in lanes.items()}
            res = {}
            for lane, t in lanes.items():
                out = []
                for i in range(nmat):
                    halves = []
                    for h in range(2):
                        src, off = WG.ldmatrix_element(lane, i, h, trans)
                        where_ = addrs[src] + off
                        if t.event[2][1] is None:
                            halves.append((self.load(t, space, where_, 2, ins), 2))
                        else:
                            v = self.alg.extract_bytes(t.event[2][1][i], 2 * h, 2, 4)
                            self.store(t, space, where_, 2, v, ins.loc)
                    if halves:
                        out.append(self.alg.concat_bytes(halves))
                res[lane] = out
            return res


#: op-table ``sync`` column -> handler of this module
TENSORCORE_SYNC = {"wgmma.fence": "h_wgmma_sync", "wgmma.commit": "h_wgmma_sync",
                   "wgmma.wait": "h_wgmma_sync", "wgmma.mma": "h_wgmma"}


def tensorcore_handler(row) -> str | None:
    """The handler of an op-table row that is a tensor-core operation, else ``None``."""
    if row.collective == "mma":
        return "h_mma"
    if row.collective == "matrix":
        acc = [s.access for s in row.operands]  # ldmatrix: def + load, stmatrix: store + use
        if acc[:2] == ["def", "load"]:
            return "h_ldmatrix"
        if acc[:1] == ["store"]:
            return "h_stmatrix"
        return None  # movmatrix: not modelled
    return TENSORCORE_SYNC.get(row.sync)


__all__ = ["AccumulationOrder", "TensorCoreHandlers", "tensorcore_handler"]
