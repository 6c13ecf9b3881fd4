#!/usr/bin/env python3
"""Regenerate ``triton_matmul_sm80.ptx``: the repository's Triton ``tl.dot`` matmul
(``matmul_kernel`` of ``tests/zoo/triton/generate.py``) compiled offline by Triton 3.6.0 for
sm_80 (``GPUTarget("cuda", 80, 32)``), 32 x 32 x 32 blocks, 4 warps, 3 stages. On sm_80
Triton lowers ``tl.dot`` to cp.async copies into shared memory, ``ldmatrix`` (``.trans``
for B) and ``mma.sync.aligned.m16n8k16``. The PTX is post-processed as generate.py does
(``normalize_ptx``: relative ``.file`` paths, no DWARF sections).

Also writes the seeded-bug twin ``triton_matmul_sm80__b_not_transposed.ptx``: the first
``ldmatrix ... .trans`` of the B tile loses its ``.trans`` (a transposed operand: half of
the B fragments hold B^T's elements). Line numbers are unchanged.

Usage: ``python tests/zoo/tc_gemm/triton_sm80.py [--check]`` (needs triton==3.6.0; no GPU).
"""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
GEN = HERE.parent / "triton" / "generate.py"
BM, BN, BK = 32, 32, 32


def build() -> dict:
    spec = importlib.util.spec_from_file_location("zoo_triton_generate", GEN)
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)  # exits with a message when triton is missing
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32", "M": "i32", "N": "i32", "K": "i32",
           "stride_am": "i32", "stride_ak": "constexpr", "stride_bk": "i32", "stride_bn": "constexpr",
           "stride_cm": "i32", "stride_cn": "constexpr",
           "BLOCK_M": "constexpr", "BLOCK_N": "constexpr", "BLOCK_K": "constexpr"}
    consts = {"stride_ak": 1, "stride_bn": 1, "stride_cn": 1, "BLOCK_M": BM, "BLOCK_N": BN, "BLOCK_K": BK}
    attrs = {(i,): gen.DIV16 for i in (0, 1, 2, 4, 5, 6, 7, 8)}  # as generate.py's matmul
    src = ASTSource(fn=gen.matmul_kernel, signature=sig, constexprs=consts, attrs=attrs)
    c = triton.compile(src, target=GPUTarget("cuda", 80, 32), options={"num_warps": 4, "num_stages": 3})
    ptx = gen.normalize_ptx(c.asm["ptx"])
    lines = ptx.split("\n")
    hits = [i for i, l in enumerate(lines) if "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16" in l]
    assert len(hits) == 2, hits  # the two B loads of one K tile
    bug = list(lines)
    bug[hits[0]] = bug[hits[0]].replace(".x4.trans.shared", ".x4.shared")
    return {"triton_matmul_sm80.ptx": ptx, "triton_matmul_sm80__b_not_transposed.ptx": "\n".join(bug)}


def main(argv) -> int:
    files = build()
    if "--check" in argv:
        bad = [n for n, t in files.items() if not (HERE / n).exists() or (HERE / n).read_text() != t]
        print("out of date: " + ", ".join(bad) if bad else "triton sm_80 PTX is up to date")
        return 1 if bad else 0
    for n, t in files.items():
        (HERE / n).write_text(t)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
