"""A bulk store to global memory executed by every lane of a warp with identical operands
(CUTLASS's sm90 TMA epilogue: ``issue_tma_store = thread_idx / 32 == 0``; quack) is one copy of
the same bytes per lane: ``async-group.store-replicated``, a warning that the interpreter
performs once, not a race. Lanes whose stores differ and overlap still race
(tests/data/store_replicated)."""
from pathlib import Path

from kverify.verifier.cli import main

DATA = Path(__file__).parent / "data" / "store_replicated"
TILES = ["--grid", "1", "--block", "128", "--arg", "tiles=3", "--arg", "in=1536:f32"]


def _check(capsys, name, *args):
    rc = main(["check", str(DATA / f"{name}.ptx"), *TILES, *args])
    return rc, capsys.readouterr().out


def test_warp_wide_tensor_store_is_a_warning(capsys):
    rc, out = _check(capsys, "warp_store", "--arg", "tmap=48x32:f32:box=16x32")
    assert rc == 0, out
    assert "kernel warp_store: VERIFIED" in out
    assert ("tests/data/store_replicated/warp_store.cu:27:26: warning[async-group.store-replicated]: "
            "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group executed by 32 lanes of warp 0 of CTA (0,0,0) "
            "(lanes 0..31) with identical operands: 32 copies of the same bytes to the same place; performed once") in out
    assert "  warning   race-free: async" in out
    assert "error[" not in out


def test_overlapping_tensor_stores_waited_with_read_only_race(capsys):
    """A 32-row box over the kernel's 16-row tiles: tile t + 1's store overwrites rows of tile t's,
    and cp.async.bulk.wait_group.read between them waits for the source reads only, not for the
    writes: the two async writes are unordered."""
    rc, out = _check(capsys, "warp_store", "--arg", "tmap=48x32:f32:box=32x16")
    assert rc == 1 and "kernel warp_store: VIOLATED" in out
    assert ("tests/data/store_replicated/warp_store.cu:27:26: error[race.async-pending]: write-after-write, not "
            "ordered: async write of global tmap_global+2048 by warp 0 (threads 0-31) of CTA (0,0,0) at "
            "warp_store.cu:27 and an access by cp.async.bulk.tensor issued by warp 0 (threads 0-31) of CTA (0,0,0) at "
            "warp_store.cu:27 (iterations 1)") in out


def test_warp_wide_bulk_store_is_a_warning_and_strict_makes_it_an_error(capsys):
    rc, out = _check(capsys, "warp_bulk_store", "--arg", "out=1536:f32")
    assert rc == 0, out
    assert ("tests/data/store_replicated/warp_bulk_store.cu:25:26: warning[async-group.store-replicated]: "
            "cp.async.bulk.global.shared::cta.bulk_group executed by 32 lanes of warp 0") in out
    rc, out = _check(capsys, "warp_bulk_store", "--arg", "out=1536:f32", "--strict")
    assert rc == 1 and "error[async-group.store-replicated]" in out, out


def test_lanes_storing_overlapping_rows_race(capsys):
    rc, out = _check(capsys, "warp_store__lane_rows", "--arg", "tmap=49x32:f32:box=32x16")
    assert rc == 1, out
    assert "kernel warp_store: VIOLATED" in out
    assert ("tests/data/store_replicated/warp_store__lane_rows.cu:27:26: error[race.async-pending]: write to a "
            "destination of an in-flight async copy: async write of global tmap_global+128") in out
    # the even lanes and the odd lanes each store one tile: 16 replicas of each
    assert "executed by 16 lanes of warp 0 of CTA (0,0,0) (lanes 0..30)" in out
