"""numpy references for the saxpy family (scalar and float4 versions).

``torch_<name>``: the same in PyTorch (on the CPU; torch is imported only when one runs).
"""

import numpy as np


def saxpy(inputs: dict[str, np.ndarray], args: dict) -> dict[str, np.ndarray]:
    n = int(args["n"])
    alpha = np.float32(args["alpha"])
    y = np.array(inputs["y"], copy=True)
    y[:n] = (alpha * inputs["x"][:n].astype(np.float64) + y[:n]).astype(y.dtype)
    return {"y": y}


def saxpy_scalar(inputs: dict[str, np.ndarray], args: dict) -> dict[str, np.ndarray]:
    return saxpy(inputs, args)


def saxpy_vec(inputs: dict[str, np.ndarray], args: dict) -> dict[str, np.ndarray]:
    # The kernel covers the first 4 * (n // 4) elements.
    return saxpy(inputs, {**args, "n": 4 * (int(args["n"]) // 4)})


def torch_saxpy(inputs: dict, args: dict) -> dict:
    """PyTorch reference (CPU, float64 arithmetic)."""
    import torch

    n = int(args["n"])
    alpha = float(np.float32(args["alpha"]))
    y = torch.from_numpy(np.array(inputs["y"], copy=True))
    y[:n] = torch.add(y[:n].double(), torch.from_numpy(inputs["x"][:n]).double(), alpha=alpha).to(y.dtype)
    return {"y": y}


def torch_saxpy_scalar(inputs: dict, args: dict) -> dict:
    return torch_saxpy(inputs, args)


def torch_saxpy_vec(inputs: dict, args: dict) -> dict:
    return torch_saxpy(inputs, {**args, "n": 4 * (int(args["n"]) // 4)})
