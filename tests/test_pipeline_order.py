"""Kernels written to make the pipeline race argument (kverify/verifier/races/pipeline.py) claim
a proof it has not got, each beside a correct twin (tests/data/pipeline_order): every bug twin
below got ``race-free: async`` ``proved`` for every trip count while its run found the race.

* expect_order__arrive_first: the producer arrives (init count 1) before it posts expect-tx, so
  phase 0 completes at once and the copy's bytes count in phase 1; the tx premise summed the
  phase's bytes without asking whether the expect-tx comes before the arrival that may complete
  the phase (tx.py ``_unheld``).
* two_calls__unwaited_barrier: one copy instruction, in a non-inlined function called for two
  barriers; the argument took every copy of that instruction to signal the last call's barrier
  (the copy-to-barrier map is now per calling context).
* s2s_copy__src_overwritten: a shared-to-shared bulk copy whose source the threads overwrite
  while it may still be read; only the destination was recorded. Such copies are not modelled
  by the argument: ``unknown``, for the correct twin too (its run bounds it).
* wgmma_wait__deeper_than_pending: ``wgmma.wait_group 3`` with two groups pending retires neither,
  but the register dataflow kept only the newest (a negative slice): an accumulator read in the
  loop's later iterations was taken as retired, and with a launch of one iteration (the read not
  run) the verdict was ``verified`` (unit case: tests/test_wgmma_regs.py ``deeper_than_pending``).
"""
import json
from pathlib import Path

import pytest

from kverify.launch import LaunchSpec
from kverify.semantics.ir import load_module
from kverify.verifier.check import check_kernel
from kverify.verifier.races.pipeline import check_pipeline_races

DATA = Path(__file__).resolve().parent / "data" / "pipeline_order"


def _spec(kernel):
    return LaunchSpec.from_dict(json.loads((DATA / f"launch_{kernel}.json").read_text()))


def _static(name, kernel):
    m = load_module(str(DATA / f"{name}.ptx"))
    return {o.title: o for o in check_pipeline_races(m, kernel, _spec(kernel))}


def _run(name, kernel):
    m = load_module(str(DATA / f"{name}.ptx"))
    return {o.title: o for o in check_kernel(m, m.kernel(kernel), _spec(kernel)).obligations}


@pytest.mark.parametrize("kernel", ["expect_order", "two_calls", "wgmma_wait"])
def test_the_correct_kernels_are_proved(kernel):
    got = _static(kernel, kernel)
    assert got["race-free: async"].status == "proved", got["race-free: async"].message
    run = _run(kernel, kernel)
    assert run["race-free: async"].status == "proved"
    if kernel != "wgmma_wait":  # (its shared writes are the threads' staging: the run's)
        assert got["race-free: shared"].status == "proved"
        assert run["mbarrier conformance: tx bytes (per phase)"].status == "proved"


def test_an_expect_tx_after_the_arrival_is_not_counted_in_its_phase():
    got = _static("expect_order__arrive_first", "expect_order")
    assert set(got) == {"race-free: async"}
    assert got["race-free: async"].status == "unknown"
    assert got["race-free: async"].message == (
        "pipeline argument: the mbarrier phase correspondence is not proved for every trip count (mbarrier "
        "conformance: tx bytes (per phase): unknown: expect_order__arrive_first.cu:35:5 (ptx 66): the expect-tx is "
        "not followed, in its threads, by their arrival on the barrier in the same phase: the phase may complete "
        "before it (pending arrivals and tx-count both zero), and its bytes would count in the next phase "
        "(§9.7.13.15, phase completion))")
    run = _run("expect_order__arrive_first", "expect_order")
    tx = run["mbarrier conformance: tx bytes (per phase)"]
    assert tx.status == "unknown" and [l.line for l in tx.locations] == [35]
    o = run["race-free: async"]
    assert o.status == "violated" and o.rule == "race.async-pending"
    assert [l.line for l in o.locations] == [37, 35]
    assert "checker pipeline proved" not in o.message


def test_one_copy_instruction_in_two_calling_contexts_signals_two_barriers():
    got = _static("two_calls__unwaited_barrier", "two_calls")
    o = got["race-free: async"]
    assert set(got) == {"race-free: async"} and o.status == "unknown"
    assert o.message == (
        "pipeline argument: the asynchronous copy at two_calls__unwaited_barrier.cu:16:22 (ptx 41) (outside every "
        "loop) and the generic read at two_calls__unwaited_barrier.cu:51:3 (ptx 191) (outside every loop) touch the "
        "same shared bytes and may be unordered: no mbarrier phase orders them")
    run = _run("two_calls__unwaited_barrier", "two_calls")["race-free: async"]
    assert run.status == "violated" and run.rule == "race.async-pending"
    assert [l.line for l in run.locations] == [51, 16]
    assert "checker pipeline proved" not in run.message


@pytest.mark.parametrize("name", ["s2s_copy", "s2s_copy__src_overwritten"])
def test_a_shared_to_shared_copy_is_not_proved(name):
    got = _static(name, "s2s_copy")
    assert set(got) == {"race-free: async"} and got["race-free: async"].status == "unknown"
    assert got["race-free: async"].message == (
        "pipeline argument: line 36: cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes: a bulk "
        "copy from shared memory into shared memory (the argument orders what copies write, not what they read of "
        "shared memory)")
    run = _run(name, "s2s_copy")
    if name == "s2s_copy":
        assert run["race-free: async"].status == "bounded" and run["race-free: shared"].status == "bounded"
    else:
        o = run["race-free: async"]
        assert o.status == "violated" and o.rule == "race.async-pending"
        assert [l.line for l in o.locations] == [38, 36]
        assert run["race-free: shared"].status == "violated" and run["race-free: shared"].rule == "race.shared"


def test_a_wait_group_deeper_than_the_pending_groups_retires_none():
    got = _static("wgmma_wait__deeper_than_pending", "wgmma_wait")
    o = got["race-free: async"]
    assert set(got) == {"race-free: async"} and o.status == "unknown"
    assert o.message == (
        "pipeline argument: the st.global.f32 at wgmma_wait__deeper_than_pending.cu:114:7 (ptx 307) may access "
        "%f122 of the wgmma at wgmma_wait__deeper_than_pending.cu:107:5 (ptx 250) before a wgmma.wait_group retires "
        "it (§9.7.15.7: undefined while the wgmma is in flight); 1 more such access(es)")
    run = _run("wgmma_wait__deeper_than_pending", "wgmma_wait")["race-free: async"]  # two iterations: the read runs
    assert run.status == "violated" and run.rule == "race.async-pending"
    assert [l.line for l in run.locations][:1] == [114]
    one = LaunchSpec.from_dict({**json.loads((DATA / "launch_wgmma_wait.json").read_text()), "args": {"iters": 1}})
    m = load_module(str(DATA / "wgmma_wait__deeper_than_pending.ptx"))
    rep = check_kernel(m, m.kernel("wgmma_wait"), one)  # one iteration: the read is never run
    assert {o.title: o for o in rep.obligations}["race-free: async"].status == "bounded"


def test_one_symbolic_run_when_the_argument_stops_early(monkeypatch):
    """The pipeline argument's run stops being useful to it at the first thing it does not model
    (here a named barrier whose id is in a register, as in CUTLASS's stream-K epilogue); the run
    goes on so that the static mbarrier obligations come from it, not from a second run."""
    import kverify.verifier.mbarrier as mbarrier

    def second_run(*a, **k):
        raise AssertionError("a second symbolic run for the static mbarrier obligations")

    monkeypatch.setattr(mbarrier, "check_mbarrier", second_run)
    got = _run("expect_order_named_bar", "expect_order_named_bar")
    assert got["race-free: async"].status == "bounded"
    for what in ("parity (initial phase and alternation)", "tx bytes (per phase)", "arrivals (per phase)"):
        assert got[f"mbarrier conformance: {what}"].status == "proved"
    m = load_module(str(DATA / "expect_order_named_bar.ptx"))
    keep: list = []
    o = check_pipeline_races(m, "expect_order_named_bar", _spec("expect_order_named_bar"), keep=keep)[0]
    assert o.status == "unknown" and o.message == (
        "pipeline argument: the symbolic run does not model everything: bar.sync at expect_order_named_bar.cu:38: "
        "barrier id in a register is not modelled")
    assert [p.status for p in keep[0]] == ["proved", "proved", "proved"]


def test_a_proof_derived_from_a_refuted_one_is_withdrawn(monkeypatch):
    """The pipeline argument proves "race-free: shared" from its proof of "race-free: async" (every
    shared write is a copy it ordered). Should a run refute the async proof (a checker bug, as the
    four above were), the shared proof resting on it is withdrawn, not left standing."""
    from kverify.verifier.races import pipeline
    from kverify.verifier.report import Obligation

    def lying(module, kernel, launch, timeout_s=10.0, keep=None):
        return [Obligation(pipeline.TITLE_ASYNC, "races", "proved", "(a wrong proof)", "every trip count", [], None,
                           0.0),
                Obligation(pipeline.TITLE_SHARED, "races", "proved", "every shared write is a copy", "every trip count",
                           [], None, 0.0, rests_on=pipeline.TITLE_ASYNC)]

    monkeypatch.setattr(pipeline, "check_pipeline_races", lying)
    got = _run("two_calls__unwaited_barrier", "two_calls")
    assert got["race-free: async"].status == "violated"
    assert "checker pipeline proved this obligation" in got["race-free: async"].message
    o = got["race-free: shared"]
    assert o.status == "unknown"
    assert o.message == ("every shared write is a copy; not claimed: this proof rests on the same checker's proof of "
                         "'race-free: async', which is violated")
