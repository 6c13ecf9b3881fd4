"""numpy reference for the bulk_pipeline family (all variants compute the same thing).

``torch_<name>``: the same in PyTorch (on the CPU; torch is imported only when one runs).
"""

from __future__ import annotations

import numpy as np

TILE_FLOATS = 256


def bulk_pipeline(inputs: dict[str, np.ndarray], args: dict) -> dict[str, np.ndarray]:
    """out[i] = 2 * in[i] for the first iters * 256 elements."""
    n = int(args["iters"]) * TILE_FLOATS
    x = np.asarray(inputs["in"], dtype=np.float32).reshape(-1)[:n]
    return {"out": (np.float32(2.0) * x).astype(np.float32)}


def torch_bulk_pipeline(inputs: dict, args: dict) -> dict:
    """PyTorch reference (CPU)."""
    import torch

    n = int(args["iters"]) * TILE_FLOATS
    x = torch.from_numpy(np.asarray(inputs["in"], dtype=np.float32)).reshape(-1)[:n]
    return {"out": torch.mul(x, 2.0)}
