"""numpy references for the int_mma family: integer mma.sync (s8/u8, s4/u4 with s32
accumulators) and f64 mma.sync. Integer results are exact: the sum wraps modulo 2^32, or is
clamped to the s32 range under ``.satfinite``. 4-bit operands are stored one per byte (the low
nibble). f64: a @ b + c in float64 (numpy's summation order; the tensor core's is not specified,
so with arbitrary inputs the kernels agree to within rounding, and with ``exact_inputs`` --
small integers, every partial sum exact -- bit for bit).
"""

from __future__ import annotations

import numpy as np

_SIGNED = {"s8": (8, True), "u8": (8, False), "s4": (4, True), "u4": (4, False)}


def _elements(x, ty, shape):
    bits, signed = _SIGNED[ty]
    v = np.asarray(x).astype(np.int64).reshape(shape) & ((1 << bits) - 1)
    return np.where(v >= 1 << (bits - 1), v - (1 << bits), v) if signed else v


def _int_gemm(inputs, m, k, n, ta, tb, satfinite=False):
    d = _elements(inputs["a"], ta, (m, k)) @ _elements(inputs["b"], tb, (k, n))
    d = d + np.asarray(inputs["c"]).astype(np.int64).reshape(m, n)
    if satfinite:
        d = np.clip(d, -(1 << 31), (1 << 31) - 1)
    return {"out": (d & 0xFFFFFFFF).astype(np.uint32).view(np.int32)}


def mma_s8(inputs: dict, args: dict) -> dict:
    """out (16x8, s32) = a (16x64, s8) @ b (64x8, s8) + c, wrapping."""
    return _int_gemm(inputs, 16, 64, 8, "s8", "s8")


def mma_u8s8_k16(inputs: dict, args: dict) -> dict:
    """out (16x8, s32) = a (16x16, u8) @ b (16x8, s8) + c, wrapping."""
    return _int_gemm(inputs, 16, 16, 8, "u8", "s8")


def mma_m8n8k16(inputs: dict, args: dict) -> dict:
    """out (8x8, s32) = a (8x16, s8) @ b (16x8, u8) + c, wrapping."""
    return _int_gemm(inputs, 8, 16, 8, "s8", "u8")


def mma_s8_satfinite(inputs: dict, args: dict) -> dict:
    """out (16x8, s32) = a (16x32, s8) @ b (32x8, s8) + c, clamped to the s32 range."""
    return _int_gemm(inputs, 16, 32, 8, "s8", "s8", satfinite=True)


def mma_s4(inputs: dict, args: dict) -> dict:
    """out (16x8, s32) = a (16x64, s4) @ b (64x8, s4) + c, wrapping."""
    return _int_gemm(inputs, 16, 64, 8, "s4", "s4")


def mma_u4s4_k32(inputs: dict, args: dict) -> dict:
    """out (16x8, s32) = a (16x32, u4) @ b (32x8, s4) + c, wrapping."""
    return _int_gemm(inputs, 16, 32, 8, "u4", "s4")


def mma_m8n8k32(inputs: dict, args: dict) -> dict:
    """out (8x8, s32) = a (8x32, s4) @ b (32x8, u4) + c, wrapping."""
    return _int_gemm(inputs, 8, 32, 8, "s4", "u4")


def _f64_gemm(inputs, m, k, n):
    a = np.asarray(inputs["a"], np.float64).reshape(m, k)
    b = np.asarray(inputs["b"], np.float64).reshape(k, n)
    return {"out": a @ b + np.asarray(inputs["c"], np.float64).reshape(m, n)}


def mma_f64(inputs: dict, args: dict) -> dict:
    """out (8x8, f64) = a (8x8) @ b (8x8) + c."""
    return _f64_gemm(inputs, 8, 8, 8)


def mma_f64_m16n8(inputs: dict, args: dict) -> dict:
    """out (16x8, f64) = a (16x28) @ b (28x8) + c."""
    return _f64_gemm(inputs, 16, 28, 8)


def exact_inputs(launch: dict, seed: int) -> dict:
    """Inputs of a launch of this family for a bit-exact comparison with the GPU: integer kernels
    get arbitrary bytes and s32 values near the ends of the range (wrapping and, under
    .satfinite, clamping happen in some elements); f64 kernels get small integers, so every
    partial sum is exact whatever order the tensor core sums in."""
    rng = np.random.default_rng(seed)
    out = {}
    for name, b in launch["buffers"].items():
        if name == "out":
            continue
        shape = tuple(b["shape"])
        if b["dtype"] == "float64":
            out[name] = rng.integers(-64, 65, shape).astype(np.float64)
        elif b["dtype"] == "int32":
            ends = rng.integers(-(1 << 31), (1 << 31) - 1, shape, endpoint=True, dtype=np.int64)
            near = np.where(rng.random(shape) < 0.5, (1 << 31) - 1 - rng.integers(0, 1 << 12, shape),
                            -(1 << 31) + rng.integers(0, 1 << 12, shape))
            out[name] = np.where(rng.random(shape) < 0.5, ends, near).astype(np.int32)
        else:
            out[name] = rng.integers(0, 256, shape).astype(np.uint8)
    return out


# ---------------------------------------------------------------------------------- PyTorch twins


def _torch_elements(x, ty, shape):
    import torch

    bits, signed = _SIGNED[ty]
    t = torch.from_numpy(np.ascontiguousarray(x)).to(torch.int64).reshape(shape) & ((1 << bits) - 1)
    return torch.where(t >= 1 << (bits - 1), t - (1 << bits), t) if signed else t


def _torch_int_gemm(inputs, m, k, n, ta, tb, satfinite=False):
    """PyTorch (CPU): the elements decoded as int64, an exact int64 matmul plus c, wrapped to s32
    (or clamped under .satfinite)."""
    import torch

    d = _torch_elements(inputs["a"], ta, (m, k)) @ _torch_elements(inputs["b"], tb, (k, n))
    d = d + torch.from_numpy(np.ascontiguousarray(inputs["c"])).to(torch.int64).reshape(m, n)
    if satfinite:
        d = d.clamp(-(1 << 31), (1 << 31) - 1)
    return {"out": (torch.remainder(d + (1 << 31), 1 << 32) - (1 << 31)).to(torch.int32)}


def torch_mma_s8(inputs: dict, args: dict) -> dict:
    """PyTorch reference of ``mma_s8``."""
    return _torch_int_gemm(inputs, 16, 64, 8, "s8", "s8")


def torch_mma_u8s8_k16(inputs: dict, args: dict) -> dict:
    """PyTorch reference of ``mma_u8s8_k16``."""
    return _torch_int_gemm(inputs, 16, 16, 8, "u8", "s8")


def torch_mma_m8n8k16(inputs: dict, args: dict) -> dict:
    """PyTorch reference of ``mma_m8n8k16``."""
    return _torch_int_gemm(inputs, 8, 16, 8, "s8", "u8")


def torch_mma_s8_satfinite(inputs: dict, args: dict) -> dict:
    """PyTorch reference of ``mma_s8_satfinite``."""
    return _torch_int_gemm(inputs, 16, 32, 8, "s8", "s8", satfinite=True)


def torch_mma_s4(inputs: dict, args: dict) -> dict:
    """PyTorch reference of ``mma_s4``."""
    return _torch_int_gemm(inputs, 16, 64, 8, "s4", "s4")


def torch_mma_u4s4_k32(inputs: dict, args: dict) -> dict:
    """PyTorch reference of ``mma_u4s4_k32``."""
    return _torch_int_gemm(inputs, 16, 32, 8, "u4", "s4")


def torch_mma_m8n8k32(inputs: dict, args: dict) -> dict:
    """PyTorch reference of ``mma_m8n8k32``."""
    return _torch_int_gemm(inputs, 8, 32, 8, "s4", "u4")


def _torch_f64_gemm(inputs, m, k, n):
    import torch

    t = lambda x, shape: torch.from_numpy(np.ascontiguousarray(x, np.float64)).reshape(shape)  # noqa: E731
    return {"out": t(inputs["a"], (m, k)) @ t(inputs["b"], (k, n)) + t(inputs["c"], (m, n))}


def torch_mma_f64(inputs: dict, args: dict) -> dict:
    """PyTorch reference of ``mma_f64``."""
    return _torch_f64_gemm(inputs, 8, 8, 8)


def torch_mma_f64_m16n8(inputs: dict, args: dict) -> dict:
    """PyTorch reference of ``mma_f64_m16n8``."""
    return _torch_f64_gemm(inputs, 16, 28, 8)
