"""Address arithmetic wraps at the width of the address register: nvcc folds a constant into an
``ld.shared`` offset (``[%r10+256]``) whose 32-bit register holds a negative byte offset, and the
address is the 32-bit sum (PTX ISA 6.4.1). The interpreter added in 64 bits and reported a correct
kernel's read as outside shared memory (tests/data/address_wrap/wrap.cu)."""
import json
from pathlib import Path

import numpy as np

from kverify.launch import LaunchSpec
from kverify.semantics.interpreter import run_kernel
from kverify.semantics.ir import load_module
from kverify.verifier.check import check_kernel

DATA = Path(__file__).resolve().parent / "data" / "address_wrap"


def test_a_negative_32_bit_register_plus_an_offset_wraps():
    m = load_module(str(DATA / "wrap.ptx"))
    spec = LaunchSpec.from_dict(json.loads((DATA / "launch.json").read_text()))
    r = run_kernel(m, m.kernel("wrap"), spec)
    assert r.status == "complete" and r.findings == []
    t = np.arange(128)
    want = np.trunc((t - 64) / 2).astype(int) + 64  # C division truncates toward zero
    assert np.array_equal(r.outputs["out"], np.tile(want, 2).astype(np.float32))
    rep = check_kernel(m, m.kernel("wrap"), spec)
    assert rep.verdict == "verified"
    assert {o.title: o.status for o in rep.obligations}["memory safety"] == "bounded"
