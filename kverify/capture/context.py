"""``kverify.capture()``: the launches a block of Python code makes, as launch specs.

    # run as:  kverify capture -- python app.py      (or python -m kverify.capture -- python app.py)
    import kverify
    with kverify.capture() as cap:
        my_extension.gemm(a, b, c)            # PyTorch extension, tvm-ffi, cuda-python, ...
    for launch in cap.launches:
        print(launch.kernel, launch.grid, launch.block)
        print(launch.check())                 # kverify.check on the recorded spec and module

The shim has to be in the process before the CUDA driver is: ``kverify capture`` preloads it
(``LD_PRELOAD``). The context manager finds it through its exported ``kverify_capture_dir``; in a
process started without it, entering the block raises ``CaptureError`` saying how to run. The
records the shim writes during the block are turned into specs with ``specs.write_specs`` (the
same conversion the command line does at the program's end), and the block's launches are those
recorded between entering and leaving it, by this process.
"""
from __future__ import annotations

import ctypes
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from .specs import write_specs


class CaptureError(RuntimeError):
    """The capture shim is not loaded in this process."""


HOW = ("kverify.capture() needs the capture shim loaded before the CUDA driver: run the program as "
       "`kverify capture -- python PROGRAM.py` (or `python -m kverify.capture -- python PROGRAM.py`)")


def shim_dir() -> Path | None:
    """The directory the preloaded shim records to, or None when no shim is in the process."""
    try:
        fn = ctypes.CDLL(None).kverify_capture_dir
    except (AttributeError, OSError):
        return None
    fn.restype = ctypes.c_char_p
    d = fn()
    return Path(os.fsdecode(d)) if d else None


@dataclass
class CapturedLaunch:
    """One launch recorded inside a ``kverify.capture()`` block: the index entry of the spec."""

    kernel: str | None
    grid: list[int]
    block: list[int]
    cluster: list[int]
    dynamic_smem: int
    spec: Path                      # the launch spec (``--launch``)
    ptx: Path | None                # the module's PTX, when the shim saw it
    notes: list[str] = field(default_factory=list)
    entry: dict = field(default_factory=dict, repr=False)  # the whole index entry
    inputs: Path | None = None      # the buffers' and module variables' recorded contents (.npz)

    def check(self, **options):
        """``kverify.check`` on the recorded module and spec, from the recorded contents (options
        as ``kverify.check``'s; ``inputs=`` replaces the recorded ones)."""
        if self.ptx is None or self.kernel is None:
            raise CaptureError(f"launch {self.spec.name}: no PTX for it ({self.entry.get('ptx_note')}), "
                               "nothing to check")
        from kverify.api import check

        if self.inputs is not None and "inputs" not in options:
            import numpy as np

            with np.load(self.inputs) as z:
                options["inputs"] = {k: z[k] for k in z.files}
        return check(str(self.ptx), kernel_name=self.kernel, launch=str(self.spec), **options)


class Capture:
    """A ``with kverify.capture() as cap:`` block; ``cap.launches`` once it is left."""

    def __init__(self):
        self.launches: list[CapturedLaunch] = []
        self.directory: Path | None = None
        self._start = 0

    def _records(self) -> Path:
        return self.directory / f"records.{os.getpid()}.jsonl"

    def _launch_count(self) -> int:
        try:
            text = self._records().read_text()
        except FileNotFoundError:
            return 0
        n = 0
        for line in text.splitlines():
            try:
                n += json.loads(line).get("type") == "launch"
            except json.JSONDecodeError:
                pass
        return n

    def __enter__(self) -> "Capture":
        d = shim_dir()
        if d is None:
            raise CaptureError(HOW)
        self.directory = d.resolve()
        self._start = self._launch_count()
        return self

    def __exit__(self, *exc) -> bool:
        index = write_specs(self.directory, None, limit=None)  # (the first 1000 of the process: a block's were dropped)
        mine = [entry for entry in index["launches"] if entry["pid"] == os.getpid()]
        for entry in mine[self._start:]:
            self.launches.append(CapturedLaunch(
                kernel=entry["kernel"], grid=entry["grid"], block=entry["block"], cluster=entry["cluster"],
                dynamic_smem=entry["dynamic_smem"], spec=self.directory / entry["spec"],
                ptx=self.directory / entry["ptx"] if entry.get("ptx") else None, notes=entry["notes"], entry=entry,
                inputs=self.directory / entry["inputs"] if entry.get("inputs") else None))
        return False


def capture() -> Capture:
    """The launches of a ``with`` block: ``with kverify.capture() as cap: ...; cap.launches``."""
    return Capture()
