"""numpy reference for the stencil family: 0.25/0.5/0.25 stencil, zero outside [0, n).

``torch_<name>``: the same in PyTorch (on the CPU; torch is imported only when one runs).
"""

import numpy as np


def stencil(inputs: dict[str, np.ndarray], args: dict) -> dict[str, np.ndarray]:
    n = int(args["n"])
    x = np.zeros(n + 2, dtype=np.float64)
    x[1:n + 1] = inputs["in"][:n]
    out = np.array(inputs["out"], copy=True)
    out[:n] = (0.25 * x[:n] + 0.5 * x[1:n + 1] + 0.25 * x[2:n + 2]).astype(out.dtype)
    return {"out": out}


def torch_stencil(inputs: dict, args: dict) -> dict:
    """PyTorch reference (CPU): a 1-D convolution with (0.25, 0.5, 0.25), zero padding."""
    import torch

    n = int(args["n"])
    x = torch.from_numpy(inputs["in"][:n]).double().reshape(1, 1, n)
    w = torch.tensor([[[0.25, 0.5, 0.25]]], dtype=torch.float64)
    out = torch.from_numpy(np.array(inputs["out"], copy=True))
    out[:n] = torch.nn.functional.conv1d(x, w, padding=1).reshape(n).to(out.dtype)
    return {"out": out}
