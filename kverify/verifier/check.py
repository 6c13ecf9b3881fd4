"""``kverify check``: every obligation of a kernel, from the static checkers (SMT proofs
over two symbolic threads in ``kverify.verifier.races``, symbolic mbarrier obligations in
``kverify.verifier.mbarrier``) and from the interpreter (protocol conformance, async-proxy and
pending-async races, deadlock), gathered into one report per kernel (``kverify.verifier.report``).

Obligations and where their verdict comes from:
  race-free: shared / global      SMT two-thread proof when it applies (``proved``); else the
                                  interpreter (``bounded``) or ``unknown``
  race-free: async                interpreter (race.async-proxy, race.async-pending)
  mbarrier conformance            interpreter (mbarrier.* rules of the step function), and one
    mbarrier conformance: <res>   per barrier array or barrier the run used (full[0..2])
  mbarrier conformance: parity,   symbolic, for every loop iteration (verifier/mbarrier): parity
    tx bytes, arrivals            flips on reuse, expect-tx equals the copies, arrivals equal the count
  named-barrier conformance       interpreter (barrier.* rules)
  deadlock-free                   interpreter (every schedule covered terminates)
  memory safety                   interpreter (bounds, uninitialized reads, trap)

The first run on the interpreter decides whether more are needed: none when it shows that
happens-before fixes every synchronization match (all schedules equivalent), none when it
already violates (the remaining obligations are then ``unknown``), else single deviations
within the budget. An exploration that used up its budget before covering every
single-deviation schedule is ``unknown`` ("budget exhausted"), never clean; a violation
always wins. A symbolic mbarrier obligation left ``unknown`` is ``bounded`` by a clean run.
A launch without buffers gets them sized to the kernel's accesses (``races.extents``).
"""
from __future__ import annotations

import json
import re
import shlex
import time

from kverify.semantics.interpreter import run_kernel
from kverify.semantics.ir import KernelError

from .report import Finding, KernelReport, Location, Obligation

FAMILIES = (
    ("race-free: shared", "races", ("race.shared",)),
    ("race-free: global", "races", ("race.global",)),
    ("race-free: async", "races", ("race.async-proxy", "race.async-pending")),
    ("mbarrier conformance", "mbarrier", ("mbarrier.",)),
    ("named-barrier conformance", "mbarrier", ("barrier.",)),
    ("deadlock-free", "deadlock", ("deadlock",)),
    ("memory safety", "memory", ("bounds", "uninitialized", "trap")),
)


def _family(rule: str) -> str:
    for oid, _, prefixes in FAMILIES:
        if any(rule == p or (p.endswith(".") and rule.startswith(p)) for p in prefixes):
            return oid
    return "memory safety"


def _uses(module, kernel) -> set:
    """Synchronization families the kernel (and the functions it calls) uses."""
    from kverify.semantics.ir.visit import reachable_instructions

    out = set()
    for i in reachable_instructions(module, kernel):
        row = i.row
        if row is None or not i.supported:
            out.add("unknown")
            continue
        if row.proxy == "async" or i.op.startswith(("cp.async", "wgmma", "fence.proxy")):
            out.add("async")
        if i.op.startswith("mbarrier") or (row.sync or "").startswith("mbarrier"):
            out.add("mbarrier")
    return out


def _demangle_local(var: str) -> str:
    """``_ZZ13bulk_pipelineE4full`` (a function-local static) -> ``full``."""
    m = re.match(r"_ZZ(\d+)", var)
    if not m:
        return var
    rest = var[m.end() + int(m.group(1)):]
    m2 = re.match(r"E(\d+)", rest)
    return rest[m2.end():m2.end() + int(m2.group(1))] if m2 else var


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
        name = _demangle_local(var)
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

    try:
        sized, unsized = buffer_extents(module, kernel, spec, timeout_s)
    except Exception as e:  # noqa: BLE001 - optional: without sizes the run reports the missing values
        return spec, {}, {"*": f"internal error ({type(e).__name__}: {e})"}
    if not sized or unsized:
        return spec, {}, unsized
    return replace(spec, buffers={**spec.buffers, **sized}), sized, {}


def check_kernel(module, kernel, spec, budget: int = 16, timeout_s: float = 10.0, replay_cmd=None,
                 smt: bool = True, path: str | None = None) -> KernelReport:
    path = path or module.path
    rep = KernelReport(kernel.name, path or "?")
    uses = _uses(module, kernel)
    vacuous = {"race-free: async": "async" not in uses and "unknown" not in uses,
               "mbarrier conformance": "mbarrier" not in uses and "unknown" not in uses}
    static, extra = {}, []
    if smt:
        try:
            from .races import check_races

            for o in check_races(module, kernel, spec, timeout_s):
                static[o.id] = o
        except Exception:  # the static checkers are optional evidence; fail closed
            static = {}
        try:
            # symbolic mbarrier obligations (parity, tx bytes, arrivals: for all iterations)
            # are obligations of their own; "mbarrier conformance" stays the exploration's
            # (lifecycle, init visibility, reuse), so neither claims what it did not check
            from .mbarrier import check_mbarrier

            extra = list(check_mbarrier(module, kernel, spec, timeout_s)) if "mbarrier" in uses else []
        except Exception:
            extra = []
    spec, sized, unsized = _sized_buffers(module, kernel, spec, timeout_s)
    t0 = time.perf_counter()
    try:
        r = run_kernel(module, kernel, spec, schedule="exhaustive", budget=budget, settle=True)
    except KernelError as e:
        if "no value for parameter" not in str(e):
            raise
        # a launch without concrete arguments/buffers (e.g. GPUVerify headers): only the
        # static checks apply
        dt = time.perf_counter() - t0
        for oid, checker, _ in FAMILIES:
            st = static.get(oid) if isinstance(static, dict) else None
            if st is None and vacuous.get(oid):
                st = Obligation(oid, checker, "proved", "the kernel has no such operations", None, [], None, 0.0)
            why = str(e).split('launch spec: ')[-1]
            if unsized:
                why += "; not sized from the accesses: " + "; ".join(f"{k}: {v}" for k, v in unsized.items())
            rep.obligations.append(st if st is not None else Obligation(
                oid, checker, "unknown", f"not checked: the launch gives no values for the interpreter ({why})",
                None, [], None, dt))
        rep.obligations.extend(extra)
        return rep
    dt = time.perf_counter() - t0
    from kverify.semantics.interpreter import schedule_independent

    g, b = spec.grid, spec.block
    launch = f"grid {g[0]}x{g[1]}x{g[2]}, block {b[0]}x{b[1]}x{b[2]}"
    if schedule_independent(module, kernel):
        explored = f"{launch}, its inputs; one schedule (count-less CTA barriers only: all schedules equivalent)"
    elif r.schedules_total is None:
        explored = (f"{launch}, its inputs; the deterministic schedule only (it already violates "
                    f"{', '.join(sorted(r.rules()))}: other schedules are not explored)")
    elif r.robust and r.schedules_total == 1:
        explored = (f"{launch}, its inputs; every schedule (one run: happens-before fixes how each barrier, "
                    f"mbarrier phase and atomic is matched)")
    else:
        explored = (f"{launch}, its inputs; {r.schedules_run} of {r.schedules_total} schedules (deterministic + "
                    f"single deviations at synchronization points)")
    if sized:
        explored += "; buffers sized to the kernel's accesses: " + ", ".join(
            f"{k} {b['dtype']}[{b['shape'][0]}]" for k, b in sized.items())
    complete = r.explored_all and r.status in ("complete", "deadlock")
    by_family: dict = {}
    for f in r.findings:
        by_family.setdefault(_family(f.rule), []).append(f)
        locs = [Location.of(l, path) for l in f.locs]
        rep.findings.append(Finding(f.rule, f.message, locs, {k: v for k, v in f.details.items()
                                                               if isinstance(v, (str, int, float, list))}))
    def violated(oid, checker, f, st=None):
        sched = f.details.get("schedule", "deterministic")
        launch_arg = spec.path if spec.path.endswith(".json") else shlex.quote(json.dumps(spec.to_dict()))
        cmd = f"kverify run {path} --kernel {kernel.name} --launch {launch_arg}"
        if sched.startswith("replay "):
            cmd += f" --schedule replay --replay {sched.split()[1]}"
        cex = {"rule": f.rule, "message": f.message, "schedule": sched, "replay": cmd,
               "details": {k: v for k, v in f.details.items() if isinstance(v, (str, int, float, list))}}
        if st is not None and st.status == "violated" and st.counterexample:
            cex["smt"] = st.counterexample
        return Obligation(oid, checker, "violated", f.message, explored, [Location.of(l, path) for l in f.locs],
                          cex, dt, f.rule)

    for oid, checker, _ in FAMILIES:
        fs = by_family.get(oid, [])
        st = static.get(oid) if isinstance(static, dict) else None
        if fs:
            rep.obligations.append(violated(oid, checker, fs[0], st))
            continue
        if st is not None and st.status in ("proved", "violated"):
            rep.obligations.append(st)
            continue
        if vacuous.get(oid):
            rep.obligations.append(Obligation(oid, checker, "proved", "the kernel has no such operations",
                                              None, [], None, 0.0))
            continue
        if oid == "memory safety" and sized:
            rep.obligations.append(Obligation(oid, checker, "unknown", "not checked: the buffers were sized to "
                                              "the kernel's own accesses, so out-of-bounds accesses cannot show",
                                              explored, [], None, dt))
            continue
        if r.status == "unsupported":
            rep.obligations.append(Obligation(oid, checker, "unknown", f"not checked: {r.reason}", None, [], None, dt))
        elif r.schedules_total is None:
            rep.obligations.append(Obligation(oid, checker, "unknown", "not explored beyond the first schedule, "
                                              "which already violates other obligations", explored,
                                              [], None, dt))
        elif not complete:
            why = (f"the exploration stopped at a deadlock ({r.reason}): schedules past the hang are not covered"
                   if r.status == "deadlock" else r.reason or
                   f"schedule budget exhausted after {r.schedules_run} of {r.schedules_total} schedules")
            rep.obligations.append(Obligation(oid, checker, "unknown", f"incomplete: {why}", explored, [], None, dt))
        else:
            rep.obligations.append(Obligation(oid, checker, "bounded", "no violation on any explored schedule",
                                              explored, [], None, dt))
    # one obligation per mbarrier resource (an array of barriers, or one barrier)
    fam = next((i for i, o in enumerate(rep.obligations) if o.id == "mbarrier conformance"), None)
    if fam is not None and r.mbarriers:
        base = rep.obligations[fam]
        per = []
        for label, objs in _mbarrier_resources(r.mbarriers):
            fs = [f for f in by_family.get("mbarrier conformance", [])
                  if str(f.details.get("mbarrier", "")).split(" of CTA")[0] in objs]
            if fs:
                per.append(violated(f"mbarrier conformance: {label}", "mbarrier", fs[0]))
                continue
            phases = sum(r.mbarriers[o] for o in objs)
            head = f"{len(objs)} mbarrier(s), {phases} phase(s) completed in the first run; "
            if base.status == "violated":  # another barrier's violation ended the exploration
                per.append(Obligation(f"mbarrier conformance: {label}", "mbarrier", "unknown",
                                      head + "no violation of these in the first schedule, which violates another "
                                      "barrier's protocol (not explored further)", explored, [], None, dt))
            else:
                per.append(Obligation(f"mbarrier conformance: {label}", "mbarrier", base.status,
                                      head + base.message, base.bound, [], None, base.time_s))
        rep.obligations[fam + 1:fam + 1] = per
    # a static mbarrier obligation the symbolic checker could not settle is still covered for
    # this launch by a run that checks every phase's arrivals, tx bytes and parity waits
    dyn = next((o for o in rep.obligations if o.id == "mbarrier conformance"), None)
    for o in extra:
        if o.status == "unknown" and dyn is not None and dyn.status == "bounded":
            o = Obligation(o.id, o.checker, "bounded", f"no violation in the run; not proved for every loop "
                           f"iteration: {o.message}", dyn.bound, o.locations, None, o.time_s + dyn.time_s)
        rep.obligations.append(o)
    return rep
