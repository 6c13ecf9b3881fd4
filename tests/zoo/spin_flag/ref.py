"""numpy reference for the spin_flag family: out = in + 1, handed from warp 1 to warp 0."""

import numpy as np


def spin_flag(inputs: dict[str, np.ndarray], args: dict) -> dict[str, np.ndarray]:
    return {"out": (inputs["in"] + 1).astype(np.int32)}
