"""numpy reference for the relaxed_mbarrier family.

``torch_<name>``: the same in PyTorch (on the CPU; torch is imported only when one runs).
"""

from __future__ import annotations

import numpy as np


def relaxed_mbarrier(inputs: dict[str, np.ndarray], args: dict) -> dict[str, np.ndarray]:
    """out[t] = 2 * in[(t + 1) % 32]: warp 0 writes 2*in into shared memory, warp 1 reads it rotated."""
    x = np.asarray(inputs["in"], dtype=np.float32).reshape(-1)[:32]
    return {"out": (np.float32(2.0) * np.roll(x, -1)).astype(np.float32)}


def torch_relaxed_mbarrier(inputs: dict, args: dict) -> dict:
    """PyTorch reference (CPU)."""
    import torch

    x = torch.from_numpy(np.asarray(inputs["in"], dtype=np.float32)).reshape(-1)[:32]
    return {"out": 2.0 * torch.roll(x, -1)}
