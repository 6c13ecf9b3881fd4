"""kverify gate with equivalence obligations (``equiv = {ref = ...}``) and Triton kernels
checked from their call (``triton = "fn"``): tests/data/gate_equiv/kverify.toml."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
POLICY = ROOT / "tests/data/gate_equiv/kverify.toml"


def gate(*argv, cache, cwd=ROOT):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "KVERIFY_GATE_CACHE": str(cache)}
    return subprocess.run([sys.executable, "-m", "kverify", "gate", *argv], cwd=cwd, env=env,
                          capture_output=True, text=True)


def test_gate_runs_equivalence_and_triton_entries(tmp_path):
    pytest.importorskip("triton", reason="the triton extra is not installed (pip install triton==3.6.0)")
    pytest.importorskip("torch", reason="torch is not installed (pip install torch==2.13.0)")
    r = gate("--policy", str(POLICY), "--format", "json", "--jobs", "2", cache=tmp_path / "cache")
    assert r.returncode == 1, r.stderr
    by = {k["file"]: k for k in json.loads(r.stdout)["kernels"]}
    assert sorted(by) == ["tests/triton_kernels.py:softmax_kernel",
                          "tests/triton_kernels.py:softmax_kernel__mask_off_by_one",
                          "tests/zoo/saxpy_vec/saxpy_vec.ptx", "tests/zoo/saxpy_vec/saxpy_vec__missing_scale.ptx"]
    ok = {o["id"]: o for o in by["tests/zoo/saxpy_vec/saxpy_vec.ptx"]["obligations"]}
    assert (ok["equivalence"]["status"], ok["equivalence"]["required"]) == ("proved", True)
    assert by["tests/zoo/saxpy_vec/saxpy_vec.ptx"]["passed"] is True
    bad = {o["id"]: o for o in by["tests/zoo/saxpy_vec/saxpy_vec__missing_scale.ptx"]["obligations"]}
    assert (bad["equivalence"]["status"], bad["equivalence"]["rule"], bad["equivalence"]["line"]) == \
        ("violated", "equivalence.mismatch", 16)
    assert by["tests/triton_kernels.py:softmax_kernel"]["passed"] is True
    tw = {o["id"]: o for o in by["tests/triton_kernels.py:softmax_kernel__mask_off_by_one"]["obligations"]}
    assert (tw["memory"]["status"], tw["memory"]["rule"], tw["memory"]["line"]) == ("violated", "bounds", 43)
    # a second run is served from the cache (the reference's bytes are part of the key)
    r2 = gate("--policy", str(POLICY), "--format", "json", cache=tmp_path / "cache")
    assert r2.returncode == 1 and all(k["cached"] for k in json.loads(r2.stdout)["kernels"])


@pytest.mark.parametrize("entry,message", [
    ('equiv = "x.ptx"', "equiv must be a table with ref = PATH"),
    ('equiv = {ref = "x.ptx", modle = "real"}', "unknown equiv key 'modle'"),
    ('equiv = {ref = "x.ptx", model = "float"}', "equiv model must be real, bitexact or int, got 'float'"),
    ('triton = "softmax kernel"\ngrid = [1]', "triton must be the name of the @triton.jit function"),
    ('triton = "softmax_kernel"', "a triton entry needs grid and args (no launch, no equiv)"),
])
def test_bad_equiv_and_triton_entries_are_input_errors(tmp_path, entry, message):
    pol = tmp_path / "kverify.toml"
    pol.write_text(f'[[kernel]]\npath = "*.ptx"\n{entry}\n')
    r = gate("--policy", str(pol), cache=tmp_path / "cache")
    assert r.returncode == 2, r.stdout + r.stderr
    assert f"{pol}:3:1: {message}" in r.stderr
