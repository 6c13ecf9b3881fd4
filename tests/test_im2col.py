"""TMA im2col mode (``cp.async.bulk.tensor.{3d,4d,5d}...im2col``, PTX ISA §5.5.4, §9.7.9.27;
``cuTensorMapEncodeIm2col``): the interpreter's loads against a numpy im2col computed here,
the static tx-byte count, a seeded expect-tx bug, launch-spec validation, capture decoding and
the conformance cases' CPU side. tests/data/im2col/conv_im2col.cu: the A-operand loads of an
implicit-GEMM 3x3 convolution (NHWC, padding 1)."""
from __future__ import annotations

import json
import re

import numpy as np
import pytest

import kverify
from kverify.capture import specs
from kverify.semantics.memory_model import tma
from kverify.verifier.cli import main

D = "tests/data/im2col"
LAUNCH = f"{D}/launch.json"


def _status(rep):
    return {o.id: o.status for o in rep.obligations}


def _numpy_im2col(x: np.ndarray, rows: int) -> np.ndarray:
    """im2col of an NHWC input for a 3x3 filter, padding 1, stride 1: row m = output pixel m
    (n, oh, ow in order), column (r*3 + s)*C + c = input pixel (oh + r - 1, ow + s - 1), zero
    outside the image; rows past the last image are zero."""
    n_, h, w, c = x.shape
    xp = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    a = np.zeros((rows, 9 * c), x.dtype)
    m = 0
    for n in range(n_):
        for oh in range(h):
            for ow in range(w):
                if m < rows:
                    a[m] = np.concatenate([xp[n, oh + r, ow + s] for r in range(3) for s in range(3)])
                m += 1
    return a


def test_conv_im2col_loads_equal_a_numpy_im2col_including_the_padding():
    res = kverify.run(f"{D}/conv_im2col.ptx", launch=LAUNCH)
    assert res.status == "complete", res.reason
    x, out = res.inputs["x"], res.outputs["out"]
    want = _numpy_im2col(x, 64)
    assert np.array_equal(out, want)
    # the padding: output pixel 0's top-left tap and CTA 1's last four rows (past image 1) are zero
    assert np.all(out[0, :8] == 0) and np.all(out[60:] == 0) and np.count_nonzero(out[0, 32:40]) == 8
    # CTA 0's rows 30 and 31 wrapped into image 1: their center tap is x[1, 0, 0] and x[1, 0, 1]
    assert np.array_equal(out[30, 32:40], x[1, 0, 0]) and np.array_equal(out[31, 32:40], x[1, 0, 1])


def test_conv_im2col_verifies_with_the_tx_bytes_proved():
    rep = kverify.check(f"{D}/conv_im2col.ptx", launch=LAUNCH)
    assert rep.verdict == "verified" and rep.findings == []
    st = _status(rep)
    assert st["mbarrier.tx-bytes"] == "proved"  # 9 loads x 32 pixels x 8 channels x 4 bytes = 9216
    assert st["mbarrier.parity"] == "proved" and st["mbarrier.arrivals"] == "proved"


def test_expect_tx_of_the_bounding_box_is_a_tx_mismatch_with_line_and_bytes(capsys):
    assert main(["check", f"{D}/conv_im2col__box_bytes.ptx", "--launch", LAUNCH]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0] == (f"{D}/conv_im2col.cu:93:5: error[mbarrier.tx-mismatch]: mbarrier bar of CTA (0,0,0) is stuck "
                      "in phase 0 with tx-count -576: more bytes completed than expected (the expect-tx bytes do not "
                      "match the copies that signal it; §9.7.13.15.5) (ptx 73)")
    static = next(line for line in out if "announces" in line)
    assert static.startswith(f"{D}/conv_im2col.cu:93:5: error[mbarrier.tx-mismatch]: conv_im2col.cu:93:5 (ptx 73) "
                             "announces 8640 tx bytes on the barrier at shared address 0x2400 but the copies "
                             "signalling it in the same phase deliver 9216 (conv_im2col.cu:98:9 (ptx 90)")


def _spec_with(tmap_changes: dict, tmp_path, drop=()):
    d = json.loads(open(LAUNCH).read())
    t = d["tensormaps"]["tmap"]
    t.update(tmap_changes)
    for k in drop:
        t.pop(k)
    p = tmp_path / "launch.json"
    p.write_text(json.dumps(d, indent=1))
    return p


@pytest.mark.parametrize("change,drop,where,message", [
    ({"channels_per_pixel": 6}, (), "channels_per_pixel", "a pixel's channels take 6 x 4 = 24 bytes; they must be a "
     "multiple of 16 bytes"),
    ({"pixels_per_column": 2048}, (), "pixels_per_column", "expected an integer in [1, 1024], got 2048"),
    ({"lower_corner": [-1]}, (), "lower_corner", "a rank-4 im2col map has 2 spatial dim(s): expected 2 value(s), "
     "got [-1]"),
    ({"upper_corner": [-1, 200]}, (), "upper_corner[1]", "a corner of a rank-4 im2col map is in [-128, 127], got 200"),
    ({"lower_corner": [3, 0], "upper_corner": [-3, 0]}, (), "upper_corner[0]",
     "the bounding box is empty along spatial dim 0"),
    ({"box": [32, 8]}, (), None, "unknown key(s) box for an im2col tensor map"),
    ({}, ("channels_per_pixel",), None, "an im2col tensor map needs channels_per_pixel"),
    ({"mode": "gather4"}, (), "mode", 'expected "tile" or "im2col", got "gather4"'),
    ({"swizzle": "32B"}, (), "channels_per_pixel", "a pixel's channels take 32 bytes, more than the 32B swizzle span"
     " of 32 bytes"),
])
def test_bad_im2col_spec_fields_exit_2_with_the_key_and_position(tmp_path, capsys, change, drop, where, message):
    if change.get("swizzle") == "32B":
        change = dict(change, channels_per_pixel=16)  # 64 bytes a pixel
        message = "a pixel's channels take 64 bytes, more than the 32B swizzle span of 32 bytes"
    p = _spec_with(change, tmp_path, drop)
    assert main(["check", f"{D}/conv_im2col.ptx", "--launch", str(p)]) == 2
    cap = capsys.readouterr()
    err = next(line for line in (cap.out + cap.err).splitlines() if "launch spec:" in line)
    assert "Traceback" not in cap.out + cap.err
    key = "tensormaps.tmap" + (f".{where}" if where else "")
    assert f"launch spec: {key}: {message}" in err, err
    assert err.startswith(f"{p}:")
    line, col = (int(v) for v in err.split(":")[1:3])
    assert line > 1 and col > 1


def test_an_im2col_copy_through_a_tile_map_is_unknown_not_clean(tmp_path):
    d = json.loads(open(LAUNCH).read())
    d["tensormaps"]["tmap"] = {"dtype": "float32", "shape": [60, 8], "box": [32, 8], "buffer": "x",
                               "strides": [32]}
    p = tmp_path / "launch.json"
    p.write_text(json.dumps(d))
    res = kverify.run(f"{D}/conv_im2col.ptx", launch=str(p))
    assert res.status == "unsupported"
    assert "a .im2col copy through the tile-mode tensor map" in res.reason


def test_im2col_load_walks_the_box_w_then_h_then_the_next_image():
    x = np.arange(2 * 3 * 4 * 4, dtype=np.float32).reshape(2, 3, 4, 4)  # N H W C
    m = tma.map_from_spec({"mode": "im2col", "dtype": "float32", "shape": [2, 3, 4, 4], "lower_corner": [0, 1],
                           "upper_corner": [-1, -1], "channels_per_pixel": 4, "pixels_per_column": 8}, x.shape)
    assert m.box_bytes == 8 * 4 * 4 and [m.box_extent(i) for i in range(2)] == [2, 2]  # W in [1, 2], H in [0, 1]
    got = tma.tma_load_im2col(x, m, [0, 2, 1, 0], [1, 1]).view(np.float32).reshape(8, 4)
    # box walk from (w=2, h=1, n=0): (2,1,0) (1,0,1) (2,0,1) (1,1,1) (2,1,1) (1,0,2)... shifted by (+1, +1)
    want = [x[0, 2, 3], x[1, 1, 2], x[1, 1, 3], x[1, 2, 2], x[1, 2, 3], 0, 0, 0]
    assert np.array_equal(got, np.array([np.broadcast_to(v, 4) for v in want], np.float32))


def test_im2col_nan_fill_and_unmodelled_cases():
    x = np.ones((1, 4, 4), np.float32)  # N W C
    m = tma.Im2colMap("float32", (4, 4, 1), (16, 64), (-1,), (0,), 4, 6, oob_fill="nan")
    got = tma.tma_load_im2col(x, m, [0, -1, 0], [0]).view(np.uint32).reshape(6, 4)
    # the NaN fill as the H200 writes it (bench/results/conformance_im2col.json)
    assert np.all(got[0] == 0x7FF77FF7) and np.all(got[1:5] == 0x3F800000) and np.all(got[5] == 0x7FF77FF7)
    with pytest.raises(tma.Im2colUnsupported, match="outside the bounding box"):
        tma.tma_load_im2col(x, m, [0, 4, 0], [0])
    with pytest.raises(tma.Im2colUnsupported, match=r"offsets \[70000\] outside \[0, 65535\]"):
        tma.tma_load_im2col(x, m, [0, 0, 0], [70000])
    strided = tma.Im2colMap("float32", (4, 4, 1), (16, 64), (-1,), (0,), 4, 6, elem_strides=(1, 2, 1))
    with pytest.raises(tma.Im2colUnsupported, match="element strides"):
        tma.tma_load_im2col(x, strided, [0, -1, 0], [0])
    with pytest.raises(ValueError, match="rank 3, 4 or 5"):
        tma.Im2colMap("float32", (4, 4), (16,), (), (), 4, 6)


def test_capture_decodes_an_im2col_record_into_the_launch_spec_form():
    rec = {"api": "cuTensorMapEncodeIm2col", "dtype": 7, "rank": 4, "addr": 0x1000, "dims": [8, 6, 5, 2],
           "strides": [32, 192, 960], "lower_corner": [-1, -1], "upper_corner": [-1, -1], "channels_per_pixel": 8,
           "pixels_per_column": 32, "element_strides": [1, 1, 1, 1], "interleave": 0, "swizzle": 0,
           "l2_promotion": 2, "oob_fill": 0}
    buffers = {}
    spec, why = specs._tensormap_spec(rec, {0x1000: 1920}, {(1, 0x1000): "alloc0"}, 1, buffers)
    assert why is None
    assert spec == {"mode": "im2col", "dtype": "float32", "shape": [2, 5, 6, 8], "strides": [960, 192, 32],
                    "lower_corner": [-1, -1], "upper_corner": [-1, -1], "channels_per_pixel": 8,
                    "pixels_per_column": 32, "swizzle": "none", "oob_fill": "zero", "buffer": "alloc0"}
    assert buffers == {"alloc0": {"dtype": "float32", "shape": [480]}}
    # the decoded form is what the interpreter's map reads: the same geometry as the zoo launch's
    assert tma.map_from_spec(spec) == tma.map_from_spec(json.load(open(LAUNCH))["tensormaps"]["tmap"], [2, 5, 6, 8])
    rec5 = dict(rec, rank=5, dims=[16, 4, 4, 4, 1], strides=[64, 256, 1024, 4096], lower_corner=[0, -1, -2],
                upper_corner=[0, 1, 2], element_strides=[1, 2, 1, 1, 1], swizzle=3, oob_fill=1)
    spec5, _ = specs._tensormap_spec(rec5, {0x1000: 4096}, {(1, 0x1000): "alloc0"}, 1, {})
    assert spec5["lower_corner"] == [-2, -1, 0] and spec5["upper_corner"] == [2, 1, 0]
    assert spec5["element_strides"] == [1, 1, 1, 2, 1] and spec5["swizzle"] == "128B" and spec5["oob_fill"] == "nan"


def test_conformance_im2col_cases_build_and_the_interpreter_matches_a_direct_reading(tmp_path):
    from conformance.im2col import CASES, reference
    from kverify.launch import LaunchSpec
    from kverify.semantics.interpreter import run_kernel
    from kverify.semantics.ir import load_module
    from kverify.semantics.memory_model.byte_layout import swizzle_offset

    assert {c.rank for c in CASES} == {3, 4} and len(CASES) == 10
    for c in CASES:
        p = tmp_path / f"{c.name}.ptx"
        p.write_text(c.ptx())
        m = load_module(str(p))
        inputs = c.inputs(7)
        r = run_kernel(m, m.kernel(None), LaunchSpec.from_dict(c.launch()), inputs=inputs, check=False)
        assert r.status == "complete", (c.name, r.reason)
        got = r.outputs[f"im2col{c.rank}d_out"]
        ref = reference(c, inputs["x"]).reshape(-1).view(np.uint8)
        if c.swizzle != "none":
            sw = np.empty_like(ref)
            sw[swizzle_offset(np.arange(ref.size), c.swizzle)] = ref
            ref = sw
        dt = inputs["x"].dtype
        assert np.array_equal(got.view(dt), ref.view(dt), equal_nan=True), c.name


def test_the_multicast_form_takes_the_cta_mask_after_the_offsets(tmp_path):
    # [dst], [tmap, {coords}], [mbar], {offsets}, ctaMask: mask 1 in a one-CTA cluster is the
    # issuing CTA itself, which gets the same column as the plain form
    text = open(f"{D}/conv_im2col.ptx").read()
    mc, n = re.subn(r"(im2col\.mbarrier::complete_tx::bytes) (\[.*?\], \{%rs\d+, %rs\d+\});",
                    r"\1.multicast::cluster \2, 1;", text)
    assert n == 9
    (tmp_path / "conv_im2col.cu").write_text(open(f"{D}/conv_im2col.cu").read())
    (tmp_path / "conv_im2col.ptx").write_text(mc)
    res = kverify.run(str(tmp_path / "conv_im2col.ptx"), launch=LAUNCH)
    assert res.status == "complete", res.reason
    assert np.array_equal(res.outputs["out"], _numpy_im2col(res.inputs["x"], 64))


def test_im2col_w_modes_are_unsupported_as_sm100(tmp_path):
    text = open(f"{D}/conv_im2col.ptx").read().replace(".global.im2col.mbarrier", ".global.im2col::w.mbarrier")
    (tmp_path / "conv_im2col.cu").write_text(open(f"{D}/conv_im2col.cu").read())
    (tmp_path / "conv_im2col.ptx").write_text(text)
    res = kverify.run(str(tmp_path / "conv_im2col.ptx"), launch=LAUNCH)
    assert res.status == "unsupported"
    assert ".im2col::w is an sm_100 load mode" in res.reason
