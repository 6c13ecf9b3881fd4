"""check --export-smt DIR: every query of the race and mbarrier checkers as an SMT-LIB2 file named
FILE.KERNEL.OBLIGATION.N.RESULT.smt2, which a fresh solver parses and answers the same way."""
import os
import subprocess
import sys
from pathlib import Path

import z3

ROOT = Path(__file__).resolve().parents[1]


def _export(tmp_path, *files):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, "-m", "kverify", "check", *files, "--export-smt", str(tmp_path)],
                       cwd=ROOT, env=env, capture_output=True, text=True)
    return r, sorted(p.name for p in tmp_path.iterdir())


def _recheck(path):
    s = z3.Solver()
    s.from_file(str(path))
    return str(s.check())


def test_export_correct_and_seeded_bug(tmp_path):
    r, names = _export(tmp_path, "tests/zoo/reduce_smem/reduce_smem.ptx",
                       "tests/zoo/reduce_smem/reduce_smem__missing_sync.ptx")
    assert r.returncode == 1, r.stderr
    ok = [n for n in names if n.startswith("reduce_smem.ptx.reduce_smem.race.")]
    bug = [n for n in names if n.startswith("reduce_smem__missing_sync.ptx.reduce_smem.race.shared.")]
    assert ok and bug
    # the correct kernel: every race query refuted; the seeded bug: a satisfiable race query
    assert all(n.endswith(".unsat.smt2") for n in ok)
    assert any(n.endswith(".sat.smt2") for n in bug)
    for n in ok[:5] + [b for b in bug if b.endswith(".sat.smt2")][:2]:
        assert _recheck(tmp_path / n) == n.split(".")[-2], n


def test_export_mbarrier(tmp_path):
    r, names = _export(tmp_path, "tests/zoo/relaxed_mbarrier/relaxed_mbarrier.ptx")
    assert r.returncode == 0, r.stderr
    mb = [n for n in names if ".mbarrier." in n]
    # 5 queries: 4 proofs (unsat) and 1 feasibility check (sat), each answered the same again (which
    # barriers an arrive may name is decided without a query where the two addresses differ by
    # constants: arrivals._candidates)
    assert len(mb) == 5 and sum(n.endswith(".unsat.smt2") for n in mb) == 4
    assert all(_recheck(tmp_path / n) == n.split(".")[-2] for n in mb)


def test_gate_export_smt(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "KVERIFY_GATE_CACHE": str(tmp_path / "cache")}
    out = tmp_path / "smt"
    r = subprocess.run([sys.executable, "-m", "kverify", "gate", "--policy", "tests/data/gate/kverify.toml",
                        "tests/zoo/reduce_smem/reduce_smem.ptx", "--export-smt", str(out)],
                       cwd=ROOT, env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    names = sorted(p.name for p in out.iterdir())
    assert names and all(n.startswith("reduce_smem.ptx.race.") and n.endswith(".unsat.smt2") for n in names)
