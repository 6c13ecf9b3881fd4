"""numpy reference for the bulk_pipeline family (all variants compute the same thing)."""

from __future__ import annotations

import numpy as np

TILE_FLOATS = 256


def bulk_pipeline(inputs: dict[str, np.ndarray], args: dict) -> dict[str, np.ndarray]:
    """out[i] = 2 * in[i] for the first iters * 256 elements."""
    n = int(args["iters"]) * TILE_FLOATS
    x = np.asarray(inputs["in"], dtype=np.float32).reshape(-1)[:n]
    return {"out": (np.float32(2.0) * x).astype(np.float32)}
