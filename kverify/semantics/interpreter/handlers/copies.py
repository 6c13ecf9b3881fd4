"""Asynchronous copies: cp.async (per lane, generic proxy) and cp.async.bulk(.tensor) in
either direction (async proxy), issued as ``CopyOp``s completed when the scheduler chooses
(§9.7.9.25); their groups are in ``groups``.
"""
from __future__ import annotations

import numpy as np

from kverify.launch import dtypes
from kverify.semantics.ir.errors import Unsupported
from kverify.semantics.ir.nodes import Addr, Reg, Sym, VecOp, where as _fmt_loc
from kverify.semantics.ir.optable import cp_async_source
from kverify.semantics.memory_model import tma
from kverify.semantics.memory_model.protocols import async_groups as AG

from ..async_ops import READ_DONE, CopyOp
from ..hb import ASYNC, GENERIC
from ..memory import CTA_MASK, CTA_SHIFT, GLOBAL_BASE, PARAM_WINDOW, Fault, Region, load_bytes, proxy_space, store_bytes
from ..state import ASYNC_GENERIC, U64, low_mask
from .common import SPACE_MODS, bits_of, operand_lanes, registry, replicas, yield_once
from .memory import ATOM_FAMILY, atomic_update, fault

HANDLERS, handler = registry()


# --------------------------------------------------------------------------- async copies


def _copy_op(m, w, ins, kind, writes, reads, action, mbar=None, group=None, nbytes=0, proxy=ASYNC):
    agent = m.new_agent(f"{kind} issued by {w.describe()} at {_fmt_loc(ins.loc)}")
    op = CopyOp(m, w, ins, agent, kind, writes, reads, action, mbar, group, nbytes, proxy)
    for region, clk in [(r, READ_DONE + 1) for r, _ in writes] + [(r, READ_DONE) for r, _ in reads]:
        owner = region.cta  # another CTA's shared memory: its exit must follow the completion
        if owner is not None and owner is not w.cta:
            m.remote_smem(w, owner, agent, clk, ins.loc, f"{kind} issued by {w.describe()}")
    for region, idx in writes:
        if region.shadow is None:  # race freedom proved before the run (``Region.untrack``)
            continue
        if region.shadow.lossy(idx):
            m.dropped_reader(f"{_fmt_loc(ins.loc)}: an async write to {region.space} bytes whose earlier readers the race "
                     f"shadow could not all keep")
        if m.check:
            sp = proxy_space(region)
            conf = region.shadow.check_write(idx, agent, op.vc, m.fence_clks[sp], None, proxy,
                                             issuer_fence=w.proxy_fence_vc.get(sp))
            for c in conf:
                m._race(w, ins, region, c, "async write")
            if m.trace is not None:
                m.trace.access(region.shadow, idx, agent, op.vc, op.loc, ins, "write", proxy, w)
        region.shadow.pend_w[idx] = agent
        region.shadow.pend_w_loc[idx] = m.loc_id(ins.loc)
    for region, idx in reads:
        if region.shadow is None:
            continue
        if m.check:
            sp = proxy_space(region)
            conf = region.shadow.check_read(idx, agent, op.vc, m.fence_clks[sp], None, proxy,
                                            issuer_fence=w.proxy_fence_vc.get(sp))
            for c in conf:
                m._race(w, ins, region, c, "async read")
            if m.trace is not None:
                m.trace.access(region.shadow, idx, agent, op.vc, op.loc, ins, "read", proxy, w)
        region.shadow.set_pending_read(idx, agent, m.loc_id(ins.loc))
    if m.footprint is not None or m.pdl_prior is not None:  # a PDL pair: the copy's global bytes, as of its issue
        late = np.flatnonzero(~w.pdl_waited & w.live)  # a lane not yet past griddepcontrol.wait, if any
        lane = int(late[0]) if len(late) else 0
        for region, idx, kind in [(r, i, "write") for r, i in writes] + [(r, i, "read") for r, i in reads]:
            if region is m.gmem:
                m._grid_footprint(w, ins, region, idx, np.full(len(idx), lane), kind)
    m.inflight.append(op)
    w.release_tick()
    return op


def _bytes_idx(start, n):
    return np.arange(start, start + n, dtype=np.int64)


def _resolve1(m, w, ins, space, addr, nbytes):
    region, offs = m.resolve(w, space, np.array([addr], np.int64), np.array([True]), nbytes)
    if not isinstance(region, Region):
        raise Unsupported(f"{ins.opcode}: operand in {space} space", ins)
    return region, int(offs[0])


@handler("cp.async")
def h_cp_async(m, w, ins, mask):
    ops = ins.operands
    dst = m.addr_values(w, ops[0])
    src = m.addr_values(w, ops[1])
    size = np.broadcast_to(np.asarray(m.val(w, ops[2], 32), U64), (32,))
    src_size_op, ignore_src = cp_async_source(ins, m.reg_width)
    src_size = None
    if src_size_op is not None:
        src_size = np.broadcast_to(np.asarray(m.val(w, src_size_op, 32), U64), (32,))
    elif ignore_src is not None:  # true: zeros copied, nothing read
        src_size = np.where(np.broadcast_to(m.pred(w, ignore_src), (32,)), U64(0), size)
    lanes = np.flatnonzero(mask)
    if len(lanes) and (size[lanes] == size[lanes[0]]).all() and \
            (src_size is None or (src_size[lanes] == src_size[lanes[0]]).all()):
        fast = _cp_async_uniform(m, w, ins, dst, src, mask, lanes, int(size[lanes[0]]),
                                 None if src_size is None else int(src_size[lanes[0]]))
        if fast is not None:
            return fast
    writes, reads, moves = [], [], []
    for lane in lanes:
        n = int(size[lane])
        sn = min(int(src_size[lane]), n) if src_size is not None else n
        try:  # only the src-size bytes are read: a zero-fill lane's source is never accessed
            dreg, doff = _resolve1(m, w, ins, "shared", int(dst[lane]), n)
            sreg, soff = _resolve1(m, w, ins, "global", int(src[lane]), sn) if sn else (None, 0)
        except Fault as f:
            fault(m, w, ins, f)
            continue
        writes.append((dreg, _bytes_idx(doff, n)))
        if sn:
            reads.append((sreg, _bytes_idx(soff, sn)))
        moves.append((dreg, doff, sreg, soff, n, sn))
    if not moves:
        return None

    def action():
        for dreg, doff, sreg, soff, n, sn in moves:
            dreg.data[doff:doff + n] = 0
            if sn:
                dreg.data[doff:doff + sn] = sreg.data[soff:soff + sn]

    writes = _merge(writes)
    reads = _merge(reads)
    op = _copy_op(m, w, ins, "cp.async", writes, reads, action, group=w.cp_async, proxy=ASYNC_GENERIC)
    op.lanes = mask.copy()  # whose copies these are (cp.async.mbarrier.arrive waits for a lane's own)
    m.step(w.cp_async, AG.CpAsync(op.agent), ins, w.describe())
    return yield_once()


def _cp_async_uniform(m, w, ins, dst, src, mask, lanes, n, src_size):
    """``cp.async`` whose lanes all copy ``n`` bytes: resolved for all lanes at once; ``None``
    when an address faults (the per-lane path then reports the lane)."""
    sn = min(src_size, n) if src_size is not None else n
    try:  # only the src-size bytes are read
        dreg, doffs = m.resolve(w, "shared", dst, mask, n)
        sreg, soffs = m.resolve(w, "global", src, mask, sn) if sn else (dreg, doffs)
    except Fault:
        return None
    if not isinstance(dreg, Region) or not isinstance(sreg, Region):
        raise Unsupported(f"{ins.opcode}: operand outside shared/global memory", ins)
    dsts = np.asarray(doffs, np.int64)[lanes]
    srcs = np.asarray(soffs, np.int64)[lanes]
    widx = (dsts[:, None] + np.arange(n)).reshape(-1)
    d_sn = (dsts[:, None] + np.arange(sn)).reshape(-1)
    s_sn = (srcs[:, None] + np.arange(sn)).reshape(-1)

    def action():
        dreg.data[widx] = 0
        dreg.data[d_sn] = sreg.data[s_sn]

    writes = [(dreg, np.unique(widx))]
    reads = [(sreg, np.unique(s_sn))] if sn else []
    op = _copy_op(m, w, ins, "cp.async", writes, reads, action, group=w.cp_async, proxy=ASYNC_GENERIC)
    op.lanes = mask.copy()
    m.step(w.cp_async, AG.CpAsync(op.agent), ins, w.describe())
    return yield_once()


def _merge(pairs):
    by = {}
    for region, idx in pairs:
        by.setdefault(id(region), [region, []])[1].append(idx)
    return [(r, np.unique(np.concatenate(ix))) for r, ix in by.values()]


def _multicast(m, w, ins, ops, at, lane, dst, mbar, mods):
    """The (destination, mbarrier) shared::cluster address pairs of one lane's copy: with
    ``.multicast::cluster`` one per CTA whose rank is set in the 16-bit ``ctaMask`` operand
    (``ops[at]``), at the same CTA-relative offsets as ``dst`` and ``mbar`` (PTX ISA §9.7.9.25.4.1
    and §9.7.9.25.5.1: the data and the mbarrier signal are multicast); else ``dst``/``mbar``
    themselves."""
    if "multicast::cluster" not in mods:
        return [(dst, mbar)]
    cta_mask = int(np.broadcast_to(np.asarray(m.val(w, ops[at], 16), U64), (32,))[lane]) & 0xFFFF
    ranks = [r for r in range(16) if cta_mask >> r & 1]
    if not ranks:
        return []
    return [(((r + 1) << CTA_SHIFT) | (dst & CTA_MASK), ((r + 1) << CTA_SHIFT) | (mbar & CTA_MASK)) for r in ranks]


def _one_per_replica(m, w, ins, mask, key) -> np.ndarray:
    """``mask`` with one lane kept of each set of lanes whose store ``key(lane)`` is identical
    (same source bytes, same destination): each lane would issue a copy writing the same bytes
    to the same place; reported as ``async-group.store-replicated`` (a warning) and performed once."""
    mask, shared = replicas(mask, key)
    for lanes in shared:
        m.report(AG.STORE_REPLICATED.id, f"{ins.opcode} executed by {len(lanes)} lanes of warp {w.index} of "
                 f"{w.cta.describe()} (lanes {lanes[0]}..{lanes[-1]}) with identical operands: {len(lanes)} "
                 f"copies of the same bytes to the same place; performed once ({AG.STORE_REPLICATED.section})",
                 [ins.loc], lanes=len(lanes))
    return mask


def _bulk_operands(m, w, ins):
    """``(dst space, src space, dst, src, size, mbar)`` per lane of a non-tensor bulk operation
    (``cp.async.bulk``, ``cp.reduce.async.bulk``): ``mbar`` for a shared-memory destination,
    whose completion is the barrier's complete_tx, else None (a bulk async-group)."""
    mods, ops = ins.mods, ins.operands
    dst_sp = mods[0] if mods and mods[0] in SPACE_MODS else None
    src_sp = mods[1] if len(mods) > 1 and mods[1] in SPACE_MODS else None
    size = np.broadcast_to(np.asarray(m.val(w, ops[2], 32), U64), (32,))
    to_shared = dst_sp is not None and dst_sp.startswith("shared")
    mb = m.addr_values(w, ops[3]) if to_shared else None
    return dst_sp, src_sp, m.addr_values(w, ops[0]), m.addr_values(w, ops[1]), size, mb


def _issue_bulk(m, w, ins, writes, reads, action, dst_sp, mbar, n):
    """The async-proxy operation of one lane's bulk copy or reduction: completed through the
    barrier at ``mbar`` (a shared-memory destination) or the warp's bulk async-group."""
    if mbar is not None:
        mspace = "shared::cluster" if dst_sp == "shared::cluster" else "shared::cta"
        _copy_op(m, w, ins, ins.op, writes, reads, action, mbar=m.mbar_at(w, mspace, mbar, ins), nbytes=n)
    else:
        op = _copy_op(m, w, ins, ins.op, writes, reads, action, group=w.bulk)
        m.step(w.bulk, AG.BulkCopy(op.agent), ins, w.describe())


@handler("cp.async.bulk")
def h_bulk(m, w, ins, mask):
    ops = ins.operands
    dst_sp, src_sp, dst, src, size, mb = _bulk_operands(m, w, ins)
    to_shared = mb is not None
    if not to_shared:
        mask = _one_per_replica(m, w, ins, mask, lambda lane: (int(dst[lane]), int(src[lane]), int(size[lane])))
    for lane in np.flatnonzero(mask):
        n = int(size[lane])
        targets = (_multicast(m, w, ins, ops, 4, lane, int(dst[lane]), int(mb[lane]), ins.mods) if to_shared
                   else [(int(dst[lane]), None)])
        for d, mbar in targets:
            try:
                dreg, doff = _resolve1(m, w, ins, dst_sp, d, n)
                sreg, soff = _resolve1(m, w, ins, src_sp, int(src[lane]), n)
            except Fault as f:
                fault(m, w, ins, f)
                continue

            def action(dreg=dreg, doff=doff, sreg=sreg, soff=soff, n=n):
                dreg.data[doff:doff + n] = sreg.data[soff:soff + n]

            _issue_bulk(m, w, ins, [(dreg, _bytes_idx(doff, n))], [(sreg, _bytes_idx(soff, n))], action, dst_sp,
                        mbar, n)
    return yield_once()


REDUCE_OPS = tuple(ATOM_FAMILY) + ("inc", "dec")


def _reduces(instr) -> bool:
    """A bulk reduction (its row's destination is read-modify-written)."""
    return instr.row is not None and instr.row.operands[0].access == "update"


def _alone(m, ins, region, idx):
    """``Unsupported`` when another asynchronous reduction (bulk, red.async) wrote or is writing bytes ``idx`` of ``region``
    (in flight, or the last writer): the atomicity of reductions to the same elements is not
    modelled (a second one would read as a write-write race)."""
    writers = (m.ops_by_agent.get(int(a)) for a in np.unique(np.concatenate(
        [region.shadow.pend_w[idx], region.shadow.w_agent[idx]])) if a >= 0)
    if any(x is not None and _reduces(x.instr) for x in writers):
        raise Unsupported(f"{ins.opcode}: overlaps the bytes of another asynchronous reduction; the atomicity of "
                          "reductions to the same elements is not modelled", ins)


def _reduce_into(data, elems, nb, op, ty, fmods, vals):
    """The ``nb``-byte elements of ``data`` at byte offsets ``elems`` become ``op(old, vals)``."""
    new = atomic_update(op, ty, fmods, load_bytes(data, elems, nb), vals)
    store_bytes(data, elems, nb, np.asarray(new, U64) & U64(low_mask(8 * nb)))


@handler("cp.reduce.async.bulk")
def h_bulk_reduce(m, w, ins, mask):
    """§9.7.9.25.4.3: each element of ``[dst]`` becomes ``op(dst, src)`` -- an atomic update
    per element -- for ``size`` bytes of shared::cta source, completed through a bulk async-group
    (global destination) or an mbarrier's complete_tx (shared::cluster destination). Reductions
    that may overlap another in flight (or one no order separates from it) are not modelled:
    their per-element atomicity is (``Unsupported``, an unknown)."""
    op = next((x for x in ins.mods if x in REDUCE_OPS), None)
    tys = ins.types()
    dst_sp, src_sp, dst, src, size, mb = _bulk_operands(m, w, ins)
    if op is None or not tys or dst_sp is None or src_sp is None:
        raise Unsupported(f"{ins.opcode}: reduction operation, type or state spaces not understood", ins)
    ty = tys[0]
    nb = bits_of(ty) // 8
    fmods = frozenset(x for x in ins.mods if x in ("rn", "ftz"))
    # (every executing lane issues its reduction: unlike a store, lanes with identical operands
    # are not one copy -- they add the source once each)
    for lane in np.flatnonzero(mask):
        n = int(size[lane])
        if n % nb:
            raise Unsupported(f"{ins.opcode}: size {n} is not a multiple of the {nb}-byte element", ins)
        try:
            dreg, doff = _resolve1(m, w, ins, dst_sp, int(dst[lane]), n)
            sreg, soff = _resolve1(m, w, ins, src_sp, int(src[lane]), n)
        except Fault as f:
            fault(m, w, ins, f)
            continue
        didx = _bytes_idx(doff, n)
        _alone(m, ins, dreg, didx)
        elems = np.arange(doff, doff + n, nb, dtype=np.int64)
        srcs = np.arange(soff, soff + n, nb, dtype=np.int64)

        def action(dreg=dreg, sreg=sreg, elems=elems, srcs=srcs):
            _reduce_into(dreg.data, elems, nb, op, ty, fmods, load_bytes(sreg.data, srcs, nb))

        _issue_bulk(m, w, ins, [(dreg, didx)], [(sreg, _bytes_idx(soff, n))], action, dst_sp,
                    None if mb is None else int(mb[lane]), n)
    return yield_once()


@handler("cp.reduce.async.bulk.tensor")
def h_bulk_reduce_tensor(m, w, ins, mask):
    """§9.7.9.25.5.3: each in-bounds element of the box at ``tensorCoords`` of ``tensorMap``
    becomes ``op(element, source element)`` -- an atomic update per element, of the tensor
    map's element type -- from the box read out of shared::cta memory (unswizzled as a tile
    store reads it); out-of-bound elements are dropped; completed through the bulk async-group.
    Like the byte-range reduction: each executing lane issues its own; reductions that may overlap
    another in flight are ``Unsupported`` (per-element atomicity across reductions)."""
    mods, ops = ins.mods, ins.operands
    op = next((x for x in mods if x in REDUCE_OPS), None)
    other = [x for x in mods if x in ("im2col_no_offs", "tile::scatter4", "tile::gather4", "im2col")]
    if op is None or other:
        raise Unsupported(f"{ins.opcode}: " + (f".{other[0]} is not modelled" if other else
                                               "reduction operation not understood"), ins)
    tm_a, src_a = ops[0], ops[1]
    tm, gstart, tname = _tmap_of(m, w, ins, tm_a)
    if tm.mode != "tile":
        raise Unsupported(f"{ins.opcode}: a tile-mode reduction through the {tm.mode}-mode tensor map {tname}", ins)
    row = dtypes.lookup(tm.dtype)
    ty = None if row is None else row.ptx
    if ty is None or ty[0] == "b" and ty[1:].isdigit():
        raise Unsupported(f"{ins.opcode}: tensor map element type {tm.dtype} is not a reduction type", ins)
    nb, esize = tm.box_bytes, tm.element_size
    gregion = m.gmem
    srcs = m.addr_values(w, src_a)
    cvals = [np.broadcast_to(np.asarray(m.val(w, c, 32), U64), (32,)) for c in tm_a.coords]
    for lane in np.flatnonzero(mask):
        coords = [int(c[lane]) for c in cvals]
        coords = [c - (1 << 32) if c >= 1 << 31 else c for c in coords]
        try:
            sreg, soff = _resolve1(m, w, ins, "shared::cta", int(srcs[lane]), nb)
        except Fault as f:
            fault(m, w, ins, f)
            continue
        offs, inb = tma.copy_geometry(tm, coords)
        if _past_buffer(m, w, ins, tm, gstart, tname, offs, inb, lane):
            continue
        gidx = (offs[inb][:, None] + np.arange(esize)).reshape(-1) + gstart
        _alone(m, ins, gregion, gidx)

        def action(sreg=sreg, soff=soff, coords=coords):
            dst, elems = tma.tile_store_elements(tm, coords, sreg.data[soff:soff + nb], soff)
            _reduce_into(gregion.data, dst + gstart, esize, op, ty, frozenset(),
                         load_bytes(elems.reshape(-1), np.arange(0, elems.size, esize, dtype=np.int64), esize))

        _issue_bulk(m, w, ins, [(gregion, gidx)], [(sreg, _bytes_idx(soff, nb))], action, "global", None, nb)
    return yield_once()


def _tmap_of(m, w, ins, a: Addr):
    if isinstance(a.base, Sym):
        off = m.param_off.get(a.base.name, (None,))[0]
        if off is not None:
            off += a.offset + a.base.offset  # a tensor map inside a by-value struct
    else:
        v = int(np.broadcast_to(np.asarray(m.reg(w, a.base.name), U64), (32,))[0])
        off = v - PARAM_WINDOW if v >= PARAM_WINDOW else None
        if off is None or off not in m.tensormaps:
            # a generic address of a tensor map in global memory is not modelled
            raise Unsupported("tensor map not passed as a by-value kernel parameter", ins)
    if off not in m.tensormaps:
        raise Unsupported("tensor-map operand is not a tensor-map parameter", ins)
    return m.tensormaps[off]


def _past_buffer(m, w, ins, tm, gstart, tname, offs, inb, lane) -> bool:
    """True, with a bounds finding, when an element of the tensor a copy through ``tm`` reads or
    writes lies past the end of the buffer the map names: the map's shape and strides describe
    more than the buffer holds (§5.5.5: the hardware checks coordinates against the map's shape,
    never against the allocation)."""
    if not inb.any():
        return False
    end = int(offs[inb].max()) + tm.element_size
    name, size = next(((n, z) for n, s, z in m.gmem.allocs if s == gstart), (None, None))
    if size is None or end <= size:
        return False
    fault(m, w, ins, Fault(f"a tensor element at byte {end - tm.element_size} of tensor map {tname} lies past the end "
                           f"of its buffer {name} ({size} bytes): the map's shape and strides reach {tm.extent_bytes} "
                           f"bytes", lane,
                           address=GLOBAL_BASE + gstart + end - tm.element_size))
    return True


@handler("cp.async.bulk.tensor")
def h_bulk_tensor(m, w, ins, mask):
    mods = ins.mods
    ops = ins.operands
    wide = [x for x in mods if x in ("im2col::w", "im2col::w::128")]
    if wide:
        raise Unsupported(f"{ins.opcode}: .{wide[0]} is an sm_100 load mode (PTX ISA §5.5.5); not modelled", ins)
    if "im2col_no_offs" in mods:
        raise Unsupported(f"{ins.opcode}: .im2col_no_offs is not modelled", ins)
    im2col = "im2col" in mods
    spaces = [x for x in mods if x in SPACE_MODS]
    load = spaces and spaces[0].startswith("shared")
    if load:
        dst_a, tm_a = ops[0], ops[1]
    else:
        tm_a, src_a = ops[0], ops[1]
    tm, gstart, tname = _tmap_of(m, w, ins, tm_a)
    if im2col != (tm.mode == "im2col"):
        # §9.7.9.27: the copy's load mode must be the tensor map's
        raise Unsupported(f"{ins.opcode}: a {'.im2col' if im2col else 'tile-mode'} copy through the "
                          f"{tm.mode}-mode tensor map {tname} (the modes must agree; not modelled)", ins)
    offsets = None
    if im2col:
        # [dst], [tmap, {coords}], [mbar], {im2colOffsets}(, ctaMask)(, policy) -- §9.7.9.27
        if len(ops) < 4 or not isinstance(ops[3], VecOp):
            raise Unsupported(f"{ins.opcode}: the im2col offsets operand is missing", ins)
        offsets = [np.broadcast_to(np.asarray(m.val(w, o, 16), U64), (32,)) for o in ops[3].elems]
    nb = tm.box_bytes
    gregion = m.gmem
    gbuf = gregion.data[gstart:]
    if not load:
        srcs = m.addr_values(w, src_a)
        cvals = [np.broadcast_to(np.asarray(m.val(w, c, 32), U64), (32,)) for c in tm_a.coords]
        mask = _one_per_replica(m, w, ins, mask, lambda lane: (int(srcs[lane]), tuple(int(c[lane]) for c in cvals)))
    for lane in np.flatnonzero(mask):
        coords = [int(np.broadcast_to(np.asarray(m.val(w, c, 32), U64), (32,))[lane]) for c in tm_a.coords]
        coords = [c - (1 << 32) if c >= 1 << 31 else c for c in coords]
        offs_l = [int(o[lane]) & 0xFFFF for o in offsets] if im2col else ()
        try:
            offs, inb = tma.copy_geometry(tm, coords, offs_l)
        except tma.Im2colUnsupported as e:
            raise Unsupported(f"{ins.opcode}: {e}", ins) from None
        if _past_buffer(m, w, ins, tm, gstart, tname, offs, inb, lane):
            continue
        gidx = (offs[inb][:, None] + np.arange(tm.element_size)).reshape(-1) + gstart
        if load:
            d = int(m.addr_values(w, dst_a)[lane])
            mb = int(m.addr_values(w, ops[2])[lane])
            mspace = "shared::cluster" if spaces[0] == "shared::cluster" else "shared::cta"
            for d, mbar in _multicast(m, w, ins, ops, 4 if im2col else 3, lane, d, mb, mods):
                try:
                    dreg, doff = _resolve1(m, w, ins, spaces[0], d, nb)
                except Fault as f:
                    fault(m, w, ins, f)
                    continue
                if tm.swizzle != "none" and doff % 128:  # §9.7.9.27: a swizzled tile lands 128-byte aligned
                    fault(m, w, ins, Fault(f"TMA shared-memory destination at offset {doff:#x} must be 128-byte "
                                           f"aligned for the {tm.swizzle} swizzle", lane))
                    continue

                def action(dreg=dreg, doff=doff, coords=coords, offs_l=offs_l):
                    if im2col:
                        dreg.data[doff:doff + nb] = tma.tma_load_im2col(gbuf, tm, coords, offs_l, doff)
                    else:
                        dreg.data[doff:doff + nb] = tma.tma_load_tile(gbuf, tm, coords, doff)

                key = m.mbar_at(w, mspace, mbar, ins)
                _copy_op(m, w, ins, ins.op, [(dreg, _bytes_idx(doff, nb))], [(gregion, gidx)],
                         action, mbar=key, nbytes=nb)
        else:
            s = int(m.addr_values(w, src_a)[lane])
            sreg, soff = _resolve1(m, w, ins, spaces[-1] if spaces else "shared::cta", s, nb)

            def action(sreg=sreg, soff=soff, coords=coords):
                tma.tma_store_tile(gbuf, tm, coords, sreg.data[soff:soff + nb], soff)

            op = _copy_op(m, w, ins, ins.op, [(gregion, gidx)], [(sreg, _bytes_idx(soff, nb))],
                          action, group=w.bulk)
            m.step(w.bulk, AG.BulkCopy(op.agent), ins, w.describe())
    return yield_once()


# --------------------------------------------------------------------------- st.async / red.async


def _remote_async(m, w, ins, mask, update):
    """``st.async`` / ``red.async`` (§9.7.9.12, §9.7.13.6): each executing lane stores (or reduces
    with ``update``) its value into the shared memory of a CTA of the cluster at ``[a]`` without
    waiting; the operation completes with a complete-tx of its bytes on the mbarrier at ``[mbar]``,
    which is in the same CTA as ``[a]``, with .release semantics at cluster scope. The access is a
    weak (st.async) or relaxed (red.async) generic-proxy one: a thread that observes the barrier's
    phase complete reads the data without a proxy fence. Values are read at issue."""
    tys = ins.types()
    if not tys or not isinstance(ins.operands[0], Addr) or not isinstance(ins.operands[2], Addr):
        raise Unsupported(f"{ins.opcode}: operands not understood", ins)
    bits = bits_of(tys[-1])
    vec = 4 if "v4" in ins.mods else 2 if "v2" in ins.mods else 1
    eb = bits // 8
    n = eb * vec
    vals = operand_lanes(m, w, ins.operands[1], bits)
    if len(vals) != vec:
        raise Unsupported(f"{ins.opcode}: {len(vals)} source registers for a {vec}-element form", ins)
    dst, mb = m.addr_values(w, ins.operands[0]), m.addr_values(w, ins.operands[2])
    for lane in np.flatnonzero(mask):
        if int(dst[lane]) % n:
            raise Unsupported(f"{ins.opcode}: address {int(dst[lane]):#x} of lane {lane} is not aligned to the "
                              f"{n}-byte access (undefined, §9.7.9.12)", ins)
        try:
            dreg, doff = _resolve1(m, w, ins, "shared::cluster", int(dst[lane]), n)
        except Fault as f:
            fault(m, w, ins, f)
            continue
        key = m.mbar_at(w, "shared::cluster", int(mb[lane]), ins)
        if key[0].smem is not dreg:
            raise Unsupported(f"{ins.opcode}: the mbarrier of lane {lane} is not in the CTA its data goes to "
                              f"(undefined, §9.7.9.12)", ins)
        elems = np.arange(doff, doff + n, eb, dtype=np.int64)
        idx = _bytes_idx(doff, n)
        if update is not None:
            _alone(m, ins, dreg, idx)
        v = np.array([x[lane] for x in vals], U64)

        def action(dreg=dreg, elems=elems, v=v):
            if update is None:
                store_bytes(dreg.data, elems, eb, v)
            else:
                store_bytes(dreg.data, elems, eb, np.asarray(update(load_bytes(dreg.data, elems, eb), v), U64)
                            & U64(low_mask(bits)))

        _copy_op(m, w, ins, ins.op, [(dreg, idx)], [], action, mbar=key, nbytes=n, proxy=GENERIC)
    return yield_once()


@handler("st.async")
def h_st_async(m, w, ins, mask):
    return _remote_async(m, w, ins, mask, None)


@handler("red.async")
def h_red_async(m, w, ins, mask):
    op = next((x for x in ins.mods if x in REDUCE_OPS), None)
    tys = ins.types()
    if op is None or not tys:
        raise Unsupported(f"{ins.opcode}: reduction operation or type not understood", ins)
    ty = tys[-1]
    return _remote_async(m, w, ins, mask, lambda old, b: atomic_update(op, ty, frozenset(), old, b))
