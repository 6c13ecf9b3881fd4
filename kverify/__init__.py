"""kverify: formal semantics and verification for GPU kernels.

One import root; the layers inside it import downward only (docs/layout.md):
``semantics.ir`` <- ``semantics.values`` / ``semantics.memory_model`` <- ``semantics.interpreter``
/ ``symbolic`` <- ``verifier`` <- the CLI; ``launch`` beside ``semantics.ir``; ``lowering`` on
``semantics.ir`` only.
"""
from __future__ import annotations

#: the one place the version is written (pyproject.toml reads it: ``[tool.setuptools.dynamic]``)
__version__ = "0.1.0"

#: the Python API (``kverify/api.py``), imported on first use so that ``import kverify`` stays cheap
_API = {"check", "run", "equiv", "Tensor", "Report"}
__all__ = sorted(_API | {"capture", "triton", "z3_release", "__version__"})


def source_files(suffixes=(".py", ".lark", ".c", ".h")) -> list:
    """kverify's own files with these suffixes (by default the capture shim's ``.c``/``.h`` too),
    sorted, as paths relative to the package: what a server's fingerprint and a cached gate result
    rest on."""
    from pathlib import Path

    root = Path(__file__).resolve().parent
    return sorted(f.relative_to(root) for f in root.rglob("*") if f.suffix in suffixes
                  and "__pycache__" not in f.parts)


def z3_release() -> None:
    """Turn off the argument checks z3's Python layer runs on every call while Python's
    ``__debug__`` is on (sort and kind asserts in Python: a sixth of a small check's time); z3's C
    API still rejects a bad argument, with a ``Z3Exception``. The ``kverify`` command and the test
    suite run this way; a program that imports kverify may call it (it holds for the whole
    process, its own z3 calls included)."""
    import z3

    z3.z3.Z3_DEBUG = False


def __getattr__(name):
    if name in _API:
        from . import api

        return getattr(api, name)
    if name in ("triton", "capture"):  # kverify.triton: the Triton call site (imports triton when used);
        import importlib                # kverify.capture(): launches recorded by the capture shim

        return importlib.import_module("." + name, __name__)
    raise AttributeError(f"module 'kverify' has no attribute {name!r}")
