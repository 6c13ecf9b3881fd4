"""The CUTLASS sm90 cluster pipeline idiom (tests/data/multicast_ring/multicast_ring.cu): a stage
ring whose (stage, phase) state is carried across a persistent tile loop and a k loop, TMA
multicast of each CTA's half of a stage into both CTAs of a 2-CTA cluster, consumers releasing
the empty barrier of every CTA of the cluster with remote arrivals. The static tx-bytes
obligation sums the peers' multicast bytes per phase with the producer's ring registers in the
forms the parity obligation proved (functions of the ring count alone, so a peer at the same
ring step holds the same stage), and says what that rests on; the arrivals obligation counts the
remote arrivals each CTA of the cluster receives. On an H100 (``kverify validate``, 4 trials,
launch.json and launch_long.json) the correct kernel matches ref.py and compute-sanitizer's
memcheck, racecheck and synccheck report nothing; every twin hangs (killed after 10 s)."""
from __future__ import annotations

import json

import pytest

import kverify
from kverify.launch import LaunchSpec
from kverify.semantics.ir import load_module
from kverify.verifier.mbarrier import check_mbarrier

D = "tests/data/multicast_ring"
LAUNCH = f"{D}/launch.json"
IN_STEP = "the CTAs of a cluster take their ring steps in step"


@pytest.fixture(scope="module")
def reports():
    return {v: kverify.check(f"{D}/multicast_ring{'__' + v if v else ''}.ptx", launch=LAUNCH)
            for v in ("", "short_tx", "ring_skew")}


def test_the_correct_ring_proves_parity_and_tx_bytes_across_the_cluster(reports):
    rep = reports[""]
    assert rep.verdict == "verified" and rep.findings == []
    par, tx = rep.obligation("mbarrier.parity"), rep.obligation("mbarrier.tx-bytes")
    assert par.status == "proved", par.message
    assert tx.status == "proved", tx.message
    # the expect-tx of the producer's ring step, and the assumption the proof rests on
    assert "multicast_ring.cu:147:11 (ptx 340)" in tx.message and IN_STEP in tx.message


def test_an_expect_tx_of_one_half_is_violated_statically_in_the_first_iterations(reports):
    tx = reports["short_tx"].obligation("mbarrier.tx-bytes")
    assert tx.status == "violated" and tx.rule == "mbarrier.tx-mismatch"
    cex = tx.counterexample
    assert (cex["expected_bytes"], cex["copied_bytes"]) == (2048, 4096)
    assert sorted(cex["iterations"].values()) == [0, 0]
    assert cex["barrier_address"] == 0x3000  # full[0], the stage of ring step 0
    assert [loc.line for loc in tx.locations] == [145, 149]


def test_a_ring_that_starts_apart_in_the_peers_is_not_taken_to_be_in_step(reports):
    # rank 1's producer starts at stage 1: its ring registers are no function of the ring count
    # alone, so nothing proves the peers' copies land in this CTA's phase
    rep = reports["ring_skew"]
    tx = rep.obligation("mbarrier.tx-bytes")
    assert tx.status == "unknown" and "own run" in tx.message
    assert rep.obligation("mbarrier.parity").status == "unknown"
    assert rep.verdict == "violated"  # the interpreter's run of the launch finds the stuck phase
    assert "mbarrier.tx-mismatch" in {f.rule for f in rep.findings}


def test_remote_arrivals_are_counted_per_cluster_rank_over_the_peers(reports):
    arr = reports[""].obligation("mbarrier.arrivals")
    assert arr.status == "proved", arr.message
    assert "multicast_ring.cu:176:9 (ptx 246) x2 on each cluster rank (remote" in arr.message
    assert "multicast_ring.cu:147:11 (ptx 340) x1" in arr.message and IN_STEP in arr.message


@pytest.mark.parametrize("variant, rule, got", [("own_rank_only", "deadlock", 1),
                                                ("rank0_twice", "mbarrier.arrival-overflow", 4)])
def test_remote_arrivals_on_the_wrong_ranks_are_violated_statically(variant, rule, got):
    # the static obligation alone, for every k_tiles and num_tiles (no scalar arguments)
    launch = {k: v for k, v in json.load(open(LAUNCH)).items() if k != "args"}
    obs = check_mbarrier(load_module(f"{D}/multicast_ring__{variant}.ptx"), "multicast_ring", LaunchSpec.from_dict(launch))
    arr = obs[2]
    assert arr.title == "mbarrier conformance: arrivals (per phase)"
    assert arr.status == "violated" and arr.rule == rule, arr.message
    cex = arr.counterexample
    assert (cex["arrivals"], cex["init_count"], cex["cluster_rank"]) == (got, 2, 0)
    assert cex["barrier_address"] == 0x3018  # empty[0], the stage of ring step 0
    assert sorted(cex["iterations"].values()) == [0, 0]
    line = {"own_rank_only": 172, "rank0_twice": 174}[variant]
    assert [loc.line for loc in arr.locations] == [124, line]  # the init of empty[s], the arrive


RELEASE = f"{D}/launch_release.json"


def test_a_release_trailing_the_read_ring_keeps_its_parity_and_tx_proofs():
    """multicast_ring_release.cu: CUTLASS's consumer (first wait hoisted, the stage released one
    behind the one read, the tile's last step released after the k loop): the release state is a
    second register of the ring, proved with it. The release after the k loop is not counted as
    a phase of its own: each arrive site completing phases alone was the argument, and an extra
    release per tile (tests/data/pipeline_races/persistent_ring__extra_tail_release) was proved
    by it; arrivals is bounded by the run."""
    rep = kverify.check(f"{D}/multicast_ring_release.ptx", launch=RELEASE)
    assert rep.verdict == "verified"
    for oid in ("mbarrier.parity", "mbarrier.tx-bytes"):
        assert rep.obligation(oid).status == "proved", rep.obligation(oid).message
    arr = rep.obligation("mbarrier.arrivals")
    assert arr.status == "bounded"
    assert ("multicast_ring_release.cu:158:9 (ptx 387) arrives after the loop of multicast_ring_release.cu:150:11 "
            "(ptx 347) on a barrier that loop's arrivals use") in arr.message


def test_trailing_releases_on_one_rank_are_violated_statically():
    # the launch's trip counts (a ring with a hoisted wait is simulated over the tile loop's step)
    obs = check_mbarrier(load_module(f"{D}/multicast_ring_release__rank0_twice.ptx"), "multicast_ring_release",
                         LaunchSpec.from_dict(json.load(open(RELEASE))))
    arr = obs[2]
    assert arr.status == "violated" and arr.rule == "mbarrier.arrival-overflow", arr.message
    assert (arr.counterexample["arrivals"], arr.counterexample["cluster_rank"]) == (4, 0)
    assert [loc.line for loc in arr.locations] == [98, 148]
