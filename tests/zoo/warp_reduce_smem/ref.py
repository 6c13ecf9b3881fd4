"""numpy reference for the warp_reduce_smem family: one sum per warp of 32 inputs."""

import numpy as np


def warp_reduce_smem(inputs: dict[str, np.ndarray], args: dict) -> dict[str, np.ndarray]:
    out = inputs["out"]
    n = int(args["n"])
    padded = np.zeros(out.shape[0] * 32, dtype=np.float64)
    m = min(n, padded.size)
    padded[:m] = inputs["in"][:m]
    return {"out": padded.reshape(-1, 32).sum(axis=1).astype(out.dtype)}


def torch_warp_reduce_smem(inputs: dict, args: dict) -> dict:
    """PyTorch reference (CPU)."""
    import torch

    out = torch.from_numpy(np.asarray(inputs["out"]))
    n = int(args["n"])
    padded = torch.zeros(out.shape[0] * 32, dtype=torch.float64)
    m = min(n, padded.numel())
    padded[:m] = torch.from_numpy(np.asarray(inputs["in"]))[:m].double()
    return {"out": padded.reshape(-1, 32).sum(dim=1).to(out.dtype)}
