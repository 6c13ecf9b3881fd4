"""A TMA store's global footprint in the cluster-symmetry argument (races/clusters.py): a few
representative CTAs stand for a grid whose CTAs write disjoint boxes through one tensor map,
and never where two CTAs' boxes may overlap, where the map lets two coordinates name one byte,
or where anything else touches the stored buffer. The kernel is the zoo's Triton TMA matmul
(4 CTAs, each storing its 128x64 tile of C with cp.async.bulk.tensor); its twins are ours."""
import json
from pathlib import Path

from kverify.launch import LaunchSpec
from kverify.semantics.ir import load_module
from kverify.verifier.check import check_kernel
from kverify.verifier.races.clusters import cluster_representatives

ROOT = Path(__file__).resolve().parent
ZOO = ROOT / "zoo" / "triton"
DATA = ROOT / "data" / "tma_store_overlap"
KERNEL = "tma_matmul_kernel"


def _reps(ptx, launch="launch.json"):
    spec = LaunchSpec.from_dict(json.loads((DATA / launch).read_text()))
    module = load_module(str(ptx))
    return cluster_representatives(module, module.kernel(KERNEL), spec)


def test_disjoint_tiles_stored_by_tma_let_one_cta_stand_for_the_grid():
    reps, why = _reps(ZOO / "tma_matmul.ptx")
    assert reps == [(0, 0, 0)], why
    assert why.startswith("no communication between clusters (proved)")


def test_tiles_whose_rows_overlap_are_not_reduced_and_the_run_finds_the_race():
    """The row offset of each tile is pid_m * 64 where the tile has 128 rows (``shl 7`` -> ``shl
    6``): CTA (1,0,0) stores rows 64..191 over CTA (0,0,0)'s 0..127."""
    ptx = DATA / "tma_matmul__rows_overlap.ptx"
    reps, why = _reps(ptx)
    assert reps is None
    assert why == ("independence not established (two stores may write overlapping boxes (the tensor stores at "
                   "tests/zoo/triton/generate.py:104 and tests/zoo/triton/generate.py:104))")
    spec = LaunchSpec.from_dict(json.loads((DATA / "launch.json").read_text()))
    module = load_module(str(ptx))
    rep = check_kernel(module, module.kernel(KERNEL), spec)
    assert rep.verdict == "violated"
    ob = next(o for o in rep.obligations if o.title == "race-free: async")
    assert ob.status == "violated" and ob.rule == "race.async-pending"
    assert ob.locations[0].line == 104 and "write-after-write" in ob.message and "CTA (1,0,0)" in ob.message


def test_a_map_whose_row_stride_is_below_a_row_is_not_taken_as_disjoint():
    """The same kernel through a tensor map whose rows are 32 elements apart (64 bytes) while a
    row is 256 elements: boxes apart in coordinates share bytes. Not reduced; the run sees the
    overlap."""
    reps, why = _reps(ZOO / "tma_matmul.ptx", "launch_aliasing_rows.json")
    assert reps is None
    assert why == ("independence not established (the tensor map of the store at tests/zoo/triton/generate.py:104 "
                   "has a byte stride (64) below the span of the dimensions inside it (512): two coordinates may "
                   "name one byte)")
    spec = LaunchSpec.from_dict(json.loads((DATA / "launch_aliasing_rows.json").read_text()))
    module = load_module(str(ZOO / "tma_matmul.ptx"))
    rep = check_kernel(module, module.kernel(KERNEL), spec)
    assert rep.verdict == "violated"
    ob = next(o for o in rep.obligations if o.title == "race-free: async")
    assert ob.status == "violated" and ob.rule == "race.async-pending" and ob.locations[0].line == 104


def _tile(variant):
    ptx = DATA / f"tile_store{variant}.ptx"
    spec = LaunchSpec.from_dict(json.loads((DATA / "tile_store.json").read_text()))
    module = load_module(str(ptx))
    k = module.kernel("tile_store")
    return cluster_representatives(module, k, spec), check_kernel(module, k, spec)


def test_our_tile_store_one_box_per_cta_is_reduced_to_the_first_and_last():
    (reps, why), rep = _tile("")
    assert reps == [(0, 0, 0), (7, 0, 0)], why
    assert rep.verdict == "verified"
    assert "CTAs {0, 7} interpreted" in next(o for o in rep.obligations if o.title == "race-free: async").bound


def test_our_tile_store_with_half_overlapping_boxes_is_not_reduced_and_violated():
    (reps, why), rep = _tile("__overlap")
    assert (reps, why) == (None, "independence not established (two stores may write overlapping boxes (the tensor "
                                 "stores at tile_store.cu:64 and tile_store.cu:64))")
    ob = next(o for o in rep.obligations if o.title == "race-free: async")
    assert rep.verdict == "violated" and ob.rule == "race.async-pending" and ob.locations[0].line == 64
    assert "write-after-write" in ob.message and "CTA (1,0,0)" in ob.message


def test_our_tile_store_with_a_plain_load_of_the_stored_buffer_is_not_reduced_and_violated():
    """Another CTA's tile read through the pointer parameter whose buffer the tensor map
    describes: the footprints of plain accesses are not compared with a box, so no reduction."""
    (reps, why), rep = _tile("__peek")
    assert (reps, why) == (None, "independence not established (tile_store.cu:68 accesses out_ptr, which the tensor "
                                 "store at tile_store.cu:64 writes (a tensor store's footprint is compared with other "
                                 "tensor stores only))")
    assert rep.verdict == "violated"
    assert {o.rule for o in rep.obligations if o.status == "violated"} >= {"race.global"}


def test_a_stored_map_reaching_past_its_buffer_is_not_shown_in_bounds(monkeypatch):
    """The clusters not interpreted are in bounds only if every tensor map a copy goes through
    lies inside its buffer: a store's map too (a 256-row map over a 128-row buffer)."""
    from kverify.verifier.races import clusters

    seen = []
    real = clusters.prove_in_bounds

    def spy(c, spec, timeout_s):
        seen.append(real(c, spec, timeout_s))
        return seen[-1]

    monkeypatch.setattr(clusters, "prove_in_bounds", spy)
    launch = json.loads((DATA / "tile_store.json").read_text())
    launch["buffers"]["out_ptr"]["shape"] = [128, 32]
    module = load_module(str(DATA / "tile_store.ptx"))
    reps, why = cluster_representatives(module, module.kernel("tile_store"), LaunchSpec.from_dict(launch))
    assert seen == [("the tensor map of cp.async.bulk.tensor.2d.global.shared::cta.bulk_group at tile_store.cu:64 "
                     "describes 32768 bytes, past the 16384 bytes of its buffer out_ptr", None)]
    assert (7, 0, 0) in reps and "memory safety and outputs of the other clusters are not checked" in why


def test_one_threads_two_stores_of_overlapping_boxes_in_one_cta_are_not_reduced():
    """Each CTA stores two boxes of its own 64 rows before it waits; CTA 3 puts its second box over
    half of its first (both in flight). No two CTAs' boxes meet, and where a box lands is no
    condition the CTAs are compared on: a rule over two threads alone reduced the grid to CTAs
    {0, 7} and never ran CTA 3. Two stores of one thread count: not reduced, and the run finds it."""
    ptx = DATA / "tile_store__twice.ptx"
    spec = LaunchSpec.from_dict(json.loads((DATA / "tile_store_twice.json").read_text()))
    module = load_module(str(ptx))
    k = module.kernel("tile_store")
    assert cluster_representatives(module, k, spec) == (
        None, "independence not established (two stores may write overlapping boxes (the tensor stores at "
              "tile_store.cu:52 and tile_store.cu:52))")
    rep = check_kernel(module, k, spec)
    ob = next(o for o in rep.obligations if o.title == "race-free: async")
    assert rep.verdict == "violated" and ob.rule == "race.async-pending" and "CTA (3,0,0)" in ob.message


def test_a_warp_wide_store_of_one_box_is_one_copy_and_reduced():
    """All 32 lanes of warp 0 issue the store with the same coordinates and source (CUTLASS's
    warp-wide TMA store): one copy of the same bytes, as the interpreter performs it."""
    (reps, why), rep = _tile("__warp")
    assert reps == [(0, 0, 0), (7, 0, 0)], why
    assert rep.verdict == "verified"


def test_lanes_storing_other_bytes_to_one_box_are_not_one_copy():
    """The odd lanes store the tile from 128 bytes further on: two copies of different bytes to
    one box, in flight together. Not reduced; the run finds the write-after-write."""
    (reps, why), rep = _tile("__warp_src")
    assert (reps, why) == (None, "independence not established (two stores may write overlapping boxes (the tensor "
                                 "stores at tile_store.cu:41 and tile_store.cu:41))")
    ob = next(o for o in rep.obligations if o.title == "race-free: async")
    assert rep.verdict == "violated" and ob.rule == "race.async-pending" and ob.locations[0].line == 41
