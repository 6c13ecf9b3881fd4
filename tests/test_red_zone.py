"""An overflow that jumps the red zone between two allocations lands inside the other one: the run
checks a global access against the buffer its address is derived from (a pointer parameter) and a
shared access against its variable, not only against "every allocation"."""
import json
import subprocess
import sys

import pytest

from conftest import ROOT

D = ROOT / "tests" / "data" / "red_zone"


def check(name, *argv):
    r = subprocess.run([sys.executable, "-m", "kverify", "check", str(D / name), "--format", "json", *argv],
                       cwd=ROOT, capture_output=True, text=True)
    (k,) = json.loads(r.stdout)["kernels"]
    mem = next(o for o in k["obligations"] if o["title"] == "memory safety")
    return r.returncode, mem


@pytest.mark.parametrize("off, code, says", [
    (0, 0, None),
    (256, 1, "is outside every allocation (768 bytes past the end of a)"),  # in the red zone
    # 1024 bytes past a's end: inside b (verified before)
    (320, 1, "is outside a, the buffer its address is derived from (1024 bytes past its end; it lands in b)"),
])
def test_global_overflow_into_the_next_buffer(off, code, says):
    rc, mem = check("ovf.ptx", "--grid", "1", "--block", "64", "--arg", "a=64:f32", "--arg", "b=64:f32",
                    "--arg", "n=64", "--arg", f"off={off}")
    assert rc == code, mem
    if says:
        assert mem["status"] == "violated" and mem["rule"] == "bounds" and says in mem["message"]
        assert mem["locations"][0]["line"] == 4


@pytest.mark.parametrize("off, code, says", [
    (0, 0, None),
    (64, 1, "is outside every shared variable (128 bytes past the end of s1)"),
    (128, 1, "is outside s1, the variable its address is derived from (it lands in s2[32])"),  # verified before
])
def test_shared_overflow_into_the_next_variable(off, code, says):
    rc, mem = check("sh.ptx", "--grid", "1", "--block", "64", "--arg", "p_out=64:u32", "--arg", f"p_off={off}")
    assert rc == code, mem
    if says:
        assert mem["status"] == "violated" and says in mem["message"] and mem["locations"][0]["line"] == 19
