"""When one run stands for every schedule (``Machine.mbar_order`` and ``depend``): the
first, deterministic run of a launch records every reason another schedule could match a
barrier, an mbarrier phase or an atomic differently; with none, ``run_kernel(...,
schedule="exhaustive")`` and ``kverify check`` stop after that run, and otherwise explore."""
import json

import numpy as np
import pytest

from kverify.rules import severity


def _errors(findings):
    """The error-tier findings (warnings, e.g. zoo named_barrier's barrier.aligned-split, are allowed)."""
    return [f for f in findings if severity(f.rule) == "error"]

from conftest import ZOO, zoo_variants
from kverify.launch import LaunchSpec
from kverify.semantics.interpreter import run_kernel
from kverify.semantics.interpreter.hb import READER_SLOTS, Shadow
from kverify.semantics.ir import load_module
from kverify.verifier.check import check_kernel

CORRECT = [(d, v) for d, v in zoo_variants() if v["correct"]]
HEAVY = ("triton", "gemm_tiled", "cp_async_gemm", "softmax")


def _variant(family, file):
    d = ZOO / family
    v = next(v for v in json.loads((d / "manifest.json").read_text())["variants"] if v["file"] == file)
    return d / file.replace(".cu", ".ptx"), v


def _run(path, v, **kw):
    m = load_module(str(path))
    return run_kernel(m, m.kernel(v["kernel"]), LaunchSpec.from_dict(v["launch"]), schedule="exhaustive", **kw)


# synchronized through a flag (morally strong accesses that happens-before does not order
# before the read that observes them): what is read depends on the schedule
FLAG_SYNC = ("flag_handoff",)
#: Correct kernels whose result depends on the schedule by design (an atomic ticket whose
#: value is used): tests/test_soundness_schedules.py covers them.
SCHEDULE_DEPENDENT = ("work_steal",)
LIGHT = [p for p in CORRECT if p[0].name not in HEAVY + FLAG_SYNC + SCHEDULE_DEPENDENT]


@pytest.mark.parametrize("d,v", LIGHT, ids=[f"{d.name}/{v['file']}" for d, v in LIGHT])
def test_every_correct_zoo_kernel_needs_one_run(d, v):
    r = _run(d / v["file"].replace(".cu", ".ptx"), v, budget=4)
    assert r.status == "complete" and _errors(r.findings) == []
    assert r.dependence == [] and r.robust
    assert (r.schedules_run, r.schedules_total) == (1, 1)


@pytest.mark.parametrize("file", ["flag_handoff.cu", "flag_handoff_fence.cu"])
def test_a_flag_handoff_depends_on_the_schedule(file):
    path, v = _variant("flag_handoff", file)
    r = _run(path, v, budget=4)
    assert r.status == "complete" and _errors(r.findings) == [] and not r.robust
    assert r.dependence == r.strong_unordered and len(r.strong_unordered) == 1
    assert r.strong_unordered[0].startswith("morally strong accesses not ordered by happens-before: read of "
                                            "global flag")


def test_check_verifies_the_bulk_pipeline_for_every_schedule():
    path, v = _variant("bulk_pipeline", "bulk_pipeline.cu")
    m = load_module(str(path))
    rep = check_kernel(m, m.kernel(v["kernel"]), LaunchSpec.from_dict(v["launch"]), path=str(path))
    assert rep.verdict == "verified"
    dyn = [o for o in rep.obligations if o.checker != "mbarrier" or o.title == "mbarrier conformance"]
    # the pipeline argument proves the stage races for the launch's trip count (tests/test_pipeline_races.py)
    races = {o.title: o.status for o in dyn if o.title in ("race-free: async", "race-free: shared")}
    assert races == {"race-free: async": "proved", "race-free: shared": "proved"}
    dyn = [o for o in dyn if o.title not in races]
    assert {o.status for o in dyn} == {"bounded"}
    assert all("every schedule (one run" in o.bound for o in dyn)


def test_a_used_atomic_result_makes_the_order_of_atomics_matter(tmp_path):
    path, v = _variant("histogram", "histogram.cu")
    atom = "atom.shared.add.u32 \t%r20, [%r19], 1;"
    p = tmp_path / "histogram.ptx"
    (tmp_path / "histogram.cu").write_text((path.parent / "histogram.cu").read_text())  # parameter names
    p.write_text(path.read_text().replace(atom, atom + "\n\tadd.u32 \t%r20, %r20, 0;"))
    r = _run(p, v, budget=3)
    assert not r.robust and r.schedules_run == 4
    assert r.dependence == ["histogram.cu:16: atom.add: its returned value is used, so the order of atomics matters"]
    assert _run(path, v, budget=3).robust  # the kernel as nvcc emits it discards the value


def test_a_plain_read_racing_with_shared_atomics_is_found():
    path, v = _variant("histogram", "histogram__missing_sync.cu")
    r = _run(path, v, budget=2)
    f = next(f for f in r.findings if f.rule == "race.shared")
    assert {l.line for l in f.locs} == {21, 18}
    assert "read of a location an atomic updates, not ordered" in f.message


@pytest.mark.parametrize("file,reason", [
    # the producer never waits for the empty barrier: its next copy is not ordered after
    # the consumers of the phase before
    ("bulk_pipeline__no_empty_wait.cu",
     "bulk_pipeline__no_empty_wait.cu:116: complete-tx on mbarrier _ZZ13bulk_pipelineE4full of CTA (0,0,0) "
     "in phase 1 is not ordered after every operation of phase 0; in another schedule it may count toward "
     "phase 0"),
    # a second bar.arrive of the producer before the consumers' bar.sync took the first
    ("named_barrier__double_arrive.cu", None),
])
def test_unordered_synchronization_is_recorded(file, reason):
    family = file.split("__")[0]
    path, v = _variant(family, file)
    r = _run(path, v, budget=2)
    assert not r.robust and r.schedules_run > 1
    if reason:
        assert reason in r.dependence
    else:
        assert any("without being ordered after instance" in d for d in r.dependence)


def test_async_reader_slots_lose_only_past_their_number():
    sh = Shadow(64, "shared", np.arange(4))
    idx = np.arange(8)
    vc = np.zeros(16, np.int64)
    for agent in range(10, 10 + READER_SLOTS):
        sh.set_pending_read(idx, agent, 1)
        sh.record_async_read(idx, agent, vc, 1)
    assert not sh.lossy(idx)
    conf = sh.check_write(idx, 0, vc, np.zeros(0, np.int64))
    assert conf and conf[0].rule == "race.async-pending"
    sh.record_async_read(idx, 99, vc, 1)  # a fifth unordered reader
    assert sh.lossy(idx) and not sh.lossy(np.arange(8, 16))
    # a reader ordered after the others takes their slot: nothing is lost
    sh2 = Shadow(64, "shared", np.arange(4))
    for agent in range(10, 10 + READER_SLOTS):
        sh2.record_async_read(idx, agent, vc, 1)
    after = np.zeros(16, np.int64)
    after[10:14] = 1
    sh2.record_async_read(idx, 15, after, 1)
    assert not sh2.lossy(idx)
    sh.record_write(idx, 0, 1, 1)
    assert not sh.lossy(idx)


def _check(family, file):
    path, v = _variant(family, file)
    m = load_module(str(path))
    return check_kernel(m, m.kernel(v["kernel"]), LaunchSpec.from_dict(v["launch"]), path=str(path))


def test_a_static_obligation_left_open_is_bounded_by_a_clean_run():
    rep = _check("arrive_drop", "arrive_drop.cu")  # arrive_drop: the symbolic checker stops
    o = next(o for o in rep.obligations if o.title == "mbarrier conformance: arrivals (per phase)")
    assert o.status == "bounded" and "every schedule (one run" in o.bound
    assert o.message.startswith("no violation in the run; not proved for every loop iteration: ")
    assert "arrive_drop changes the expected count" in o.message
    assert rep.verdict == "verified"


def test_a_violating_first_run_is_not_explored_further():
    rep = _check("tma_store", "tma_store__missing_wait.cu")
    assert rep.verdict == "violated"
    by = {o.title: o for o in rep.obligations}
    assert by["race-free: async"].status == "violated" and by["race-free: async"].rule == "race.async-pending"
    dl = by["deadlock-free"]
    assert dl.status == "unknown" and "not explored beyond the first schedule" in dl.message
    assert "the deterministic schedule only (it already violates race.async-pending" in dl.bound


ROBUST_SAMPLE = [p for p in LIGHT if p[0].name in (
    "bulk_pipeline", "warp_specialized", "wgmma_pipeline", "named_barrier", "arrive_drop", "cluster_arrive",
    "tma_tensor_load", "tma_store", "histogram", "vote")]


@pytest.mark.parametrize("d,v", ROBUST_SAMPLE, ids=[f"{d.name}/{v['file']}" for d, v in ROBUST_SAMPLE])
def test_random_schedules_agree_with_the_one_run(d, v):
    """The claim checked against other schedules: seeded random schedules give the same
    outputs, bit for bit, and no findings."""
    path = d / v["file"].replace(".cu", ".ptx")
    m = load_module(str(path))
    k, spec = m.kernel(v["kernel"]), LaunchSpec.from_dict(v["launch"])
    first = run_kernel(m, k, spec, schedule="exhaustive")
    assert first.robust
    for seed in (1, 2, 3):
        r = run_kernel(m, k, spec, schedule="random", seed=seed, inputs=first.inputs)
        assert r.status == "complete" and _errors(r.findings) == []
        for name, out in first.outputs.items():
            assert np.array_equal(np.asarray(out).view(np.uint8), np.asarray(r.outputs[name]).view(np.uint8)), name


def test_one_obligation_per_mbarrier_resource():
    rep = _check("bulk_pipeline", "bulk_pipeline.cu")
    by = {o.title: o for o in rep.obligations}
    for res in ("full[0..2]", "empty[0..2]"):
        o = by[f"mbarrier conformance: {res}"]
        assert o.status == "bounded" and o.message.startswith("3 mbarrier(s), ")
    rep = _check("bulk_pipeline", "bulk_pipeline__wrong_arrival_count.cu")  # empty[] initialized with 3, not 4
    by = {o.title: o for o in rep.obligations}
    e = by["mbarrier conformance: empty[0..2]"]
    assert e.status == "violated" and e.rule == "mbarrier.arrival-overflow"
    assert [l.line for l in e.locations] == [135, 105]
    assert by["mbarrier conformance: full[0..2]"].status == "unknown"


def test_mbarrier_resource_labels():
    from kverify.verifier.check import _mbarrier_resources

    objs = {"_ZZ13bulk_pipelineE4full": 3, "_ZZ13bulk_pipelineE4full+8": 3, "_ZZ13bulk_pipelineE4full+16": 2,
            "bar": 1, "global_smem+98304": 2, "global_smem+98312": 2, "x": 1, "x+16": 1}
    assert [label for label, _ in _mbarrier_resources(objs)] == [
        "full[0..2]", "bar", "global_smem+98304..+98312", "x[0,2]"]


def test_reading_a_clock_makes_the_run_schedule_dependent(tmp_path):
    path, v = _variant("vadd", "vadd.cu")
    src = path.read_text()
    line = "\tmov.u32 \t%r3, %ctaid.x;"
    assert line in src
    p = tmp_path / "vadd.ptx"
    (tmp_path / "vadd.cu").write_text((path.parent / "vadd.cu").read_text())
    p.write_text(src.replace(line, "\tmov.u32 \t%r3, %clock;\n" + line))
    r = _run(p, v, budget=1)
    assert not r.robust and r.dependence == ["%clock is read: its value depends on the schedule and the hardware"]
    assert _run(path, v, budget=1).robust


def test_a_run_with_only_mbarrier_warnings_still_bounds_the_static_obligations(tmp_path):
    """Every lane of warp 0 initializes the barrier (mbarrier.init-replicated, a warning): the run
    goes on, so it bounds what the symbolic checker leaves open, as a clean run does."""
    path, v = _variant("arrive_drop", "arrive_drop.cu")
    text = path.read_text()
    assert text.count("setp.ne.s32 \t%p2, %r1, 0;") == 1
    (tmp_path / "arrive_drop.cu").write_text((path.parent / "arrive_drop.cu").read_text())  # names the parameters
    mutant = tmp_path / "arrive_drop.ptx"
    mutant.write_text(text.replace("setp.ne.s32 \t%p2, %r1, 0;", "setp.gt.u32 \t%p2, %r1, 31;"))
    m = load_module(str(mutant))
    rep = check_kernel(m, m.kernel(v["kernel"]), LaunchSpec.from_dict(v["launch"]), path=str(mutant))
    by = {o.title: o for o in rep.obligations}
    base = by["mbarrier conformance"]
    assert base.status == "violated" and base.rule == "mbarrier.init-replicated" and base.severity() == "warning"
    o = by["mbarrier conformance: arrivals (per phase)"]
    assert o.status == "bounded" and "every schedule (one run" in o.bound
    assert o.message.startswith("no error in the run (warning only: mbarrier.init-replicated); not proved for "
                                "every loop iteration: ")
    assert rep.verdict == "verified"


def test_a_run_with_a_warning_and_an_error_bounds_nothing_it_left_open(tmp_path):
    """The replicated init (a warning) plus a parity that never flips (an error, the run's
    mbarrier.parity): the exploration stopped at the error, so the arrivals the symbolic checker
    leaves open stay unknown, and the kernel is violated."""
    path, v = _variant("arrive_drop", "arrive_drop.cu")
    text = path.read_text()
    assert text.count("and.b32  \t%r6, %r53, 1;") == 1
    (tmp_path / "arrive_drop.cu").write_text((path.parent / "arrive_drop.cu").read_text())
    mutant = tmp_path / "arrive_drop.ptx"
    mutant.write_text(text.replace("setp.ne.s32 \t%p2, %r1, 0;", "setp.gt.u32 \t%p2, %r1, 31;")
                      .replace("and.b32  \t%r6, %r53, 1;", "and.b32  \t%r6, %r53, 0;"))
    m = load_module(str(mutant))
    rep = check_kernel(m, m.kernel(v["kernel"]), LaunchSpec.from_dict(v["launch"]), path=str(mutant))
    by = {o.title: o for o in rep.obligations}
    assert by["mbarrier conformance"].status == "violated" and by["mbarrier conformance"].rule == "mbarrier.parity"
    o = by["mbarrier conformance: arrivals (per phase)"]
    assert o.status == "unknown" and "arrive_drop changes the expected count" in o.message
    assert rep.verdict == "violated"
