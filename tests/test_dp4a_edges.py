"""dp4a / dp2a with accumulators at the edges of the 32-bit range (tests/data/dp4a/dp4a.cu), on the
interpreter, against the ISA's definition written out here in Python integers (PTX ISA §9.7.1.23
dp4a, §9.7.1.24 dp2a: the sum wraps to 32 bits). The H200 gives the same bits
(bench/results/conformance_dp4a.json)."""
import numpy as np

from conftest import ROOT
from kverify.launch import LaunchSpec
from kverify.semantics.interpreter import run_kernel
from kverify.semantics.ir import load_module

PTX = ROOT / "tests" / "data" / "dp4a" / "dp4a.ptx"


def _parts(x, width, signed):
    out = []
    for i in range(32 // width):
        v = (x >> (width * i)) & ((1 << width) - 1)
        out.append(v - (1 << width) if signed and v >> (width - 1) else v)
    return out


def _wrap(v):
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >> 31 else v


def _dp4a(a, b, c, sa, sb):
    return _wrap(c + sum(x * y for x, y in zip(_parts(a, 8, sa), _parts(b, 8, sb))))


def _dp2a(a, b, c, hi, sa, sb):
    bb = _parts(b, 8, sb)[2 * hi:2 * hi + 2]
    return _wrap(c + sum(x * y for x, y in zip(_parts(a, 16, sa), bb)))


def _operands(av, bv, cv):
    for i in range(len(av)):
        a = (int(av[i]) * 0x01010101 ^ int(cv[i])) & 0xFFFFFFFF
        b = (int(bv[i]) * 0x02040811) & 0xFFFFFFFF
        low = int(cv[i]) & 0xFFFF
        c = (-(1 << 31) + low) if i & 1 else ((1 << 31) - 1 - low)
        yield i, a, b, c


def _run(kernel, n):
    rng = np.random.default_rng(7)
    inputs = {k: rng.integers(0, 1 << 32, 256, dtype=np.uint64).astype(np.uint32) for k in ("av", "bv", "cv")}
    m = load_module(str(PTX))
    spec = LaunchSpec.from_dict({"kernel": kernel, "grid": [2, 1, 1], "block": [128, 1, 1],
                                 "buffers": {"av": {"dtype": "uint32", "shape": [256]},
                                             "bv": {"dtype": "uint32", "shape": [256]},
                                             "cv": {"dtype": "uint32", "shape": [256]},
                                             "out": {"dtype": "int32", "shape": [n]}}})
    r = run_kernel(m, m.kernel(kernel), spec, inputs=inputs)
    assert r.status == "complete" and not r.findings
    return inputs, r.outputs["out"]


def test_every_dp4a_and_dp2a_form_wraps_at_the_edges_of_the_range():
    inputs, out = _run("forms", 2048)
    wrapped = 0
    for i, a, b, c in _operands(inputs["av"], inputs["bv"], inputs["cv"]):
        want = [_dp4a(a, b, c, True, True), _dp4a(a, b, c, False, False), _dp4a(a, b, c, True, False),
                _dp4a(a, b, c, False, True), _dp2a(a, b, c, 0, True, True), _dp2a(a, b, c, 1, True, True),
                _dp2a(a, b, c, 0, False, False), _dp2a(a, b, c, 1, True, False)]
        assert [int(x) for x in out[8 * i:8 * i + 8]] == want, i
        wrapped += want[0] != c + sum(x * y for x, y in zip(_parts(a, 8, True), _parts(b, 8, True)))
    assert wrapped >= 10  # the edges are reached: sums leave the range


def test_nvcc_turns_a_clamped_64_bit_dot_product_into_a_wrapping_dp4a():
    """``int64_t acc = c; acc += (int8)a_k * (int8)b_k ...; clamp to int32`` compiles (nvcc 13.0 -O3)
    to one dp4a.s32.s32 from c, sign-extended, then the clamp: the PTX wraps where the C++ clamps.
    kverify follows the PTX; the C++ value is computed here to show where they differ."""
    text = PTX.read_text()
    body = text[text.index(".entry dot_clamp"):]
    assert "dp4a.s32.s32" in body and "max.s64" in body and "min.s64" in body
    inputs, out = _run("dot_clamp", 256)
    differ = 0
    for i, a, b, c in _operands(inputs["av"], inputs["bv"], inputs["cv"]):
        exact = c + sum(x * y for x, y in zip(_parts(a, 8, True), _parts(b, 8, True)))
        assert int(out[i]) == _wrap(exact)
        differ += _wrap(exact) != max(-(1 << 31), min((1 << 31) - 1, exact))
    assert differ >= 10
