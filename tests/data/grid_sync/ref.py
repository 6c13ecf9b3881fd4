"""Reference for two_phase (float64, from private copies of the inputs): tmp = 2 in, then
out[i] = tmp[(i + 1) % n] + tmp[i]."""
import numpy as np


def two_phase(inputs, args):
    n = int(args["n"])
    tmp = np.array(inputs["tmp"], copy=True)
    out = np.array(inputs["out"], copy=True)
    t = inputs["in"][:n].astype(np.float32) * np.float32(2.0)
    tmp[:n] = t
    out[:n] = (t[(np.arange(n) + 1) % n].astype(np.float64) + t).astype(out.dtype)
    return {"tmp": tmp, "out": out}
