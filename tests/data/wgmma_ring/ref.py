"""numpy reference of tests/data/wgmma_ring/wgmma_ring.cu: ``out[t]`` (64x8, float32) is the sum over
the tile's ``k_tiles`` steps of A(64x16, f16) @ B(16x8, f16), the operand tiles pre-tiled in global
memory in the shared-memory core-matrix layout of the zoo's wgmma_pipeline (its ref.py says how)."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np

_spec = importlib.util.spec_from_file_location(
    "wgmma_pipeline_ref", Path(__file__).resolve().parents[2] / "zoo" / "wgmma_pipeline" / "ref.py")
_zoo = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_zoo)
M, N, K = _zoo.M, _zoo.N, _zoo.K


def wgmma_ring(inputs: dict[str, np.ndarray], args: dict) -> dict[str, np.ndarray]:
    ntiles, k_tiles = int(args["ntiles"]), int(args["k_tiles"])
    a = np.asarray(inputs["a_tiles"], np.float16).reshape(-1, M * K)
    b = np.asarray(inputs["b_tiles"], np.float16).reshape(-1, K * N)
    out = np.zeros((ntiles, M, N), np.float32)
    for t in range(ntiles):
        for kk in range(k_tiles):
            step = t * k_tiles + kk
            out[t] += a[step][_zoo.a_index()].astype(np.float32) @ b[step][_zoo.b_index()].astype(np.float32)
    return {"out": out.reshape(-1)}
