"""cp.async's optional operands (PTX ISA 9.7.9.25.3.1): a predicate is ignore-src (true: zeros, the
source not read), an integer src-size (the bytes read, the rest zero-filled), and with
.L2::cache_hint the last operand is the cache policy. The interpreter read ignore-src as a
src-size (false -> 0 bytes: zeros; true -> 1 byte) and equivalence read both the predicate and the
policy as a src-size: a full copy was proved equal to a kernel writing zeros."""
import json
import subprocess
import sys

import numpy as np
import pytest

from conftest import ROOT
from kverify.launch import LaunchSpec
from kverify.semantics.interpreter import run_kernel
from kverify.semantics.ir.load import load_module

D = ROOT / "tests" / "data" / "cp_async_src"
A = (np.arange(32, dtype=np.float32) + 1) * np.float32(1.00048828125)  # every byte of each float nonzero


@pytest.mark.parametrize("kernel, launch, want", [
    ("ignore_src", "flag0", A),
    ("ignore_src", "flag1", np.zeros(32, np.float32)),
    ("src_size", "n0", np.zeros(32, np.float32)),
    ("src_size", "n2", (A.view(np.uint32) & 0xFFFF).view(np.float32)),  # the low two bytes, little-endian
    ("src_size", "n4", A),
    ("cache_hint", "pol0", A),
])
def test_run(kernel, launch, want):
    m = load_module(str(D / "cp_async_src.ptx"))
    spec = LaunchSpec.from_dict({**json.loads((D / f"{launch}.launch.json").read_text()), "kernel": kernel})
    r = run_kernel(m, m.kernel(kernel), spec, inputs={"a": A})
    assert np.asarray(r.outputs["c"]).view(np.uint32).tolist() == want.view(np.uint32).tolist()


@pytest.mark.parametrize("cand, launch, ref, fp, code", [
    ("ignore_src", "flag0", "copy", "bitexact", 0),  # was refuted
    ("ignore_src", "flag0", "zero", "bitexact", 1),  # was proved
    ("ignore_src", "flag1", "zero", "bitexact", 0),
    ("cache_hint", "pol0", "copy", "real", 0),
    ("cache_hint", "pol0", "zero", "real", 1),  # was proved
])
def test_equiv(cand, launch, ref, fp, code):
    ptx = D / "cp_async_src.ptx"
    r = subprocess.run([sys.executable, "-m", "kverify", "equiv", str(ptx), str(ptx), "--kernel", cand, "--ref-kernel",
                        ref, "--launch", str(D / f"{launch}.launch.json"), "--ref-launch", str(D / "ref.launch.json"),
                        "--fp", fp], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == code, r.stdout + r.stderr
    assert ("proved" if code == 0 else "refuted") in r.stdout
