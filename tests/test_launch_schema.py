"""The launch-spec schema (kverify.launch.schema): every malformed spec is a KernelError naming
its key path, at the JSON line and column of the offending value when the spec is a file."""
from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import ZOO
from kverify.launch import LaunchSpec, resolve
from kverify.launch.params import param_bytes
from kverify.launch.schema import locate
from kverify.semantics.ir import KernelError, load_module
from kverify.verifier.cli import main

GOOD = {"kernel": "vadd", "grid": [4, 1, 1], "block": [256, 1, 1], "args": {"n": 1000},
        "buffers": {"a": {"dtype": "float32", "shape": [1000]}, "b": {"dtype": "float32", "shape": [1000]},
                    "c": {"dtype": "float32", "shape": [1000]}},
        "outputs": ["c"], "dynamic_smem": 0}


def _err(d) -> str:
    with pytest.raises(KernelError) as e:
        LaunchSpec.from_dict(d)
    return str(e.value)


def _with(path, value):
    d = json.loads(json.dumps(GOOD))
    cur = d
    for k in path[:-1]:
        cur = cur[k]
    cur[path[-1]] = value
    return d


@pytest.mark.parametrize("path,value,message", [
    (["buffers", "a", "shape", 0], "abc", 'buffers.a.shape[0]: expected a non-negative integer, got "abc"'),
    (["buffers", "a", "shape"], {"n": 3}, 'buffers.a.shape: expected a list of non-negative integers, got {"n": 3}'),
    (["buffers", "a", "shape", 0], -1, "buffers.a.shape[0]: expected a non-negative integer, got -1"),
    (["buffers", "a", "shape", 0], 1.5, "buffers.a.shape[0]: expected a non-negative integer, got 1.5"),
    (["buffers", "a", "shape", 0], True, "buffers.a.shape[0]: expected a non-negative integer, got true"),
    (["buffers", "a", "shape"], [1 << 20, 1 << 20],
     "buffers.a.shape: the buffer takes more than 1073741824 bytes, got [1048576, 1048576]"),
    (["buffers", "a", "dtype"], 7, "buffers.a.dtype: expected a dtype name, got 7"),
    (["buffers", "a"], [1000], "buffers.a: expected an object, got [1000]"),
    (["buffers"], [], "buffers: expected an object, got []"),
    (["buffers", "a", "size"], 4, "buffers.a: unknown key(s) size (a buffer has dtype and shape)"),
    (["grid"], {"x": 4}, 'grid: expected 1 to 3 positive integers, got {"x": 4}'),
    (["grid", 1], "2", 'grid[1]: expected a positive integer (at most 2147483647), got "2"'),
    (["block"], [1, 1, 1, 1], "block: expected 1 to 3 positive integers, got [1, 1, 1, 1]"),
    (["block", 0], 0, "block[0]: expected a positive integer (at most 2147483647), got 0"),
    (["cluster"], [32], "cluster[0]: expected a positive integer (at most 16), got 32"),
    (["args"], [1000], "args: expected an object, got [1000]"),
    (["args", "n"], [1000], 'args.n: expected a number, a boolean, an expression string, {"bytes": HEX} or '
     '{"struct": {...}}, got [1000]'),
    (["args", "n"], None, 'args.n: expected a number, a boolean, an expression string, {"bytes": HEX} or '
     '{"struct": {...}}, got null'),
    (["outputs"], "c", 'outputs: expected a list of buffer names, got "c"'),
    (["outputs", 0], 3, "outputs[0]: expected a buffer name, got 3"),
    (["dynamic_smem"], "1k", 'dynamic_smem: expected a non-negative integer (at most 232448), got "1k"'),
    (["dynamic_smem"], 1 << 30, "dynamic_smem: expected a non-negative integer (at most 232448), got 1073741824"),
    (["kernel"], ["vadd"], 'kernel: expected a string, got ["vadd"]'),
    (["block"], [2048], "block[0]: a block dimension x is at most 1024 on sm_90, got 2048"),
    (["block"], [64, 4, 128], "block[2]: a block dimension z is at most 64 on sm_90, got 128"),
    (["block"], [512, 4], "block: a block has at most 1024 threads on sm_90, this one 2048"),
    (["grid"], [1, 70000], "grid[1]: grid dimension y is at most 65535, got 70000"),
    (["cluster"], [4, 8], "cluster: a cluster has at most 16 CTAs on sm_90, this one 32"),
    (["cluster"], [3, 1, 1], "grid[0]: grid dimension x must be a multiple of the cluster's (3), got 4"),
    (["tensormaps"], {"t": {"dtype": "float32", "box": "32", "buffer": "a"}},
     'tensormaps.t.box: expected a list of positive integers, got "32"'),
    (["tensormaps"], {"t": {"dtype": "float32", "box": [32]}}, "tensormaps.t: a tensor map needs buffer"),
    (["tensormaps"], {"t": {"dtype": "float32", "box": [0], "buffer": "a"}},
     "tensormaps.t.box[0]: expected a positive integer, got 0"),
    (["tensormaps"], {"t": {"dtype": "float32", "box": [8], "buffer": "a", "swizzle": 128}},
     "tensormaps.t.swizzle: expected a string, got 128"),
])
def test_malformed_spec_names_the_key_path(path, value, message):
    assert _err(_with(path, value)) == f"<launch>:1:1: launch spec: {message}"


def test_total_buffer_bytes_are_capped():
    d = _with(["buffers"], {f"b{i}": {"dtype": "float64", "shape": [1 << 26]} for i in range(3)})
    assert _err(d) == "<launch>:1:1: launch spec: buffers.b2: the launch's buffers take more than 1073741824 " \
                      "bytes (the most one launch may hold)"


def test_a_good_spec_and_every_zoo_launch_pass_the_schema():
    LaunchSpec.from_dict(GOOD)
    n = 0
    for mf in sorted(ZOO.glob("*/manifest.json")):
        for v in json.loads(mf.read_text())["variants"]:
            resolve(v["launch"])
            n += 1
    assert n > 60


def test_error_in_a_file_points_at_the_offending_value(tmp_path, capsys):
    f = tmp_path / "l.json"
    f.write_text('{"grid": [4, 1, 1], "block": [256, 1, 1], "args": {"n": 1000},\n'
                 ' "buffers": {"a": {"dtype": "float32", "shape": [1000, "abc"]},\n'
                 '             "b": {"dtype": "float32", "shape": [1000]}, "c": {"dtype": "float32", "shape": [1000]}}}\n')
    rc = main(["run", str(ZOO / "vadd" / "vadd.ptx"), "--launch", str(f)])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.strip() == (f'{f}:2:56: launch spec: buffers.a.shape[1]: expected a non-negative integer, got "abc" '
                           f'(not an expression over the args and symbols)')


def test_locate_finds_nested_keys_and_falls_back_to_line_1(tmp_path):
    f = tmp_path / "l.json"
    f.write_text('{\n  "a": [1, {"b": "x"}],\n  "c": {"d e": 2}\n}\n')
    assert locate(str(f), ["a", 1, "b"]) == (2, 18)
    assert locate(str(f), ["c", "d e"]) == (3, 16)
    assert locate(str(f), ["c", "zz"]) == (3, 8)  # the innermost key found
    assert locate("<launch>", ["a"]) == (1, 1)


def test_template_junk_is_a_kernel_error():
    for d in ({"grid": ["min(1)"], "block": [1]}, {"grid": ["n +"], "block": [1]},
              {"grid": ["10 ** 5"], "block": [1]}, {"args": ["n"], "block": [1]},
              {"buffers": [], "block": [1]}, {"symbols": [1], "block": [1]}):
        with pytest.raises(KernelError):
            resolve(d)


# --------------------------------------------------------------------------- property

_json = st.recursive(st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats(allow_nan=True)
                     | st.text(max_size=8),
                     lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=6), kids, max_size=4),
                     max_leaves=12)
_keys = st.sampled_from(["kernel", "grid", "block", "cluster", "args", "buffers", "tensormaps", "outputs",
                         "dynamic_smem", "shared_bytes", "symbols"])
_field = st.one_of(_json, st.fixed_dictionaries({"u32": _json}), st.fixed_dictionaries({"ptr": _json}),
                   st.fixed_dictionaries({"tensormap": _json}),
                   st.fixed_dictionaries({"s8": st.integers(-300, 300)}))
_struct_arg = st.fixed_dictionaries({"struct": st.dictionaries(st.sampled_from(["0", "4", "8", "16", "20", "24",
                                                                               "64", "x", "-1"]), _field,
                                                               max_size=4)}) | \
    st.fixed_dictionaries({"bytes": st.text("0123456789abcdefx ", max_size=60)})


@st.composite
def _malformed(draw):
    d = json.loads(json.dumps(GOOD))
    d["args"]["a"] = draw(_struct_arg)
    for _ in range(draw(st.integers(0, 3))):
        k = draw(_keys)
        if draw(st.booleans()) and isinstance(d.get(k), dict) and d[k]:
            sub = draw(st.sampled_from(sorted(d[k])))
            d[k][sub] = draw(_json)
        else:
            d[k] = draw(_json)
    return d


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_malformed())
def test_malformed_specs_give_only_kernel_errors(d):
    module = _VADD[0]
    try:
        spec = resolve(d).spec
        param_bytes(module.kernels[0], spec, {"a": (0, None, (1000,)), "b": (4096, None, (1000,)),
                                              "c": (8192, None, (1000,))})
    except KernelError as e:
        assert str(e).startswith("<launch>:1:1: launch")


_VADD = [load_module(str(ZOO / "vadd" / "vadd.ptx"))]
