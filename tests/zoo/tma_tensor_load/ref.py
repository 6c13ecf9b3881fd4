"""numpy reference for the tma_tensor_load family.

``torch_<name>``: the same in PyTorch (on the CPU; torch is imported only when one runs).
"""

from __future__ import annotations

import numpy as np


def tma_tensor_load(inputs: dict[str, np.ndarray], args: dict) -> dict[str, np.ndarray]:
    """Every CTA copies its 32x32 tile of the tensor-mapped matrix `in`: out == in."""
    x = np.asarray(inputs["in"], dtype=np.float32)
    return {"out": x.copy()}


def torch_tma_tensor_load(inputs: dict, args: dict) -> dict:
    """PyTorch reference (CPU)."""
    import torch

    return {"out": torch.from_numpy(np.asarray(inputs["in"], dtype=np.float32)).clone()}
