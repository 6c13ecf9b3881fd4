"""numpy references for the Triton zoo (tests/zoo/triton/manifest.json, "reference": "ref:<name>").

Each function takes ``inputs`` (buffer name -> numpy array, names as in the manifest's
``launch.buffers``: PTX ``.param`` names for pointer kernels, the logical names a/b/c for
tensor-descriptor kernels) and ``args`` (scalar ``.param`` name -> value), and returns
{output buffer name: expected array}. Compare matmuls with a tolerance (fp16 inputs,
fp32 accumulation in a different order than numpy's).

``torch_<name>``: the same in PyTorch (on the CPU; torch is imported only when one runs).
"""
from __future__ import annotations

import numpy as np


def add(inputs, args):
    x = inputs["add_kernel_param_0"]
    y = inputs["add_kernel_param_1"]
    n = int(args["add_kernel_param_3"])
    out = np.array(inputs.get("add_kernel_param_2", np.zeros_like(x)), dtype=np.float32, copy=True)
    out[:n] = (x[:n].astype(np.float32) + y[:n].astype(np.float32)).astype(np.float32)
    return {"add_kernel_param_2": out}


def matmul(inputs, args):
    a = inputs["matmul_kernel_param_0"].astype(np.float32)
    b = inputs["matmul_kernel_param_1"].astype(np.float32)
    m, n, k = (int(args[f"matmul_kernel_param_{i}"]) for i in (3, 4, 5))
    c = np.array(inputs.get("matmul_kernel_param_2", np.zeros((m, n), np.float32)),
                 dtype=np.float32, copy=True)
    c[:m, :n] = a[:m, :k] @ b[:k, :n]
    return {"matmul_kernel_param_2": c}


def tma_matmul(inputs, args):
    a = inputs["a"].astype(np.float32)
    b = inputs["b"].astype(np.float32)
    return {"c": (a @ b).astype(np.float16)}


def torch_add(inputs, args):
    """PyTorch reference (CPU)."""
    import torch

    x = torch.from_numpy(inputs["add_kernel_param_0"]).float()
    y = torch.from_numpy(inputs["add_kernel_param_1"]).float()
    n = int(args["add_kernel_param_3"])
    out = torch.from_numpy(np.array(inputs.get("add_kernel_param_2", np.zeros(x.shape, np.float32)),
                                    dtype=np.float32, copy=True))
    out[:n] = x[:n] + y[:n]
    return {"add_kernel_param_2": out}


def torch_matmul(inputs, args):
    """PyTorch reference (CPU; float16 inputs, float64 accumulation)."""
    import torch

    a = torch.from_numpy(inputs["matmul_kernel_param_0"]).double()
    b = torch.from_numpy(inputs["matmul_kernel_param_1"]).double()
    m, n, k = (int(args[f"matmul_kernel_param_{i}"]) for i in (3, 4, 5))
    c = torch.from_numpy(np.array(inputs.get("matmul_kernel_param_2", np.zeros((m, n), np.float32)),
                                  dtype=np.float32, copy=True))
    c[:m, :n] = torch.matmul(a[:m, :k], b[:k, :n]).float()
    return {"matmul_kernel_param_2": c}


def torch_tma_matmul(inputs, args):
    """PyTorch reference (CPU; float16 inputs, float64 accumulation, float16 result)."""
    import torch

    a = torch.from_numpy(inputs["a"]).double()
    b = torch.from_numpy(inputs["b"]).double()
    return {"c": torch.matmul(a, b).half()}
