"""numpy reference for the mbarrier_init_seq family.

``torch_<name>``: the same in PyTorch (on the CPU; torch is imported only when one runs).
"""

from __future__ import annotations

import numpy as np


def mbarrier_init_seq(inputs: dict[str, np.ndarray], args: dict) -> dict[str, np.ndarray]:
    """CTA r stores its peer's data: out[32r + t] = (peer + 2) * in[32 peer + (t + 1) % 32], peer = r ^ 1."""
    x = np.asarray(inputs["in"], dtype=np.float32).reshape(-1)[:64].reshape(2, 32)
    scale = np.array([[2.0], [3.0]], dtype=np.float32)
    written = scale * np.roll(x, -1, axis=1)  # row p: what CTA p writes into its peer
    return {"out": written[::-1].reshape(-1).astype(np.float32)}


def torch_mbarrier_init_seq(inputs: dict, args: dict) -> dict:
    """PyTorch reference (CPU)."""
    import torch

    x = torch.from_numpy(np.asarray(inputs["in"], dtype=np.float32)).reshape(-1)[:64].reshape(2, 32)
    scale = torch.tensor([[2.0], [3.0]])
    return {"out": (scale * torch.roll(x, -1, dims=1)).flip(0).reshape(-1)}
