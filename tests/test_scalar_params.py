"""Scalar launch arguments reach the kernel as the bits of its parameter's type, or are refused:
a value the kernel would not see must not stand in a verdict's scope (``for n=... only``)."""
import json

import pytest

from conftest import ROOT, ZOO
from kverify import api
from kverify.launch.params import scalar_misfit
from kverify.verifier.cli import main

F16 = ROOT / "tests" / "data" / "scalar_params" / "f16_param.ptx"


def _spec(tmp_path, s):
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"kernel": "scale", "grid": [1, 1, 1], "block": [32, 1, 1],
                                "args": {"s": s, "n": 32}, "outputs": ["out"],
                                "buffers": {"out": {"dtype": "float16", "shape": [32]}}}, indent=1))
    return spec


def test_f16_parameter_gets_half_bits(tmp_path):
    # the f32 bits masked to two bytes made 1.5 a zero
    r = api.run(str(F16), launch=str(_spec(tmp_path, 1.5)))
    assert r.status == "complete"
    assert r.outputs["out"].tolist() == [1.5] * 32


@pytest.mark.parametrize("value, says", [
    (1.5, "parameter n is .u32: 1.5 is not an integer"),
    (5000000000, "parameter n is .u32: 5000000000 does not fit 32 bits (-2147483648..4294967295)"),
    (-2147483649, "parameter n is .u32: -2147483649 does not fit 32 bits"),
])
def test_arg_that_does_not_fit_is_usage_error(capfd, value, says):
    assert main(["check", str(ZOO / "vadd" / "vadd.ptx"), "--grid", "4", "--block", "128", "--arg", f"n={value}"]) == 2
    out = capfd.readouterr()
    assert f"<command line>:1:1: error: launch spec: args.n: {says}" in out.out + out.err


def test_spec_value_that_overflows_half_is_located(tmp_path, capfd):
    spec = _spec(tmp_path, 70000)
    assert main(["run", str(F16), "--launch", str(spec)]) == 2
    out = capfd.readouterr()
    assert (out.out + out.err).strip().splitlines()[0] == f"{spec}:14:8: launch spec: args.s: parameter s is .f16: 70000 is not finite in .f16"


@pytest.mark.parametrize("v, ty, ok", [
    (-1, "u32", True), (4294967295, "u32", True), (255, "b8", True), (300, "u8", False), (True, "u32", False),
    (3, "f32", True), (65504, "f16", True), (1e40, "f32", False), (1e300, "f64", True), (3.5e38, "bf16", False),
])
def test_scalar_misfit(v, ty, ok):
    assert (scalar_misfit(v, ty) is None) == ok
