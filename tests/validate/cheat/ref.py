"""References for the cheating kernels (float64, from private copies of the inputs)."""
import numpy as np


def add(inputs, args):
    n = int(args["n"])
    c = np.array(inputs["c"], copy=True)
    c[:n] = (inputs["a"][:n].astype(np.float64) + inputs["b"][:n]).astype(c.dtype)
    return {"c": c}


def rowsum_softmax(inputs, args):
    x = inputs["x"].astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return {"s": (e / e.sum(axis=1, keepdims=True)).sum(axis=1).astype(np.float32)}


def block_sums(inputs, args):
    n = int(args["n"])
    out = inputs["out"]
    x = np.zeros(out.shape[0] * 256)
    x[:n] = inputs["x"][:n]
    return {"out": x.reshape(out.shape[0], 256).sum(axis=1).astype(np.float32)}


def divide(inputs, args):
    n = int(args["n"])
    z = np.array(inputs["z"], copy=True)
    z[:n] = (inputs["x"][:n].astype(np.float64) / inputs["y"][:n]).astype(z.dtype)
    return {"z": z}
