"""The checks that need no parameter values: where the interpreter cannot run (the launch leaves a
scalar parameter without a value, or a call returns an arbitrary value under a user-given summary,
``kverify.symbolic.extern``), the obligations it would bound get symbolic evidence instead, for
every value of the free parameters:

  named-barrier conformance  barrier uniformity, in the spirit of GPUVerify's two-thread encoding:
                             two arbitrary distinct threads A and B of one CTA (same parameters,
                             same blockIdx; the parameters constrained only by the kernel's
                             preconditions) run the symbolically executed body; for every barrier
                             A executes, B (in the same loop iterations) executes it too unless it
                             has exited, and at every decision of a loop that contains a barrier
                             (go on to the next iteration, leave) B decides as A does. Unsat for
                             every barrier and decision: ``proved`` (every barrier is reached by
                             both or neither, the same number of times; barrier 0 without a
                             thread count, the only form the encoding counts, so ids and counts
                             agree too). Sat with a model that holds for every value of the
                             over-approximated symbols (``races.smt._Checker.confirm``): ``violated``,
                             rule ``barrier.divergence``, with the threads and the parameter values;
                             otherwise ``unknown``. Named barriers, barriers with a thread count or
                             an id in a register, partial ``__syncwarp`` masks, cluster barriers,
                             and what the engine does not follow (a call it does not enter, an
                             unsupported instruction, a loop whose barrier count per iteration
                             varies) leave it ``unknown`` with that reason.
  deadlock-free              ``proved`` only when the kernel's only blocking operations are CTA
                             barriers proved uniform above (and full-mask ``__syncwarp``): no
                             mbarrier or group wait, named barrier, grid or cluster barrier, and no
                             loop that reads shared or global memory without a trip count the
                             engine validated (a loop that may wait for another thread's write).
                             A thread waiting at such a barrier is released once every thread of
                             its CTA has arrived or exited. Termination of loops is not checked.
  memory safety              ``vacuous`` exactly as the interpreter's path says it for buffers
                             sized to the kernel's own accesses, when nothing else the
                             obligation covers can occur: no shared or local memory access (bounds,
                             uninitialized reads), no global variable, no buffer the launch gives, no
                             register read on some path before any instruction wrote it
                             (``semantics.ir.definedness.undefined_reads``), no ``trap``, no indirect
                             branch, no CUDA ``assert()`` left unproved, no access the engine does not
                             follow. Otherwise ``unknown``.

The threads of the strict executor used here have no *quiet tails*: the race checker treats a
thread whose remaining path has no barrier and no access as exited (it can take part in no race),
but such a thread is still live at a barrier the others execute (``bar.sync`` is ``.aligned``), so
here only ``exit``/``ret`` end a thread. Each proof's ``bound`` states its scope ("all values of x;
block 64x1x1 (the launch's); grid 64x1x1 only (the launch's); ...; two arbitrary distinct threads
of one CTA") and every user-given summary it rests on ("assuming nondet() is pure").

PTX ISA (9.0): §9.7.13.1 bar/barrier (``bar.sync`` is ``barrier.sync.aligned``: every thread of
the CTA executes the same barrier; exited threads do not take part), §9.7.13.2 bar.warp.sync.
"""
from __future__ import annotations

import time

import z3

from kverify.semantics.ir import gpuverify as gv
from kverify.semantics.ir.definedness import undefined_reads
from kverify.semantics.ir.nodes import Imm, where
from kverify.semantics.ir.optable import ALIGNED_COLLECTIVE, aligned_barrier, space_of
from kverify.semantics.ir.visit import is_indirect_call, reachable_functions, reachable_instructions
from kverify.semantics.memory_model.execution import BARRIER_DIVERGENCE, UNINITIALIZED_REGISTER
from kverify.symbolic import Executor, Unsupported, is_false, is_true, mk_and, mk_not, operand, row_of
from kverify.symbolic.budget import SolverBudget
from kverify.symbolic.families import handler

from .races.smt import _Checker
from .report import Location, Obligation

TITLES = ("named-barrier conformance", "deadlock-free", "memory safety")
CHECKER = {"named-barrier conformance": "mbarrier", "deadlock-free": "deadlock", "memory safety": "memory"}
#: ``unmodelled`` notes of the engine that order memory but neither block nor change which barriers
#: a thread executes
_NOT_CONTROL = ("a memory fence", "release/acquire synchronization", "the precondition ")
#: blocking ``sync`` effects (``check.BLOCKING_SYNC``) this argument covers
_BARRIERS = ("bar", "bar.warp.sync")
#: what memory safety covers where the interpreter says it is not applicable (``check.SIZED_FROM_ACCESSES``)
SIZED_WITHOUT_VALUES = ("not applicable: buffers sized to the kernel's own accesses: an out-of-bounds access "
                        "cannot show, for any parameter values (checked without values: no shared or local memory "
                        "access, no global variable, no register read before it is written, no trap, no indirect "
                        "branch, no call through a pointer that may hold no function, no failing assertion)")


class StrictExecutor(Executor):
    """The symbolic engine without quiet tails: only ``exit``/``ret`` end a thread."""

    def _annotate(self, stmts, key, after, labels):
        from kverify.semantics.ir.nodes import Block, If, Loop

        self.quiet[key] = [False] * (len(stmts) + 1)
        for s in stmts:
            if isinstance(s, If):
                self._annotate(s.then, (id(s), "then"), False, labels)
                self._annotate(s.orelse, (id(s), "else"), False, labels)
            elif isinstance(s, (Block, Loop)):
                self._annotate(s.body, (id(s), "body"), False, labels)
        return False


class _Uniform(_Checker):
    executor_class = StrictExecutor


def check_without_values(ctx, blocking) -> list:
    """Evidence for ``TITLES`` without values (module docstring); ``ctx`` is the kernel's
    ``check.Context`` with ``no_values`` saying why the interpreter did not run; ``blocking`` the
    ``sync`` effects that can block a warp (``check.BLOCKING_SYNC``)."""
    t0 = time.perf_counter()
    head = f"not checked on the interpreter ({ctx.no_values}); without values: "

    def unknown_all(why, locs=()):
        return [Obligation(t, CHECKER[t], "unknown", head + why, None, list(locs), None, time.perf_counter() - t0)
                for t in TITLES]

    chk = _Uniform(ctx.module, ctx.kernel, ctx.spec, ctx.timeout_s, t0)
    try:
        early = chk.execute()
        if early is not None:
            return unknown_all(early[0], early[1])
        budget = SolverBudget(ctx.timeout_s * 2, label="uniform")
        vacuous = chk.preconditions_vacuous(budget)
        if vacuous:
            return unknown_all(vacuous)
        scope = chk.scope().replace("every schedule (two arbitrary distinct threads)",
                                    "two arbitrary distinct threads of one CTA")
        named = _uniformity(ctx, chk, budget, scope, head)
        if named.status == "violated":  # what the counterexample ranges over (and rests on)
            named.bound = scope
            if chk.ex.extern_used:
                named.message += "; " + "; ".join(chk.extern_assumptions())
        out = [named, _deadlock(ctx, chk, named, scope, head, blocking), _memory(ctx, chk, scope, head)]
    except Unsupported as e:
        return unknown_all(str(e))
    except z3.Z3Exception as e:
        return unknown_all(f"solver error: {e}")
    dt = time.perf_counter() - t0
    for o in out:
        o.time_s = dt / len(out)
    return out


# --------------------------------------------------------------------------- barrier uniformity


def _barrier_blockers(ctx, chk) -> list:
    """``(why, instruction or None)`` for what the uniformity argument does not cover."""
    ex, module = chk.ex, ctx.module
    out = []
    full = ctx.spec.block[0] * ctx.spec.block[1] * ctx.spec.block[2] if ctx.spec.block else None
    for i in reachable_instructions(module, ctx.kernel):
        row = row_of(i)
        if row is None:
            continue
        if row.sync == "bar":
            ops = list(i.operands)
            if "red" in i.mods:
                ops = ops[1:-1]
            bid = ops[0] if ops else Imm(0)
            count = ops[1] if len(ops) > 1 else None
            if not aligned_barrier(i):  # (two sites of it were reported as a divergence)
                out.append((f"{i.opcode} at {where(i.loc)}: a non-aligned barrier may be reached at different "
                            "instructions by the threads of a CTA: not covered", i))
            elif "arrive" in i.mods:
                out.append((f"{i.opcode} at {where(i.loc)}: bar.arrive is not covered (a producer/consumer "
                            "barrier: the threads that arrive and those that wait differ)", i))
            elif not isinstance(bid, Imm):
                out.append((f"{i.opcode} at {where(i.loc)}: a barrier id in a register is not covered", i))
            elif bid.value != 0:
                out.append((f"{i.opcode} at {where(i.loc)}: named barrier {bid.value} is not covered (the "
                            "encoding counts barrier 0 only)", i))
            elif count is not None and not (isinstance(count, Imm) and count.value == full):
                out.append((f"{i.opcode} at {where(i.loc)}: barrier 0 with a thread count that is not the "
                            "whole CTA is not covered", i))
        elif row.sync == "bar.warp.sync":
            mask = operand(i, "membermask")
            if not (isinstance(mask, Imm) and mask.value & 0xFFFFFFFF == 0xFFFFFFFF):
                out.append((f"{i.opcode} at {where(i.loc)}: __syncwarp with a partial or register mask is not "
                            "covered", i))
        elif row.sync == "cluster.barrier":
            out.append((f"{i.opcode} at {where(i.loc)}: cluster barriers are not covered", i))
    for c in ex.masks:  # warp collectives: a full constant membermask is a warp barrier's condition
        if not all(t is not None and z3.is_bv_value(t) and t.as_long() & 0xFFFFFFFF == 0xFFFFFFFF
                   for t in c.masks):
            out.append((f"{c.instr.opcode} at {where(c.loc)}: a warp collective whose membermask is partial or in a "
                        "register is not covered", c.instr))
    said = {w for w, _ in out}
    for u in ex.unmodelled_sync:
        if not u.startswith(_NOT_CONTROL) and not any(u in w or w in u for w in said):
            out.append((f"{u} (not followed by the encoding)", None))
    return out


def _uniformity(ctx, chk, budget, scope, head) -> Obligation:
    title = "named-barrier conformance"
    ex, module = chk.ex, ctx.module
    blockers = _barrier_blockers(ctx, chk)
    if blockers:
        locs = [Location.of(i.loc, module.path) for _, i in blockers[:2] if i is not None]
        return Obligation(title, "mbarrier", "unknown", head + "; ".join(w for w, _ in blockers[:3]), None, locs)
    sites = [s for s in ex.syncs + ex.masks if not is_false(s.pc)]
    bars = [s for s in sites if s.kind in ("barrier", "collective")]
    if not sites:
        if any(row_of(i) is not None and row_of(i).sync in _BARRIERS for i in reachable_instructions(module, ctx.kernel)):
            return Obligation(title, "mbarrier", "unknown", head + "the kernel has barriers the symbolic walk did "
                              "not reach (on no path the encoding follows)")
        return Obligation(title, "mbarrier", "vacuous", "not applicable: the kernel executes no barrier (no "
                          "bar/barrier, __syncwarp or cluster barrier), for any parameter values", scope)
    base = chk.base()
    maybe, undecided = [], []
    for s in sites:
        if s.kind in ("barrier", "collective") and is_true(s.pc):
            continue
        keq = [chk.b(k) == k for _, k in s.loops]
        f = mk_and(s.pc, chk.b(s.head_pc), mk_not(chk.b(s.pc)), mk_not(chk.b(s.exited)))
        group = [chk.same_warp] if s.scope == "warp" else [_same_warpgroup(chk)] if s.scope == "warpgroup" else []
        cons = chk.same_cta() + group + [chk.tid_ne] + keq
        r, m = chk.solve(cons + [f], budget, base=base)
        if r == "unsat":
            continue
        if r == "unknown":
            undecided.append(s)
            continue
        m1 = chk.confirm(cons, f, m, budget, base)
        if m1 is None:
            maybe.append(s)
            continue
        return _divergence(ctx, chk, s, m1)
    if maybe or undecided:
        parts = [f"{_site(s, module)} may be reached by one thread of a CTA and not by another only for values the "
                 "encoding over-approximates (loaded data, floating point, loop registers)" for s in maybe[:2]]
        parts += [f"solver budget ({ctx.timeout_s:g} solver seconds) spent on {_site(s, module)}" for s in undecided[:2]]
        locs = [Location.of(s.loc, module.path) for s in (maybe + undecided)[:2]]
        return Obligation(title, "mbarrier", "unknown", head + "; ".join(parts), None, locs)
    decisions = len(sites) - len(bars)
    loops = len({id(s.loops[-1][0]) for s in sites if s.kind != "barrier" and s.loops})
    msg = (f"every barrier is reached by both or neither of two arbitrary threads of a CTA that have not exited "
           f"({sum(s.kind == 'barrier' for s in bars)} barrier instance(s)"
           + (f", {sum(s.kind == 'collective' for s in bars)} full-mask warp collective(s)"
              if any(s.kind == "collective" for s in bars) else "")
           + f"), and they take the same decisions at the {decisions} exit(s) of the "
           f"{loops} loop(s) that contain barriers (the same trip counts): each thread of a CTA executes the same "
           "barriers the same number of times (barrier 0 without a thread count"
           + (", and full-mask __syncwarp among the lanes of a warp"
              if any(s.scope == "warp" and s.kind == "barrier" for s in bars) else "")
           + (", and full-mask warp collectives among the lanes of a warp"
              if any(s.kind == "collective" for s in bars) else "")
           + ")")
    return Obligation(title, "mbarrier", "proved", msg, scope)


def _same_warpgroup(chk):
    """Threads A and B (of one CTA) are in one warpgroup: four consecutive warps (§9.7.15.1)."""
    wg = z3.LShR(chk.env.linear_tid(), 7)
    return chk.b(wg) == wg


def _site(s, module) -> str:
    if s.kind in ("barrier", "collective"):
        return f"{s.instr.opcode} at {where(s.instr.loc)}"
    return f"the loop at {where(s.loc)} (it contains barriers)"


def _divergence(ctx, chk, s, m) -> Obligation:
    """``violated`` (``barrier.divergence``) from a model of the divergence query at site ``s``."""
    env, module = chk.env, ctx.module

    def val(e):
        return m.eval(e, model_completion=True).as_long()

    def thread(name, sub):
        return {"thread": name, "tid": [val(sub(t)) for t in env.tid], "ctaid": [val(sub(c)) for c in env.ctaid]}

    ta, tb = thread("A", lambda e: e), thread("B", chk.b)
    params = {**env.param_values, **env.symbolic_param_values(m, chk.ex.address_params)}
    iters = {info.name: val(k) for info, k in s.loops}
    block = list(env.block) if env.block else [val(n) for n in env.ntid]
    grid = list(env.grid) if env.grid else [val(n) for n in env.nctaid]
    a, b = _t(ta), _t(tb)
    cta = ",".join(map(str, ta["ctaid"]))
    scope = s.scope if s.scope in ("warp", "warpgroup") else "CTA"
    if s.kind == "collective" and row_of(s.instr).sync in ALIGNED_COLLECTIVE and \
            not any(slot.name == "membermask" for slot in row_of(s.instr).operands):
        msg = (f"{s.instr.opcode} at {where(s.instr.loc)} is executed by thread {a} but not by thread {b} of the same "
               f"{scope} (CTA ({cta})), which has not exited: the condition around it differs between the threads "
               f"(.sync.aligned: every thread of the {scope} must execute the same instruction)")
    elif s.kind == "collective":
        msg = (f"{s.instr.opcode} at {where(s.instr.loc)} is executed by thread {a} but not by thread {b} of the same "
               f"warp (CTA ({cta})), which has not exited and which its membermask names: the condition around it "
               "differs between the threads (§9.7.9.6: every thread a membermask names must execute the instruction)")
    elif s.kind == "barrier":
        msg = (f"{s.instr.opcode} at {where(s.instr.loc)} is executed by thread {a} but not by thread {b} of the same "
               f"{scope} (CTA ({cta})), which has not exited: the condition around the barrier differs between the "
               f"threads (§9.7.13.1: bar.sync is .aligned, every thread of the {scope} must execute it)")
    else:
        what = "goes on to the next iteration" if s.kind == "loop-continue" else "leaves it by this exit"
        msg = (f"the loop at {where(s.loc)} contains barriers and thread {a} {what} while thread {b} of the same "
               f"{scope} (CTA ({cta})) does not, and has not exited: the two execute its barriers a different number "
               "of times (the loop's trip count differs between the threads)")
    if iters:
        msg += "; iteration " + ", ".join(f"{k} of loop {n}" for n, k in iters.items())
    msg += f"; grid {grid[0]}x{grid[1]}x{grid[2]}, block {block[0]}x{block[1]}x{block[2]}"
    if params:
        msg += ", " + ", ".join(f"{k}={env.show_value(v)}" for k, v in params.items())
    ce = {"rule": BARRIER_DIVERGENCE.id, "site": s.kind, "threads": [ta, tb], "params": params,
          "iterations": iters, "block": block, "grid": grid,
          "location": str(Location.of((s.instr.loc if s.instr is not None else s.loc), module.path))}
    loc = Location.of(s.instr.loc if s.instr is not None else s.loc, module.path)
    return Obligation("named-barrier conformance", "mbarrier", "violated", msg, None, [loc], ce, 0.0,
                      BARRIER_DIVERGENCE.id)


def _t(t) -> str:
    tid, cta = t["tid"], t["ctaid"]
    return f"tid=({tid[0]},{tid[1]},{tid[2]})"


# --------------------------------------------------------------------------- deadlock


def _deadlock(ctx, chk, named, scope, head, blocking_sync) -> Obligation:
    title, ex, module = "deadlock-free", chk.ex, ctx.module
    if named.status not in ("proved", "vacuous"):
        why = ("a barrier may be divergent (named-barrier conformance is violated): whether a thread then waits "
               "forever depends on the threads that skip it" if named.status == "violated" else
               "it rests on barrier uniformity, which is not established (named-barrier conformance)")
        return Obligation(title, "deadlock", "unknown", head + why, None, list(named.locations[:1]))
    blocking = [i for i in reachable_instructions(module, ctx.kernel)
                if row_of(i) is not None and row_of(i).sync in blocking_sync and row_of(i).sync not in _BARRIERS]
    if blocking:
        i = blocking[0]
        return Obligation(title, "deadlock", "unknown", head + f"{i.opcode} at {where(i.loc)} may block, and the "
                          "argument without values covers CTA barriers only", None, [Location.of(i.loc, module.path)])
    reasons = list(dict.fromkeys(ex.reasons["shared"] + ex.reasons["global"]))
    if reasons:
        return Obligation(title, "deadlock", "unknown", head + f"a memory access the encoding does not follow "
                          f"could be a wait on memory ({reasons[0]})")
    for info in ex.loops:
        if info.trip is not None:
            continue
        reads = [a for a in ex.accesses if a.mode != "write" and any(li is info for li, _ in a.loops)]
        if reads:
            a = reads[0]
            return Obligation(title, "deadlock", "unknown", head + f"the loop {info.name} reads {a.space} memory "
                              f"({a.instr.opcode} at {where(a.instr.loc)}) and has no trip count the encoding "
                              "validated: it may wait for another thread's write", None,
                              [Location.of(a.instr.loc, module.path)])
    bars = [s for s in ex.syncs if s.kind == "barrier"]
    if bars:
        msg = ("the only blocking operations are CTA barriers (barrier 0 without a thread count"
               + (", full-mask __syncwarp" if any(s.scope == "warp" for s in bars) else "")
               + ") that every thread of its CTA (or warp) executes the same number of times (named-barrier "
               "conformance, proved for all values): a thread waiting at one is released once the others arrive "
               "or exit")
    else:
        msg = "the kernel has no blocking operation (no barrier, mbarrier or group wait, grid or cluster barrier)"
    msg += ("; no loop that reads shared or global memory runs without a validated trip count (no wait on "
            "memory); termination of the kernel's loops is not checked")
    return Obligation(title, "deadlock", "proved", msg, scope)


# --------------------------------------------------------------------------- memory safety


def _memory(ctx, chk, scope, head) -> Obligation:
    title, ex, module = "memory safety", chk.ex, ctx.module
    problems = []  # (why, location or None)
    if "unknown" in ctx.uses:
        problems.append(("the kernel has instructions kverify does not support", None))
    for r in dict.fromkeys(ex.reasons["shared"] + ex.reasons["global"]):
        problems.append((f"an access the encoding does not follow ({r})", None))
    shared = [a for a in ex.accesses if a.space == "shared"]
    if shared:
        a = shared[0]
        problems.append((f"{len(shared)} shared memory access(es) (first: {a.instr.opcode} at {where(a.instr.loc)}): "
                         "their bounds and initialization are not checked without values", a.instr.loc))
    given = set(ctx.spec.buffers) | set(getattr(ctx.spec, "tensormaps", {}) or {})
    for a in ex.accesses:
        if a.space != "global":
            continue
        region = a.region or "?"
        name = region.split(":", 1)[1] if ":" in region else region
        if region.startswith("param:") and name not in given and name not in ctx.unsized \
                and "*" not in ctx.unsized:
            continue
        why = (f"buffer {name} is given by the launch: its bounds are not checked without values"
               if region.startswith("param:") and name in given else
               f"no buffer {name} can be sized to the kernel's accesses ("
               f"{ctx.unsized.get(name) or ctx.unsized.get('*')})" if region.startswith("param:") else
               f"global variable {name}: its bounds are not checked without values" if region.startswith("var:")
               else "the buffer it points into is not known")
        problems.append((f"{a.instr.opcode} at {where(a.instr.loc)}: {why}", a.instr.loc))
        break
    for i in reachable_instructions(module, ctx.kernel):
        row = row_of(i)
        if row is None:
            continue
        h = handler(i)
        if row.effect == "memory" and space_of(i) in ("local", "const", "shared::cluster"):
            problems.append((f"{i.opcode} at {where(i.loc)}: {space_of(i)} memory accesses are not checked "
                             "without values (bounds, uninitialized reads)", i.loc))
        elif h == "trap":
            problems.append((f"{i.opcode} at {where(i.loc)}: a trap aborts the launch; whether it is reached is not "
                             "decided without values", i.loc))
        elif row.flow == "branch.indirect":
            problems.append((f"{i.opcode} at {where(i.loc)}: the index range of an indirect branch is not checked "
                             "without values", i.loc))
        elif is_indirect_call(i) and not ctx.calls_safe:
            problems.append((f"{i.opcode} at {where(i.loc)}: a call through a pointer not shown to hold a "
                             "function's address wherever it is reached", i.loc))
        elif gv.marker_of(i) == gv.ASSERTFAIL and ctx.assertions_status != "proved":
            problems.append((f"CUDA assert() at {where(i.loc)} aborts the launch when it fails, and the assertions "
                             "are not proved", i.loc))
    for k in reachable_functions(module, ctx.kernel):
        for reg, at in undefined_reads(k.body)[:1]:
            problems.append((f"{reg} may be read at {where(at.loc)} before any instruction wrote it: an undefined "
                             f"value ({UNINITIALIZED_REGISTER.id}) is followed only on a run, with values", at.loc))
    if problems:
        seen, uniq = set(), []
        for w, loc in problems:
            if w not in seen:
                seen.add(w)
                uniq.append((w, loc))
        locs = [Location.of(loc, module.path) for _, loc in uniq[:2] if loc is not None]
        more = f" (and {len(uniq) - 3} more)" if len(uniq) > 3 else ""
        return Obligation(title, "memory", "unknown", head + "; ".join(w for w, _ in uniq[:3]) + more, None, locs)
    return Obligation(title, "memory", "vacuous", SIZED_WITHOUT_VALUES, scope)
