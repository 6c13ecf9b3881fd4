"""numpy reference for the transpose family: out (width x height) = in (height x width)^T."""

import numpy as np


def transpose(inputs: dict[str, np.ndarray], args: dict) -> dict[str, np.ndarray]:
    width, height = int(args["width"]), int(args["height"])
    src = inputs["in"].reshape(height, width)
    return {"out": np.ascontiguousarray(src.T).reshape(inputs["out"].shape)}
