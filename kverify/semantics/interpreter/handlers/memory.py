"""Memory families: address conversion (cvta, mapa, getctarank), ld/ldu/st over every
state space (global, shared::cta/cluster, local, param, const) with the happens-before race
checks of ``Machine.access`` (a strong ld/st passes its memory order and scope,
``hb.Strength``, §8.4-8.5), and atom/red (§9.7.9.8-9.7.9.12, §9.7.13.5-6).
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from kverify.semantics.ir.errors import Unsupported
from kverify.semantics.ir.nodes import Addr, Reg, Sym, VecOp, where as _fmt_loc
from kverify.semantics.values import atom_float_mods, evaluate
from kverify.semantics.memory_model.execution import BOUNDS, MISALIGNED, RACE_GLOBAL, UNINITIALIZED

from ..hb import GENERIC
from ..memory import (CONST_WINDOW, CTA_MASK, CTA_SHIFT, LOCAL_WINDOW, PARAM_WINDOW, SHARED_WINDOW, Fault, Region, load_bytes,
                      store_bytes)
from ..state import D, U64, Wait, low_mask
from .common import bits_of, operand_lanes, registry, space_of

HANDLERS, handler = registry()


# --------------------------------------------------------------------------- address ops


@handler("cvta")
def h_cvta(m, w, ins, mask):
    sp = space_of(ins)
    a = np.asarray(m.val(w, ins.operands[1], 64), U64).astype(np.int64)
    a = np.broadcast_to(a, (32,))
    to = "to" in ins.mods
    if sp == "global" or sp is None:
        r = a
    elif sp in ("shared", "shared::cta", "shared::cluster"):
        r = (a - SHARED_WINDOW) if to else (a + SHARED_WINDOW)
    elif sp == "local":
        r = (a - LOCAL_WINDOW) if to else (a + LOCAL_WINDOW)
    elif sp in ("param", "param::entry"):
        r = (a - PARAM_WINDOW) if to else a + (PARAM_WINDOW if (a < PARAM_WINDOW).all() else 0)
    elif sp == "const":
        r = (a - CONST_WINDOW) if to else (a + CONST_WINDOW)
    else:
        raise Unsupported(f"cvta for {sp}", ins)
    m.write(w, ins.operands[0], r.astype(U64), mask)


@handler("mapa")
def h_mapa(m, w, ins, mask):
    a = np.broadcast_to(np.asarray(m.val(w, ins.operands[1], 64), U64).astype(np.int64), (32,))
    rank = np.broadcast_to(np.asarray(m.val(w, ins.operands[2], 32), U64).astype(np.int64), (32,))
    generic = space_of(ins) is None
    off = (a - SHARED_WINDOW if generic else a) & CTA_MASK
    r = ((rank + 1) << CTA_SHIFT) | off
    if generic:
        r = r + SHARED_WINDOW
    m.write(w, ins.operands[0], r.astype(U64), mask)


@handler("getctarank")
def h_getctarank(m, w, ins, mask):
    a = np.broadcast_to(np.asarray(m.val(w, ins.operands[1], 64), U64).astype(np.int64), (32,))
    if space_of(ins) is None:
        a = a - SHARED_WINDOW
    rank = a >> CTA_SHIFT
    r = np.where(rank == 0, w.cta.rank, rank - 1)
    m.write(w, ins.operands[0], r.astype(U64), mask)


# --------------------------------------------------------------------------- loads / stores


def elem_type(ins):
    tys = ins.types()
    if not tys:
        raise Unsupported(f"{ins.opcode}: no type", ins)
    return tys[-1]


def _sign_extend(v, bits):
    v = v & U64(low_mask(bits))
    sign = U64(1 << (bits - 1))
    return np.where(v & sign, v | U64(~low_mask(bits) & 0xFFFFFFFFFFFFFFFF), v)


def mem_read(m, w, ins, space, addrs, mask, nbytes, proxy=GENERIC, strong=None):
    """Values (uint64 per lane) of ``nbytes`` at per-lane addresses (``strong``: the
    ``hb.Strength`` of a strong load)."""
    try:
        region, offs = m.resolve(w, space, addrs, mask, nbytes, ins)
    except Fault as f:
        return fault(m, w, ins, f)
    if region is None:
        return np.zeros(32, U64)
    if region == "param":
        offs = np.asarray(offs, np.int64)
        out = np.zeros(32, U64)
        lanes = np.flatnonzero(mask)
        if ins.operands and isinstance(ins.operands[1] if len(ins.operands) > 1 else None, Addr):
            pass
        # call-site / function parameters live per lane
        name = _param_var(m, w, offs, lanes)
        if name is not None:
            store, base = name
            o = offs[lanes] - base
            if (o + nbytes > store.shape[1]).any():
                return fault(m, w, ins, _param_past(store, o, lanes, nbytes))
            out[lanes] = load_bytes_2d(store, lanes, o, nbytes)
            return out
        past = offs[lanes] + nbytes > len(m.param_mem)
        if past.any():  # e.g. ld.param.u64 of the last, 4-byte parameter
            lane = int(lanes[np.flatnonzero(past)[0]])
            return fault(m, w, ins, Fault(f"parameter access of {nbytes} bytes at offset {int(offs[lane]):#x} is past "
                                          f"the end of the {len(m.param_mem)}-byte parameter space", lane))
        out[lanes] = load_bytes(m.param_mem, offs[lanes], nbytes)
        return out
    if region == "const":
        out = np.zeros(32, U64)
        lanes = np.flatnonzero(mask)
        out[lanes] = load_bytes(m.const_mem, np.asarray(offs, np.int64)[lanes], nbytes)
        return out
    if region == "local":
        return _local(m, w, ins, np.asarray(offs, np.int64), mask, nbytes)
    m.access(w, ins, region, offs, nbytes, mask, "read", proxy, strong=strong)
    out = np.zeros(32, U64)
    lanes = np.flatnonzero(mask)
    out[lanes] = load_bytes(region.data, offs[lanes], nbytes)
    return out


def mem_write(m, w, ins, space, addrs, mask, nbytes, vals, strong=None):
    try:
        region, offs = m.resolve(w, space, addrs, mask, nbytes, ins)
    except Fault as f:
        fault(m, w, ins, f)
        return
    if region is None:
        return
    lanes = np.flatnonzero(mask)
    vals = np.broadcast_to(np.asarray(vals, U64), (32,))
    if region == "param":
        offs = np.asarray(offs, np.int64)
        name = _param_var(m, w, offs, lanes)
        if name is None:
            raise Unsupported("store to a kernel parameter", ins)
        store, base = name
        if (offs[lanes] - base + nbytes > store.shape[1]).any():
            fault(m, w, ins, _param_past(store, offs[lanes] - base, lanes, nbytes))
            return
        for i in range(nbytes):
            store[lanes, offs[lanes] - base + i] = ((vals[lanes] >> U64(8 * i)) & U64(0xFF)).astype(np.uint8)
        return
    if region == "local":
        _local(m, w, ins, np.asarray(offs, np.int64), mask, nbytes, vals)
        return
    if region == "const":
        raise Unsupported("store to const space", ins)
    if m.check and len(lanes) > 1:
        o = offs[lanes]
        uniq, first = np.unique(o, return_index=True)
        if len(uniq) < len(o):
            for u in uniq:
                ls = lanes[o == u]
                if len(ls) > 1 and len(set(vals[ls].tolist())) > 1:
                    m.report(RACE_GLOBAL.id if region.shadow is None else region.shadow.race_rule,
                             f"lanes {int(ls[0])} and {int(ls[1])} of {w.describe()} store different values to "
                             f"{region.space} {region.owner(int(u))} in one instruction at {_fmt_loc(ins.loc)}",
                             [ins.loc], address=int(u))
                    break
    m.access(w, ins, region, offs, nbytes, mask, "write", strong=strong, new=vals)
    store_bytes(region.data, offs[lanes], nbytes, vals[lanes])


def load_bytes_2d(store, lanes, offs, nbytes):
    out = np.zeros(len(lanes), U64)
    for i in range(nbytes):
        out |= store[lanes, offs + i].astype(U64) << U64(8 * i)
    return out


def _param_var(m, w, offs, lanes):
    """Per-lane storage of a call-site/function ``.param`` variable holding ``offs``."""
    if not w.params or not len(lanes):
        return None
    o = int(offs[lanes[0]])
    for name, (base, store) in w.params.items():
        if base <= o < base + store.shape[1]:
            return store, base
    return None


def _param_past(store, o, lanes, nbytes):
    k = int(np.flatnonzero(o + nbytes > store.shape[1])[0])
    return Fault(f".param access of {nbytes} bytes at offset {int(o[k])} is past the end of the "
                 f"{store.shape[1]}-byte .param variable", int(lanes[k]))


def _local(m, w, ins, offs, mask, nbytes, vals=None):
    size = max(m.local_size, 1)
    if not hasattr(w, "local"):
        w.local = np.zeros((32, size), np.uint8)
        w.local_init = np.zeros((32, size), bool)
    lanes = np.flatnonzero(mask)
    o = offs[lanes]
    if (o < 0).any() or (o + nbytes > w.local.shape[1]).any():
        bad = int(lanes[np.flatnonzero((o < 0) | (o + nbytes > w.local.shape[1]))[0]])
        m.report(BOUNDS.id, f"local access at offset {int(offs[bad])} outside the {m.local_size}-byte local frame "
                 f"by {m._thread(w, bad)}", [ins.loc])
        return np.zeros(32, U64)
    if vals is None:
        if not w.local_init[lanes[:, None], o[:, None] + np.arange(nbytes)].all():
            m.report(UNINITIALIZED.id, f"read of uninitialized local memory by {w.describe()}", [ins.loc])
        out = np.zeros(32, U64)
        out[lanes] = load_bytes_2d(w.local, lanes, o, nbytes)
        return out
    for i in range(nbytes):
        w.local[lanes, o + i] = ((vals[lanes] >> U64(8 * i)) & U64(0xFF)).astype(np.uint8)
        w.local_init[lanes, o + i] = True


def fault(m, w, ins, f):
    lane = f.lane if f.lane >= 0 else 0
    m.report(BOUNDS.id, f"{f} ({m._thread(w, lane)} at {_fmt_loc(ins.loc)})", [ins.loc],
             address=f.address, thread=m._thread(w, lane))
    return np.zeros(32, U64)


def _scalar_width(ins, nb):
    """Registers hold at most 64 bits here: a 128-bit element (``.b128``) is not modelled."""
    if nb > 8:
        raise Unsupported(f"{ins.opcode}: {8 * nb}-bit elements are not modelled (registers hold at most 64 bits)",
                          ins)


@handler("ld", "ldu")
def h_ld(m, w, ins, mask):
    ty = elem_type(ins)
    nb = max(bits_of(ty) // 8, 1)
    _scalar_width(ins, nb)
    dst, a = ins.operands[0], ins.operands[1]
    space = space_of(ins)
    base = m.addr_values(w, a)
    elems = dst.elems if isinstance(dst, VecOp) else (dst,)
    _aligned(m, w, ins, base, mask, nb * len(elems))
    signed = ty.startswith("s")
    strong = m.strength(w, ins)
    for j, d in enumerate(elems):
        v = mem_read(m, w, ins, space, base + j * nb, mask, nb, strong=strong)
        if signed and isinstance(d, Reg) and m.reg_width(d.name) > 8 * nb:
            v = _sign_extend(v, 8 * nb)
        m.write(w, d, v, mask)


def _aligned(m, w, ins, base, mask, size):
    """A load or store's address is a multiple of its access size (§6.4: misaligned accesses are
    undefined; the GPU raises a misaligned-address error)."""
    if size <= 1:
        return
    bad = np.flatnonzero(mask & w.live & ((np.asarray(base, np.int64) % size) != 0))
    if len(bad):
        lane = int(bad[0])
        m.report(MISALIGNED.id, f"{ins.opcode} of {size} bytes at address {int(base[lane]):#x}, not a multiple of "
                 f"{size}, by {m._thread(w, lane)} at {_fmt_loc(ins.loc)}", [ins.loc], address=int(base[lane]),
                 thread=m._thread(w, lane))


@handler("st")
def h_st(m, w, ins, mask):
    ty = elem_type(ins)
    nb = max(bits_of(ty) // 8, 1)
    _scalar_width(ins, nb)
    a, src = ins.operands[0], ins.operands[1]
    space = space_of(ins)
    base = m.addr_values(w, a)
    _aligned(m, w, ins, base, mask, nb * (len(src.elems) if isinstance(src, VecOp) else 1))
    strong = m.strength(w, ins)
    for j, v in enumerate(operand_lanes(m, w, src, 8 * nb)):
        mem_write(m, w, ins, space, base + j * nb, mask, nb, v, strong)


ATOM_FAMILY = {"add": "add", "min": "min", "max": "max", "and": "and", "or": "or", "xor": "xor"}


def atomic_update(op, ty, fmods, old, b, c=None):
    """The new values of an atomic read-modify-write ``op`` (§9.7.13.4 atom, §9.7.9.25.4.3
    cp.reduce.async.bulk) of type ``ty`` over the ``old`` values with operand ``b`` (``c``: the
    swap value of ``cas``), element-wise."""
    if op == "exch":
        return b
    if op == "cas":
        return np.where(old == b, c, old)
    if op == "inc":
        return np.where(old >= b, U64(0), old + U64(1))
    if op == "dec":
        return np.where((old == 0) | (old > b), b, old - U64(1))
    with np.errstate(all="ignore"):
        return evaluate(D, ATOM_FAMILY[op], ty, fmods | ({"rn"} if ty.startswith(("f", "bf")) and op == "add" else set()),
                        old, b)


@handler("atom", "red")
def h_atom(m, w, ins, mask):
    ty = elem_type(ins)
    nb = bits_of(ty) // 8
    is_atom = ins.row.operands[0].access == "def"  # atom returns the old value; red does not
    ops = ins.operands
    a = ops[1] if is_atom else ops[0]
    b = m.val(w, ops[2] if is_atom else ops[1], 8 * nb)
    c = m.val(w, ops[3], 8 * nb) if is_atom and len(ops) > 3 and not isinstance(ops[3], Sym) and "cas" in ins.mods else None
    op = next((x for x in ins.mods if x in ("add", "min", "max", "and", "or", "xor", "exch", "cas", "inc", "dec")), None)
    if op is None:
        raise Unsupported(f"{ins.opcode}: unknown atomic operation", ins)
    space = space_of(ins)
    addrs = m.addr_values(w, a)
    try:
        region, offs = m.resolve(w, space, addrs, mask, nb, ins)
    except Fault as f:
        fault(m, w, ins, f)
        return
    if not isinstance(region, Region):
        raise Unsupported(f"atomic on {space}", ins)
    m.atomic_access(w, ins, region, offs, nb, mask, op, ty)
    b = np.broadcast_to(np.asarray(b, U64), (32,))
    c = np.broadcast_to(np.asarray(c, U64), (32,)) if c is not None else None
    old_all = np.zeros(32, U64)
    fmods = atom_float_mods(op, ty, ins.mods, space)
    # lanes in order on each location; lanes on distinct locations at once (round r: the r-th
    # lane of every location)
    active, offs = np.flatnonzero(mask), np.asarray(offs)
    for lanes in _rounds(active, offs[active]):
        o = offs[lanes]
        old = load_bytes(region.data, o, nb)
        new = atomic_update(op, ty, fmods, old, b[lanes], None if c is None else c[lanes])
        store_bytes(region.data, o, nb, np.asarray(new, U64) & U64(low_mask(8 * nb)))
        old_all[lanes] = old
    if region.shadow is not None and region.shadow.uninit is not None:
        lanes = np.flatnonzero(mask)
        idx = (offs[lanes][:, None] + np.arange(nb)).reshape(-1)
        region.shadow.uninit[idx] = False
    if is_atom:
        m.write(w, ops[0], old_all, mask)
    if ins.blocking:  # the grid-barrier wait folded into the atomic (kverify.semantics.ir.grid_barrier)
        return _grid_barrier_wait(m, w, ins, region, offs, nb, mask, old_all)
    return ()


def _rounds(lanes: np.ndarray, offs: np.ndarray) -> list:
    """``lanes`` (ascending) split into rounds: round r holds the r-th lane of each distinct
    offset, so no round has two lanes on one location and each location's lanes come in order."""
    if len(lanes) <= 1 or len(np.unique(offs)) == len(offs):
        return [lanes] if len(lanes) else []
    order = np.argsort(offs, kind="stable")
    so = offs[order]
    first = np.r_[True, so[1:] != so[:-1]]
    pos = np.arange(len(so))
    rank = np.empty(len(so), np.int64)
    rank[order] = pos - np.maximum.accumulate(np.where(first, pos, 0))
    return [lanes[rank == r] for r in range(int(rank.max()) + 1)]


def _grid_barrier_wait(m, w, ins, region, offs, nb, mask, old):
    """Wait until the top bit of each lane's location differs from that of the value its atomic
    returned (every CTA of the grid has arrived), then read the location with acquire at the
    atomic's scope: the last read of the spin loop it stands for."""
    lanes = np.flatnonzero(mask)
    at, mine = np.asarray(offs)[lanes], old[lanes]
    top = U64(1 << (8 * nb - 1))

    def flipped():
        return bool(np.all((load_bytes(region.data, at, nb) ^ mine) & top))

    if not flipped():
        yield Wait("grid barrier", flipped,
                   lambda: f"waits in the grid barrier at {region.owner(int(offs[lanes[0]]))} for the other CTAs "
                           f"of the grid to arrive", ins)
    scope = next((x for x in ins.mods if x in ("gpu", "sys")), "gpu")
    acquire = m.strength(w, replace(ins, mods=("acquire", scope, f"u{8 * nb}")))
    m.access(w, ins, region, offs, nb, mask, "read", strong=acquire)
