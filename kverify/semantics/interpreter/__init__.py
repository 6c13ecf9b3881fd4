"""kverify's interpreter: runs a kernel from any front end on the CPU for one launch, with
happens-before race detection, the protocol step functions, deadlock detection and the
schedulers of ``scheduler``. See docs/semantics.md.

    >>> from kverify.semantics.ir import load_module
    >>> from kverify.launch import LaunchSpec
    >>> from kverify.semantics.interpreter import run_kernel
    >>> m = load_module("tests/zoo/vadd/vadd.ptx")
    >>> r = run_kernel(m, m.kernel(), LaunchSpec.load("tests/zoo/vadd/launch.json"))  # doctest: +SKIP
"""
from __future__ import annotations

import importlib
import importlib.util
import sys
import time
from dataclasses import dataclass, field
import os
from pathlib import Path

import numpy as np

from kverify.launch import LaunchSpec, initial_inputs  # LaunchSpec: re-exported for existing callers
from kverify.rules import severity
from kverify.semantics.ir import KernelError

from .machine import Machine, RunFinding
from . import dpor
from .scheduler import Deterministic, Random, Replay, format_replay

__all__ = ["LaunchSpec", "RunResult", "RunFinding", "run_kernel", "compare_outputs", "load_reference",
           "call_reference"]


@dataclass
class RunResult:
    status: str  # complete | deadlock | incomplete | unsupported
    outputs: dict
    findings: list
    reason: str = ""
    schedule: str = "deterministic"
    schedules_run: int = 1
    schedules_total: int | None = 1
    steps: int = 0
    time_s: float = 0.0
    thread_steps: int = 0
    inputs: dict = field(default_factory=dict)
    dependence: list = field(default_factory=list)  # why the first run may not stand for all schedules
    # writes whose race check missed an earlier reader the shadow dropped (any run): race
    # freedom is not established for them, whatever the schedules explored
    shadow_dropped: list = field(default_factory=list)
    # morally strong conflicting accesses (volatile/relaxed/acquire/release) no happens-before
    # orders (any run): no data race (§8.7), but what is read depends on their order, which
    # the schedules explored need not cover (never for lanes of one warp: they step together)
    strong_unordered: list = field(default_factory=list)
    robust: bool = False  # the first run completed cleanly and stands for every schedule
    executed: dict = field(default_factory=dict)  # id(Instr) -> synchronization Instr some run executed
    mbarriers: dict = field(default_factory=dict)  # mbarrier object -> phases completed (first run)
    ctas_run: int = 0  # CTAs the first run interpreted
    cooperative: bool = False  # a cooperative launch: the grid workspace given, every CTA co-resident
    # a PDL pair's primary (``run_kernel(footprint=True)``): the first run's global footprint
    # (``dependent.Footprint``) and where its buffers lie (name -> (start, dtype, shape))
    footprint: object = None
    layout: dict = field(default_factory=dict)
    # GPUVerify preconditions / assertions a run passed without evaluating them (``ir.gpuverify``)
    unevaluated_preconditions: list = field(default_factory=list)
    unevaluated_assertions: list = field(default_factory=list)
    assertions_run: int = 0  # assertion evaluations (lanes), first run
    # the exploration by dynamic partial-order reduction (``dpor``), when the first run did not
    # stand for every schedule: classes of schedules run (None: not explored), whether that was
    # every class, and why some run depends on more than the order of steps (``Machine.unordered_by_steps``)
    classes: int | None = None
    por_complete: bool = False
    caveats: list = field(default_factory=list)
    crossing: bool = False  # some race was between clusters, which the interpreter runs one after another
    por_stopped: bool = False  # the exploration ended at a run that violates (``settle``), not at its budget

    @property
    def explored_all(self) -> bool:
        if self.classes is not None:
            return self.por_complete
        return self.schedules_total is not None and self.schedules_run >= self.schedules_total

    def rules(self) -> set:
        return {f.rule for f in self.findings}


#: run_kernel's default budget of runs for the exhaustive exploration (``dpor``): ``kverify check``'s
#: and ``kverify run``'s ``--budget``, the API's and the merge gate's ``budget``
SCHEDULE_BUDGET = 256

#: run_kernel's default wall-clock limit in seconds (``--time-budget``): a backstop past the
#: instruction budget, the one limit the machine's load can reach first (it only ever makes a
#: verdict ``unknown: budget``)
WALL_BUDGET_S = 300.0


def _machine(module, kernel, spec, inputs, scheduler, max_steps, check, ctas=None, deadline=None, max_seconds=None,
             prior=None, global_races_proved=False):
    m = Machine(module, kernel, spec.for_kernel(kernel), inputs, scheduler, max_steps, check, only_ctas=ctas)
    m.deadline, m.max_seconds = deadline, max_seconds
    if global_races_proved:
        m.gmem.untrack()
    if prior is not None:  # (primary's footprint, its buffer layout, this launch's parameter -> its buffer)
        fp, layout, shared = prior
        m.pdl_prior = fp.rebase(layout, shared, m.buffers, m.gmem.size)
    return m


def run_kernel(module, kernel, spec: LaunchSpec, inputs: dict | None = None, schedule: str = "deterministic",
               seed: int = 0, budget: int | None = None, max_steps: int = 500_000, check: bool = True,
               replay: dict | None = None, reduce: bool = True, settle: bool = False,
               ctas=None, max_seconds: float | None = None, footprint: bool = False, prior=None,
               global_races_proved: bool = False) -> RunResult:
    """Run ``kernel`` for ``spec``. ``inputs`` maps buffer names to numpy arrays or CPU torch
    tensors (missing buffers get seeded random contents). ``schedule``: deterministic,
    random (``seed``), exhaustive (the deterministic schedule; then, unless that run shows
    that happens-before fixes the matching of every synchronization operation, every class of
    schedules that differ only in the order of independent steps, by dynamic partial-order
    reduction (``dpor``), at most ``budget`` runs, default ``SCHEDULE_BUDGET``) or replay
    (``replay`` deviations). ``reduce=False`` explores the classes even then; ``settle=True``
    explores them only while they can still change the verdict (not after a run with findings).
    ``ctas`` (CTA coordinates) interprets only those CTAs: for a caller that proved the others
    symmetric (kverify.verifier.races.symmetry). ``max_seconds`` (default ``WALL_BUDGET_S``) bounds
    the whole call's wall-clock time: past it the run is ``incomplete`` with the reason. A PDL pair
    (``dependent``): ``footprint=True`` records the first run's global footprint (the primary grid);
    ``prior`` — ``(footprint, its layout, this launch's parameter -> the primary's buffer)`` —
    checks this grid's accesses before ``griddepcontrol.wait`` against it (the dependent grid).
    ``global_races_proved``: the caller proved that no global byte a thread writes is accessed by
    another thread of the launch (``verifier.races.clusters``): global memory then keeps no race
    records (``Region.untrack``; bounds and values are still checked)."""
    t0 = time.perf_counter()
    budget = SCHEDULE_BUDGET if budget is None else budget
    max_seconds = WALL_BUDGET_S if max_seconds is None else max_seconds
    deadline = time.monotonic() + max_seconds
    inputs = initial_inputs(kernel, spec, inputs, seed)
    if schedule == "random":
        sched = Random(seed)
    elif schedule == "replay":
        sched = Replay(replay or {})
    elif schedule in ("deterministic", "exhaustive"):
        sched = Deterministic()
    else:
        raise KernelError(f"unknown schedule {schedule!r} (deterministic, random, exhaustive)", spec.path, 1, 1)
    m = _machine(module, kernel, spec, inputs, sched, max_steps, check, ctas, deadline, max_seconds, prior,
                 global_races_proved)
    if footprint:
        from .dependent import Footprint

        m.footprint = Footprint(m.gmem.size)
    m = m.run()
    findings = dict(m.findings)
    for f in findings.values():
        f.details.setdefault("schedule", schedule if schedule != "exhaustive" else "deterministic")
    status, reason = m.status, m.reason
    runs, total = 1, 1
    dropped, unordered = list(m.shadow_dropped), list(m.strong_unordered)
    classes, por_complete, crossing, stopped = None, False, False, False
    caveats = list(m.unordered_by_steps)
    unevaluated_pre, unevaluated_asserts = list(m.unevaluated_preconditions), list(m.unevaluated_assertions)
    if schedule == "random":
        total = None
    # warning- and note-tier findings (kverify.rules) neither end the exploration nor make the
    # run less robust: the run goes on as the rule's finding says the hardware does
    errors = [f for f in findings.values() if severity(f.rule) == "error"]
    robust = status == "complete" and not errors and not m.dependence
    executed = dict(m.executed)
    if schedule == "exhaustive" and status in ("complete", "deadlock") and not m.dependence and \
            schedule_independent(module, kernel):
        total = runs  # every schedule gives the same happens-before relation and barrier matching
    elif schedule == "exhaustive" and robust and reduce:
        total = runs  # happens-before fixes how every synchronization operation is matched (Machine.mbar_order)
    elif schedule == "exhaustive" and settle and errors:
        total = None  # not explored: the first run already violates
    elif schedule == "exhaustive" and status in ("complete", "deadlock"):
        def run_one(dp):
            r = _machine(module, kernel, spec, inputs, dp, max_steps, check, ctas, deadline, max_seconds, prior,
                         global_races_proved)
            r.fp, r.fp_spawned, dp.m = dpor.Footprint(), [], r
            try:
                return r.run(), False
            except dpor.SleepBlocked:
                return r, True
        try:
            # ``settle``: no run after one that violates (the verdict is decided)
            por = dpor.explore(run_one, budget, stop=(lambda r: any(severity(f.rule) == "error"
                                                                    for f in r.findings.values())) if settle else None)
        except dpor.Diverged as e:
            por = None
            status, reason = "incomplete", f"the exploration of schedules stopped: a replay diverged ({e})"
        total = None
        for r, dp in (por.runs if por is not None else ()):
            runs += 1
            caveats += [c for c in r.unordered_by_steps if c not in caveats]
            dev = format_replay(dp.devs)
            dropped += [d for d in r.shadow_dropped if d not in dropped]
            unordered += [d for d in r.strong_unordered if d not in unordered]
            unevaluated_pre += [d for d in r.unevaluated_preconditions if d not in unevaluated_pre]
            unevaluated_asserts += [d for d in r.unevaluated_assertions if d not in unevaluated_asserts]
            executed.update(r.executed)
            for k, f in r.findings.items():
                if k not in findings:
                    f.details["schedule"] = f"replay {dev}" if dev else "deterministic"
                    findings[k] = f
            if r.status == "deadlock" and status == "complete":
                status, reason = "deadlock", r.reason + f" (schedule replay {dev})"
            if r.status in ("unsupported", "incomplete"):
                status, reason = r.status, r.reason
        if por is not None:
            classes, por_complete, crossing, stopped = por.classes, por.complete, por.crossing, por.stopped
            total = runs if por.complete else None
    return RunResult(status, m.outputs(), list(findings.values()), reason, schedule, runs, total, m.steps,
                     time.perf_counter() - t0, thread_steps=m.thread_steps, inputs=inputs,
                     dependence=list(m.dependence), robust=robust, mbarriers=dict(m.mbarriers),
                     shadow_dropped=dropped, strong_unordered=unordered, executed=executed,
                     ctas_run=m.ctas_run, cooperative=m.cooperative, footprint=m.footprint, layout=dict(m.buffers),
                     unevaluated_preconditions=unevaluated_pre, unevaluated_assertions=unevaluated_asserts,
                     assertions_run=m.assertions_run, classes=classes, por_complete=por_complete, caveats=caveats,
                     por_stopped=stopped, crossing=crossing)


INDEPENDENT_SYNC = {"collective", "fence", "bar.warp.sync"}


def schedule_independent(module, kernel) -> bool:
    """True when the kernel synchronizes only through CTA-wide ``bar.sync``/``barrier.sync``
    without a thread count (plus warp collectives, fences and ``red``): then which warps
    form each barrier instance follows from program order alone. One schedule stands for
    all of them only when, besides, the run recorded no schedule dependence (no spin loop,
    no timer read, no reader the race shadow dropped): ``run_kernel`` asks both."""
    from kverify.semantics.ir.visit import callee_of, reachable_instructions

    for i in reachable_instructions(module, kernel):
        row = i.row
        if row is None or not i.supported:
            return False
        if any(s.access == "target" and s.name == "fn" for s in row.operands):  # call
            if callee_of(module, i) is None:
                return False
            continue
        if row.effect == "memory" and row.operands[0].access == "def" and \
                any(s.access == "update" for s in row.operands):  # atom: its result depends on the order
            return False
        if row.sync is None or row.sync in INDEPENDENT_SYNC:
            continue
        if row.sync == "bar" and "sync" in i.mods and len(i.operands) == 1:
            continue
        return False
    return True


# --------------------------------------------------------------------------- references


def load_reference(spec_text: str, near: str | None = None):
    """``module:function``; ``module`` is first looked up as ``<module>.py`` next to
    ``near`` (the kernel file), then imported normally."""
    mod, _, fn = spec_text.partition(":")
    if not fn:
        raise KernelError(f"--ref must be module:function, got {spec_text!r}", "<command line>", 1, 1)
    path = None
    if near:
        cand = Path(near).resolve().parent / (mod.replace(".", "/") + ".py")
        if os.path.isfile(cand):
            path = cand
    try:
        if path is not None:
            name = f"_kverify_ref_{abs(hash(str(path)))}"
            spec = importlib.util.spec_from_file_location(name, path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            spec.loader.exec_module(module)
        else:
            module = importlib.import_module(mod)
        return getattr(module, fn)
    except (ImportError, AttributeError, SyntaxError) as e:
        raise KernelError(f"cannot load reference {spec_text!r}: {e}", str(path or mod), 1, 1) from None


def call_reference(fn, inputs: dict, spec: LaunchSpec) -> dict:
    args = {}
    for k, v in spec.args.items():
        args[k] = v
    exp = fn({k: np.array(v, copy=True) for k, v in inputs.items()}, args)
    out = {}
    for k, v in exp.items():
        if hasattr(v, "detach"):
            v = v.detach().cpu().numpy()
        out[k] = np.asarray(v)
    return out


def compare_outputs(outputs: dict, expected: dict, rtol=1e-5, atol=1e-6, required=()) -> list:
    """Mismatches as dicts (buffer, index, got, expected, mismatches, of -- or buffer and a
    ``message``); empty when equal. Integers compare exactly, floats within ``rtol``/``atol``
    (float16 outputs: 1e-2). Every buffer of ``required`` (the launch's outputs) must have an
    expected value, of the output's size."""
    out = [{"buffer": name, "message": "the reference gives no value for this output"}
           for name in required if name not in expected]
    for name, exp in expected.items():
        if name not in outputs:
            out.append({"buffer": name, "message": "not a buffer of the launch"})
            continue
        got = np.asarray(outputs[name]).reshape(-1)
        e = np.asarray(exp).reshape(-1)
        if e.size != got.size:  # (the output was cut to the reference's length: a short reference matched)
            out.append({"buffer": name, "message": f"the reference gives {e.size} elements, the buffer has {got.size}"})
            continue
        if np.issubdtype(e.dtype, np.floating) or np.issubdtype(got.dtype, np.floating):
            g = got.astype(np.float64)
            ef = e.astype(np.float64)
            rt, at = (1e-2, 1e-2) if got.dtype == np.float16 or e.dtype == np.float16 else (rtol, atol)
            bad = ~np.isclose(g, ef, rtol=rt, atol=at, equal_nan=True)
        else:
            bad = got.astype(np.int64) != e.astype(np.int64)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            out.append({"buffer": name, "index": i, "got": got[i].item(), "expected": e[i].item(),
                        "mismatches": int(bad.sum()), "of": int(e.size)})
    return out
