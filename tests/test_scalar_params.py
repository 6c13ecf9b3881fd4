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


@pytest.mark.parametrize("extra, where, says", [
    # a pointer as a number and as a buffer: the SMT proof took a=5, the run a buffer
    ({"args": {"n": 1000, "a": 5}}, "buffers.a", "parameter a is given twice (args.a and buffers.a)"),
    # two keys of one parameter: the first found won
    ({"args": {"n": 1000, "vadd_param_3": 7}}, "args.vadd_param_3", "parameter n is given twice (args.n and "
                                                                      "args.vadd_param_3)"),
    ({"args": {"n": 1000, "3": 7}}, "args.3", "parameter n is given twice (args.n and args.3)"),
])
def test_a_parameter_given_twice_is_refused(tmp_path, capfd, extra, where, says):
    spec = json.loads((ZOO / "vadd" / "launch.json").read_text())
    spec.update(extra)
    f = tmp_path / "launch.json"
    f.write_text(json.dumps(spec))
    assert main(["check", str(ZOO / "vadd" / "vadd.ptx"), "--launch", str(f)]) == 2
    out = capfd.readouterr()
    assert f"launch spec: {where}: {says}: give it once" in out.out + out.err
