import json
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ZOO = ROOT / "tests" / "zoo"


def zoo_ptx_files():
    return sorted(ZOO.rglob("*.ptx"))


def zoo_manifests():
    return sorted(ZOO.glob("*/manifest.json"))


def zoo_variants():
    """(family dir, variant dict) for every manifest entry of the zoo."""
    out = []
    for m in zoo_manifests():
        data = json.loads(m.read_text())
        for v in data["variants"]:
            out.append((m.parent, v))
    return out


needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")


def pytest_collection_modifyitems(config, items):
    try:
        import subprocess

        has_gpu = subprocess.run(["nvidia-smi", "-L"], capture_output=True, timeout=10).returncode == 0
    except Exception:
        has_gpu = False
    if not has_gpu:
        skip = pytest.mark.skip(reason="no NVIDIA GPU on this machine (GPU tests run on an H200)")
        for item in items:
            if "gpu" in item.keywords:
                item.add_marker(skip)
