"""kverify.launch: the dtype table, the one launch resolver, parameter layout and bytes."""
from __future__ import annotations

import json

import numpy as np
import pytest

from conftest import ZOO
from kverify.launch import LaunchSpec, arg_bits, dtype, from_flags, instantiate, param_offsets, random_array, resolve
from kverify.launch.dtypes import DTYPES, of_ptx
from kverify.launch.resolve import arg_value
from kverify.semantics.ir import KernelError, load_module

VADD = ZOO / "vadd"
VADD_BUFFERS = {"a": {"dtype": "float32", "shape": [1000]}, "b": {"dtype": "float32", "shape": [1000]},
                "c": {"dtype": "float32", "shape": [1000]}}


def _vadd_spec(path):
    return LaunchSpec("vadd", (4, 1, 1), (256, 1, 1), (1, 1, 1), {"n": 1000}, VADD_BUFFERS, {}, ("c",), 0, path)


# --------------------------------------------------------------------------- dtypes


@pytest.mark.parametrize("spelling,name", [
    ("float32", "float32"), ("f32", "float32"), ("fp32", "float32"), ("float", "float32"),
    ("torch.float32", "float32"), ("torch.float", "float32"), (".f32", "float32"), (np.float32, "float32"),
    ("bf16", "bfloat16"), ("torch.bfloat16", "bfloat16"), ("bfloat16", "bfloat16"),
    ("half", "float16"), ("fp16", "float16"), ("f16", "float16"), ("torch.half", "float16"),
    ("double", "float64"), ("i32", "int32"), ("s32", "int32"), ("torch.int32", "int32"), ("torch.long", "int64"),
    ("u8", "uint8"), ("uint8", "uint8"), ("bool", "bool"), ("torch.bool", "bool"), (np.bool_, "bool"),
])
def test_dtype_spellings_resolve_to_their_canonical_row(spelling, name):
    assert dtype(spelling).name == name


def test_dtype_row_has_numpy_type_itemsize_ptx_type_tensor_map_code_and_torch_name():
    f32, bf16, i8 = DTYPES["float32"], DTYPES["bfloat16"], DTYPES["int8"]
    assert (f32.np, f32.itemsize, f32.ptx, f32.tmap, f32.torch) == (np.float32, 4, "f32", 7, "torch.float32")
    assert (bf16.np, bf16.itemsize, bf16.ptx, bf16.tmap, bf16.tmap_enum) == (
        np.uint16, 2, "bf16", 9, "CU_TENSOR_MAP_DATA_TYPE_BFLOAT16")
    assert (i8.tmap_enum, DTYPES["int16"].tmap) == ("CU_TENSOR_MAP_DATA_TYPE_UINT8", None)
    assert [of_ptx(t).name for t in ("f64", "b32", "s16", "u8")] == ["float64", "uint32", "int16", "uint8"]
    assert of_ptx("pred") is None


def test_unknown_dtype_is_a_kernel_error_listing_the_valid_names():
    with pytest.raises(KernelError) as e:
        dtype("float128")
    msg = str(e.value)
    assert msg.startswith("<launch>:1:1: unknown dtype 'float128' (valid: float16, bfloat16, float32, float64, int8,")
    assert "uint64, bool" in msg


def test_launch_spec_buffer_dtypes_are_canonical_and_a_bad_one_names_the_buffer():
    s = LaunchSpec.from_dict({"buffers": {"a": {"dtype": "fp16", "shape": [4]}},
                              "tensormaps": {"t": {"dtype": "torch.bfloat16", "shape": [8], "box": [8],
                                                   "buffer": "a"}}})
    assert s.buffers["a"] == {"dtype": "float16", "shape": [4]}
    assert s.tensormaps["t"]["dtype"] == "bfloat16"
    with pytest.raises(KernelError) as e:
        LaunchSpec.from_dict({"buffers": {"a": {"dtype": "fp128", "shape": [4]}}}, "l.json")
    assert str(e.value).startswith("l.json:1:1: launch spec: buffer 'a' has unknown dtype 'fp128' (valid: float16, ")


def test_random_array_keeps_bfloat16_as_bits_and_draws_integers_below_100():
    rng = np.random.default_rng(0)
    assert random_array(rng, "bf16", (4,)).dtype == np.uint16
    ints = random_array(rng, "i32", (64,))
    assert ints.dtype == np.int32 and 0 <= ints.min() and ints.max() < 100


# --------------------------------------------------------------------------- the resolver


def test_resolver_reads_a_launch_json_file():
    r = resolve(str(VADD / "launch.json"), str(VADD / "vadd.ptx"))
    assert r.spec == _vadd_spec(str(VADD / "launch.json"))
    assert (r.path, r.reference) == (str(VADD / "launch.json"), None)


def test_resolver_takes_the_manifest_variant_of_the_file_and_its_reference():
    man = str(VADD / "manifest.json")
    for launch in (man, None):  # given, or found next to the kernel
        r = resolve(launch, str(VADD / "vadd.ptx"))
        assert (r.spec, r.path, r.reference) == (_vadd_spec(man), man, "ref:vadd")
    with pytest.raises(KernelError) as e:
        resolve(man, str(VADD / "vadd__tail_off_by_one.ptx"))
    assert str(e.value) == f"{man}:1:1: manifest has no variant for vadd__tail_off_by_one.ptx"


def test_resolver_breaks_a_tie_between_variants_of_one_file_by_kernel(tmp_path):
    man = tmp_path / "manifest.json"
    man.write_text(json.dumps({"variants": [
        {"file": "k.ptx", "kernel": "first", "launch": {"kernel": "first", "block": [32]}},
        {"file": "k.ptx", "kernel": "second", "launch": {"kernel": "second", "block": [64]}}]}))
    assert resolve(str(man), str(tmp_path / "k.ptx")).spec.block == (32, 1, 1)
    assert resolve(str(man), str(tmp_path / "k.ptx"), kernel="second").spec.block == (64, 1, 1)


def test_resolver_reads_inline_json_and_dicts():
    want = LaunchSpec("k", (2, 1, 1), (32, 2, 1), path="<launch>")
    assert resolve('{"kernel": "k", "grid": 2, "block": [32, 2]}').spec == want
    assert resolve({"kernel": "k", "grid": 2, "block": [32, 2]}).spec == want


def test_resolver_instantiates_a_template_over_its_args():
    t = {"grid": ["cdiv(n, 256)", 1, 1], "block": [256], "args": {"n": 300, "m": "n * 2"},
         "buffers": {"x": {"dtype": "f32", "shape": ["n"]}, "y": {"dtype": "float32", "shape": ["m // 4", 2]}}}
    s = resolve(t, values={"n": 1000}).spec
    assert (s.grid, s.block, s.args) == ((4, 1, 1), (256, 1, 1), {"n": 1000, "m": 2000})
    assert s.buffers == {"x": {"dtype": "float32", "shape": [1000]}, "y": {"dtype": "float32", "shape": [500, 2]}}


def test_template_symbols_take_the_values_and_fuzz_is_dropped():
    t = {"symbols": {"n": 8}, "fuzz": {"n": [1]}, "grid": ["ceildiv(n, 4)"], "args": {"n": "n", "k": 3}}
    assert instantiate(t) == {"grid": [2], "args": {"n": 8, "k": 3}}
    assert instantiate(t, {"n": 9}) == {"grid": [3], "args": {"n": 9, "k": 3}}


def test_template_errors_name_the_entry_and_the_file():
    with pytest.raises(KernelError) as e:
        instantiate({"grid": ["q * 2"]}, path="t.json")
    assert str(e.value) == "t.json:1:1: launch template: unknown symbol 'q' in 'q * 2' (grid[0])"
    with pytest.raises(KernelError) as e:
        instantiate({"block": ["__import__('os')"]})
    assert str(e.value) == "<launch>:1:1: launch template: unsupported expression \"__import__('os')\" (block[0])"


def test_resolver_errors_are_file_line_col(tmp_path):
    missing = tmp_path / "nope.json"
    with pytest.raises(KernelError) as e:
        resolve(str(missing), "k.ptx")
    assert str(e.value) == f"{missing}:0:0: cannot read launch spec: No such file or directory"
    bad = tmp_path / "bad.json"
    bad.write_text('{"grid": [1,\n  ]}')
    with pytest.raises(KernelError) as e:
        resolve(str(bad), "k.ptx")
    assert str(e.value) == f"{bad}:2:3: launch spec: Expecting value"
    with pytest.raises(KernelError) as e:
        resolve(None, str(tmp_path / "k.ptx"))
    assert str(e.value) == (f"{tmp_path / 'k.ptx'}:0:0: --launch SPEC is required (a launch JSON or a zoo "
                            f"manifest.json)")
    with pytest.raises(KernelError) as e:
        resolve("[1, 2]", "k.ptx")
    assert str(e.value) == "[1, 2]:0:0: cannot read launch spec: No such file or directory"
    bad.write_text("[1, 2]")
    with pytest.raises(KernelError) as e:
        resolve(str(bad), "k.ptx")
    assert str(e.value) == f"{bad}:1:1: launch spec: expected a JSON object"


def test_grid_block_and_args_flags_give_a_launch(tmp_path):
    k = load_module(str(VADD / "vadd.ptx")).kernel()
    s = from_flags(k, str(VADD / "vadd.ptx"), grid="4", block="256", args=["n=1000"])
    assert s == LaunchSpec("vadd", (4, 1, 1), (256, 1, 1), (1, 1, 1), {"n": 1000}, path="<command line>")
    assert arg_value("alpha=2.5") == ("alpha", 2.5) and arg_value("mask=0x10") == ("mask", 16)
    assert from_flags(k, str(VADD / "vadd.ptx")) is None  # no flags: the zoo manifest next to it
    lone = tmp_path / "vadd.ptx"
    lone.write_text((VADD / "vadd.ptx").read_text())
    assert from_flags(k, str(lone)).block == (256, 1, 1)  # the kernel's own .reqntid / launch bounds
    with pytest.raises(KernelError) as e:
        from_flags(k, str(lone), args=["n"])
    assert str(e.value).startswith("<command line>:1:1: --arg expects NAME=NUMBER (a scalar), NAME=SHAPE:DTYPE (a buffer") \
        and str(e.value).endswith("; got 'n'")
    with pytest.raises(KernelError) as e:
        from_flags(k, str(lone), grid="0")
    assert str(e.value) == f"{lone}:1:1: --grid must be 1 to 3 positive integers, got '0'"


# --------------------------------------------------------------------------- parameter layout and bytes


def test_arg_bits_of_a_float_and_a_negative_int():
    assert arg_bits(1.5, "f32") == 0x3FC00000
    assert arg_bits(1.5, "f64") == 0x3FF8000000000000
    assert arg_bits(2, "f32") == 0x40000000  # an integer given for a float parameter
    assert arg_bits(-3, "s32") == -3 and arg_bits(-3, "s32") & 0xFFFFFFFF == 0xFFFFFFFD
    assert arg_bits(True, "u32") == 1


def test_param_offsets_follow_declaration_order_and_alignment():
    k = load_module(str(VADD / "vadd.ptx")).kernel()
    offsets, total = param_offsets(k)
    assert offsets == {"vadd_param_0": (0, 8), "vadd_param_1": (8, 8), "vadd_param_2": (16, 8),
                       "vadd_param_3": (24, 4)}
    assert total == 28


def _cluster_spec(tmp_path, name, **change):
    launch = json.loads((ZOO / "cluster_arrive" / "manifest.json").read_text())["variants"][0]["launch"]
    launch = {k: v for k, v in launch.items() if k != "cluster"} | change
    p = tmp_path / name
    p.write_text(json.dumps(launch, indent=1))
    return p


def test_a_spec_without_cluster_runs_the_kernels_compiled_cluster_shape(tmp_path, capsys):
    """cluster_arrive has .reqnctapercluster 2,1,1: a spec that names no cluster runs in clusters
    of two CTAs (it was 1x1x1, and the remote arrives read as a deadlock)."""
    from kverify.verifier.cli import main

    ptx = ZOO / "cluster_arrive" / "cluster_arrive.ptx"
    k = load_module(str(ptx)).kernel("cluster_arrive")
    spec = LaunchSpec.load(str(_cluster_spec(tmp_path, "nocl.json")))
    assert not spec.cluster_given and spec.for_kernel(k).cluster == (2, 1, 1)
    rc = main(["check", str(ptx), "--launch", str(tmp_path / "nocl.json"), "--format", "json"])
    assert rc == 0 and json.loads(capsys.readouterr().out)["verdict"] == "verified"


def test_a_spec_whose_cluster_differs_from_the_kernels_is_bad_input(tmp_path, capsys):
    from kverify.verifier.cli import main

    ptx = ZOO / "cluster_arrive" / "cluster_arrive.ptx"
    p = _cluster_spec(tmp_path, "wrong.json", cluster=[1, 1, 1])
    assert main(["check", str(ptx), "--launch", str(p)]) == 2
    err = "".join(capsys.readouterr())
    assert f"{p}:31:13: error: launch spec: cluster [1, 1, 1] differs from cluster_arrive's .reqnctapercluster " \
           "[2, 1, 1]: the driver refuses such a launch" in err
    p = _cluster_spec(tmp_path, "odd.json", grid=[3, 1, 1])
    assert main(["check", str(ptx), "--launch", str(p)]) == 2
    assert f"{p}:3:10: error: launch spec: grid dimension x (3) must be a multiple of cluster_arrive's cluster " \
           "dimension (2, .reqnctapercluster)" in "".join(capsys.readouterr())


def test_without_a_grid_a_cluster_kernel_runs_one_cluster():
    ptx = ZOO / "cluster_arrive" / "cluster_arrive.ptx"
    k = load_module(str(ptx)).kernel("cluster_arrive")
    spec = from_flags(k, str(ptx), block="128").for_kernel(k)
    assert spec.grid == (2, 1, 1) and spec.cluster == (2, 1, 1) and spec.grid_assumed
