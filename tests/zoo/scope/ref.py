"""numpy references for the scope family (kernels whose races or overflows show only for some
grids, argument values or memory layouts).

``torch_<name>``: the same in PyTorch (on the CPU; torch is imported only when one runs).
"""

import numpy as np


def grid_slots(inputs, args):
    x = inputs["in"].reshape(-1, 64)
    slots = np.array(inputs["slots"], copy=True)
    slots[:x.shape[0]] = x[:, 0] + x[:, 63]
    return {"slots": slots}


def torch_grid_slots(inputs, args):
    import torch

    x = torch.from_numpy(inputs["in"]).reshape(-1, 64)
    slots = torch.from_numpy(np.array(inputs["slots"], copy=True))
    slots[:x.shape[0]] = x[:, 0] + x[:, 63]
    return {"slots": slots}


def strided_scatter(inputs, args):
    s = int(args["stride"]) | 1
    out = np.array(inputs["out"], copy=True)
    i = np.arange(1024)
    out[(i * s) & 1023] = inputs["in"][:1024]
    return {"out": out}


def torch_strided_scatter(inputs, args):
    import torch

    s = int(args["stride"]) | 1
    out = torch.from_numpy(np.array(inputs["out"], copy=True))
    i = torch.arange(1024)
    out[(i * s) & 1023] = torch.from_numpy(inputs["in"][:1024])
    return {"out": out}


def shift_right(inputs, args):
    n = int(args["n"])
    out = np.array(inputs["out"], copy=True)
    out[0] = 0.0
    out[1:n] = inputs["in"][:n - 1]
    return {"out": out}


def torch_shift_right(inputs, args):
    import torch

    n = int(args["n"])
    out = torch.from_numpy(np.array(inputs["out"], copy=True))
    out[0] = 0.0
    out[1:n] = torch.from_numpy(inputs["in"][:n - 1])
    return {"out": out}


def smem_halo(inputs, args):
    x = inputs["in"].reshape(-1, 128)
    right = np.concatenate([x[:, 1:], np.zeros((x.shape[0], 1), x.dtype)], axis=1)
    return {"out": (x + right).reshape(-1)}


def torch_smem_halo(inputs, args):
    import torch

    x = torch.from_numpy(inputs["in"]).reshape(-1, 128)
    right = torch.cat([x[:, 1:], torch.zeros((x.shape[0], 1), dtype=x.dtype)], dim=1)
    return {"out": (x + right).reshape(-1)}


def warp_tree(inputs, args):
    s = inputs["in"].reshape(-1, 32).astype(np.float32).copy()
    off = 16
    while off:
        s[:, :off] = s[:, :off] + s[:, off:2 * off]
        off >>= 1
    return {"out": s[:, 0].copy()}


def torch_warp_tree(inputs, args):
    import torch

    s = torch.from_numpy(inputs["in"]).reshape(-1, 32).clone()
    off = 16
    while off:
        s[:, :off] = s[:, :off] + s[:, off:2 * off]
        off >>= 1
    return {"out": s[:, 0].clone()}
