"""``kverify capture``: record the kernel launches of a CUDA program as launch specs.

An ``LD_PRELOAD`` shim (``shim.c``, built with the system C compiler at first use, ``build.py``)
interposes the CUDA driver's launch, module, allocation and tensor-map entry points and writes
JSON records; ``specs.py`` turns them into one ``kverify.launch`` spec per launch and an index.
``--no-gpu`` makes the shim answer the driver calls itself. docs/capture.md says what it can
and cannot see. This package uses the standard library only, so it runs on a GPU machine
where kverify's own dependencies are absent (``python -m kverify.capture``).

``kverify.capture()`` (this package, called) is the context manager of ``context.py``: the
launches a block of Python code makes, in a program run under ``kverify capture``.
"""
from __future__ import annotations

import sys
import types

from .build import BuildError, shim_path
from .context import Capture, CapturedLaunch, CaptureError, capture
from .run import run
from .specs import write_specs

__all__ = ["BuildError", "Capture", "CapturedLaunch", "CaptureError", "capture", "run", "shim_path", "write_specs"]


class _Package(types.ModuleType):
    """``kverify.capture`` is both this package and the context manager: calling it is
    ``context.capture()``."""

    def __call__(self) -> Capture:
        return capture()


sys.modules[__name__].__class__ = _Package
