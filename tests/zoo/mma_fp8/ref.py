"""numpy references for the mma_fp8 family: the fp8 operands decoded exactly
(``kverify.semantics.values.narrow``), the products and sums in float64, rounded once to the
output type. The tensor core's accumulation order is not specified by PTX: with inputs whose
partial sums are all representable (small integers, powers of two) the kernels agree exactly.
"""

from __future__ import annotations

import numpy as np

from kverify.semantics.values.narrow import fp8_to_f32


def _gemm(inputs, m, k, n, ta, tb, out):
    a = fp8_to_f32(np.asarray(inputs["a"]).reshape(m, k), ta).astype(np.float64)
    b = fp8_to_f32(np.asarray(inputs["b"]).reshape(k, n), tb).astype(np.float64)
    return {"out": (a @ b).astype(out)}


def mma_fp8(inputs: dict, args: dict) -> dict:
    """out (16x8, float32) = a (16x64, e4m3) @ b (64x8, e5m2)."""
    return _gemm(inputs, 16, 64, 8, "e4m3", "e5m2", np.float32)


def mma_fp8_f16(inputs: dict, args: dict) -> dict:
    """out (16x8, float16) = a (16x32, e4m3) @ b (32x8, e4m3)."""
    return _gemm(inputs, 16, 32, 8, "e4m3", "e4m3", np.float16)


def mma_fp8_k16(inputs: dict, args: dict) -> dict:
    """out (16x8, float32) = a (16x16, e5m2) @ b (16x8, e4m3)."""
    return _gemm(inputs, 16, 16, 8, "e5m2", "e4m3", np.float32)
