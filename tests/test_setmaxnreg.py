"""setmaxnreg.sync.aligned: every thread of a warp and every warp of a warpgroup execute the same one
(PTX ISA 9.7.19.7); the register budget itself is not modelled. Each twin was verified (a no-op)."""
import json
import subprocess
import sys

import pytest

from conftest import ROOT

D = ROOT / "tests" / "data" / "setmaxnreg"


@pytest.mark.parametrize("name, code, says", [
    ("setmax.ptx", 0, None),
    ("setmax__one_warp.ptx", 1, "the warps of warpgroup 0 of CTA (0,0,0) executed different setmaxnreg (.sync.aligned) "
                                "instructions: warp 0 ran 1 (line 14); warps 1, 2, 3 ran none"),
    ("setmax__half_warp.ptx", 1, "setmaxnreg (.sync.aligned) executed by part of warp 0 (threads 0-31) of CTA (0,0,0)"),
])
def test_setmaxnreg_convergence(name, code, says):
    r = subprocess.run([sys.executable, "-m", "kverify", "check", str(D / name), "--format", "json", "--grid", "1",
                        "--block", "256", "--arg", "p_out=256:u32"], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == code, r.stdout + r.stderr
    (k,) = json.loads(r.stdout)["kernels"]
    if says:
        f = [f for f in k["findings"] if f["rule"] == "barrier.divergence"]
        assert f and says in f[0]["message"] and f[0]["locations"][0]["line"] == 14, f
