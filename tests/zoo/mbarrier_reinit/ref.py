"""numpy reference for the mbarrier_reinit family.

``torch_<name>``: the same in PyTorch (on the CPU; torch is imported only when one runs).
"""

from __future__ import annotations

import numpy as np


def mbarrier_reinit(inputs: dict[str, np.ndarray], args: dict) -> dict[str, np.ndarray]:
    """Round r (0, 1): out[32r + t] = (r + 2) * in[32r + (t + 1) % 32]."""
    x = np.asarray(inputs["in"], dtype=np.float32).reshape(-1)[:64].reshape(2, 32)
    scale = np.array([[2.0], [3.0]], dtype=np.float32)
    return {"out": (scale * np.roll(x, -1, axis=1)).reshape(-1).astype(np.float32)}


def torch_mbarrier_reinit(inputs: dict, args: dict) -> dict:
    """PyTorch reference (CPU)."""
    import torch

    x = torch.from_numpy(np.asarray(inputs["in"], dtype=np.float32)).reshape(-1)[:64].reshape(2, 32)
    scale = torch.tensor([[2.0], [3.0]])
    return {"out": (scale * torch.roll(x, -1, dims=1)).reshape(-1)}
