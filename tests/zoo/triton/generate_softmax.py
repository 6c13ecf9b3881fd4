"""Regenerate the Triton softmax kernels of the equivalence zoo: a row softmax written with
``tl.exp2`` (the base-2 form Triton kernels use), compiled offline for sm_90a, and its
seeded-bug twin (``tl.exp2(x - m)``: the log2(e) scale dropped, so it computes a base-2
softmax, a different function).

Usage (from anywhere):   python tests/zoo/triton/generate_softmax.py [--check]

Needs triton 3.6.0 and ``ptxas`` on PATH; no GPU. The compilation and the post-processing
are those of ``generate.py`` (``.file`` paths made machine-independent, DWARF sections
dropped); ``.loc`` lines point at this file. Both kernels are compiled from source (the
twin is a second ``@triton.jit`` function, not a text mutation). Triton 3.6 emits a
module-scope ``.global .b8 _$_str[11] = "__CUDA_FTZ"`` (libdevice's reflection string)
for ``tl.exp2``; the kernels never read it. ``--check`` regenerates into a temporary
directory and compares with the committed files.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_REL = "tests/zoo/triton/generate_softmax.py"

try:
    import triton
    import triton.language as tl
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
except ImportError:  # pragma: no cover - depends on the machine
    sys.exit("generate_softmax.py needs triton (pip install triton==3.6.0); the committed .ptx files do not.")

TARGET = GPUTarget("cuda", 90, 32)
DIV16 = [["tt.divisibility", 16]]
BLOCK = 128  # columns per row (one program per row; n_cols <= BLOCK)


@triton.jit
def softmax_exp2_kernel(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * n_cols + offs, mask=mask, other=-float("inf"))
    m = tl.max(x, axis=0)
    p = tl.exp2((x - m) * 1.4426950408889634)  # exp(x - m) = 2 ** ((x - m) * log2(e))
    s = tl.sum(p, axis=0)
    tl.store(y_ptr + row * n_cols + offs, p / s, mask=mask)


@triton.jit
def softmax_exp2_no_log2e_kernel(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * n_cols + offs, mask=mask, other=-float("inf"))
    m = tl.max(x, axis=0)
    p = tl.exp2(x - m)  # SEEDED BUG: the log2(e) scale is missing (2 ** (x - m), not exp(x - m))
    s = tl.sum(p, axis=0)
    tl.store(y_ptr + row * n_cols + offs, p / s, mask=mask)


KERNELS = [("softmax_exp2.ptx", softmax_exp2_kernel), ("softmax_exp2__no_log2e.ptx", softmax_exp2_no_log2e_kernel)]


def compile_ptx(fn):
    src = ASTSource(fn=fn, signature={"x_ptr": "*fp32", "y_ptr": "*fp32", "n_cols": "i32", "BLOCK": "constexpr"},
                    constexprs={"BLOCK": BLOCK}, attrs={(0,): DIV16, (1,): DIV16})
    compiled = triton.compile(src, target=TARGET, options={"num_warps": 4, "num_stages": 1})
    return compiled.asm["ptx"]


def normalize_ptx(ptx: str) -> str:
    """Machine-independent .file paths; drop the DWARF sections (tests/zoo/triton/generate.py)."""
    sys.path.insert(0, HERE)
    from generate import normalize_ptx as normalize  # the one post-processing of our Triton PTX

    return normalize(ptx, __file__, REPO_REL)


def build(outdir):
    for name, fn in KERNELS:
        path = os.path.join(outdir, name)
        with open(path, "w") as f:
            f.write(normalize_ptx(compile_ptx(fn)))
        r = subprocess.run(["ptxas", "-arch=sm_90a", "-lineinfo", path, "-o", os.devnull],
                           capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"ptxas rejected {path}:\n{r.stderr}")


def main(argv):
    if "--check" in argv:
        with tempfile.TemporaryDirectory() as tmp:
            build(tmp)
            bad = [n for n, _ in KERNELS
                   if open(os.path.join(tmp, n)).read() != open(os.path.join(HERE, n)).read()]
            if bad:
                sys.exit("out of date: " + ", ".join(bad))
            print("zoo/triton softmax kernels are up to date")
        return
    build(HERE)
    print("wrote", ", ".join(n for n, _ in KERNELS))


if __name__ == "__main__":
    main(sys.argv[1:])
