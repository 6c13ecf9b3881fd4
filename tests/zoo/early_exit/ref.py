"""numpy reference for the early_exit family: each 128-element block reversed, unless ctl[0]
is below the threshold (then out is left as it was)."""

import numpy as np


def early_exit(inputs: dict[str, np.ndarray], args: dict) -> dict[str, np.ndarray]:
    out = np.array(inputs["out"], copy=True)
    if int(inputs["ctl"][0]) >= int(args["threshold"]):
        out[:] = inputs["in"].reshape(-1, 128)[:, ::-1].reshape(-1)
    return {"out": out}


def torch_early_exit(inputs: dict, args: dict) -> dict:
    """PyTorch reference (CPU)."""
    import torch

    out = torch.from_numpy(np.array(inputs["out"], copy=True))
    if int(inputs["ctl"][0]) >= int(args["threshold"]):
        x = torch.from_numpy(np.asarray(inputs["in"])).reshape(-1, 128)
        out[:] = torch.flip(x, dims=[1]).reshape(-1)
    return {"out": out}
