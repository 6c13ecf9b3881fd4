"""numpy reference for the work_steal family: every 32-element tile reversed and doubled."""

import numpy as np


def work_steal(inputs: dict[str, np.ndarray], args: dict) -> dict[str, np.ndarray]:
    n = int(args["ntiles"]) * 32
    out = np.array(inputs["out"], copy=True)
    tiles = inputs["in"][:n].reshape(-1, 32)
    out[:n] = (2.0 * tiles[:, ::-1]).reshape(-1).astype(out.dtype)
    return {"out": out}
