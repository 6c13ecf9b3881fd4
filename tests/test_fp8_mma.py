"""FP8 tensor-core operations on the interpreter: wgmma.mma_async .m64n16k32 with .e4m3/.e5m2
A and B (shared-memory descriptors and A in registers, f32 and f16 accumulators; PTX ISA
§9.7.15) and mma.sync m16n8k32 / m16n8k16 .e4m3/.e5m2 (f32 and f16 C/D; §9.7.14), on the zoo
family tests/zoo/fp8_mma (our own kernels, nvcc -arch=sm_90a).

The operands (the family's ``ref.exact_inputs``, which bench/conformance.py also runs on the
GPU) are chosen so that every partial sum is exact in the output type (signed small
multiples of powers of two), so the interpreter must equal the numpy reference of the
decoded operands bit for bit, whatever order the tensor core sums in. Twins whose PTX names
the other fp8 format for an operand show that the decoding follows the instruction's type."""
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import ROOT, ZOO
from kverify.launch import LaunchSpec
from kverify.semantics.interpreter import call_reference, load_reference, run_kernel
from kverify.semantics.ir import load_module
from kverify.semantics.values.narrow import fp8_to_f32
from kverify.verifier.cli import main

FAM = ZOO / "fp8_mma"
CORRECT = [("fp8_mma", v) for v in json.loads((FAM / "manifest.json").read_text())["variants"] if v["correct"]]
FMT = {"float8_e4m3fn": "e4m3", "float8_e5m2": "e5m2"}


def _inputs(v, seed):
    return load_reference(v["conformance_inputs"], str(FAM / "ref.py"))(v["launch"], seed)


def _run(path, v, inputs):
    m = load_module(str(path))
    return run_kernel(m, m.kernel(v["kernel"]), LaunchSpec.from_dict(v["launch"]), inputs=inputs)


def _twin(tmp_path, fam, v, old, new):
    """The kernel's PTX with ``old`` replaced by ``new``, beside copies of its sources (the
    parameter names come from the .cu through the .loc lines)."""
    src = ZOO / fam
    for f in list(src.glob("*.cu")) + list(src.glob("*.cuh")):
        (tmp_path / f.name).write_text(f.read_text())
    text = (src / v["file"].replace(".cu", ".ptx")).read_text()
    assert old in text
    out = tmp_path / v["file"].replace(".cu", ".ptx")
    out.write_text(text.replace(old, new))
    return out


def _exact(inputs, v):
    bufs = v["launch"]["buffers"]
    a = fp8_to_f32(inputs["a"], FMT[bufs["a"]["dtype"]]).astype(np.float64)
    b = fp8_to_f32(inputs["b"], FMT[bufs["b"]["dtype"]]).astype(np.float64)
    return a @ b


@pytest.mark.parametrize("fam,v", CORRECT, ids=[f"{f}/{v['kernel']}" for f, v in CORRECT])
def test_fp8_kernel_equals_the_reference_bit_for_bit_on_exact_inputs(fam, v):
    path = ZOO / fam / v["file"].replace(".cu", ".ptx")
    inputs = _inputs(v, 7)
    r = _run(path, v, inputs)
    assert r.status == "complete" and r.findings == [], (r.reason, r.findings)
    exp = call_reference(load_reference(v["reference"], str(path)), r.inputs, LaunchSpec.from_dict(v["launch"]))["out"]
    exact = _exact(inputs, v)
    assert np.array_equal(exp.astype(np.float64), exact)  # the inputs keep every sum exact
    out = np.asarray(r.outputs["out"]).reshape(exp.shape)
    out = out.view(np.float16) if exp.dtype == np.float16 and out.dtype != np.float16 else out
    assert out.dtype == exp.dtype and np.array_equal(out.view(np.uint8), exp.view(np.uint8))
    assert np.count_nonzero(exact) > exact.size // 2 and (exact < 0).any() and (exact > 0).any()


TWINS = [  # (family, kernel, the PTX type string, the twin's, the operand it re-decodes)
    ("fp8_mma", "wgmma_fp8", "m64n16k32.f32.e4m3.e5m2", "m64n16k32.f32.e4m3.e4m3", "b"),
    ("fp8_mma", "wgmma_fp8_areg", "m64n16k32.f32.e5m2.e4m3", "m64n16k32.f32.e4m3.e4m3", "a"),
    ("fp8_mma", "mma_fp8", "row.col.f32.e4m3.e5m2.f32", "row.col.f32.e4m3.e4m3.f32", "b"),
    ("fp8_mma", "mma_fp8_k16", "row.col.f32.e5m2.e4m3.f32", "row.col.f32.e4m3.e4m3.f32", "a"),
]


@pytest.mark.parametrize("fam,kernel,old,new,operand", TWINS, ids=[t[1] for t in TWINS])
def test_a_twin_naming_the_other_fp8_format_reads_the_bytes_as_that_format(tmp_path, fam, kernel, old, new,
                                                                          operand):
    v = next(v for _, v in CORRECT if v["kernel"] == kernel)
    inputs = _inputs(v, 11)
    r = _run(_twin(tmp_path, fam, v, old, new), v, inputs)
    assert r.status == "complete"
    out = np.asarray(r.outputs["out"]).reshape(-1)
    right = _exact(inputs, v).reshape(-1).astype(np.float32)
    assert np.count_nonzero(out != right) > right.size // 2  # the seeded type confusion is visible
    # ... and is exactly the product with that operand decoded as e4m3
    bufs = v["launch"]["buffers"]
    dec = {n: fp8_to_f32(inputs[n], "e4m3" if n == operand else FMT[bufs[n]["dtype"]]).astype(np.float64)
           for n in ("a", "b")}
    assert np.array_equal(out, (dec["a"] @ dec["b"]).reshape(-1).astype(np.float32))


@pytest.mark.parametrize("fam,v", CORRECT, ids=[f"{f}/{v['kernel']}" for f, v in CORRECT])
def test_check_verifies_each_fp8_kernel_with_nothing_unmodelled(fam, v, capsys):
    path = ZOO / fam / v["file"].replace(".cu", ".ptx")
    rc = main(["check", str(path), "--kernel", v["kernel"], "--launch", json.dumps(v["launch"]), "--format", "json"])
    rep = json.loads(capsys.readouterr().out)
    k = rep["kernels"][0]
    assert (rc, k["verdict"]) == (0, "verified")
    text = json.dumps(k).lower()
    assert "unsupported" not in text and "not modelled" not in text
    assert {o["status"] for o in k["obligations"]} <= {"proved", "bounded", "vacuous"}


def test_fp8_mma_sync_satfinite_and_integer_wgmma_are_unsupported_not_run(tmp_path):
    """ptxas rejects .satfinite on an fp8 mma.sync and integer wgmma is not modelled: the
    interpreter stops with the reason instead of computing something."""
    v = next(v for f, v in CORRECT if v["kernel"] == "mma_fp8_k16")
    r = _run(_twin(tmp_path, "fp8_mma", v, "m16n8k16.row.col.f32", "m16n8k16.row.col.satfinite.f32"), v, _inputs(v, 1))
    assert r.status == "unsupported" and "mma.sync" in r.reason and "e4m3" in r.reason
    v = next(v for f, v in CORRECT if v["kernel"] == "wgmma_fp8_f16")
    r = _run(_twin(tmp_path, "fp8_mma", v, "m64n16k32.f16.e4m3.e4m3", "m64n16k32.s32.s8.s8"), v, _inputs(v, 1))
    assert r.status == "unsupported" and "only floating-point wgmma" in r.reason


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas is not on PATH")
def test_conformance_runs_the_fp8_kernels_twice_and_holds_the_exact_run_to_bit_equality(tmp_path):
    """bench/conformance.py gen --families fp8_mma: every correct kernel with the seeded random
    inputs and again (``__exact``) with ``ref.exact_inputs``; compare, on GPU outputs made
    from the interpreter's with one element moved by 2 ulps, reports the random-input run as
    an expected tensor-core difference and the exact-input run as a disagreement."""
    conf = ROOT / "bench" / "conformance.py"
    d = tmp_path / "conf"
    r = subprocess.run([sys.executable, str(conf), "gen", "--zoo-only", "--families", "fp8_mma", "--no-lowered",
                        "--dir", str(d)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    index = json.loads((d / "index.json").read_text())
    names = [e["name"] for e in index["zoo"]]
    kernels = [v["kernel"] for _, v in CORRECT]
    assert names == [f"fp8_mma__{k}{s}" for k in kernels for s in ("", "__exact")]
    assert all(e["interp_status"] == "complete" and e["mma"] for e in index["zoo"])
    interp = Path(str(d) + "_interp")
    arrays, moved = {}, ("fp8_mma__wgmma_fp8", "fp8_mma__mma_fp8__exact")
    for e in index["zoo"]:
        for k, v in np.load(interp / f"{e['name']}.interp.npz").items():
            v = v.copy()
            if k == "out" and e["name"] in moved:
                v.reshape(-1).view(np.uint32)[5] += 2
            arrays[f"{e['name']}::{k}"] = v
    g = tmp_path / "gpu"
    g.mkdir()
    np.savez_compressed(g / "gpu.npz", **arrays)
    (g / "gpu.json").write_text(json.dumps({"device": {"name": "interpreter outputs"}, "gpu_s": 0}))
    res = tmp_path / "res.json"
    r = subprocess.run([sys.executable, str(conf), "compare", "--dir", str(d), "--gpu", str(g / "gpu.npz"),
                        "--result", str(res)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    rows = {z["name"]: z for z in json.loads(res.read_text())["zoo"]}
    assert rows["fp8_mma__wgmma_fp8"]["status"] == "expected (approximate or tensor-core instructions)"
    assert rows["fp8_mma__wgmma_fp8"]["max_ulp_or_count"] == {"out": 2}
    assert rows["fp8_mma__mma_fp8__exact"]["status"] == "DISAGREEMENT"
    assert {n for n, z in rows.items() if z["status"] != "bit-exact"} == set(moved)
