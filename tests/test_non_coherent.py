"""ld.global.nc (__ldg) reads through a cache not kept coherent with the launch's writes: a load of
bytes the launch already wrote may return the value from before the write, whatever barrier orders
them (race.global.non-coherent). The barrier-interval SMT argument cannot see it: a kernel with a
non-coherent load of a buffer it writes leaves race-free: global to the run."""
import json
import subprocess
import sys

import pytest

from conftest import ROOT

PTX = ROOT / "tests" / "data" / "non_coherent" / "non_coherent.ptx"


def check(kernel, *args):
    r = subprocess.run([sys.executable, "-m", "kverify", "check", str(PTX), "--kernel", kernel, "--grid", "1",
                        "--block", "32", *args, "--format", "json"], cwd=ROOT, capture_output=True, text=True)
    (k,) = json.loads(r.stdout)["kernels"]
    return r.returncode, next(o for o in k["obligations"] if o["title"] == "race-free: global"), k


ABCD = ("--arg", "a=32:f32", "--arg", "c=32:f32", "--arg", "d=32:f32")


def test_a_non_coherent_load_after_the_write_is_violated():
    rc, g, k = check("after_write", *ABCD)  # was: proved
    assert (rc, g["status"], g["rule"]) == (1, "violated", "race.global.non-coherent")
    assert [(loc["file"].rsplit("/", 1)[-1], loc["line"]) for loc in g["locations"]] == [("non_coherent.cu", 9),
                                                                                        ("non_coherent.cu", 7)]
    assert "reads bytes the launch wrote at non_coherent.cu:7" in g["message"]


@pytest.mark.parametrize("kernel, args, status", [
    ("coherent", ABCD, "proved"),  # the barrier orders a coherent load
    ("read_only", ABCD[:4], "proved"),  # __ldg of an input nothing writes
    ("in_place", ABCD[2:4], "bounded"),  # each element read before its own write: the run, not the SMT argument
])
def test_correct_uses(kernel, args, status):
    rc, g, k = check(kernel, *args)
    assert (rc, g["status"]) == (0, status), g
