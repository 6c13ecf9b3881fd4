"""Launches of tests/data/bulk_reduce/tensor_reduce.ptx (tests/test_bulk_reduce.py,
bench/conformance.py, bench/sanitizer_side_by_side.py): tensor_reduce.json with the kernel's
element type -- the third part of its name, ``tensor_add_f16``, ``red_add_f32_shared``,
``tensor_add_f32__read_early`` -- for the output buffer and the tensor map."""
import json
from pathlib import Path

SPEC = Path(__file__).resolve().parent / "data" / "bulk_reduce" / "tensor_reduce.json"
DTYPES = {"f32": "float32", "f16": "float16", "bf16": "bfloat16", "s32": "int32"}


def element_type(kernel: str) -> str:
    return kernel.split("__")[0].split("_")[2]


def tensor_reduce_launch(kernel: str, scale: float = 1.0, swizzle: str = "none") -> dict:
    """A 40 x 48 matrix in 2 x 2 boxes of 32 x 32 (the last row and column overhanging); kernels
    other than the tensor reductions take no tensor map."""
    d = json.loads(SPEC.read_text())
    ty = DTYPES[element_type(kernel)]
    d["kernel"], d["args"]["scale"], d["buffers"]["out"]["dtype"] = kernel, scale, ty
    if kernel.startswith("tensor"):
        d["tensormaps"]["tmap"] |= {"dtype": ty, "swizzle": swizzle}
    else:
        del d["tensormaps"]
    return d
