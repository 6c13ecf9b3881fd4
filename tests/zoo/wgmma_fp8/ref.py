"""numpy references for the wgmma_fp8 family: the fp8 operands decoded exactly
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


def wgmma_fp8(inputs: dict, args: dict) -> dict:
    """out (64x16, float32) = a (64x64, e4m3) @ b (64x16, e5m2)."""
    return _gemm(inputs, 64, 64, 16, "e4m3", "e5m2", np.float32)


def wgmma_fp8_f16(inputs: dict, args: dict) -> dict:
    """out (64x16, float16) = a (64x32, e4m3) @ b (32x16, e4m3)."""
    return _gemm(inputs, 64, 32, 16, "e4m3", "e4m3", np.float16)


def wgmma_fp8_areg(inputs: dict, args: dict) -> dict:
    """out (64x16, float32) = a (64x32, e5m2) @ b (32x16, e4m3)."""
    return _gemm(inputs, 64, 32, 16, "e5m2", "e4m3", np.float32)
