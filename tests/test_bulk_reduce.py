"""cp.reduce.async.bulk (§9.7.9.25.4.3): a bulk reduction of a shared tile into global memory,
completed through a bulk async-group; tests/data/bulk_reduce (kernels of our own)."""
import json
from pathlib import Path

import numpy as np
import pytest

import kverify
from kverify.verifier.cli import main
from reduce_launch import element_type, tensor_reduce_launch

D = Path(__file__).parent / "data" / "bulk_reduce"
PTX = D / "bulk_reduce.ptx"


def _check(capsys, tmp_path, kernel):
    launch = json.loads((D / "launch.json").read_text()) | {"kernel": kernel}
    (tmp_path / "l.json").write_text(json.dumps(launch))
    rc = main(["check", str(PTX), "--kernel", kernel, "--launch", str(tmp_path / "l.json"), "--format", "json"])
    k = json.loads(capsys.readouterr().out)["kernels"][0]
    return rc, k, {o["id"]: o for o in k["obligations"]}


def test_each_element_becomes_the_sum_of_destination_and_source():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 128)).astype(np.float32)
    o = rng.standard_normal((2, 128)).astype(np.float32)
    r = kverify.run(str(PTX), kernel_name="bulk_reduce", launch=str(D / "launch.json"), inputs={"in": x, "out": o})
    assert r.status == "complete" and np.array_equal(r.outputs["out"].view(np.uint32), (o + x).view(np.uint32))


def test_the_correct_kernel_is_verified(capsys, tmp_path):
    rc, k, by = _check(capsys, tmp_path, "bulk_reduce")
    assert rc == 0 and k["verdict"] == "verified" and by["race.async"]["status"] == "bounded"


def test_without_the_proxy_fence_the_reduction_reads_unfenced_stores(capsys, tmp_path):
    rc, k, by = _check(capsys, tmp_path, "bulk_reduce__no_fence")
    o = by["race.async"]
    assert rc == 1 and o["status"] == "violated" and o["rule"] == "race.async-proxy"
    assert o["locations"][0]["line"] == 78


def test_overwriting_the_source_before_the_group_wait_races_with_the_reduction(capsys, tmp_path):
    rc, k, by = _check(capsys, tmp_path, "bulk_reduce__overwrite")
    o = by["race.async"]
    assert rc == 1 and o["status"] == "violated" and o["rule"] == "race.async-pending"
    assert o["locations"][0]["line"] == 117


def test_reductions_of_two_ctas_into_the_same_elements_are_unknown_not_a_race(capsys, tmp_path):
    rc, k, by = _check(capsys, tmp_path, "bulk_reduce__same_row")
    assert rc == 3 and k["verdict"] == "inconclusive"
    assert "overlaps the bytes of another asynchronous reduction; the atomicity of reductions to the same elements is " \
           "not modelled" in by["memory"]["message"]


def test_a_warp_wide_issue_is_one_reduction_per_lane_not_one_copy(tmp_path):
    """Lanes with identical operands each add the source (unlike a bulk store, which writes the
    same bytes once): 32 overlapping reductions, which stay unknown."""
    text = PTX.read_text().replace("    setp.ne.s32 %p1, %r1, 0;\n    @%p1 bra $L_done;\n", "    setp.ne.s32 %p1, %r1, 32;\n    @%p1 bra $L_done;\n", 1)
    text = text.replace("    setp.ne.s32 %p1, %r1, 32;", "    setp.gt.u32 %p1, %r1, 31;", 1)
    (tmp_path / "w.ptx").write_text(text)
    r = kverify.run(str(tmp_path / "w.ptx"), kernel_name="bulk_reduce", launch=str(D / "launch.json"))
    assert r.status == "unsupported" and "overlaps the bytes of another asynchronous reduction" in r.reason


def test_a_proxy_fence_of_global_memory_leaves_the_shared_source_unfenced(capsys, tmp_path):
    """fence.proxy.async.global orders the writer's global accesses only (§9.7.13.4): the shared
    tile the reduction reads stays unfenced."""
    rc, k, by = _check(capsys, tmp_path, "bulk_reduce__global_fence")
    o = by["race.async"]
    assert rc == 1 and (o["status"], o["rule"], o["locations"][0]["line"]) == ("violated", "race.async-proxy", 189)


# --------------------------------------------------------------------------- cp.reduce.async.bulk.tensor

TR = D / "tensor_reduce.ptx"


def _bf16(x):
    """float32 -> bfloat16 bits, rounded to nearest even."""
    u = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def _widen(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


def _expected(kernel, a, b, scale=1.0, src=None):
    """out = b (+) a element-wise in the kernel's type (``src``: the reduction's source in place of a)."""
    ty = element_type(kernel)
    src = a if src is None else src
    if ty == "s32":
        return np.maximum(np.rint(b * scale).astype(np.int32), np.rint(src * scale).astype(np.int32))
    if ty == "f32":
        return (b * np.float32(scale)) + (src * np.float32(scale))
    if ty == "f16":
        return ((b * np.float32(scale)).astype(np.float16).astype(np.float64)
                + (src * np.float32(scale)).astype(np.float16).astype(np.float64)).astype(np.float16)
    return _bf16(_widen(_bf16(b * np.float32(scale))) + _widen(_bf16(src * np.float32(scale))))


@pytest.mark.parametrize("kernel", ["tensor_add_f32", "tensor_add_f16", "tensor_add_bf16", "tensor_max_s32",
                                    "bulk_add_f16", "bulk_add_bf16", "red_add_f16", "red_add_bf16"])
def test_each_in_bounds_element_is_reduced_in_the_tensor_maps_type(kernel, tmp_path):
    """A 40 x 48 matrix in 32 x 32 boxes: the boxes of the last row and column hang over the edge
    and their outside elements are dropped (tensor); the byte-range reductions add whole 16-byte
    rows, clipped to the matrix."""
    (tmp_path / "l.json").write_text(json.dumps(tensor_reduce_launch(kernel, 1000.0 if "s32" in kernel else 1.0)))
    r = kverify.run(str(TR), kernel_name=kernel, launch=str(tmp_path / "l.json"), seed=3)
    assert r.status == "complete", r.reason
    a, b, out = r.inputs["a"], r.inputs["b"], r.outputs["out"]
    want = _expected(kernel, a, b, 1000.0 if "s32" in kernel else 1.0)
    assert out.dtype == want.dtype and out.shape == (40, 48)
    assert np.array_equal(out.view(np.uint8), want.view(np.uint8))


def test_a_128_byte_swizzled_box_is_read_unswizzled_from_shared_memory(tmp_path):
    """The threads write the tile densely; under CU_TENSOR_MAP_SWIZZLE_128B the reduction reads box
    element (r, c) from 16-byte chunk (c/4) ^ (r % 8) of row r, so out = b + a with each row's
    chunks permuted (box positions outside the matrix read 1.0, the fill of the tile)."""
    (tmp_path / "l.json").write_text(json.dumps(tensor_reduce_launch("tensor_add_f32", swizzle="128B")))
    r = kverify.run(str(TR), kernel_name="tensor_add_f32", launch=str(tmp_path / "l.json"), seed=3)
    assert r.status == "complete", r.reason
    a, b = r.inputs["a"], r.inputs["b"]
    tiles = np.ones((64, 64), np.float32)
    tiles[:40, :48] = a
    src = np.empty_like(tiles)
    for row in range(64):
        for c in range(64):
            box_c = c % 32
            src[row, c] = tiles[row, (c // 32) * 32 + ((box_c // 4) ^ (row % 8)) * 4 + box_c % 4]
    want = b + src[:40, :48]
    assert np.array_equal(r.outputs["out"].view(np.uint32), want.view(np.uint32))
    assert not np.array_equal(want, b + a)


def _check_tr(capsys, tmp_path, kernel):
    (tmp_path / "l.json").write_text(json.dumps(tensor_reduce_launch(kernel)))
    rc = main(["check", str(TR), "--kernel", kernel, "--launch", str(tmp_path / "l.json"), "--format", "json"])
    k = json.loads(capsys.readouterr().out)["kernels"][0]
    return rc, k, {o["id"]: o for o in k["obligations"]}


def test_the_correct_tensor_reduction_is_verified(capsys, tmp_path):
    rc, k, by = _check_tr(capsys, tmp_path, "tensor_add_f32")
    assert rc == 0 and k["verdict"] == "verified" and by["race.async"]["status"] == "bounded"


def test_destination_stores_fenced_for_shared_memory_only_race_with_the_reduction(capsys, tmp_path):
    """The threads' stores to out are fenced with fence.proxy.async.shared::cta only: the async
    proxy's read-modify-write of out may miss them."""
    rc, k, by = _check_tr(capsys, tmp_path, "tensor_add_f32__no_global_fence")
    o = by["race.async"]
    assert rc == 1 and (o["status"], o["rule"]) == ("violated", "race.async-proxy")
    assert [x["line"] for x in o["locations"]] == [82, 81]
    assert o["message"].startswith("async-proxy write over a generic-proxy write with no fence.proxy.async after "
                                   "the write: async write of global out by warp 0 (threads 0-31) of CTA (0,0,0) at "
                                   "tensor_reduce.cu:82 and an access by thread 0 (warp 0 of CTA (0,0,0)) at "
                                   "tensor_reduce.cu:81")


def test_reading_the_destination_after_wait_group_read_races_with_the_reduction(capsys, tmp_path):
    """cp.async.bulk.wait_group.read waits for the source reads only: the reduction's writes may
    still be in flight when thread 0 reads out."""
    rc, k, by = _check_tr(capsys, tmp_path, "tensor_add_f32__read_early")
    o = by["race.async"]
    assert rc == 1 and (o["status"], o["rule"]) == ("violated", "race.async-pending")
    assert [x["line"] for x in o["locations"]] == [90, 89, 65]  # the read; the reduction, inlined from line 65
    assert "read before the completion of the async write is observed: read of global out by thread 0" in o["message"]


def test_an_im2col_no_offs_reduction_is_unknown(tmp_path):
    text = TR.read_text().replace(".add.tile.bulk_group", ".add.im2col_no_offs.bulk_group")
    (tmp_path / "tensor_reduce.ptx").write_text(text)
    (tmp_path / "tensor_reduce.cu").write_text((D / "tensor_reduce.cu").read_text())
    (tmp_path / "l.json").write_text(json.dumps(tensor_reduce_launch("tensor_add_f32")))
    r = kverify.run(str(tmp_path / "tensor_reduce.ptx"), kernel_name="tensor_add_f32", launch=str(tmp_path / "l.json"))
    assert r.status == "unsupported" and ".im2col_no_offs is not modelled" in r.reason


def _ftz(x):
    x = np.asarray(x, np.float32)
    return np.where(np.abs(x) < np.float32(2.0 ** -126), np.copysign(np.float32(0), x), x).astype(np.float32)


@pytest.mark.parametrize("kernel, flush", [("red_add_f32", True), ("bulk_add_f32", False), ("tensor_add_f32", False)])
def test_subnormal_adds_flush_for_red_f32_only(kernel, flush, tmp_path):
    """Scaled by 2^-130 every value is subnormal. red/atom .add.f32 flushes subnormal inputs and
    results to sign-preserving zero (PTX ISA atom; measured on the H200, where every element came
    back a signed zero); the bulk and tensor reductions keep them (bench/results/conformance_data.json)."""
    scale = 2.0 ** -130
    (tmp_path / "l.json").write_text(json.dumps(tensor_reduce_launch(kernel, scale)))
    r = kverify.run(str(TR), kernel_name=kernel, launch=str(tmp_path / "l.json"), seed=3)
    assert r.status == "complete", r.reason
    x, y = r.inputs["b"] * np.float32(scale), r.inputs["a"] * np.float32(scale)
    assert (np.abs(x) < 2.0 ** -126).all() and (x != 0).all()
    want = _ftz(_ftz(x) + _ftz(y)) if flush else x + y
    out = r.outputs["out"]
    assert np.array_equal(out.view(np.uint32), want.view(np.uint32))
    assert (out == 0).all() == flush
