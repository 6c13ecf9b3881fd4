"""Issue 12, items 2 and 8: "every schedule" only when the run shows it, scheduling points at
used atomics, warp collectives and spin loops, a run that always ends, and obligations about
synchronization the run never executed are ``unknown``.

Kernels: tests/zoo/work_steal (an atomic ticket loop and its seeded twin), tests/zoo/spin_flag
(a flag handshake between two warps, a flag never set, and a counting poll of it) and
tests/zoo/early_exit (a barrier behind an input check)."""
import json
import time

from conftest import ZOO
from kverify.launch import LaunchSpec
from kverify.semantics.interpreter import run_kernel
from kverify.semantics.ir import load_module
from kverify.verifier.check import check_kernel


def _variant(family, kernel, like=None, **args):
    """``tests/zoo/<family>/<kernel>.ptx`` and the launch of manifest variant ``like`` (default
    ``kernel``) with ``args`` changed. spin_flag.cu and spin_flag_backoff.cu are not in the
    manifest: the correct handshake's flag is still reported as a race (issue 12, item 9),
    and the counting poll runs to the step budget."""
    for v in json.loads((ZOO / family / "manifest.json").read_text())["variants"]:
        if v["kernel"] == (like or kernel):
            launch = dict(v["launch"], kernel=kernel, args=dict(v["launch"]["args"], **args))
            return ZOO / family / f"{kernel}.ptx", launch
    raise KeyError(like or kernel)


def _check(family, kernel, like=None, budget=16, **args):
    path, launch = _variant(family, kernel, like, **args)
    m = load_module(str(path))
    rep = check_kernel(m, m.kernel(kernel), LaunchSpec.from_dict(launch), budget=budget, timeout_s=10.0)
    return {o.title: o for o in rep.obligations}


def _run(family, kernel, like=None, **kw):
    path, launch = _variant(family, kernel, like)
    m = load_module(str(path))
    return run_kernel(m, m.kernel(kernel), LaunchSpec.from_dict(launch), **kw)


def test_work_steal_seeded_race_needs_a_second_warp_and_is_found():
    ob = _check("work_steal", "work_steal_slot")
    o = ob["race-free: shared"]
    assert o.status == "violated" and o.rule == "race.shared"
    assert o.locations[0].line == 16


def test_work_steal_correct_is_claimed_for_every_schedule_only_once_every_class_ran():
    # 2 warps take 6 tickets and one past the end each: which warp takes each of the 6 tickets,
    # and which of the two failing takes comes first, is the class of a schedule: 2**6 * 2
    ob = _check("work_steal", "work_steal")  # budget 16
    for title in ("race-free: shared", "named-barrier conformance", "deadlock-free"):
        assert ob[title].status != "violated", ob[title]
    o = ob["deadlock-free"]
    assert o.status == "unknown"
    assert o.message == ("incomplete: schedule budget exhausted after 17 runs (16 classes of schedules explored "
                         "by dynamic partial-order reduction; more remain)")
    assert "; every schedule" not in o.bound and "order of atomics matters" in o.bound, o.bound
    ob = _check("work_steal", "work_steal", budget=None)  # the default, 256 runs
    bounded = [o for o in ob.values() if o.status == "bounded"]
    assert {o.title for o in bounded} >= {"deadlock-free", "named-barrier conformance", "memory safety"}
    for o in bounded:
        assert ("; every schedule (128 classes of schedules that differ only in the order of independent steps, "
                "one run each: dynamic partial-order reduction; the first run alone does not stand for all: "
                "work_steal.cu:13: atom.add: its returned value is used, so the order of atomics matters)"
                in o.bound), o.bound


def test_used_atomic_is_a_scheduling_point_and_a_dependence():
    r = _run("work_steal", "work_steal", schedule="exhaustive", budget=64)
    assert not r.robust
    assert any("order of atomics matters" in d for d in r.dependence)
    assert (r.schedules_run, r.classes, r.por_complete) == (65, 64, False)
    r = _run("work_steal", "work_steal", schedule="exhaustive", budget=300)
    # a different warp first at each contended ticket: every order of the 8 takes
    assert (r.schedules_run, r.classes, r.por_complete, r.crossing) == (129, 128, True, False)
    assert r.status == "complete" and not r.findings


def test_spin_wait_on_a_flag_set_by_another_warp_ends_in_seconds():
    t0 = time.perf_counter()
    r = _run("spin_flag", "spin_flag", like="spin_flag_never")
    assert time.perf_counter() - t0 < 30
    assert r.status == "complete"
    assert (r.outputs["out"] == r.inputs["in"] + 1).all()
    assert any("spins until another agent writes" in d for d in r.dependence)
    ob = _check("spin_flag", "spin_flag", like="spin_flag_never")
    assert ob["deadlock-free"].status != "violated"


def test_spin_on_a_flag_never_set_is_a_deadlock_at_the_loop():
    t0 = time.perf_counter()
    ob = _check("spin_flag", "spin_flag_never")
    assert time.perf_counter() - t0 < 60
    o = ob["deadlock-free"]
    assert o.status == "violated" and o.rule == "deadlock"
    assert o.locations[0].line == 12
    assert "spins in the loop" in o.message


def test_counting_poll_yields_for_fairness_and_ends_at_the_step_budget():
    r = _run("spin_flag", "spin_flag_backoff", like="spin_flag_never", max_steps=20_000)
    assert r.status == "incomplete"
    assert r.reason == "budget: 20000 warp-instructions per CTA of a cluster, a loop may spin forever"
    assert any("another agent's writes may decide when it ends" in d for d in r.dependence)


def test_run_that_returns_before_every_barrier_is_not_verified():
    ob = _check("early_exit", "early_exit", threshold=100)  # random ctl in [0, 100): every CTA returns
    for title in ("named-barrier conformance", "deadlock-free"):
        o = ob[title]
        assert o.status == "unknown", o
        assert o.message.startswith("not exercised: the run executed none of bar.sync") and "line 9" in o.message
        assert o.locations[0].line == 9
    assert ob["memory safety"].status == "bounded"


def test_run_that_reaches_the_barrier_is_verified():
    ob = _check("early_exit", "early_exit", threshold=0)
    for title in ("named-barrier conformance", "deadlock-free", "memory safety"):
        assert ob[title].status == "bounded", ob[title]
    assert all(o.status != "violated" and o.status != "unknown" for o in ob.values())


def test_spin_that_only_another_cluster_could_end_is_incomplete_not_a_deadlock():
    path, launch = _variant("spin_flag", "spin_flag_never")
    m = load_module(str(path))
    r = run_kernel(m, m.kernel("spin_flag_never"), LaunchSpec.from_dict(dict(launch, grid=[2, 1, 1])))
    assert r.status == "incomplete" and "deadlock" not in r.rules()
    assert "only a CTA of another cluster could still write it" in r.reason
