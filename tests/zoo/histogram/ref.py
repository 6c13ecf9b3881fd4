"""numpy reference for the histogram family: bins += counts of data % 64.

``torch_<name>``: the same in PyTorch (on the CPU; torch is imported only when one runs).
"""

import numpy as np

NBINS = 64


def histogram(inputs: dict[str, np.ndarray], args: dict) -> dict[str, np.ndarray]:
    n = int(args["n"])
    data = inputs["data"][:n].astype(np.uint64) % NBINS
    counts = np.bincount(data.astype(np.int64), minlength=NBINS)
    bins = (inputs["bins"].astype(np.uint64) + counts.astype(np.uint64)).astype(inputs["bins"].dtype)
    return {"bins": bins}


def torch_histogram(inputs: dict, args: dict) -> dict:
    """PyTorch reference (CPU): torch.bincount."""
    import torch

    n = int(args["n"])
    data = torch.from_numpy(inputs["data"][:n].astype(np.int64)) % NBINS
    counts = torch.bincount(data, minlength=NBINS)
    bins = torch.from_numpy(inputs["bins"].astype(np.int64)) + counts
    return {"bins": (bins & 0xFFFFFFFF).to(torch.uint32)}
