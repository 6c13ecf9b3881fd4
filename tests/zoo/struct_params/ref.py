"""numpy reference for the struct_params family.

``torch_<name>``: the same in PyTorch (on the CPU; torch is imported only when one runs).
"""

from __future__ import annotations

import numpy as np


def struct_params(inputs: dict[str, np.ndarray], args: dict) -> dict[str, np.ndarray]:
    """Every CTA loads its 32x32 tile of the tensor-mapped matrix `in` and stores it plus one
    through the struct's pointer: out == in + 1."""
    x = np.asarray(inputs["in"], dtype=np.float32)
    return {"out": x + np.float32(1)}


def torch_struct_params(inputs: dict, args: dict) -> dict:
    """PyTorch reference (CPU)."""
    import torch

    return {"out": torch.from_numpy(np.asarray(inputs["in"], dtype=np.float32)) + 1.0}
