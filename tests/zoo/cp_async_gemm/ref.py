"""numpy reference for the cp_async_gemm family: C = A @ B, row-major."""

import numpy as np


def gemm(inputs: dict[str, np.ndarray], args: dict) -> dict[str, np.ndarray]:
    M, N, K = int(args["M"]), int(args["N"]), int(args["K"])
    A = inputs["A"].astype(np.float64).reshape(M, K)
    B = inputs["B"].astype(np.float64).reshape(K, N)
    C = (A @ B).astype(inputs["C"].dtype).reshape(inputs["C"].shape)
    return {"C": C}
