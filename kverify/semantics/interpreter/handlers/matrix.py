"""Matrix families: wgmma.fence/commit_group/wait_group/mma_async (warpgroup-wide
``WgmmaOp``s, §9.7.15), ldmatrix/stmatrix (m8n8 fragments, §9.7.9.19-20) and warp-level
mma.sync (§9.7.14; m16n8k16/m16n8k8 f16/bf16 and m16n8k8/m16n8k4 tf32 with f32 accumulators,
m16n8k32/m16n8k16 e4m3/e5m2 with f32 or f16 accumulators, m8n8k16/m16n8k16/m16n8k32 s8/u8 and
m8n8k32/m16n8k32/m16n8k64 s4/u4 with s32 accumulators (``.satfinite`` too), m8n8k4 and
m16n8k{4,8,16} f64; the fragment layouts are ``memory_model.wgmma.mma_fragment_layout``).
Operand elements are decoded by ``values.narrow`` (fp8: §5.2.3).
"""
from __future__ import annotations

import numpy as np

from kverify.semantics.ir.errors import Unsupported
from kverify.semantics.ir.nodes import Reg, VecOp, where as _fmt_loc
from kverify.semantics.memory_model import wgmma
from kverify.semantics.memory_model.byte_layout import ELEMENT_SIZE
from kverify.semantics.memory_model.protocols import async_groups as AG
from kverify.semantics.memory_model.execution import BARRIER_DIVERGENCE, BOUNDS
from kverify.semantics.values import softfloat
from kverify.semantics.values.narrow import FP8, round_to, to_f32
from kverify.semantics.values.types import FORMATS

from ..async_ops import WgmmaOp
from ..hb import ASYNC, join, tick
from ..state import LANES, U64
from .common import operand_lanes, registry, space_of, yield_once
from .groups import group_wait
from .memory import mem_read, mem_write

HANDLERS, handler = registry()

#: wgmma.mma_async A/B operand types the interpreter performs (§9.7.15 wgmma.mma_async); A
#: and B may differ only between .e4m3 and .e5m2, which ptxas enforces
WGMMA_FLOAT = ("f16", "bf16", "tf32", "e4m3", "e5m2")


# --------------------------------------------------------------------------- wgmma


@handler("wgmma.fence")
def h_wgmma_fence(m, w, ins, mask):
    m.step(w.wgmma, AG.WgmmaFence(), ins, w.describe())


@handler("wgmma.commit_group")
def h_wgmma_commit(m, w, ins, mask):
    m.step(w.wgmma, AG.CommitGroup(), ins, w.describe())


@handler("wgmma.wait_group")
def h_wgmma_wait(m, w, ins, mask):
    cmd = AG.WaitGroup(int(m.val(w, ins.operands[0], 32)))
    return group_wait(m, w, ins, "wgmma", cmd)


def uniform_operand(m, w, op):
    """A warp-uniform scalar operand (wgmma's scale-d, imm-scale, imm-trans): its first lane's value."""
    v = m.val(w, op, 32) if not isinstance(op, Reg) or m.reg_width(op.name) != 1 else m.pred(w, op)
    v = np.asarray(v)
    return v.reshape(-1)[0] if v.ndim else v


@handler("wgmma.mma_async")
def h_wgmma(m, w, ins, mask):
    ops = ins.operands
    if "sp" in ins.mods:
        raise Unsupported("sparse wgmma is not modelled", ins)
    if (w.valid & w.live & ~mask).any():
        m.report(BARRIER_DIVERGENCE.id, f"wgmma.mma_async (.sync.aligned) executed by part of {w.describe()}",
                 [ins.loc])
    d = ops[0]
    dregs_names = [e.name for e in d.elems] if isinstance(d, VecOp) else [d.name]
    a_op = ops[1]
    desc_b = int(np.broadcast_to(np.asarray(m.val(w, ops[2], 64), U64), (32,))[0])
    rest = ops[3:]
    scale_d = bool(uniform_operand(m, w, rest[0])) if rest else True
    tys = ins.types()
    if len(tys) != 3 or tys[0] not in ("f32", "f16") or tys[1] not in WGMMA_FLOAT or tys[2] not in WGMMA_FLOAT:
        raise Unsupported(f"{ins.opcode}: only floating-point wgmma (.f32/.f16 accumulator; .f16, .bf16, .tf32, "
                          f".e4m3, .e5m2 operands) is modelled", ins)
    # imm-trans-a/b exist only for .f16/.bf16 operands (§9.7.15 wgmma.mma_async); fp8 and tf32 are K-major
    is_float = tys[1] in ("f16", "bf16", "tf32")
    imm_a = int(uniform_operand(m, w, rest[1])) if len(rest) > 1 else 1
    imm_b = int(uniform_operand(m, w, rest[2])) if len(rest) > 2 else 1
    a_regs = None
    if isinstance(a_op, VecOp):
        a_regs = [np.asarray(m.reg(w, e.name)).copy() for e in a_op.elems]
        tn_a = 0
        tn_b = int(uniform_operand(m, w, rest[3])) if len(rest) > 3 and is_float else 0
        desc_a = None
    else:
        desc_a = int(np.broadcast_to(np.asarray(m.val(w, a_op, 64), U64), (32,))[0])
        tn_a = int(uniform_operand(m, w, rest[3])) if len(rest) > 3 and is_float else 0
        tn_b = int(uniform_operand(m, w, rest[4])) if len(rest) > 4 and is_float else 0
    neg_a, neg_b = imm_a == -1 or imm_a == 0xFFFFFFFF, imm_b == -1 or imm_b == 0xFFFFFFFF
    wg = w.index // 4
    seq = w.wgmma_seq
    w.wgmma_seq += 1
    key = (w.cta.rank, wg, seq)
    ops_map = w.cta.__dict__.setdefault("wgmma_ops", {})
    op = ops_map.get(key)
    fresh = op is None
    if fresh:
        agent = m.new_agent(f"wgmma.mma_async of warpgroup {wg} issued at {_fmt_loc(ins.loc)}")
        op = WgmmaOp(m, w, ins, agent, key)
        ops_map[key] = op
    else:
        op.vc = join(op.vc, tick(w.vc.copy(), op.agent))
        if m.trace is not None:
            m.trace.issue(op, w, ins)
    # the accumulator is read at completion (``WgmmaOp.complete``): its registers are the
    # wgmma's until a wait covers it (``_check_wgmma_regs``)
    op.parts[w.index % 4] = (w, a_regs, desc_a, desc_b, scale_d, tn_a, tn_b, neg_a, neg_b, dregs_names)
    # shared-memory operand reads (async proxy): checked at issue, pending until completion
    shape = next(x for x in ins.mods if x.startswith("m64n"))
    n = int(shape[4:].split("k")[0])
    k = int(shape.split("k")[1])
    dtn = wgmma.OPERAND_STORAGE
    smem = w.cta.smem
    # the shared bytes the operands cover (the same for the four warps of the warpgroup and
    # for every reuse of a stage: cached by descriptor)
    ckey = (desc_a, desc_b, n, k, tys[1], tys[2], tn_a, tn_b)
    cache = m.__dict__.setdefault("wgmma_bytes", {})
    idx = cache.get(ckey)
    if idx is None:
        reads = []
        try:
            if desc_a is not None:
                reads.append(wgmma.operand_byte_addresses(desc_a, 64, k, dtn[tys[1]], "MN" if tn_a else "K"))
            reads.append(wgmma.operand_byte_addresses(desc_b, n, k, dtn[tys[2]], "MN" if tn_b else "K"))
        except (ValueError, NotImplementedError, KeyError) as e:
            raise Unsupported(f"wgmma operand layout: {e}", ins)
        esz = [ELEMENT_SIZE[dtn[t]] for t in ((tys[1],) if desc_a is not None else ()) + (tys[2],)]
        idx = cache[ckey] = np.unique(np.concatenate([(r.reshape(-1)[:, None] + np.arange(e)).reshape(-1)
                                                      for r, e in zip(reads, esz)]))
    if idx.max() >= smem.size:
        m.report(BOUNDS.id, f"wgmma operand reaches shared offset {int(idx.max())} beyond {smem.size} bytes", [ins.loc])
        raise Unsupported("wgmma operand out of bounds", ins)
    if m.check:
        for c in smem.shadow.check_read(idx, op.agent, w.vc, m.fence_clks["shared"], None, ASYNC,
                                        issuer_fence=w.proxy_fence_vc.get("shared")):
            m._race(w, ins, smem, c, "wgmma operand read")
        if m.trace is not None:
            m.trace.access(smem.shadow, idx, op.agent, w.vc, m.loc_id(ins.loc), ins, "read", ASYNC, w)
    if fresh:
        smem.shadow.set_pending_read(idx, op.agent, m.loc_id(ins.loc), {o.agent for o in op.earlier})
    if fresh:
        op.reads = [(smem, idx)]
        m.inflight.append(op)
    regs = frozenset(dregs_names) | (frozenset(e.name for e in a_op.elems) if a_regs is not None else frozenset())
    m.step(w.wgmma, AG.MmaAsync(op.agent, regs), ins, w.describe())
    w.wgmma_regs[op.agent] = set(regs)
    w.release_tick()
    return yield_once()


# --------------------------------------------------------------------------- ldmatrix / stmatrix


def _matrix_lane_addrs(m, w, ins, mask, i, h):
    """Per-lane byte address of fragment element h of matrix i (m8n8, 16-bit) and whether
    the access is transposed (§9.7.9.19 ldmatrix / §9.7.9.20 stmatrix)."""
    a = ins.operands[next(i for i, s in enumerate(ins.row.operands) if s.access in ("load", "store"))]
    rows = m.addr_values(w, a)  # thread 8*i + r gives the address of row r of matrix i
    src, off = wgmma.ldmatrix_element(LANES, i, h, "trans" in ins.mods)
    return rows[src] + off


def _nmat(ins):
    return {"x1": 1, "x2": 2, "x4": 4}[next(x for x in ins.mods if x in ("x1", "x2", "x4"))]


@handler("stmatrix")
def h_stmatrix(m, w, ins, mask):
    if "m8n8" not in ins.mods:
        raise Unsupported(f"{ins.opcode}: only m8n8 is modelled", ins)
    if (w.valid & w.live & ~mask).any():
        m.report(BARRIER_DIVERGENCE.id, f"{ins.opcode} (.sync.aligned) executed by part of {w.describe()}", [ins.loc])
    regs = ins.operands[1].elems
    space = space_of(ins) or "shared"
    for i in range(_nmat(ins)):
        v = np.broadcast_to(np.asarray(m.val(w, regs[i], 32), U64), (32,))
        for h in range(2):
            addrs = _matrix_lane_addrs(m, w, ins, mask, i, h)
            mem_write(m, w, ins, space, addrs, mask, 2, (v >> U64(16 * h)) & U64(0xFFFF))


@handler("ldmatrix")
def h_ldmatrix(m, w, ins, mask):
    if "m8n8" not in ins.mods:
        raise Unsupported(f"{ins.opcode}: only m8n8 is modelled", ins)
    if (w.valid & w.live & ~mask).any():
        m.report(BARRIER_DIVERGENCE.id, f"{ins.opcode} (.sync.aligned) executed by part of {w.describe()}", [ins.loc])
    dst = ins.operands[0]
    regs = dst.elems if isinstance(dst, VecOp) else (dst,)
    space = space_of(ins) or "shared"
    for i in range(_nmat(ins)):
        acc = np.zeros(32, U64)
        for h in range(2):
            addrs = _matrix_lane_addrs(m, w, ins, mask, i, h)
            acc |= mem_read(m, w, ins, space, addrs, mask, 2) << U64(16 * h)
        m.write(w, regs[i], acc, mask)


# --------------------------------------------------------------------------- mma.sync


def _mma_lanes(layout):
    return [(np.asarray(r), np.asarray(c)) for r, c in layout]


def _mma_accumulators(atype, btype):
    """The (D, C) types of mma.sync with these A/B types (§9.7.14 mma; ptxas 13.0 for
    sm_90a agrees): f16/bf16/tf32 operands as modelled with an f32 accumulator; .e4m3/.e5m2 (A and B
    each either, sm_89+) with D and C both .f32 or both .f16, without .satfinite; .s8/.u8 and
    .s4/.u4 (A and B each signed or not, of one width) with .s32; .f64 with .f64."""
    if atype in FP8 and btype in FP8:
        return (("f32", "f32"), ("f16", "f16"))
    if atype in wgmma.MMA_INT8 and btype in wgmma.MMA_INT8 or atype in wgmma.MMA_INT4 and btype in wgmma.MMA_INT4:
        return (("s32", "s32"),)
    if atype == btype == "f64":
        return (("f64", "f64"),)
    return (("f32", "f32"),) if atype == btype else ()


MMA_MODELLED = ("mma.sync.aligned.row.col with m16n8k16/m16n8k8 .f32.{f16,bf16}.{f16,bf16}.f32, m16n8k8/m16n8k4 "
                ".f32.tf32.tf32.f32, m16n8k32/m16n8k16 .{f32,f16}.{e4m3,e5m2}.{e4m3,e5m2}.{f32,f16}, "
                "m8n8k16/m16n8k16/m16n8k32 .s32.{s8,u8}.{s8,u8}.s32, m8n8k32/m16n8k32/m16n8k64 "
                ".s32.{s4,u4}.{s4,u4}.s32 (.satfinite with the integer types), m8n8k4/m16n8k4/m16n8k8/m16n8k16 "
                ".f64.f64.f64.f64")


def _int_elements(v, per, ty):
    """The ``per`` integer elements of each of a lane's 32-bit registers ``v`` (element i in bits
    (32/per)i and up), sign-extended for .s8/.s4."""
    width = 32 // per
    out = []
    for h in range(per):
        x = ((v >> U64(width * h)) & U64((1 << width) - 1)).astype(np.int64)
        if ty[0] == "s":
            x = np.where(x >= 1 << (width - 1), x - (1 << width), x)
        out.append(x)
    return out


@handler("mma")
def h_mma(m, w, ins, mask):
    tys = wgmma.mma_types(ins)
    shape = wgmma.mma_shape(ins)
    integer = len(tys) == 4 and tys[1] in wgmma.MMA_INT8 + wgmma.MMA_INT4
    if ("sp" in ins.mods or ("satfinite" in ins.mods and not integer) or len(tys) != 4
            or (tys[0], tys[3]) not in _mma_accumulators(tys[1], tys[2])
            or (shape, tys[1]) not in wgmma.MMA_SHAPES or (shape, tys[2]) not in wgmma.MMA_SHAPES
            or not ("row" in ins.mods and "col" in ins.mods)):
        raise Unsupported(f"{ins.opcode}: only {MMA_MODELLED} are modelled", ins)
    if (w.valid & w.live & ~mask).any():
        m.report(BARRIER_DIVERGENCE.id, f"{ins.opcode} (.sync.aligned) executed by part of {w.describe()}", [ins.loc])
    d, a, b, c = ins.operands[:4]
    dty, aty, bty, cty = tys
    bits = 64 if aty == "f64" else 32

    def vals(op, n):
        lanes = operand_lanes(m, w, op, bits)
        if len(lanes) != n:
            raise Unsupported(f"{ins.opcode}: expected {n} registers, got {len(lanes)}", ins)
        return lanes

    mm, nn, kk = wgmma.mma_dims(shape)
    per = wgmma.MMA_SHAPES[(shape, aty)]  # A and B elements per register (the same for both)
    width = 32 // per
    ai, bi, ci = (_mma_lanes(x) for x in wgmma.mma_fragment_layout(shape, aty))
    ncd = len(ci)  # C/D elements per lane (4 of an m16n8 shape, 2 of an m8n8 shape)
    if integer or aty == "f64":
        out = _mma_exact(ins, vals, (mm, nn, kk), per, (ai, bi, ci), tys)
    else:
        def fill(mat, op, lay, ty):
            for r, v in enumerate(vals(op, len(lay) // per)):
                for h in range(per):
                    mat[lay[per * r + h]] = to_f32(v >> U64(width * h), ty)

        A, B, C = np.zeros((mm, kk)), np.zeros((kk, nn)), np.zeros((mm, nn))
        fill(A, a, ai, aty)
        fill(B, b, bi, bty)
        cper = 1 if cty == "f32" else 2  # accumulator elements per register
        for r, v in enumerate(vals(c, ncd // cper)):
            for h in range(cper):
                C[ci[cper * r + h]] = to_f32(v >> U64(16 * h), cty)
        # The products of f16/bf16/tf32/e4m3/e5m2 values are exact in f64 (at most 11 x 11
        # significant bits); the sum of the K products and C is taken in f64 and rounded once,
        # to f32 (RN) or, for an f16 accumulator, to f16 (RN). PTX does not specify the tensor
        # core's accumulation order or internal precision, so results on hardware may differ in
        # the last bits (bench/conformance.py compares mma kernels by their largest ULP
        # difference); they agree exactly when every partial sum is representable.
        D = A @ B + C
        if dty == "f32":
            out = [D[ci[r]].astype(np.float32).view(np.uint32).astype(U64) for r in range(ncd)]
        else:
            out = [round_to(D[ci[2 * r]], "f16") | (round_to(D[ci[2 * r + 1]], "f16") << U64(16))
                   for r in range(ncd // 2)]
    dels = d.elems if isinstance(d, VecOp) else (d,)
    if len(dels) != len(out):
        raise Unsupported(f"{ins.opcode}: expected {len(out)} destination registers, got {len(dels)}", ins)
    for e, v in zip(dels, out):
        m.write(w, e, v, mask)


def _mma_exact(ins, vals, dims, per, lays, tys):
    """D registers of an integer or .f64 mma.sync.

    Integer (§9.7.14.5.2, "Integer"): D = A B + C computed exactly; without ``.satfinite`` the
    s32 result wraps modulo 2^32, with it the result is clamped to [-2^31, 2^31 - 1]. f64: each
    element of D is C's element followed by one fused multiply-add per k, in k order, each
    rounded to nearest even (``softfloat.fma``, IEEE 754 fma): the model of an FP64 tensor core
    as a chain of FMAs. PTX does not state the order; bench/conformance.py compares .f64 mma
    kernels with the tolerance of tensor-core instructions, and they agree exactly when every
    partial sum is representable."""
    (mm, nn, kk), (ai, bi, ci) = dims, lays
    dty, aty, bty, cty = tys
    a, b, c = ins.operands[1:4]
    ncd = len(ci)
    if aty == "f64":
        A, B, C = np.zeros((mm, kk), U64), np.zeros((kk, nn), U64), np.zeros((mm, nn), U64)
        for mat, op, lay in ((A, a, ai), (B, b, bi), (C, c, ci)):
            for r, v in enumerate(vals(op, len(lay))):
                mat[lay[r]] = v
        f64 = FORMATS["f64"]
        D = np.zeros((mm, nn), np.uint64)
        for i in range(mm):
            for j in range(nn):
                acc = int(C[i, j])
                for k in range(kk):
                    acc = softfloat.fma(f64, "rn", int(A[i, k]), int(B[k, j]), acc)
                D[i, j] = acc
        return [D[ci[r]].astype(U64) for r in range(ncd)]
    A, B, C = np.zeros((mm, kk), np.int64), np.zeros((kk, nn), np.int64), np.zeros((mm, nn), np.int64)
    for mat, op, lay, ty in ((A, a, ai, aty), (B, b, bi, bty)):
        for r, v in enumerate(vals(op, len(lay) // per)):
            for h, x in enumerate(_int_elements(v, per, ty)):
                mat[lay[per * r + h]] = x
    for r, v in enumerate(vals(c, ncd)):
        x = (v & U64(0xFFFFFFFF)).astype(np.int64)
        C[ci[r]] = np.where(x >= 1 << 31, x - (1 << 32), x)
    D = A @ B + C  # |A B| <= 2^7 2^8 64 per element: exact in int64
    if "satfinite" in ins.mods:
        D = np.clip(D, -(1 << 31), (1 << 31) - 1)
    return [(D[ci[r]] & 0xFFFFFFFF).astype(U64) for r in range(ncd)]
