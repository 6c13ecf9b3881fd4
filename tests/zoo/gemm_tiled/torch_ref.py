"""PyTorch reference of the gemm family for ``kverify equiv ... --ref torch:tests/zoo/gemm_tiled/torch_ref.py:matmul``:
``A`` and ``B`` are the kernels' buffers of those names; the result is the one output ``C``."""
import torch


def matmul(A, B):
    return torch.matmul(A, B)
