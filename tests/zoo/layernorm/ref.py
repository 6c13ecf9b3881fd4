"""PyTorch references for the layer-norm pair (``kverify equiv ... --ref torch:tests/zoo/layernorm/ref.py:FN``).

The kernels' PTX parameters are positional (Triton emits ``<kernel>_param_<i>``), so the
command binds the function's parameters by position: ``--bind x=0,weight=1,bias=2``.
"""
import torch
import torch.nn.functional as F


def layer_norm(x, weight, bias):
    return F.layer_norm(x, (x.shape[-1],), weight, bias, eps=1e-5)


def layer_norm_unsupported_op(x, weight, bias):
    y = F.layer_norm(x, (x.shape[-1],), weight, bias, eps=1e-5)
    return torch.special.erf(y) * 0 + y
