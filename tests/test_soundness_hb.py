"""The happens-before shadow's soundness cases (issue 12): lanes of one warp are agents,
cross-proxy write-after-write, and every global reader a later write needs is kept (or the
run says it dropped one)."""
import json

import numpy as np
import pytest

from conftest import ZOO, needs_nvcc
from kverify.launch import LaunchSpec
from kverify.semantics.interpreter import run_kernel
from kverify.semantics.ir import load_module


def _zoo_run(family, variant, **kw):
    d = ZOO / family
    v = next(v for v in json.loads((d / "manifest.json").read_text())["variants"] if v["file"] == variant)
    m = load_module(str(d / variant.replace(".cu", ".ptx")))
    return v, run_kernel(m, m.kernel(v["kernel"]), LaunchSpec.from_dict(v["launch"]), **kw)


def _cu_run(tmp_path, src, kernel, grid, block, args=None, buffers=None, **kw):
    path = tmp_path / f"{kernel}.cu"
    path.write_text(src)
    m = load_module(str(path))
    spec = LaunchSpec.from_dict({"kernel": kernel, "grid": grid, "block": block, "args": args or {},
                                 "buffers": buffers or {}, "outputs": []})
    return run_kernel(m, m.kernel(kernel), spec, **kw)


def test_missing_syncwarp_in_a_warp_reduction_races_between_two_named_lanes():
    v, r = _zoo_run("warp_reduce_smem", "warp_reduce_smem__missing_syncwarp.cu")
    hits = [f for f in r.findings if f.rule == "race.shared"]
    assert hits and {l.line for l in hits[0].locs} == {v["bug"]["line"]}
    msg = hits[0].message
    assert "between lanes of one warp" in msg and "(warp 0, lane 0)" in msg and "thread 8 (warp 0" in msg
    _, r = _zoo_run("warp_reduce_smem", "warp_reduce_smem.cu")
    assert r.findings == [] and r.status == "complete"


WARP_MBAR = ZOO.parent / "data" / "warp_mbarrier"


@pytest.mark.parametrize("variant, line", [("warp_mbarrier", None), ("warp_mbarrier__relaxed_arrive", 14),
                                           ("warp_mbarrier__write_after_arrive", 13)])
def test_lanes_of_one_warp_are_ordered_by_an_mbarrier_phase_only_through_releasing_arrives(variant, line):
    """A lane's accesses before its (releasing) arrive are ordered before what the lanes of its
    warp that acquire the phase access after their wait; a .relaxed arrive, or a write after the
    arrive, is not."""
    m = load_module(str(WARP_MBAR / f"{variant}.ptx"))
    spec = LaunchSpec.from_dict({"grid": [1], "block": [32], "buffers": {
        "in": {"dtype": "float32", "shape": [32]}, "out": {"dtype": "float32", "shape": [32]}}})
    r = run_kernel(m, m.kernels[0], spec)
    assert r.status == "complete"
    races = [f for f in r.findings if f.rule == "race.shared"]
    if line is None:
        assert r.findings == []
    else:
        assert races and races[0].locs[0].line == line and "between lanes of one warp" in races[0].message


@needs_nvcc
def test_lanes_are_ordered_only_by_a_syncwarp_both_take_part_in(tmp_path):
    src = """
extern "C" __global__ void k(int *out, unsigned mask) {
    __shared__ int s[32];
    int lane = threadIdx.x;
    s[lane] = lane;
    __syncwarp(mask);
    out[lane] = s[lane ^ 1];
}
"""
    buffers = {"out": {"dtype": "int32", "shape": [32]}}
    r = _cu_run(tmp_path, src, "k", [1, 1, 1], [32, 1, 1], {"mask": 0xFFFFFFFF}, buffers)
    assert r.findings == []
    # lanes 0 and 1 pass no common __syncwarp: lane 0's read of s[1] races with lane 1's write
    r = _cu_run(tmp_path, src, "k", [1, 1, 1], [32, 1, 1], {"mask": 0xFFFFFFFC}, buffers)
    assert "race.shared" in r.rules() or "barrier.divergence" in r.rules()


@needs_nvcc
def test_lanes_exchanging_through_shared_memory_without_syncwarp_race(tmp_path):
    src = """
extern "C" __global__ void k(const int *in, int *out, int sync) {
    __shared__ int s[32];
    s[threadIdx.x] = in[threadIdx.x];
    if (sync) __syncwarp();
    out[threadIdx.x] = s[31 - threadIdx.x];
}
"""
    buffers = {"in": {"dtype": "int32", "shape": [32]}, "out": {"dtype": "int32", "shape": [32]}}
    r = _cu_run(tmp_path, src, "k", [1, 1, 1], [32, 1, 1], {"sync": 0}, buffers)
    f = next(f for f in r.findings if f.rule == "race.shared")
    assert "read-after-write between lanes of one warp" in f.message
    assert "(warp 0, lane 0)" in f.message and "thread 31 (warp 0" in f.message
    assert {l.line for l in f.locs} == {4, 6}
    r = _cu_run(tmp_path, src, "k", [1, 1, 1], [32, 1, 1], {"sync": 1}, buffers)
    assert r.findings == []


def test_generic_write_then_bulk_copy_write_without_proxy_fence_is_an_async_proxy_race():
    v, r = _zoo_run("proxy_waw", "proxy_waw__missing_proxy_fence.cu")
    f = next(f for f in r.findings if f.rule == "race.async-proxy")
    assert "async-proxy write over a generic-proxy write" in f.message
    assert {l.line for l in f.locs} == {v["bug"]["line"], 25}
    _, r = _zoo_run("proxy_waw", "proxy_waw.cu")
    assert r.findings == [] and r.status == "complete"


READERS = """
extern "C" __global__ void k(int *x, int *out, int write) {
    if (threadIdx.x == 0)
        out[blockIdx.x] = x[0];
    if (write && blockIdx.x == gridDim.x - 1 && threadIdx.x == 0)
        x[0] = 7;
}
"""


@needs_nvcc
@pytest.mark.parametrize("grid", [4, 24])
def test_a_global_byte_read_by_many_ctas_keeps_every_reader_a_later_write_needs(tmp_path, grid):
    buffers = {"x": {"dtype": "int32", "shape": [1]}, "out": {"dtype": "int32", "shape": [grid]}}
    r = _cu_run(tmp_path, READERS, "k", [grid, 1, 1], [32, 1, 1], {"write": 1}, buffers)
    f = next(f for f in r.findings if f.rule == "race.global")
    assert "write-after-read, not ordered" in f.message and {l.line for l in f.locs} == {4, 6}
    # more unordered readers than the shadow keeps: the run says a write missed one
    assert bool(r.shadow_dropped) == (grid > 16)
    r = _cu_run(tmp_path, READERS, "k", [grid, 1, 1], [32, 1, 1], {"write": 0}, buffers)
    assert r.findings == [] and r.shadow_dropped == []


@pytest.mark.parametrize("variant", ["flag_handoff.cu", "flag_handoff_fence.cu"])
def test_release_acquire_flag_handoff_is_race_free_on_flag_and_payload(variant):
    _, r = _zoo_run("flag_handoff", variant)
    assert r.status == "complete" and r.findings == []


def test_flag_handoff_without_fences_races_on_the_payload_not_on_the_flag():
    v, r = _zoo_run("flag_handoff", "flag_handoff__missing_fence.cu")
    assert [f.rule for f in r.findings] == ["race.global"]
    f = r.findings[0]
    assert f.details["object"].startswith("payload") and {l.line for l in f.locs} == {v["bug"]["line"], 7}


@needs_nvcc
def test_strong_accesses_of_one_flag_are_morally_strong_only_within_their_scopes(tmp_path):
    src = """
extern "C" __global__ void k(unsigned *flag, unsigned *out, int cta_scope) {
    if (threadIdx.x == 0) {
        if (cta_scope)
            asm volatile("st.relaxed.cta.global.u32 [%0], 1;" :: "l"(flag) : "memory");
        else
            asm volatile("st.relaxed.gpu.global.u32 [%0], 1;" :: "l"(flag) : "memory");
        unsigned v;
        asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(flag) : "memory");
        out[blockIdx.x] = v;
    }
}
"""
    buffers = {"flag": {"dtype": "uint32", "shape": [1]}, "out": {"dtype": "uint32", "shape": [2]}}
    r = _cu_run(tmp_path, src, "k", [2, 1, 1], [32, 1, 1], {"cta_scope": 0}, buffers)
    assert r.findings == []
    # a .cta-scope store does not contain the thread of the other CTA: a data race
    r = _cu_run(tmp_path, src, "k", [2, 1, 1], [32, 1, 1], {"cta_scope": 1}, buffers)
    assert "race.global" in r.rules()


@needs_nvcc
def test_volatile_warp_reduction_without_syncwarp_is_no_data_race_but_is_order_dependent(tmp_path):
    src = """
extern "C" __global__ void k(const int *in, int *out, int sync) {
    volatile __shared__ int s[32];
    int lane = threadIdx.x;
    s[lane] = in[lane];
    if (sync) __syncwarp();
    for (int off = 16; off > 0; off >>= 1) {
        if (lane < off) s[lane] += s[lane + off];
        if (sync) __syncwarp();
    }
    if (lane == 0) out[0] = s[0];
}
"""
    buffers = {"in": {"dtype": "int32", "shape": [32]}, "out": {"dtype": "int32", "shape": [1]}}
    r = _cu_run(tmp_path, src, "k", [1, 1, 1], [32, 1, 1], {"sync": 0}, buffers)
    assert "race.shared" not in r.rules()  # volatile = relaxed.sys: morally strong (§8.7)
    assert any("lanes of one warp" in u for u in r.strong_unordered) and not r.robust
    r = _cu_run(tmp_path, src, "k", [1, 1, 1], [32, 1, 1], {"sync": 1}, buffers)
    assert r.findings == [] and r.strong_unordered == []


ORDERED_AFTER_READERS = """
extern "C" __global__ void k(int *x, int *out) {
    if (threadIdx.x % 32 == 0)
        out[threadIdx.x / 32] = x[0];
    __syncthreads();
    if (threadIdx.x == 0)
        x[0] = 7;
}
"""


@needs_nvcc
def test_check_is_not_bounded_when_the_shadow_dropped_a_reader_a_write_needed(tmp_path):
    # 24 warps read x[0] (more unordered readers than the shadow keeps), then a barrier orders
    # the write after all of them: no race, but the run checked the write against only some
    # of the readers, so race freedom in global memory is unknown, not bounded
    from kverify.verifier.check import check_kernel

    path = tmp_path / "k.cu"
    path.write_text(ORDERED_AFTER_READERS)
    m = load_module(str(path))
    spec = LaunchSpec.from_dict({"kernel": "k", "grid": [1, 1, 1], "block": [768, 1, 1],
                                 "buffers": {"x": {"dtype": "int32", "shape": [1]},
                                             "out": {"dtype": "int32", "shape": [24]}}, "outputs": []})
    rep = check_kernel(m, m.kernel("k"), spec, smt=False, path=str(path))
    g = next(o for o in rep.obligations if o.id == "race.global")
    assert g.status == "unknown" and g.message.startswith("race check incomplete: ")
    assert rep.verdict == "inconclusive"
