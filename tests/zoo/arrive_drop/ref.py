"""numpy reference for the arrive_drop family.

``torch_<name>``: the same in PyTorch (on the CPU; torch is imported only when one runs).
"""

from __future__ import annotations

import numpy as np

NUM_WARPS = 4


def _rounds(warp: int, iters: int) -> int:
    return iters if warp == 0 else max(iters - warp, 1)


def arrive_drop(inputs: dict[str, np.ndarray], args: dict) -> dict[str, np.ndarray]:
    """Round r, warp w: its partner's (w+1)%4 inputs while both are active, its own on its last round, 0 after."""
    iters = int(args["iters"])
    x = np.asarray(inputs["in"], dtype=np.float32).reshape(-1)[: iters * 128].reshape(iters, NUM_WARPS, 32)
    out = np.zeros_like(x)
    for w in range(NUM_WARPS):
        n = _rounds(w, iters)
        p = (w + 1) % NUM_WARPS
        for r in range(n):
            last = w != 0 and r == n - 1
            src = w if last or r >= _rounds(p, iters) else p
            out[r, w] = x[r, src]
    return {"out": out.reshape(-1)}


def torch_arrive_drop(inputs: dict, args: dict) -> dict:
    """PyTorch reference (CPU): the same rounds, with torch indexing."""
    import torch

    iters = int(args["iters"])
    x = torch.from_numpy(np.asarray(inputs["in"], dtype=np.float32)).reshape(-1)[: iters * 128]
    x = x.reshape(iters, NUM_WARPS, 32)
    out = torch.zeros_like(x)
    for w in range(NUM_WARPS):
        n = _rounds(w, iters)
        p = (w + 1) % NUM_WARPS
        src = torch.tensor([w if (w != 0 and r == n - 1) or r >= _rounds(p, iters) else p for r in range(n)])
        out[:n, w] = x[torch.arange(n), src]
    return {"out": out.reshape(-1)}
