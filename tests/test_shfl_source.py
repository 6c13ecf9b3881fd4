"""shfl.sync whose source lane is in range but inactive, exited or outside the membermask reads an
undefined value (PTX ISA 9.7.9.6): the run reports it (it took the exited lanes' registers: verified)."""
import json
import subprocess
import sys

import pytest

from conftest import ROOT

D = ROOT / "tests" / "data" / "shfl_source"


@pytest.mark.parametrize("name, code", [("down.ptx", 0), ("down__past_mask.ptx", 1)])
def test_shfl_source_lane(name, code):
    r = subprocess.run([sys.executable, "-m", "kverify", "check", str(D / name), "--format", "json", "--grid", "1",
                        "--block", "32", "--arg", "p_out=32:u32"], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == code, r.stdout + r.stderr
    (k,) = json.loads(r.stdout)["kernels"]
    mem = next(o for o in k["obligations"] if o["title"] == "memory safety")
    if code:
        assert mem["status"] == "violated" and mem["rule"] == "uninitialized.shfl-source"
        assert mem["locations"][0]["line"] == 13
        assert "lane 8 of warp 0 (threads 0-31) of CTA (0,0,0) reads lane 16, which is not in its membermask" \
            in mem["message"]
    else:
        assert mem["status"] == "bounded"
