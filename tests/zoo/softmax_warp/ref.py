"""numpy reference for the softmax_warp family (the same function as the softmax family): softmax over each row of x.

``torch_<name>``: the same in PyTorch (on the CPU; torch is imported only when one runs).
"""

import numpy as np


def softmax(inputs: dict[str, np.ndarray], args: dict) -> dict[str, np.ndarray]:
    cols = int(args["cols"])
    x = inputs["x"].astype(np.float64).reshape(-1, cols)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    y = e / e.sum(axis=1, keepdims=True)
    return {"y": y.astype(inputs["y"].dtype).reshape(inputs["y"].shape)}


def torch_softmax(inputs: dict, args: dict) -> dict:
    """PyTorch reference (CPU): torch.softmax over each row, in float64."""
    import torch

    cols = int(args["cols"])
    x = torch.from_numpy(inputs["x"]).double().reshape(-1, cols)
    y = torch.softmax(x, dim=1)
    return {"y": y.to(torch.from_numpy(inputs["y"][:0]).dtype).reshape(inputs["y"].shape)}
