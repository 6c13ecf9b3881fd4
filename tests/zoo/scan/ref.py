"""numpy reference for the scan family: inclusive prefix sum per 256-element block."""

import numpy as np

BLOCK = 256


def scan(inputs: dict[str, np.ndarray], args: dict) -> dict[str, np.ndarray]:
    n = int(args["n"])
    out = np.array(inputs["out"], copy=True)
    x = inputs["in"][:n].astype(np.float64)
    for start in range(0, n, BLOCK):
        seg = x[start:start + BLOCK]
        out[start:start + seg.size] = np.cumsum(seg).astype(out.dtype)
    return {"out": out}
