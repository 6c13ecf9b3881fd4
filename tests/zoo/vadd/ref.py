"""numpy references for the vadd family.

``torch_<name>``: the same in PyTorch (on the CPU; torch is imported only when one runs).
"""

import numpy as np


def vadd(inputs: dict[str, np.ndarray], args: dict) -> dict[str, np.ndarray]:
    n = int(args["n"])
    c = np.array(inputs["c"], copy=True)
    c[:n] = (inputs["a"][:n].astype(np.float64) + inputs["b"][:n]).astype(c.dtype)
    return {"c": c}


def torch_vadd(inputs: dict, args: dict) -> dict:
    """PyTorch reference (CPU)."""
    import torch

    n = int(args["n"])
    c = torch.from_numpy(np.array(inputs["c"], copy=True))
    c[:n] = (torch.from_numpy(inputs["a"][:n]).double() + torch.from_numpy(inputs["b"][:n]).double()).to(c.dtype)
    return {"c": c}
