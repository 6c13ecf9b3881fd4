"""Numpy references of tests/data/fp8_mma_equiv: out = A @ B with B given transposed (bt)."""
import numpy as np

from kverify.semantics.values.narrow import fp8_to_f32


def _product(inputs):
    a = fp8_to_f32(inputs["a"], "e4m3").astype(np.float64)
    bt = fp8_to_f32(inputs["bt"], "e5m2").astype(np.float64)
    return a @ bt.T


def mma_f32(inputs: dict, args: dict) -> dict:
    return {"out": _product(inputs).astype(np.float32)}


def mma_f16(inputs: dict, args: dict) -> dict:
    return {"out": _product(inputs).astype(np.float16)}
