#!/usr/bin/env python3
"""Recompile the Hopper (sm_90a async machinery) kernel-zoo families to PTX.

Every ``X.cu`` of the families below is compiled from inside its family
directory with exactly

    nvcc -arch=sm_90a -lineinfo -ptx -o X.ptx X.cu

and the result is checked with ``ptxas -arch=sm_90a X.ptx -o /dev/null`` when
ptxas is on PATH. nvcc writes the absolute source path into the ``.file``
directives; entries naming a file of the family directory are rewritten to the
bare file name so the committed PTX does not depend on the checkout location.
Nothing else in the PTX is touched.

Usage:  python tests/zoo/regen_hopper.py [family ...]
Exits 0 with a message when nvcc is not on PATH; 1 when a compile fails.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

ZOO = Path(__file__).resolve().parent

FAMILIES = [
    "bulk_pipeline",
    "tma_store",
    "tma_tensor_load",
    "wgmma_tile",
    "fp8_mma",
    "int_mma",
    "wgmma_pipeline",
    "peek_pipeline",
    "cluster_arrive",
    "arrive_drop",
    "warp_specialized",
    "relaxed_mbarrier",
    "mbarrier_reinit",
    "mbarrier_init_seq",
    "struct_params",
    "persistent_pipeline",
    "persistent_pipeline_split",
]

_FILE_DIRECTIVE = re.compile(r'^(\s*\.file\s+\d+\s+)"([^"]*)"(.*)$')


def strip_family_dir(ptx: str, family_dir: Path) -> str:
    prefixes = {str(family_dir).rstrip("/") + "/", str(family_dir.resolve()).rstrip("/") + "/"}
    lines = []
    for line in ptx.splitlines(keepends=True):
        m = _FILE_DIRECTIVE.match(line.rstrip("\n"))
        if m:
            for prefix in prefixes:
                if m.group(2).startswith(prefix):
                    line = f'{m.group(1)}"{m.group(2)[len(prefix):]}"{m.group(3)}\n'
                    break
        lines.append(line)
    return "".join(lines)


def compile_one(cu: Path) -> bool:
    family_dir = cu.parent
    ptx = cu.with_suffix(".ptx")
    cmd = ["nvcc", "-arch=sm_90a", "-lineinfo", "-ptx", "-o", ptx.name, cu.name]
    if subprocess.run(cmd, cwd=family_dir).returncode != 0:
        print(f"regen_hopper: nvcc failed on {cu.relative_to(ZOO)}", file=sys.stderr)
        return False
    ptx.write_text(strip_family_dir(ptx.read_text(), family_dir))
    if shutil.which("ptxas") is not None:
        chk = ["ptxas", "-arch=sm_90a", ptx.name, "-o", "/dev/null"]
        if subprocess.run(chk, cwd=family_dir).returncode != 0:
            print(f"regen_hopper: ptxas rejected {ptx.relative_to(ZOO)}", file=sys.stderr)
            return False
    return True


def main(argv: list[str]) -> int:
    if shutil.which("nvcc") is None:
        print("regen_hopper: nvcc not found on PATH; nothing regenerated")
        return 0
    families = argv or FAMILIES
    unknown = [f for f in families if f not in FAMILIES]
    if unknown:
        print(f"regen_hopper: unknown family: {', '.join(unknown)}", file=sys.stderr)
        return 2
    done = failed = 0
    for fam in families:
        for cu in sorted((ZOO / fam).glob("*.cu")):
            print(f"nvcc {fam}/{cu.name}")
            if compile_one(cu):
                done += 1
            else:
                failed += 1
    print(f"regen_hopper: compiled {done} kernels, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
