"""``kverify check``: every obligation of a kernel, gathered from registered checkers into one
report per kernel (``verifier.report``).

A checker is data: a name, the obligations it gives evidence for (titles, in report order),
when it applies, and a function from the kernel's ``Context`` to ``Obligation`` records.
``CHECKERS`` lists them in order:

  races        SMT two-thread proof (``verifier.races``): race-free: shared / global
  assertions   the kernel's assertions for every thread, symbolically (``verifier.assertions``;
               only for a kernel with CUDA ``assert()`` or GPUVerify ``__assert``)
  calls        calls through a pointer that holds no function, symbolically (``verifier.calls``;
               only for a kernel with an indirect call): memory safety (call.invalid-target)
  pipeline     mbarrier ring pipelines, every loop iteration (``verifier.races.pipeline``):
               race-free: async (and shared, without generic shared writes)
  mbarrier     symbolic, every loop iteration (``verifier.mbarrier``): mbarrier conformance:
               parity, tx bytes, arrivals
  interpreter  the run and its schedule exploration (``semantics.interpreter``): every
               family below, one obligation per mbarrier resource (``full[0..2]``) the run
               used, and bounded evidence for the symbolic mbarrier obligations
  uniform      only where the interpreter cannot run (``Context.no_values``: a parameter
               without a value, a call summarized by ``--extern-summary``): named-barrier
               conformance, deadlock freedom and memory safety for every parameter value
               (``verifier.uniform``); its ``unknown`` refines the interpreter's (``refines``)

    race-free: shared / global / async   race.shared, race.global, race.async-proxy / -pending
    mbarrier conformance [: <resource>]  mbarrier.* rules of the protocol step function
    named-barrier conformance            barrier.* rules
    deadlock-free                        every schedule covered terminates
    memory safety                        bounds, uninitialized reads, trap, brx.idx index range,
                                         calls through a pointer that holds no function, integer
                                         division by zero
    assertions                           assert.failed (kernels with assertions only)

``combine`` applies the verdict lattice to the evidence for each obligation: a violation
wins (a replayable one first, the other's counterexample attached; a proof of the same
obligation by another checker is named in its message as a disagreement); then a proof; then
``vacuous`` when the kernel has no operation of the obligation's kind; then a bound (which
says why it is not a proof when another mechanism could not prove it); else ``unknown``.
A violation that may lie outside the executions the kernel is meant for (it passed a GPUVerify
precondition the run could not evaluate; the file has an ``__axiom``: ``Context.unclaimable``)
is ``unknown``, "not claimed as a violation", with the reason.
A checker that raises gives ``unknown`` for each obligation it declared ("internal error in
checker ...": never a missing obligation), and one that does not apply to the launch
(``NotApplicable``) gives ``unknown`` with its reason. An obligation no checker gave
evidence for is ``unknown``.

The interpreter's first run decides whether more are needed: none when it shows that
happens-before fixes every synchronization match (all schedules equivalent), none when it
already violates (the remaining obligations are then ``unknown``), else every class of
schedules that differ only in the order of independent steps, by dynamic partial-order
reduction within the budget (``interpreter.dpor``); an exploration that used up its budget is
``unknown`` ("budget exhausted"), never clean. A launch without buffers gets them sized to the kernel's accesses
(``races.extents``), and memory safety is then ``vacuous`` (``SIZED_FROM_ACCESSES``: not
applicable, an out-of-bounds access cannot show) when the run completed without a
memory-safety finding.
"""
from __future__ import annotations

import json
import os
import shlex
import time
import traceback
from dataclasses import dataclass, field
from typing import Callable

from kverify.rules import severity
from kverify.semantics.interpreter import run_kernel, schedule_independent
from kverify.semantics.ir import KernelError
from kverify.semantics.ir import gpuverify as gv
from kverify.semantics.ir.optable import MBARRIER_SYNC, effect_of
from kverify.semantics.ir.visit import is_indirect_call, reachable_instructions

from kverify.names import short_name

from .report import Finding, KernelReport, Location, Namer, Obligation

#: The interpreter's obligation families: title, checker name in the report, rule ids.
FAMILIES = (
    ("race-free: shared", "races", ("race.shared", "race.shared.")),
    ("race-free: global", "races", ("race.global", "race.global.")),
    ("race-free: async", "races", ("race.async-proxy", "race.async-proxy.issuer-fence", "race.async-pending",
                                    "async-group.store-replicated")),
    ("mbarrier conformance", "mbarrier", ("mbarrier.",)),
    ("named-barrier conformance", "mbarrier", ("barrier.",)),
    ("deadlock-free", "deadlock", ("deadlock",)),
    ("memory safety", "memory", ("bounds", "misaligned", "uninitialized", "trap", "branch.", "call.", "dsmem.",
                                 "arith.")),
    ("assertions", "assertions", ("assert.",)),
)
#: Obligations reported only for kernels that use what they are about (``Context.uses``).
ONLY_WITH = {"assertions": "assert"}
RACE_TITLES = ("race-free: shared", "race-free: global")
MBARRIER_STATIC_TITLES = ("mbarrier conformance: parity (initial phase and alternation)",
                          "mbarrier conformance: tx bytes (per phase)",
                          "mbarrier conformance: arrivals (per phase)")
#: Title prefix of the per-resource mbarrier obligations ("mbarrier conformance: full[0..2]").
RESOURCE_PREFIX = "mbarrier conformance: "
#: ``sync`` effects of the asynchronous machinery besides ``async``-effect rows: group
#: commits and waits, proxy fences, wgmma fences.
ASYNC_SYNC = frozenset({"wgmma.fence", "wgmma.commit", "wgmma.wait", "fence.proxy.async", "fence.proxy.alias",
                        "fence.proxy.tensormap", "cp.async.commit", "cp.async.wait", "cp.async.wait_all",
                        "bulk.commit", "bulk.wait", "cp.async.mbarrier.arrive"})
#: ``sync`` effects that can block a warp (what a deadlock is made of).
BLOCKING_SYNC = frozenset({"bar", "bar.warp.sync", "cluster.barrier", "mbarrier.wait", "cp.async.wait",
                           "cp.async.wait_all", "bulk.wait", "wgmma.wait"})
#: The synchronization instructions (op-table rows) an interpreter obligation's mechanism is
#: about: when the kernel has some and the runs executed none, the obligation was not
#: exercised and is ``unknown`` (a run that returns before every barrier checks no barrier).
EXERCISED_BY = {
    "race-free: async": lambda row: row.effect == "async" or row.sync in ASYNC_SYNC,
    "mbarrier conformance": lambda row: row.sync in MBARRIER_SYNC,
    "named-barrier conformance": lambda row: row.sync in ("bar", "cluster.barrier"),
    "deadlock-free": lambda row: row.sync in BLOCKING_SYNC,
}
#: Obligations that are vacuous when the kernel has no operation of the kind in the value.
VACUOUS_WITHOUT = {"race-free: async": "async", "mbarrier conformance": "mbarrier"}
#: Memory safety when the launch gave no buffers and they were sized to the kernel's own
#: accesses (``races.extents``): ``vacuous`` with this message, and only when the run completed
#: without a memory-safety finding (a run that faults is still ``violated``, an incomplete one
#: ``unknown``).
SIZED_FROM_ACCESSES = ("not applicable: buffers sized to the kernel's own accesses: an out-of-bounds access "
                       "cannot show (no trap or uninitialized read on the explored schedules)")


def _family(rule: str) -> str:
    for title, _, prefixes in FAMILIES:
        if any(rule == p or (p.endswith(".") and rule.startswith(p)) for p in prefixes):
            return title
    return "memory safety"


def _uses(module, kernel) -> set:
    """Kinds of operation the kernel (and the functions it calls) uses: ``async`` (an
    operation that completes later or acts in the async proxy, or a proxy fence), ``mbarrier``
    (any mbarrier operation or completion), ``assert`` (an assertion: CUDA ``assert()``,
    GPUVerify ``__assert``), ``indirect-call`` (a call through a register) and ``unknown`` (an
    instruction the table does not support)."""
    out = set()
    for i in reachable_instructions(module, kernel):
        effect = effect_of(i)
        if effect == "opaque":
            out.add("unknown")
            continue
        sync = i.row.sync or ""
        if gv.marker_of(i) in (gv.ASSERT, gv.ASSERTFAIL):
            out.add("assert")
        if is_indirect_call(i):
            out.add("indirect-call")
        if effect == "async" or sync in ASYNC_SYNC:
            out.add("async")
        if sync in MBARRIER_SYNC:
            out.add("mbarrier")
    return out


def _mbarrier_resources(objs: dict) -> list:
    """Group mbarrier objects (``var`` or ``var+offset``) by variable: ``[(label, {objs})]``,
    ``full[0..2]`` for an array of 8-byte barriers at the variable's start."""
    groups: dict = {}
    for o in objs:
        var, _, off = o.partition("+")
        groups.setdefault(var, []).append((int(off or 0), o))
    out = []
    for var, items in groups.items():
        offs = sorted(x for x, _ in items)
        name = short_name(var)
        if offs[0] == 0 and all(x % 8 == 0 for x in offs):
            idx = [x // 8 for x in offs]
            contiguous = idx == list(range(idx[0], idx[-1] + 1))
            label = (f"{name}[{idx[0]}..{idx[-1]}]" if contiguous else f"{name}[{','.join(map(str, idx))}]") \
                if len(idx) > 1 else name
        else:
            label = f"{name}+{offs[0]}" + (f"..+{offs[-1]}" if len(offs) > 1 else "")
        out.append((label, {o for _, o in items}))
    return out


def _sized_buffers(module, kernel, spec, timeout_s):
    """``spec`` with a buffer for every pointer parameter it leaves out, each as long as the
    kernel's accesses reach (``kverify.verifier.races.extents``); the sizes and the reasons for
    parameters left unsized."""
    from dataclasses import replace

    from .races.extents import buffer_extents

    try:  # sized for the grid the interpreter runs, even where the SMT checkers assume none
        sized, unsized = buffer_extents(module, kernel, replace(spec, grid_assumed=False), timeout_s)
    except Exception as e:  # noqa: BLE001 - optional: without sizes the run reports the missing values
        return spec, {}, {"*": f"internal error ({type(e).__name__}: {e})"}
    if not sized or unsized:
        return spec, {}, unsized
    return replace(spec, buffers={**spec.buffers, **sized}), sized, {}



def _struct_pointers(module, kernel, spec, timeout_s):
    """``spec`` with a pointer field, into a buffer of its own, for each 8-byte slot of a by-value
    struct parameter that the kernel uses as a global address and the launch gives no bytes for
    (``races.extents.struct_slots``, ``kverify.launch.params.with_struct_pointers``); the buffers
    are then sized from the accesses like pointer parameters' (``_sized_buffers``)."""
    if spec is None or not any(p.array for p in kernel.params):
        return spec
    from kverify.launch.params import with_struct_pointers
    from kverify.semantics.ir.structs import struct_pointer_fields

    from .races.extents import struct_slots

    try:
        found = struct_slots(module, kernel, spec, timeout_s)
    except Exception:  # noqa: BLE001 - optional: without it the pointers stay unknown, with the reason
        return spec
    if not found:
        return spec
    try:  # names are presentation: without the source's layout a field is named by its offset
        fields = struct_pointer_fields(module, kernel, found)
    except Exception:  # noqa: BLE001
        fields = {}
    return with_struct_pointers(kernel, spec, found, fields)


class NotApplicable(Exception):
    """A checker cannot run on this launch (the reason is the message); its obligations are
    ``unknown`` with that reason."""


@dataclass
class Context:
    """What every checker of one kernel sees."""

    module: object
    kernel: object
    spec: object
    path: str
    budget: int | None = None  # interpreter runs (None: run_kernel's SCHEDULE_BUDGET)
    timeout_s: float = 10.0
    smt: bool = True
    uses: set = field(default_factory=set)
    findings: list = field(default_factory=list)  # the interpreter's findings, for the report
    inputs: dict | None = None  # initial buffer contents given by the caller (else seeded random)
    time_budget: float | None = None  # the interpreter's wall-clock limit (None: its default)
    mbarrier_vars: set = field(default_factory=set)  # variables the run used as mbarriers (8-byte objects)
    race_run: object = None  # (race checker, its obligations) for CTA symmetry to reuse
    mbarrier_static: list | None = None  # the static mbarrier obligations, when the pipeline checker computed them
    # a PDL pair (``check_pair``): ("primary", {}) records the run (and its global footprint) into the
    # dict; ("dependent", prior, primary kernel name) checks the run against the primary's footprint
    pdl: tuple | None = None
    # why a violation found may lie outside the executions the kernel is meant for (a GPUVerify
    # precondition a run could not evaluate, an __axiom): such violations are reported unknown
    unclaimable: list = field(default_factory=list)
    assertions_status: str | None = None  # the symbolic assertion checker's status, when it ran
    calls_safe: bool = False  # the calls checker showed every reachable indirect call's pointer holds a function
    # why the interpreter could not run (no values for some parameter, a call with an arbitrary
    # result): the checks that need no values (``verifier.uniform``) stand in for it
    no_values: str | None = None
    unsized: dict = field(default_factory=dict)  # pointer parameters the kernel's accesses did not size, and why


@dataclass(frozen=True)
class Checker:
    """A registered checker: ``titles(ctx)`` are the obligations it gives evidence for (in
    report order), ``applies(ctx)`` whether it runs, ``run(ctx)`` the evidence. ``replayable``
    marks a checker whose counterexamples replay on the interpreter."""

    name: str
    titles: Callable
    run: Callable
    applies: Callable = lambda ctx: True
    replayable: bool = False
    claims: str = ""  # what a proof of this checker covers ("for every loop iteration")
    # its ``unknown`` says why an earlier checker's is (it runs where that one could not), so it is
    # the one reported among unknowns
    refines: bool = False


CHECKERS: list = []


def register(name, titles, applies=lambda ctx: True, replayable=False, claims="", refines=False):
    """Decorator: add ``fn(ctx) -> [Obligation]`` to ``CHECKERS`` under ``name``."""
    def deco(fn):
        if fn.__code__.co_argcount != 1:  # (a helper defined under the decorator took a checker's place)
            raise TypeError(f"checker {name}: {fn.__name__} must take the context alone")
        CHECKERS.append(Checker(name, titles if callable(titles) else (lambda ctx, t=tuple(titles): t), fn,
                                applies, replayable, claims, refines))
        return fn
    return deco


@register("races", RACE_TITLES, applies=lambda ctx: ctx.smt, claims="for all threads of the launch")
def _races(ctx):
    from .races import check_races

    keep: list = []
    got = check_races(ctx.module, ctx.kernel, ctx.spec, ctx.timeout_s, keep=keep)
    ctx.race_run = (keep[0], got) if keep else None
    if ctx.pdl and ctx.pdl[0] == "dependent":  # the proof covers this grid's threads, not the primary grid's
        got = [Obligation(o.title, o.checker, "bounded", f"within this grid: {o.message}; against the primary "
                          f"grid {ctx.pdl[2]}: not covered by this proof (the run checks it)", o.bound, o.locations,
                          None, o.time_s) if o.title == "race-free: global" and o.status == "proved" else o
               for o in got]
    return got


@register("assertions", ("assertions",), applies=lambda ctx: ctx.smt and "assert" in ctx.uses,
          claims="for every thread of the launch and every value of its free parameters")
def _assertions(ctx):
    from .assertions import check_assertions

    prior = ctx.race_run[0] if ctx.race_run else None
    got = check_assertions(ctx.module, ctx.kernel, ctx.spec, ctx.timeout_s, prior)
    ctx.assertions_status = got[0].status
    return got


@register("calls", ("memory safety",), applies=lambda ctx: ctx.smt and "indirect-call" in ctx.uses,
          claims="for every thread of the launch and every value of its free parameters")
def _calls(ctx):
    from .calls import check_calls

    prior = ctx.race_run[0] if ctx.race_run else None
    safe: list = []
    got = check_calls(ctx.module, ctx.kernel, ctx.spec, ctx.timeout_s, prior, safe)
    ctx.calls_safe = bool(safe)
    return got


def _inputs_scope(kernel, spec, inputs) -> str:
    """What a run's bound says of its buffer contents: given, or seeded random (not the program's)."""
    from kverify.launch.inputs import drawn_buffers

    drawn = drawn_buffers(kernel, spec, inputs)
    if not drawn:
        return "its inputs" + (" (the given contents)" if spec.buffers else "")
    names = ", ".join(map(str, drawn[:6])) + (f", ... ({len(drawn)} in all)" if len(drawn) > 6 else "")
    return f"its inputs (seeded random contents of {names})"


@register("pipeline", ("race-free: async", "race-free: shared"),
          applies=lambda ctx: ctx.smt and "async" in ctx.uses,
          claims="for every iteration and trip count")
def _pipeline_races(ctx):
    from .races.pipeline import check_pipeline_races

    keep: list = []
    got = check_pipeline_races(ctx.module, ctx.kernel, ctx.spec, ctx.timeout_s, keep=keep)
    ctx.mbarrier_static = keep[0] if keep else None  # the static mbarrier obligations of its run
    return got


@register("mbarrier", MBARRIER_STATIC_TITLES, applies=lambda ctx: ctx.smt and "mbarrier" in ctx.uses,
          claims="for every loop iteration")
def _mbarrier_static(ctx):
    from .mbarrier import check_mbarrier

    if ctx.mbarrier_static is not None:  # computed on the pipeline argument's run of the same launch
        return ctx.mbarrier_static
    return check_mbarrier(ctx.module, ctx.kernel, ctx.spec, ctx.timeout_s)


def _interpreter_titles(ctx):
    titles = tuple(t for t, _, _ in FAMILIES if ONLY_WITH.get(t, "") in ctx.uses | {""})
    return titles + (MBARRIER_STATIC_TITLES if "mbarrier" in ctx.uses else ())


@register("interpreter", _interpreter_titles, replayable=True)
def _interpreter(ctx):
    module, kernel, path = ctx.module, ctx.kernel, ctx.path
    spec, sized, unsized = _sized_buffers(module, kernel, ctx.spec, ctx.timeout_s)
    arbitrary = _summarized_callees(ctx)
    if arbitrary:  # a summarized call's result is any value: no one run stands for them all
        ctx.no_values = (f"the interpreter cannot run a call whose result is arbitrary ({', '.join(arbitrary)}: "
                         "summarized as pure by --extern-summary)")
        ctx.unsized = dict(unsized)
        raise NotApplicable(f"not checked: {ctx.no_values}")
    with_values, chosen = _precondition_values(ctx, ctx.spec, set(sized) | set(unsized))
    if chosen:  # buffers sized again: their extents may depend on the values
        spec, sized, unsized = _sized_buffers(module, kernel, with_values, ctx.timeout_s)
    t0 = time.perf_counter()
    reps, sym_why, proofs = None, "", []
    # CTA symmetry covers races and barriers, not assertions (they may read the CTA's index): a
    # kernel whose assertions the symbolic checker did not prove runs every CTA; nor a PDL pair's
    # grids (the footprint and the check against it need every CTA)
    asserts_open = "assert" in ctx.uses and ctx.assertions_status != "proved"
    clusters = tuple(spec.cluster) != (1, 1, 1)  # (``check_kernel`` applied the kernel's __cluster_dims__)
    if ctx.smt and "unknown" not in ctx.uses and not asserts_open and ctx.pdl is None:
        if not (ctx.uses & {"async", "mbarrier"}) and not clusters:
            from kverify.verifier.races.symmetry import representatives

            reps, sym_why = representatives(module, kernel, spec, ctx.timeout_s, prior=ctx.race_run)
        else:  # asynchronous copies, mbarriers, clusters: whole clusters stand for the others
            from kverify.verifier.races.clusters import cluster_representatives

            reps, sym_why = cluster_representatives(module, kernel, spec, ctx.timeout_s, proof=proofs)
    try:
        r = run_kernel(module, kernel, spec, inputs=ctx.inputs, schedule="exhaustive", budget=ctx.budget,
                       settle=True, ctas=reps, max_seconds=ctx.time_budget, global_races_proved=bool(proofs),
                       footprint=bool(ctx.pdl and ctx.pdl[0] == "primary"),
                       prior=ctx.pdl[1] if ctx.pdl and ctx.pdl[0] == "dependent" else None)
        if ctx.pdl and ctx.pdl[0] == "primary":
            ctx.pdl[1]["run"] = r
    except KernelError as e:
        if "no value for parameter" not in str(e):
            raise
        # a launch without concrete arguments/buffers (e.g. GPUVerify headers): only the
        # static checks apply
        why = str(e).split("launch spec: ")[-1]
        if unsized:
            why += "; not sized from the accesses: " + "; ".join(f"{k}: {v}" for k, v in unsized.items())
        ctx.no_values = f"the launch gives no values for the interpreter ({why})"
        ctx.unsized = dict(unsized)
        raise NotApplicable(f"not checked: the launch gives no values for the interpreter ({why})") from None
    dt = time.perf_counter() - t0
    g, b = spec.grid, spec.block
    launch = f"grid {g[0]}x{g[1]}x{g[2]}{' (assumed: the launch gives no grid)' if spec.grid_assumed else ''}, " \
        f"block {b[0]}x{b[1]}x{b[2]}"
    if r.cooperative:
        launch += (", cooperative launch (every CTA co-resident, cooperative groups' grid workspace given"
                   + ("; assumed: the kernel reads that workspace)" if spec.cooperative is None else ")"))
    if ctx.pdl and ctx.pdl[0] == "dependent":
        launch += (f", launched as the programmatic dependent (PDL) of {ctx.pdl[2]} from the memory its run left "
                   f"(global accesses before griddepcontrol.wait checked against that run's)")
    if reps is not None:
        shown = ", ".join(str(c[0]) if g[1] == g[2] == 1 else str(c) for c in reps[:12])
        more = f", ... ({len(reps)} in all)" if len(reps) > 12 else ""
        what = (f"the clusters starting at CTAs {{{shown}{more}}}" if clusters else f"CTAs {{{shown}{more}}}")
        launch += f" ({what} interpreted, the others are symmetric: {sym_why})"
    elif sym_why and sym_why not in ("small grid", "few clusters"):  # why no fewer CTAs stand for the others
        launch += f" (every CTA interpreted: {sym_why})"
    launch += ", " + _inputs_scope(kernel, spec, ctx.inputs)
    if not r.dependence and r.status in ("complete", "deadlock") and schedule_independent(module, kernel):
        explored = f"{launch}; one schedule (count-less CTA barriers only: all schedules equivalent)"
    elif r.classes is not None:
        why = r.dependence[0] if r.dependence else "the first run does not fix every synchronization match"
        if r.por_complete and r.caveats:
            explored = (f"{launch}; every order of dependent steps ({r.classes} classes of schedules, "
                        f"dynamic partial-order reduction), not every schedule: {r.caveats[0]}")
        elif r.por_complete and r.crossing:
            explored = (f"{launch}; every schedule that runs the clusters one after another "
                        f"({r.classes} classes of schedules, dynamic partial-order reduction), not the schedules "
                        f"that interleave clusters ({why})")
        elif r.por_complete:
            explored = (f"{launch}; every schedule ({r.classes} classes of schedules that differ only "
                        f"in the order of independent steps, one run each: dynamic partial-order reduction; "
                        f"the first run alone does not stand for all: {why})")
        else:
            explored = (f"{launch}; {r.classes} classes of schedules in {r.schedules_run} runs "
                        f"(dynamic partial-order reduction), not every class: "
                        + ("a run violates, and the exploration stopped there" if r.por_stopped else
                           "the budget ended the exploration") + f" ({why})")
    elif r.schedules_total is None:
        explored = (f"{launch}; the deterministic schedule only (it already violates "
                    f"{', '.join(sorted(r.rules()))}: other schedules are not explored)")
    elif r.robust and r.schedules_total == 1:
        explored = (f"{launch}; every schedule (one run: happens-before fixes how each barrier, "
                    f"mbarrier phase and atomic is matched)")
    else:
        explored = (f"{launch}; {r.schedules_run} of {r.schedules_total} schedules with at most one "
                    f"deviation from the deterministic one at a scheduling point (not every schedule: "
                    f"{r.dependence[0] if r.dependence else 'the first run does not fix every synchronization match'})")
    if chosen:
        from kverify.launch.layout import function_addresses

        funcs = {a: n for n, a in function_addresses(module).items()}  # a function pointer: its function
        explored += ("; " + ", ".join(f"{k}={short_name(funcs[v])} ({v:#x})" if v in funcs else f"{k}={v}"
                                      for k, v in chosen.items()) +
                     " chosen to satisfy the kernel's preconditions (the launch gives no value)")
    if sized:
        explored += "; buffers sized to the kernel's accesses: " + ", ".join(
            f"{k} {b['dtype']}[{b['shape'][0]}]" for k, b in sized.items())
    complete = r.explored_all and r.status in ("complete", "deadlock")
    by_family: dict = {}
    ctx.findings = []
    for f in sorted(r.findings, key=lambda f: severity(f.rule) != "error"):  # errors first
        by_family.setdefault(_family(f.rule), []).append(f)
        locs = [Location.of(l, path) for l in f.locs]
        ctx.findings.append(Finding(f.rule, f.message, locs, {k: v for k, v in f.details.items()
                                                              if isinstance(v, (str, int, float, list))}))

    def violated(title, checker, f):
        sched = f.details.get("schedule", "deterministic")
        launch_arg = spec.path if spec.path.endswith(".json") else shlex.quote(json.dumps(spec.to_dict()))
        cmd = f"kverify run {path} --kernel {kernel.name} --launch {launch_arg}"
        if sched.startswith("replay "):
            cmd += f" --schedule replay --replay {sched.split()[1]}"
        cex = {"rule": f.rule, "message": f.message, "schedule": sched, "replay": cmd,
               "details": {k: v for k, v in f.details.items() if isinstance(v, (str, int, float, list))}}
        return Obligation(title, checker, "violated", f.message, explored, [Location.of(l, path) for l in f.locs],
                          cex, dt, f.rule)

    out = []
    for title, checker, _ in FAMILIES:
        if ONLY_WITH.get(title, "") not in ctx.uses | {""}:
            continue
        fs = by_family.get(title, [])
        if fs:
            out.append(violated(title, checker, fs[0]))
        elif title == "assertions" and r.unevaluated_assertions and r.status != "unsupported":
            out.append(Obligation(title, checker, "unknown", "not evaluated: " + "; ".join(r.unevaluated_assertions[:3]),
                                  explored, [], None, dt))
        elif r.status == "unsupported":
            out.append(Obligation(title, checker, "unknown", f"not checked: {r.reason}", None, [], None, dt))
        elif r.schedules_total is None and r.classes is None:
            out.append(Obligation(title, checker, "unknown", "not explored beyond the first schedule, "
                                  "which already violates other obligations", explored, [], None, dt))
        elif not complete:
            why = (f"the exploration stopped at a deadlock ({r.reason}): schedules past the hang are not covered"
                   if r.status == "deadlock" else r.reason or
                   (f"not explored beyond the schedule that violates {', '.join(sorted(r.rules()))} (run "
                    f"{r.schedules_run}, class {r.classes} of the dynamic partial-order reduction): the other classes "
                    f"of schedules are not run" if r.por_stopped else
                    f"schedule budget exhausted after {r.schedules_run} runs ({r.classes} classes of schedules "
                    f"explored by dynamic partial-order reduction; more remain)" if r.classes is not None else
                    f"schedule budget exhausted after {r.schedules_run} of {r.schedules_total} schedules"))
            out.append(Obligation(title, checker, "unknown", f"incomplete: {why}", explored, [], None, dt))
        elif title == "memory safety" and sized:
            out.append(Obligation(title, checker, "vacuous", SIZED_FROM_ACCESSES, explored, [], None, dt))
        elif title == "assertions":
            n = r.assertions_run
            out.append(Obligation(title, checker, "bounded", f"no assertion failed on any explored schedule "
                                  f"({n} evaluation(s) in the first run)" if n else
                                  "no assertion was reached on any explored schedule", explored, [], None, dt))
        else:
            out.append(Obligation(title, checker, "bounded", "no violation on any explored schedule",
                                  explored, [], None, dt))
    ctx.unclaimable += [f"the run passed a precondition kverify could not evaluate ({u})"
                        for u in r.unevaluated_preconditions[:2]]
    out = [_exercised(o, r, module, kernel, path) for o in out]
    if r.shadow_dropped:  # a write was checked against only some of the earlier readers
        out = [Obligation(o.title, o.checker, "unknown", f"race check incomplete: {r.shadow_dropped[0]}", o.bound,
                          o.locations, None, o.time_s) if o.title in RACE_TITLES and o.status in ("bounded", "unknown") else o
               for o in out]
    # one obligation per mbarrier resource (an array of barriers, or one barrier)
    base = next(o for o in out if o.title == "mbarrier conformance")
    # only warnings (the finding says what the hardware does): the exploration went on
    warned = base.status == "violated" and base.severity() != "error" and complete
    ctx.mbarrier_vars = {o.partition("+")[0] for o in r.mbarriers or ()}
    if r.mbarriers:
        for label, objs in _mbarrier_resources(r.mbarriers):
            title = RESOURCE_PREFIX + label
            fs = [f for f in by_family.get("mbarrier conformance", [])  # errors first
                  if str(f.details.get("mbarrier", "")).split(" of CTA")[0] in objs]
            if fs:
                out.append(violated(title, "mbarrier", fs[0]))
                continue
            phases = sum(r.mbarriers[o] for o in objs)
            head = f"{len(objs)} mbarrier(s), {phases} phase(s) completed in the first run; "
            if warned:  # on another barrier
                out.append(Obligation(title, "mbarrier", "bounded", head + "no violation on any explored schedule",
                                      explored, [], None, dt))
            elif base.status == "violated":  # another barrier's violation ended the exploration
                out.append(Obligation(title, "mbarrier", "unknown",
                                      head + "no violation of these in the first schedule, which violates another "
                                      "barrier's protocol (not explored further)", explored, [], None, dt))
            else:
                out.append(Obligation(title, "mbarrier", base.status, head + base.message, base.bound, [], None,
                                      base.time_s))
    out += proofs  # what choosing the representatives proved for the whole launch
    # a clean run checks every phase's arrivals, tx bytes and parity waits: bounded evidence
    # for the symbolic mbarrier obligations (which say for every loop iteration); a run with only
    # warnings is as clean for these
    if "mbarrier" in ctx.uses and (base.status == "bounded" or warned):
        why = (f"no error in the run (warning only: {base.rule})" if warned else "no violation in the run")
        for title in MBARRIER_STATIC_TITLES:
            out.append(Obligation(title, "mbarrier", "bounded", why, base.bound, [], None, dt))
    return out


def _summarized_callees(ctx) -> list:
    """C++ names of the body-less functions the kernel calls that a user-given summary covers
    (``kverify.symbolic.extern``)."""
    if not ctx.spec.extern:
        return []
    from kverify.semantics.ir.visit import reachable_functions
    from kverify.symbolic.extern import bodyless_callees

    summarized = dict(ctx.spec.extern)
    called = bodyless_callees(ctx.module, list(reachable_functions(ctx.module, ctx.kernel)))
    return sorted(shown for p, shown in called.items() if p in summarized)


@register("uniform", lambda ctx: ("named-barrier conformance", "deadlock-free", "memory safety"),
          applies=lambda ctx: ctx.smt and ctx.no_values is not None, refines=True,
          claims="for all values of the parameters")
def _without_values(ctx):
    from .uniform import check_without_values

    return check_without_values(ctx, BLOCKING_SYNC)


def _precondition_values(ctx, spec, pointers=()):
    """``(spec, chosen)``: ``spec`` with values for the scalar parameters it leaves out (not
    ``pointers``, nor parameters the kernel uses as addresses) when the kernel's preconditions
    constrain every one of them (``assertions.precondition_values``), and those values; else
    ``spec`` unchanged and ``{}``."""
    from dataclasses import replace

    from .assertions import precondition_values

    prior = ctx.race_run[0] if ctx.race_run else None
    if prior is None:
        return spec, {}
    given = set(spec.args) | set(spec.buffers) | set(getattr(spec, "tensormaps", {}) or {}) | set(pointers) \
        | set(getattr(getattr(prior, "ex", None), "address_params", ()) or ())
    missing = [p for i, p in enumerate(ctx.kernel.params)
               if not p.array and not ({p.name, p.source_name, str(i)} & given)]
    if not missing:
        return spec, {}
    try:
        chosen = precondition_values(prior, {p.source_name or p.name for p in missing} | {p.name for p in missing})
    except Exception:  # noqa: BLE001 - optional: without values the run says which are missing
        return spec, {}
    if not chosen:
        return spec, {}
    return replace(spec, args={**spec.args, **chosen}), chosen


def _exercised(o, r, module, kernel, path):
    """``o``, or ``unknown`` when the kernel has synchronization instructions that ``o`` is
    about (``EXERCISED_BY``) and no run executed any of them."""
    about = EXERCISED_BY.get(o.title)
    if about is None or o.status != "bounded":
        return o
    mine = [i for i in reachable_instructions(module, kernel) if i.row is not None and about(i.row)]
    if not mine or any(id(i) in r.executed for i in mine):
        return o
    where = ", ".join(f"{i.opcode} (line {i.loc.line or f'ptx {i.loc.ptx_line}'})" for i in mine[:6])
    more = f" and {len(mine) - 6} more" if len(mine) > 6 else ""
    return Obligation(o.title, o.checker, "unknown", f"not exercised: the run executed none of {where}{more}",
                      o.bound, [Location.of(i.loc, path) for i in mine[:4]], None, o.time_s)


RANK = {"violated": 0, "proved": 1, "bounded": 3, "unknown": 4}


def combine(title, evidence, vacuous: bool) -> Obligation:
    """One obligation from the evidence (``[(checker, Obligation)]``, in checker order) for
    ``title``: the verdict lattice of the module docstring."""
    by = {}
    for c, o in evidence:
        by.setdefault(o.status, []).append((c, o))
    if "violated" in by:
        viol = sorted(by["violated"], key=lambda co: not co[0].replayable)
        (c, o), others = viol[0], viol[1:]
        if others and others[0][1].counterexample:
            o.counterexample = dict(o.counterexample or {}, smt=others[0][1].counterexample)
        if "proved" in by:  # a proof and a violation of one obligation: a bug in one of the checkers
            pc, po = by["proved"][0]
            o = Obligation(o.title, o.checker, o.status, f"{o.message}; checker {pc.name} proved this obligation "
                           f"({po.bound or po.message}): the two disagree, a bug in one of them", o.bound,
                           o.locations, o.counterexample, o.time_s, o.rule, o.objects)
        return o
    if "proved" in by:
        return by["proved"][0][1]
    if vacuous:
        checker = evidence[0][1].checker if evidence else "check"
        return Obligation(title, checker, "vacuous", "the kernel has no such operations", None, [], None, 0.0)
    if "vacuous" in by:  # a checker found nothing this launch can check (``SIZED_FROM_ACCESSES``)
        return by["vacuous"][0][1]
    if "bounded" in by:
        o = by["bounded"][0][1]
        why = [(c, u) for c, u in by.get("unknown", ()) if u.message]
        if why:
            c, u = why[0]
            locs = o.locations or u.locations
            o = Obligation(o.title, o.checker, "bounded", f"{o.message}; not proved {c.claims or 'in general'}: "
                           f"{u.message}", o.bound, locs, None, o.time_s + sum(u.time_s for _, u in by["unknown"]))
        return o
    if "unknown" in by:
        refined = [co for co in by["unknown"] if co[0].refines]
        return (refined or by["unknown"])[0][1]
    return Obligation(title, "check", "unknown", "no checker gave evidence for it", None, [], None, 0.0)


def check_kernel(module, kernel, spec, budget: int | None = None, timeout_s: float = 10.0, replay_cmd=None,
                 smt: bool = True, path: str | None = None, checkers=None, inputs: dict | None = None,
                 assume=(), strict: bool = False, time_budget: float | None = None, pdl=None,
                 extern=()) -> KernelReport:
    """Run every applicable checker of ``checkers`` (default ``CHECKERS``) on ``kernel`` and
    combine their evidence into one obligation per title. ``inputs`` (buffer name -> numpy array
    or CPU torch tensor) are the interpreter's initial buffer contents; others are random.
    ``assume`` (expressions over the scalar parameters, ``kverify.symbolic.assume``) are
    preconditions of the symbolic checkers; a bad one, or one the launch's arguments break, is a
    ``KernelError``. ``strict`` reports warning-tier findings as errors (``--strict``). ``extern``
    (``["nondet=pure"]``, ``{"*": "pure"}``; ``kverify.symbolic.extern``) summarizes body-less
    functions; a bad or unknown one is a ``KernelError``."""
    path = path or module.path
    spec = spec.for_kernel(kernel)
    if extern:
        from dataclasses import replace

        from kverify.symbolic import extern as ext

        resolved = ext.resolve(module, ext.parse(extern))
        spec = replace(spec, extern=tuple(sorted(resolved.items())))
    if assume:
        from dataclasses import replace

        from kverify.symbolic import Env

        spec = replace(spec, assume=tuple(assume))
        Env(module, kernel, spec)  # parses and checks the preconditions (KernelError)
    spec = _struct_pointers(module, kernel, spec, timeout_s)
    ctx = Context(module, kernel, spec, path or "?", budget, timeout_s, smt, _uses(module, kernel), inputs=inputs,
                  time_budget=time_budget, pdl=pdl)
    rep = KernelReport(kernel.name, path or "?", strict=strict)
    from .assertions import unchecked_annotations

    notes, axioms = unchecked_annotations(path or "")
    rep.findings.extend(notes)
    if spec.extern:
        from kverify.semantics.ir.visit import reachable_functions
        from kverify.symbolic.extern import KINDS, bodyless_callees

        called = bodyless_callees(module, list(reachable_functions(module, kernel)))
        rep.assumptions = [{"function": called[p], "ptx_name": p, "summary": kind, "meaning": KINDS[kind]}
                           for p, kind in spec.extern if p in called]
    if axioms:
        ctx.unclaimable.append(f"the kernel has a GPUVerify __axiom ({axioms[0]}) kverify does not evaluate")
    order, evidence = [], {}
    for c in (CHECKERS if checkers is None else checkers):
        if not c.applies(ctx):
            continue
        titles = tuple(c.titles(ctx))
        t0 = time.perf_counter()
        try:
            got = list(c.run(ctx))
        except NotApplicable as e:
            got = [Obligation(t, c.name, "unknown", str(e), None, [], None, time.perf_counter() - t0) for t in titles]
        except KernelError:
            raise
        except MemoryError:  # over --max-memory (RLIMIT_AS) or the machine's memory: a budget, not a crash
            why = f"memory budget exhausted in checker {c.name} (kverify check --max-memory sets it)"
            got = [Obligation(t, c.name, "unknown", why, None, [], None, time.perf_counter() - t0) for t in titles]
        except Exception as e:  # noqa: BLE001 - fail closed: a crash is unknown, never a missing obligation
            if os.environ.get("KVERIFY_DEBUG"):
                traceback.print_exc()
            why = f"internal error in checker {c.name} ({type(e).__name__}: {e})"
            got = [Obligation(t, c.name, "unknown", why, None, [], None, time.perf_counter() - t0) for t in titles]
        for o in got:
            if o.title not in evidence:
                order.append(o.title)
                evidence[o.title] = []
            evidence[o.title].append((c, o))
        rep.findings.extend(ctx.findings)
        ctx.findings = []
    unknown_ops = "unknown" in ctx.uses
    ranked = sorted(order, key=_report_order)
    for title in ranked:
        kind = VACUOUS_WITHOUT.get(title)
        o = combine(title, evidence[title], kind is not None and kind not in ctx.uses and not unknown_ops)
        if ctx.unclaimable and o.status == "violated" and o.severity(strict) == "error":
            o = Obligation(o.title, o.checker, "unknown", f"{o.message}; not claimed as a violation: "
                           f"{'; '.join(ctx.unclaimable[:2])}", o.bound, o.locations, None, o.time_s)
        rep.obligations.append(o)
    final = {o.title: o for o in rep.obligations}
    for i, o in enumerate(rep.obligations):  # a proof derived from one the evidence refutes stands no more
        base = final.get(o.rests_on) if o.status == "proved" and o.rests_on else None
        if base is not None and base.status == "violated":
            rep.obligations[i] = Obligation(o.title, o.checker, "unknown", f"{o.message}; not claimed: this proof "
                                            f"rests on the same checker's proof of '{o.rests_on}', which is "
                                            "violated", o.bound, o.locations, None, o.time_s)
    if ctx.unclaimable:
        rep.findings = [f for f in rep.findings if severity(f.rule, strict) != "error"]
    try:  # names are presentation: a failure to name leaves the PTX names, never changes a verdict
        return Namer(module, {v: 8 for v in ctx.mbarrier_vars}).name_report(rep)
    except Exception:  # noqa: BLE001
        return rep


def check_pair(module, kernel, spec, dependent, inputs: dict | None = None, **kw) -> list:
    """A PDL pair (``spec.dependent``, ``kverify.semantics.interpreter.dependent``): the primary
    grid's report (its run records its global footprint), then the dependent grid's, whose run starts
    from the memory the primary's run left and checks every global access before
    ``griddepcontrol.wait`` against that footprint (``race.global.dependent-grid``). Without a
    complete primary run there is nothing to check against: the dependent's race-free: global is
    ``unknown`` with the reason. ``dependent``: the dependent grid's kernel (``spec.dependent``'s)."""
    from dataclasses import replace

    holder: dict = {}
    first = check_kernel(module, kernel, spec, inputs=inputs, pdl=("primary", holder), **kw)
    dspec, shared = spec.dependent_spec()
    dk = dependent
    r = holder.get("run")
    ok = r is not None and r.status == "complete" and r.footprint is not None
    prior = (r.footprint, r.layout, shared) if ok else None
    dinputs = {p: r.outputs[b] for p, b in shared.items() if b in r.outputs} if ok else None
    second = check_kernel(module, dk, dspec, inputs=dinputs, pdl=("dependent", prior, kernel.name) if ok else None,
                          **kw)
    gvars = _global_vars_used(module, kernel) | _global_vars_used(module, dk)  # the footprint carries buffers only
    if not ok or gvars:
        why = f"not checked against the primary grid {kernel.name}: " + (
            f"the grids use module global variable(s) {', '.join(sorted(gvars)[:3])}, which the primary's footprint "
            "does not carry over to the dependent's run" if gvars else
            "its run " + (f"did not complete ({r.status}: {r.reason})" if r is not None else "did not run"))
        second.obligations = [replace(o, status="unknown", message=f"{why}; within this grid: {o.message}",
                                      counterexample=None)
                              if o.title == "race-free: global" and o.status in ("proved", "bounded") else o
                              for o in second.obligations]
    for o in second.obligations:  # replaying the dependent alone would not reproduce the pair
        if o.counterexample and o.counterexample.get("rule") == "race.global.dependent-grid":
            o.counterexample["replay"] = f"kverify check {first.path} --launch {spec.path}"
    return [first, second]


def _global_vars_used(module, kernel) -> set:
    """Names of the module's ``.global`` variables that ``kernel`` (or a function it calls) names."""
    from kverify.semantics.ir.nodes import Addr, Sym
    from kverify.semantics.ir.visit import reachable_instructions

    names = {v.name for v in module.vars if v.space == "global"}
    out = set()
    for ins in reachable_instructions(module, kernel):
        for op in ins.operands:
            base = op.base if isinstance(op, Addr) else op
            if isinstance(base, Sym) and base.name in names:
                out.add(base.name)
    return out


def _report_order(title):
    """Families first (in ``FAMILIES`` order, each mbarrier resource after the protocol's
    obligation), then the symbolic mbarrier obligations."""
    fam = [t for t, _, _ in FAMILIES]
    if title in fam:
        return (fam.index(title), 0, 0)
    if title in MBARRIER_STATIC_TITLES:
        return (len(fam), MBARRIER_STATIC_TITLES.index(title), 0)
    if title.startswith(RESOURCE_PREFIX):
        return (fam.index("mbarrier conformance"), 1, 0)
    return (len(fam) + 1, 0, 0)
