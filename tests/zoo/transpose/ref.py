"""numpy reference for the transpose family: out (width x height) = in (height x width)^T.

``torch_<name>``: the same in PyTorch (on the CPU; torch is imported only when one runs).
"""

import numpy as np


def transpose(inputs: dict[str, np.ndarray], args: dict) -> dict[str, np.ndarray]:
    width, height = int(args["width"]), int(args["height"])
    src = inputs["in"].reshape(height, width)
    return {"out": np.ascontiguousarray(src.T).reshape(inputs["out"].shape)}


def torch_transpose(inputs: dict, args: dict) -> dict:
    """PyTorch reference (CPU)."""
    import torch

    width, height = int(args["width"]), int(args["height"])
    src = torch.from_numpy(inputs["in"]).reshape(height, width)
    return {"out": src.t().contiguous().reshape(inputs["out"].shape)}
