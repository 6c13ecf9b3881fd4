"""numpy reference for the reduce_smem family: one partial sum per block.

``torch_<name>``: the same in PyTorch (on the CPU; torch is imported only when one runs).
"""

import numpy as np

BLOCK = 256


def block_sums(x: np.ndarray, n: int, num_blocks: int, block: int = BLOCK) -> np.ndarray:
    padded = np.zeros(num_blocks * block, dtype=np.float64)
    m = min(n, padded.size)
    padded[:m] = x[:m]
    return padded.reshape(num_blocks, block).sum(axis=1)


def reduce_smem(inputs: dict[str, np.ndarray], args: dict) -> dict[str, np.ndarray]:
    out = inputs["out"]
    sums = block_sums(inputs["in"], int(args["n"]), out.shape[0])
    return {"out": sums.astype(out.dtype)}


def torch_reduce_smem(inputs: dict, args: dict) -> dict:
    """PyTorch reference (CPU, float64 sums)."""
    import torch

    out = inputs["out"]
    n = int(args["n"])
    padded = torch.zeros(out.shape[0] * BLOCK, dtype=torch.float64)
    m = min(n, padded.numel())
    padded[:m] = torch.from_numpy(inputs["in"][:m]).double()
    return {"out": padded.reshape(-1, BLOCK).sum(dim=1).float()}
