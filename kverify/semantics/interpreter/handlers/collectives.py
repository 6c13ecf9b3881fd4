"""Warp collectives: shfl.sync, vote.sync, match.sync, activemask, elect.sync, redux.sync,
bar.warp.sync (which also orders memory among its lanes: ``hb.LaneOrder``, §9.7.13.2), with
the membermask rules (every non-exited lane of the mask executes the
instruction; §9.7.9.6-9, §9.7.13).
"""
from __future__ import annotations

import numpy as np

from kverify.semantics.ir.nodes import PairOp, Reg, Sink
from kverify.semantics.values.collectives import shfl_source
from kverify.semantics.memory_model.execution import BARRIER_DIVERGENCE, SHFL_UNDEFINED_SOURCE

from ..state import LANES, U64, low_mask
from .common import registry
from .memory import elem_type

HANDLERS, handler = registry()


# --------------------------------------------------------------------------- warp collectives


def _membermask(m, w, op, mask):
    """The membermask operand, read in the first lane that executes the instruction (every
    executing lane gives the same one; a lane outside a divergent branch may hold anything)."""
    v = np.asarray(m.val(w, op, 32), U64)
    if not v.ndim:
        return int(v)
    lanes = np.flatnonzero(mask)
    return int(np.broadcast_to(v, (32,))[lanes[0] if len(lanes) else 0])


def _check_members(m, w, ins, mask, op):
    """Each executing lane names itself in its membermask (``op``; None: all 32 lanes), every lane
    a membermask names executes the instruction, with the same membermask (PTX ISA §9.7.9.6
    shfl.sync, §9.7.13: undefined otherwise). Lanes may name different groups (a tiled
    partition's masks)."""
    v = np.broadcast_to(np.asarray(m.val(w, op, 32), U64) if op is not None else U64(0xFFFFFFFF), (32,))
    execs = mask & w.live
    if (v == v[0]).all():  # one membermask for every lane (the common case): the checks below on it alone
        one = int(v[0])
        named = (one >> np.arange(32)) & 1 == 1
        if not (execs & ~named).any() and not (named & w.valid & w.live & ~mask).any():
            return
    bits = ((v.astype(np.uint64)[:, None] >> np.arange(32, dtype=np.uint64)) & np.uint64(1)).astype(bool)
    named = bits[execs].any(axis=0)  # lane j is named by some executing lane's mask
    outside = [int(i) for i in np.flatnonzero(execs & ~bits[np.arange(32), np.arange(32)])]
    first = int(v[np.flatnonzero(execs)[0]]) if execs.any() else 0xFFFFFFFF
    need = named & w.valid & w.live
    if (need & ~mask).any():
        missing = np.flatnonzero(need & ~mask)
        m.report(BARRIER_DIVERGENCE.id,
                 f"{ins.opcode} with membermask {first:#010x} executed by {w.describe()} while lanes "
                 f"{', '.join(map(str, missing[:8]))} of the mask do not execute it (§9.7.9.6 / §9.7.13)",
                 [ins.loc], lanes=missing.tolist())
    bad = bits & execs[None, :] & execs[:, None] & (v[None, :] != v[:, None])
    odd = [(int(i), int(j)) for i, j in zip(*np.nonzero(bad))][:1]
    if odd:  # the threads a mask names execute the instruction "with the same membermask value"
        i, j = odd[0]
        m.report(BARRIER_DIVERGENCE.id,
                 f"{ins.opcode} executed by {w.describe()}: lane {i}'s membermask {int(v[i]):#010x} names lane {j}, "
                 f"whose membermask is {int(v[j]):#010x} (undefined, §9.7.9.6 / §9.7.13)", [ins.loc], lanes=[i, j])
    if outside:  # "undefined if the executing thread is not in the membermask"
        m.report(BARRIER_DIVERGENCE.id,
                 f"{ins.opcode} with membermask {int(v[outside[0]]):#010x} executed by {w.describe()} in lanes "
                 f"{', '.join(map(str, outside[:8]))}, which their mask leaves out (undefined, §9.7.9.6 / §9.7.13)",
                 [ins.loc], lanes=outside)


@handler("shfl")
def h_shfl(m, w, ins, mask):
    ops = ins.operands
    dst = ops[0]
    a = np.broadcast_to(np.asarray(m.val(w, ops[1], 32), U64), (32,))
    b = np.broadcast_to(np.asarray(m.val(w, ops[2], 32), U64), (32,)).astype(np.int64)
    c = np.broadcast_to(np.asarray(m.val(w, ops[3], 32), U64), (32,)).astype(np.int64)
    mm = _membermask(m, w, ops[4], mask) if len(ops) > 4 else 0xFFFFFFFF
    _check_members(m, w, ins, mask, ops[4] if len(ops) > 4 else None)
    mode = next(x for x in ins.mods if x in ("up", "down", "bfly", "idx"))
    j, ok = shfl_source(mode, LANES.astype(np.int64), b, c)
    # each lane's own membermask (a tiled partition gives each its own); a lane outside its own
    # mask is _check_members' divergence already
    own = np.broadcast_to(np.asarray(m.val(w, ops[4], 32), U64), (32,)).astype(np.int64) if len(ops) > 4 \
        else np.full(32, 0xFFFFFFFF, np.int64)
    in_own = ((own >> LANES.astype(np.int64)) & 1).astype(bool)
    src_named = ((own >> j) & 1).astype(bool)
    undefined = mask & in_own & ok.astype(bool) & ~(src_named & mask[j])
    if undefined.any():
        lane = int(np.flatnonzero(undefined)[0])
        m.report(SHFL_UNDEFINED_SOURCE.id, f"{ins.opcode}: lane {lane} of {w.describe()} reads lane {int(j[lane])}, which "
                 f"{'is not in its membermask' if not src_named[lane] else 'does not execute it'}: "
                 f"the value is undefined", [ins.loc])
    r = a[j]
    if isinstance(dst, PairOp):
        m.write(w, dst.first, r, mask)
        m.write(w, dst.second, ok, mask)
    else:
        m.write(w, dst, r, mask)


@handler("vote")
def h_vote(m, w, ins, mask):
    ops = ins.operands
    p = ops[1]
    pv = ~m.pred(w, p.reg) if not isinstance(p, Reg) and hasattr(p, "reg") else m.pred(w, p)
    mm = _membermask(m, w, ops[2], mask) if len(ops) > 2 else 0xFFFFFFFF
    _check_members(m, w, ins, mask, ops[2] if len(ops) > 2 else None)
    act = mask & np.array([(mm >> i) & 1 for i in range(32)], bool)
    if "ballot" in ins.mods:
        bits = int(sum(1 << int(i) for i in np.flatnonzero(pv & act)))
        m.write(w, ops[0], np.full(32, bits, U64), mask)
        return
    if "all" in ins.mods:
        r = bool((pv | ~act).all())
    elif "any" in ins.mods:
        r = bool((pv & act).any())
    else:  # uni
        vals = pv[act]
        r = bool(len(vals) == 0 or (vals == vals[0]).all())
    m.write(w, ops[0], np.full(32, r), mask)


@handler("match")
def h_match(m, w, ins, mask):
    """match.any.sync.type d, a, membermask / match.all.sync.type d[|p], a, membermask
    (§9.7.13 match.sync; .b32, .b64). Among the lanes of the membermask that execute it:
    .any gives each lane the mask of the lanes whose ``a`` equals its own; .all gives
    every lane that mask of lanes and ``p`` true when all their ``a`` are equal, else 0
    and false."""
    ops = ins.operands
    bits = 64 if "b64" in ins.mods else 32
    a = np.broadcast_to(np.asarray(m.val(w, ops[1], bits), U64), (32,)) & U64(low_mask(bits))
    mm = _membermask(m, w, ops[2], mask)
    _check_members(m, w, ins, mask, ops[2])
    act = mask & np.array([(mm >> i) & 1 for i in range(32)], bool)
    lane_bit = U64(1) << LANES.astype(U64)
    dst = ops[0]
    first, second = (dst.first, dst.second) if isinstance(dst, PairOp) else (dst, Sink())
    if "any" in ins.mods:
        same = (a[:, None] == a[None, :]) & act[None, :]  # [i, j]: lane j takes part with lane i's value
        d = np.where(same, lane_bit[None, :], U64(0)).sum(axis=1, dtype=U64)
        m.write(w, first, d, mask)
        return
    vals = a[act]
    equal = bool(len(vals) == 0 or (vals == vals[0]).all())
    d = int(np.where(act, lane_bit, U64(0)).sum(dtype=U64)) if equal else 0
    m.write(w, first, np.full(32, d, U64), mask)
    m.write(w, second, np.full(32, equal), mask)


@handler("activemask")
def h_activemask(m, w, ins, mask):
    bits = int(sum(1 << int(i) for i in np.flatnonzero(mask)))
    m.write(w, ins.operands[0], np.full(32, bits, U64), mask)


@handler("elect")
def h_elect(m, w, ins, mask):
    ops = ins.operands
    mm = _membermask(m, w, ops[1], mask)
    _check_members(m, w, ins, mask, ops[1])
    act = mask & np.array([(mm >> i) & 1 for i in range(32)], bool)
    leader = int(np.flatnonzero(act)[0]) if act.any() else 0
    d = ops[0]
    first, second = (d.first, d.second) if isinstance(d, PairOp) else (d, Sink())
    m.write(w, first, np.full(32, leader, U64), mask)
    m.write(w, second, LANES == leader, mask)


@handler("redux")
def h_redux(m, w, ins, mask):
    ops = ins.operands
    ty = elem_type(ins)
    a = np.broadcast_to(np.asarray(m.val(w, ops[1], 32), U64), (32,))
    mm = _membermask(m, w, ops[2], mask)
    _check_members(m, w, ins, mask, ops[2])
    vals = a[mask]
    if ty == "s32":
        sv = vals.astype(np.int64)
        sv = np.where(sv >= 2 ** 31, sv - 2 ** 32, sv)
    else:
        sv = vals.astype(np.int64)
    op = next(x for x in ins.mods if x in ("add", "min", "max", "and", "or", "xor"))
    r = {"add": lambda v: int(v.sum()), "min": lambda v: int(v.min()), "max": lambda v: int(v.max()),
         "and": lambda v: int(np.bitwise_and.reduce(v)), "or": lambda v: int(np.bitwise_or.reduce(v)),
         "xor": lambda v: int(np.bitwise_xor.reduce(v))}[op](sv)
    m.write(w, ops[0], np.full(32, r & 0xFFFFFFFF, U64), mask)


@handler("bar.warp.sync")
def h_bar_warp_sync(m, w, ins, mask):
    mm = _membermask(m, w, ins.operands[0], mask)
    _check_members(m, w, ins, mask, ins.operands[0])
    w.lane_order.sync(mask & np.array([(mm >> i) & 1 for i in range(32)], bool), w.valid)
