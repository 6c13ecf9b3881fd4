"""numpy references for the saxpy family (scalar and float4 versions)."""

import numpy as np


def saxpy(inputs: dict[str, np.ndarray], args: dict) -> dict[str, np.ndarray]:
    n = int(args["n"])
    alpha = np.float32(args["alpha"])
    y = np.array(inputs["y"], copy=True)
    y[:n] = (alpha * inputs["x"][:n].astype(np.float64) + y[:n]).astype(y.dtype)
    return {"y": y}


def saxpy_scalar(inputs: dict[str, np.ndarray], args: dict) -> dict[str, np.ndarray]:
    return saxpy(inputs, args)


def saxpy_vec(inputs: dict[str, np.ndarray], args: dict) -> dict[str, np.ndarray]:
    # The kernel covers the first 4 * (n // 4) elements.
    return saxpy(inputs, {**args, "n": 4 * (int(args["n"]) // 4)})
