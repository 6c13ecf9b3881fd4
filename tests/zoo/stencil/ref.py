"""numpy reference for the stencil family: 0.25/0.5/0.25 stencil, zero outside [0, n)."""

import numpy as np


def stencil(inputs: dict[str, np.ndarray], args: dict) -> dict[str, np.ndarray]:
    n = int(args["n"])
    x = np.zeros(n + 2, dtype=np.float64)
    x[1:n + 1] = inputs["in"][:n]
    out = np.array(inputs["out"], copy=True)
    out[:n] = (0.25 * x[:n] + 0.5 * x[1:n + 1] + 0.25 * x[2:n + 2]).astype(out.dtype)
    return {"out": out}
