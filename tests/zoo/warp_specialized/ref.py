"""numpy reference for the warp_specialized family.

``torch_<name>``: the same in PyTorch (on the CPU; torch is imported only when one runs).
"""

from __future__ import annotations

import numpy as np


def warp_specialized(inputs: dict[str, np.ndarray], args: dict) -> dict[str, np.ndarray]:
    """out[128*it + t] = 3 * in[128*it + 127 - t] + 1 for it < iters."""
    iters = int(args["iters"])
    x = np.asarray(inputs["in"], dtype=np.float32).reshape(-1)[: iters * 128].reshape(iters, 128)
    return {"out": (np.float32(3.0) * x[:, ::-1] + np.float32(1.0)).astype(np.float32).reshape(-1)}


def torch_warp_specialized(inputs: dict, args: dict) -> dict:
    """PyTorch reference (CPU)."""
    import torch

    iters = int(args["iters"])
    x = torch.from_numpy(np.asarray(inputs["in"], dtype=np.float32)).reshape(-1)[: iters * 128].reshape(iters, 128)
    return {"out": (3.0 * torch.flip(x, dims=[1]) + 1.0).reshape(-1)}
