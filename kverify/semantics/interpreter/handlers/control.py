"""Control families: ret/exit (exited threads count as arrived at CTA barriers), call with
per-lane .param storage (direct, or through a function pointer: the pointer's value names the
function), the dispatch check of a structured brx.idx (§9.7.12.4: index range, .uni), trap/brkpt, and the instructions the interpreter runs as no-ops
(prefetch, nanosleep, membar/fence without a proxy effect...) (§9.7.12).
"""
from __future__ import annotations

import numpy as np

from kverify.semantics.ir import gpuverify as gv
from kverify.semantics.ir.errors import Unsupported
from kverify.semantics.ir.nodes import ParenList, Reg, where
from kverify.semantics.ir.optable import MAX_CALL_DEPTH
from kverify.semantics.ir.visit import prototype_of
from kverify.semantics.memory_model.execution import (ASSERT_FAILED, BARRIER_DIVERGENCE, BRANCH_INDEX_RANGE,
                                                     BRANCH_UNIFORM, CALL_INVALID_TARGET, TRAP)

from ..state import U64
from .common import registry

HANDLERS, handler = registry()


# --------------------------------------------------------------------------- control


@handler("ret")
def h_ret(m, w, ins, mask):
    if not w.frames:  # ret from the kernel: the threads exit
        return h_exit(m, w, ins, mask)
    w.brk["<ret>"] |= mask
    w.live &= ~mask  # temporarily: restored by the call
    w.returned |= mask


@handler("exit")
def h_exit(m, w, ins, mask):
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


@handler("brx.idx")
def h_brx(m, w, ins, mask):
    """The dispatch check of a structured ``brx.idx index, N`` (``structure.dispatch``; the
    chain of ifs after it takes each lane to its target). A lane whose index is N or more
    branches to an undefined address: reported, and the lane stops (as after ``trap``). With
    ``.uni``, lanes of the warp with different indices are reported too."""
    idx = m.val(w, ins.operands[0], 32).astype(np.uint64) & np.uint64(0xFFFFFFFF)
    n = ins.operands[1].value
    if "uni" in ins.mods:
        vals = np.unique(idx[mask])
        if len(vals) > 1:
            m.report(BRANCH_UNIFORM.id, f"{ins.opcode} with index values {', '.join(str(int(v)) for v in vals[:4])}"
                     f"{'...' if len(vals) > 4 else ''} in the active lanes of {w.describe()}", [ins.loc])
    bad = mask & (idx >= np.uint64(n))
    if not bad.any():
        return None
    lane = int(np.flatnonzero(bad)[0])
    m.report(BRANCH_INDEX_RANGE.id, f"{ins.opcode}: index {int(idx[lane])} is outside the {n} targets of its "
             f".branchtargets list ({m._thread(w, lane)})", [ins.loc], thread=m._thread(w, lane))
    w.live &= ~bad
    return _exit_gen(m, w, bad)


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
    if isinstance(fn, Reg):
        return _indirect_call(m, w, ins, mask, fn, rets, args)
    name = fn.name if hasattr(fn, "name") else str(fn)
    if gv.is_marker(name) and name not in m.funcs:
        return _marker(m, w, ins, mask, name, rets, args)
    callee = m.funcs.get(name)
    if callee is None or callee.is_entry:
        raise Unsupported(f"call of unknown function {name}", ins)
    return _call(m, w, ins, mask, callee, rets, args)


def _marker(m, w, ins, mask, name, rets, args):
    """A call kverify gives a meaning of its own (``kverify.semantics.ir.gpuverify``):

    - ``__kverify_assert(holds)`` (GPUVerify's ``__assert``) and ``__assertfail`` (CUDA's
      ``assert()`` failing): ``assert.failed`` for each lane whose assertion is false, and those
      lanes stop (a failed CUDA assertion aborts the launch);
    - ``__kverify_requires`` / ``__kverify_assume(holds)``: a precondition; a lane for which it is
      false means the run's values are outside the kernel's precondition: the run stops, and
      what it found is no evidence about the kernel (``Unsupported`` with the reason);
    - ``__kverify_gv<intrinsic>(...)``: an intrinsic kverify does not evaluate (``__other_int``,
      ``__write_offset_bytes``, ...): it returns 0 and marks the lane, whose next assertion or
      precondition is then not decided by its value but recorded as not evaluated.
    """
    line = where(ins)
    if name == gv.ASSERTFAIL:
        return _assertion_failed(m, w, ins, mask, "CUDA assert() is false")
    if name.startswith(gv.UNEVALUATED_PREFIX):
        w.unevaluated |= mask
        w.unevaluated_names.add(gv.intrinsic_of(name))
        if rets is not None:
            for r in rets.elems:
                store, _ = m.param_store(w, r.name)
                store[mask] = 0
        return None
    store, _ = m.param_store(w, args[0].name)
    holds = store[:, :4].copy().view(np.int32)[:, 0] != 0
    blind = mask & w.unevaluated
    names = ", ".join(sorted(w.unevaluated_names)) or "an intrinsic"
    w.unevaluated &= ~mask
    if not w.unevaluated.any():
        w.unevaluated_names = set()
    what = gv.intrinsic_of(name)
    if blind.any():
        note = f"{what} at {line} uses {names}, which kverify does not evaluate"
        lst = m.unevaluated_assertions if name == gv.ASSERT else m.unevaluated_preconditions
        if note not in lst:
            lst.append(note)
    bad = mask & ~blind & ~holds
    if name == gv.ASSERT:
        m.assertions_run += int((mask & ~blind).sum())
        if bad.any():
            return _assertion_failed(m, w, ins, bad, f"{what} is false")
        return None
    if bad.any():
        lane = int(np.flatnonzero(bad)[0])
        raise Unsupported(f"the launch's values break the kernel's precondition ({what} is false for "
                          f"{m._thread(w, lane)}): kverify checks a kernel only under its preconditions; give "
                          f"values that meet it (--arg, --grid/--block)", ins)
    return None


def _assertion_failed(m, w, ins, bad, what):
    lane = int(np.flatnonzero(bad)[0])
    n = int(bad.sum())
    more = f" (and {n - 1} more lane(s) of {w.describe()})" if n > 1 else ""
    m.report(ASSERT_FAILED.id, f"assertion failed: {what} for {m._thread(w, lane)}{more}", [ins.loc],
             thread=m._thread(w, lane))
    w.live &= ~bad
    return _exit_gen(m, w, bad)


def _indirect_call(m, w, ins, mask, fn, rets, args):
    """``call (r), %fptr, (a), proto;`` (§9.7.12.5): each lane calls the function its
    pointer holds (``launch.layout.function_addresses``); lanes holding different functions
    call them one after the other, as a divergent branch would. A lane whose pointer holds
    no function's address (null, an integer, an address past a function's entry) calls
    nowhere: undefined behaviour, reported as ``call.invalid-target`` with the value, and the
    lane stops (CUDA faults on a null function pointer, as after ``trap``). A function of
    another signature than the prototype is not run (``Unsupported``)."""
    caller = m.funcs.get(w.frames[-1]) if w.frames else m.kernel
    proto = prototype_of(caller, ins)
    ptrs = m.val(w, fn)
    bad = np.zeros(32, bool)
    calls = []
    for addr in np.unique(ptrs[mask]):
        name = m.func_at.get(int(addr))
        if name is None:  # no function's address
            bad |= mask & (ptrs == addr)
            continue
        callee = m.funcs.get(name)
        if callee is None:
            raise Unsupported(f"call through {fn}: {name} has no body in this module", ins)
        if proto is not None and not proto.matches(callee):
            raise Unsupported(f"call through {fn}: {name} does not have the signature of {proto.name}", ins)
        calls.append((addr, callee))
    if bad.any():
        lane = int(np.flatnonzero(bad)[0])
        vals = [int(v) for v in np.unique(ptrs[bad])]
        n = int(bad.sum())
        more = f" (and {n - 1} more lane(s) of {w.describe()})" if n > 1 else ""
        rest = [f"{v:#x}" for v in vals if v != int(ptrs[lane])]
        others = f"; other value(s) of those lanes: {', '.join(rest[:3])}" if rest else ""
        m.report(CALL_INVALID_TARGET.id, f"call through {fn}: {int(ptrs[lane]):#x} is not the address of a function "
                 f"of this module ({m._thread(w, lane)}{more}{others})", [ins.loc],
                 thread=m._thread(w, lane), target=f"{int(ptrs[lane]):#x}")
        w.live &= ~bad
        yield from _exit_gen(m, w, bad)
    for addr, callee in calls:
        yield from _call(m, w, ins, mask & (ptrs == addr), callee, rets, args)


def _call(m, w, ins, mask, callee, rets, args):
    if len(w.frames) >= MAX_CALL_DEPTH:
        raise Unsupported(f"call of {callee.name}: calls nested deeper than {MAX_CALL_DEPTH} (recursion) are not "
                          f"followed", ins)
    # caller-side .param variables hold the arguments per lane
    saved_regs, saved_params = w.regs, w.params
    new_params = {}
    off = 1 << 30
    for p, a in zip(callee.params, args):
        store, base = m.param_store(w, a.name)
        new_params[p.name] = (off, store.copy())
        m.param_off.setdefault(p.name, (off, p.size))
        off += 1 << 20
    for r in callee.rets:
        size = r.size
        new_params[r.name] = (off, np.zeros((32, max(size, 8)), np.uint8))
        m.param_off.setdefault(r.name, (off, size))
        off += 1 << 20
    saved_undef = w.undef, w.undef_from
    w.regs, w.undef, w.undef_from = {}, {}, {}
    w.params = new_params
    w.frames.append(callee.name)
    outer_ret = w.brk.get("<ret>")  # a call inside a called function keeps its caller's returns
    w.brk["<ret>"] = np.zeros(32, bool)
    old_returned = w.returned
    w.returned = np.zeros(32, bool)
    live_before = w.live.copy()
    yield from m.exec_stmts(w, callee.body, mask.copy())
    w.live = live_before & (w.live | w.returned)
    if outer_ret is None:
        w.brk.pop("<ret>")
    else:
        w.brk["<ret>"] = outer_ret
    w.returned = old_returned
    w.frames.pop()
    callee_params = w.params
    w.regs, w.params = saved_regs, saved_params
    w.undef, w.undef_from = saved_undef
    if rets is not None:
        for r, rv in zip(callee.rets, rets.elems):
            store, base = m.param_store(w, rv.name)
            src = callee_params[r.name][1]
            n = min(store.shape[1], src.shape[1])
            store[mask, :n] = src[mask, :n]


# --------------------------------------------------------------------------- no-ops


@handler("griddepcontrol")
def h_griddepcontrol(m, w, ins, mask):
    """§9.7.13 griddepcontrol: ``wait`` orders the lanes after every access of the prerequisite grid
    (checked when the launch is a PDL pair's dependent: ``dependent``); ``launch_dependents`` lets the
    dependent grid start early (where the primary first does so is recorded for the messages)."""
    if "wait" in ins.mods:
        w.pdl_waited |= mask
    elif m.footprint is not None and m.footprint.trigger is None:
        m.footprint.trigger = ins.loc


@handler("setmaxnreg")
def h_setmaxnreg(m, w, ins, mask):
    """``setmaxnreg.sync.aligned``: the register budget is not modelled, its convergence is -- every
    thread of the warp executes it (.aligned), and every warp of the warpgroup the same sequence of
    setmaxnreg instructions (checked when the CTA's run ends, ``warpgroup_divergence``)."""
    if (w.valid & w.live & ~mask).any():
        m.report(BARRIER_DIVERGENCE.id, f"setmaxnreg (.sync.aligned) executed by part of {w.describe()}", [ins.loc])
    w.cta.maxnreg.setdefault(w.index, []).append(ins)


def warpgroup_divergence(m, cta, nwarps: int) -> None:
    """Report the warpgroups of ``cta`` whose warps did not execute the same setmaxnreg
    instructions (PTX ISA §9.7.19.7: all warps in the warpgroup must execute the same one)."""
    for wg in range(0, nwarps - nwarps % 4, 4):
        by_seq: dict = {}  # the setmaxnreg instructions a warp ran, in order -> the warps that ran them
        for i in range(wg, wg + 4):
            by_seq.setdefault(tuple(map(id, cta.maxnreg.get(i, []))), []).append(i)
        if len(by_seq) > 1:
            ran = [f"warp{'s' if len(ws) > 1 else ''} {', '.join(map(str, ws))} ran "
                   + (f"{len(seq)} (line{'s' if len(seq) > 1 else ''} "
                      f"{', '.join(str(x.loc.line or x.loc.ptx_line) for x in cta.maxnreg[ws[0]])})" if seq else "none")
                   for seq, ws in by_seq.items()]
            first = next(x for i in range(wg, wg + 4) for x in cta.maxnreg.get(i, []))
            m.report(BARRIER_DIVERGENCE.id, f"the warps of warpgroup {wg // 4} of {cta.describe()} executed different "
                     f"setmaxnreg (.sync.aligned) instructions: {'; '.join(ran)} (every warp of a warpgroup must "
                     f"execute the same setmaxnreg)", [first.loc])


@handler("nanosleep", "prefetch", "prefetchu", "applypriority", "discard",
         "cp.async.bulk.prefetch", "cp.async.bulk.prefetch.tensor", "pmevent",
         "fence.proxy.tensormap::generic")
def h_nop(m, w, ins, mask):
    return None


@handler("createpolicy")
def h_createpolicy(m, w, ins, mask):
    m.write(w, ins.operands[0], np.zeros(32, U64), mask)


@handler("trap", "brkpt")
def h_trap(m, w, ins, mask):
    why = ""
    if m.reads_workspace and not m.cooperative:
        why = (" (the launch is not cooperative: cooperative groups' grid.sync() traps when its grid workspace, "
               "%envreg1/%envreg2, is null; --cooperative or \"cooperative\": true checks a cooperative launch)")
    m.report(TRAP.id, f"{ins.opcode} executed by {w.describe()}{why}", [ins.loc])
    w.live &= ~mask
    return _exit_gen(m, w, mask)
