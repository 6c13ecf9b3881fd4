"""Building the capture shim (``shim.c``, shipped with the package) with the system C compiler.

The library is built once per source text and compiler into a per-user cache directory
(``$KVERIFY_CACHE`` or ``$XDG_CACHE_HOME/kverify`` or ``~/.cache/kverify``) and rebuilt when
either changes. Only the standard library is used here, so ``python -m kverify.capture`` runs
where kverify's own dependencies are not installed (a GPU machine).
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

SOURCE = Path(__file__).with_name("shim.c")


class BuildError(RuntimeError):
    pass


def cache_dir() -> Path:
    d = os.environ.get("KVERIFY_CACHE")
    if d:
        return Path(d)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kverify"


def compiler() -> str:
    for cc in (os.environ.get("CC"), "cc", "gcc", "clang"):
        if cc and shutil.which(cc):
            return cc
    raise BuildError("no C compiler found (tried $CC, cc, gcc, clang); kverify capture builds its shim with one")


def shim_path(rebuild: bool = False) -> Path:
    """The built shim, compiled now if the cache holds none for this source and compiler."""
    cc = compiler()
    src = SOURCE.read_bytes()
    key = hashlib.sha256(src + b"\0" + cc.encode() + b"\0" + os.uname().machine.encode()).hexdigest()[:16]
    out = cache_dir() / f"libkverify_capture-{key}.so"
    if out.exists() and not rebuild:
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f"{out.name}.{os.getpid()}.tmp")
    cmd = [cc, "-shared", "-fPIC", "-O2", "-o", str(tmp), str(SOURCE), "-ldl", "-lpthread"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        tmp.unlink(missing_ok=True)
        raise BuildError(f"building the capture shim failed ({' '.join(cmd)}):\n{r.stderr.strip()}")
    os.replace(tmp, out)
    return out


def nogpu_libdir(shim: Path) -> Path:
    """A directory where ``libcuda.so.1`` (and ``libcuda.so``, for linking) is the shim itself:
    put first on ``LD_LIBRARY_PATH`` it answers a program's driver calls with no GPU present."""
    d = shim.parent / f"nogpu-{shim.stem}"
    d.mkdir(parents=True, exist_ok=True)
    for name in ("libcuda.so.1", "libcuda.so"):
        link = d / name
        if not link.is_symlink() or os.readlink(link) != str(shim):
            tmp = d / f".{name}.{os.getpid()}"
            tmp.unlink(missing_ok=True)
            tmp.symlink_to(shim)
            os.replace(tmp, link)
    return d
