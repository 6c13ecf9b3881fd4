"""The distribution installs one import root, ``kverify`` (with the PTX grammar), and the
``kverify`` command runs as ``python -m kverify``."""
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_the_wheel_installs_only_the_kverify_package(tmp_path):
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w",
                    str(tmp_path), str(ROOT)], check=True, capture_output=True)
    wheel = next(tmp_path.glob("kverify-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert {n.split("/")[0] for n in names} == {"kverify", wheel.name.split("-")[0] + "-" + wheel.name.split("-")[1]
                                                + ".dist-info"}
    assert "kverify/semantics/ir/ptx.lark" in names
    assert "kverify/semantics/ir/gpuverify.h" in names  # force-included into GPUVerify tests


def test_python_dash_m_kverify_is_the_command():
    r = subprocess.run([sys.executable, "-m", "kverify", "--version"], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0 and r.stdout.startswith("kverify ")
