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
__all__ = sorted(_API | {"capture", "triton", "__version__"})


def __getattr__(name):
    if name in _API:
        from . import api

        return getattr(api, name)
    if name in ("triton", "capture"):  # kverify.triton: the Triton call site (imports triton when used);
        import importlib                # kverify.capture(): launches recorded by the capture shim

        return importlib.import_module("." + name, __name__)
    raise AttributeError(f"module 'kverify' has no attribute {name!r}")
