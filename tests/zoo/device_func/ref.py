"""numpy reference for the device_func family: y = smoothstep(edge0, edge1, x).

``torch_<name>``: the same in PyTorch (on the CPU; torch is imported only when one runs).
"""

import numpy as np


def device_func(inputs: dict[str, np.ndarray], args: dict) -> dict[str, np.ndarray]:
    n = int(args["n"])
    e0, e1 = float(args["edge0"]), float(args["edge1"])
    y = np.array(inputs["y"], copy=True)
    t = np.clip((inputs["x"][:n].astype(np.float64) - e0) / (e1 - e0), 0.0, 1.0)
    y[:n] = (t * t * (3.0 - 2.0 * t)).astype(y.dtype)
    return {"y": y}


def torch_device_func(inputs: dict, args: dict) -> dict:
    """PyTorch reference (CPU): smoothstep in float64."""
    import torch

    n = int(args["n"])
    e0, e1 = float(args["edge0"]), float(args["edge1"])
    y = torch.from_numpy(np.array(inputs["y"], copy=True))
    t = torch.clamp((torch.from_numpy(inputs["x"][:n]).double() - e0) / (e1 - e0), 0.0, 1.0)
    y[:n] = (t * t * (3.0 - 2.0 * t)).to(y.dtype)
    return {"y": y}
