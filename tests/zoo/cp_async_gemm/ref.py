"""numpy reference for the cp_async_gemm family: C = A @ B, row-major.

``torch_<name>``: the same in PyTorch (on the CPU; torch is imported only when one runs).
"""

import numpy as np


def gemm(inputs: dict[str, np.ndarray], args: dict) -> dict[str, np.ndarray]:
    M, N, K = int(args["M"]), int(args["N"]), int(args["K"])
    A = inputs["A"].astype(np.float64).reshape(M, K)
    B = inputs["B"].astype(np.float64).reshape(K, N)
    C = (A @ B).astype(inputs["C"].dtype).reshape(inputs["C"].shape)
    return {"C": C}


def torch_gemm(inputs: dict, args: dict) -> dict:
    """PyTorch reference (CPU, float64 accumulation)."""
    import torch

    M, N, K = int(args["M"]), int(args["N"]), int(args["K"])
    A = torch.from_numpy(inputs["A"]).double().reshape(M, K)
    B = torch.from_numpy(inputs["B"]).double().reshape(K, N)
    C = torch.matmul(A, B).to(torch.from_numpy(inputs["C"][:0]).dtype)
    return {"C": C.reshape(inputs["C"].shape)}
