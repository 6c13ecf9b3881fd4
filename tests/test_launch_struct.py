"""By-value struct parameters in the launch spec (kverify.launch.params): raw bytes, typed
fields, a tensor map inside a struct, pointers in a struct followed by the interpreter and the
SMT checkers, and the errors for malformed struct specs."""
from __future__ import annotations

import copy
import json

import numpy as np
import pytest

from conftest import ROOT, ZOO
from kverify.launch import LaunchSpec
from kverify.launch.layout import GLOBAL_BASE, TMAP_MAGIC
from kverify.launch.params import param_bytes
from kverify.semantics.interpreter import run_kernel
from kverify.semantics.ir import KernelError, load_module
from kverify.verifier.cli import main

COPY = ROOT / "tests" / "data" / "struct" / "struct_copy.ptx"
STRUCT_ZOO = ZOO / "struct_params"
BUFFERS = {"x": {"dtype": "float32", "shape": [256]}, "y": {"dtype": "float32", "shape": [256]}}
FIELDS = {"0": {"s32": 200}, "4": {"f32": 2.0}, "8": {"ptr": "x"}, "16": {"ptr": "y"}}
# where the interpreter places x and y: 256-byte aligned, each followed by a 1 KiB red zone
PLACED = {"x": (0, np.float32, (256,)), "y": (2048, np.float32, (256,))}


def _copy_kernel(name="struct_copy"):
    m = load_module(str(COPY))
    return m, next(k for k in m.kernels if k.name == name)


def _copy_launch(arg, buffers=BUFFERS):
    return {"grid": [2], "block": [128], "args": {"a": arg}, "buffers": buffers, "outputs": ["y"]}


def _run_copy(arg):
    m, k = _copy_kernel()
    spec = LaunchSpec.from_dict(_copy_launch(arg))
    x = np.arange(256, dtype=np.float32)
    y = np.full(256, -1, np.float32)
    return run_kernel(m, k, spec, {"x": x, "y": y})


def _check_json(path, launch, kernel):
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = main(["check", str(path), "--kernel", kernel, "--launch", json.dumps(launch), "--format", "json"])
    rep = json.loads(buf.getvalue())["kernels"][0]
    return rc, {o["id"]: o for o in rep["obligations"]}


# --------------------------------------------------------------------------- the bytes


def test_typed_fields_become_the_struct_bytes_with_zero_padding():
    m, k = _copy_kernel()
    img = param_bytes(k, LaunchSpec.from_dict(_copy_launch({"struct": FIELDS})), PLACED)
    assert img.offsets == {"struct_copy_param_0": (0, 24)}
    raw = img.data.tobytes()
    assert raw[0:4] == (200).to_bytes(4, "little")
    assert raw[4:8] == np.float32(2.0).tobytes()
    assert int.from_bytes(raw[8:16], "little") == GLOBAL_BASE
    assert int.from_bytes(raw[16:24], "little") == GLOBAL_BASE + 2048
    assert img.pointers == {8: ("x", 0), 16: ("y", 0)}
    assert img.tensormaps == {}


def test_pointer_with_an_offset_and_uncovered_bytes_are_zero():
    m, k = _copy_kernel()
    img = param_bytes(k, LaunchSpec.from_dict(_copy_launch(
        {"struct": {"16": {"ptr": {"buffer": "y", "offset": 64}}, "0": {"u8": 255}}})), PLACED)
    raw = img.data.tobytes()
    assert raw[0:8] == bytes([255, 0, 0, 0, 0, 0, 0, 0]) and raw[8:16] == bytes(8)
    assert int.from_bytes(raw[16:24], "little") == GLOBAL_BASE + 2048 + 64


def test_raw_bytes_are_copied_and_zero_padded():
    m, k = _copy_kernel()
    img = param_bytes(k, LaunchSpec.from_dict(_copy_launch({"bytes": "0x0102"})), PLACED)
    assert img.data.tobytes() == bytes([1, 2]) + bytes(22)


# --------------------------------------------------------------------------- runs


def test_pointer_in_a_struct_is_followed_by_the_interpreter():
    r = _run_copy({"struct": FIELDS})
    assert r.status == "complete" and r.findings == []
    y = r.outputs["y"]
    assert np.array_equal(y[:200], np.arange(200, dtype=np.float32) * 2)
    assert np.all(y[200:] == -1)


def test_raw_bytes_as_a_capture_records_them_run_the_same():
    # the bytes a capture would record for the typed launch above (pointers as placed)
    hexbytes = (200).to_bytes(4, "little").hex() + np.float32(2.0).tobytes().hex() + \
        GLOBAL_BASE.to_bytes(8, "little").hex() + (GLOBAL_BASE + 2048).to_bytes(8, "little").hex()
    r = _run_copy({"bytes": hexbytes})
    assert r.findings == []
    assert np.array_equal(r.outputs["y"][:200], np.arange(200, dtype=np.float32) * 2)
    assert np.all(r.outputs["y"][200:] == -1)


@pytest.mark.parametrize("kernel", ["struct_copy", "struct_copy_gc"])  # ld.param by symbol / through a register
def test_smt_race_proof_follows_struct_pointers(kernel):
    rc, obs = _check_json(COPY, _copy_launch({"struct": FIELDS}), kernel)
    assert rc == 0 and obs["race.global"]["status"] == "proved"


def test_smt_race_check_finds_the_race_through_a_struct_pointer():
    rc, obs = _check_json(COPY, _copy_launch({"struct": FIELDS}), "struct_copy_race")
    assert rc == 1 and obs["race.global"]["status"] == "violated" and obs["race.global"]["rule"] == "race.global"


def test_pointer_in_raw_bytes_is_not_proved_race_free_by_the_smt_checker():
    hexbytes = (200).to_bytes(4, "little").hex() + np.float32(2.0).tobytes().hex() + \
        GLOBAL_BASE.to_bytes(8, "little").hex() + (GLOBAL_BASE + 2048).to_bytes(8, "little").hex()
    rc, obs = _check_json(COPY, _copy_launch({"bytes": hexbytes}), "struct_copy")
    o = obs["race.global"]
    assert o["status"] == "bounded"  # the interpreter's run; the SMT proof could not follow the pointer
    assert "st.global.f32 at struct_copy.cu:13: the address is a pointer read out of by-value parameter a that " \
           "the launch spec does not give as a struct pointer field (raw bytes, or an offset the walk cannot fix): " \
           "not followed" in o["message"]


def test_tensor_map_inside_a_grid_constant_struct_loads_its_tile():
    manifest = json.loads((STRUCT_ZOO / "manifest.json").read_text())
    launch = manifest["variants"][0]["launch"]
    m = load_module(str(STRUCT_ZOO / "struct_params.ptx"))
    k = m.kernels[0]
    spec = LaunchSpec.from_dict(launch)
    img = param_bytes(k, spec, {"in": (0, np.float32, (64, 64)), "out": (17408, np.float32, (64, 64))})
    assert list(img.tensormaps) == [128]
    assert img.tensormaps[128].buffer == "in" and img.tensormaps[128].label == "args.p.struct.128.tensormap"
    assert int.from_bytes(img.data[128:136].tobytes(), "little") == TMAP_MAGIC | 128
    x = np.arange(64 * 64, dtype=np.float32).reshape(64, 64)
    r = run_kernel(m, k, spec, {"in": x})
    assert r.status == "complete" and r.findings == []
    assert np.array_equal(r.outputs["out"], x + 1)


def test_struct_zoo_kernel_verifies_and_its_twin_violates_tx_bytes():
    rc, obs = _check_json(STRUCT_ZOO / "struct_params.ptx",
                          json.loads((STRUCT_ZOO / "manifest.json").read_text())["variants"][0]["launch"],
                          "struct_params")
    assert rc == 0 and obs["mbarrier.tx-bytes"]["status"] == "proved"
    rc, obs = _check_json(STRUCT_ZOO / "struct_params__short_expect_tx.ptx",
                          json.loads((STRUCT_ZOO / "manifest.json").read_text())["variants"][1]["launch"],
                          "struct_params")
    o = obs["mbarrier.tx-bytes"]
    assert rc == 1 and o["status"] == "violated" and o["rule"] == "mbarrier.tx-mismatch"
    assert o["locations"][0]["line"] == 82


def test_a_byte_array_parameter_given_as_bytes_is_not_taken_for_a_tensor_map():
    manifest = json.loads((STRUCT_ZOO / "manifest.json").read_text())
    launch = copy.deepcopy(manifest["variants"][0]["launch"])
    launch["args"] = {"p": {"bytes": "40000000"}}
    m = load_module(str(STRUCT_ZOO / "struct_params.ptx"))
    r = run_kernel(m, m.kernels[0], LaunchSpec.from_dict(launch))
    assert r.status == "unsupported"
    assert "tensor map not passed as a by-value kernel parameter" in r.reason


# --------------------------------------------------------------------------- malformed struct specs


@pytest.mark.parametrize("arg,message", [
    ({"struct": {"0": {"u64": 1}, "4": {"u32": 2}}},
     "args.a.struct.4: field at offset 4 overlaps the field at offset 0 (bytes 0..7)"),
    ({"struct": {"20": {"u64": 1}}}, "args.a.struct.20: a u64 field must be 8-byte aligned (offset 20)"),
    ({"struct": {"24": {"u32": 1}}}, "args.a.struct.24: a 4-byte field at offset 24 runs past the parameter's 24 bytes"),
    ({"struct": {"8": {"ptr": "z"}}},
     "args.a.struct.8.ptr: pointer into buffer 'z', which is not a buffer of the launch (buffers: x, y; declare it "
     "in \"buffers\")"),
    ({"struct": {"8": {"ptr": {"buffer": "x", "offset": "4"}}}},
     "args.a.struct.8.ptr.offset: expected an integer byte offset, got \"4\""),
    ({"struct": {"0": {"tensormap": {"dtype": "float32", "box": [8], "buffer": "x"}}}},
     "args.a.struct.0: a 128-byte field at offset 0 runs past the parameter's 24 bytes"),
    ({"struct": {"32": {"tensormap": {"dtype": "float32", "box": [8], "buffer": "x"}}}},
     "args.a.struct.32: a tensor map must be 64-byte aligned (offset 32)"),
    ({"struct": {"0": {"tensormap": {"dtype": "float32", "box": [8], "buffer": "x", "boxx": 1}}}},
     "args.a.struct.0.tensormap: unknown key(s) boxx (valid: box, buffer, dtype, elem_strides, elem_type_enum, "
     "mode, oob_fill, padding, shape, strides, swizzle)"),
    ({"struct": {"0": {"i32": 1}}},
     "args.a.struct.0: unknown field kind \"i32\" (valid: u8, u16, u32, u64, s8, s16, s32, s64, f16, f32, f64, "
     "ptr, tensormap)"),
    ({"struct": {"x": {"u32": 1}}},
     "args.a.struct.x: a struct field's key is its byte offset, a decimal integer, got \"x\""),
    ({"struct": {"0": {"u8": 256}}}, "args.a.struct.0.u8: expected an integer that fits u8, got 256"),
    ({"struct": {"0": {"f32": "1.0"}}}, "args.a.struct.0.f32: expected a number, got \"1.0\""),
    ({"struct": {"0": {"u32": 1, "u8": 2}}},
     "args.a.struct.0: expected one of {KIND: number} (KIND u8/u16/u32/u64/s8/s16/s32/s64/f16/f32/f64), "
     "{\"ptr\": BUFFER}, {\"ptr\": {\"buffer\": BUFFER, \"offset\": N}}, {\"tensormap\": {...}}, "
     "got {\"u32\": 1, \"u8\": 2}"),
    ({"struct": [1, 2]}, "args.a.struct: expected an object, got [1, 2]"),
    ({"bytes": "abc"}, "args.a.bytes: expected a string of hexadecimal byte pairs, got \"abc\""),
    ({"bytes": "00" * 25}, "args.a.bytes: 25 bytes given for parameter a of 24 bytes"),
    ({"bytes": "00", "struct": {}}, "args.a: expected {\"bytes\": HEX} or {\"struct\": {OFFSET: FIELD, ...}}, "
     "got {\"bytes\": \"00\", \"struct\": {}}"),
    (7, "args.a: parameter a is a 24-byte by-value parameter: give it in \"tensormaps\", or as {\"bytes\": HEX} "
     "or {\"struct\": {OFFSET: FIELD}}, got 7"),
])
def test_malformed_struct_spec_is_a_clear_error(arg, message):
    m, k = _copy_kernel()
    with pytest.raises(KernelError) as e:
        param_bytes(k, LaunchSpec.from_dict(_copy_launch(arg)), PLACED)
    assert str(e.value) == f"<launch>:1:1: launch spec: {message}"


def test_struct_tensor_map_naming_an_unknown_buffer_is_a_clear_error():
    manifest = json.loads((STRUCT_ZOO / "manifest.json").read_text())
    launch = copy.deepcopy(manifest["variants"][0]["launch"])
    launch["args"]["p"]["struct"]["128"]["tensormap"]["buffer"] = "nope"
    m = load_module(str(STRUCT_ZOO / "struct_params.ptx"))
    with pytest.raises(KernelError) as e:
        run_kernel(m, m.kernels[0], LaunchSpec.from_dict(launch))
    assert str(e.value) == ("<launch>:1:1: launch spec: args.p.struct.128.tensormap.buffer: tensor map names buffer "
                            "'nope', which is not a buffer of the launch (buffers: in, out)")


def test_malformed_struct_in_a_file_points_at_its_line_and_column(tmp_path, capsys):
    launch = _copy_launch({"struct": {"0": {"u64": 1}, "4": {"u32": 2}}})
    f = tmp_path / "l.json"
    f.write_text(json.dumps(launch, indent=1))
    rc = main(["run", str(COPY), "--kernel", "struct_copy", "--launch", str(f)])
    err = capsys.readouterr().err
    line = next(i for i, t in enumerate(f.read_text().splitlines(), 1) if '"4":' in t)
    col = f.read_text().splitlines()[line - 1].index('"4":') + 6
    assert rc == 2
    assert err.strip() == (f"{f}:{line}:{col}: launch spec: args.a.struct.4: field at offset 4 overlaps the field "
                           f"at offset 0 (bytes 0..7)")
