"""numpy reference for the proxy_waw family: the first half of the tile from ``in``, the
second half the zeros stored before the copy."""

import numpy as np


def proxy_waw(inputs: dict[str, np.ndarray], args: dict) -> dict[str, np.ndarray]:
    out = np.zeros_like(inputs["out"])
    out[:128] = inputs["in"][:128]
    return {"out": out}


def torch_proxy_waw(inputs: dict, args: dict) -> dict:
    """PyTorch reference (CPU)."""
    import torch

    out = torch.zeros_like(torch.from_numpy(np.asarray(inputs["out"])))
    out[:128] = torch.from_numpy(np.asarray(inputs["in"]))[:128]
    return {"out": out}
