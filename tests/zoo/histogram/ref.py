"""numpy reference for the histogram family: bins += counts of data % 64."""

import numpy as np

NBINS = 64


def histogram(inputs: dict[str, np.ndarray], args: dict) -> dict[str, np.ndarray]:
    n = int(args["n"])
    data = inputs["data"][:n].astype(np.uint64) % NBINS
    counts = np.bincount(data.astype(np.int64), minlength=NBINS)
    bins = (inputs["bins"].astype(np.uint64) + counts.astype(np.uint64)).astype(inputs["bins"].dtype)
    return {"bins": bins}
