"""Running a program under the capture shim."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

from .build import nogpu_libdir, shim_path


def run(argv: list[str], outdir: Path, nogpu: bool = False, rebuild: bool = False, contents_limit: int = 256 << 20,
        contents_launches: int | None = None) -> int:
    """Runs ``argv`` with the shim preloaded, its records going to ``outdir``; the exit status.
    Each launch copies up to ``contents_limit`` bytes of the memory it reaches (the first
    ``contents_launches`` launches; None: every one)."""
    shim = shim_path(rebuild)
    outdir.mkdir(parents=True, exist_ok=True)
    for old in [*outdir.glob("records.*.jsonl"), *outdir.glob("module_*_*.*"), *outdir.glob("contents_*_*.bin"),
                *outdir.glob("launch_*_*.npz")]:
        old.unlink()
    env = dict(os.environ)
    env["KVERIFY_CAPTURE_CONTENTS_LIMIT"] = str(contents_limit)
    if contents_launches is not None:
        env["KVERIFY_CAPTURE_CONTENTS_LAUNCHES"] = str(contents_launches)
    else:
        env.pop("KVERIFY_CAPTURE_CONTENTS_LAUNCHES", None)
    env["LD_PRELOAD"] = ":".join(x for x in (str(shim), env.get("LD_PRELOAD", "")) if x)
    env["KVERIFY_CAPTURE_DIR"] = str(outdir.resolve())
    if nogpu:
        env["KVERIFY_CAPTURE_NOGPU"] = "1"
        lib = str(nogpu_libdir(shim))
        env["LD_LIBRARY_PATH"] = ":".join(x for x in (lib, env.get("LD_LIBRARY_PATH", "")) if x)
    else:
        env.pop("KVERIFY_CAPTURE_NOGPU", None)
    try:
        return subprocess.run(argv, env=env).returncode
    except OSError as e:
        raise FileNotFoundError(f"cannot run {argv[0]}: {e.strerror}") from None
