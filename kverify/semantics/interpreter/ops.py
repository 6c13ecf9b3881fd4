"""Instruction handlers of the interpreter, one per op-table family (keyed by ``OpRow``
mnemonic). Value-computing families go through ``kverify.semantics.values`` (the same definitions
the SMT checkers use); memory, synchronization and asynchronous families are defined here
on top of ``machine`` and the protocol step functions.

A handler is ``h(machine, warp, instr, mask) -> None | generator``; a generator yields to
the scheduler (``None``: a scheduling point, a ``Wait``: blocked).
"""
from __future__ import annotations

import numpy as np

from kverify.semantics.ir.nodes import Addr, Neg, PairOp, ParenList, Reg, Sink, Sym, VecOp
from kverify.semantics.ir.types import SCALAR_BITS
from kverify.semantics.memory_model import async_units as AU
from kverify.semantics.memory_model.protocols import async_groups as AG
from kverify.semantics.memory_model.protocols import mbarrier as MB
from kverify.semantics.memory_model.protocols import named_barrier as NB
from kverify.semantics.values import FAMILIES, evaluate, source_bits
from kverify.semantics.values.collectives import shfl_source

from .hb import ASYNC, GENERIC, hb_after, join, tick, vget
from .machine import (ASYNC_GENERIC, D, HANDLERS, LANES, U64, CopyOp, Fault, Region, Unsupported, Wait,
                      WgmmaOp, _fmt_loc, _mask)
from .memory import CTA_MASK, CTA_SHIFT, LOCAL_WINDOW, PARAM_WINDOW, SHARED_WINDOW, load_bytes, store_bytes

SPACE_MODS = ("global", "shared", "shared::cta", "shared::cluster", "local", "param", "param::entry",
              "param::func", "const")


def handler(*names):
    def deco(fn):
        for n in names:
            HANDLERS[n] = fn
        return fn
    return deco


def space_of(ins):
    for mo in ins.mods:
        if mo in SPACE_MODS:
            return mo
    return None


def bits_of(ty):
    return SCALAR_BITS[ty]


# --------------------------------------------------------------------------- value families

WIDE_SRC = {"mul", "mad"}

#: CC.CF, the carry flag of the condition code register (§9.7.2 extended-precision integer
#: arithmetic): per thread, kept in the warp's register file under a name no PTX register
#: can have, so a call (which gives the callee fresh registers) does not carry it across,
#: as the ISA says ("not preserved across calls"). Before any ``.cc`` instruction wrote
#: it, it reads 0 (the ISA leaves it open).
CARRY = "%cc.cf"
CARRY_IN = ("addc", "subc", "madc")
CARRY_OUT = ("add", "sub", "mad", "addc", "subc", "madc")


def carry_flag(w):
    v = w.regs.get(CARRY)
    return np.zeros(32, bool) if v is None else v


def h_value(m, w, ins, mask):
    fam = ins.row.semantics
    tys = ins.types()
    ops = ins.operands
    if not tys:
        raise Unsupported(f"{ins.opcode}: no type", ins)
    if fam in ("cvt", "set", "slct"):
        ty = (tys[0], tys[1]) if len(tys) > 1 else (tys[0], tys[0])
    else:
        ty = tys[0]
    if ty == "pred" and fam in ("and", "or", "xor", "not", "mov"):
        vals = [m.pred(w, o.reg) if hasattr(o, "reg") and not isinstance(o, Reg) else
                (m.pred(w, o) if isinstance(o, Reg) else np.full(32, bool(o.value))) for o in ops[1:]]
        r = {"and": lambda a, b: a & b, "or": lambda a, b: a | b, "xor": lambda a, b: a ^ b,
             "not": lambda a: ~a, "mov": lambda a: a}[fam](*vals)
        m.write(w, ops[0], r, mask)
        return
    if fam in ("setp", "selp", "set") or ty == "pred":
        pass
    mods = frozenset(ins.mods)
    args = []
    srcs = ops[1:]
    for i, o in enumerate(srcs):
        if fam in ("selp", "setp", "set") and i == 2:
            args.append(~m.pred(w, o.reg) if isinstance(o, Neg) else m.pred(w, o))  # {!}c
            continue
        if fam == "lop3" and i == 3:
            args.append(U64(o.value & 0xFF))
            continue
        if fam == "mov" and isinstance(o, VecOp):  # pack form, handled below from the operands
            args.append(None)
            continue
        bits = source_bits(fam, ty, mods, i)
        v = m.val(w, o, bits)
        if isinstance(o, Reg) and bits < 64 and m.reg_width(o.name) > bits:
            v = np.asarray(v, U64) & U64(_mask(bits))  # a register wider than the type: its low bits
        args.append(v)
    if fam == "mov" and isinstance(ops[0], VecOp):  # unpack: mov.b64 {a, b}, %rd
        v = args[0]
        n = len(ops[0].elems)
        eb = bits_of(ty) // n
        for j, e in enumerate(ops[0].elems):
            m.write(w, e, (np.asarray(v, U64) >> U64(eb * j)) & U64(_mask(eb)), mask)
        return
    if fam == "mov" and srcs and isinstance(srcs[0], VecOp):  # pack: mov.b64 %rd, {a, b}
        n = len(srcs[0].elems)
        eb = bits_of(ty) // n
        acc = np.zeros(32, U64)
        for j, e in enumerate(srcs[0].elems):
            acc |= (np.asarray(m.val(w, e, eb), U64) & U64(_mask(eb))) << U64(eb * j)
        m.write(w, ops[0], acc, mask)
        return
    if fam in CARRY_IN:
        args.append(carry_flag(w))
    with np.errstate(all="ignore"):
        r = evaluate(D, fam, ty, mods, *args)
    dst = ops[0]
    if "cc" in mods and fam in CARRY_OUT:  # (d, carry-out): the carry goes to CC.CF
        r, cf = r
        w.regs[CARRY] = np.where(mask, cf, carry_flag(w))
    if fam == "cvt" and isinstance(dst, Reg) and ty[0][0] == "s" and SCALAR_BITS[ty[0]] < m.reg_width(dst.name):
        b = SCALAR_BITS[ty[0]]  # a signed result narrower than its register is sign-extended
        r = np.asarray(r, U64)
        r = np.where((r >> U64(b - 1)) & U64(1), r | ~U64(_mask(b)), r)
    if isinstance(r, tuple):
        if isinstance(dst, PairOp):
            m.write(w, dst.first, r[0], mask)
            m.write(w, dst.second, r[1], mask)
        else:
            m.write(w, dst, r[0], mask)
        return
    m.write(w, dst, r, mask)


for _name, _row in __import__("kverify.semantics.ir.optable", fromlist=["OPS"]).OPS.items():
    if _row.semantics in FAMILIES:
        HANDLERS[_name] = h_value


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
        r = a
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


def _elem_type(ins):
    tys = ins.types()
    if not tys:
        raise Unsupported(f"{ins.opcode}: no type", ins)
    return tys[-1]


def _sign_extend(v, bits):
    v = v & U64(_mask(bits))
    sign = U64(1 << (bits - 1))
    return np.where(v & sign, v | U64(~_mask(bits) & 0xFFFFFFFFFFFFFFFF), v)


def _mem_read(m, w, ins, space, addrs, mask, nbytes, proxy=GENERIC):
    """Values (uint64 per lane) of ``nbytes`` at per-lane addresses."""
    try:
        region, offs = m.resolve(w, space, addrs, mask, nbytes)
    except Fault as f:
        return _fault(m, w, ins, f)
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
            out[lanes] = load_bytes_2d(store, lanes, o, nbytes)
            return out
        out[lanes] = load_bytes(m.param_mem, offs[lanes], nbytes)
        return out
    if region == "const":
        out = np.zeros(32, U64)
        lanes = np.flatnonzero(mask)
        out[lanes] = load_bytes(m.const_mem, np.asarray(offs, np.int64)[lanes], nbytes)
        return out
    if region == "local":
        return _local(m, w, ins, np.asarray(offs, np.int64), mask, nbytes)
    m.access(w, ins, region, offs, nbytes, mask, "read", proxy)
    out = np.zeros(32, U64)
    lanes = np.flatnonzero(mask)
    out[lanes] = load_bytes(region.data, offs[lanes], nbytes)
    return out


def _mem_write(m, w, ins, space, addrs, mask, nbytes, vals):
    try:
        region, offs = m.resolve(w, space, addrs, mask, nbytes)
    except Fault as f:
        _fault(m, w, ins, f)
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
                    m.report(region.shadow.race_rule,
                             f"lanes {int(ls[0])} and {int(ls[1])} of {w.describe()} store different values to "
                             f"{region.space} {region.owner(int(u))} in one instruction at {_fmt_loc(ins.loc)}",
                             [ins.loc], address=int(u))
                    break
    m.access(w, ins, region, offs, nbytes, mask, "write")
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


def _local(m, w, ins, offs, mask, nbytes, vals=None):
    size = max(m.local_size, 1)
    if not hasattr(w, "local"):
        w.local = np.zeros((32, size), np.uint8)
        w.local_init = np.zeros((32, size), bool)
    lanes = np.flatnonzero(mask)
    o = offs[lanes]
    if (o < 0).any() or (o + nbytes > w.local.shape[1]).any():
        bad = int(lanes[np.flatnonzero((o < 0) | (o + nbytes > w.local.shape[1]))[0]])
        m.report("bounds", f"local access at offset {int(offs[bad])} outside the {m.local_size}-byte local frame "
                 f"by {m._thread(w, bad)}", [ins.loc])
        return np.zeros(32, U64)
    if vals is None:
        if not w.local_init[lanes[:, None], o[:, None] + np.arange(nbytes)].all():
            m.report("uninitialized", f"read of uninitialized local memory by {w.describe()}", [ins.loc])
        out = np.zeros(32, U64)
        out[lanes] = load_bytes_2d(w.local, lanes, o, nbytes)
        return out
    for i in range(nbytes):
        w.local[lanes, o + i] = ((vals[lanes] >> U64(8 * i)) & U64(0xFF)).astype(np.uint8)
        w.local_init[lanes, o + i] = True


def _fault(m, w, ins, f):
    lane = f.lane if f.lane >= 0 else 0
    m.report("bounds", f"{f} ({m._thread(w, lane)} at {_fmt_loc(ins.loc)})", [ins.loc],
             address=f.address, thread=m._thread(w, lane))
    return np.zeros(32, U64)


@handler("ld", "ldu")
def h_ld(m, w, ins, mask):
    ty = _elem_type(ins)
    nb = max(bits_of(ty) // 8, 1)
    dst, a = ins.operands[0], ins.operands[1]
    space = space_of(ins)
    base = m.addr_values(w, a)
    elems = dst.elems if isinstance(dst, VecOp) else (dst,)
    signed = ty.startswith("s")
    for j, d in enumerate(elems):
        v = _mem_read(m, w, ins, space, base + j * nb, mask, nb)
        if signed and isinstance(d, Reg) and m.reg_width(d.name) > 8 * nb:
            v = _sign_extend(v, 8 * nb)
        m.write(w, d, v, mask)


@handler("st")
def h_st(m, w, ins, mask):
    ty = _elem_type(ins)
    nb = max(bits_of(ty) // 8, 1)
    a, src = ins.operands[0], ins.operands[1]
    space = space_of(ins)
    base = m.addr_values(w, a)
    elems = src.elems if isinstance(src, VecOp) else (src,)
    for j, s in enumerate(elems):
        v = np.broadcast_to(np.asarray(m.val(w, s, 8 * nb), U64), (32,)) & U64(_mask(8 * nb))
        _mem_write(m, w, ins, space, base + j * nb, mask, nb, v)


ATOM_FAMILY = {"add": "add", "min": "min", "max": "max", "and": "and", "or": "or", "xor": "xor"}


@handler("atom", "red")
def h_atom(m, w, ins, mask):
    ty = _elem_type(ins)
    nb = bits_of(ty) // 8
    is_atom = ins.op == "atom"
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
        region, offs = m.resolve(w, space, addrs, mask, nb)
    except Fault as f:
        _fault(m, w, ins, f)
        return
    if not isinstance(region, Region):
        raise Unsupported(f"atomic on {space}", ins)
    m.atomic_access(w, ins, region, offs, nb, mask, op, ty)
    b = np.broadcast_to(np.asarray(b, U64), (32,))
    c = np.broadcast_to(np.asarray(c, U64), (32,)) if c is not None else None
    old_all = np.zeros(32, U64)
    fmods = frozenset(x for x in ins.mods if x in ("rn", "ftz"))
    for lane in np.flatnonzero(mask):
        o = np.array([offs[lane]])
        old = load_bytes(region.data, o, nb)
        bl = b[lane:lane + 1]
        if op == "exch":
            new = bl
        elif op == "cas":
            new = np.where(old == bl, c[lane:lane + 1], old)
        elif op == "inc":
            new = np.where(old >= bl, U64(0), old + U64(1))
        elif op == "dec":
            new = np.where((old == 0) | (old > bl), bl, old - U64(1))
        else:
            with np.errstate(all="ignore"):
                new = evaluate(D, ATOM_FAMILY[op], ty, fmods | ({"rn"} if ty.startswith("f") and op == "add" else set()), old, bl)
        store_bytes(region.data, o, nb, np.asarray(new, U64) & U64(_mask(8 * nb)))
        old_all[lane] = old[0]
    if region.shadow.uninit is not None:
        lanes = np.flatnonzero(mask)
        idx = (offs[lanes][:, None] + np.arange(nb)).reshape(-1)
        region.shadow.uninit[idx] = False
    if is_atom:
        m.write(w, ops[0], old_all, mask)


# --------------------------------------------------------------------------- control


@handler("ret", "exit")
def h_exit(m, w, ins, mask):
    if ins.op == "ret" and w.frames:
        w.brk["<ret>"] |= mask
        w.live &= ~mask  # temporarily: restored by the call
        w.returned |= mask
        return
    w.live &= ~mask
    return _exit_gen(m, w, mask)


def _exit_gen(m, w, mask):
    # threads that exit count as arrived at every named barrier of their CTA (§9.7.13.1)
    if not w.live.any():
        m.warp_gone(w)
    yield None


@handler("bra")
def h_bra(m, w, ins, mask):
    raise Unsupported("unstructured branch left in the structured body", ins)


@handler("call")
def h_call(m, w, ins, mask):
    ops = ins.operands
    rets, fn, args = None, None, ()
    rest = list(ops)
    if rest and isinstance(rest[0], ParenList):
        rets = rest.pop(0)
    fn = rest.pop(0)
    if rest and isinstance(rest[0], ParenList):
        args = rest.pop(0).elems
    name = fn.name if hasattr(fn, "name") else str(fn)
    callee = m.funcs.get(name)
    if callee is None or callee.is_entry:
        raise Unsupported(f"call of unknown function {name}", ins)
    return _call(m, w, ins, mask, callee, rets, args)


def _call(m, w, ins, mask, callee, rets, args):
    # caller-side .param variables hold the arguments per lane
    saved_regs, saved_params = w.regs, w.params
    new_params = {}
    off = 1 << 30
    for p, a in zip(callee.params, args):
        store, base = _ensure_param(m, w, a.name)
        new_params[p.name] = (off, store.copy())
        m.param_off.setdefault(p.name, (off, p.size))
        off += 1 << 20
    for r in callee.rets:
        size = r.size
        new_params[r.name] = (off, np.zeros((32, max(size, 8)), np.uint8))
        m.param_off.setdefault(r.name, (off, size))
        off += 1 << 20
    w.regs = {}
    w.params = new_params
    w.frames.append(callee.name)
    w.brk["<ret>"] = np.zeros(32, bool)
    old_returned = w.returned
    w.returned = np.zeros(32, bool)
    live_before = w.live.copy()
    yield from m.exec_stmts(w, callee.body, mask.copy())
    w.live = live_before & (w.live | w.returned)
    w.brk.pop("<ret>")
    w.returned = old_returned
    w.frames.pop()
    callee_params = w.params
    w.regs, w.params = saved_regs, saved_params
    if rets is not None:
        for r, rv in zip(callee.rets, rets.elems):
            store, base = _ensure_param(m, w, rv.name)
            src = callee_params[r.name][1]
            n = min(store.shape[1], src.shape[1])
            store[mask, :n] = src[mask, :n]


def _ensure_param(m, w, name):
    if name not in w.params:
        size = 8
        for v in m.kernel.vars:
            if v.name == name:
                size = max(v.size, 1)
        base = m.param_off.get(name, (None,))[0]
        if base is None:
            base = (1 << 29) + len(m.param_off) * (1 << 16)
            m.param_off[name] = (base, size)
        w.params[name] = (base, np.zeros((32, size), np.uint8))
    return w.params[name][1], w.params[name][0]


# --------------------------------------------------------------------------- warp collectives


def _membermask(m, w, op, mask):
    """The membermask operand, read in the first lane that executes the instruction (every
    executing lane gives the same one; a lane outside a divergent branch may hold anything)."""
    v = np.asarray(m.val(w, op, 32), U64)
    if not v.ndim:
        return int(v)
    lanes = np.flatnonzero(mask)
    return int(np.broadcast_to(v, (32,))[lanes[0] if len(lanes) else 0])


def _check_members(m, w, ins, mask, membermask):
    members = np.array([(membermask >> i) & 1 for i in range(32)], bool) & w.valid
    need = members & w.live
    if (need & ~mask).any():
        missing = np.flatnonzero(need & ~mask)
        m.report("barrier.divergence",
                 f"{ins.opcode} with membermask {membermask:#010x} executed by {w.describe()} while lanes "
                 f"{', '.join(map(str, missing[:8]))} of the mask do not execute it (§9.7.9.6 / §9.7.13)",
                 [ins.loc], lanes=missing.tolist())


@handler("shfl")
def h_shfl(m, w, ins, mask):
    ops = ins.operands
    dst = ops[0]
    a = np.broadcast_to(np.asarray(m.val(w, ops[1], 32), U64), (32,))
    b = np.broadcast_to(np.asarray(m.val(w, ops[2], 32), U64), (32,)).astype(np.int64)
    c = np.broadcast_to(np.asarray(m.val(w, ops[3], 32), U64), (32,)).astype(np.int64)
    mm = _membermask(m, w, ops[4], mask) if len(ops) > 4 else 0xFFFFFFFF
    _check_members(m, w, ins, mask, mm)
    mode = next(x for x in ins.mods if x in ("up", "down", "bfly", "idx"))
    j, ok = shfl_source(mode, LANES.astype(np.int64), b, c)
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
    _check_members(m, w, ins, mask, mm)
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
    a = np.broadcast_to(np.asarray(m.val(w, ops[1], bits), U64), (32,)) & U64(_mask(bits))
    mm = _membermask(m, w, ops[2], mask)
    _check_members(m, w, ins, mask, mm)
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
    _check_members(m, w, ins, mask, mm)
    act = mask & np.array([(mm >> i) & 1 for i in range(32)], bool)
    leader = int(np.flatnonzero(act)[0]) if act.any() else 0
    d = ops[0]
    first, second = (d.first, d.second) if isinstance(d, PairOp) else (d, Sink())
    m.write(w, first, np.full(32, leader, U64), mask)
    m.write(w, second, LANES == leader, mask)


@handler("redux")
def h_redux(m, w, ins, mask):
    ops = ins.operands
    ty = _elem_type(ins)
    a = np.broadcast_to(np.asarray(m.val(w, ops[1], 32), U64), (32,))
    mm = _membermask(m, w, ops[2], mask)
    _check_members(m, w, ins, mask, mm)
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
    _check_members(m, w, ins, mask, mm)


# --------------------------------------------------------------------------- no-ops


@handler("nanosleep", "prefetch", "prefetchu", "setmaxnreg", "griddepcontrol", "applypriority", "discard",
         "cp.async.bulk.prefetch", "cp.async.bulk.prefetch.tensor", "membar", "fence", "pmevent",
         "fence.proxy.tensormap::generic")
def h_nop(m, w, ins, mask):
    return None


@handler("createpolicy")
def h_createpolicy(m, w, ins, mask):
    m.write(w, ins.operands[0], np.zeros(32, U64), mask)


@handler("trap", "brkpt")
def h_trap(m, w, ins, mask):
    m.report("trap", f"{ins.opcode} executed by {w.describe()}", [ins.loc])
    w.live &= ~mask
    return _exit_gen(m, w, mask)


# --------------------------------------------------------------------------- named barriers


@handler("bar", "barrier", "barrier.cluster")
def h_bar(m, w, ins, mask):
    mods = set(ins.mods)
    if ins.op == "barrier.cluster":
        return h_cluster_barrier(m, w, ins, mask)
    ops = ins.operands
    kind = "red" if "red" in mods else "arrive" if "arrive" in mods else "sync"
    aligned = ins.op == "bar" or "aligned" in mods
    i = 0
    red_dst = None
    if kind == "red":
        red_dst = ops[0]
        i = 1
    bid = np.broadcast_to(np.asarray(m.val(w, ops[i], 32), U64), (32,))
    lanes = np.flatnonzero(mask)
    bar_id = int(bid[lanes[0]])
    count = None
    rest = ops[i + 1:]
    red_pred = None
    if kind == "red":
        if len(rest) == 2:
            count = int(np.broadcast_to(np.asarray(m.val(w, rest[0], 32), U64), (32,))[lanes[0]])
            red_pred = rest[1]
        else:
            red_pred = rest[0]
    elif rest:
        count = int(np.broadcast_to(np.asarray(m.val(w, rest[0], 32), U64), (32,))[lanes[0]])
    expected = w.valid & w.live
    if aligned and (expected & ~mask).any():
        missing = np.flatnonzero(expected & ~mask)
        m.report("barrier.divergence",
                 f"{ins.opcode} {bar_id} (aligned) reached by lanes {lanes[0]}..{lanes[-1]} of {w.describe()} but "
                 f"not by lanes {', '.join(map(str, missing[:8]))}: the condition around it differs between the "
                 f"threads of the warp (§9.7.13.1)", [ins.loc], barrier=bar_id)
    return _bar_gen(m, w, ins, mask, kind, bar_id, count, red_dst, red_pred)


def _bar_gen(m, w, ins, mask, kind, bar_id, count, red_dst, red_pred):
    cta = w.cta
    wt = int(w.valid.sum())
    if kind == "red":
        op = next(x for x in ins.mods if x in ("popc", "and", "or"))
        pv = m.pred(w, red_pred.reg) if not isinstance(red_pred, Reg) and hasattr(red_pred, "reg") else m.pred(w, red_pred)
        if not isinstance(red_pred, Reg) and hasattr(red_pred, "reg"):
            pv = ~pv
        value = int((pv & mask).sum()) if op == "popc" else (bool((pv | ~mask).all()) if op == "and" else bool((pv & mask).any()))
        cmd = NB.Red(w.index, bar_id, op, value, count, wt)
    elif kind == "arrive":
        if count is None:
            raise Unsupported("bar.arrive without a thread count", ins)
        cmd = NB.Arrive(w.index, bar_id, count, wt)
    else:
        cmd = NB.Sync(w.index, bar_id, count, wt)
    out = NB.step(cta.named, cmd)
    if out.violation is not None:
        v = out.violation
        m.report(v.rule, f"{v.message} ({w.describe()}, {v.section})", [ins.loc], barrier=bar_id)
        if v.rule == "barrier.named-reuse" and kind == "arrive":
            return
        # continue as if it arrived with the active count (to find further problems)
        slot = cta.named.slots[bar_id] if 0 <= bar_id < 16 else None
        if slot is None:
            return
        out = NB.step(cta.named, type(cmd)(**{**cmd.__dict__, "count": slot.count}) if slot.count else cmd)
        if out.violation is not None:
            return
    cta.named = out.state
    gen = cta.bar_gen[bar_id]
    prev = cta.bar_release.get((bar_id, gen - 1))
    if prev is not None and not hb_after(w.vc, prev):
        m.depend(f"{_fmt_loc(ins.loc)}: {w.describe()} arrives at barrier {bar_id} (instance {gen}) without being "
                 f"ordered after instance {gen - 1}; in another schedule it may join that instance")
    cta.bar_vc[bar_id] = join(cta.bar_vc.get(bar_id, np.zeros(0, np.int64)), w.vc)
    cta.bar_locs.setdefault(bar_id, {})[ins.loc] = ins
    w.release_tick()
    gen = cta.bar_gen[bar_id]
    completed = [e for e in out.effects if e[0] == "barrier-completed"]
    if completed:
        _bar_complete(m, cta, bar_id, completed[0][2], out.value, red_dst)
    elif complete_with_exited(m, cta, bar_id):
        completed = True
    if completed:
        if kind != "arrive":
            _bar_after(m, w, (bar_id, gen), red_dst, mask)
        yield None
        return
    if kind == "arrive":
        yield None
        return
    wt = Wait("bar", lambda: cta.bar_gen[bar_id] != gen, lambda: _bar_describe(m, cta, bar_id, count), ins)
    wt.barrier = (cta, bar_id)
    yield wt
    _bar_after(m, w, (bar_id, gen), red_dst, mask)


def complete_with_exited(m, cta, bar_id):
    """Threads that exited count as arrived (§9.7.13.1): complete a CTA-wide instance that
    only waits for them."""
    slot = cta.named.slots[bar_id]
    if slot.idle or not cta.exited_threads or slot.count != cta.named.cta_threads:
        return False
    if any(len(i.operands) > (2 if "red" in i.mods else 1) for i in cta.bar_locs.get(bar_id, {}).values()):
        return False  # an explicit thread count: exited threads do not take part
    if slot.arrived_threads + cta.exited_threads < slot.count:
        return False
    value = None
    if slot.mode and slot.mode.startswith("red."):
        value = NB._reduce(slot.mode[4:], [v for _, v in slot.red_values])
    slots = cta.named.slots[:bar_id] + (NB.BarrierSlot(),) + cta.named.slots[bar_id + 1:]
    from dataclasses import replace

    cta.named = replace(cta.named, slots=slots)
    _bar_complete(m, cta, bar_id, tuple(sorted(slot.blocked)), value, None)
    return True


def _bar_describe(m, cta, bar_id, count):
    slot = cta.named.slots[bar_id]
    return (f"waits at barrier {bar_id}: {slot.arrived_threads} of {slot.count} threads arrived "
            f"(warps {sorted(slot.arrived)})")


def _bar_complete(m, cta, bar_id, released, value, red_dst):
    vc = cta.bar_vc.pop(bar_id, np.zeros(0, np.int64))
    locs = cta.bar_locs.pop(bar_id, {})
    gen = cta.bar_gen[bar_id]
    cta.bar_gen[bar_id] += 1
    cta.bar_value[(bar_id, gen)] = value
    cta.bar_release[(bar_id, gen)] = vc
    cta_wide = all(i.op == "bar" or "aligned" in i.mods for i in locs.values()) and \
        all(not any(x in i.mods for x in ("arrive", "red")) and len(i.operands) == 1 for i in locs.values())
    if len(locs) > 1 and cta_wide:
        instrs = sorted(locs, key=lambda l: l.ptx_line)
        m.report("barrier.divergence",
                 f"one instance of barrier {bar_id} was completed by different barrier instructions at "
                 f"{', '.join(_fmt_loc(l) for l in instrs)}: the threads of {cta.describe()} did not reach "
                 f"the same barrier (§9.7.13.1)", instrs, barrier=bar_id)


def _bar_after(m, w, key, red_dst, mask):
    cta = w.cta
    w.vc = join(w.vc, cta.bar_release.get(key, np.zeros(0, np.int64)))
    if red_dst is not None:
        v = cta.bar_value.get(key)
        m.write(w, red_dst, np.full(32, int(v), U64) if not isinstance(v, bool) else np.full(32, v), mask)


def h_cluster_barrier(m, w, ins, mask):
    mods = set(ins.mods)
    cl = w.cta.cluster_ctas
    st = getattr(cl[0], "cluster_bar", None)
    if st is None:
        st = {"phase": 0, "arrived": {}, "vc": np.zeros(0, np.int64), "release": {}, "token": {}}
        for c in cl:
            c.cluster_bar = st
    key = (w.cta.rank, w.index)
    if "arrive" in mods:
        return _cluster_arrive(m, w, ins, st, key, cl)
    return _cluster_wait(m, w, ins, st, key, cl)


def _cluster_arrive(m, w, ins, st, key, cl):
    if key in st["token"]:
        m.report("barrier.cluster-double-arrive", f"{w.describe()} arrives on the cluster barrier twice "
                 f"without a wait (§9.7.13 barrier.cluster)", [ins.loc])
    prev = st["release"].get(st["phase"] - 1)
    if prev is not None and not hb_after(w.vc, prev):
        m.depend(f"{_fmt_loc(ins.loc)}: {w.describe()} arrives at the cluster barrier without being ordered "
                 f"after its previous instance")
    st["token"][key] = st["phase"]
    st["arrived"][key] = True
    if "relaxed" not in ins.mods:
        st["vc"] = join(st["vc"], w.vc)
    w.release_tick()
    total = sum(1 for c in cl for x in c.warps if x.valid.any() and not x.exited_reported)
    if len(st["arrived"]) >= total:
        if total < sum(1 for c in cl for x in c.warps if x.valid.any()):
            m.depend(f"{_fmt_loc(ins.loc)}: a warp exited before the cluster barrier completed; when it exits "
                     f"decides which arrivals complete the instance")
        st["release"][st["phase"]] = st["vc"]
        st["phase"] += 1
        st["arrived"] = {}
        st["vc"] = np.zeros(0, np.int64)
    yield None


def _cluster_wait(m, w, ins, st, key, cl):
    ph = st["token"].pop(key, None)
    if ph is None:
        m.report("barrier.cluster-wait-without-arrive", f"{w.describe()} waits on the cluster barrier without "
                 f"arriving first (§9.7.13 barrier.cluster)", [ins.loc])
        yield None
        return
    yield Wait("cluster", lambda: st["phase"] > ph,
               lambda: f"waits at the cluster barrier (phase {ph}): {len(st['arrived'])} warps arrived", ins)
    w.vc = join(w.vc, st["release"].get(ph, np.zeros(0, np.int64)))


# --------------------------------------------------------------------------- fences


@handler("fence.proxy.async", "fence.proxy.async::generic", "fence.proxy.alias")
def h_fence_proxy(m, w, ins, mask):
    if len(m.fence_clk) <= w.agent:
        m.fence_clk = np.concatenate([m.fence_clk, np.zeros(w.agent + 1 - len(m.fence_clk), np.int64)])
    m.fence_clk[w.agent] = w.clock()
    w.release_tick()
    return _yield_once()


@handler("fence.mbarrier_init")
def h_fence_mbar_init(m, w, ins, mask):
    if len(m.mbar_fence_clk) <= w.agent:
        m.mbar_fence_clk = np.concatenate([m.mbar_fence_clk, np.zeros(w.agent + 1 - len(m.mbar_fence_clk), np.int64)])
    m.mbar_fence_clk[w.agent] = w.clock()
    w.release_tick()
    return _yield_once()


def _yield_once():
    yield None


# --------------------------------------------------------------------------- mbarrier


def _lane_addrs(m, w, a, mask):
    v = m.addr_values(w, a)
    return v


@handler("mbarrier.init")
def h_mbar_init(m, w, ins, mask):
    space = space_of(ins)
    addrs = m.addr_values(w, ins.operands[0])
    count = np.broadcast_to(np.asarray(m.val(w, ins.operands[1], 32), U64), (32,))
    for lane in np.flatnonzero(mask):
        cta, info = m.mbar_at(w, space, int(addrs[lane]), ins)
        who = m._thread(w, lane)
        used = join(info.phase_vc, max(info.done_vc.items())[1]) if info.done_vc else info.phase_vc
        if not hb_after(w.vc, used):
            m.depend(f"{_fmt_loc(ins.loc)}: mbarrier.init of {info.name} is not ordered after every earlier use")
        out = m.mbar_step(info, MB.Init(int(count[lane])), ins, who)
        if out.violation is None:
            info.observers, info.pending_waits, info.pending_expect = {}, {}, {}
            info.init = (w.agent, w.clock(), m.loc_id(ins.loc), True)
            info.phase_vc = np.zeros(0, np.int64)
            info.done_vc = {}
            info.init_cta = w.cta
    # the init is a generic-proxy write of the barrier object
    region, offs = m.resolve(w, space, addrs, mask, 8)
    m.access(w, ins, region, offs, 8, mask, "write")
    return _yield_once()


@handler("mbarrier.inval")
def h_mbar_inval(m, w, ins, mask):
    space = space_of(ins)
    addrs = m.addr_values(w, ins.operands[0])
    for lane in np.flatnonzero(mask):
        cta, info = m.mbar_at(w, space, int(addrs[lane]), ins)
        m.mbar_step(info, MB.Inval(), ins, m._thread(w, lane))
    return _yield_once()


def _remote(m, w, space, addr):
    if space == "shared::cluster":
        r = addr >> CTA_SHIFT
        return r != 0 and r - 1 != w.cta.rank
    if space is None and addr >= SHARED_WINDOW:
        r = (addr - SHARED_WINDOW) >> CTA_SHIFT
        return r != 0 and r - 1 != w.cta.rank
    return False


@handler("mbarrier.arrive", "mbarrier.arrive_drop")
def h_mbar_arrive(m, w, ins, mask):
    space = space_of(ins)
    ops = ins.operands
    addrs = m.addr_values(w, ops[1])
    mods = set(ins.mods)
    extra = np.broadcast_to(np.asarray(m.val(w, ops[2], 32), U64), (32,)) if len(ops) > 2 else None
    for lane in np.flatnonzero(mask):
        addr = int(addrs[lane])
        cta, info = m.mbar_at(w, space, addr, ins)
        remote = _remote(m, w, space, addr)
        who = m._thread(w, lane)
        m.mbar_check_init(info, w.agent, w.vc, ins, who)
        if remote and info.init is not None and info.state.initialized:
            ia, ic, iloc, _ = info.init
            if vget(m.mbar_fence_clk, np.array([ia]))[0] < ic:
                m.report("mbarrier.init-visibility",
                         f"remote arrive by {who} on mbarrier {info.name}, whose init was not followed by "
                         f"fence.mbarrier_init.release.cluster (§9.7.13.15.3, §9.7.12.4)", [ins.loc, m.locs[iloc]])
        if "expect_tx" in mods:
            cmd = MB.Arrive(count=1, expect_tx=int(extra[lane]), no_complete="noComplete" in mods,
                            drop=ins.op.endswith("drop"), remote=remote)
        else:
            cmd = MB.Arrive(count=int(extra[lane]) if extra is not None else 1,
                            no_complete="noComplete" in mods, drop=ins.op.endswith("drop"), remote=remote)
        m.mbar_order(info, "arrive", w.agent, w.vc, ins)
        info.phase_vc = join(info.phase_vc, w.vc)
        info.arrive_locs[ins.loc] = True
        info.arrivers.add(w)
        if "expect_tx" in mods:
            info.expect_loc = ins.loc
        out = m.mbar_step(info, cmd, ins, who)
        if out.violation is None and isinstance(ops[0], Reg):
            st = np.asarray(m.reg(w, ops[0].name)).copy()
            st[lane] = U64(out.value or 0)
            w.regs[ops[0].name] = st
    w.release_tick()
    return _yield_once()


@handler("mbarrier.expect_tx", "mbarrier.complete_tx")
def h_mbar_tx(m, w, ins, mask):
    space = space_of(ins)
    addrs = m.addr_values(w, ins.operands[0])
    tx = np.broadcast_to(np.asarray(m.val(w, ins.operands[1], 32), U64), (32,))
    for lane in np.flatnonzero(mask):
        cta, info = m.mbar_at(w, space, int(addrs[lane]), ins)
        who = m._thread(w, lane)
        m.mbar_check_init(info, w.agent, w.vc, ins, who)
        cmd = MB.ExpectTx(int(tx[lane])) if ins.op == "mbarrier.expect_tx" else MB.CompleteTx(int(tx[lane]))
        m.mbar_order(info, "expect" if ins.op == "mbarrier.expect_tx" else "complete-tx", w.agent, w.vc, ins)
        if ins.op == "mbarrier.expect_tx":
            info.expect_loc = ins.loc
        if ins.op == "mbarrier.complete_tx":
            info.phase_vc = join(info.phase_vc, w.vc)
        m.mbar_step(info, cmd, ins, who)
    return _yield_once()


@handler("mbarrier.test_wait", "mbarrier.try_wait")
def h_mbar_wait(m, w, ins, mask):
    return _mbar_wait(m, w, ins, mask)


def _mbar_wait(m, w, ins, mask):
    space = space_of(ins)
    ops = ins.operands
    parity_form = "parity" in ins.mods
    addrs = m.addr_values(w, ops[1])
    arg = np.broadcast_to(np.asarray(m.val(w, ops[2], 64), U64), (32,))
    lanes = np.flatnonzero(mask)
    issue_vc = w.vc  # the wait's own clock (a wait does not tick; joins make new arrays)
    targets = []
    for lane in lanes:
        addr = int(addrs[lane])
        cta, info = m.mbar_at(w, space, addr, ins)
        remote = _remote(m, w, space, addr)
        targets.append((lane, info, int(arg[lane]), remote))
    # one logical wait per (warp, barrier): lanes of a warp wait together
    seen = {}
    for lane, info, a, remote in targets:
        seen.setdefault(info.key, (lane, info, a, remote))
    plans = []
    for key, (lane, info, a, remote) in seen.items():
        who = m._thread(w, lane)
        m.mbar_check_init(info, w.agent, w.vc, ins, who)
        if not info.state.initialized:
            m.report("mbarrier.uninitialized", f"wait on uninitialized mbarrier {info.name} by {who}", [ins.loc])
            plans.append(None)
            continue
        if parity_form:
            q = a & 1
            nxt = w.mbar_next.get(key)
            cur = info.state.phase
            if nxt is None:
                named = cur if cur % 2 == q else cur - 1
            elif nxt % 2 == q:
                named = nxt
            else:
                named = nxt - 1
                m.report("mbarrier.parity",
                         f"{who} waits on mbarrier {info.name} with parity {q}, which names phase {named} that this "
                         f"warp already observed complete: the wait returns at once (the parity does not flip; "
                         f"§9.7.13.15.4)", [ins.loc], mbarrier=info.name, phase=named)
                plans.append((info, q, None, who))
                continue
            plans.append((info, q, named, who))
        else:
            plans.append((info, None, a, who))

    def ready_of(plan):
        info, q, named, who = plan
        if q is None:
            return info.state.phase > named
        return info.state.phase % 2 != q

    def test(plan):
        info, q, named, who = plan
        if q is not None:
            cmd = MB.TestWait(parity=q, waiter_phase=named) if named is not None and named >= 0 else MB.TestWait(parity=q)
        else:
            cmd = MB.TestWait(state_phase=named)
        out = m.mbar_step(info, cmd, ins, who)
        if out.violation is not None:
            return True  # reported; treat as returning (hardware returns on parity)
        ok = bool(out.value)
        if ok:
            ph = named if named is not None else (info.state.phase - 1)
            if q is not None and named is None:
                ph = info.state.phase - 1
            w.mbar_next[info.key] = ph + 1
            m.mbar_observed(info, ph, w.agent, issue_vc, ins)
            w.vc = join(w.vc, info.done_vc.get(ph, np.zeros(0, np.int64)))
        return ok

    plans = [p for p in plans if p is not None]
    if ins.blocking:
        if plans and not all(ready_of(p) for p in plans):
            wt = Wait("mbarrier", lambda: all(ready_of(p) for p in plans),
                      lambda: "; ".join(_mbar_describe(p) for p in plans), ins)
            wt.mbars = [p[0] for p in plans]
            yield wt
        for p in plans:
            test(p)
        if ops and not isinstance(ops[0], Sink):
            m.write(w, ops[0], np.ones(32, bool), mask)
        return
    m.depend(f"{_fmt_loc(ins.loc)}: a non-blocking {ins.op} whose result the schedule decides")
    results = [test(p) for p in plans]
    ok = all(results)
    if not isinstance(ops[0], Sink):
        m.write(w, ops[0], np.full(32, ok), mask)
    if not ok:
        versions = [p[0].version for p in plans]
        wt = Wait("mbarrier-poll", lambda: any(p[0].version != v for p, v in zip(plans, versions)),
                  lambda: "; ".join(_mbar_describe(p) for p in plans), ins)
        wt.mbars = [p[0] for p in plans]
        yield wt
    else:
        yield None


def _mbar_describe(plan):
    info, q, named, who = plan
    s = info.state
    what = f"phase {named}" if named is not None else f"parity {q}"
    return (f"waits in mbarrier wait for {what} of {info.name} (barrier in phase {s.phase}: {s.pending} of "
            f"{s.expected} arrivals missing, tx-count {s.tx})")


# --------------------------------------------------------------------------- async copies


def _copy_op(m, w, ins, kind, writes, reads, action, mbar=None, group=None, nbytes=0, proxy=ASYNC):
    agent = m.new_agent(f"{kind} issued by {w.describe()} at {_fmt_loc(ins.loc)}")
    op = CopyOp(m, w, ins, agent, kind, writes, reads, action, mbar, group, nbytes, proxy)
    for region, idx in writes:
        if region.shadow.lossy(idx):
            m.depend(f"{_fmt_loc(ins.loc)}: an async write to {region.space} bytes whose earlier readers the race "
                     f"shadow could not all keep")
        if m.check:
            conf = region.shadow.check_write(idx, agent, op.vc, m.fence_clk, None, proxy)
            for c in conf:
                m._race(w, ins, region, c, "async write")
        region.shadow.pend_w[idx] = agent
        region.shadow.pend_w_loc[idx] = m.loc_id(ins.loc)
    for region, idx in reads:
        if m.check:
            conf = region.shadow.check_read(idx, agent, op.vc, m.fence_clk, None, proxy)
            for c in conf:
                m._race(w, ins, region, c, "async read")
        region.shadow.set_pending_read(idx, agent, m.loc_id(ins.loc))
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
    src_size = None
    if len(ops) > 3 and not (isinstance(ops[3], Reg) and m.reg_width(ops[3].name) == 64 and "L2::cache_hint" in ins.mods and len(ops) == 4):
        src_size = np.broadcast_to(np.asarray(m.val(w, ops[3], 32), U64), (32,))
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
        try:
            dreg, doff = _resolve1(m, w, ins, "shared", int(dst[lane]), n)
            sreg, soff = _resolve1(m, w, ins, "global", int(src[lane]), n)
        except Fault as f:
            _fault(m, w, ins, f)
            continue
        sn = min(int(src_size[lane]), n) if src_size is not None else n
        writes.append((dreg, _bytes_idx(doff, n)))
        if sn:
            reads.append((sreg, _bytes_idx(soff, sn)))
        moves.append((dreg, doff, sreg, soff, n, sn))
    if not moves:
        return None

    def action():
        for dreg, doff, sreg, soff, n, sn in moves:
            dreg.data[doff:doff + n] = 0
            dreg.data[doff:doff + sn] = sreg.data[soff:soff + sn]

    writes = _merge(writes)
    reads = _merge(reads)
    op = _copy_op(m, w, ins, "cp.async", writes, reads, action, group=("cp.async", w), proxy=ASYNC_GENERIC)
    out = AG.cp_async_step(w.cp_async, AG.CpAsync(op.agent))
    w.cp_async = out.state
    return _yield_once()


def _cp_async_uniform(m, w, ins, dst, src, mask, lanes, n, src_size):
    """``cp.async`` whose lanes all copy ``n`` bytes: resolved for all lanes at once; ``None``
    when an address faults (the per-lane path then reports the lane)."""
    try:
        dreg, doffs = m.resolve(w, "shared", dst, mask, n)
        sreg, soffs = m.resolve(w, "global", src, mask, n)
    except Fault:
        return None
    if not isinstance(dreg, Region) or not isinstance(sreg, Region):
        raise Unsupported(f"{ins.opcode}: operand outside shared/global memory", ins)
    sn = min(src_size, n) if src_size is not None else n
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
    op = _copy_op(m, w, ins, "cp.async", writes, reads, action, group=("cp.async", w), proxy=ASYNC_GENERIC)
    w.cp_async = AG.cp_async_step(w.cp_async, AG.CpAsync(op.agent)).state
    return _yield_once()


def _merge(pairs):
    by = {}
    for region, idx in pairs:
        by.setdefault(id(region), [region, []])[1].append(idx)
    return [(r, np.unique(np.concatenate(ix))) for r, ix in by.values()]


@handler("cp.async.commit_group")
def h_cp_async_commit(m, w, ins, mask):
    w.cp_async = AG.cp_async_step(w.cp_async, AG.CommitGroup()).state


@handler("cp.async.wait_group", "cp.async.wait_all")
def h_cp_async_wait(m, w, ins, mask):
    cmd = AG.WaitAll() if ins.op == "cp.async.wait_all" else AG.WaitGroup(int(m.val(w, ins.operands[0], 32)))
    return _group_wait(m, w, ins, "cp_async", AG.cp_async_step, cmd)


def _group_wait(m, w, ins, attr, step, cmd):
    w.last_group_wait[attr] = ins.loc
    out = step(getattr(w, attr), cmd)
    if out.violation is not None:
        m.report(out.violation.rule, out.violation.message, [ins.loc])
        return None
    eff = out.effects[0] if out.effects else ("none",)
    if eff[0] == "blocked":
        return _group_wait_gen(m, w, ins, attr, step, cmd)
    setattr(w, attr, out.state)
    _acquire_ops(m, w, eff)
    return _yield_once()


def _group_wait_gen(m, w, ins, attr, step, cmd):
    def ready():
        out = step(getattr(w, attr), cmd)
        return not (out.effects and out.effects[0][0] == "blocked")

    def describe():
        out = step(getattr(w, attr), cmd)
        missing = out.effects[0][1] if out.effects and out.effects[0][0] == "blocked" else ()
        return (f"waits in {ins.opcode} for {len(missing)} operation(s): "
                + "; ".join(m.agents[a] for a in list(missing)[:3]))

    yield Wait("group", ready, describe, ins)
    out = step(getattr(w, attr), cmd)
    setattr(w, attr, out.state)
    if out.effects:
        _acquire_ops(m, w, out.effects[0])


def _acquire_ops(m, w, eff):
    if eff[0] in ("wait-satisfied", "read-wait-satisfied"):
        for agent in eff[1]:
            op = m.ops_by_agent.get(agent)
            if op is not None:
                w.vc = join(w.vc, op.vc)
            w.wgmma_regs.pop(agent, None)


@handler("cp.async.mbarrier.arrive")
def h_cp_async_mbar_arrive(m, w, ins, mask):
    raise Unsupported("cp.async.mbarrier.arrive is not modelled yet", ins)


@handler("cp.async.bulk")
def h_bulk(m, w, ins, mask):
    mods = ins.mods
    ops = ins.operands
    dst_sp = mods[0] if mods and mods[0] in SPACE_MODS else None
    src_sp = mods[1] if len(mods) > 1 and mods[1] in SPACE_MODS else None
    if "multicast::cluster" in mods:
        raise Unsupported("cp.async.bulk multicast is not modelled", ins)
    dst = m.addr_values(w, ops[0])
    src = m.addr_values(w, ops[1])
    size = np.broadcast_to(np.asarray(m.val(w, ops[2], 32), U64), (32,))
    for lane in np.flatnonzero(mask):
        n = int(size[lane])
        try:
            dreg, doff = _resolve1(m, w, ins, dst_sp, int(dst[lane]), n)
            sreg, soff = _resolve1(m, w, ins, src_sp, int(src[lane]), n)
        except Fault as f:
            _fault(m, w, ins, f)
            continue

        def action(dreg=dreg, doff=doff, sreg=sreg, soff=soff, n=n):
            dreg.data[doff:doff + n] = sreg.data[soff:soff + n]

        writes = [(dreg, _bytes_idx(doff, n))]
        reads = [(sreg, _bytes_idx(soff, n))]
        if dst_sp and dst_sp.startswith("shared"):
            mb = m.addr_values(w, ops[3])
            mspace = "shared::cluster" if dst_sp == "shared::cluster" else "shared::cta"
            key = m.mbar_at(w, mspace, int(mb[lane]), ins)
            _copy_op(m, w, ins, "cp.async.bulk", writes, reads, action, mbar=key, nbytes=n)
        else:
            op = _copy_op(m, w, ins, "cp.async.bulk", writes, reads, action, group=("bulk", w))
            w.bulk = AG.bulk_group_step(w.bulk, AG.BulkCopy(op.agent)).state
    return _yield_once()


def _tmap_of(m, w, ins, a: Addr):
    if isinstance(a.base, Sym):
        off = m.param_off.get(a.base.name, (None,))[0]
    else:
        v = int(np.broadcast_to(np.asarray(m.reg(w, a.base.name), U64), (32,))[0])
        off = v - PARAM_WINDOW if v >= PARAM_WINDOW else None
        if off is None or off not in m.tensormaps:
            # a generic address of a tensor map in global memory is not modelled
            raise Unsupported("tensor map not passed as a by-value kernel parameter", ins)
    if off not in m.tensormaps:
        raise Unsupported("tensor-map operand is not a tensor-map parameter", ins)
    return m.tensormaps[off]


@handler("cp.async.bulk.tensor")
def h_bulk_tensor(m, w, ins, mask):
    mods = ins.mods
    ops = ins.operands
    if "multicast::cluster" in mods or "im2col" in mods:
        raise Unsupported(f"{ins.opcode}: multicast / im2col are not modelled", ins)
    load = "global" == (mods[2] if len(mods) > 2 and mods[1].endswith("d") else None) or \
        any(x.startswith("shared") for x in mods[:3]) and mods.index(next(x for x in mods if x in SPACE_MODS)) < \
        mods.index("global") if "global" in mods else False
    spaces = [x for x in mods if x in SPACE_MODS]
    load = spaces and spaces[0].startswith("shared")
    if load:
        dst_a, tm_a = ops[0], ops[1]
    else:
        tm_a, src_a = ops[0], ops[1]
    tm, gstart, tname = _tmap_of(m, w, ins, tm_a)
    nb = tm.box_bytes
    gregion = m.gmem
    gbuf = gregion.data[gstart:]
    for lane in np.flatnonzero(mask):
        coords = [int(np.broadcast_to(np.asarray(m.val(w, c, 32), U64), (32,))[lane]) for c in tm_a.coords]
        coords = [c - (1 << 32) if c >= 1 << 31 else c for c in coords]
        offs, inb = AU._tile_geometry(tm, coords)
        gidx = (offs[inb][:, None] + np.arange(tm.element_size)).reshape(-1) + gstart
        if load:
            d = int(m.addr_values(w, dst_a)[lane])
            dreg, doff = _resolve1(m, w, ins, spaces[0], d, nb)

            def action(dreg=dreg, doff=doff, coords=coords):
                dreg.data[doff:doff + nb] = AU.tma_load_tile(gbuf, tm, coords, doff)

            mb = m.addr_values(w, ops[2])
            key = m.mbar_at(w, "shared::cluster" if spaces[0] == "shared::cluster" else "shared::cta", int(mb[lane]), ins)
            _copy_op(m, w, ins, "cp.async.bulk.tensor", [(dreg, _bytes_idx(doff, nb))], [(gregion, gidx)],
                     action, mbar=key, nbytes=nb)
        else:
            s = int(m.addr_values(w, src_a)[lane])
            sreg, soff = _resolve1(m, w, ins, spaces[-1] if spaces else "shared::cta", s, nb)

            def action(sreg=sreg, soff=soff, coords=coords):
                AU.tma_store_tile(gbuf, tm, coords, sreg.data[soff:soff + nb], soff)

            op = _copy_op(m, w, ins, "cp.async.bulk.tensor", [(gregion, gidx)], [(sreg, _bytes_idx(soff, nb))],
                          action, group=("bulk", w))
            w.bulk = AG.bulk_group_step(w.bulk, AG.BulkCopy(op.agent)).state
    return _yield_once()


@handler("cp.async.bulk.commit_group")
def h_bulk_commit(m, w, ins, mask):
    w.bulk = AG.bulk_group_step(w.bulk, AG.CommitGroup()).state


@handler("cp.async.bulk.wait_group")
def h_bulk_wait(m, w, ins, mask):
    cmd = AG.WaitGroup(int(m.val(w, ins.operands[0], 32)), read="read" in ins.mods)
    return _group_wait(m, w, ins, "bulk", AG.bulk_group_step, cmd)


# --------------------------------------------------------------------------- wgmma


@handler("wgmma.fence")
def h_wgmma_fence(m, w, ins, mask):
    w.wgmma = AG.wgmma_step(w.wgmma, AG.WgmmaFence()).state


@handler("wgmma.commit_group")
def h_wgmma_commit(m, w, ins, mask):
    w.wgmma = AG.wgmma_step(w.wgmma, AG.CommitGroup()).state


@handler("wgmma.wait_group")
def h_wgmma_wait(m, w, ins, mask):
    cmd = AG.WaitGroup(int(m.val(w, ins.operands[0], 32)))
    return _group_wait(m, w, ins, "wgmma", AG.wgmma_step, cmd)


def _imm(m, w, op):
    v = m.val(w, op, 32) if not isinstance(op, Reg) or m.reg_width(op.name) != 1 else m.pred(w, op)
    v = np.asarray(v)
    return v.reshape(-1)[0] if v.ndim else v


@handler("wgmma.mma_async")
def h_wgmma(m, w, ins, mask):
    ops = ins.operands
    if "sp" in ins.mods:
        raise Unsupported("sparse wgmma is not modelled", ins)
    if (w.valid & w.live & ~mask).any():
        m.report("barrier.divergence", f"wgmma.mma_async (.sync.aligned) executed by part of {w.describe()}",
                 [ins.loc])
    d = ops[0]
    dregs_names = [e.name for e in d.elems] if isinstance(d, VecOp) else [d.name]
    a_op = ops[1]
    desc_b = int(np.broadcast_to(np.asarray(m.val(w, ops[2], 64), U64), (32,))[0])
    rest = ops[3:]
    scale_d = bool(_imm(m, w, rest[0])) if rest else True
    tys = ins.types()
    is_float = tys[1] in ("f16", "bf16", "tf32")
    imm_a = int(_imm(m, w, rest[1])) if len(rest) > 1 else 1
    imm_b = int(_imm(m, w, rest[2])) if len(rest) > 2 else 1
    a_regs = None
    if isinstance(a_op, VecOp):
        a_regs = [np.asarray(m.reg(w, e.name)).copy() for e in a_op.elems]
        tn_a = 0
        tn_b = int(_imm(m, w, rest[3])) if len(rest) > 3 and is_float else 0
        desc_a = None
    else:
        desc_a = int(np.broadcast_to(np.asarray(m.val(w, a_op, 64), U64), (32,))[0])
        tn_a = int(_imm(m, w, rest[3])) if len(rest) > 3 and is_float else 0
        tn_b = int(_imm(m, w, rest[4])) if len(rest) > 4 and is_float else 0
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
    dvals = [np.asarray(m.reg(w, n)).copy() for n in dregs_names]
    op.parts[w.index % 4] = (w, dvals, a_regs, desc_a, desc_b, scale_d, tn_a, tn_b, neg_a, neg_b, dregs_names)
    # shared-memory operand reads (async proxy): checked at issue, pending until completion
    shape = next(x for x in ins.mods if x.startswith("m64n"))
    n = int(shape[4:].split("k")[0])
    k = int(shape.split("k")[1])
    dtn = {"f16": "float16", "bf16": "bfloat16", "tf32": "tf32", "s8": "int8", "u8": "uint8"}
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
                reads.append(AU.operand_byte_addresses(desc_a, 64, k, dtn[tys[1]], "MN" if tn_a else "K"))
            reads.append(AU.operand_byte_addresses(desc_b, n, k, dtn[tys[2]], "MN" if tn_b else "K"))
        except (ValueError, NotImplementedError, KeyError) as e:
            raise Unsupported(f"wgmma operand layout: {e}", ins)
        esz = {"f16": 2, "bf16": 2, "tf32": 4, "s8": 1, "u8": 1}[tys[1]]
        idx = cache[ckey] = np.unique(np.concatenate([(r.reshape(-1)[:, None] + np.arange(esz)).reshape(-1)
                                                      for r in reads]))
    if idx.max() >= smem.size:
        m.report("bounds", f"wgmma operand reaches shared offset {int(idx.max())} beyond {smem.size} bytes", [ins.loc])
        raise Unsupported("wgmma operand out of bounds", ins)
    if m.check:
        for c in smem.shadow.check_read(idx, op.agent, w.vc, m.fence_clk, None, ASYNC):
            m._race(w, ins, smem, c, "wgmma operand read")
    if fresh:
        smem.shadow.set_pending_read(idx, op.agent, m.loc_id(ins.loc), {o.agent for o in op.earlier})
    if fresh:
        op.reads = [(smem, idx)]
        m.inflight.append(op)
    regs = frozenset(dregs_names) | (frozenset(e.name for e in a_op.elems) if a_regs is not None else frozenset())
    out = AG.wgmma_step(w.wgmma, AG.MmaAsync(op.agent, regs))
    if out.violation is not None:
        v = out.violation
        m.report(v.rule, f"{v.message} ({w.describe()}, {v.section})", [ins.loc])
        out = AG.wgmma_step(AG.WgmmaState(w.wgmma.queue, True), AG.MmaAsync(op.agent, regs))
    w.wgmma = out.state
    w.wgmma_regs[op.agent] = set(regs)
    w.release_tick()
    return _yield_once()


# --------------------------------------------------------------------------- ldmatrix / stmatrix


def _matrix_lane_addrs(m, w, ins, mask, i, h):
    """Per-lane byte address of fragment element h of matrix i (m8n8, 16-bit) and whether
    the access is transposed (§9.7.9.19 ldmatrix / §9.7.9.20 stmatrix)."""
    a = ins.operands[0] if ins.op == "stmatrix" else ins.operands[1]
    rows = m.addr_values(w, a)  # thread 8*i + r gives the address of row r of matrix i
    t = LANES
    row, col = t // 4, 2 * (t % 4) + h
    if "trans" in ins.mods:
        return rows[8 * i + col] + 2 * row
    return rows[8 * i + row] + 2 * col


def _nmat(ins):
    return {"x1": 1, "x2": 2, "x4": 4}[next(x for x in ins.mods if x in ("x1", "x2", "x4"))]


@handler("stmatrix")
def h_stmatrix(m, w, ins, mask):
    if "m8n8" not in ins.mods:
        raise Unsupported(f"{ins.opcode}: only m8n8 is modelled", ins)
    if (w.valid & w.live & ~mask).any():
        m.report("barrier.divergence", f"{ins.opcode} (.sync.aligned) executed by part of {w.describe()}", [ins.loc])
    regs = ins.operands[1].elems
    space = space_of(ins) or "shared"
    for i in range(_nmat(ins)):
        v = np.broadcast_to(np.asarray(m.val(w, regs[i], 32), U64), (32,))
        for h in range(2):
            addrs = _matrix_lane_addrs(m, w, ins, mask, i, h)
            _mem_write(m, w, ins, space, addrs, mask, 2, (v >> U64(16 * h)) & U64(0xFFFF))


@handler("ldmatrix")
def h_ldmatrix(m, w, ins, mask):
    if "m8n8" not in ins.mods:
        raise Unsupported(f"{ins.opcode}: only m8n8 is modelled", ins)
    if (w.valid & w.live & ~mask).any():
        m.report("barrier.divergence", f"{ins.opcode} (.sync.aligned) executed by part of {w.describe()}", [ins.loc])
    dst = ins.operands[0]
    regs = dst.elems if isinstance(dst, VecOp) else (dst,)
    space = space_of(ins) or "shared"
    for i in range(_nmat(ins)):
        acc = np.zeros(32, U64)
        for h in range(2):
            addrs = _matrix_lane_addrs(m, w, ins, mask, i, h)
            acc |= _mem_read(m, w, ins, space, addrs, mask, 2) << U64(16 * h)
        m.write(w, regs[i], acc, mask)
