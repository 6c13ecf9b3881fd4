"""numpy reference for the flag_handoff family: out = 3 * in (through the payload)."""

import numpy as np


def flag_handoff(inputs: dict[str, np.ndarray], args: dict) -> dict[str, np.ndarray]:
    return {"out": (inputs["in"].astype(np.int64) * 3).astype(inputs["out"].dtype)}


def torch_flag_handoff(inputs: dict, args: dict) -> dict:
    """PyTorch reference (CPU)."""
    import torch

    x = torch.from_numpy(np.asarray(inputs["in"])).to(torch.int64)
    return {"out": (x * 3).to(torch.from_numpy(np.asarray(inputs["out"])).dtype)}
