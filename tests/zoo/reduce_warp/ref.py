"""numpy reference for the reduce_warp family: one partial sum per block.

``torch_<name>``: the same in PyTorch (on the CPU; torch is imported only when one runs).
"""

import numpy as np

BLOCK = 256


def reduce_warp(inputs: dict[str, np.ndarray], args: dict) -> dict[str, np.ndarray]:
    out = inputs["out"]
    n = int(args["n"])
    padded = np.zeros(out.shape[0] * BLOCK, dtype=np.float64)
    m = min(n, padded.size)
    padded[:m] = inputs["in"][:m]
    return {"out": padded.reshape(-1, BLOCK).sum(axis=1).astype(out.dtype)}


def torch_reduce_warp(inputs: dict, args: dict) -> dict:
    """PyTorch reference (CPU, float64 sums)."""
    import torch

    out = inputs["out"]
    n = int(args["n"])
    padded = torch.zeros(out.shape[0] * BLOCK, dtype=torch.float64)
    m = min(n, padded.numel())
    padded[:m] = torch.from_numpy(inputs["in"][:m]).double()
    return {"out": padded.reshape(-1, BLOCK).sum(dim=1).float()}
