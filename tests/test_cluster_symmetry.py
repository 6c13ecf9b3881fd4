"""Cluster symmetry (kverify/verifier/races/clusters.py, docs/verdicts.md "When a few clusters
stand for the grid"): with no communication between clusters proved, representative clusters
stand for the grid of a kernel with TMA multicast, mbarriers and cluster barriers.
tests/data/cluster_symmetry/cluster_rows.cu: 64 clusters of 2 CTAs; its twins put a bug in
cluster 37 only (no arrive, wrong tx bytes, a multicast mask without rank 1, a store 2048 rows past
the end of `out`), make cluster 11 write cluster 12's rows, or put a barrier under a test of loaded
data."""
from __future__ import annotations

import json

import pytest

import kverify
from kverify.launch import resolve
from kverify.semantics.ir.load import load_module
from kverify.verifier.races.clusters import cluster_representatives

D = "tests/data/cluster_symmetry"
LAUNCH = f"{D}/launch.json"
ONE = [(0, 0, 0)]
WITH_37 = [(0, 0, 0), (0, 37, 0)]
SYMMETRIC = "no communication between clusters (proved); clusters agree with one of these on every synchronization; "
IN_BOUNDS = SYMMETRIC + ("every global and shared access of the other clusters in bounds (proved); their outputs are "
                         "not checked by this run")
NOT_IN_BOUNDS = SYMMETRIC + "memory safety and outputs of the other clusters are not checked by this run"


def _reps(variant: str, launch=LAUNCH):
    f = f"{D}/cluster_rows{variant}.ptx"
    m = load_module(f)
    k = m.kernel("cluster_rows")
    return cluster_representatives(m, k, resolve(launch, f, k.name).spec)


def _bound(rep) -> str:
    return next(o.bound for o in rep.obligations if o.id == "race.shared")


def test_one_cluster_stands_for_sixty_four():
    # every access of every cluster is proved in bounds: the first cluster alone runs
    reps, why = _reps("")
    assert reps == ONE
    assert why == IN_BOUNDS
    rep = kverify.check(f"{D}/cluster_rows.ptx", launch=LAUNCH)
    assert rep.verdict == "verified" and rep.findings == []
    assert ("grid 2x64x1, block 128x1x1 (the clusters starting at CTAs {(0, 0, 0)} interpreted, the others are "
            "symmetric: " + IN_BOUNDS + ")") in _bound(rep)
    # the independence proof is race freedom of global memory for the whole launch, every schedule
    glob = next(o for o in rep.obligations if o.id == "race.global")
    assert glob.status == "proved" and glob.message.startswith("no global byte one thread writes is read or written "
                                                               "by another thread of the grid, in any loop iteration")
    assert glob.bound == ("block 128x1x1 (the launch's); grid 2x64x1 only (the launch's); any addresses of out; "
                          "every schedule (two arbitrary distinct threads)")


def _variant_launch(tmp_path, grid=None, out_rows=None, map_rows=None) -> str:
    spec = json.load(open(LAUNCH))
    if grid:
        spec["grid"] = grid
    if out_rows:
        spec["buffers"]["out"]["shape"] = [out_rows, 64]
    if map_rows:
        spec["tensormaps"]["tmap"]["shape"] = [map_rows, 32]
    path = tmp_path / "launch.json"
    path.write_text(json.dumps(spec))
    return str(path)


def _bounds(rep):
    return [f for f in rep.findings if f.rule == "bounds"]


def test_a_store_past_the_end_in_one_middle_cluster_is_found():
    # cluster 37 adds 2048 rows to its store address (a selp, no branch): no control decision tells it
    # apart, but the in-bounds proof fails there and z3's model names it
    reps, why = _reps("__row_oob")
    assert reps == [(0, 0, 0), (0, 37, 0), (0, 63, 0)]
    assert why == NOT_IN_BOUNDS
    rep = kverify.check(f"{D}/cluster_rows__row_oob.ptx", launch=LAUNCH)
    assert rep.verdict == "violated"
    oob = _bounds(rep)
    assert oob and oob[0].locations[0].line == 122 and "of CTA (0,37,0)" in oob[0].message


def test_a_buffer_one_row_short_is_found_in_the_last_cluster(tmp_path):
    launch = _variant_launch(tmp_path, out_rows=2047)
    reps, why = _reps("", launch)
    assert reps == [(0, 0, 0), (0, 63, 0)] and why == NOT_IN_BOUNDS
    rep = kverify.check(f"{D}/cluster_rows.ptx", launch=launch)
    assert rep.verdict == "violated"
    oob = _bounds(rep)
    assert oob and oob[0].locations[0].line == 122 and "of CTA (0,63,0)" in oob[0].message
    assert "0 bytes past the end of out" in oob[0].message


def test_a_tensor_map_reaching_past_its_buffer_is_found(tmp_path):
    # 66 clusters load rows up to 2111 through a map of 2112 rows over `in`, which holds 2048:
    # the hardware checks coordinates against the map, not the allocation
    launch = _variant_launch(tmp_path, grid=[2, 66, 1], out_rows=2112, map_rows=2112)
    reps, why = _reps("", launch)
    assert reps == [(0, 0, 0), (0, 65, 0)] and why == NOT_IN_BOUNDS
    rep = kverify.check(f"{D}/cluster_rows.ptx", launch=launch)
    assert rep.verdict == "violated"
    oob = _bounds(rep)
    assert oob and oob[0].locations[0].line == 113
    assert oob[0].message.startswith("a tensor element at byte 270332 of tensor map tensormaps.tmap lies past the end "
                                     "of its buffer in (262144 bytes): the map's shape and strides reach 270336 bytes")
    assert "of CTA (0,65,0)" in oob[0].message


def test_a_few_clusters_are_all_interpreted(tmp_path):
    spec = json.load(open(LAUNCH))
    spec["grid"] = [2, 2, 1]
    spec["buffers"]["in"]["shape"] = [64, 32]
    spec["buffers"]["out"]["shape"] = [64, 64]
    spec["tensormaps"]["tmap"]["shape"] = [64, 32]
    small = tmp_path / "launch.json"
    small.write_text(json.dumps(spec))
    assert _reps("", str(small)) == (None, "few clusters")
    rep = kverify.check(f"{D}/cluster_rows.ptx", launch=str(small))
    assert rep.verdict == "verified" and "interpreted, the others are symmetric" not in _bound(rep)


@pytest.mark.parametrize("variant, rule, where", [
    ("__skip_arrive", "deadlock", "CTA (1,37,0)"),
    ("__tx_bytes", "mbarrier.tx-mismatch", "CTA (0,37,0)"),
    ("__mask", "mbarrier.tx-mismatch", "CTA (1,37,0)"),
])
def test_a_bug_in_one_middle_cluster_adds_that_cluster(variant, rule, where):
    reps, _ = _reps(variant)
    assert reps == WITH_37  # the cover found the one cluster that differs
    rep = kverify.check(f"{D}/cluster_rows{variant}.ptx", launch=LAUNCH)
    assert rep.verdict == "violated"
    hits = [f for f in rep.findings if f.rule == rule]
    assert hits and any(where in f.message for f in hits), [f.message for f in rep.findings]


def test_a_cluster_writing_another_clusters_rows_runs_every_cluster():
    assert _reps("__overlap") == (None, "independence not established (two threads may access the same global "
                                        "bytes, one writing (at cluster_rows.cu:122 and cluster_rows.cu:122))")
    rep = kverify.check(f"{D}/cluster_rows__overlap.ptx", launch=LAUNCH)
    assert rep.verdict == "violated"
    race = [f for f in rep.findings if f.rule == "race.global"]
    assert race and "CTA (0,12,0)" in race[0].message and "CTA (0,11,0)" in race[0].message
    assert race[0].locations[0].line == 122


def test_a_barrier_under_loaded_data_runs_every_cluster():
    assert _reps("__data_barrier") == (None, "control may differ between clusters beyond %ctaid (a condition or "
                                             "operand at cluster_rows.cu:117 depends on loaded data or an "
                                             "approximated value)")
    rep = kverify.check(f"{D}/cluster_rows__data_barrier.ptx", launch=LAUNCH)
    assert rep.verdict == "verified" and "interpreted, the others are symmetric" not in _bound(rep)


# tests/data/cluster_symmetry/persistent_count.cu: clusters of 2 over 12 CTAs and 32 tiles, the first
# tile (5 * blockIdx.x) mod 12; CTAs 2, 4, 7 and 9 take 2 tiles, the others 3, so the first and last
# clusters hold 3-tile CTAs only. How many iterations the tile loop ran (its exit counter) is a
# value of the CTA that the cover compares per side.
COUNT = f"{D}/launch_count.json"
TWO_TILES = {(2, 0, 0), (4, 0, 0), (6, 0, 0), (8, 0, 0)}  # the clusters that hold a 2-tile CTA


def _count_reps(variant: str):
    f = f"{D}/persistent_count{variant}.ptx"
    m = load_module(f)
    k = m.kernel("persistent_count")
    return cluster_representatives(m, k, resolve(COUNT, f, k.name).spec)


def test_clusters_whose_ctas_take_fewer_tiles_are_represented():
    reps, _ = _count_reps("")
    assert reps[0] == (0, 0, 0) and set(reps) & TWO_TILES
    rep = kverify.check(f"{D}/persistent_count.ptx", launch=COUNT)
    assert rep.verdict == "verified"


def test_a_bug_decided_by_the_iteration_count_in_a_middle_cluster_is_found():
    reps, _ = _count_reps("__count_oob")
    assert set(reps) & TWO_TILES
    rep = kverify.check(f"{D}/persistent_count__count_oob.ptx", launch=COUNT)
    assert rep.verdict == "violated"
    oob = [f for f in rep.findings if f.rule == "bounds"]
    assert oob and oob[0].locations[0].line == 22 and "past the end of out" in oob[0].message


# tests/data/dsmem: clusters of 2 CTAs (__cluster_dims__, not named by the launch) exchanging through
# distributed shared memory (mapa + ld/st.shared::cluster, st.async): the window address of a rank's
# variable is one function of (address, rank) in every cluster, and every access is in bounds, so 8
# clusters run as 1.
def _dsmem(tmp_path, ptx: str, kernel: str):
    launch = tmp_path / "launch.json"
    launch.write_text(json.dumps({"kernel": kernel, "grid": [16, 1, 1], "block": [64, 1, 1],
                                  "buffers": {"out": {"dtype": "int32", "shape": [1024]}}}))
    m = load_module(f"tests/data/dsmem/{ptx}")
    reps = cluster_representatives(m, m.kernel(kernel), resolve(str(launch), f"tests/data/dsmem/{ptx}", kernel).spec)
    return reps, kverify.check(f"tests/data/dsmem/{ptx}", kernel_name=kernel, launch=str(launch))


@pytest.mark.parametrize("ptx, kernel", [("dsmem.ptx", "exchange"), ("st_async.ptx", "send")])
def test_distributed_shared_memory_exchanges_run_one_of_eight_clusters(tmp_path, ptx, kernel):
    (reps, _), rep = _dsmem(tmp_path, ptx, kernel)
    assert reps == [(0, 0, 0)]  # a cluster origin: the kernel's clusters of 2, not single CTAs
    assert rep.verdict == "verified"
    assert "(the clusters starting at CTAs {0} interpreted" in _bound(rep)


@pytest.mark.parametrize("ptx, kernel, rule", [("dsmem.ptx", "exchange__no_start_sync", "dsmem.before-start"),
                                               ("st_async.ptx", "send__no_expect_tx", "mbarrier.tx-mismatch")])
def test_distributed_shared_memory_bugs_are_found_in_the_representatives(tmp_path, ptx, kernel, rule):
    (reps, _), rep = _dsmem(tmp_path, ptx, kernel)
    assert reps == [(0, 0, 0)]
    assert rep.verdict == "violated" and rule in {f.rule for f in rep.findings}, [f.rule for f in rep.findings]
