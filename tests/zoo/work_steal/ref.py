"""numpy reference for the work_steal family: every 32-element tile reversed and doubled."""

import numpy as np


def work_steal(inputs: dict[str, np.ndarray], args: dict) -> dict[str, np.ndarray]:
    n = int(args["ntiles"]) * 32
    out = np.array(inputs["out"], copy=True)
    tiles = inputs["in"][:n].reshape(-1, 32)
    out[:n] = (2.0 * tiles[:, ::-1]).reshape(-1).astype(out.dtype)
    return {"out": out}


def torch_work_steal(inputs: dict, args: dict) -> dict:
    """PyTorch reference (CPU)."""
    import torch

    n = int(args["ntiles"]) * 32
    out = torch.from_numpy(np.array(inputs["out"], copy=True))
    tiles = torch.from_numpy(np.asarray(inputs["in"]))[:n].reshape(-1, 32)
    out[:n] = (2.0 * torch.flip(tiles, dims=[1])).reshape(-1).to(out.dtype)
    return {"out": out}
