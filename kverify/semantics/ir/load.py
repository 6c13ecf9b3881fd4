"""Load any kernel file into the core IR: ``.ptx`` (PTX front end), ``.cu``/``.cuh`` (CUDA
front end), ``.kvir`` (IR text)."""
from __future__ import annotations

import os
from pathlib import Path

from .errors import KernelError
from .nodes import Module

SUFFIXES = {".ptx": "ptx", ".cu": "cuda", ".cuh": "cuda", ".kvir": "ir"}


def source_kind(path: str) -> str:
    kind = SUFFIXES.get(Path(path).suffix)
    if kind is None:
        raise KernelError(f"unknown input kind {Path(path).suffix or '(no suffix)'}: "
                          f"expected one of {', '.join(SUFFIXES)}", path, 0, 0)
    return kind


def load_module(path: str, **cuda_options) -> Module:
    kind = source_kind(path)
    p = Path(path)
    if not os.path.isfile(p):  # False, not OSError, for a name too long for the file system
        raise KernelError("no such file", path, 0, 0)
    if kind == "cuda":
        from .cuda import load_cuda

        return load_cuda(path, **cuda_options)
    try:
        text = p.read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise KernelError(f"cannot read: {e}", path, 0, 0) from None
    if kind == "ptx":
        from .ptx import parse_ptx

        return _with_source_names(parse_ptx(text, path))
    from .ptx import parse_ir

    return parse_ir(text, path)


def _with_source_names(module: Module) -> Module:
    """Give kernel parameters their CUDA names when the PTX's ``.file`` table names a
    ``.cu`` source that is on disk (nvcc output keeps only ``<kernel>_param_<i>``)."""
    cu = [lines for f, lines in source_lines(module).items() if f.endswith((".cu", ".cuh"))]
    if not cu:
        return module
    from .cuda import attach_source_names

    for lines in cu:
        module = attach_source_names(module, "\n".join(lines))
    return module


def source_lines(module: Module) -> dict:
    """``{path: lines}`` for the source files named by the module's ``.file`` table that
    exist on disk: a relative path against the module's directory first (as named, then by its
    base name), then against the working directory (an unrelated ``k.cu`` there renamed the
    parameters of ``sub/k.ptx``)."""
    out = {}
    base = Path(module.path).parent if module.path else Path(".")
    for _, f in module.files:
        near = [] if Path(f).is_absolute() else [base / f, base / Path(f).name]
        for cand in (*near, Path(f)):
            if os.path.isfile(cand):  # False, not OSError, for a name the file system cannot hold
                try:
                    out[f] = cand.read_text(errors="replace").splitlines()
                except OSError:
                    pass
                break
    return out
