"""numpy reference for the vote family (per warp of 32 consecutive threads).

``torch_<name>``: the same in PyTorch (on the CPU; torch is imported only when one runs).
"""

import numpy as np


def vote(inputs: dict[str, np.ndarray], args: dict) -> dict[str, np.ndarray]:
    n = int(args["n"])
    warps = inputs["ballots"].shape[0]
    pred = np.zeros(warps * 32, dtype=bool)
    m = min(n, pred.size)
    pred[:m] = inputs["in"][:m] > 0
    pred = pred.reshape(warps, 32)
    weights = (np.uint64(1) << np.arange(32, dtype=np.uint64))
    ballots = (pred.astype(np.uint64) * weights).sum(axis=1).astype(np.uint32)
    return {
        "ballots": ballots,
        "all_out": pred.all(axis=1).astype(np.int32),
        "any_out": pred.any(axis=1).astype(np.int32),
        "popc_out": pred.sum(axis=1).astype(np.int32),
        "leaders": (inputs["leaders"].astype(np.int64) + 1).astype(np.int32),
    }


def torch_vote(inputs: dict, args: dict) -> dict:
    """PyTorch reference (CPU): ballots, all, any and population counts per warp."""
    import torch

    n = int(args["n"])
    warps = inputs["ballots"].shape[0]
    pred = torch.zeros(warps * 32, dtype=torch.bool)
    m = min(n, pred.numel())
    pred[:m] = torch.from_numpy(inputs["in"][:m]) > 0
    pred = pred.reshape(warps, 32)
    weights = torch.bitwise_left_shift(torch.ones(32, dtype=torch.int64), torch.arange(32))
    ballots = (pred.to(torch.int64) * weights).sum(dim=1)
    return {
        "ballots": ballots.to(torch.uint32),
        "all_out": pred.all(dim=1).to(torch.int32),
        "any_out": pred.any(dim=1).to(torch.int32),
        "popc_out": pred.sum(dim=1).to(torch.int32),
        "leaders": (torch.from_numpy(inputs["leaders"]).to(torch.int64) + 1).to(torch.int32),
    }
