"""The race shadow is stored by the pages written (kverify/semantics/interpreter/paged.py): it
reads and writes like the plain per-byte arrays it replaces, and a check of a large grid
through a few representative CTAs does not pay for a shadow of the whole global region."""
import json
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from kverify.launch import LaunchSpec
from kverify.semantics.interpreter.hb import Shadow
from kverify.semantics.interpreter.paged import PAGE, PagedArray, PageTable
from kverify.semantics.ir import load_module
from kverify.verifier.check import check_kernel

ZOO = Path(__file__).parent / "zoo"


@pytest.mark.parametrize("dense", [False, True], ids=["paged", "whole"])
def test_paged_array_reads_and_writes_like_numpy(dense):
    rng = np.random.default_rng(7)
    n = 5 * PAGE + 37
    pages = PageTable(n, dense=dense)
    flat, flat_ref = PagedArray(pages, np.int32, -1), np.full(n, -1, np.int32)
    wide, wide_ref = PagedArray(pages, np.uint32, 0, 2), np.zeros((n, 2), np.uint32)
    for step in range(300):
        idx = rng.integers(0, n, rng.integers(1, 40))
        what = step % 6
        if what == 0:
            flat[idx] = step
            flat_ref[idx] = step
        elif what == 1:
            b = int(idx[0])
            flat[b] = -step
            flat_ref[b] = -step
        elif what == 2:
            col = rng.integers(0, wide.shape[1], len(idx))
            wide.at(np.bitwise_or, (idx, col), np.uint32(1) << (idx % 32).astype(np.uint32))
            np.bitwise_or.at(wide_ref, (idx, col), np.uint32(1) << (idx % 32).astype(np.uint32))
        elif what == 3:
            wide[idx] = 0
            wide_ref[idx] = 0
        elif what == 4 and wide.shape[1] < 8:
            wide.widen(wide.shape[1] * 2)
            wide_ref = np.concatenate([wide_ref, np.zeros_like(wide_ref)], axis=1)
        probe = rng.integers(0, n, 64)
        assert (flat[probe] == flat_ref[probe]).all()
        assert (wide[probe] == wide_ref[probe]).all()
        col = rng.integers(0, wide.shape[1], 64)
        assert (wide[probe, col] == wide_ref[probe, col]).all()
        assert (flat[10:PAGE + 20] == flat_ref[10:PAGE + 20]).all()
        assert int(wide[int(probe[0]), 0]) == int(wide_ref[probe[0], 0])
    assert len(flat) == n and wide.shape == wide_ref.shape
    flat.clear(np.arange(0, n, 3))
    flat_ref[0:n:3] = -1
    assert (flat[np.arange(n)] == flat_ref).all()
    if dense:  # every page stored from the start, at its own offset, never grown
        assert pages.count == 6 and len(flat.store) == 6 * PAGE and len(pages.table) == 0


def test_shadow_of_a_large_region_holds_only_the_pages_accessed():
    sh = Shadow(1 << 30, "global")  # 1 GiB: a plain shadow would be tens of GiB
    far = np.arange(700_000_000, 700_000_128)
    vc = np.array([0, 1], np.int64)
    assert sh.check_write(far, 0, vc, vc) == []
    sh.record_write(far, 0, 1, 3)
    conf = sh.check_read(far, 1, np.zeros(2, np.int64), vc)  # agent 1 has not seen agent 0's write
    assert [(c.rule, c.byte, c.other_agent, c.other_loc) for c in conf] == [("race.global", 700_000_000, 0, 3)]
    sh.record_read(far, 1, 1, 4, vc=np.zeros(2, np.int64))
    sh.record_read(far, 2, 1, 5, vc=np.zeros(3, np.int64))  # a second unordered reader: the slots grow
    assert sh.r_agent.shape == (1 << 30, 2)
    assert (sh.r_agent[far] == [1, 2]).all() and (sh.w_agent[far - 128] == -1).all()
    assert sh.pages.count == 2  # one page written (block 0 is the fill block)
    assert sh.pages.table.nbytes == 4 << 20  # 4 bytes per 1 KiB page
    # three page tables (writers, asynchronous readers, generic readers), two blocks of each record
    assert sh.footprint() - 3 * (4 << 20) < 1 << 20


def test_each_group_of_records_stores_only_the_pages_it_wrote():
    """A tile only asynchronous copies read (a GEMM's A) stores no writer or generic-reader
    records; an output only threads write no asynchronous-reader slots."""
    sh = Shadow(1 << 24, "global")
    tile, out = np.arange(0, 4096), np.arange(1 << 20, (1 << 20) + 4096)
    vc = np.array([0, 1], np.int64)
    sh.set_pending_read(tile, 0, 3)
    sh.record_async_read(tile, 0, vc, 3)
    sh.record_write(out, 1, 1, 4)
    assert (sh.pend_r.pages.count, sh.pages.count, sh.r_agent.pages.count) == (5, 5, 1)  # 4 pages each + block 0
    assert (sh.ra_agent[tile][:, 0] == 0).all() and (sh.w_agent[tile] == -1).all()
    assert (sh.w_agent[out] == 1).all() and (sh.ra_agent[out] == -1).all()
    conf = sh.check_write(tile, 1, np.zeros(2, np.int64), vc)  # agent 1 has not seen the copy's read
    assert [(c.rule, c.byte, c.other_agent) for c in conf][:1] == [("race.async-pending", 0, 0)]


def _vadd(grid):
    n = grid * 256 - 24
    return LaunchSpec.from_dict({"kernel": "vadd", "grid": [grid, 1, 1], "block": [256, 1, 1], "args": {"n": n},
                                 "buffers": {k: {"dtype": "float32", "shape": [n]} for k in "abc"},
                                 "outputs": ["c"]})


def test_check_of_a_large_grid_allocates_no_shadow_for_the_whole_region():
    path = ZOO / "vadd" / "vadd.ptx"
    m = load_module(str(path))
    k = m.kernel("vadd")
    check_kernel(m, k, _vadd(4), path=str(path))  # imports and caches outside the measurement
    peak = {}
    for grid in (4, 1024):
        tracemalloc.start()
        rep = check_kernel(m, k, _vadd(grid), path=str(path))
        peak[grid] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        mem = next(o for o in rep.obligations if o.title == "memory safety")
        assert rep.verdict == "verified" and mem.status == "bounded"
    assert "CTAs {0, 1, 1022, 1023} interpreted" in mem.bound
    # grid 1024: three 1 MiB buffers (3 MiB of global memory); a shadow of every byte of it
    # holds over 100 bytes per byte. What is left is the buffers, their image and their copies.
    assert peak[1024] - peak[4] < 16 << 20, peak


def test_clear_resets_without_storing_a_page():
    pages = PageTable(8 * PAGE)
    arr = PagedArray(pages, np.int64, 0, 3)
    arr[[5, 6], 1] = 9
    before = arr.nbytes
    arr.clear(np.arange(3 * PAGE, 5 * PAGE))  # pages never written: nothing stored
    assert arr.nbytes == before and pages.count == 2
    arr.clear(np.array([5]))
    assert arr[5, 1] == 0 and arr[6, 1] == 9


def test_shared_read_records_cost_nothing_where_only_async_copies_write():
    # a pipeline's shared memory: TMA fills 200 KiB of stages, warps read one mbarrier word
    n = 200 * 1024
    sh = Shadow(n, "shared", np.arange(12))
    vc = np.zeros(16, np.int64)
    stages = np.arange(n - 64)
    sh.record_write(stages, 13, 1, 7, None, 1)  # an async write (agent 13, the async proxy)
    dense = sum(getattr(sh, k).nbytes for k in ("r_clk", "r_loc", "r_lanes", "r_wsync"))
    assert dense == PAGE * 12 * (8 + 4 + 4 + 8)  # block 0 (the fill) only: no page of the 200 KiB stored
    word = np.arange(n - 8, n)
    sh.record_read(word, 0, 1, 3, lanes=np.zeros(8, np.int8), column=0, vc=vc)
    assert sh.r_clk[word, 0].tolist() == [1] * 8 and sh.r_clk[stages[:4], 0].tolist() == [0] * 4
    assert sh.check_write(word, 1, vc, vc) != []  # the read is still there for a later write


def test_completed_operations_drop_their_operands(monkeypatch):
    # a run's memory must not grow with the operands of operations long completed (a wgmma's
    # accumulator registers, a copy's byte indices): only its clock may stay, for the waits
    from kverify.semantics.interpreter import machine as mach, run_kernel
    from kverify.semantics.interpreter.async_ops import AsyncOp, CopyOp, WgmmaOp

    seen = []
    monkeypatch.setattr(mach.Machine, "_release", lambda self, ctas, first: seen.extend(self.ops_by_agent.values()))
    from kverify.launch import resolve

    ptx = ZOO / "wgmma_pipeline" / "wgmma_pipeline.ptx"
    m = load_module(str(ptx))
    spec = resolve(str(ptx.parent / "manifest.json"), str(ptx), "wgmma_pipeline").spec
    r = run_kernel(m, m.kernel("wgmma_pipeline"), spec)
    assert r.status == "complete"
    wg = [o for o in seen if isinstance(o, WgmmaOp)]
    cp = [o for o in seen if isinstance(o, CopyOp)]
    assert wg and cp and all(o.done for o in wg + cp)
    assert all(o.parts == {} and o.reads == [] and o.prev is None for o in wg)
    assert all(o.reads == () and o.writes == () and o.action is None for o in cp)
    assert WgmmaOp.drop_operands is not AsyncOp.drop_operands


def test_member_is_isin_for_few_and_many_agents():
    import numpy as np

    from kverify.semantics.interpreter.hb import _member

    rng = np.random.default_rng(0)
    a = rng.integers(-1, 40, size=(300, 3))
    for agents in ({3}, {0, 5, 7}, set(range(0, 40, 3)), set()):
        assert (_member(a, agents) == np.isin(a, np.fromiter(agents, np.int64))).all()


def test_a_second_async_reader_of_the_same_bytes_keeps_its_own_slot_until_a_write_observes_it():
    """Two wgmma of two warpgroups read one stage: the first holds the first slot of every byte, so
    the second takes the next one (the search the common case skips). A write that observed only
    the first one's completion overwrites bytes the second still reads, or read unobserved."""
    from kverify.semantics.memory_model.execution import RACE_ASYNC_PENDING

    sh = Shadow(1024, "shared", np.arange(4))
    idx = np.arange(64, 128)
    none, first, both = (np.zeros(16, np.int64) for _ in range(3))
    first[10] = both[10] = both[11] = 1
    sh.set_pending_read(idx, 10, 1)
    sh.set_pending_read(idx, 11, 2)
    assert sh.pend_r[idx][:, :2].tolist() == [[10, 11]] * 64
    sh.record_async_read(idx, 10, none, 1)  # the first completes; the second is in flight
    got = sh.check_write(idx, 0, first, none)
    assert [(c.rule, c.other_agent, c.kind) for c in got] == [
        (RACE_ASYNC_PENDING.id, 11, "overwrite of bytes an in-flight async operation still reads")]
    sh.record_async_read(idx, 11, none, 2)  # not ordered after the first: a slot of its own
    assert sh.ra_agent[idx][:, :2].tolist() == [[10, 11]] * 64
    got = sh.check_write(idx, 0, first, none)
    assert [(c.rule, c.other_agent) for c in got] == [(RACE_ASYNC_PENDING.id, 11)]
    assert sh.check_write(idx, 0, both, none) == []
