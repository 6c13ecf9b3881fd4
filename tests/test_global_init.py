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
