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
