"""Regenerate the debug (``nvcc -G``, device optimizations off) PTX of a few zoo kernels.

Usage: python tests/data/O0/generate.py

At -O0 nvcc calls device functions instead of inlining them: ``atomicAdd`` calls
``__uAtomicAdd`` (a call inside a called function), ``__threadfence`` is a function holding
``membar.gl``, call sites declare ``.param`` variables of different widths under one name.
The DWARF ``.section .debug_*`` blocks are dropped and ``.file`` paths made
machine-independent; nothing inside a function body changes.
"""
import re
import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
KERNELS = ["flag_handoff/flag_handoff_fence.cu", "histogram/histogram.cu", "work_steal/work_steal.cu",
           "work_steal/work_steal_slot.cu", "scope/warp_tree.cu", "device_func/device_func.cu"]

for rel in KERNELS:
    src = ROOT / "tests" / "zoo" / rel
    out = HERE / (src.stem + ".ptx")
    subprocess.run(["nvcc", "-arch=sm_90a", "-G", "-ptx", str(src), "-o", str(out)], check=True)
    text = out.read_text()
    text = re.sub(r"\n\s*\.section\s+\.debug_\w+\s*\{.*?\n\s*\}", "", text, flags=re.S)
    text = text.replace(".target sm_90a, debug", ".target sm_90a")  # no DWARF left to point at
    text = text.replace(str(ROOT) + "/", "")
    text = re.sub(r'"/[^"]*/include/([^"/]+)"', r'"cuda/include/\1"', text)
    out.write_text(text)
    print(out.relative_to(ROOT))
