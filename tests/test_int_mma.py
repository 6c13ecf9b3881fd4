"""Integer and f64 mma.sync on the interpreter (PTX ISA §9.7.14 mma): m8n8k16 / m16n8k16 /
m16n8k32 with .s8/.u8, m8n8k32 / m16n8k32 / m16n8k64 with .s4/.u4 (s32 accumulators, wrapping,
or clamped under .satfinite), m8n8k4 and the sm_90 m16n8k{4,8,16} with .f64, on the zoo family
tests/zoo/int_mma (our own kernels, nvcc -arch=sm_90a). The kernels pack row-major operands into
the fragments; the references compute a @ b + c from the operands directly, so a wrong fragment
layout or element decoding shows as a difference. Twins whose PTX names another operand type
show that the decoding follows the instruction."""
import json

import numpy as np
import pytest

from conftest import ZOO
from kverify.launch import LaunchSpec
from kverify.semantics.interpreter import call_reference, load_reference, run_kernel
from kverify.semantics.ir import load_module
from kverify.semantics.memory_model.wgmma import MMA_SHAPES, mma_dims, mma_fragment_layout
from kverify.verifier.check import check_kernel

FAM = ZOO / "int_mma"
VARIANTS = json.loads((FAM / "manifest.json").read_text())["variants"]
CORRECT = [v for v in VARIANTS if v["correct"]]
REF = str(FAM / "ref.py")


def _variant(kernel):
    return next(v for v in CORRECT if v["kernel"] == kernel)


def _run(path, v, inputs):
    m = load_module(str(path))
    r = run_kernel(m, m.kernel(v["kernel"]), LaunchSpec.from_dict(v["launch"]), inputs=inputs)
    assert r.status == "complete" and not r.findings, r.reason
    return r.outputs["out"]


def _twin(tmp_path, v, old, new):
    text = (FAM / v["file"].replace(".cu", ".ptx")).read_text()
    assert text.count(old) >= 1
    out = tmp_path / v["file"].replace(".cu", ".ptx")
    out.write_text(text.replace(old, new))
    for f in list(FAM.glob("*.cu")) + list(FAM.glob("*.cuh")):
        (tmp_path / f.name).write_text(f.read_text())
    return out


@pytest.mark.parametrize("shape,ty", sorted(MMA_SHAPES))
def test_every_fragment_covers_each_element_once(shape, ty):
    m, n, k = mma_dims(shape)
    for lay, dims in zip(mma_fragment_layout(shape, ty), ((m, k), (k, n), (m, n))):
        seen = np.zeros(dims, int)
        for r, c in lay:
            np.add.at(seen, (np.broadcast_to(r, (32,)), np.broadcast_to(c, (32,))), 1)
        assert (seen == 1).all()


@pytest.mark.parametrize("v", CORRECT, ids=[v["kernel"] for v in CORRECT])
def test_bit_exact_on_the_conformance_inputs(v):
    """The inputs bench/conformance.py also runs on the GPU: the interpreter equals the reference
    bit for bit (integer results always; f64 with small integer operands)."""
    inputs = load_reference("ref:exact_inputs", REF)(v["launch"], 3)
    got = _run(FAM / v["file"].replace(".cu", ".ptx"), v, inputs)
    want = call_reference(load_reference(v["reference"], REF), inputs, LaunchSpec.from_dict(v["launch"]))["out"]
    assert got.dtype == want.dtype and np.array_equal(got.view(np.uint8), want.view(np.uint8))


def test_satfinite_clamps_and_its_absence_wraps(tmp_path):
    v = _variant("mma_s8_satfinite")
    inputs = load_reference("ref:exact_inputs", REF)(v["launch"], 3)
    sat = _run(FAM / "mma_s8_satfinite.ptx", v, inputs)
    assert (sat == 2**31 - 1).any() and (sat == -2**31).any()  # these inputs overflow both ways
    plain = _twin(tmp_path, v, ".satfinite.s32.s8.s8.s32", ".s32.s8.s8.s32")
    wrapped = _run(plain, v, inputs)
    a = inputs["a"].astype(np.int8).astype(np.int64).reshape(16, 32)
    b = inputs["b"].astype(np.int8).astype(np.int64).reshape(32, 8)
    exact = a @ b + inputs["c"].astype(np.int64)
    assert np.array_equal(wrapped, ((exact + 2**31) % 2**32 - 2**31).astype(np.int32))
    assert np.array_equal(sat, np.clip(exact, -2**31, 2**31 - 1).astype(np.int32))
    assert not np.array_equal(sat, wrapped)


@pytest.mark.parametrize("kernel,old,new,ta", [
    ("mma_s8", ".s32.s8.s8.s32", ".s32.u8.s8.s32", "u8"),
    ("mma_s4", ".s32.s4.s4.s32", ".s32.u4.s4.s32", "u4"),
])
def test_operand_decoding_follows_the_instruction(tmp_path, kernel, old, new, ta):
    v = _variant(kernel)
    inputs = load_reference("ref:exact_inputs", REF)(v["launch"], 5)
    got = _run(_twin(tmp_path, v, old, new), v, inputs)
    import importlib.util

    spec = importlib.util.spec_from_file_location("int_mma_ref", REF)
    ref = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ref)
    m, k = v["launch"]["buffers"]["a"]["shape"]
    want = ref._int_gemm(inputs, m, k, 8, ta, old.split(".")[3])["out"]
    assert np.array_equal(got, want)
    assert not np.array_equal(got, _run(FAM / f"{kernel}.ptx", v, inputs))


def test_f64_is_a_chain_of_fmas_in_k_order():
    """m8n8k4 .f64: D = C, then one fused multiply-add per k, each rounded to nearest even. With
    C = 1 and two products of 2^-53, each FMA rounds the tie 1 + 2^-53 back to 1 (an exact sum
    rounded once would give 1 + 2^-52)."""
    v = _variant("mma_f64")
    a, b, c = np.zeros((8, 8)), np.zeros((8, 8)), np.zeros((8, 8))
    a[0, 0] = a[0, 1] = 2.0**-53
    b[:, 0] = 1.0
    c[0, 0] = 1.0
    got = _run(FAM / "mma_f64.ptx", v, {"a": a, "b": b, "c": c})
    assert got[0, 0] == 1.0 and np.count_nonzero(got) == 1


def test_check_verifies_the_family_and_finds_the_divergent_twin():
    v = next(v for v in VARIANTS if not v["correct"])
    m = load_module(str(FAM / v["file"].replace(".cu", ".ptx")))
    ob = {o.title: o for o in check_kernel(m, m.kernel("mma_s8"), LaunchSpec.from_dict(v["launch"])).obligations}
    nb = ob["named-barrier conformance"]
    assert nb.status == "violated" and nb.rule == "barrier.divergence" and nb.locations[0].line == 24
    for w in CORRECT:
        m = load_module(str(FAM / w["file"].replace(".cu", ".ptx")))
        rep = check_kernel(m, m.kernel(w["kernel"]), LaunchSpec.from_dict(w["launch"]))
        assert rep.verdict == "verified", (w["kernel"], [(o.title, o.status, o.message) for o in rep.obligations])


def test_binary_mma_stays_unsupported(tmp_path):
    """.b1 mma (xor/and popc) is not modelled: the run is unsupported, the check unknown."""
    v = _variant("mma_s8")
    path = _twin(tmp_path, v, "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32",
                 "mma.sync.aligned.m16n8k256.row.col.s32.b1.b1.s32.and.popc")
    m = load_module(str(path))
    r = run_kernel(m, m.kernel("mma_s8"), LaunchSpec.from_dict(v["launch"]))
    assert r.status == "unsupported"
