"""kverify: formal semantics and verification for GPU kernels.

One import root; the layers inside it import downward only (docs/layout.md):
``semantics.ir`` <- ``semantics.values`` / ``semantics.memory_model`` <- ``semantics.interpreter``
/ ``symbolic`` <- ``verifier`` <- the CLI; ``launch`` beside ``semantics.ir``; ``lowering`` on
``semantics.ir`` only.
"""
from __future__ import annotations

try:
    from importlib.metadata import PackageNotFoundError, version as _version

    __version__ = _version("kverify")
except PackageNotFoundError:  # a checkout that is not installed
    __version__ = "0+unknown"
