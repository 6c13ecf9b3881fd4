"""numpy reference for the persistent_pipeline_split family.

``torch_<name>``: the same in PyTorch (on the CPU; torch is imported only when one runs).
"""

from __future__ import annotations

import numpy as np

TILE = 256


def persistent_pipeline_split(inputs: dict[str, np.ndarray], args: dict) -> dict[str, np.ndarray]:
    """out[t*256 + j] = sum over kk < k_tiles of in[(t*k_tiles + kk)*256 + j] for t < ntiles
    (float32, accumulated in kk order)."""
    ntiles, k_tiles = int(args["ntiles"]), int(args["k_tiles"])
    x = np.asarray(inputs["in"], dtype=np.float32).reshape(-1)[: ntiles * k_tiles * TILE]
    x = x.reshape(ntiles, k_tiles, TILE)
    acc = np.zeros((ntiles, TILE), dtype=np.float32)
    for kk in range(k_tiles):
        acc = (acc + x[:, kk, :]).astype(np.float32)
    return {"out": acc.reshape(-1)}


def torch_persistent_pipeline_split(inputs: dict, args: dict) -> dict:
    """PyTorch reference (CPU)."""
    import torch

    ntiles, k_tiles = int(args["ntiles"]), int(args["k_tiles"])
    x = torch.from_numpy(np.asarray(inputs["in"], dtype=np.float32)).reshape(-1)[: ntiles * k_tiles * TILE]
    x = x.reshape(ntiles, k_tiles, TILE)
    acc = torch.zeros((ntiles, TILE), dtype=torch.float32)
    for kk in range(k_tiles):
        acc = acc + x[:, kk, :]
    return {"out": acc.reshape(-1)}
