"""Global variables with initializers: the interpreter's memory holds each element as the
little-endian bytes of its width (two's complement for negative values), whatever the width."""
import numpy as np

from kverify.launch import LaunchSpec
from kverify.semantics.interpreter import run_kernel
from kverify.semantics.ir import parse_ptx

PTX = """
.version 8.0
.target sm_90
.address_size 64
.global .align 1 .b8 bytes[4] = {1, 255, 0, 128};
.global .align 2 .s16 halves[2] = {-2, 300};
.global .align 4 .s32 words[2] = {-1, 2147483647};
.global .align 8 .u64 longs[2] = {18446744073709551615, 9223372036854775808};
.visible .entry copy_out(.param .u64 out)
{
  .reg .b32 %r<4>;
  .reg .b64 %rd<8>;
  .reg .pred %p<2>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  setp.ne.u32 %p1, %r1, 0;
  @%p1 bra DONE;
  mov.u64 %rd2, bytes;
  ld.global.u32 %r2, [%rd2];
  st.global.u32 [%rd1], %r2;
  mov.u64 %rd3, halves;
  ld.global.u32 %r3, [%rd3];
  st.global.u32 [%rd1+4], %r3;
  mov.u64 %rd4, words;
  ld.global.u64 %rd5, [%rd4];
  st.global.u64 [%rd1+8], %rd5;
  mov.u64 %rd6, longs;
  ld.global.u64 %rd7, [%rd6];
  st.global.u64 [%rd1+16], %rd7;
  ld.global.u64 %rd7, [%rd6+8];
  st.global.u64 [%rd1+24], %rd7;
DONE:
  ret;
}
"""


def test_initializers_of_every_width_and_sign_are_their_little_endian_bytes():
    m = parse_ptx(PTX, "init.ptx")
    spec = LaunchSpec.from_dict({"kernel": "copy_out", "grid": [1, 1, 1], "block": [32, 1, 1],
                                 "buffers": {"out": {"dtype": "uint8", "shape": [32]}}})
    r = run_kernel(m, m.kernel("copy_out"), spec)
    out = np.asarray(r.outputs["out"], np.uint8)
    assert out[0:4].tolist() == [1, 255, 0, 128]
    assert out[4:8].tolist() == [0xFE, 0xFF, 0x2C, 0x01]  # -2, 300 as .s16
    assert out[8:16].tolist() == [0xFF] * 4 + [0xFF, 0xFF, 0xFF, 0x7F]  # -1, INT32_MAX
    assert out[16:24].tolist() == [0xFF] * 8  # 2**64 - 1: past int64, the byte-by-byte path
    assert out[24:32].tolist() == [0] * 7 + [0x80]  # 2**63


# --------------------------------------------------------------------------- float literals, addresses
import json  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402

import pytest  # noqa: E402

from conftest import ROOT  # noqa: E402
from kverify.lowering.ctype import LoweringError  # noqa: E402
from kverify.lowering.cuda import lower_module  # noqa: E402
from kverify.semantics.ir.load import load_module  # noqa: E402
from kverify.semantics.ir.nodes import GenericOf, Sym  # noqa: E402
from kverify.semantics.ir.printer import print_module  # noqa: E402

D = ROOT / "tests" / "data" / "var_init"


def test_float_and_address_initializers_hold_in_the_run():
    """nvcc's ``.f32 scale = 0f3FC00000``, ``.f64 bias = 0d3FC0...`` and ``.u64 table_ptr =
    generic(table)`` (the float ones were dropped: scale and bias read as 0, the pointer as 0)."""
    m = load_module(str(D / "var_init.ptx"))  # the parameters' names from var_init.cu
    x = np.arange(32, dtype=np.float32) - 7
    spec = LaunchSpec.from_dict({"kernel": "scaled", "grid": [1, 1, 1], "block": [32, 1, 1],
                                 "buffers": {"in": {"dtype": "float32", "shape": [32]},
                                             "out": {"dtype": "float32", "shape": [32]}}})
    r = run_kernel(m, m.kernel("scaled"), spec, inputs={"in": x})
    t = np.arange(32)
    coef = np.array([0.25, -0.5, 2.0, 8.0], np.float32)
    want = x * np.float32(1.5) * coef[t % 4] + np.float32(0.125) + np.array([1, 2, 3, 4], np.float32)[t % 4]
    assert np.asarray(r.outputs["out"]).tolist() == want.tolist()


def test_an_index_from_a_float_variable_out_of_bounds_is_violated():
    """``out[t + (int)offset]`` with ``__device__ float offset = 1000.0f`` on a 64-float buffer
    (was verified: offset read as 0)."""
    r = subprocess.run([sys.executable, "-m", "kverify", "check", str(D / "var_init.ptx"), "--kernel", "offset_store",
                        "--grid", "1", "--block", "64", "--arg", "out=64:f32", "--format", "json"],
                       cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 1, r.stderr
    (k,) = json.loads(r.stdout)["kernels"]
    mem = next(o for o in k["obligations"] if o["title"] == "memory safety")
    assert mem["status"] == "violated" and mem["rule"] == "bounds"
    assert (mem["locations"][0]["file"].endswith("var_init.cu"), mem["locations"][0]["line"]) == (True, 18)


PTX_LITERALS = """
.version 8.0
.target sm_90
.address_size 64
.global .align 4 .f32 a[3] = {1.5, 0f3F800000, 0d3FF8000000000000};
.global .align 8 .f64 b[2] = {0f3FC00000, -2.25};
.global .align 2 .f16 h = 1.5;
.global .align 2 .bf16 g = 1.00390625;
.global .align 4 .b32 bits = 0f40490FDB;
.const .align 8 .u64 cp = generic(a);
.global .align 8 .u64 gp[2] = {a, generic(b)};
.visible .entry k()
{
  ret;
}
"""


def test_float_literals_become_the_elements_bits_rounded_to_their_format():
    m = parse_ptx(PTX_LITERALS, "lit.ptx")
    init = {v.name: v.init for v in m.vars}
    assert init["a"] == (0x3FC00000, 0x3F800000, 0x3FC00000)  # decimal and 0d literals rounded to f32
    assert init["b"] == (0x3FF8000000000000, 0xC002000000000000)
    assert init["h"] == (0x3E00,)
    assert init["g"] == (0x3F80,)  # 1 + 2^-8 ties to even: 1.0 in bf16
    assert init["bits"] == (0x40490FDB,)
    assert init["cp"] == (GenericOf("a"),) and init["gp"] == (Sym("a"), GenericOf("b"))
    again = parse_ptx(print_module(m), "again.ptx")  # the printer writes 0f / 0d, generic(x)
    assert {v.name: v.init for v in again.vars} == init


def test_an_initializer_naming_a_variable_stores_its_address():
    m = parse_ptx(PTX_LITERALS.replace("  ret;", "  ld.param.u64 %rd1, [out];\n  ld.global.u64 %rd2, [gp];\n"
                                       "  ld.global.u64 %rd3, [gp+8];\n  ld.const.u64 %rd4, [cp];\n"
                                       "  mov.u64 %rd5, a;\n  mov.u64 %rd6, b;\n"
                                       "  st.global.v2.u64 [%rd1], {%rd2, %rd3};\n  st.global.v2.u64 [%rd1+16], {%rd4, %rd5};\n"
                                       "  st.global.u64 [%rd1+32], %rd6;\n  ret;")
                  .replace(".entry k()", ".entry k(.param .u64 out)").replace("{\n  ld.param", "{\n  .reg .b64 %rd<8>;\n  ld.param"),
                  "addr.ptx")
    spec = LaunchSpec.from_dict({"kernel": "k", "grid": [1, 1, 1], "block": [1, 1, 1],
                                 "buffers": {"out": {"dtype": "uint64", "shape": [5]}}})
    out = np.asarray(run_kernel(m, m.kernel("k"), spec).outputs["out"]).tolist()
    gp_a, gp_b, cp, a, b = out
    assert (gp_a, gp_b, cp) == (a, b, a) and a != b and a != 0  # a global's generic address is its address


def test_lowering_keeps_a_float_initializer_bits_and_refuses_an_address():
    m = parse_ptx(PTX_LITERALS.replace(".const .align 8 .u64 cp = generic(a);\n", "")
                  .replace(".global .align 8 .u64 gp[2] = {a, generic(b)};\n", ""), "lit.ptx")
    text = lower_module(m)
    assert "a[3] = {1069547520, 1065353216, 1069547520}" in text  # the bits, in an integer declaration
    with pytest.raises(LoweringError, match="names variable a"):
        lower_module(parse_ptx(PTX_LITERALS, "lit.ptx"))


def test_a_variables_contents_can_be_given_as_an_input():
    """``var:NAME`` in the inputs replaces a module variable's initial bytes (what the host wrote
    with cudaMemcpyToSymbol, as a capture records it); a size that does not match is bad input."""
    m = load_module(str(D / "var_init.ptx"))
    spec = LaunchSpec.from_dict({"kernel": "offset_store", "grid": [1, 1, 1], "block": [4, 1, 1],
                                 "buffers": {"out": {"dtype": "float32", "shape": [64]}}})
    r = run_kernel(m, m.kernel("offset_store"), spec, inputs={"var:offset": np.array([3.0], np.float32),
                                                              "out": np.zeros(64, np.float32)})
    assert np.asarray(r.outputs["out"]).tolist() == [0.0] * 3 + [1.0] * 4 + [0.0] * 57 and not r.findings
    from kverify.semantics.ir import KernelError
    with pytest.raises(KernelError, match="input var:offset has 8 bytes, the variable 4"):
        run_kernel(m, m.kernel("offset_store"), spec, inputs={"var:offset": np.array([3.0], np.float64)})


def test_a_constant_without_initializer_takes_its_given_contents():
    """A ``__constant__`` the host writes with cudaMemcpyToSymbol has no initializer: its
    ``var:NAME`` input is its contents (it was skipped: the constant read as 0)."""
    ptx = """
.version 8.0
.target sm_90
.address_size 64
.const .align 4 .u32 c_off;
.visible .entry k(.param .u64 out)
{
  .reg .b32 %r<2>;
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [out];
  ld.const.u32 %r1, [c_off];
  st.global.u32 [%rd1], %r1;
  ret;
}
"""
    m = parse_ptx(ptx, "c.ptx")
    spec = LaunchSpec.from_dict({"kernel": "k", "grid": [1, 1, 1], "block": [1, 1, 1],
                                 "buffers": {"out": {"dtype": "uint32", "shape": [1]}}})
    r = run_kernel(m, m.kernel("k"), spec, inputs={"var:c_off": np.array([7], np.uint32)})
    assert np.asarray(r.outputs["out"]).tolist() == [7]
