"""numpy reference for the scan family: inclusive prefix sum per 256-element block.

``torch_<name>``: the same in PyTorch (on the CPU; torch is imported only when one runs).
"""

import numpy as np

BLOCK = 256


def scan(inputs: dict[str, np.ndarray], args: dict) -> dict[str, np.ndarray]:
    n = int(args["n"])
    out = np.array(inputs["out"], copy=True)
    x = inputs["in"][:n].astype(np.float64)
    for start in range(0, n, BLOCK):
        seg = x[start:start + BLOCK]
        out[start:start + seg.size] = np.cumsum(seg).astype(out.dtype)
    return {"out": out}


def torch_scan(inputs: dict, args: dict) -> dict:
    """PyTorch reference (CPU): torch.cumsum per block, in float64."""
    import torch

    n = int(args["n"])
    out = torch.from_numpy(np.array(inputs["out"], copy=True))
    x = torch.from_numpy(inputs["in"][:n]).double()
    for start in range(0, n, BLOCK):
        seg = x[start:start + BLOCK]
        out[start:start + seg.numel()] = torch.cumsum(seg, dim=0).to(out.dtype)
    return {"out": out}
