"""The pre-commit hook (.pre-commit-hooks.yaml) on a fixture git repository: the hook's entry run
the way pre-commit runs it (entry + the staged files that match ``files``), and, where pre-commit
is installed (the ``test`` extra), pre-commit itself with the same hook as a ``repo: local`` one."""
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml")
ROOT = Path(__file__).resolve().parents[1]
ZOO = ROOT / "tests/zoo/reduce_smem"
POLICY = """[defaults]
require = ["race", "barrier.named", "deadlock", "memory"]
budget = 4

[[kernel]]
path = "kernels/*.ptx"
launch = "kernels/manifest.json"
"""


def _repo(tmp_path, kernel):
    repo = tmp_path / "repo"
    (repo / "kernels").mkdir(parents=True)
    shutil.copy(ZOO / kernel, repo / "kernels" / kernel)
    shutil.copy(ZOO / "manifest.json", repo / "kernels" / "manifest.json")
    for f in ZOO.glob(kernel.replace(".ptx", ".cu")):
        shutil.copy(f, repo / "kernels" / f.name)
    (repo / "kverify.toml").write_text(POLICY)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    subprocess.run([*git, "add", "."], cwd=repo, check=True)
    return repo


def _env(tmp_path):
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    exe = bindir / "kverify"
    exe.write_text(f"#!/bin/sh\nexec {sys.executable} -m kverify \"$@\"\n")
    exe.chmod(0o755)
    return {**os.environ, "PYTHONPATH": str(ROOT), "PATH": f"{bindir}:{os.environ['PATH']}",
            "KVERIFY_GATE_CACHE": str(tmp_path / "cache")}


def _hook():
    (hook,) = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    assert hook["id"] == "kverify-gate"
    return hook


@pytest.mark.parametrize("kernel,rc", [("reduce_smem.ptx", 0), ("reduce_smem__divergent_barrier.ptx", 1)])
def test_hook_entry_on_fixture_repo(tmp_path, kernel, rc):
    repo, hook = _repo(tmp_path, kernel), _hook()
    staged = subprocess.run(["git", "diff", "--cached", "--name-only"], cwd=repo, capture_output=True, text=True,
                            check=True).stdout.split()
    files = [f for f in staged if re.search(hook["files"], f)]
    assert f"kernels/{kernel}" in files
    r = subprocess.run([*shlex.split(hook["entry"]), *files], cwd=repo, env=_env(tmp_path), capture_output=True,
                       text=True)
    assert r.returncode == rc, r.stdout + r.stderr
    assert r.stdout.splitlines()[-1] == f"gate: {1 - rc}/1 kernels pass -> {'PASS' if rc == 0 else 'FAIL'}"


@pytest.mark.slow
def test_pre_commit_runs_the_hook(tmp_path):
    pytest.importorskip("pre_commit")
    repo, hook = _repo(tmp_path, "reduce_smem__divergent_barrier.ptx"), _hook()
    local = {**hook, "language": "system"}
    (repo / ".pre-commit-config.yaml").write_text(yaml.safe_dump({"repos": [{"repo": "local", "hooks": [local]}]}))
    subprocess.run(["git", "add", "."], cwd=repo, check=True)
    env = {**_env(tmp_path), "PRE_COMMIT_HOME": str(tmp_path / "pc")}
    r = subprocess.run([sys.executable, "-m", "pre_commit", "run", "--all-files"], cwd=repo, env=env,
                       capture_output=True, text=True)
    assert r.returncode == 1 and "kverify gate" in r.stdout and "Failed" in r.stdout, r.stdout + r.stderr
