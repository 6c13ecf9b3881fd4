"""A masked row softmax in Triton, checked from its call site with kverify.triton.check.
Run from the repository root: python examples/triton_softmax.py (needs triton and torch)."""
import torch
import triton
import triton.language as tl

import kverify


@triton.jit
def softmax(out_ptr, in_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(in_ptr + row * n_cols + cols, mask=cols <= n_cols, other=-float("inf"))
    num = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * n_cols + cols, num / tl.sum(num, axis=0), mask=cols < n_cols)


if __name__ == "__main__":
    x = torch.randn(4, 100)
    out = torch.empty_like(x)
    print(kverify.triton.check(softmax, (4,), out, x, 100, BLOCK=128))
