"""An integer division or remainder by zero yields an unspecified value (PTX ISA §9.7.1.8 div,
§9.7.1.9 rem); SMT-LIB defines x / 0 = all ones and x % 0 = x. A race-freedom proof over
``s[t % d]`` for d = 0 or d >= 256 rested on x % 0 = x (every thread its own element): the
two-thread checker now takes the quotient by zero as any value (approximate), so no proof rests on it."""
import json
import subprocess
import sys

import pytest

from conftest import ROOT

PTX = ROOT / "tests" / "data" / "div_zero" / "rem_index.ptx"


@pytest.mark.parametrize("args, status", [
    ((), "unknown"),  # every d: d = 0 is allowed (was: proved)
    (("--arg", "d=512"), "proved"),  # a nonzero divisor: the remainder is t
])
def test_race_proof_does_not_rest_on_a_remainder_by_zero(args, status):
    r = subprocess.run([sys.executable, "-m", "kverify", "check", str(PTX), "--block", "256", "--arg", "out=256:f32",
                        *args, "--format", "json"], cwd=ROOT, capture_output=True, text=True)
    (k,) = json.loads(r.stdout)["kernels"]
    sh = next(o for o in k["obligations"] if o["title"] == "race-free: shared")
    assert sh["status"] == status, sh
    if status == "unknown":
        assert "an integer division by zero" in sh["message"]


DIV = ROOT / "tests" / "data" / "div_zero"
SPLIT_ARGS = ["--grid", "1", "--block", "64", "--arg", "num=64:u32", "--arg", "den=64:u32", "--arg", "quot=64:u32",
              "--arg", "rem=64:u32", "--arg", "n=64"]


def _check_split(ptx, tmp_path, zero_at=None):
    """``check`` of ``ptx`` with divisors 1..64, the one at ``zero_at`` made 0."""
    import numpy as np

    den = np.arange(1, 65, dtype=np.uint32)
    if zero_at is not None:
        den[zero_at] = 0
    np.savez(tmp_path / "in.npz", num=np.arange(64, dtype=np.uint32) * 7 + 3, den=den)
    argv = [sys.executable, "-m", "kverify", "check", str(DIV / ptx), *SPLIT_ARGS, "--inputs",
            str(tmp_path / "in.npz"), "--format", "json"]
    r = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True)
    (k,) = json.loads(r.stdout)["kernels"]
    return r.returncode, k


def test_a_run_that_divides_by_zero_violates_memory_safety_at_the_division(tmp_path):
    """The interpreter goes on with SMT-LIB's x / 0 (all ones) and x % 0 (x); the GPU need not give
    those: a division by zero in a run is a finding at the div and at the rem, with the thread."""
    rc, k = _check_split("div_zero__unguarded.ptx", tmp_path, zero_at=37)
    assert rc == 1 and k["verdict"] == "violated"
    mem = next(o for o in k["obligations"] if o["title"] == "memory safety")
    assert mem["status"] == "violated" and mem["rule"] == "arith.div-by-zero"
    assert (mem["locations"][0]["line"], mem["locations"][0]["column"]) == (11, 5)
    assert "div.u32 with divisor 0 in 1 lane(s)" in mem["message"]
    assert mem["counterexample"]["details"]["thread"] == "thread 37 (warp 1, lane 5) of CTA (0,0,0)"
    assert "--inputs" in mem["counterexample"]["replay"]
    found = {(f["rule"], f["locations"][0]["line"]) for f in k["findings"]}
    assert found == {("arith.div-by-zero", 11), ("arith.div-by-zero", 12)}


@pytest.mark.parametrize("ptx, zero_at", [("div_zero.ptx", 37), ("div_zero__unguarded.ptx", None)],
                         ids=["guarded", "no-zero-divisor"])
def test_no_division_by_zero_in_the_run_is_no_finding(tmp_path, ptx, zero_at):
    """The guarded kernel skips the division for a zero divisor; the unguarded one given divisors
    1..64 never divides by zero: memory safety is bounded by the run, not violated."""
    rc, k = _check_split(ptx, tmp_path, zero_at)
    assert rc == 0 and k["verdict"] == "verified"
    mem = next(o for o in k["obligations"] if o["title"] == "memory safety")
    assert mem["status"] == "bounded" and not k["findings"]


def test_a_run_with_a_zero_parameter_divisor_violates_memory_safety_at_the_remainder():
    """``t % d`` with the launch's d = 0 (every lane divides by the same zero): the run is a
    finding at the rem, not a run on SMT-LIB's ``t % 0 = t``."""
    r = subprocess.run([sys.executable, "-m", "kverify", "check", str(PTX), "--block", "256", "--arg", "out=256:f32",
                        "--arg", "d=0", "--format", "json"], cwd=ROOT, capture_output=True, text=True)
    (k,) = json.loads(r.stdout)["kernels"]
    assert r.returncode == 1 and k["verdict"] == "violated"
    mem = next(o for o in k["obligations"] if o["title"] == "memory safety")
    assert mem["status"] == "violated" and mem["rule"] == "arith.div-by-zero"
    assert mem["locations"][0]["line"] == 6
    assert "rem.u32 with divisor 0 in 32 lane(s) of warp 0" in mem["message"]
