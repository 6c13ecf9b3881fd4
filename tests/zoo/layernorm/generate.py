"""Regenerate the layer-norm pair of the zoo: real Triton-emitted PTX for sm_90a of our own
row-wise layer norm (``layernorm.ptx``) and of a seeded-bug twin that divides the variance
by N - 1 instead of N (``layernorm__var_unbiased.ptx``), plus ``manifest.json`` (the correct kernel) and ``layernorm__var_unbiased.launch.json``.

Usage (from anywhere):   python tests/zoo/layernorm/generate.py [--check]

Needs triton (pinned: 3.6.0) and ``ptxas`` on PATH; no GPU: ``triton.compile(...,
target=GPUTarget("cuda", 90, 32))`` emits PTX offline. The post-processing is that of
``tests/zoo/triton/generate.py``: ``.file`` paths made machine-independent (this script
becomes ``tests/zoo/layernorm/generate.py``, triton's files ``triton/...``) and the DWARF
``.section .debug_*`` blocks dropped; ``.loc`` line info stays, so the PTX maps every
instruction to a line of this file. ``--check`` regenerates into a temporary directory and
diffs against the committed files.

The reference is ``torch.nn.functional.layer_norm`` (``ref.py``), checked with
``kverify equiv layernorm.ptx --ref torch:tests/zoo/layernorm/ref.py:layer_norm``.
"""
from __future__ import annotations

import filecmp
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_REL = "tests/zoo/layernorm/generate.py"

try:
    import triton
    import triton.language as tl
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
except ImportError:  # pragma: no cover - depends on the machine
    sys.exit("generate.py needs triton to regenerate the PTX (pip install triton==3.6.0); "
             "the committed .ptx files do not need it.")

TARGET = GPUTarget("cuda", 90, 32)
DIV16 = [["tt.divisibility", 16]]


# Kernels. The PTX .loc directives point at these lines.


@triton.jit
def layernorm_kernel(x_ptr, w_ptr, b_ptr, y_ptr, stride, N, eps, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / N
    xc = tl.where(mask, x - mean, 0.0)
    var = tl.sum(xc * xc, axis=0) / N
    rstd = 1 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + cols, mask=mask)
    b = tl.load(b_ptr + cols, mask=mask)
    y = xc * rstd * w + b
    tl.store(y_ptr + row * stride + cols, y, mask=mask)


@triton.jit
def layernorm_var_unbiased_kernel(x_ptr, w_ptr, b_ptr, y_ptr, stride, N, eps, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / N
    xc = tl.where(mask, x - mean, 0.0)
    var = tl.sum(xc * xc, axis=0) / (N - 1)  # seeded bug: the unbiased variance
    rstd = 1 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + cols, mask=mask)
    b = tl.load(b_ptr + cols, mask=mask)
    y = xc * rstd * w + b
    tl.store(y_ptr + row * stride + cols, y, mask=mask)


SIGNATURE = {"x_ptr": "*fp32", "w_ptr": "*fp32", "b_ptr": "*fp32", "y_ptr": "*fp32", "stride": "i32", "N": "i32",
             "eps": "fp32", "BLOCK_N": "constexpr"}
BLOCK_N, NUM_WARPS = 32, 1
ROWS, N, EPS = 4, 24, 1e-5


def compile_ptx(fn):
    src = ASTSource(fn=fn, signature=SIGNATURE, constexprs={"BLOCK_N": BLOCK_N},
                    attrs={(0,): DIV16, (1,): DIV16, (2,): DIV16, (3,): DIV16, (4,): DIV16})
    compiled = triton.compile(src, target=TARGET, options={"num_warps": NUM_WARPS, "num_stages": 1})
    return compiled.asm["ptx"], compiled.metadata


def normalize_ptx(ptx: str) -> str:
    """Machine-independent .file paths; drop the DWARF sections (tests/zoo/triton/generate.py)."""
    sys.path.insert(0, os.path.join(os.path.dirname(HERE), "triton"))
    from generate import normalize_ptx as normalize  # the one post-processing of our Triton PTX

    return normalize(ptx, __file__, REPO_REL)


def params_of(ptx: str):
    m = re.search(r"\.visible\s+\.entry\s+(\w+)\(\s*(.*?)\)", ptx, flags=re.S)
    assert m, "no .entry found"
    return m.group(1), [p.split()[-1] for p in m.group(2).split(",")]


def build(outdir: str) -> None:
    entries = {}
    for name, fn in (("layernorm.ptx", layernorm_kernel), ("layernorm__var_unbiased.ptx", layernorm_var_unbiased_kernel)):
        ptx, meta = compile_ptx(fn)
        assert int(getattr(meta, "global_scratch_size", 0) or 0) == 0
        ptx = normalize_ptx(ptx)
        path = os.path.join(outdir, name)
        with open(path, "w") as f:
            f.write(ptx)
        r = subprocess.run(["ptxas", "-arch=sm_90a", "-lineinfo", path, "-o", os.devnull], capture_output=True,
                           text=True)
        if r.returncode != 0:
            sys.exit(f"ptxas rejected {path}:\n{r.stderr}")
        entries[name] = params_of(ptx)
    # the zoo manifest lists the correct kernel (the zoo's convention: "reference" is the numpy
    # function of ref.py, with its torch_ twin; seeded functional bugs stay out of manifests). The
    # twin gets its own launch file. Both are keyed by the PTX parameter names (Triton's PTX has no
    # source names: <kernel>_param_<i>); the Triton scratch pointers (7, 8) are null.
    def launch_of(entry, p):
        return {"kernel": entry, "grid": [ROWS, 1, 1], "block": [32 * NUM_WARPS, 1, 1], "cluster": [1, 1, 1],
                "args": {p[4]: N, p[5]: N, p[6]: EPS, p[7]: 0, p[8]: 0},
                "buffers": {p[0]: {"dtype": "float32", "shape": [ROWS, N]}, p[1]: {"dtype": "float32", "shape": [N]},
                            p[2]: {"dtype": "float32", "shape": [N]}, p[3]: {"dtype": "float32", "shape": [ROWS, N]}},
                "outputs": [p[3]]}

    entry, p = entries["layernorm.ptx"]
    variant = {"file": "layernorm.ptx", "kernel": entry, "correct": True, "source": "generate.py",
               "triton": triton.__version__, "num_warps": NUM_WARPS, "BLOCK_N": BLOCK_N,
               "param_roles": dict(zip(p, ["x_ptr", "w_ptr", "b_ptr", "y_ptr", "stride", "N", "eps",
                                           "global scratch (null)", "profile scratch (null)"])),
               "launch": launch_of(entry, p), "reference": "ref:layernorm",
               "expect": {"race": "ok", "barrier": "ok", "deadlock": "ok"}, "bug": None}
    with open(os.path.join(outdir, "manifest.json"), "w") as f:
        json.dump({"family": "layernorm", "variants": [variant]}, f, indent=1)
        f.write("\n")
    entry, p = entries["layernorm__var_unbiased.ptx"]
    with open(os.path.join(outdir, "layernorm__var_unbiased.launch.json"), "w") as f:
        json.dump(launch_of(entry, p), f, indent=1)
        f.write("\n")


def main() -> None:
    if "--check" in sys.argv:
        with tempfile.TemporaryDirectory() as tmp:
            build(tmp)
            bad = [n for n in sorted(os.listdir(tmp)) if not filecmp.cmp(os.path.join(tmp, n), os.path.join(HERE, n),
                                                                        shallow=False)]
            if bad:
                sys.exit(f"regenerated files differ from the committed ones: {', '.join(bad)}")
            print("committed files match a fresh build")
        return
    build(HERE)
    print(f"wrote {', '.join(sorted(os.listdir(HERE)))}")


if __name__ == "__main__":
    main()
