"""kverify capture: the shim builds (and is rebuilt when its source changes), records become the
launch specs they should, ``--no-gpu`` records our own driver-API program and the spec checks."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kverify.capture import build, specs

ROOT = Path(__file__).resolve().parent.parent
CAP = ROOT / "tests" / "capture"

needs_cc = pytest.mark.skipif(not any(shutil.which(c) for c in ("cc", "gcc", "clang")), reason="no C compiler")
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("KVERIFY_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


@needs_cc
def test_shim_builds_exports_the_interposed_entry_points_and_is_rebuilt_on_change(cache, tmp_path, monkeypatch):
    lib = build.shim_path()
    assert lib.parent == cache and lib.exists()
    syms = subprocess.run(["nm", "-D", "--defined-only", str(lib)], capture_output=True, text=True, check=True).stdout
    names = {line.split()[-1] for line in syms.splitlines() if line.strip()}
    for s in ("cuLaunchKernel", "cuLaunchKernel_ptsz", "cuLaunchKernelEx", "cuLaunchCooperativeKernel",
              "cuGetProcAddress_v2", "dlsym", "cuModuleLoadData", "cuLibraryLoadData", "cuModuleGetFunction",
              "cuLibraryGetKernel", "cuMemAlloc_v2", "cuMemFree_v2", "cuTensorMapEncodeTiled",
              "cuTensorMapEncodeIm2col", "cudaLaunchKernel", "cudaLaunchKernelExC"):
        assert s in names, s
    assert build.shim_path() == lib  # cached
    changed = tmp_path / "shim.c"
    changed.write_text(build.SOURCE.read_text() + "\n/* changed */\n")
    monkeypatch.setattr(build, "SOURCE", changed)
    lib2 = build.shim_path()
    assert lib2 != lib and lib2.exists()


PTX = """
.version 8.8
.target sm_90a
.address_size 64
.visible .entry k(
	.param .align 64 .b8 k_param_0[128],
	.param .u64 .ptr .global .align 4 k_param_1,
	.param .s32 k_param_2,
	.param .f32 k_param_3,
	.param .align 8 .b8 k_param_4[16],
	.param .u64 k_param_5,
	.param .align 1 .b8 k_param_6[1]
)
{
	ret;
}
"""


def _write_records(d: Path, tm_hex: str):
    base, other = 0x7F0000000000, 0x7F0000100000
    struct_bytes = (7).to_bytes(8, "little") + (other + 16).to_bytes(8, "little")
    recs = [
        {"type": "process", "pid": 42, "nogpu": 1},
        {"type": "module", "id": 0, "api": "cuModuleLoadData", "kind": "ptx", "size": len(PTX), "file": "module_42_0.ptx"},
        {"type": "alloc", "api": "cuMemAlloc", "ptr": base, "size": 4096},
        {"type": "alloc", "api": "cuMemAlloc", "ptr": other, "size": 1024},
        {"type": "tensormap", "api": "cuTensorMapEncodeTiled", "map": tm_hex, "dtype": 9, "rank": 2, "addr": base,
         "dims": [32, 64], "strides": [64], "box": [16, 8], "element_strides": [1, 1], "interleave": 0,
         "swizzle": 2, "l2_promotion": 0, "oob_fill": 0},
        {"type": "launch", "seq": 0, "api": "cuLaunchKernelEx", "function": "0x1", "name": "k", "module": 0,
         "grid": [4, 2, 1], "block": [128, 1, 1], "cluster": [2, 1, 1], "dynamic_smem": 1024, "param_source": "ptx",
         "params": [{"offset": 0, "size": 128, "hex": tm_hex},
                    {"offset": 128, "size": 8, "hex": (other + 256).to_bytes(8, "little").hex()},
                    {"offset": 136, "size": 4, "hex": (-3 & 0xFFFFFFFF).to_bytes(4, "little").hex()},
                    {"offset": 140, "size": 4, "hex": "0000c03f"},
                    {"offset": 144, "size": 16, "hex": struct_bytes.hex()},
                    {"offset": 160, "size": 8, "hex": (12345).to_bytes(8, "little").hex()},
                    {"offset": 168, "size": 1, "hex": "00"}]},
    ]
    (d / "records.42.jsonl").write_text("\n".join(json.dumps(r) for r in recs) + "\n")
    (d / "module_42_0.ptx").write_text(PTX)


def test_spec_from_synthetic_records(tmp_path):
    tm_hex = bytes(range(128)).hex()
    _write_records(tmp_path, tm_hex)
    index = specs.write_specs(tmp_path, ["./app"])
    assert [l["spec"] for l in index["launches"]] == ["launch_42_0000_k.json"]
    spec = json.loads((tmp_path / "launch_42_0000_k.json").read_text())
    assert spec == {
        "kernel": "k", "grid": [4, 2, 1], "block": [128, 1, 1], "cluster": [2, 1, 1], "dynamic_smem": 1024, "cooperative": False,
        "args": {"2": -3, "3": 1.5, "4": {"struct": {"0": {"u64": 7}, "8": {"ptr": {"buffer": "alloc1", "offset": 16}}}},
                 "5": 12345, "6": {"bytes": "00"}},
        "buffers": {"alloc0": {"dtype": "bfloat16", "shape": [2048]}, "alloc1": {"dtype": "uint8", "shape": [1024]},
                    "1": {"dtype": "uint8", "shape": [768]}},
        "tensormaps": {"0": {"dtype": "bfloat16", "shape": [64, 32], "box": [8, 16], "strides": [64],
                             "swizzle": "64B", "oob_fill": "zero", "buffer": "alloc0"}},
    }
    l = index["launches"][0]
    # parameter 6: a one-byte struct (CuTe's empty tiler), bytes as the launch form of a .b8 array wants
    assert [p["kind"] for p in l["params"]] == ["tensormap", "pointer", "scalar", "scalar", "struct", "scalar", "struct"]
    assert [p["ptx_name"] for p in l["params"]][:2] == ["k_param_0", "k_param_1"]
    assert l["params"][1] == {"index": 1, "offset": 128, "size": 8, "ptx_name": "k_param_1", "kind": "pointer",
                              "allocation": "alloc1", "byte_offset": 256}
    assert l["params"][4]["fields"] == [{"offset": 8, "pointer": "alloc1", "byte_offset": 16, "allocation_size": 1024}]
    assert "parameter 1: points 256 bytes into alloc1; its buffer is the 768 bytes from there to the allocation's end" in l["notes"]
    assert l["check"].endswith(f"--kernel k --launch {tmp_path / 'launch_42_0000_k.json'}")


def test_struct_with_a_tensor_map_inside_is_written_typed_and_a_plain_struct_as_bytes():
    tm = {"api": "cuTensorMapEncodeTiled", "dtype": 7, "rank": 2, "addr": 0x1000, "dims": [64, 32], "strides": [256],
          "box": [32, 8], "element_strides": [1, 1], "interleave": 0, "swizzle": 3, "oob_fill": 0}
    allocs = {0x1000: 8192}
    names = {(1, 0x1000): "alloc0"}
    mp = bytes(range(128))
    raw = (5).to_bytes(4, "little") + bytes(60) + mp + (0x1000 + 64).to_bytes(8, "little") + b"\x01\x02\x03"
    buffers = {}
    inside = [{"offset": 64, "tensormap": specs._tensormap_spec(tm, allocs, names, 1, buffers)[0]},
              {"offset": 192, "pointer": "alloc0", "byte_offset": 64, "allocation_size": 8192}]
    v = specs._struct_value(raw, inside, buffers, allocs, 1, names)
    assert v == {"struct": {
        "0": {"u64": 5},
        "64": {"tensormap": {"dtype": "float32", "shape": [32, 64], "box": [8, 32], "strides": [256],
                             "swizzle": "128B", "oob_fill": "zero", "buffer": "alloc0"}},
        "192": {"ptr": {"buffer": "alloc0", "offset": 64}},
        "200": {"u16": 0x0201}, "202": {"u8": 3}}}
    assert buffers == {"alloc0": {"dtype": "float32", "shape": [2048]}}
    assert specs._struct_value(b"\x01" * 12, [], {}, allocs, 1, names) == {"bytes": "01" * 12}


def test_spec_without_ptx_notes_what_is_missing(tmp_path):
    rec = {"type": "launch", "seq": 3, "api": "cuLaunchKernel", "function": "0x1", "name": None, "module": -1,
           "grid": [1, 1, 1], "block": [32, 1, 1], "cluster": [1, 1, 1], "dynamic_smem": 0,
           "param_source": "unknown", "params": None}
    (tmp_path / "records.7.jsonl").write_text(json.dumps(rec) + "\n")
    index = specs.write_specs(tmp_path)
    l = index["launches"][0]
    assert l["ptx"] is None and "check" not in l
    assert l["notes"] == ["the launched function's name is unknown (no cuFuncGetName and not seen at cuModuleGetFunction)",
                          "parameter sizes unknown (no cuFuncGetParamInfo and no PTX): parameters not recorded"]


def test_fatbin_ptx_is_found_when_uncompressed():
    ptx = b".version 8.8\n.target sm_90a\n.visible .entry k()\n{\n ret;\n}\n"
    payload = ptx + b"\0" * (-len(ptx) % 8)
    entry = (1).to_bytes(2, "little") + (0x101).to_bytes(2, "little") + (64).to_bytes(4, "little") + \
        len(payload).to_bytes(4, "little") + bytes(52)
    body = entry + payload
    fat = (0xBA55ED50).to_bytes(4, "little") + (1).to_bytes(2, "little") + (16).to_bytes(2, "little") + \
        len(body).to_bytes(8, "little") + body
    text, why = specs._fatbin_ptx(fat)
    assert text == ptx.decode() and why == "fatbin's embedded PTX"


def test_cli_without_a_program_is_a_usage_error():
    r = subprocess.run([sys.executable, "-m", "kverify", "capture"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    assert "no program given" in r.stderr


@needs_cc
@needs_nvcc
@pytest.mark.slow
def test_no_gpu_capture_of_our_driver_api_program_checks(cache, tmp_path):
    lib = build.shim_path()
    libdir = build.nogpu_libdir(lib)
    app = tmp_path / "host_driver"
    subprocess.run(["nvcc", "-o", str(app), str(CAP / "host_driver.cpp"), f"-L{libdir}", "-lcuda"], check=True,
                   capture_output=True, timeout=300)
    out = tmp_path / "cap"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, "-m", "kverify", "capture", "--no-gpu", "-o", str(out), "--", str(app),
                        str(CAP / "tma_scale.ptx")], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "kverify capture (no GPU, sm_90): tma_scale WRONG" in r.stdout  # recorded, not run
    index = json.loads((out / "index.json").read_text())
    assert index["program_exit_status"] == 0 and index["allocations"] == 2 and index["tensormaps"] == 1
    (l,) = index["launches"]
    assert (l["kernel"], l["api"], l["grid"], l["block"], l["param_source"]) == \
        ("tma_scale", "cuLaunchKernel", [2, 2, 1], [128, 1, 1], "ptx")
    spec = json.loads((out / l["spec"]).read_text())
    assert spec["args"] == {"2": 64, "3": 2.0}
    assert spec["buffers"] == {"alloc0": {"dtype": "float32", "shape": [4096]}, "1": {"dtype": "uint8", "shape": [16384]}}
    assert spec["tensormaps"] == {"0": {"dtype": "float32", "shape": [64, 64], "box": [32, 32], "strides": [256],
                                        "swizzle": "none", "oob_fill": "zero", "buffer": "alloc0"}}
    r = subprocess.run([sys.executable, "-m", "kverify", "check", str(out / l["ptx"]), "--kernel", "tma_scale",
                        "--launch", str(out / l["spec"]), "--format", "json"], cwd=ROOT, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    rep = json.loads(r.stdout)
    assert rep["kernels"][0]["verdict"] == "verified"
    st = {o["id"]: o["status"] for o in rep["kernels"][0]["obligations"]}
    assert st["mbarrier.parity"] == "proved" and st["race.async"] == "proved" and st["memory"] == "bounded"


@pytest.mark.gpu
def test_gpu_capture_of_the_runtime_api_program(cache, tmp_path):
    app = tmp_path / "tma_rt"
    subprocess.run(["nvcc", "-gencode", "arch=compute_90a,code=[sm_90a,compute_90a]", "--compress-mode=none",
                    "-o", str(app), str(CAP / "tma_scale_rt.cu")], check=True, capture_output=True, timeout=300)
    out = tmp_path / "cap"
    r = subprocess.run([sys.executable, "-m", "kverify", "capture", "-o", str(out), "--", str(app)], cwd=ROOT,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "tma_scale_rt: ok" in r.stdout
    index = json.loads((out / "index.json").read_text())
    (l,) = [x for x in index["launches"] if x["kernel"] == "tma_scale"]
    assert l["grid"] == [4, 2, 1] and [p["kind"] for p in l["params"]] == ["tensormap", "pointer", "scalar", "scalar"]
    assert l["ptx"] is not None


@needs_cc
@pytest.mark.parametrize("n_grid,second", [((), "grid [2, 1, 1] block [256, 1, 1]: verified"),
                                            (("1200", "5"), "grid [5, 1, 1] block [256, 1, 1]: violated")])
def test_capture_context_manager_records_the_launches_of_its_block(cache, tmp_path, n_grid, second):
    """``with kverify.capture() as cap:`` in a Python program run under ``kverify capture
    --no-gpu``: the launch before the block is not in ``cap.launches``, the two inside are, with
    their grids, and each checks from its recorded spec."""
    out = tmp_path / "cap"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, "-m", "kverify", "capture", "--no-gpu", "-o", str(out), "--", sys.executable,
                        str(CAP / "ctx_driver.py"), str(ROOT / "tests" / "zoo" / "vadd" / "vadd.ptx"), *n_grid], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert lines[:3] == ["2 launch(es) in the block", "vadd grid [4, 1, 1] block [256, 1, 1]: verified",
                         f"vadd {second}"]
    assert len(json.loads((out / "index.json").read_text())["launches"]) == 3  # the program made three


def test_capture_context_manager_without_the_shim_says_how_to_run():
    import kverify

    with pytest.raises(kverify.capture.CaptureError, match=r"kverify capture -- python PROGRAM\.py"):
        with kverify.capture():
            pass


@pytest.mark.parametrize("api, cooperative", [("cuLaunchKernel", False), ("cuLaunchCooperativeKernel", True),
                                              ("cuLaunchKernelEx+cooperative", True)])
def test_a_launch_records_whether_it_is_cooperative_and_nan_bits(tmp_path, api, cooperative):
    # (no key: check assumed a cooperative launch where the kernel reads the grid workspace, so a
    # grid.sync() launched with cuLaunchKernel, which traps, was verified; a NaN parameter was
    # written as JSON NaN, losing its payload)
    _write_records(tmp_path, bytes(range(128)).hex())
    recs = [json.loads(x) for x in (tmp_path / "records.42.jsonl").read_text().splitlines()]
    recs[-1]["api"] = api
    recs[-1]["params"][3]["hex"] = "ff00c07f"
    (tmp_path / "records.42.jsonl").write_text("\n".join(json.dumps(r) for r in recs) + "\n")
    specs.write_specs(tmp_path, ["./app"])
    spec = json.loads((tmp_path / "launch_42_0000_k.json").read_text())
    assert spec["cooperative"] is cooperative
    assert spec["args"]["3"] == {"bytes": "ff00c07f"}


def test_a_block_after_a_thousand_launches_keeps_its_own(tmp_path, monkeypatch):
    # (the block's specs were written with the command line's default limit of 1000 launches of
    # the whole process: the launches of a block after them were dropped)
    _write_records(tmp_path, bytes(range(128)).hex())
    recs = [json.loads(x) for x in (tmp_path / "records.42.jsonl").read_text().splitlines()]
    launch = recs.pop()
    recs += [dict(launch, seq=i) for i in range(1002)]
    (tmp_path / "records.42.jsonl").write_text("\n".join(json.dumps(r) for r in recs) + "\n")
    assert len(specs.write_specs(tmp_path, None, limit=None)["launches"]) == 1002
    assert len(specs.write_specs(tmp_path, None)["launches"]) == 1000


def test_a_kernel_with_its_own_cluster_shape_launched_without_one_keeps_it(tmp_path):
    # (cuLaunchKernel of a __cluster_dims__(2,1,1) kernel was recorded as cluster 1x1x1, and check
    # refused the spec: "the driver refuses such a launch"; the driver uses the kernel's)
    _write_records(tmp_path, bytes(range(128)).hex())
    (tmp_path / "module_42_0.ptx").write_text(PTX.replace(")\n{", ")\n.reqnctapercluster 2, 1, 1\n{", 1))
    recs = [json.loads(x) for x in (tmp_path / "records.42.jsonl").read_text().splitlines()]
    recs[-1].update(api="cuLaunchKernel", cluster=[1, 1, 1])
    (tmp_path / "records.42.jsonl").write_text("\n".join(json.dumps(r) for r in recs) + "\n")
    index = specs.write_specs(tmp_path, ["./app"])
    spec = json.loads((tmp_path / "launch_42_0000_k.json").read_text())
    assert spec["cluster"] == [2, 1, 1] and index["launches"][0]["cluster"] == [2, 1, 1]
    assert "cluster 2x1x1 from the kernel's .reqnctapercluster (the launch names none)" in index["launches"][0]["notes"]
