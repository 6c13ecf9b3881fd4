"""Triton kernels of our own for the API tests (tests/test_triton_api.py): the zoo's three
(imported from tests/zoo/triton/generate.py), and three new ones — a masked row softmax, a
``tl.dot`` matmul pipelined with ``num_stages=3`` (cp.async + wgmma on sm_90a) and a TMA
``TensorDescriptor`` matmul — each with a seeded-bug twin whose bug line carries the comment
``# seeded bug`` (``bug_line`` finds it). Importing this module needs triton."""
from __future__ import annotations

import inspect
import sys
from pathlib import Path

import triton
import triton.language as tl

# ----------------------------------------------------------------------------- the zoo's kernels


# the zoo's generator defines them (its committed PTX's line info points into that file)
sys.path.insert(0, str(Path(__file__).resolve().parent / "zoo" / "triton"))
from generate import add_kernel, matmul_kernel, tma_matmul_kernel  # noqa: E402,F401


# ----------------------------------------------------------------------------- masked row softmax


@triton.jit
def softmax_kernel(out_ptr, in_ptr, in_stride, out_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * in_stride + cols, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    den = tl.sum(num, axis=0)
    tl.store(out_ptr + row * out_stride + cols, num / den, mask=mask)


@triton.jit
def softmax_kernel__mask_off_by_one(out_ptr, in_ptr, in_stride, out_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * in_stride + cols, mask=cols <= n_cols, other=-float("inf"))  # seeded bug
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    den = tl.sum(num, axis=0)
    tl.store(out_ptr + row * out_stride + cols, num / den, mask=mask)


# ----------------------------------------------------------------------------- tl.dot matmul, 3 stages


@triton.jit
def dot_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        a = tl.load(a_ptr + rm[:, None] * stride_am + (k0 + rk)[None, :] * stride_ak,
                    mask=(rm[:, None] < M) & ((k0 + rk)[None, :] < K), other=0.0)
        b = tl.load(b_ptr + (k0 + rk)[:, None] * stride_bk + rn[None, :] * stride_bn,
                    mask=((k0 + rk)[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def dot_matmul_kernel__no_row_mask(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                                   stride_cm, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        a = tl.load(a_ptr + rm[:, None] * stride_am + (k0 + rk)[None, :] * stride_ak,
                    mask=(rm[:, None] < M) & ((k0 + rk)[None, :] < K), other=0.0)
        b = tl.load(b_ptr + (k0 + rk)[:, None] * stride_bk + rn[None, :] * stride_bn,
                    mask=((k0 + rk)[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :], acc, mask=rn[None, :] < N)  # seeded bug


# ----------------------------------------------------------------------------- TMA descriptor matmul


@triton.jit
def desc_matmul_kernel(a_desc, b_desc, c_desc, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                       BLOCK_K: tl.constexpr):
    off_m = tl.program_id(0) * BLOCK_M
    off_n = tl.program_id(1) * BLOCK_N
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        acc = tl.dot(a_desc.load([off_m, k0]), b_desc.load([k0, off_n]), acc)
    c_desc.store([off_m, off_n], acc.to(tl.float16))


@triton.jit
def desc_matmul_kernel__overlapping_tiles(a_desc, b_desc, c_desc, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                                          BLOCK_K: tl.constexpr):
    off_m = tl.program_id(0) * BLOCK_M
    off_n = tl.program_id(1) * BLOCK_N
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        acc = tl.dot(a_desc.load([off_m, k0]), b_desc.load([k0, off_n]), acc)
    c_desc.store([off_m, off_n // 2], acc.to(tl.float16))  # seeded bug


def bug_line(jit_fn) -> int:
    """The line of ``jit_fn``'s source file that carries ``# seeded bug``."""
    lines, start = inspect.getsourcelines(jit_fn.fn)
    hits = [start + i for i, line in enumerate(lines) if "# seeded bug" in line]
    assert len(hits) == 1, hits
    return hits[0]


@triton.jit
def guarded_softmax_kernel(flag_ptr, out_ptr, in_ptr, n_cols, BLOCK: tl.constexpr):
    if tl.load(flag_ptr) == 0:  # every program returns before the reduction's barriers
        return
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(in_ptr + row * n_cols + cols, mask=cols < n_cols, other=-float("inf"))
    num = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * n_cols + cols, num / tl.sum(num, axis=0), mask=cols < n_cols)
