"""CTA named barriers and the cluster barrier: unit tests and differential tests."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from kverify.semantics.memory_model.protocols import cluster_barrier as cb
from kverify.semantics.memory_model.protocols import named_barrier as nb
from kverify.semantics.memory_model.protocols.common import Outcome
from kverify.semantics.memory_model.protocols.reference import RefNamedBarriers


def cta(threads=128):
    return nb.NamedBarrierState(cta_threads=threads)


def run(state, cmds):
    out = None
    for c in cmds:
        out = nb.step(state, c)
        assert out.violation is None, (c, out.violation)
        state = out.state
    return out


def test_syncthreads_releases_all_warps_when_last_warp_arrives():
    s = cta(128)
    out = run(s, [nb.Sync(w) for w in range(3)])
    assert out.effect("blocked") == ("blocked", 0, 2)
    out = nb.step(out.state, nb.Sync(3))
    assert out.effect("barrier-completed") == ("barrier-completed", 0, (0, 1, 2, 3))
    assert out.state.slots[0].idle and out.state == s


def test_named_barrier_counts_warps_not_threads():
    # count 64 = two warps: the second warp's arrival completes it, not the 64th thread.
    out = run(cta(256), [nb.Sync(0, bar_id=1, count=64)])
    assert out.state.slots[1].arrived_threads == 32
    out = nb.step(out.state, nb.Sync(5, bar_id=1, count=64))
    assert out.effect("barrier-completed") == ("barrier-completed", 1, (0, 5))


def test_partial_last_warp_counts_its_threads():
    s = cta(48)  # warp 1 has 16 threads
    out = run(s, [nb.Sync(0), nb.Sync(1, warp_threads=16)])
    assert out.has("barrier-completed")


def test_producer_arrive_consumer_sync_pattern():
    out = run(cta(256), [nb.Arrive(0, 2, 128), nb.Arrive(1, 2, 128), nb.Sync(4, 2, 128)])
    assert not out.has("barrier-completed")
    assert out.state.blocked_warps() == {4}
    out = nb.step(out.state, nb.Sync(5, 2, 128))
    # arrive-only warps are not released (they never waited)
    assert out.effect("barrier-completed") == ("barrier-completed", 2, (4, 5))


def test_second_arrive_before_reset_is_named_reuse():
    out = run(cta(256), [nb.Arrive(0, 3, 128)])
    bad = nb.step(out.state, nb.Arrive(0, 3, 128))
    assert bad.rule == "barrier.named-reuse"
    assert nb.step(out.state, nb.Sync(0, 3, 128)).rule == "barrier.named-reuse"


def test_arrive_again_after_reset_is_legal():
    out = run(cta(64), [nb.Arrive(0, 3, 64), nb.Sync(1, 3, 64), nb.Arrive(0, 3, 64)])
    assert out.state.slots[3].arrived == {0}


def test_blocked_warp_cannot_issue():
    out = run(cta(128), [nb.Sync(0, 1, 64)])
    again = nb.step(out.state, nb.Arrive(0, 2, 64))
    assert again.effect("not-enabled") is not None and again.violation is None
    assert again.state is out.state


@pytest.mark.parametrize("count", [0, 16, 48, 160, -32])
def test_count_not_multiple_of_32_or_too_large_is_named_count(count):
    assert nb.step(cta(128), nb.Sync(0, 1, count)).rule == "barrier.named-count"


def test_inconsistent_counts_on_active_barrier_is_named_count():
    out = run(cta(256), [nb.Arrive(0, 1, 128)])
    bad = nb.step(out.state, nb.Sync(1, 1, 64))
    assert bad.rule == "barrier.named-count"
    assert bad.violation.detail("active_count") == 128


def test_sync_without_count_means_whole_cta():
    out = run(cta(64), [nb.Arrive(0, 0, 64)])
    assert nb.step(out.state, nb.Sync(1)).has("barrier-completed")
    assert nb.step(run(cta(128), [nb.Arrive(0, 0, 64)]).state, nb.Sync(1)).rule == "barrier.named-count"


@pytest.mark.parametrize("bar_id", [16, -1, 31])
def test_barrier_id_out_of_range_is_named_id(bar_id):
    assert nb.step(cta(), nb.Sync(0, bar_id)).rule == "barrier.named-id"


def test_red_mixed_with_sync_is_named_reuse():
    out = run(cta(128), [nb.Sync(0, 1, 64)])
    assert nb.step(out.state, nb.Red(1, 1, "popc", 3, count=64)).rule == "barrier.named-reuse"
    out = run(cta(128), [nb.Red(0, 1, "and", True, count=64)])
    assert nb.step(out.state, nb.Arrive(1, 1, 64)).rule == "barrier.named-reuse"
    assert nb.step(out.state, nb.Red(1, 1, "or", True, count=64)).rule == "barrier.named-reuse"


def test_red_popc_sums_warp_contributions():
    out = run(cta(96), [nb.Red(0, 4, "popc", 5), nb.Red(1, 4, "popc", 7)])
    out = nb.step(out.state, nb.Red(2, 4, "popc", 0))
    assert out.value == 12 and out.effect("red-result") == ("red-result", 4, 12)


def test_red_and_or():
    out = run(cta(64), [nb.Red(0, 1, "and", True)])
    assert nb.step(out.state, nb.Red(1, 1, "and", False)).value is False
    out = run(cta(64), [nb.Red(0, 1, "or", False)])
    assert nb.step(out.state, nb.Red(1, 1, "or", True)).value is True


def test_violation_leaves_state_unchanged():
    s = run(cta(256), [nb.Arrive(0, 3, 128)]).state
    bad = nb.step(s, nb.Arrive(0, 3, 128))
    assert bad.state is s and bad.effects == ()


def test_violation_cites_bar_section():
    v = nb.step(cta(), nb.Sync(0, 20)).violation
    assert v.section.startswith("§9.7.13.1") and v.anchor.endswith("bar-barrier")


def test_malformed_commands_are_rejected_at_construction():
    with pytest.raises(ValueError):
        nb.Red(0, 1, "xor", 1)
    with pytest.raises(ValueError):
        nb.Sync(0, 1, warp_threads=33)
    with pytest.raises(TypeError):
        nb.Arrive(0, 1, None)


# ----------------------------------------------------------------------------- differential

WARPS = 4


def named_commands(cta_threads):
    warp = st.integers(0, WARPS - 1)
    bar = st.sampled_from([0, 1, 1, 2, 16])
    count = st.sampled_from([None, 64, 64, 128, 32, 96, 48])
    return st.one_of(
        st.builds(nb.Sync, warp=warp, bar_id=bar, count=count),
        st.builds(nb.Arrive, warp=warp, bar_id=bar, count=count.filter(lambda c: c is not None)),
        st.builds(nb.Red, warp=warp, bar_id=bar, op=st.sampled_from(["popc", "and"]),
                  value=st.integers(0, 3), count=count),
    )


@settings(max_examples=200, deadline=None)
@given(st.sampled_from([64, 128]), st.data())
def test_named_step_agrees_with_arrival_list_reference(cta_threads, data):
    s = cta(cta_threads)
    ref = RefNamedBarriers(cta_threads)
    for cmd in data.draw(st.lists(named_commands(cta_threads), min_size=5, max_size=30)):
        out = nb.step(s, cmd)
        rule, released = ref.apply(cmd)
        if rule == "not-enabled":
            assert out.has("not-enabled") and out.violation is None and out.state is s
            continue
        assert out.rule == rule, (cmd, s)
        done = out.effect("barrier-completed")
        assert (done[2] if done else None) == released, (cmd, s)
        s = out.state
        assert s.blocked_warps() == ref.blocked()
        for i, slot in enumerate(s.slots):
            lst = ref.lists[i]
            assert slot.arrived == {a["warp"] for a in lst}
            assert slot.arrived_threads == sum(a["threads"] for a in lst)


@settings(max_examples=100, deadline=None)
@given(st.lists(named_commands(128), max_size=25))
def test_named_step_is_total_and_deterministic(cmds):
    s = cta(128)
    for cmd in cmds:
        a, b = nb.step(s, cmd), nb.step(s, cmd)
        assert isinstance(a, Outcome) and a == b
        hash(a.state)
        s = a.state


# ----------------------------------------------------------------------------- cluster barrier

THREADS = frozenset({(0, 0), (0, 1), (1, 0)})  # (cta rank, thread)


def cluster():
    return cb.ClusterBarrierState(participants=THREADS)


def crun(state, cmds):
    out = None
    for c in cmds:
        out = cb.step(state, c)
        assert out.violation is None, (c, out.violation)
        state = out.state
    return out


def test_cluster_wait_blocks_until_every_thread_of_every_cta_arrived():
    out = crun(cluster(), [cb.Arrive((0, 0)), cb.Arrive((0, 1)), cb.Wait((0, 0))])
    assert out.effect("blocked") == ("blocked", (0, 0))
    out = crun(out.state, [cb.Arrive((1, 0), relaxed=True)])
    assert out.effect("phase-completed") == ("phase-completed", 0)
    out = cb.step(out.state, cb.Wait((0, 0)))
    assert out.has("wait-satisfied")


def test_cluster_second_arrive_before_wait_is_reported():
    out = crun(cluster(), [cb.Arrive((0, 0))])
    assert cb.step(out.state, cb.Arrive((0, 0))).rule == "cluster-barrier.double-arrive"
    done = crun(out.state, [cb.Arrive((0, 1)), cb.Arrive((1, 0))]).state
    # even after the phase completed, the thread must wait before arriving again
    assert cb.step(done, cb.Arrive((0, 0))).rule == "cluster-barrier.double-arrive"
    again = crun(done, [cb.Wait((0, 0)), cb.Arrive((0, 0))])
    assert again.state.arrived == {(0, 0)}


def test_cluster_wait_without_arrive_is_reported():
    out = cb.step(cluster(), cb.Wait((1, 0)))
    assert out.rule == "cluster-barrier.wait-without-arrive" and out.state == cluster()


def test_cluster_exit_of_last_missing_thread_completes_phase():
    out = crun(cluster(), [cb.Arrive((0, 0)), cb.Arrive((0, 1)), cb.Exit((1, 0))])
    assert out.has("phase-completed")
    assert cb.step(out.state, cb.Arrive((1, 0))).has("not-enabled")


def test_exited_threads_complete_a_cta_wide_instance():
    s = run(cta(128), [nb.Sync(0), nb.Sync(1)]).state
    assert nb.step(s, nb.ExitedArrive(0, 32)).effects == ()
    out = nb.step(s, nb.ExitedArrive(0, 64))
    assert out.effect("barrier-completed") == ("barrier-completed", 0, (0, 1))
    assert out.state.slots[0].idle


def test_exited_threads_do_not_complete_an_instance_with_a_smaller_count():
    s = run(cta(128), [nb.Sync(0, 1, count=64)]).state
    assert nb.step(s, nb.ExitedArrive(1, 96)).effects == ()


def test_run_on_arrives_with_the_active_count():
    s = run(cta(128), [nb.Sync(0, 1, count=64)]).state
    cmd = nb.Sync(1, 1, count=96)
    out = nb.step(s, cmd)
    assert out.rule == "barrier.named-count"
    finding, cont = nb.run_on(s, cmd, out.violation)
    assert finding is out.violation and cont.has("barrier-completed")


def test_cluster_barrier_exit_completes_the_phase_the_others_arrived_in():
    s = cb.ClusterBarrierState(frozenset({0, 1}))
    s = cb.step(s, cb.Arrive(0)).state
    out = cb.step(s, cb.Exit(1))
    assert out.has("phase-completed") and out.state.phase == 1
