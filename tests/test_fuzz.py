"""Seeded-random mutation fuzzing of the command line, in process (bench/fuzz.py's mutators):
every mutant of a zoo PTX file through ``show`` and of a zoo launch spec through ``check --no-smt``
ends in exit 0/1/2/3 within its budget, never an internal error, and an exit 2 names file:line:col."""
from __future__ import annotations

import importlib.util
import json
import random
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("kverify_bench_fuzz", ROOT / "bench" / "fuzz.py")
fuzz = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fuzz)

BUDGET_S = 20.0


def _jobs(tmp_path, ptx, check, specs, seed):
    ns = type("A", (), {"ptx": ptx, "check": check, "specs": specs, "seed": seed})()
    return fuzz.make_jobs(ns, tmp_path)


def _assert_clean(results):
    bad = [r for r in results if r.get("internal") or r.get("hang") or r.get("memory") or r.get("unlocated")
           or r["exit"] not in (0, 1, 2, 3)]
    assert not bad, json.dumps(bad[:5], indent=1)


@pytest.mark.parametrize("n", [pytest.param(400, id="400"), pytest.param(1500, id="1500", marks=pytest.mark.slow)])
def test_show_on_ptx_mutants(tmp_path, n):
    results = [fuzz.run_one(j, BUDGET_S) for j in _jobs(tmp_path, n, 0, 0, 1)]
    assert len(results) == n
    assert {r["exit"] for r in results} <= {0, 1, 2, 3}
    assert any(r["exit"] == 2 for r in results) and any(r["exit"] == 0 for r in results)
    _assert_clean(results)


@pytest.mark.slow
def test_check_on_ptx_and_spec_mutants(tmp_path):
    results = [fuzz.run_one(j, BUDGET_S) for j in _jobs(tmp_path, 0, 60, 200, 2)]
    _assert_clean(results)


def test_a_long_blank_run_before_a_stray_character_fails_at_once(tmp_path):
    # the fast path's blank skipping once backtracked exponentially in the length of a blank run
    # followed by a character no statement starts with (a fuzz mutant of a Triton PTX took 54 s)
    ptx = tmp_path / "k.ptx"
    ptx.write_text(".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k()\n{\n"
                   "$L_1:" + " " * 64 + "%  // stray\n ret;\n}\n")
    r = fuzz.run_one({"kind": "show", "seed_file": str(ptx), "id": 0, "argv": ["show", str(ptx)]}, BUDGET_S)
    assert r["exit"] == 2 and not r.get("hang") and not r.get("unlocated"), r
