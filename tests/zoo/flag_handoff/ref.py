"""numpy reference for the flag_handoff family: out = 3 * in (through the payload)."""

import numpy as np


def flag_handoff(inputs: dict[str, np.ndarray], args: dict) -> dict[str, np.ndarray]:
    return {"out": (inputs["in"].astype(np.int64) * 3).astype(inputs["out"].dtype)}
