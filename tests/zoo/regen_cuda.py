#!/usr/bin/env python3
"""Recompile the CUDA kernels of the zoo families listed below to PTX.

Each ``X.cu`` is compiled from inside its family directory with exactly

    nvcc -arch=sm_90a -lineinfo -ptx -o X.ptx X.cu

nvcc records the absolute path of the source in the ``.file`` directives even
when it is given a bare file name, so afterwards every ``.file`` entry that
names a file of the family directory is rewritten to the bare file name.
That keeps the committed PTX independent of where the checkout lives; the
instructions themselves are untouched.

Usage:  python tests/zoo/regen_cuda.py [family ...]
Exits 0 with a message when nvcc is not on PATH.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

ZOO = Path(__file__).resolve().parent

FAMILIES = [
    "vadd",
    "saxpy_vec",
    "reduce_smem",
    "reduce_warp",
    "gemm_tiled",
    "transpose",
    "softmax",
    "cp_async_gemm",
    "named_barrier",
    "histogram",
    "vote",
    "scan",
    "device_func",
    "stencil",
    "stencil_fma",
    "threshold",
    "midpoint",
    "warp_reduce_smem",
    "proxy_waw",
    "flag_handoff",
    "scope",
    "work_steal",
    "spin_flag",
    "early_exit",
    "softmax_warp",
]

_FILE_RE = re.compile(r'^(\s*\.file\s+\d+\s+)"([^"]*)"(.*)$')


def relativize_file_directives(ptx: str, family_dir: Path) -> str:
    """Rewrite `.file N "<family_dir>/X.cu"` to `.file N "X.cu"`."""
    roots = {str(family_dir), str(family_dir.resolve())}
    out = []
    for line in ptx.splitlines(keepends=True):
        m = _FILE_RE.match(line.rstrip("\n"))
        if m:
            path = m.group(2)
            for root in roots:
                prefix = root.rstrip("/") + "/"
                if path.startswith(prefix):
                    rel = path[len(prefix):]
                    while rel.startswith("./"):
                        rel = rel[2:]
                    line = f'{m.group(1)}"{rel}"{m.group(3)}\n'
                    break
        out.append(line)
    return "".join(out)


def compile_one(cu: Path) -> None:
    family_dir = cu.parent
    ptx = cu.with_suffix(".ptx")
    cmd = ["nvcc", "-arch=sm_90a", "-lineinfo", "-ptx", "-o", ptx.name, cu.name]
    subprocess.run(cmd, cwd=family_dir, check=True)
    ptx.write_text(relativize_file_directives(ptx.read_text(), family_dir))


def main(argv: list[str]) -> int:
    if shutil.which("nvcc") is None:
        print("regen_cuda: nvcc not found on PATH; nothing regenerated")
        return 0
    families = argv or FAMILIES
    unknown = [f for f in families if f not in FAMILIES]
    if unknown:
        print(f"regen_cuda: unknown family: {', '.join(unknown)}", file=sys.stderr)
        return 2
    count = 0
    for fam in families:
        for cu in sorted((ZOO / fam).glob("*.cu")):
            print(f"nvcc {fam}/{cu.name}")
            compile_one(cu)
            count += 1
    print(f"regen_cuda: compiled {count} kernels")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
