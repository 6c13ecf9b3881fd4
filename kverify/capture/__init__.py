"""``kverify capture``: record the kernel launches of a CUDA program as launch specs.

An ``LD_PRELOAD`` shim (``shim.c``, built with the system C compiler at first use, ``build.py``)
interposes the CUDA driver's launch, module, allocation and tensor-map entry points and writes
JSON records; ``specs.py`` turns them into one ``kverify.launch`` spec per launch and an index.
``--no-gpu`` makes the shim answer the driver calls itself. docs/capture.md says what it can
and cannot see. This package uses the standard library only, so it runs on a GPU machine
where kverify's own dependencies are absent (``python -m kverify.capture``).
"""
from __future__ import annotations

from .build import BuildError, shim_path
from .run import run
from .specs import write_specs

__all__ = ["BuildError", "run", "shim_path", "write_specs"]
