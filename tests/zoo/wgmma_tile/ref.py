"""numpy reference for the wgmma_tile family.

``torch_<name>``: the same in PyTorch (on the CPU; torch is imported only when one runs).
"""

from __future__ import annotations

import numpy as np


def wgmma_tile(inputs: dict[str, np.ndarray], args: dict) -> dict[str, np.ndarray]:
    """out (64x8, f32) = a (64x16, f16) @ b (16x8, f16), accumulated in float32."""
    a = np.asarray(inputs["a"], dtype=np.float16).reshape(64, 16).astype(np.float32)
    b = np.asarray(inputs["b"], dtype=np.float16).reshape(16, 8).astype(np.float32)
    return {"out": (a @ b).astype(np.float32)}


def torch_wgmma_tile(inputs: dict, args: dict) -> dict:
    """PyTorch reference (CPU; float16 inputs, float64 accumulation)."""
    import torch

    a = torch.from_numpy(np.asarray(inputs["a"], dtype=np.float16)).reshape(64, 16).double()
    b = torch.from_numpy(np.asarray(inputs["b"], dtype=np.float16)).reshape(16, 8).double()
    return {"out": torch.matmul(a, b).float()}
