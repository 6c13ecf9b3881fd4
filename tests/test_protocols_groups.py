"""cp.async groups, bulk async groups and wgmma groups: unit and differential tests."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from kverify.semantics.memory_model.protocols import async_groups as ag
from kverify.semantics.memory_model.protocols.common import Outcome
from kverify.semantics.memory_model.protocols.reference import RefGroups


def run(step, state, cmds):
    out = None
    for c in cmds:
        out = step(state, c)
        assert out.violation is None, (c, out.violation)
        state = out.state
    return out


# ----------------------------------------------------------------------------- cp.async


def test_wait_group_one_waits_for_all_but_newest_group():
    out = run(ag.cp_async_step, ag.CpAsyncState(),
              [ag.CpAsync("a"), ag.CommitGroup(), ag.CpAsync("b"), ag.CommitGroup(),
               ag.WaitGroup(1)])
    assert out.effect("blocked") == ("blocked", ("a",))
    out = run(ag.cp_async_step, out.state, [ag.Complete("a"), ag.WaitGroup(1)])
    assert out.effect("wait-satisfied") == ("wait-satisfied", ("a",))
    assert out.state.queue.groups == (("b",),)


def test_blocked_wait_is_not_a_violation_and_changes_nothing():
    s = run(ag.cp_async_step, ag.CpAsyncState(), [ag.CpAsync("a"), ag.CommitGroup()]).state
    out = ag.cp_async_step(s, ag.WaitGroup(0))
    assert out.violation is None and out.state is s and out.has("blocked")


def test_ops_may_complete_out_of_group_order_but_waits_observe_in_order():
    s = run(ag.cp_async_step, ag.CpAsyncState(),
            [ag.CpAsync("a"), ag.CommitGroup(), ag.CpAsync("b"), ag.CommitGroup(),
             ag.Complete("b")]).state
    assert ag.cp_async_step(s, ag.WaitGroup(0)).effect("blocked") == ("blocked", ("a",))
    out = run(ag.cp_async_step, s, [ag.Complete("a"), ag.WaitGroup(0)])
    assert out.effect("wait-satisfied") == ("wait-satisfied", ("a", "b"))


def test_uncommitted_ops_are_not_covered_by_wait_group():
    out = run(ag.cp_async_step, ag.CpAsyncState(), [ag.CpAsync("a"), ag.WaitGroup(0)])
    assert out.effect("wait-satisfied") == ("wait-satisfied", ())
    assert out.state.queue.uncommitted == ("a",)


def test_wait_all_commits_then_waits_for_everything():
    s = run(ag.cp_async_step, ag.CpAsyncState(), [ag.CpAsync("a")]).state
    assert ag.cp_async_step(s, ag.WaitAll()).has("blocked")
    out = run(ag.cp_async_step, s, [ag.Complete("a"), ag.WaitAll()])
    assert out.effect("wait-satisfied") == ("wait-satisfied", ("a",))
    assert out.state == ag.CpAsyncState(ag.GroupQueue(groups=()))


def test_empty_commit_creates_empty_group():
    out = run(ag.cp_async_step, ag.CpAsyncState(), [ag.CommitGroup()])
    assert out.state.queue.groups == ((),)


def test_negative_wait_group_is_wait_range():
    out = ag.cp_async_step(ag.CpAsyncState(), ag.WaitGroup(-1))
    assert out.rule == "async-group.wait-range"


def test_two_cp_async_writing_same_bytes_in_one_group_is_overlap():
    s = run(ag.cp_async_step, ag.CpAsyncState(), [ag.CpAsync("a", dst=(0, 16))]).state
    out = ag.cp_async_step(s, ag.CpAsync("b", dst=(8, 16)))
    assert out.rule == "async-group.overlap" and out.state is s
    assert ag.cp_async_step(s, ag.CpAsync("b", dst=(16, 16))).ok
    committed = run(ag.cp_async_step, s, [ag.CommitGroup()]).state
    assert ag.cp_async_step(committed, ag.CpAsync("b", dst=(0, 16))).ok  # other group


def test_completing_an_op_not_in_flight_is_not_enabled():
    out = ag.cp_async_step(ag.CpAsyncState(), ag.Complete("x"))
    assert out.has("not-enabled") and out.violation is None


# ----------------------------------------------------------------------------- bulk groups


def test_bulk_wait_read_needs_only_source_reads():
    s = run(ag.bulk_group_step, ag.BulkGroupState(),
            [ag.BulkCopy("st0"), ag.CommitGroup(), ag.CompleteRead("st0")]).state
    out = ag.bulk_group_step(s, ag.WaitGroup(0, read=True))
    assert out.effect("read-wait-satisfied") == ("read-wait-satisfied", ("st0",))
    assert ag.reads_guaranteed(out.state) == {"st0"}
    # full completion is not implied
    assert ag.bulk_group_step(out.state, ag.WaitGroup(0)).effect("blocked") == ("blocked", ("st0",))
    done = run(ag.bulk_group_step, out.state, [ag.Complete("st0"), ag.WaitGroup(0)])
    assert done.state == ag.BulkGroupState(ag.GroupQueue(groups=()))


def test_bulk_wait_read_blocks_until_read_completes():
    s = run(ag.bulk_group_step, ag.BulkGroupState(), [ag.BulkCopy("a"), ag.CommitGroup()]).state
    assert ag.bulk_group_step(s, ag.WaitGroup(0, read=True)).has("blocked")


def test_full_completion_implies_read_completion():
    s = run(ag.bulk_group_step, ag.BulkGroupState(),
            [ag.BulkCopy("a"), ag.CommitGroup(), ag.Complete("a")]).state
    assert ag.bulk_group_step(s, ag.WaitGroup(0, read=True)).has("read-wait-satisfied")
    assert ag.bulk_group_step(s, ag.CompleteRead("a")).has("not-enabled")


def test_read_form_is_rejected_for_cp_async():
    with pytest.raises(ValueError):
        ag.cp_async_step(ag.CpAsyncState(), ag.WaitGroup(0, read=True))


# ----------------------------------------------------------------------------- wgmma

ACC = frozenset({"acc0"})


def test_mma_async_without_fence_is_missing_fence():
    out = ag.wgmma_step(ag.WgmmaState(), ag.MmaAsync("m0", ACC))
    assert out.rule == "wgmma.missing-fence"


def test_back_to_back_mma_on_same_accumulator_needs_one_fence():
    out = run(ag.wgmma_step, ag.WgmmaState(),
              [ag.WgmmaFence(), ag.MmaAsync("m0", ACC), ag.MmaAsync("m1", ACC),
               ag.CommitGroup()])
    assert out.state.queue.groups == (("m0", "m1"),)


def test_register_write_to_accumulator_then_mma_needs_fence():
    s = run(ag.wgmma_step, ag.WgmmaState(),
            [ag.WgmmaFence(), ag.RegisterAccess({"acc0"})]).state
    assert ag.wgmma_step(s, ag.MmaAsync("m0", ACC)).rule == "wgmma.missing-fence"
    assert ag.wgmma_step(s, ag.MmaAsync("m0", {"acc1"})).ok  # other registers
    assert run(ag.wgmma_step, s, [ag.WgmmaFence(), ag.MmaAsync("m0", ACC)]).ok


def test_reading_accumulator_before_wait_group_is_wait_required():
    s = run(ag.wgmma_step, ag.WgmmaState(),
            [ag.WgmmaFence(), ag.MmaAsync("m0", ACC), ag.CommitGroup(), ag.Complete("m0")]).state
    # completed by the tensor core, but no wait has covered it yet
    out = ag.wgmma_step(s, ag.RegisterAccess({"acc0"}))
    assert out.rule == "wgmma.wait-required" and out.state is s
    ok = run(ag.wgmma_step, s, [ag.WaitGroup(0), ag.RegisterAccess({"acc0"})])
    assert ok.state.op_regs == ()


def test_wgmma_wait_group_one_keeps_newest_group_in_flight():
    s = run(ag.wgmma_step, ag.WgmmaState(),
            [ag.WgmmaFence(), ag.MmaAsync("m0", {"a0"}), ag.CommitGroup(),
             ag.MmaAsync("m1", {"a1"}), ag.CommitGroup(), ag.Complete("m0"),
             ag.WaitGroup(1)]).state
    assert ag.wgmma_step(s, ag.RegisterAccess({"a0"})).ok
    assert ag.wgmma_step(s, ag.RegisterAccess({"a1"})).rule == "wgmma.wait-required"


def test_violation_leaves_state_unchanged():
    s = run(ag.wgmma_step, ag.WgmmaState(), [ag.WgmmaFence(), ag.RegisterAccess({"acc0"})]).state
    out = ag.wgmma_step(s, ag.MmaAsync("m0", ACC))
    assert out.state is s and out.effects == ()


# ----------------------------------------------------------------------------- differential

OPS = ["a", "b", "c", "d"]


def group_commands(bulk: bool):
    op = st.sampled_from(OPS)
    base = [
        st.builds(ag.BulkCopy if bulk else ag.CpAsync, op_id=op),
        st.just(ag.CommitGroup()),
        st.builds(ag.WaitGroup, n=st.integers(-1, 3),
                  read=st.booleans() if bulk else st.just(False)),
        st.builds(ag.Complete, op_id=op),
    ]
    if bulk:
        base.append(st.builds(ag.CompleteRead, op_id=op))
    else:
        base.append(st.just(ag.WaitAll()))
    return st.one_of(*base)


def _apply_ref(ref: RefGroups, cmd):
    if isinstance(cmd, (ag.CpAsync, ag.BulkCopy)):
        return ref.issue(cmd.op_id), None
    if isinstance(cmd, ag.CommitGroup):
        ref.commit()
        return None, None
    if isinstance(cmd, ag.WaitAll):
        snapshot = (ref.commits, [dict(r) for r in ref.records], ref.retired_groups)
        ref.commit()
        res = ref.wait(0)
        if res[0] == "blocked":  # the instruction has not executed: undo its commit
            ref.commits, ref.records, ref.retired_groups = snapshot
        return None, res
    if isinstance(cmd, ag.WaitGroup):
        res = ref.wait(cmd.n, cmd.read)
        return (res[0], None) if res[0] == "async-group.wait-range" else (None, res)
    if isinstance(cmd, ag.CompleteRead):
        return ref.complete(cmd.op_id, read_only=True), None
    return ref.complete(cmd.op_id), None


@pytest.mark.parametrize("bulk", [False, True])
@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_group_queue_agrees_with_flat_reference(bulk, data):
    step = ag.bulk_group_step if bulk else ag.cp_async_step
    s = ag.BulkGroupState() if bulk else ag.CpAsyncState()
    ref = RefGroups()
    for cmd in data.draw(st.lists(group_commands(bulk), min_size=5, max_size=30)):
        out = step(s, cmd)
        rule, wait = _apply_ref(ref, cmd)
        if rule == "not-enabled":
            assert out.has("not-enabled") and out.state is s
            continue
        assert out.rule == rule, cmd
        if wait is not None:
            kind, ops = wait
            if kind == "blocked":
                assert out.effect("blocked") == ("blocked", ops)
            else:
                name = "read-wait-satisfied" if getattr(cmd, "read", False) else "wait-satisfied"
                assert out.effect(name) == (name, ops)
        s = out.state
        assert set(s.queue.in_flight()) == {r["op"] for r in ref.live()}
        assert s.queue.done == {r["op"] for r in ref.live() if r["done"]}


wgmma_commands = st.one_of(
    st.just(ag.WgmmaFence()),
    st.builds(ag.MmaAsync, op_id=st.sampled_from(OPS),
              regs=st.frozensets(st.sampled_from(["acc0", "acc1"]), max_size=2)),
    st.builds(ag.RegisterAccess, regs=st.frozensets(st.sampled_from(["acc0", "acc1"]))),
    st.just(ag.CommitGroup()),
    st.builds(ag.WaitGroup, n=st.integers(-1, 2)),
    st.builds(ag.Complete, op_id=st.sampled_from(OPS)),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(wgmma_commands, max_size=25))
def test_wgmma_step_is_total_deterministic_and_tracks_registers(cmds):
    s = ag.WgmmaState()
    for cmd in cmds:
        a, b = ag.wgmma_step(s, cmd), ag.wgmma_step(s, cmd)
        assert isinstance(a, Outcome) and a == b
        hash(a.state)
        if a.violation is not None:
            assert a.state is s
        s = a.state
        # registers are tracked exactly for the ops still in flight
        assert {e[1] for e in s.op_regs} == set(s.queue.in_flight())


def test_every_rule_is_documented_with_its_section():
    from pathlib import Path

    from kverify.semantics.memory_model.protocols import ALL_RULES

    text = (Path(__file__).resolve().parents[1] / "docs" / "protocols.md").read_text()
    ids = [r.id for r in ALL_RULES]
    assert len(ids) == len(set(ids))
    for rule in ALL_RULES:
        assert f"`{rule.id}`" in text, rule.id
        assert rule.section.startswith("§") and rule.anchor
