"""numpy reference for the tma_store family.

``torch_<name>``: the same in PyTorch (on the CPU; torch is imported only when one runs).
"""

from __future__ import annotations

import numpy as np

TILE_FLOATS = 512


def tma_store(inputs: dict[str, np.ndarray], args: dict) -> dict[str, np.ndarray]:
    """out[i] = in[i] + 1 for the first iters * 512 elements."""
    n = int(args["iters"]) * TILE_FLOATS
    x = np.asarray(inputs["in"], dtype=np.float32).reshape(-1)[:n]
    return {"out": (x + np.float32(1.0)).astype(np.float32)}


def torch_tma_store(inputs: dict, args: dict) -> dict:
    """PyTorch reference (CPU)."""
    import torch

    n = int(args["iters"]) * TILE_FLOATS
    x = torch.from_numpy(np.asarray(inputs["in"], dtype=np.float32)).reshape(-1)[:n]
    return {"out": torch.add(x, 1.0)}
