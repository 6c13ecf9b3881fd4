"""Integer mma.sync in the equivalence engine, and dp4a (which nvcc emits for a plain int8
dot-product loop): tests/data/int_mma_equiv/naive.cu holds naive GEMMs with the interface of the
zoo's int_mma kernels."""
import json
from pathlib import Path

import numpy as np
import pytest

from conftest import ZOO
from kverify.launch import LaunchSpec
from kverify.semantics.interpreter import call_reference, load_reference, run_kernel
from kverify.semantics.ir import load_module
from kverify.verifier.cli import main

D = Path(__file__).parent / "data" / "int_mma_equiv"


@pytest.mark.parametrize("name, ref", [("s8", "mma_s8"), ("s8_sat", "mma_s8_satfinite"), ("s4", "mma_s4")])
def test_naive_references_run_dp4a_and_match_numpy(name, ref):
    m = load_module(str(D / "naive.ptx"))
    spec = LaunchSpec.from_dict(json.loads((D / f"naive_{name}.json").read_text()))
    assert "dp4a" in (D / "naive.ptx").read_text()
    inputs = load_reference("ref:exact_inputs", str(ZOO / "int_mma" / "ref.py"))(json.loads((D / f"{name}.json")
                                                                                             .read_text()), 4)
    r = run_kernel(m, m.kernel(f"naive_{name}"), spec, inputs=inputs)
    assert r.status == "complete" and not r.findings, r.reason
    want = call_reference(load_reference(f"ref:{ref}", str(ZOO / "int_mma" / "ref.py")), inputs, spec)["out"]
    assert np.array_equal(r.outputs["out"], want)


def test_integer_mma_needs_a_bit_vector_model(capsys, tmp_path):
    """Under the real model integer data stays opaque: the engine stops with the reason (and the
    testing fallback still compares the kernels)."""
    rc = main(["equiv", str(ZOO / "int_mma" / "mma_s8.ptx"), str(ZOO / "int_mma" / "mma_s8.ptx"),
               "--launch", str(D / "s8.json"), "--fp", "real", "--cex-dir", str(tmp_path), "--format", "json"])
    (o,) = json.loads(capsys.readouterr().out)["kernels"][0]["obligations"]
    assert "an integer tensor-core sum on integer data" in o["message"] and "use --fp int" in o["message"]


def test_integer_mma_against_itself_is_proved_and_a_type_change_refuted(capsys, tmp_path):
    rc = main(["equiv", str(ZOO / "int_mma" / "mma_s8.ptx"), str(ZOO / "int_mma" / "mma_s8.ptx"),
               "--launch", str(D / "s8.json"), "--fp", "int", "--cex-dir", str(tmp_path), "--format", "json"])
    (o,) = json.loads(capsys.readouterr().out)["kernels"][0]["obligations"]
    assert rc == 0 and o["status"] == "proved", o["message"]
    text = (ZOO / "int_mma" / "mma_s8.ptx").read_text()
    twin = tmp_path / "mma_s8.ptx"
    twin.write_text(text.replace(".s32.s8.s8.s32", ".s32.u8.s8.s32"))
    for f in list((ZOO / "int_mma").glob("*.cu")) + list((ZOO / "int_mma").glob("*.cuh")):
        (tmp_path / f.name).write_text(f.read_text())  # the parameter names come from the source
    rc = main(["equiv", str(twin), str(ZOO / "int_mma" / "mma_s8.ptx"), "--launch", str(D / "s8.json"),
               "--fp", "int", "--cex-dir", str(tmp_path), "--format", "json"])
    (o,) = json.loads(capsys.readouterr().out)["kernels"][0]["obligations"]
    assert rc == 1 and o["status"] == "violated", o["message"]
    # a[0, 1] = 227 read as .u8 instead of -29: 227 * -45 against -29 * -45 with b[1, 0] = 211 (-45)
    assert o["message"] == "refuted under the int model: out[0, 0] differs: candidate -10215, reference 1305"
