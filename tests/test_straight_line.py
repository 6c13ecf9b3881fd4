"""The pipeline race argument on mbarrier uses outside every loop (kverify/verifier/races/pipeline.py,
``_straight_use``): a barrier no loop names is used in program order -- a signal belongs to the
phase after the waits its threads ran on that barrier before it -- so one-shot TMA loads
(the zoo's tma_tensor_load, struct_params) and straight-line refills of one buffer
(tests/data/straight_line/two_phase.cu, ours) get "race-free: async" proved for every value of
the parameters, while each twin whose bug is a race is not: unknown naming both lines, or
violated (``race.async-proxy``) where only the proxy fence is missing."""
import json
from pathlib import Path

import pytest

from conftest import ZOO
from kverify.launch import LaunchSpec
from kverify.semantics.ir import load_module
from kverify.verifier.check import check_kernel
from kverify.verifier.races.pipeline import check_pipeline_races

DATA = Path(__file__).resolve().parent / "data" / "straight_line"
SPEC = LaunchSpec.from_dict(json.loads((DATA / "launch.json").read_text()))


def _zoo(fam, file):
    man = json.loads((ZOO / fam / "manifest.json").read_text())
    v = next(v for v in man["variants"] if v["file"] == file)
    return load_module(str((ZOO / fam / file).with_suffix(".ptx"))), v["kernel"], LaunchSpec.from_dict(v["launch"])


def _async(module, kernel, spec):
    return {o.title: o for o in check_pipeline_races(module, kernel, spec)}


def _locs(o):
    return [(Path(l.path).name, l.line) for l in o.locations]


@pytest.mark.parametrize("fam,file", [("tma_tensor_load", "tma_tensor_load.cu"), ("struct_params", "struct_params.cu")])
def test_one_shot_tma_loads_are_race_free(fam, file):
    obs = _async(*_zoo(fam, file))
    o = obs["race-free: async"]
    assert o.status == "proved", o.message
    assert o.message.startswith("every pair of an asynchronous copy into a stage and another access of its bytes is "
                                "ordered by the mbarrier ring (")
    assert obs["race-free: shared"].status == "proved"


def test_a_read_before_the_wait_is_not_ordered():
    o = _async(*_zoo("tma_tensor_load", "tma_tensor_load__read_before_wait.cu"))["race-free: async"]
    assert o.status == "unknown"
    assert _locs(o) == [("tma_tensor_load__read_before_wait.cu", 80), ("tma_tensor_load__read_before_wait.cu", 87)]
    assert o.message.endswith("(outside every loop) touch the same shared bytes and may be unordered: no mbarrier "
                              "phase orders them")


def test_two_phases_of_one_barrier_in_program_order_are_proved():
    m = load_module(str(DATA / "two_phase.ptx"))
    obs = _async(m, "two_phase", SPEC)
    assert obs["race-free: async"].status == "proved", obs["race-free: async"].message
    assert "(no loop: each site once per thread)" in obs["race-free: async"].bound
    sym = _async(m, "two_phase", None)["race-free: async"]  # no launch: every grid
    assert sym.status == "proved", sym.message


def test_a_refill_without_a_barrier_after_the_reads_is_not_ordered():
    o = _async(load_module(str(DATA / "two_phase__no_barrier_before_refill.ptx")), "two_phase", SPEC)["race-free: async"]
    assert o.status == "unknown"
    assert _locs(o) == [("two_phase__no_barrier_before_refill.cu", 39), ("two_phase__no_barrier_before_refill.cu", 35)]
    assert "may be unordered: no mbarrier phase orders them (the arrive at line 39 is by other threads than the " \
           "access at line 35, with no warp or CTA barrier between them)" in o.message


def test_a_barrier_without_the_proxy_fence_is_a_proxy_violation():
    o = _async(load_module(str(DATA / "two_phase__no_proxy_fence.ptx")), "two_phase", SPEC)["race-free: async"]
    assert o.status == "violated" and o.rule == "race.async-proxy"
    assert _locs(o) == [("two_phase__no_proxy_fence.cu", 35), ("two_phase__no_proxy_fence.cu", 39)]
    assert ("a CTA barrier orders them in the generic proxy only: no fence.proxy.async of its thread between the "
            "generic access at line 35 and the barrier") in o.message


@pytest.mark.parametrize("twin,premise", [("second_wait_parity_0", "parity (initial phase and alternation): violated"),
                                          ("warp0_waits_only", "parity (initial phase and alternation): unknown")])
def test_a_twin_whose_phases_are_not_proved_stops_at_the_premise(twin, premise):
    o = _async(load_module(str(DATA / f"two_phase__{twin}.ptx")), "two_phase", SPEC)["race-free: async"]
    assert o.status == "unknown"
    assert f"the mbarrier phase correspondence is not proved for every trip count (mbarrier conformance: {premise}" \
        in o.message


@pytest.mark.slow
@pytest.mark.parametrize("file,verdict", [("two_phase", "verified"), ("two_phase__no_barrier_before_refill", "violated"),
                                          ("two_phase__no_proxy_fence", "violated"),
                                          ("two_phase__second_wait_parity_0", "violated"),
                                          ("two_phase__warp0_waits_only", "violated")])
def test_the_run_agrees(file, verdict):
    m = load_module(str(DATA / f"{file}.ptx"))
    rep = check_kernel(m, m.kernel("two_phase"), SPEC)
    assert rep.verdict == verdict
    o = {o.title: o for o in rep.obligations}["race-free: async"]
    assert o.status == ("proved" if verdict == "verified" else "violated")


# ---- operands the threads stage for a wgmma (no copy): tests/data/straight_line/staged_wgmma.cu ----
STAGED = LaunchSpec.from_dict(json.loads((DATA / "launch_staged.json").read_text()))


@pytest.mark.parametrize("fam,file", [("wgmma_tile", "wgmma_tile.cu"), ("fp8_mma", "wgmma_fp8.cu"),
                                      ("fp8_mma", "wgmma_fp8_areg.cu"), ("fp8_mma", "wgmma_fp8_f16.cu")])
def test_staged_wgmma_operands_are_race_free(fam, file):
    o = _async(*_zoo(fam, file))["race-free: async"]
    assert o.status == "proved", o.message
    assert o.message.startswith("every wgmma operand read and generic write of its bytes (")
    assert "is ordered by a CTA barrier, with fence.proxy.async after the writes and the asynchronous read retired " \
           "before the next ones; no instruction but the wgmma family touches an in-flight wgmma's registers" in o.message


def test_two_staged_rounds_are_proved_and_each_twin_is_not():
    m = load_module(str(DATA / "staged_wgmma.ptx"))
    o = _async(m, "staged_wgmma", STAGED)["race-free: async"]
    assert o.status == "proved", o.message
    assert o.message.startswith("every wgmma operand read and generic write of its bytes (72 site pairs)")
    o = _async(load_module(str(DATA / "staged_wgmma__wait_after_restage.ptx")), "staged_wgmma", STAGED)["race-free: async"]
    assert o.status == "unknown"
    assert _locs(o) == [("staged_wgmma__wait_after_restage.cu", 101), ("staged_wgmma__wait_after_restage.cu", 97)]
    assert o.message.endswith("may touch the same shared bytes unordered: the wgmma is retired only after the write "
                              "(the wait at line 103)")
    o = _async(load_module(str(DATA / "staged_wgmma__no_fence_round2.ptx")), "staged_wgmma", STAGED)["race-free: async"]
    assert o.status == "violated" and o.rule == "race.async-proxy"
    assert _locs(o) == [("staged_wgmma__no_fence_round2.cu", 102), ("staged_wgmma__no_fence_round2.cu", 106)]


@pytest.mark.parametrize("fam,file,line", [("wgmma_tile", "wgmma_tile__missing_proxy_fence.cu", 133),
                                           ("fp8_mma", "wgmma_fp8__missing_proxy_fence.cu", 11)])
def test_a_staged_operand_without_the_fence_is_a_proxy_violation(fam, file, line):
    o = _async(*_zoo(fam, file))["race-free: async"]
    assert o.status == "violated" and o.rule == "race.async-proxy"
    assert _locs(o)[0] == (file, line)


@pytest.mark.slow
@pytest.mark.parametrize("file,verdict", [("staged_wgmma", "verified"), ("staged_wgmma__wait_after_restage", "violated"),
                                          ("staged_wgmma__no_fence_round2", "violated")])
def test_the_staged_runs_agree(file, verdict):
    m = load_module(str(DATA / f"{file}.ptx"))
    rep = check_kernel(m, m.kernel("staged_wgmma"), STAGED)
    assert rep.verdict == verdict
    o = {o.title: o for o in rep.obligations}["race-free: async"]
    assert o.status == ("proved" if verdict == "verified" else "violated")


# ---- bulk (TMA) stores out of a tile the threads write: the zoo's tma_store, ours in bulk_store.cu ----
STORE = LaunchSpec.from_dict(json.loads((DATA / "launch_store.json").read_text()))


def test_a_bulk_store_loop_is_ordered_in_shared_memory_and_not_proved_and_its_zoo_twins_are_not_ordered():
    """The shared side of tma_store is ordered; the global bytes the bulk store writes are not this
    argument's (a reduction's read-modify-write racing the threads' stores of its destination, or a
    read of it after wait_group.read: tests/test_bulk_reduce.py), so the obligation is not proved."""
    o = _async(*_zoo("tma_store", "tma_store.cu"))["race-free: async"]
    assert o.status == "unknown", o.message
    assert o.message == ("pipeline argument: in shared memory, every bulk store and generic write of its bytes (4 site "
                         "pairs) is ordered by a CTA barrier, with fence.proxy.async after the writes and the "
                         "asynchronous read retired before the next ones; not proved: the global bytes the bulk store "
                         "at tma_store.cu:57:7 (ptx 79) writes (a store, or a reduction's read-modify-write) are not "
                         "ordered by this argument (the run's)")
    o = _async(*_zoo("tma_store", "tma_store__missing_proxy_fence.cu"))["race-free: async"]
    assert o.status == "violated" and o.rule == "race.async-proxy"
    assert _locs(o) == [("tma_store__missing_proxy_fence.cu", 57), ("tma_store__missing_proxy_fence.cu", 61)]
    o = _async(*_zoo("tma_store", "tma_store__missing_wait.cu"))["race-free: async"]
    assert o.status == "unknown"
    assert o.message.endswith("the bulk store is not retired by a wait in its iteration, and no CTA barrier orders "
                              "the write before it")


@pytest.mark.parametrize("twin", ["no_barrier_after_wait", "divergent_trip", "divergent_entry"])
def test_a_bulk_store_twin_is_not_proved(twin):
    import re

    o = _async(load_module(str(DATA / f"bulk_store__{twin}.ptx")), "bulk_store", STORE)["race-free: async"]
    assert o.status == "unknown"
    assert [line for _, line in _locs(o)] == ([53, 58] if twin == "divergent_entry" else [52, 57])
    m = re.search(r"no CTA barrier orders them \(bulk store in iteration (\d+), write in iteration (\d+); ", o.message)
    assert m, o.message
    if twin == "no_barrier_after_wait":  # the next iterations' stores against the read not yet retired...
        assert int(m.group(2)) > int(m.group(1))  # ...by a barrier: only a later iteration's write is unordered


@pytest.mark.slow
@pytest.mark.parametrize("file,verdict,status", [
    ("bulk_store", "verified", "bounded"), ("bulk_store__no_barrier_after_wait", "violated", "violated"),
    # its divergent loop reads in[] past its end: the read that landed in out (an async race with the
    # bulk store) is the bounds violation it is (outside in, the buffer its address is derived from)
    ("bulk_store__divergent_trip", "violated", "unknown")])
def test_the_bulk_store_runs_agree(file, verdict, status):
    m = load_module(str(DATA / f"{file}.ptx"))
    rep = check_kernel(m, m.kernel("bulk_store"), STORE)
    assert rep.verdict == verdict
    by = {o.title: o for o in rep.obligations}
    assert by["race-free: async"].status == status
    if status == "unknown":
        assert by["memory safety"].status == "violated" and by["memory safety"].rule == "bounds"


def test_the_correct_bulk_store_is_ordered_in_shared_memory_only():
    o = _async(load_module(str(DATA / "bulk_store.ptx")), "bulk_store", STORE)["race-free: async"]
    assert o.status == "unknown"
    assert o.message.startswith("pipeline argument: in shared memory, every bulk store and generic write of its bytes")
    assert o.message.endswith("are not ordered by this argument (the run's)")


def test_a_kernel_writing_a_buffer_its_copies_read_is_not_proved():
    """The argument orders shared memory; the copies' global reads meet the kernel's global writes
    only where a pointer names both (distinct pointer parameters are assumed not to alias). Here the
    result goes into the input buffer: not proved (the run, which sees the write after the refill's
    wait, finds no race)."""
    o = _async(load_module(str(DATA / "two_phase__store_into_source.ptx")), "two_phase", SPEC)["race-free: async"]
    assert o.status == "unknown"
    assert o.message.startswith("pipeline argument: in shared memory, every pair of an asynchronous copy")
    assert ("not proved: the write at two_phase__store_into_source.cu:41:3 (ptx 136) may touch the global bytes the "
            "copy at two_phase__store_into_source.cu:33:5 (ptx 66) reads (in)") in o.message
