"""Dynamic partial-order reduction (kverify/semantics/interpreter/dpor.py): the exhaustive
exploration runs one schedule per class of schedules that differ only in the order of independent
steps, finds a bug that needs two preemptions, and claims every schedule only when no class is
left (and only the classes the interpreter can run: clusters one after another).

Kernels: tests/data/dpor (two pairs of warps on two ticket counters; three warps whose reversed
ticket order overruns a buffer; a non-blocking mbarrier probe whose success overruns a buffer;
a volatile flag read after its store overruns a buffer),
tests/zoo/work_steal, tests/zoo/flag_handoff."""
import json

from conftest import ROOT, ZOO
from kverify.launch import LaunchSpec
from kverify.semantics.interpreter import run_kernel
from kverify.semantics.interpreter.dpor import Footprint
from kverify.semantics.interpreter.scheduler import parse_replay
from kverify.semantics.ir import load_module
from kverify.verifier.check import check_kernel

D = ROOT / "tests" / "data" / "dpor"


def _kernel(name, threads, n):
    m = load_module(str(D / f"{name}.ptx"))
    spec = LaunchSpec.from_dict({"kernel": name, "grid": [1, 1, 1], "block": [threads, 1, 1], "args": {},
                                 "buffers": {"out": {"dtype": "uint32", "shape": [n]}}})
    return m, m.kernel(name), spec


def test_independent_counters_give_the_product_of_their_orders_not_every_interleaving():
    m, k, spec = _kernel("two_counters", 128, 4)
    r = run_kernel(m, k, spec, schedule="exhaustive")
    assert not r.robust and r.dependence == [
        "two_counters.cu:9: atom.add: its returned value is used, so the order of atomics matters"]
    # warps 0 and 1 share one counter, 2 and 3 the other: 2 orders x 2 orders, one run each,
    # after the first run (the deterministic one, run again to record its steps)
    assert (r.schedules_run, r.classes, r.por_complete, r.crossing) == (5, 4, True, False)
    assert r.status == "complete" and r.findings == []
    # a budget below the classes leaves the exploration incomplete
    r = run_kernel(m, k, spec, schedule="exhaustive", budget=3)
    assert (r.schedules_run, r.classes, r.por_complete) == (4, 3, False)


def test_a_bug_two_preemptions_deep_is_found_and_replays():
    m, k, spec = _kernel("ticket_order", 96, 3)
    r = run_kernel(m, k, spec, schedule="exhaustive")
    # three warps, one ticket each: 3! orders; only warp 2, 1, 0 overruns ``out``
    assert (r.classes, r.por_complete) == (6, True)
    (f,) = r.findings
    assert f.rule == "bounds" and [l.line for l in f.locs] == [19]
    assert "8 bytes past the end of out" in f.message
    assert f.details["schedule"] == "replay 0:2,1:1"  # two deviations from the deterministic schedule
    again = run_kernel(m, k, spec, schedule="replay", replay=parse_replay("0:2,1:1"))
    assert [(g.rule, [l.line for l in g.locs]) for g in again.findings] == [("bounds", [19])]
    # no single deviation reaches it
    for dev in ("0:1", "0:2", "1:1", "2:1"):
        assert run_kernel(m, k, spec, schedule="replay", replay=parse_replay(dev)).findings == []


def test_check_reports_the_two_preemption_bug_with_its_replay_command():
    m, k, spec = _kernel("ticket_order", 96, 3)
    rep = check_kernel(m, k, spec, path=str(D / "ticket_order.ptx"))
    assert rep.verdict == "violated"
    o = next(o for o in rep.obligations if o.title == "memory safety")
    assert o.status == "violated" and o.rule == "bounds" and o.locations[0].line == 19
    assert o.counterexample["replay"].endswith("--schedule replay --replay 0:2,1:1")


def test_check_claims_every_schedule_once_every_class_ran():
    m, k, spec = _kernel("two_counters", 128, 4)
    rep = check_kernel(m, k, spec, path=str(D / "two_counters.ptx"))
    assert rep.verdict == "verified"
    o = next(o for o in rep.obligations if o.title == "deadlock-free")
    assert o.status == "bounded"
    assert o.bound == ("grid 1x1x1, block 128x1x1, its inputs (seeded random contents of out); every schedule (4 classes of schedules that differ "
                       "only in the order of independent steps, one run each: dynamic partial-order reduction; the "
                       "first run alone does not stand for all: two_counters.cu:9: atom.add: its returned value is "
                       "used, so the order of atomics matters)")


def test_a_race_between_clusters_bounds_the_claim_to_clusters_in_order():
    v = next(v for v in json.loads((ZOO / "flag_handoff" / "manifest.json").read_text())["variants"]
             if v["file"] == "flag_handoff.cu")
    m = load_module(str(ZOO / "flag_handoff" / "flag_handoff.ptx"))
    spec = LaunchSpec.from_dict(v["launch"])
    r = run_kernel(m, m.kernel(v["kernel"]), spec, schedule="exhaustive")
    # CTA 1 reads the flag CTA 0 sets; the interpreter runs CTA 0's cluster to its end first
    assert (r.classes, r.por_complete, r.crossing) == (1, True, True)
    rep = check_kernel(m, m.kernel(v["kernel"]), spec, path=str(ZOO / "flag_handoff" / "flag_handoff.ptx"))
    o = next(o for o in rep.obligations if o.title == "deadlock-free")
    assert o.status == "bounded"
    assert "; every schedule that runs the clusters one after another (1 classes of schedules" in o.bound
    assert "not the schedules that interleave clusters (morally strong accesses not ordered" in o.bound


def test_dependence_of_footprints():
    a = Footprint({("mbarrier full of CTA (0,0,0)", None)})
    b = Footprint({("mbarrier full of CTA (0,0,0)", None)})
    assert a.dependent(b)
    bar = ("the named barriers of CTA (0,0,0)", 0)
    # CTA-wide arrivals and exits commute with one another, not with a counted arrival
    assert not Footprint(commuting={bar}).dependent(Footprint(commuting={bar}))
    assert Footprint(commuting={bar}).dependent(Footprint({bar}))
    # strong accesses: overlapping bytes with a write
    assert Footprint(mem=[("global", 0, 3, True)]).dependent(Footprint(mem=[("global", 3, 7, False)]))
    assert not Footprint(mem=[("global", 0, 3, False)]).dependent(Footprint(mem=[("global", 0, 3, False)]))
    assert not Footprint(mem=[("global", 0, 3, True)]).dependent(Footprint(mem=[("global", 4, 7, True)]))
    assert not Footprint(mem=[("global", 0, 3, True)]).dependent(Footprint(mem=[((0, 0, 0), 0, 3, True)]))


def test_a_probe_ordered_against_an_arrive_by_its_mbarrier_is_reversed():
    # the deterministic schedule runs warp 1's non-blocking test_wait before warp 0's arrive (the
    # probe fails); the two steps share the mbarrier, so the other order is run: the probe succeeds
    # and the index it picks overruns ``out``
    m, k, spec = _kernel("probe_order", 64, 2)
    r = run_kernel(m, k, spec, schedule="exhaustive")
    assert r.dependence == ["probe_order.cu:21: a non-blocking mbarrier.test_wait whose result the schedule decides"]
    assert (r.classes, r.por_complete) == (2, True)
    (f,) = r.findings
    assert (f.rule, [l.line for l in f.locs], f.details["schedule"]) == ("bounds", [22], "replay 3:1")
    r = run_kernel(m, k, spec, schedule="exhaustive", budget=1)
    assert (r.classes, r.por_complete, r.findings) == (1, False, [])


def test_strong_accesses_to_one_flag_are_reversed():
    # no atomic, barrier or mbarrier orders warp 0's volatile store and warp 1's volatile load: only
    # the overlapping bytes of the two strong accesses make the steps dependent, and the order the
    # deterministic schedule did not run (store first) overruns ``out``
    m, k, spec = _kernel("flag_order", 64, 2)
    r = run_kernel(m, k, spec, schedule="exhaustive")
    assert (r.classes, r.por_complete) == (2, True)
    (f,) = r.findings
    assert (f.rule, [l.line for l in f.locs], f.details["schedule"]) == ("bounds", [10], "replay 1:1")
    r = run_kernel(m, k, spec, schedule="exhaustive", budget=1)
    assert (r.classes, r.findings) == (1, [])
