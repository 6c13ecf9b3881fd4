"""Tests of the TMA / wgmma data semantics in kverify/semantics/memory_model/{byte_layout,tma,wgmma}.py.

Expected layouts are built here with independent, deliberately naive scatter code
(Python loops over elements, the zoo kernels' index formulas), never with the gathers
under test.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kverify.semantics.memory_model.byte_layout import bytes_to_values, swizzle_offset, values_to_bytes
from kverify.semantics.memory_model.tma import TensorMap, tma_load_tile, tma_store_tile
from kverify.semantics.memory_model.wgmma import (
    Descriptor,
    a_register_fragment_layout,
    accumulator_fragment_layout,
    decode_descriptor,
    encode_descriptor,
    fragment_to_matrix,
    load_operand,
    matrix_to_fragment,
    wgmma_mma,
)

ZOO = Path(__file__).parent / "zoo"
SPAN = {"32B": 32, "64B": 64, "128B": 128}


def naive_swizzle(off: int, mode: str) -> int:
    """Swizzle as 'chunk XOR row' arithmetic (not bit masks)."""
    if mode == "none":
        return off
    span = SPAN[mode]
    nchunks = span // 16
    line = off // 128  # 128-byte line
    chunk = (off // 16) % nchunks
    base = off - chunk * 16
    return base + ((chunk ^ (line % nchunks)) * 16)


# ----------------------------------------------------------------------------------------
# swizzle_offset
# ----------------------------------------------------------------------------------------


def test_swizzle_hand_cases():
    # 128B: chunk (bits 4-6) ^= line (bits 7-9)
    assert swizzle_offset(0x00, "128B") == 0x00
    assert swizzle_offset(0x10, "128B") == 0x10  # line 0: identity
    assert swizzle_offset(0x80 + 0x10, "128B") == 0x80 + (0x10 ^ 0x10)  # line 1, chunk 1 -> 0
    assert swizzle_offset(0x80, "128B") == 0x90  # line 1, chunk 0 -> 1
    assert swizzle_offset(0x3F0, "128B") == 0x380  # line 7, chunk 7 -> 0
    assert swizzle_offset(0x3F0 + 0x5, "128B") == 0x385  # low 4 bits untouched
    assert swizzle_offset(0x400 + 0x80, "128B") == 0x490  # repeats every 1024 bytes
    assert swizzle_offset(0x2A0, "128B") == 0x2F0  # line 5, chunk 2 -> 7
    # 64B: bits 4-5 ^= bits 7-8
    assert swizzle_offset(0x80, "64B") == 0x90
    assert swizzle_offset(0x190, "64B") == 0x1A0  # bits7-8 = 3, chunk 1 -> 2
    assert swizzle_offset(0x40, "64B") == 0x40  # 64-byte row 1 is still line 0
    assert swizzle_offset(0xC0, "64B") == 0xD0  # 64-byte row 3 = line 1
    assert swizzle_offset(0x1F0, "64B") == 0x1C0  # line 3, chunk 3 -> 0
    assert swizzle_offset(0x200 + 0x80, "64B") == 0x290  # repeats every 512 bytes
    assert swizzle_offset(0x2C0, "64B") == 0x2C0 ^ 0x10  # bit 6 (chunk 4) is not swizzled
    # 32B: bit 4 ^= bit 7
    assert swizzle_offset(0x80, "32B") == 0x90
    assert swizzle_offset(0x90, "32B") == 0x80
    assert swizzle_offset(0x100, "32B") == 0x100
    assert swizzle_offset(0x1A0, "32B") == 0x1B0
    assert swizzle_offset(0x120, "32B") == 0x120
    # none
    assert swizzle_offset(0x1234, "none") == 0x1234


@pytest.mark.parametrize("mode", ["none", "32B", "64B", "128B"])
def test_swizzle_matches_naive_and_is_permutation(mode):
    offs = np.arange(4096)
    sw = swizzle_offset(offs, mode)
    assert [naive_swizzle(int(o), mode) for o in offs] == sw.tolist()
    assert [swizzle_offset(int(o), mode) for o in offs[:300]] == sw[:300].tolist()
    # involution; permutation of every 128-byte line; 16-byte chunks move whole
    assert np.array_equal(swizzle_offset(sw, mode), offs)
    assert np.array_equal(np.sort(sw.reshape(-1, 128), axis=1), offs.reshape(-1, 128))
    assert np.array_equal(sw % 16, offs % 16)


def test_swizzle_mode_spellings():
    assert swizzle_offset(0x80, "CU_TENSOR_MAP_SWIZZLE_128B") == 0x90
    assert swizzle_offset(0x80, "swizzle_64b") == 0x90
    with pytest.raises(ValueError):
        swizzle_offset(0, "16B")


# ----------------------------------------------------------------------------------------
# TMA
# ----------------------------------------------------------------------------------------


def rowmajor_map(dtype, shape_rm, box_rm, swizzle="none", **kw):
    return TensorMap.from_spec({"dtype": dtype, "shape": list(shape_rm), "box": list(box_rm), "swizzle": swizzle, **kw})


def test_from_spec_orders():
    tm = TensorMap.from_spec({"dtype": "float16", "shape": [48, 64], "box": [16, 32], "swizzle": "64B"})
    assert tm.shape == (64, 48) and tm.box == (32, 16) and tm.strides == (128,)
    assert tm.swizzle == "64B" and tm.elem_strides == (1, 1) and tm.box_bytes == 16 * 32 * 2
    # sub-block of a wider buffer: the row pitch comes from the buffer
    tm = TensorMap.from_spec({"dtype": "float32", "shape": [8, 16], "box": [8, 8]}, base_shape_rowmajor=[8, 40])
    assert tm.shape == (16, 8) and tm.strides == (160,)
    # shape from the buffer
    tm = TensorMap.from_spec({"dtype": "uint8", "box": [2, 4, 16]}, base_shape_rowmajor=[3, 5, 32])
    assert tm.shape == (32, 5, 3) and tm.strides == (32, 160) and tm.box == (16, 4, 2)
    tm = TensorMap.from_spec({"dtype": "int32", "shape": [4, 8], "box": [4, 8], "strides": [64]})
    assert tm.strides == (64,)


def test_zoo_tma_tensor_load_spec():
    manifest = json.loads((ZOO / "tma_tensor_load" / "manifest.json").read_text())
    launch = manifest["variants"][0]["launch"]
    spec = launch["tensormaps"]["tmap"]
    buf = launch["buffers"][spec["buffer"]]
    tm = TensorMap.from_spec(spec, buf["shape"])
    assert tm.shape == (64, 64) and tm.box == (32, 32) and tm.strides == (256,)
    a = np.arange(64 * 64, dtype=np.float32).reshape(64, 64)
    for by in range(2):
        for bx in range(2):
            tile = tma_load_tile(a.view(np.uint8).reshape(-1), tm, (32 * bx, 32 * by))
            got = tile.view(np.float32).reshape(32, 32)
            assert np.array_equal(got, a[32 * by : 32 * by + 32, 32 * bx : 32 * bx + 32])


def test_load_no_swizzle_matches_slicing_and_accepts_typed_arrays():
    a = np.arange(20 * 24, dtype=np.int32).reshape(20, 24)
    tm = rowmajor_map("int32", a.shape, (5, 8))
    t1 = tma_load_tile(a.reshape(-1).view(np.uint8), tm, (8, 3))
    t2 = tma_load_tile(a, tm, (8, 3))  # any C-contiguous array is viewed as bytes
    assert np.array_equal(t1, t2)
    assert np.array_equal(t1.view(np.int32).reshape(5, 8), a[3:8, 8:16])


def test_oob_zero_fill_negative_and_past_end():
    a = (np.arange(16 * 16, dtype=np.float32) + 1).reshape(16, 16)
    tm = rowmajor_map("float32", a.shape, (8, 8))
    got = tma_load_tile(a.view(np.uint8).reshape(-1), tm, (-3, -5)).view(np.float32).reshape(8, 8)
    exp = np.zeros((8, 8), np.float32)
    exp[5:, 3:] = a[0:3, 0:5]
    assert np.array_equal(got, exp)
    got = tma_load_tile(a.view(np.uint8).reshape(-1), tm, (12, 10)).view(np.float32).reshape(8, 8)
    exp = np.zeros((8, 8), np.float32)
    exp[:6, :4] = a[10:16, 12:16]
    assert np.array_equal(got, exp)
    # completely outside
    got = tma_load_tile(a.view(np.uint8).reshape(-1), tm, (100, -100))
    assert not got.any() and got.size == tm.box_bytes


def test_oob_nan_fill():
    a = np.ones((16, 16), np.float16)
    tm = rowmajor_map("float16", a.shape, (8, 8), oob_fill="nan")
    got = tma_load_tile(a.view(np.uint8).reshape(-1), tm, (-4, 0)).view(np.uint16).reshape(8, 8)
    assert (got[:, :4] == 0x7FF7).all() and (got[:, 4:] == 0x3C00).all()  # the H200's NaN fill
    with pytest.raises(ValueError):
        rowmajor_map("int32", (16, 16), (8, 8), oob_fill="nan")


@pytest.mark.parametrize("mode", ["32B", "64B", "128B"])
def test_load_swizzled_hand_layout(mode):
    span = SPAN[mode]
    cols = span // 2  # f16 elements per swizzle row: inner box = span
    rows = 24
    # the raw uint16 bit patterns serve as labels; 104 columns = 208-byte row pitch
    labels = np.arange(40 * 104, dtype=np.uint16).reshape(40, 104)
    tm = rowmajor_map("float16", labels.shape, (rows, cols), swizzle=mode)
    tile = tma_load_tile(labels.view(np.uint8).reshape(-1), tm, (10, 7))
    assert tile.size == rows * span
    smem16 = tile.view(np.uint16)
    for r in range(rows):
        for c in range(cols):
            dense = r * span + 2 * c
            line = dense // 128
            chunk = (dense % span) // 16
            phys = (dense - (dense % span)) + ((chunk ^ (line % (span // 16))) * 16) + dense % 16
            assert smem16[phys // 2] == labels[7 + r, 10 + c], (r, c)


def test_128B_swizzle_row_r_chunk_xor():
    """The textbook picture: with 128-byte rows, chunk j of row r lands in chunk j ^ (r % 8)."""
    labels = np.arange(16 * 64, dtype=np.uint16).reshape(16, 64)
    tm = rowmajor_map("bfloat16", labels.shape, (16, 64), swizzle="128B")
    tile = tma_load_tile(labels.view(np.uint8).reshape(-1), tm, (0, 0)).view(np.uint16).reshape(16, 8, 8)
    for r in range(16):
        for j in range(8):
            assert np.array_equal(tile[r, j ^ (r % 8)], labels[r, 8 * j : 8 * j + 8])


def test_smaller_inner_box_than_span_and_unaligned_destination():
    labels = np.arange(32 * 32, dtype=np.uint16).reshape(32, 32)
    tm = rowmajor_map("float16", labels.shape, (16, 32), swizzle="128B")  # 64-byte rows
    tile = tma_load_tile(labels.view(np.uint8).reshape(-1), tm, (0, 0))
    for r in range(16):
        for c in range(32):
            dense = r * 64 + 2 * c
            assert tile.view(np.uint16)[naive_swizzle(dense, "128B") // 2] == labels[r, c]
    # destination at 0x80 mod 1024: the pattern follows absolute address bits
    tile2 = tma_load_tile(labels.view(np.uint8).reshape(-1), tm, (0, 0), smem_addr=0x480)
    for r in range(16):
        for c in range(32):
            dense = r * 64 + 2 * c
            assert tile2.view(np.uint16)[(naive_swizzle(0x480 + dense, "128B") - 0x480) // 2] == labels[r, c]
    with pytest.raises(ValueError, match="128-byte aligned"):
        tma_load_tile(labels.view(np.uint8).reshape(-1), tm, (0, 0), smem_addr=0x40)


def test_partial_swizzled_line_is_refused():
    # 128B swizzle, 5 rows of 32 bytes = 160 bytes: the partial line 1 (chunks 0-1) maps to
    # chunks 1-0, inside the tile: fine.  34 rows of 16 bytes = 544 bytes: the partial line 4
    # (chunks 0-1) would go to chunks 4-5, past the end of the tile: refused.
    tm = rowmajor_map("float16", (8, 16), (5, 16), swizzle="128B")
    tma_load_tile(np.zeros(256, np.uint8), tm, (0, 0))
    tm = rowmajor_map("uint8", (64, 16), (34, 16), swizzle="128B")  # 544 bytes
    with pytest.raises(ValueError, match="not modelled"):
        tma_load_tile(np.zeros(1024, np.uint8), tm, (0, 0))


def test_validation_errors():
    with pytest.raises(ValueError, match="swizzle span"):
        rowmajor_map("float16", (64, 128), (8, 128), swizzle="128B")  # 256-byte rows
    with pytest.raises(ValueError, match="swizzle span"):
        rowmajor_map("float32", (64, 64), (8, 32), swizzle="64B")  # 128 > 64
    with pytest.raises(ValueError, match="multiple of 16"):
        rowmajor_map("float16", (64, 64), (8, 4))  # 8-byte inner box
    with pytest.raises(ValueError, match="multiples of 16"):
        TensorMap("float32", (10, 10), (40,), (8, 8))  # row pitch 40 bytes
    with pytest.raises(ValueError, match="box dims"):
        rowmajor_map("uint8", (1024, 1024), (512, 16))
    with pytest.raises(ValueError, match="coordinates"):
        tm = rowmajor_map("float32", (8, 8), (8, 8))
        tma_load_tile(np.zeros(256, np.uint8), tm, (0,))
    with pytest.raises(ValueError):
        TensorMap("float32", (8, 8), (32,), (8, 8), elem_strides=(9, 1))
    with pytest.raises(IndexError):
        tma_load_tile(np.zeros(100, np.uint8), rowmajor_map("float32", (8, 8), (8, 8)), (0, 0))


def test_3d_and_elem_strides():
    a = np.arange(4 * 6 * 16, dtype=np.float32).reshape(4, 6, 16)
    tm = rowmajor_map("float32", a.shape, (2, 3, 8))
    got = tma_load_tile(a.view(np.uint8).reshape(-1), tm, (4, 2, 1)).view(np.float32).reshape(2, 3, 8)
    assert np.array_equal(got, a[1:3, 2:5, 4:12])
    # traversal stride 2 in the row dim: 4 rows of the box of 7 -> ceil(7/2) = 4 rows
    b = np.arange(16 * 8, dtype=np.float32).reshape(16, 8)
    tm = TensorMap("float32", (8, 16), (32,), (8, 7), elem_strides=(1, 2))
    assert tm.box_counts == (8, 4) and tm.box_bytes == 128
    got = tma_load_tile(b.view(np.uint8).reshape(-1), tm, (0, 3)).view(np.float32).reshape(4, 8)
    assert np.array_equal(got, b[3:11:2])


@settings(max_examples=60, deadline=None)
@given(
    mode=st.sampled_from(["none", "32B", "64B", "128B"]),
    dtype=st.sampled_from(["uint8", "float16", "float32"]),
    rows=st.integers(1, 40),
    box_rows=st.integers(1, 20),
    data=st.data(),
)
def test_store_load_round_trip(mode, dtype, rows, box_rows, data):
    esize = {"uint8": 1, "float16": 2, "float32": 4}[dtype]
    span = SPAN.get(mode, 128)
    inner_bytes = data.draw(st.sampled_from([b for b in (16, 32, 64, 128) if b <= span]))
    box_cols = inner_bytes // esize
    if mode != "none" and (box_rows * inner_bytes) % 128:
        box_rows = -(-box_rows * inner_bytes // 128) * 128 // inner_bytes  # whole 128-B lines
    cols = data.draw(st.integers(1, 3)) * 16 // esize * data.draw(st.integers(1, 4))
    pitch = -(-cols * esize // 16) * 16
    x = data.draw(st.integers(-box_cols, cols))
    y = data.draw(st.integers(-box_rows, rows))
    tm = TensorMap(dtype, (cols, rows), (pitch,), (box_cols, box_rows), swizzle=mode)
    rng = np.random.default_rng(data.draw(st.integers(0, 2**31)))
    g = rng.integers(0, 256, size=pitch * rows, dtype=np.uint8)
    tile = tma_load_tile(g, tm, (x, y))
    # store(load) leaves global memory unchanged
    g2 = g.copy()
    tma_store_tile(g2, tm, (x, y), tile)
    assert np.array_equal(g2, g)
    # store writes exactly the in-bounds box elements, then load(store(t)) == t in bounds
    new = rng.integers(0, 256, size=tm.box_bytes, dtype=np.uint8)
    g3 = np.zeros_like(g)
    tma_store_tile(g3, tm, (x, y), new)
    back = tma_load_tile(g3, tm, (x, y))
    # compare on the dense (unswizzled) image, element by element
    pos = swizzle_offset(np.arange(tm.box_bytes), mode)
    dense_new = new[pos].reshape(box_rows, box_cols, esize)
    dense_back = back[pos].reshape(box_rows, box_cols, esize)
    written = np.zeros(g.size, bool)
    for r in range(box_rows):
        for c in range(box_cols):
            gr, gc = y + r, x + c
            if 0 <= gr < rows and 0 <= gc < cols:
                assert np.array_equal(dense_back[r, c], dense_new[r, c])
                o = gr * pitch + gc * esize
                assert np.array_equal(g3[o : o + esize], dense_new[r, c])
                written[o : o + esize] = True
            else:
                assert not dense_back[r, c].any()
    assert not g3[~written].any()


def test_store_into_typed_array_in_place():
    out = np.zeros((8, 32), np.float16)
    tm = rowmajor_map("float16", out.shape, (8, 32), swizzle="64B")
    vals = np.arange(256, dtype=np.float16).reshape(8, 32)
    smem = tma_load_tile(vals, tm, (0, 0))
    tma_store_tile(out, tm, (0, 0), smem)
    assert np.array_equal(out, vals)


# ----------------------------------------------------------------------------------------
# descriptors
# ----------------------------------------------------------------------------------------


def test_descriptor_known_encoding():
    # the zoo kernel's make_smem_desc for sA at 0x400: LBO 1024, SBO 128
    desc = (0x400 >> 4) | ((1024 >> 4) << 16) | ((128 >> 4) << 32)
    d = decode_descriptor(desc)
    assert d == Descriptor(0x400, 1024, 128, 0, "none")
    assert decode_descriptor(1 << 62).swizzle == "128B"
    assert decode_descriptor(2 << 62).swizzle == "64B"
    assert decode_descriptor(3 << 62).swizzle == "32B"
    assert decode_descriptor(5 << 49).base_offset == 5
    # DeepGEMM/CUTLASS-style 128B K-major descriptor: LBO field 1 (unused), SBO 1024
    d = decode_descriptor(encode_descriptor(0x1000, 16, 1024, 0, "128B"))
    assert (d.start_address, d.lbo, d.sbo, d.swizzle) == (0x1000, 16, 1024, "128B")
    assert encode_descriptor(0x3FFF0, 0x3FFF0, 0x3FFF0, 7, "32B") == (
        0x3FFF | 0x3FFF << 16 | 0x3FFF << 32 | 7 << 49 | 3 << 62
    )
    with pytest.raises(ValueError):
        encode_descriptor(0x408, 0, 0)
    with pytest.raises(ValueError):
        encode_descriptor(1 << 18, 0, 0)


@settings(max_examples=200, deadline=None)
@given(
    addr=st.integers(0, 0x3FFF),
    lbo=st.integers(0, 0x3FFF),
    sbo=st.integers(0, 0x3FFF),
    base=st.integers(0, 7),
    sw=st.sampled_from(["none", "128B", "64B", "32B"]),
)
def test_descriptor_round_trip(addr, lbo, sbo, base, sw):
    d = Descriptor(addr << 4, lbo << 4, sbo << 4, base, sw)
    enc = encode_descriptor(d)
    assert 0 <= enc < 2**64
    assert decode_descriptor(enc) == d
    # reserved bits are ignored on decode
    reserved = (0x3 << 14) | (0x3 << 30) | (0x7 << 46) | (0x3FF << 52)
    assert decode_descriptor(enc | reserved) == d
    assert encode_descriptor(decode_descriptor(enc)) == enc


# ----------------------------------------------------------------------------------------
# load_operand
# ----------------------------------------------------------------------------------------


def scatter_zoo_wgmma_tile(a: np.ndarray, b: np.ndarray, base_a: int, base_b: int, smem_size: int):
    """numpy replay of wgmma_tile.cu's shared-memory fill (thread loop, a_index/b_index)."""
    M, N, K = 64, 8, 16
    A_LBO, A_SBO, B_LBO, B_SBO = 1024, 128, 128, 256
    sA = np.zeros(smem_size // 2, np.uint16)  # f16 units, indexed by shared address / 2
    a_bits = a.reshape(-1).view(np.uint16)
    b_bits = b.reshape(-1).view(np.uint16)

    def a_index(m, k):
        return ((m % 8) * 16 + (k % 8) * 2 + (m // 8) * A_SBO + (k // 8) * A_LBO) // 2

    def b_index(k, n):
        return ((n % 8) * 16 + (k % 8) * 2 + (n // 8) * B_SBO + (k // 8) * B_LBO) // 2

    for tid in range(128):
        for j in range(M * K // 128):
            e = tid + j * 128
            sA[base_a // 2 + a_index(e // K, e % K)] = a_bits[e]
        sA[base_b // 2 + b_index(tid // N, tid % N)] = b_bits[tid]
    return sA.view(np.uint8)


def test_zoo_wgmma_tile_layout_and_result():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((64, 16)).astype(np.float16)
    b = rng.standard_normal((16, 8)).astype(np.float16)
    base_a, base_b = 0x400, 0xC00  # 128-aligned, as __align__(128) would place them
    smem = scatter_zoo_wgmma_tile(a, b, base_a, base_b, 0x1000)
    desc_a = (base_a >> 4) | ((1024 >> 4) << 16) | ((128 >> 4) << 32)
    desc_b = (base_b >> 4) | ((128 >> 4) << 16) | ((256 >> 4) << 32)
    A = load_operand(smem, desc_a, 64, 16, "float16", "K")
    B = load_operand(smem, decode_descriptor(desc_b), 8, 16, "float16", "K")
    assert A.dtype == np.float32
    assert np.array_equal(A, a.astype(np.float32))
    assert np.array_equal(B, b.T.astype(np.float32))
    D = wgmma_mma(None, A, B, scale_d=False)
    # the kernel's per-thread output stores, driven by the accumulator layout
    frag = matrix_to_fragment(D, accumulator_fragment_layout(8))
    out = np.zeros((64, 8), np.float32)
    for tid in range(128):
        warp, lane = tid // 32, tid % 32
        row, col = warp * 16 + lane // 4, (lane % 4) * 2
        out[row, col], out[row, col + 1], out[row + 8, col], out[row + 8, col + 1] = frag[tid]
    import importlib.util

    spec = importlib.util.spec_from_file_location("wgmma_tile_ref", ZOO / "wgmma_tile" / "ref.py")
    ref = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ref)
    exp = ref.wgmma_tile({"a": a, "b": b}, {})["out"]
    np.testing.assert_allclose(out, exp, rtol=1e-5, atol=1e-5)


def scatter_kmajor_noswizzle(mat_bits: np.ndarray, esize: int, lbo: int, sbo: int, base: int, size: int):
    """Write rows x K elements (raw bytes per element) into core matrices, element by element."""
    smem = np.zeros(size, np.uint8)
    per_row = 16 // esize
    rows, k = mat_bits.shape[:2]
    for r in range(rows):
        for c in range(k):
            core_r, core_k = r // 8, c // per_row
            inner = (r % 8) * 16 + (c % per_row) * esize
            addr = base + core_r * sbo + core_k * lbo + inner
            smem[addr : addr + esize] = mat_bits[r, c]
    return smem


@pytest.mark.parametrize(
    "dtype,k", [("float16", 16), ("bfloat16", 16), ("float32", 8), ("tf32", 8), ("int8", 32), ("uint8", 32)]
)
def test_load_operand_kmajor_noswizzle_generic(dtype, k):
    rng = np.random.default_rng(7)
    rows = 24
    if dtype in ("int8", "uint8"):
        vals = rng.integers(-128 if dtype == "int8" else 0, 128 if dtype == "int8" else 256, (rows, k)).astype(dtype)
    else:
        vals = rng.standard_normal((rows, k)).astype(np.float32)
    raw = values_to_bytes(vals, dtype)
    esize = raw.shape[-1]
    lbo, sbo, base = 64 * 16 * 3, 256, 0x200  # K groups far apart, M groups with a gap
    smem = scatter_kmajor_noswizzle(raw, esize, lbo, sbo, base, 0x2000)
    got = load_operand(smem, encode_descriptor(base, lbo, sbo), rows, k, dtype, "K")
    exp = bytes_to_values(raw, dtype)
    assert got.shape == (rows, k)
    assert np.array_equal(got, exp)
    if dtype == "tf32":  # low 13 mantissa bits are ignored
        assert np.array_equal(got.view(np.uint32) & 0x1FFF, np.zeros_like(got, np.uint32))


@pytest.mark.parametrize("mode", ["32B", "64B", "128B"])
def test_load_operand_kmajor_swizzled_independent_scatter(mode):
    span = SPAN[mode]
    rows, k = 64, 16  # K = 32 bytes of f16, as one wgmma k16 reads
    rng = np.random.default_rng(3)
    atom_cols = span // 2
    full = rng.standard_normal((rows, atom_cols)).astype(np.float16)
    bits = full.view(np.uint16)
    base, sbo = 0x800, 8 * span  # 8-row groups packed back to back
    smem16 = np.zeros(0x4000 // 2, np.uint16)
    for r in range(rows):
        for c in range(atom_cols):
            # row r of the tile is `span` bytes; chunk j of row r goes to chunk j ^ (line % n)
            row_addr = base + (r // 8) * sbo + (r % 8) * span
            byte = 2 * c
            j = byte // 16
            line = row_addr // 128
            phys = row_addr + ((j ^ (line % (span // 16))) * 16) + byte % 16
            smem16[phys // 2] = bits[r, c]
    smem = smem16.view(np.uint8)
    for kb in range(atom_cols // k):  # advance the start address by 32 bytes per k-block
        desc = encode_descriptor(base + kb * 32, 16, sbo, 0, mode)
        got = load_operand(smem, desc, rows, k, "float16", "K")
        assert np.array_equal(got, full[:, kb * k : (kb + 1) * k].astype(np.float32)), kb
    with pytest.raises(ValueError, match="exceeds"):
        load_operand(smem, encode_descriptor(base, 16, sbo, 0, mode), rows, atom_cols * 2, "float16", "K")


def test_tma_128B_tile_feeds_wgmma_kmajor():
    """A TMA 128B-swizzled 64x64 bf16 tile is the canonical K-major SW128 wgmma operand."""
    rng = np.random.default_rng(5)
    g = rng.standard_normal((128, 64)).astype(np.float32)
    gbits = values_to_bytes(g, "bfloat16")
    gvals = bytes_to_values(gbits, "bfloat16")
    tm = rowmajor_map("bfloat16", (128, 64), (64, 64), swizzle="128B")
    smem = np.zeros(0x6000, np.uint8)
    base = 0x2000
    smem[base : base + tm.box_bytes] = tma_load_tile(gbits.reshape(-1), tm, (0, 64), smem_addr=base)
    for kb in range(4):
        got = load_operand(smem, encode_descriptor(base + 32 * kb, 16, 1024, 0, "128B"), 64, 16, "bfloat16", "K")
        assert np.array_equal(got, gvals[64:128, 16 * kb : 16 * kb + 16])


def test_load_operand_mn_major_noswizzle_independent_scatter():
    rng = np.random.default_rng(11)
    n, k = 16, 16
    b = rng.standard_normal((k, n)).astype(np.float16)  # B as K x N, N contiguous
    bits = b.view(np.uint16)
    lbo, sbo, base = 512, 128, 0x100  # LBO: next 8 K-rows; SBO: next 8 N-columns
    smem16 = np.zeros(0x1000 // 2, np.uint16)
    for kk in range(k):
        for nn in range(n):
            # core matrix = 8 K-rows x 8 N-values (16 bytes per K-row)
            addr = base + (nn // 8) * sbo + (kk // 8) * lbo + (kk % 8) * 16 + (nn % 8) * 2
            smem16[addr // 2] = bits[kk, nn]
    got = load_operand(smem16.view(np.uint8), encode_descriptor(base, lbo, sbo), n, k, "float16", "MN")
    assert np.array_equal(got, b.T.astype(np.float32))


def test_tma_128B_tile_feeds_wgmma_mn_major():
    """A row-major K x N f16 tile (N = 64 contiguous) loaded by TMA with 128B swizzle is an
    MN-major SW128 operand with SBO = 1024 (next 8 K-rows)."""
    rng = np.random.default_rng(9)
    g = rng.standard_normal((32, 64)).astype(np.float16)
    tm = rowmajor_map("float16", g.shape, (32, 64), swizzle="128B")
    smem = np.zeros(0x2000, np.uint8)
    smem[0x400 : 0x400 + tm.box_bytes] = tma_load_tile(g.view(np.uint8).reshape(-1), tm, (0, 0), 0x400)
    for kb in range(2):
        desc = encode_descriptor(0x400 + kb * 2048, 0, 1024, 0, "128B")
        got = load_operand(smem, desc, 64, 16, "float16", "MN")
        assert np.array_equal(got, g[16 * kb : 16 * kb + 16].T.astype(np.float32))


def test_load_operand_rejects_base_offset_and_out_of_range():
    smem = np.zeros(0x800, np.uint8)
    with pytest.raises(NotImplementedError):
        load_operand(smem, encode_descriptor(0x80, 16, 1024, 1, "128B"), 8, 16, "float16", "K")
    with pytest.raises(IndexError):
        load_operand(smem, encode_descriptor(0x700, 1024, 128), 64, 16, "float16", "K")
    with pytest.raises(ValueError):
        load_operand(smem, encode_descriptor(0, 0, 0), 8, 16, "float16", "XY")


# ----------------------------------------------------------------------------------------
# wgmma_mma and value conversions
# ----------------------------------------------------------------------------------------


def test_wgmma_mma_scale_and_negation():
    rng = np.random.default_rng(2)
    a = rng.standard_normal((64, 16)).astype(np.float16).astype(np.float32)
    b = rng.standard_normal((32, 16)).astype(np.float16).astype(np.float32)
    d = rng.standard_normal((64, 32)).astype(np.float32)
    exact = a.astype(np.float64) @ b.astype(np.float64).T
    assert np.array_equal(wgmma_mma(d, a, b, False), exact.astype(np.float32))
    assert np.array_equal(wgmma_mma(None, a, b, False), exact.astype(np.float32))
    assert np.array_equal(wgmma_mma(d, a, b, True), (exact + d).astype(np.float32))
    assert np.array_equal(wgmma_mma(d, a, b, True, neg_a=True), (-exact + d).astype(np.float32))
    assert np.array_equal(wgmma_mma(d, a, b, True, neg_a=True, neg_b=True), (exact + d).astype(np.float32))
    nan_d = np.full((64, 32), np.nan, np.float32)
    assert not np.isnan(wgmma_mma(nan_d, a, b, False)).any()
    assert wgmma_mma(d, a, b, True).dtype == np.float32
    with pytest.raises(ValueError):
        wgmma_mma(None, a, b, True)
    with pytest.raises(ValueError):
        wgmma_mma(None, a, b[:, :8], False)


def test_value_conversions():
    assert bytes_to_values(np.array([0x80, 0x3F], np.uint8), "bfloat16").tolist() == [1.0]
    assert bytes_to_values(np.array([0x00, 0x3C], np.uint8), "float16").tolist() == [1.0]
    x = np.array([1.0, -2.5, 3.140625, 1e-3], np.float32)
    assert np.array_equal(bytes_to_values(values_to_bytes(x, "float32"), "float32"), x)
    bf = bytes_to_values(values_to_bytes(x, "bfloat16"), "bfloat16")
    assert np.allclose(bf, x, rtol=2**-8)
    # round to nearest even for bf16: 1 + 2^-8 is a tie -> 1.0; 1 + 3*2^-8 -> 1 + 2^-6
    t = np.array([1 + 2**-8, 1 + 3 * 2**-8], np.float32)
    assert bytes_to_values(values_to_bytes(t, "bfloat16"), "bfloat16").tolist() == [1.0, 1 + 2**-6]
    assert bytes_to_values(values_to_bytes(np.array([-5], np.int32), "int32"), "int32").tolist() == [-5]


# ----------------------------------------------------------------------------------------
# register fragments
# ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("n", list(range(8, 257, 8)))
def test_accumulator_layout_is_a_bijection(n):
    lay = accumulator_fragment_layout(n)
    assert lay.shape == (128, n // 2, 2)
    flat = lay[..., 0] * n + lay[..., 1]
    assert np.array_equal(np.sort(flat.reshape(-1)), np.arange(64 * n))
    # each warp owns rows 16w .. 16w+15
    assert np.array_equal(lay[:, :, 0] // 16, np.repeat(np.arange(4), 32)[:, None].repeat(n // 2, 1))


def test_accumulator_layout_matches_zoo_comment_and_string_form():
    lay = accumulator_fragment_layout("m64n8k16")
    for t in range(128):
        w, l = t // 32, t % 32
        assert lay[t].tolist() == [
            [16 * w + l // 4, 2 * (l % 4)],
            [16 * w + l // 4, 2 * (l % 4) + 1],
            [16 * w + l // 4 + 8, 2 * (l % 4)],
            [16 * w + l // 4 + 8, 2 * (l % 4) + 1],
        ]
    lay = accumulator_fragment_layout(256)
    assert lay[37, 13].tolist() == [16 + 1, 8 * 3 + 2 + 1]  # t=37: w=1, l=5; i=13: (i//2)%2 = 0
    assert lay[37, 14].tolist() == [16 + 1 + 8, 8 * 3 + 2]  # i=14: (i//2)%2 = 1
    with pytest.raises(ValueError):
        accumulator_fragment_layout(12)
    d = np.arange(64 * 24, dtype=np.float32).reshape(64, 24)
    lay = accumulator_fragment_layout(24)
    assert np.array_equal(fragment_to_matrix(matrix_to_fragment(d, lay), lay, d.shape), d)


@pytest.mark.parametrize("dtype,k,count", [("float16", 16, 8), ("bfloat16", 16, 8), ("tf32", 8, 4), ("int8", 32, 16)])
def test_a_register_layout_is_a_bijection(dtype, k, count):
    lay = a_register_fragment_layout(dtype)
    assert lay.shape == (128, count, 2)
    flat = lay[..., 0] * k + lay[..., 1]
    assert np.array_equal(np.sort(flat.reshape(-1)), np.arange(64 * k))


def test_a_register_layout_f16_is_mma_m16n8k16_per_warp():
    lay = a_register_fragment_layout("float16")
    for t in (0, 5, 33, 127):
        w, l = t // 32, t % 32
        g, q = l // 4, l % 4
        exp = [(g, 2 * q), (g, 2 * q + 1), (g + 8, 2 * q), (g + 8, 2 * q + 1),
               (g, 2 * q + 8), (g, 2 * q + 9), (g + 8, 2 * q + 8), (g + 8, 2 * q + 9)]
        assert [tuple(x) for x in lay[t].tolist()] == [(16 * w + r, c) for r, c in exp]
