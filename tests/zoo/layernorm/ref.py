"""References for the layer-norm family.

``layer_norm(x, weight, bias)``: the PyTorch function ``kverify equiv`` proves the kernel against
(``--ref torch:tests/zoo/layernorm/ref.py:layer_norm``). The kernels' PTX parameters are positional
(Triton emits ``<kernel>_param_<i>``), so the command binds the function's parameters by position:
``--bind x=0,weight=1,bias=2``.

``layernorm(inputs, args)`` / ``torch_layernorm``: the zoo's numpy reference of the manifest and its
PyTorch twin (buffers keyed by the PTX parameter names, ``_param_0`` x, ``_param_1`` weight,
``_param_2`` bias, ``_param_3`` y; ``_param_6`` eps). torch is imported only when one runs.
"""
import numpy as np


def layer_norm(x, weight, bias):
    import torch.nn.functional as F

    return F.layer_norm(x, (x.shape[-1],), weight, bias, eps=1e-5)


def layer_norm_unsupported_op(x, weight, bias):
    import torch

    y = layer_norm(x, weight, bias)
    return torch.special.erf(y) * 0 + y


def _keys(d):
    return {k.rsplit("_param_", 1)[1]: k for k in d if "_param_" in k}


def layernorm(inputs: dict, args: dict) -> dict:
    k, a = _keys(inputs), _keys(args)
    x = inputs[k["0"]].astype(np.float64)
    w, b = inputs[k["1"]].astype(np.float64), inputs[k["2"]].astype(np.float64)
    eps = float(np.float32(args[a["6"]]))
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    y = (x - mean) / np.sqrt(var + eps) * w + b
    return {k["3"]: y.astype(inputs[k["3"]].dtype)}


def torch_layernorm(inputs: dict, args: dict) -> dict:
    """PyTorch twin (CPU, float64)."""
    import torch
    import torch.nn.functional as F

    k, a = _keys(inputs), _keys(args)
    x = torch.from_numpy(inputs[k["0"]]).double()
    w, b = torch.from_numpy(inputs[k["1"]]).double(), torch.from_numpy(inputs[k["2"]]).double()
    y = F.layer_norm(x, (x.shape[-1],), w, b, eps=float(np.float32(args[a["6"]])))
    return {k["3"]: y.to(torch.from_numpy(inputs[k["3"]][:0]).dtype)}
