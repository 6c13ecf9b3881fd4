#!/usr/bin/env python3
"""Regenerate the PTX of the tensor-core GEMM family (tests/zoo/tc_gemm).

* ``gemm_naive_f16.cu`` (the reference: one thread per element, f16 in, f32 accumulation)
  is compiled with ``nvcc -arch=sm_90a -lineinfo -ptx``;
* ``mma_gemm.cu`` and its seeded-bug twin ``mma_gemm__skip_last_k.cu`` (inline
  ``mma.sync.aligned.m16n8k16``) with ``nvcc -arch=sm_80 -lineinfo -ptx``;
* ``triton_matmul__wrong_b_offset.ptx`` is a one-token edit of the repository's Triton
  ``tl.dot`` matmul (``tests/zoo/triton/matmul.ptx``, written by
  ``tests/zoo/triton/generate.py``; wgmma m64n64k16, two per 32-wide K tile): the second
  ``wgmma.mma_async`` of each K tile gets the B descriptor of the first, so rows 16..31 of
  every B tile are never read and rows 0..15 are used twice. Line numbers are unchanged.

``.file`` directives naming a file of this directory are made relative (as
``tests/zoo/regen_cuda.py`` does). Usage: ``python tests/zoo/tc_gemm/regen.py [--check]``.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from regen_cuda import relativize_file_directives  # noqa: E402

CUDA = {"gemm_naive_f16": "sm_90a", "mma_gemm": "sm_80", "mma_gemm__skip_last_k": "sm_80", "tc_forms": "sm_90a", "gemm_naive_f16_out": "sm_90a", "gemm_naive_tf32": "sm_90a", "gemm_naive_bf16": "sm_90a", "transpose_f16": "sm_90a"}
TRITON_SRC = HERE.parent / "triton" / "matmul.ptx"
MUTANT = "triton_matmul__wrong_b_offset.ptx"


def wrong_b_offset(ptx: str) -> str:
    lines = ptx.split("\n")
    hits = [i for i, l in enumerate(lines) if "wgmma.mma_async" in l]
    assert len(hits) == 2, hits  # the two k16 steps of one 32-wide K tile
    first_b = lines[hits[0]].split("}, ")[1].split(", ")[1]
    a2, b2 = lines[hits[1]].split("}, ")[1].split(", ")[:2]
    assert first_b != b2 and lines[hits[1]].count(f"}}, {a2}, {b2},") == 1
    lines[hits[1]] = lines[hits[1]].replace(f"}}, {a2}, {b2},", f"}}, {a2}, {first_b},")
    return "\n".join(lines)


def build(out: Path) -> None:
    for name, arch in CUDA.items():
        dst = out / f"{name}.ptx"
        subprocess.run(["nvcc", f"-arch={arch}", "-lineinfo", "-ptx", "-o", str(dst), f"{name}.cu"],
                       cwd=HERE, check=True)
        dst.write_text(relativize_file_directives(dst.read_text(), HERE))
    (out / MUTANT).write_text(wrong_b_offset(TRITON_SRC.read_text()))


def main(argv) -> int:
    if shutil.which("nvcc") is None:
        print("nvcc is not on PATH; the committed .ptx files are unchanged")
        return 0
    if "--check" in argv:
        with tempfile.TemporaryDirectory() as tmp:
            build(Path(tmp))
            bad = [p.name for p in sorted(Path(tmp).iterdir()) if p.read_text() != (HERE / p.name).read_text()]
        print("out of date: " + ", ".join(bad) if bad else "tc_gemm is up to date")
        return 1 if bad else 0
    build(HERE)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
