"""Loads and stores must be aligned to their access size (PTX ISA 6.4): a misaligned load was not
reported (tests/data/misaligned: a float 2 bytes past an element, a float4 at a 4-byte boundary)."""
from pathlib import Path

import pytest

from kverify.launch import LaunchSpec
from kverify.semantics.interpreter import run_kernel
from kverify.semantics.ir import load_module

DATA = Path(__file__).resolve().parent / "data" / "misaligned"


def _run(kernel):
    m = load_module(str(DATA / "misaligned.ptx"))
    spec = LaunchSpec.from_dict({"kernel": kernel, "grid": [1, 1, 1], "block": [32, 1, 1],
                                 "buffers": {"x": {"dtype": "float32", "shape": [132]},
                                             "y": {"dtype": "float32", "shape": [32]}}, "outputs": ["y"]})
    return run_kernel(m, m.kernel(kernel), spec)


@pytest.mark.parametrize("kernel,line,size", [("shifted", 6, 4), ("vec4", 10, 16)])
def test_a_misaligned_access_is_reported(kernel, line, size):
    r = _run(kernel)
    bad = [f for f in r.findings if f.rule == "misaligned"]
    assert bad and bad[0].locs[0].line == line
    assert f"of {size} bytes at address" in bad[0].message and f"not a multiple of {size}" in bad[0].message


def test_aligned_accesses_are_not():
    r = _run("aligned")
    assert r.status == "complete" and r.findings == []
