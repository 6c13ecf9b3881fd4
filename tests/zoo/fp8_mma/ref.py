"""numpy references for the fp8_mma family (wgmma_fp8*, mma_fp8*): the fp8 operands decoded exactly
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


def mma_fp8(inputs: dict, args: dict) -> dict:
    """out (16x8, float32) = a (16x64, e4m3) @ b (64x8, e5m2)."""
    return _gemm(inputs, 16, 64, 8, "e4m3", "e5m2", np.float32)


def mma_fp8_f16(inputs: dict, args: dict) -> dict:
    """out (16x8, float16) = a (16x32, e4m3) @ b (32x8, e4m3)."""
    return _gemm(inputs, 16, 32, 8, "e4m3", "e4m3", np.float16)


def mma_fp8_k16(inputs: dict, args: dict) -> dict:
    """out (16x8, float32) = a (16x16, e5m2) @ b (16x8, e4m3)."""
    return _gemm(inputs, 16, 16, 8, "e5m2", "e4m3", np.float32)



def _torch_gemm(inputs, m, k, n, ta, tb, out):
    """PyTorch (CPU): the bytes viewed as float8_e4m3fn / float8_e5m2, float64 products and
    sums, rounded once to the output type."""
    import torch

    tt = {"e4m3": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2}
    a = torch.from_numpy(np.ascontiguousarray(inputs["a"], np.uint8)).view(tt[ta]).reshape(m, k).double()
    b = torch.from_numpy(np.ascontiguousarray(inputs["b"], np.uint8)).view(tt[tb]).reshape(k, n).double()
    return {"out": torch.matmul(a, b).to(torch.float32 if out is np.float32 else torch.float16)}


def torch_wgmma_fp8(inputs: dict, args: dict) -> dict:
    """PyTorch reference of ``wgmma_fp8``."""
    return _torch_gemm(inputs, 64, 64, 16, "e4m3", "e5m2", np.float32)


def torch_wgmma_fp8_f16(inputs: dict, args: dict) -> dict:
    """PyTorch reference of ``wgmma_fp8_f16``."""
    return _torch_gemm(inputs, 64, 32, 16, "e4m3", "e4m3", np.float16)


def torch_wgmma_fp8_areg(inputs: dict, args: dict) -> dict:
    """PyTorch reference of ``wgmma_fp8_areg``."""
    return _torch_gemm(inputs, 64, 32, 16, "e5m2", "e4m3", np.float32)


def torch_mma_fp8(inputs: dict, args: dict) -> dict:
    """PyTorch reference of ``mma_fp8``."""
    return _torch_gemm(inputs, 16, 64, 8, "e4m3", "e5m2", np.float32)


def torch_mma_fp8_f16(inputs: dict, args: dict) -> dict:
    """PyTorch reference of ``mma_fp8_f16``."""
    return _torch_gemm(inputs, 16, 32, 8, "e4m3", "e4m3", np.float16)


def torch_mma_fp8_k16(inputs: dict, args: dict) -> dict:
    """PyTorch reference of ``mma_fp8_k16``."""
    return _torch_gemm(inputs, 16, 16, 8, "e5m2", "e4m3", np.float32)


#: values exact in both fp8 formats: their products are multiples of 1/4 of magnitude at most
#: 16, so every partial sum of up to 64 of them is exact in f32 and of up to 32 exact in f16
EXACT_VALUES = np.array([0.5, 1.0, 1.5, 2.0, 3.0, 4.0, -0.5, -1.0, -2.0, -3.0, -4.0, 0.0])
_FORMAT = {"float8_e4m3fn": "e4m3", "float8_e5m2": "e5m2"}


def exact_inputs(launch: dict, seed: int) -> dict:
    """Inputs ``a`` and ``b`` of a launch of this family drawn from ``EXACT_VALUES`` (fp8
    codes): with them the tensor core's accumulation order and internal precision do not
    matter, every kernel's output equals the reference bit for bit (bench/conformance.py
    runs each kernel once more with these inputs and expects bit-exact agreement)."""
    rng = np.random.default_rng(seed)
    out = {}
    for name in ("a", "b"):
        b = launch["buffers"][name]
        fmt = _FORMAT[b["dtype"]]
        table = fp8_to_f32(np.arange(256), fmt)
        codes = {float(v): int(np.flatnonzero(table == v)[0]) for v in EXACT_VALUES}
        vals = rng.choice(EXACT_VALUES, tuple(b["shape"]))
        out[name] = np.vectorize(lambda x: codes[float(x)])(vals).astype(np.uint8)
    return out
