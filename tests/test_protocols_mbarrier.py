"""mbarrier step function: unit tests per rule, and differential tests vs the log model."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from kverify.semantics.memory_model.protocols import mbarrier as mb
from kverify.semantics.memory_model.protocols.common import Outcome
from kverify.semantics.memory_model.protocols.reference import RefMbarrier

MAX = 2**20 - 1


def run(cmds, state=None):
    """Apply commands, asserting each succeeds; returns the last outcome."""
    s = mb.MbarrierState() if state is None else state
    out = None
    for c in cmds:
        out = mb.step(s, c)
        assert out.violation is None, (c, out.violation)
        s = out.state
    return out


def fresh(count=1):
    return mb.MbarrierState.initialized_with(count)


# ----------------------------------------------------------------------------- lifecycle


def test_init_sets_phase_zero_and_counts():
    out = mb.step(mb.MbarrierState(), mb.Init(3))
    assert out.ok
    assert (out.state.phase, out.state.pending, out.state.expected, out.state.tx) == (0, 3, 3, 0)
    assert out.state.initialized


def test_arrive_on_uninitialized_barrier_is_reported():
    out = mb.step(mb.MbarrierState(), mb.Arrive())
    assert out.rule == "mbarrier.uninitialized"


@pytest.mark.parametrize("cmd", [mb.Inval(), mb.ExpectTx(16), mb.CompleteTx(16),
                                 mb.TestWait(parity=0), mb.CpAsyncArriveIssue()])
def test_every_non_init_op_on_uninitialized_barrier_is_reported(cmd):
    assert mb.step(mb.MbarrierState(), cmd).rule == "mbarrier.uninitialized"


def test_init_on_valid_barrier_is_reinit():
    assert mb.step(fresh(2), mb.Init(2)).rule == "mbarrier.reinit"


def test_init_after_inval_is_legal_and_restarts_phase():
    s = run([mb.Arrive(), mb.TestWait(parity=0), mb.Inval(), mb.Init(4)], fresh(1)).state
    assert (s.phase, s.pending, s.expected, s.observed_prev) == (0, 4, 4, True)


def test_use_after_inval_is_uninitialized():
    s = run([mb.Inval()], fresh(2)).state
    assert mb.step(s, mb.TestWait(parity=1)).rule == "mbarrier.uninitialized"


@pytest.mark.parametrize("count", [0, -1, MAX + 1])
def test_init_count_out_of_range_is_reported(count):
    out = mb.step(mb.MbarrierState(), mb.Init(count))
    assert out.rule == "mbarrier.init-count"
    assert out.violation.detail("count") == count


def test_init_count_upper_bound_is_legal():
    assert mb.step(mb.MbarrierState(), mb.Init(MAX)).ok


def test_layout_v1_limits_counts_to_511():
    s = mb.MbarrierState(limits=mb.LAYOUT_V1)
    assert mb.step(s, mb.Init(512)).rule == "mbarrier.init-count"
    assert mb.step(s, mb.Init(511)).ok


# ----------------------------------------------------------------------------- phases


def test_last_arrival_completes_phase_and_reloads_pending():
    s = run([mb.Arrive()], fresh(2)).state
    out = mb.step(s, mb.Arrive())
    assert out.effect("phase-completed") == ("phase-completed", 0)
    assert (out.state.phase, out.state.pending, out.state.tx) == (1, 2, 0)


def test_arrive_returns_pre_arrive_phase_as_state_token():
    out = mb.step(fresh(2), mb.Arrive())
    assert out.value == 0
    out = mb.step(fresh(1), mb.Arrive())
    assert out.value == 0 and out.state.phase == 1


def test_remote_arrive_returns_no_state_token():
    out = mb.step(fresh(2), mb.Arrive(remote=True))
    assert out.ok and out.value is None


def test_arrive_with_count_counts_that_many_arrivals():
    out = mb.step(fresh(4), mb.Arrive(count=3))
    assert out.state.pending == 1
    assert mb.step(fresh(4), mb.Arrive(count=4)).state.phase == 1


def test_arrive_count_zero_is_reported():
    assert mb.step(fresh(4), mb.Arrive(count=0)).rule == "mbarrier.arrive-count"


def test_arrive_expect_tx_keeps_phase_open_until_bytes_complete():
    s = run([mb.Arrive(expect_tx=128)], fresh(1)).state
    assert (s.phase, s.pending, s.tx) == (0, 0, 128)
    out = mb.step(s, mb.CompleteTx(64))
    assert out.state.phase == 0 and out.state.tx == 64
    out = mb.step(out.state, mb.CompleteTx(64))
    assert out.has("phase-completed") and out.state.phase == 1 and out.state.pending == 1


def test_complete_tx_before_expect_tx_is_legal_while_pending():
    # TMA bytes landing before the producer's arrive.expect_tx: tx goes negative.
    s = run([mb.CompleteTx(256)], fresh(1)).state
    assert (s.phase, s.pending, s.tx) == (0, 1, -256)
    out = mb.step(s, mb.Arrive(expect_tx=256))
    assert out.ok and out.has("phase-completed") and out.state.phase == 1


def test_premature_completion_when_expect_tx_is_posted_late_is_legal_but_completes():
    # pending reaches 0 with tx == 0 before the expect: the phase completes early.
    out = mb.step(fresh(1), mb.Arrive())
    assert out.state.phase == 1


def test_expect_tx_can_complete_a_phase_held_open_by_negative_tx():
    s = run([mb.CompleteTx(32), mb.Arrive()], fresh(1)).state
    assert (s.phase, s.pending, s.tx) == (0, 0, -32)
    out = mb.step(s, mb.ExpectTx(32))
    assert out.has("phase-completed") and out.state.phase == 1


def test_arrive_after_pending_zero_with_open_tx_is_overflow():
    s = run([mb.Arrive(expect_tx=64)], fresh(1)).state
    out = mb.step(s, mb.Arrive())
    assert out.rule == "mbarrier.arrival-overflow"
    assert out.violation.detail("pending") == 0


def test_arrive_count_larger_than_pending_is_overflow():
    assert mb.step(fresh(2), mb.Arrive(count=3)).rule == "mbarrier.arrival-overflow"


def test_extra_arrival_after_observed_completion_counts_toward_next_phase():
    s = run([mb.Arrive(), mb.Arrive(), mb.TestWait(parity=0), mb.Arrive()], fresh(2)).state
    assert (s.phase, s.pending) == (1, 1)


def test_tx_range_overflow_is_reported():
    s = run([mb.ExpectTx(MAX)], fresh(1)).state
    assert mb.step(s, mb.ExpectTx(1)).rule == "mbarrier.tx-range"
    assert mb.step(s, mb.Arrive(expect_tx=1)).rule == "mbarrier.tx-range"


def test_tx_range_underflow_is_reported():
    s = run([mb.CompleteTx(MAX)], fresh(1)).state
    assert mb.step(s, mb.CompleteTx(1)).rule == "mbarrier.tx-range"


@pytest.mark.parametrize("cmd", [mb.ExpectTx(-1), mb.CompleteTx(-1), mb.ExpectTx(MAX + 1),
                                 mb.Arrive(expect_tx=-5)])
def test_tx_operand_out_of_range_is_reported(cmd):
    assert mb.step(fresh(1), cmd).rule == "mbarrier.tx-range"


def test_no_complete_arrive_that_would_complete_is_reported():
    assert mb.step(fresh(1), mb.Arrive(no_complete=True)).rule == "mbarrier.no-complete"


def test_no_complete_arrive_that_does_not_complete_is_legal():
    assert mb.step(fresh(2), mb.Arrive(no_complete=True)).state.pending == 1
    # tx still outstanding: pending reaches 0 but the phase stays open
    out = mb.step(fresh(1), mb.Arrive(no_complete=True, expect_tx=16))
    assert out.ok and out.state.phase == 0


def test_arrive_drop_reduces_expected_for_later_phases():
    s = run([mb.Arrive(drop=True)], fresh(3)).state
    assert (s.pending, s.expected) == (2, 2)
    s = run([mb.Arrive(), mb.Arrive()], s).state
    assert (s.phase, s.pending) == (1, 2)


def test_arrive_drop_to_zero_expected_is_overflow():
    out = mb.step(fresh(1), mb.Arrive(drop=True))
    assert out.rule == "mbarrier.arrival-overflow"
    assert out.violation.detail("kind") == "expected"


def test_cp_async_arrive_without_noinc_increments_pending():
    s = run([mb.CpAsyncArriveIssue()], fresh(1)).state
    assert s.pending == 2
    s = run([mb.Arrive(), mb.Arrive()], s).state  # thread's own arrive + async arrive
    assert s.phase == 1 and s.pending == 1
    assert mb.step(fresh(1), mb.CpAsyncArriveIssue(noinc=True)).state == fresh(1)


# ----------------------------------------------------------------------------- waits


def test_fresh_barrier_satisfies_parity_one_wait():
    out = mb.step(fresh(1), mb.TestWait(parity=1))
    assert out.value is True and out.effect("wait-result") == ("wait-result", True)
    assert mb.step(fresh(1), mb.TestWait(parity=0)).value is False


def test_producer_start_state_waiter_phase_minus_one_is_not_aliasing():
    out = mb.step(fresh(1), mb.TestWait(parity=1, waiter_phase=-1))
    assert out.ok and out.value is True


def test_parity_wait_true_after_completion():
    s = run([mb.Arrive()], fresh(1)).state
    assert mb.step(s, mb.TestWait(parity=0)).value is True
    assert mb.step(s, mb.TestWait(parity=1)).value is False


def test_state_form_wait_uses_token_from_arrive():
    out = mb.step(fresh(2), mb.Arrive())
    token = out.value
    assert mb.step(out.state, mb.TestWait(state_phase=token)).value is False
    done = mb.step(out.state, mb.Arrive()).state
    assert mb.step(done, mb.TestWait(state_phase=token)).value is True


def test_parity_aliasing_two_phases_behind_is_reported():
    s = fresh(1)
    for _ in range(2):
        s = run([mb.Arrive(), mb.TestWait(parity=s.phase % 2)], s).state
    assert s.phase == 2
    out = mb.step(s, mb.TestWait(parity=0, waiter_phase=0))
    assert out.rule == "mbarrier.parity"
    assert out.violation.detail("kind") == "aliasing"
    assert out.state == s


def test_state_token_two_phases_old_is_aliasing():
    s = run([mb.Arrive(), mb.TestWait(parity=0), mb.Arrive(), mb.TestWait(parity=1)], fresh(1)).state
    assert mb.step(s, mb.TestWait(state_phase=0)).rule == "mbarrier.parity"
    assert mb.step(s, mb.TestWait(state_phase=3)).rule == "mbarrier.parity"


def test_arrive_before_completed_phase_observed_is_reported():
    s = run([mb.Arrive()], fresh(1)).state
    out = mb.step(s, mb.Arrive())
    assert out.rule == "mbarrier.parity"
    assert "not observed" in out.violation.message
    assert out.violation.detail("kind") == "unobserved-phase"


def test_failed_or_timed_out_wait_does_not_observe():
    s = run([mb.Arrive(), mb.TestWait(parity=1), mb.TestWait(parity=0, timed_out=True)],
            fresh(1)).state
    assert not s.observed_prev
    assert mb.step(s, mb.Arrive()).rule == "mbarrier.parity"


def test_remote_wait_is_reported():
    assert mb.step(fresh(1), mb.TestWait(parity=0, remote=True)).rule == "mbarrier.remote-wait"


def test_violation_leaves_state_unchanged():
    s = run([mb.Arrive(expect_tx=64)], fresh(1)).state
    out = mb.step(s, mb.Arrive())
    assert out.violation is not None
    assert out.state is s and out.effects == ()


def test_violation_cites_isa_section_and_anchor():
    v = mb.step(mb.MbarrierState(), mb.Arrive()).violation
    assert v.section.startswith("§9.7.13.15")
    assert v.anchor.startswith("parallel-synchronization-and-communication-instructions-mbarrier")


def test_malformed_commands_are_rejected_at_construction():
    with pytest.raises(ValueError):
        mb.TestWait()
    with pytest.raises(ValueError):
        mb.TestWait(parity=2)
    with pytest.raises(ValueError):
        mb.TestWait(parity=1, waiter_phase=2)
    with pytest.raises(TypeError):
        mb.Arrive(count=1.5)


def test_states_are_hashable():
    assert len({fresh(1), fresh(1), fresh(2)}) == 2


# ----------------------------------------------------------------------------- differential

_small = st.integers(min_value=-2, max_value=6)
_bytes = st.sampled_from([0, 16, 32, 48, -16, MAX, MAX + 1])

commands = st.one_of(
    st.builds(mb.Init, count=st.integers(min_value=-1, max_value=4)),
    st.just(mb.Inval()),
    st.builds(mb.Arrive, count=st.integers(min_value=0, max_value=4),
              expect_tx=st.sampled_from([0, 0, 16, 32, -1, MAX]), no_complete=st.booleans(),
              drop=st.booleans(), remote=st.booleans()),
    st.builds(mb.ExpectTx, bytes=_bytes),
    st.builds(mb.CompleteTx, bytes=_bytes),
    st.builds(mb.CpAsyncArriveIssue, noinc=st.booleans()),
    st.builds(mb.TestWait, parity=st.integers(0, 1), remote=st.booleans(),
              timed_out=st.booleans()),
    st.integers(-1, 8).map(lambda p: mb.TestWait(state_phase=p)),
    st.integers(-1, 8).map(lambda p: mb.TestWait(parity=p % 2, waiter_phase=p)),
)

# A palette of mostly-legal progress steps, so that random programs complete phases,
# observe them and run into every rule; mixed with fully random commands.
_palette = (
    [mb.Arrive()] * 6 + [mb.Arrive(expect_tx=16)] * 2 + [mb.CompleteTx(16)] * 3
    + [mb.ExpectTx(16), mb.Arrive(count=2), mb.Arrive(drop=True), mb.Arrive(no_complete=True),
       mb.Arrive(remote=True), mb.CpAsyncArriveIssue(), mb.CpAsyncArriveIssue(noinc=True)]
    + [mb.TestWait(parity=0), mb.TestWait(parity=1)] * 4
    + [mb.TestWait(parity=p % 2, waiter_phase=p) for p in range(-1, 5)]
    + [mb.TestWait(state_phase=p) for p in range(0, 5)]
    + [mb.TestWait(parity=0, timed_out=True), mb.TestWait(parity=1, remote=True),
       mb.Inval(), mb.Init(1), mb.Init(2), mb.Init(0), mb.Arrive(count=0),
       mb.ExpectTx(MAX), mb.CompleteTx(MAX), mb.Arrive(expect_tx=MAX)]
)
_progress = st.sampled_from(_palette)
mixed = st.one_of(_progress, commands)
programs = st.tuples(st.sampled_from([1, 2, 3]), st.lists(st.one_of(_progress, _progress, _progress, mixed), min_size=8, max_size=40)).map(
    lambda t: [mb.Init(t[0])] + t[1])


def _draw_program_step(data, s):
    """Mostly progress (arrivals, tx, and a wait that observes the last completed phase),
    sometimes anything at all."""
    k = data.draw(st.integers(0, 9))
    if not s.initialized and k <= 4:
        return mb.Init(data.draw(st.sampled_from([1, 2, 3])))
    if k <= 1:
        return mb.TestWait(parity=(s.phase - 1) % 2)  # observes the previous phase
    if k <= 4:
        return data.draw(st.sampled_from([mb.Arrive(), mb.Arrive(expect_tx=16), mb.CompleteTx(16)]))
    if k <= 7:
        return data.draw(_progress)
    return data.draw(commands)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from([1, 2, 3]), st.data())
def test_step_agrees_with_event_log_reference(count, data):
    s = mb.MbarrierState()
    ref = RefMbarrier()
    cmds = [mb.Init(count)]
    n = data.draw(st.integers(5, 40))
    for i in range(n + 1):
        cmd = cmds[0] if i == 0 else _draw_program_step(data, s)
        out = mb.step(s, cmd)
        rule, value = ref.apply(cmd)
        assert out.rule == rule, (cmd, s)
        if rule is None:
            assert out.value == value, (cmd, s)
        else:
            assert out.state is s and out.effects == ()
        s = out.state
        view = ref.replay()
        assert s.initialized == view["initialized"]
        if s.initialized:
            assert (s.phase, s.pending, s.expected, s.tx, s.observed_prev) == (
                view["phase"], view["pending"], view["expected"], view["tx"], view["observed"])
            assert not (s.pending == 0 and s.tx == 0)  # never rests on a completed phase
            assert 1 <= s.expected <= MAX and 0 <= s.pending <= MAX and abs(s.tx) <= MAX


@settings(max_examples=150, deadline=None)
@given(st.lists(mixed, max_size=25))
def test_step_is_total_and_deterministic(cmds):
    s = mb.MbarrierState()
    for cmd in cmds:
        a = mb.step(s, cmd)
        b = mb.step(s, cmd)
        assert isinstance(a, Outcome) and a == b
        hash(a.state)
        s = a.state


# ----------------------------------------------------------------------------- a run of the protocol


def test_run_on_reports_an_arrival_past_an_unobserved_phase_as_overflow_and_counts_it():
    s = run([mb.Arrive()], fresh(1)).state  # phase 0 completed, nobody observed it
    out = mb.step(s, mb.Arrive())
    assert out.rule == "mbarrier.parity" and out.violation.detail("kind") == "unobserved-phase"
    finding, cont = mb.run_on(s, mb.Arrive(), out.violation)
    assert finding.rule == "mbarrier.arrival-overflow"
    assert cont.ok and cont.state.phase == 2  # the arrival counted toward phase 1


def test_run_on_stops_at_every_other_violation():
    s = fresh(1)
    out = mb.step(s, mb.Init(1))
    finding, cont = mb.run_on(s, mb.Init(1), out.violation)
    assert finding.rule == "mbarrier.reinit" and cont is None


def test_parity_naming_a_phase_the_waiter_already_observed_is_parity():
    s = run([mb.Arrive()], fresh(1)).state  # phase 1 in progress
    assert mb.waited_phase(s, 0, None) == (0, None)
    assert mb.waited_phase(s, 1, 1) == (1, None)
    named, v = mb.waited_phase(s, 0, 1)  # observed phase 0; parity 0 names it again
    assert named is None and v.rule == "mbarrier.parity" and v.detail("phase") == 0


def test_tx_count_stuck_with_nothing_in_flight_is_tx_mismatch():
    s = run([mb.Arrive(expect_tx=64)], fresh(1)).state
    assert mb.quiescent(s, signalling_in_flight=True) is None
    assert mb.quiescent(s, signalling_in_flight=False).rule == "mbarrier.tx-mismatch"
    assert mb.quiescent(fresh(1), signalling_in_flight=False) is None
    assert mb.completed_in_flight(3, 0, 0) is None
    assert mb.completed_in_flight(3, 1, 128).rule == "mbarrier.tx-mismatch"


def test_init_visibility_is_decided_from_the_observed_ordering():
    assert mb.init_visibility(True, "thread 0") is None
    assert mb.init_visibility(False, "thread 0").rule == "mbarrier.init-visibility"
    assert mb.remote_init_visibility(False, "thread 0").rule == "mbarrier.init-visibility"
