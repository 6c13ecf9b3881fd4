"""FP8 tensor-core operations on the interpreter: wgmma.mma_async .m64n16k32 with .e4m3/.e5m2
A and B (shared-memory descriptors and A in registers, f32 and f16 accumulators; PTX ISA
§9.7.15) and mma.sync m16n8k32 / m16n8k16 .e4m3/.e5m2 (f32 and f16 C/D; §9.7.14), on the zoo
families tests/zoo/wgmma_fp8 and tests/zoo/mma_fp8 (our own kernels, nvcc -arch=sm_90a).

The operands are chosen so that every partial sum is exact in the output type (signed small
multiples of powers of two), so the interpreter must equal the numpy reference of the
decoded operands bit for bit, whatever order the tensor core sums in. Twins whose PTX names
the other fp8 format for an operand show that the decoding follows the instruction's type."""
import json

import numpy as np
import pytest

from conftest import ZOO
from kverify.launch import LaunchSpec
from kverify.semantics.interpreter import call_reference, load_reference, run_kernel
from kverify.semantics.ir import load_module
from kverify.semantics.values.narrow import fp8_to_f32
from kverify.verifier.cli import main

FAMILIES = ("wgmma_fp8", "mma_fp8")
CORRECT = [(fam, v) for fam in FAMILIES for v in json.loads((ZOO / fam / "manifest.json").read_text())["variants"]
           if v["correct"]]
FMT = {"float8_e4m3fn": "e4m3", "float8_e5m2": "e5m2"}
#: values exact in both fp8 formats; products are multiples of 1/4 of magnitude <= 16, so
#: sums of up to 64 of them are exact in f32 and sums of 32 (|sum| <= 512) exact in f16
VALUES = np.array([0.5, 1.0, 1.5, 2.0, 3.0, 4.0, -0.5, -1.0, -2.0, -3.0, -4.0, 0.0])


def _encode(vals, fmt):
    table = fp8_to_f32(np.arange(256), fmt)
    codes = np.array([int(np.flatnonzero(table == v)[0]) for v in vals.reshape(-1)], np.uint8)
    assert np.array_equal(fp8_to_f32(codes, fmt), vals.reshape(-1).astype(np.float32))
    return codes.reshape(vals.shape)


def _inputs(v, seed):
    rng = np.random.default_rng(seed)
    bufs = v["launch"]["buffers"]
    out = {}
    for name in ("a", "b"):
        out[name] = _encode(rng.choice(VALUES, tuple(bufs[name]["shape"])), FMT[bufs[name]["dtype"]])
    return out


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
    ("wgmma_fp8", "wgmma_fp8", "m64n16k32.f32.e4m3.e5m2", "m64n16k32.f32.e4m3.e4m3", "b"),
    ("wgmma_fp8", "wgmma_fp8_areg", "m64n16k32.f32.e5m2.e4m3", "m64n16k32.f32.e4m3.e4m3", "a"),
    ("mma_fp8", "mma_fp8", "row.col.f32.e4m3.e5m2.f32", "row.col.f32.e4m3.e4m3.f32", "b"),
    ("mma_fp8", "mma_fp8_k16", "row.col.f32.e5m2.e4m3.f32", "row.col.f32.e4m3.e4m3.f32", "a"),
]


@pytest.mark.parametrize("fam,kernel,old,new,operand", TWINS, ids=[t[1] for t in TWINS])
def test_a_twin_naming_the_other_fp8_format_reads_the_bytes_as_that_format(tmp_path, fam, kernel, old, new,
                                                                          operand):
    v = next(v for v in CORRECT if v[1]["kernel"] == kernel)[1]
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
    r = _run(_twin(tmp_path, "mma_fp8", v, "m16n8k16.row.col.f32", "m16n8k16.row.col.satfinite.f32"), v, _inputs(v, 1))
    assert r.status == "unsupported" and "mma.sync" in r.reason and "e4m3" in r.reason
    v = next(v for f, v in CORRECT if v["kernel"] == "wgmma_fp8_f16")
    r = _run(_twin(tmp_path, "wgmma_fp8", v, "m64n16k32.f16.e4m3.e4m3", "m64n16k32.s32.s8.s8"), v, _inputs(v, 1))
    assert r.status == "unsupported" and "only floating-point wgmma" in r.reason
