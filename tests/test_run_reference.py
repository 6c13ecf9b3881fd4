"""``kverify run --ref``: every output of the launch is compared with the reference, whole."""
import os
import subprocess
import sys

import pytest

from conftest import ROOT, ZOO

REF = '''import numpy as np
def full(inputs, args):
    return {"c": inputs["a"] + inputs["b"]}
def short(inputs, args):
    return {"c": (inputs["a"] + inputs["b"])[:10]}
def wrongkey(inputs, args):
    return {"zz": inputs["a"]}
def empty(inputs, args):
    return {}
'''


@pytest.mark.parametrize("fn, code, says", [
    ("full", 1, "reference myref:full: c differs at flat index 999: got "),
    # (the output was cut to the reference's 10 elements: "outputs match (c)", exit 0)
    ("short", 1, "reference myref:short: c: the reference gives 10 elements, the buffer has 1000"),
    ("wrongkey", 1, "reference myref:wrongkey: c: the reference gives no value for this output"),
    # ("outputs match ()", exit 0)
    ("empty", 2, "reference myref:empty returned no output to compare"),
])
def test_reference_compares_every_output_whole(tmp_path, fn, code, says):
    (tmp_path / "myref.py").write_text(REF)
    r = subprocess.run([sys.executable, "-m", "kverify", "run", str(ZOO / "vadd" / "vadd__tail_off_by_one.ptx"),
                        "--launch", str(ZOO / "vadd" / "launch.json"), "--ref", f"myref:{fn}"], cwd=ROOT,
                       env={**os.environ, "PYTHONPATH": f"{tmp_path}:{ROOT}"}, capture_output=True, text=True)
    assert r.returncode == code and says in r.stdout + r.stderr, r.stdout + r.stderr
