"""Equivalence proofs that rested on a choice the hardware makes: the order of atomics of two
operations on one location, the SM / warp slot / grid a thread runs on, and a candidate's stores to
a buffer that is not compared. Each pair was proved; each is unknown now, with the reason."""
import subprocess
import sys

import pytest

from conftest import ROOT

D = ROOT / "tests" / "data" / "equiv_hidden"


@pytest.mark.parametrize("file, cand, ref, fp, says", [
    ("atomics", "cand", "ref", "int", "atom.global.max.s32: atomics of different operations or widths update one "
                                     "location (atom.add of 4 bytes before atom.max.s of 4): the final value depends on "
                                     "their order"),
    ("atomics", "cand_andor", "ref_andor", "int", "(atom.and of 4 bytes before atom.or of 4)"),
    ("hardware", "c_smid", "copy", "int", "%smid: which SM, warp slot or grid runs a thread is the hardware's"),
    ("hardware", "c_warpid", "copy", "int", "%warpid: which SM, warp slot or grid runs a thread is the hardware's"),
    ("hardware", "c_gridid", "copy", "int", "%gridid: which SM, warp slot or grid runs a thread is the hardware's"),
    ("clobber", "copy_clobber_a", "copy", "bitexact", "the candidate stores to a, which the reference does not "
                                                      "write and the launch does not name as an output"),
])
def test_not_proved(file, cand, ref, fp, says):
    ptx, launch = D / f"{file}.ptx", D / f"{file}.launch.json"
    r = subprocess.run([sys.executable, "-m", "kverify", "equiv", str(ptx), str(ptx), "--kernel", cand, "--ref-kernel",
                        ref, "--launch", str(launch), "--fp", fp], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 3, r.stdout + r.stderr
    assert "INCONCLUSIVE" in r.stdout and says in r.stdout, r.stdout


def test_one_operation_on_each_location_is_still_proved():
    ptx = D / "hardware.ptx"
    r = subprocess.run([sys.executable, "-m", "kverify", "equiv", str(ptx), str(ptx), "--kernel", "copy", "--ref-kernel",
                        "copy", "--launch", str(D / "hardware.launch.json"), "--fp", "int"], cwd=ROOT,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and "proved" in r.stdout, r.stdout + r.stderr
