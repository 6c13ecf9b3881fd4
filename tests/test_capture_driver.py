"""kverify capture --no-gpu on a plain-C driver-API program (tests/capture/cap_driver.c, built with
the system C compiler, no nvcc): buffer and module-variable contents recorded per launch and taken
by check, the required cluster attribute, refused launches, host/pitched/pool allocations and
their frees, graph launches and stream capture; and the synthetic-record cases of the same."""
from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from kverify.capture import build, specs

ROOT = Path(__file__).resolve().parent.parent
CAP = ROOT / "tests" / "capture"
PTX = CAP / "cap_kernels.ptx"

pytestmark = pytest.mark.skipif(not any(shutil.which(c) for c in ("cc", "gcc", "clang")), reason="no C compiler")


@pytest.fixture(scope="module")
def driver(tmp_path_factory):
    d = tmp_path_factory.mktemp("capdrv")
    old = os.environ.get("KVERIFY_CACHE")
    os.environ["KVERIFY_CACHE"] = str(d / "cache")
    try:
        libdir = build.nogpu_libdir(build.shim_path())
    finally:
        if old is None:
            os.environ.pop("KVERIFY_CACHE")
        else:
            os.environ["KVERIFY_CACHE"] = old
    exe = d / "cap_driver"
    cc = next(c for c in (os.environ.get("CC"), "cc", "gcc", "clang") if c and shutil.which(c))
    subprocess.run([cc, "-o", str(exe), str(CAP / "cap_driver.c"), f"-L{libdir}", "-lcuda"], check=True,
                   capture_output=True, timeout=120)
    return exe, d / "cache"


def capture(driver, out: Path, mode: str, *options: str):
    exe, cache = driver
    env = dict(os.environ, PYTHONPATH=str(ROOT), KVERIFY_CACHE=str(cache))
    r = subprocess.run([sys.executable, "-m", "kverify", "capture", "--no-gpu", "-o", str(out), *options, "--",
                        str(exe), str(PTX), mode], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    index = json.loads((out / "index.json").read_text()) if (out / "index.json").exists() else None
    return r, index


def check(out: Path, entry: dict, with_inputs: bool):
    cmd = [sys.executable, "-m", "kverify", "check", str(out / entry["ptx"]), "--kernel", entry["kernel"],
           "--launch", str(out / entry["spec"])]
    if with_inputs:
        cmd += ["--inputs", str(out / entry["inputs"])]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_buffer_and_module_variable_contents_are_recorded_and_checked(driver, tmp_path):
    # (check ran on seeded random bytes: hist over bytes 0..255 into 128 bins, and a kernel bounded
    # by a __device__ variable the host set to 300 over 256 floats, were both verified)
    out = tmp_path / "cap"
    r, index = capture(driver, out, "contents")
    assert r.returncode == 0, r.stdout + r.stderr
    hist, glob = index["launches"]
    assert hist["notes"] == [] and glob["notes"] == []
    assert hist["inputs"] == Path(hist["spec"]).with_suffix(".npz").name
    assert hist["check"].endswith(f"--launch {out / hist['spec']} --inputs {out / hist['inputs']}")
    with np.load(out / hist["inputs"]) as z:
        assert sorted(z.files) == ["0", "1"]
        assert z["0"].dtype == np.uint8 and (z["0"] == np.arange(256)).all()
        assert (z["1"] == np.full(128, 7, "<i4").view(np.uint8)).all()  # cuMemsetD32(bins, 7)
    with np.load(out / glob["inputs"]) as z:
        assert sorted(z.files) == ["0", "var:c_off", "var:g_limit"]
        assert z["var:g_limit"].tobytes() == (300).to_bytes(4, "little") and z["var:c_off"].tobytes() == bytes(4)
        assert z["0"].size == 1024
    for entry in (hist, glob):
        c = check(out, entry, with_inputs=True)
        assert c.returncode == 1 and f"kernel {entry['kernel']}: VIOLATED" in c.stdout, c.stdout + c.stderr
    c = check(out, hist, with_inputs=False)
    assert c.returncode == 0 and "kernel hist: VERIFIED" in c.stdout


def test_contents_limit_and_zero(driver, tmp_path):
    r, index = capture(driver, tmp_path / "a", "contents", "--contents-limit", "300")
    assert r.returncode == 0, r.stderr
    hist = index["launches"][0]
    assert hist["notes"] == ["buffer 1: contents not recorded (over the --contents-limit); check runs on generated "
                             "values for it"]
    with np.load(tmp_path / "a" / hist["inputs"]) as z:
        assert z.files == ["0"]
    r, index = capture(driver, tmp_path / "b", "contents", "--contents-limit", "0")
    hist = index["launches"][0]
    assert hist["inputs"] is None and "--inputs" not in hist["check"]
    assert hist["notes"] == ["buffer contents not recorded: check runs on generated values"]
    assert not list((tmp_path / "b").glob("*.npz"))


def test_required_cluster_attribute_and_a_refused_launch(driver, tmp_path):
    # (a cluster set with cuFuncSetAttribute was recorded as 1x1x1: a race between the CTAs of a
    # cluster was verified away; a launch the driver refused was written as a spec)
    r, index = capture(driver, tmp_path / "cap", "cluster")
    assert r.returncode == 0 and "refused launch: CUresult 1" in r.stdout, r.stdout + r.stderr
    (l,) = index["launches"]
    assert l["kernel"] == "to_rank0" and l["cluster"] == [2, 1, 1]
    assert json.loads((tmp_path / "cap" / l["spec"]).read_text())["cluster"] == [2, 1, 1]
    assert l["notes"] == ["cluster 2x1x1 from the function's required cluster attribute (cuFuncSetAttribute; "
                          "the launch names none)"]
    assert index["notes"] == [f"launch 1 (scale, pid {l['pid']}): the driver refused it (CUresult 1); it did not "
                              "run, no spec written"]
    assert [p.name for p in (tmp_path / "cap").glob("launch_*.json")] == [l["spec"]]


def test_host_pitched_and_pool_memory_and_their_frees(driver, tmp_path):
    # (page-locked host memory and pitched allocations were not seen: their pointers became
    # integers, and check reported accesses outside every allocation; stream-ordered and host
    # frees were not seen either)
    out = tmp_path / "cap"
    r, index = capture(driver, out, "memory")
    assert r.returncode == 0, r.stdout + r.stderr
    recs = specs.read_records(out)
    assert [x["api"] for x in recs if x["type"] == "alloc"] == \
        ["cuMemHostAlloc", "cuMemAllocPitch", "cuMemAllocAsync", "cuMemAllocHost", "cuMemAlloc"]
    assert [x["api"] for x in recs if x["type"] == "free"] == ["cuMemFreeAsync", "cuMemFreeHost"]
    host, pitched, rng = index["launches"]
    assert host["params"][0]["kind"] == "pointer" and host["params"][0]["allocation"] == "alloc0"
    assert pitched["params"][0]["kind"] == "pointer" and pitched["params"][0]["allocation"] == "alloc1"
    assert json.loads((out / host["spec"]).read_text())["buffers"] == {"0": {"dtype": "uint8", "shape": [1024]}}
    assert json.loads((out / pitched["spec"]).read_text())["buffers"] == {"0": {"dtype": "uint8", "shape": [4096]}}
    assert host["notes"] == [] and pitched["notes"] == []
    # a one-past-the-end pointer (a [b, e) range) is an integer, and says so though its PTX type is .u64
    assert rng["params"][1]["kind"] == "scalar"
    assert rng["notes"] == ["parameter 1: 8 bytes in no recorded allocation, taken as an integer "
                            "(the address just past the end of alloc4)"]


def test_graph_launches_and_a_launch_during_stream_capture_are_noted(driver, tmp_path):
    r, index = capture(driver, tmp_path / "cap", "graph")
    assert r.returncode == 0, r.stdout + r.stderr
    (l,) = index["launches"]
    assert l["inputs"] is None
    assert l["notes"] == ["made during stream capture: the launch did not run then (it runs when the graph is "
                          "launched, on the contents of that time, which are not recorded)"]
    assert index["notes"] == ["2 graph launch(es): their kernels are not recorded"]


def _records(d: Path, recs: list[dict]):
    (d / "records.9.jsonl").write_text("\n".join(json.dumps(r) for r in recs) + "\n")


SCALE_PTX = ".version 8.8\n.target sm_90a\n.address_size 64\n.visible .entry scale(\n\t.param .u64 scale_param_0,\n" \
            "\t.param .u32 scale_param_1\n)\n{\n\tret;\n}\n"


def _launch(ptr: int, **kw) -> dict:
    return {"type": "launch", "seq": 0, "api": "cuLaunchKernel", "function": "0x1", "name": "scale", "module": 0,
            "grid": [2, 1, 1], "block": [128, 1, 1], "cluster": [1, 1, 1], "dynamic_smem": 0, "result": 0,
            "capturing": 0, "param_source": "ptx",
            "params": [{"offset": 0, "size": 8, "hex": ptr.to_bytes(8, "little").hex()},
                       {"offset": 8, "size": 4, "hex": (256).to_bytes(4, "little").hex()}], **kw}


def test_a_pointer_into_reused_pool_memory_is_matched_to_the_newest_allocation(tmp_path):
    # (a pool's allocation inside one whose free was not seen was matched to the old one: a
    # 256-byte buffer became 512 KiB and an overflow of it was verified)
    x = 0x302000000
    (tmp_path / "module_9_0.ptx").write_text(SCALE_PTX)
    _records(tmp_path, [
        {"type": "module", "id": 0, "api": "cuLibraryLoadData", "kind": "ptx", "size": 0, "file": "module_9_0.ptx"},
        {"type": "alloc", "api": "cuMemAllocAsync", "ptr": x, "size": 1 << 20},
        {"type": "alloc", "api": "cuMemAllocAsync", "ptr": x + (1 << 20), "size": 1 << 20},
        {"type": "alloc", "api": "cuMemAllocAsync", "ptr": x, "size": 1536 << 10},
        {"type": "alloc", "api": "cuMemAllocAsync", "ptr": x + (1536 << 10), "size": 256},
        _launch(x + (1536 << 10))])
    (l,) = specs.write_specs(tmp_path, ["./app"])["launches"]
    assert l["params"][0]["allocation"] == "alloc3" and l["params"][0]["byte_offset"] == 0
    assert json.loads((tmp_path / l["spec"]).read_text())["buffers"] == {"0": {"dtype": "uint8", "shape": [256]}}


def _fatbin(entries: list[tuple[int, int, bytes]]) -> bytes:
    body = b""
    for kind, arch, payload in entries:
        payload += b"\0" * (-len(payload) % 8)
        head = struct.pack("<HHIQ", kind, 0x101, 64, len(payload)) + bytes(12) + struct.pack("<I", arch) + bytes(32)
        body += head + payload
    return struct.pack("<IHHQ", 0xBA55ED50, 1, 16, len(body)) + body


def test_fatbin_ptx_for_a_lower_arch_than_its_cubin_is_noted(tmp_path):
    # (a fatbin with compute_80 PTX and an sm_90a cubin: a Hopper device runs the cubin, and the
    # PTX checked, from other __CUDA_ARCH__ branches, verified without a word)
    ptx = SCALE_PTX.replace("sm_90a", "sm_80").encode()
    (tmp_path / "module_9_0.fatbin").write_bytes(_fatbin([(1, 80, ptx), (2, 90, b"\x7fELF" + bytes(60))]))
    _records(tmp_path, [
        {"type": "module", "id": 0, "api": "cuLibraryLoadData", "kind": "fatbin", "size": 0, "file": "module_9_0.fatbin"},
        {"type": "alloc", "api": "cuMemAlloc", "ptr": 0x1000, "size": 1024}, _launch(0x1000)])
    index = specs.write_specs(tmp_path, ["./app"])
    note = ("the checked PTX is .target sm_80, but the fatbin also holds a cubin for sm_90: a device of that "
            "architecture runs the cubin, not this PTX (the checked code may not be the code that ran)")
    assert index["modules"][0]["note"] == note
    assert note in index["launches"][0]["notes"]
    # the same PTX alone, or beside a cubin for its own arch, says nothing
    (tmp_path / "module_9_0.fatbin").write_bytes(_fatbin([(1, 80, ptx), (2, 80, b"\x7fELF" + bytes(60))]))
    index = specs.write_specs(tmp_path, ["./app"])
    assert "note" not in index["modules"][0] and not any("cubin" in n for n in index["launches"][0]["notes"])


@pytest.mark.parametrize("options, message", [
    (["-o", "{file}"], "-o {file}: not a directory"),
    (["--limit", "-1"], "--limit -1: not a count of launches"),
    (["--contents-limit", "lots"], "--contents-limit lots: not a byte count"),
])
def test_capture_usage_errors(tmp_path, options, message):
    # (-o naming a file was an internal error, exit 3; --limit -1 was accepted)
    f = tmp_path / "afile"
    f.write_text("")
    opts = [o.format(file=f) for o in options]
    r = subprocess.run([sys.executable, "-m", "kverify", "capture", "--no-gpu", *opts, "--", "true"], cwd=tmp_path,
                       env=dict(os.environ, PYTHONPATH=str(ROOT)), capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    assert r.stderr == f"<command line>:1:1: {message.format(file=f)}\n"
