"""numpy reference for the named_barrier family.

Per block and tile of 64 floats: out[t][c] = 2 * in[t][63 - c] + 1.

``torch_<name>``: the same in PyTorch (on the CPU; torch is imported only when one runs).
"""

import numpy as np

TILE = 64


def named_barrier(inputs: dict[str, np.ndarray], args: dict) -> dict[str, np.ndarray]:
    src = inputs["in"].astype(np.float32)
    tiles = src.reshape(-1, TILE)
    out = (np.float32(2.0) * tiles[:, ::-1] + np.float32(1.0)).astype(np.float32)
    return {"out": out.reshape(inputs["out"].shape)}


def torch_named_barrier(inputs: dict, args: dict) -> dict:
    """PyTorch reference (CPU)."""
    import torch

    tiles = torch.from_numpy(inputs["in"].astype(np.float32)).reshape(-1, TILE)
    return {"out": (2.0 * torch.flip(tiles, dims=[1]) + 1.0).reshape(inputs["out"].shape)}
