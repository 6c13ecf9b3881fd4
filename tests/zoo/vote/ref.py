"""numpy reference for the vote family (per warp of 32 consecutive threads)."""

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
