"""numpy reference for the cluster_arrive family."""

from __future__ import annotations

import numpy as np


def cluster_arrive(inputs: dict[str, np.ndarray], args: dict) -> dict[str, np.ndarray]:
    """out[t] = 2 * in[(t + 1) % 128]: CTA 1 writes 2*in into CTA 0's smem, CTA 0 reads it rotated."""
    x = np.asarray(inputs["in"], dtype=np.float32).reshape(-1)[:128]
    return {"out": (np.float32(2.0) * np.roll(x, -1)).astype(np.float32)}
