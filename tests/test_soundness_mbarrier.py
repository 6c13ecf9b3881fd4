"""Soundness of the mbarrier and cluster-barrier memory semantics (issue 12, items 3 and 9):
``.relaxed`` arrives release nothing and ``.relaxed`` waits acquire nothing
(PTX ISA §9.7.13.15.16, §9.7.13.15.17); an mbarrier invalidated and initialized again starts
a new lifetime (§9.7.13.15.3); the init made visible by fence.mbarrier_init.release.cluster and
a cluster barrier (§9.7.12.4, barrier.cluster). Each buggy kernel was ``verified`` before;
its correct twin stays clean."""
import json

import pytest

from conftest import ZOO
from kverify.launch import LaunchSpec
from kverify.semantics.interpreter import run_kernel
from kverify.semantics.ir import load_module
from kverify.verifier.check import check_kernel


def _variant(family, file):
    d = ZOO / family
    v = next(v for v in json.loads((d / "manifest.json").read_text())["variants"] if v["file"] == file)
    return d / file.replace(".cu", ".ptx"), v


def _run(family, file, **kw):
    path, v = _variant(family, file)
    m = load_module(str(path))
    return run_kernel(m, m.kernel(v["kernel"]), LaunchSpec.from_dict(v["launch"]), **kw)


def _check(family, file):
    path, v = _variant(family, file)
    m = load_module(str(path))
    return check_kernel(m, m.kernel(v["kernel"]), LaunchSpec.from_dict(v["launch"]), path=str(path))


def _lines(f):
    return {l.line for l in f.locs}


# --------------------------------------------------------------------------- .relaxed (item 3)


def test_default_release_arrive_and_acquire_wait_hand_the_stage_over():
    r = _run("relaxed_mbarrier", "relaxed_mbarrier.cu", schedule="exhaustive", budget=6)
    assert r.status == "complete" and r.findings == []
    assert _check("relaxed_mbarrier", "relaxed_mbarrier.cu").verdict == "verified"


@pytest.mark.parametrize("file", ["relaxed_mbarrier__relaxed_arrive.cu", "relaxed_mbarrier__relaxed_wait.cu"])
def test_relaxed_arrive_or_wait_orders_nothing_and_the_stage_races(file):
    """The handoff still completes (the protocol is the same), but the consumer's read of the
    stage is unordered with the producer's write: race.shared naming both lines."""
    r = _run("relaxed_mbarrier", file, schedule="exhaustive", budget=6)
    assert r.status == "complete", r.reason
    assert r.rules() == {"race.shared"}
    assert all(_lines(f) == {76, 80} for f in r.findings)
    rep = _check("relaxed_mbarrier", file)
    assert rep.verdict == "violated"
    o = next(o for o in rep.obligations if o.title == "race-free: shared")
    assert o.status == "violated" and o.rule == "race.shared"


# --------------------------------------------------------------------------- inval / re-init (item 9)


def test_a_reinitialized_barrier_starts_a_new_lifetime_for_its_waiters():
    """Before: after mbarrier.inval and a new mbarrier.init the consumer's parity-0 wait was
    reported as naming phase 0 it had already observed (of the old lifetime)."""
    r = _run("mbarrier_reinit", "mbarrier_reinit.cu", schedule="exhaustive", budget=6)
    assert r.status == "complete", r.reason
    assert r.findings == []
    assert _check("mbarrier_reinit", "mbarrier_reinit.cu").verdict == "verified"


def test_a_waiter_that_keeps_the_old_lifetimes_parity_is_found():
    r = _run("mbarrier_reinit", "mbarrier_reinit__stale_phase.cu", schedule="exhaustive", budget=6)
    assert "mbarrier.parity" not in r.rules()
    races = [f for f in r.findings if f.rule == "race.shared"]
    assert races and all(_lines(f) == {82, 87} for f in races)
    assert "deadlock" in r.rules()
    assert _check("mbarrier_reinit", "mbarrier_reinit__stale_phase.cu").verdict == "violated"


# --------------------------------------------------------------------------- init visibility


def test_fence_mbarrier_init_then_relaxed_cluster_barrier_makes_the_init_visible():
    """The documented init sequence: mbarrier.init, fence.mbarrier_init.release.cluster,
    barrier.cluster.arrive.relaxed, barrier.cluster.wait (§9.7.12.4). Before: reported as
    mbarrier.init-visibility because a relaxed arrive added no ordering."""
    r = _run("mbarrier_init_seq", "mbarrier_init_seq.cu", schedule="exhaustive", budget=6)
    assert r.status == "complete", r.reason
    assert r.findings == []
    assert _check("mbarrier_init_seq", "mbarrier_init_seq.cu").verdict == "verified"


def test_relaxed_cluster_barrier_without_the_init_fence_leaves_the_init_unordered():
    r = _run("mbarrier_init_seq", "mbarrier_init_seq__missing_init_fence.cu", schedule="exhaustive", budget=6)
    assert r.rules() == {"mbarrier.init-visibility"}
    assert all(95 in _lines(f) for f in r.findings)  # the init, next to the use
    rep = _check("mbarrier_init_seq", "mbarrier_init_seq__missing_init_fence.cu")
    assert rep.verdict == "violated"


def test_the_init_fence_orders_only_the_inits_not_the_data():
    """A relaxed cluster arrive after fence.mbarrier_init releases the init and nothing else:
    the relaxed_mbarrier twins (data handed over through a relaxed mbarrier operation) still race
    although their init is fenced."""
    r = _run("relaxed_mbarrier", "relaxed_mbarrier__relaxed_arrive.cu")
    assert "mbarrier.init-visibility" not in r.rules() and "race.shared" in r.rules()
