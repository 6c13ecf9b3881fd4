"""numpy reference for the peek_pipeline family (the same product as wgmma_pipeline).

The inputs are pre-tiled in the shared-memory core-matrix layout documented in
wgmma_pipeline.cu (no swizzle, K-major; A_LBO=1024, A_SBO=128, B_LBO=128,
B_SBO=256 bytes); the helpers below convert between that layout and plain
row-major matrices.

``torch_<name>``: the same in PyTorch (on the CPU; torch is imported only when one runs).
"""

from __future__ import annotations

import numpy as np

M, N, K = 64, 8, 16
A_LBO, A_SBO, B_LBO, B_SBO = 1024, 128, 128, 256


def a_index() -> np.ndarray:
    """idx[m, k] = f16 element index of A[m][k] inside one A tile."""
    m = np.arange(M)[:, None]
    k = np.arange(K)[None, :]
    return ((m % 8) * 16 + (k % 8) * 2 + (m // 8) * A_SBO + (k // 8) * A_LBO) // 2


def b_index() -> np.ndarray:
    """idx[k, n] = f16 element index of B[k][n] inside one B tile."""
    k = np.arange(K)[:, None]
    n = np.arange(N)[None, :]
    return ((n % 8) * 16 + (k % 8) * 2 + (n // 8) * B_SBO + (k // 8) * B_LBO) // 2


def tile_a(a: np.ndarray) -> np.ndarray:
    """Row-major (64, 16) -> tiled (1024,)."""
    t = np.zeros(M * K, dtype=a.dtype)
    t[a_index()] = a
    return t


def tile_b(b: np.ndarray) -> np.ndarray:
    """Row-major (16, 8) -> tiled (128,)."""
    t = np.zeros(K * N, dtype=b.dtype)
    t[b_index()] = b
    return t


def wgmma_pipeline(inputs: dict[str, np.ndarray], args: dict) -> dict[str, np.ndarray]:
    """out (64x8, f32) = sum_it A_it @ B_it, with A_it/B_it read from the tiled inputs."""
    iters = int(args["iters"])
    at = np.asarray(inputs["a_tiles"], dtype=np.float16).reshape(-1, M * K)
    bt = np.asarray(inputs["b_tiles"], dtype=np.float16).reshape(-1, K * N)
    acc = np.zeros((M, N), dtype=np.float32)
    ai, bi = a_index(), b_index()
    for it in range(iters):
        acc += at[it][ai].astype(np.float32) @ bt[it][bi].astype(np.float32)
    return {"out": acc}


def torch_wgmma_pipeline(inputs: dict, args: dict) -> dict:
    """PyTorch reference (CPU): the tiles gathered with torch indexing, products summed in
    float64."""
    import torch

    iters = int(args["iters"])
    at = torch.from_numpy(np.asarray(inputs["a_tiles"], dtype=np.float16)).reshape(-1, M * K)
    bt = torch.from_numpy(np.asarray(inputs["b_tiles"], dtype=np.float16)).reshape(-1, K * N)
    ai, bi = torch.from_numpy(a_index()), torch.from_numpy(b_index())
    acc = torch.zeros((M, N), dtype=torch.float64)
    for it in range(iters):
        acc += torch.matmul(at[it][ai].double(), bt[it][bi].double())
    return {"out": acc.float()}


peek_pipeline = wgmma_pipeline
torch_peek_pipeline = torch_wgmma_pipeline
