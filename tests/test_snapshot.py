"""The verdict snapshot (tests/snapshot/verdicts.json) holds: every zoo variant's ``check``
obligations (id, status, rule, line), ``run`` findings and every equivalence pair's verdict.
A deliberate change rewrites the snapshot with ``python tests/snapshot/collect.py`` in a
commit that says why."""
import importlib.util
import json
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent / "snapshot"
sys.path.insert(0, str(HERE))

import collect  # noqa: E402

SNAP = json.loads((HERE / "verdicts.json").read_text())
pytestmark = pytest.mark.slow


@pytest.mark.parametrize("part", ["check", "run", "equiv"])
def test_verdicts_match_the_snapshot(part, monkeypatch):
    monkeypatch.chdir(collect.ROOT)
    got = collect.collect((part,))[part]
    want = SNAP[part]
    if part == "equiv" and importlib.util.find_spec("torch") is None:  # torch references need the extra
        want = {k: v for k, v in want.items() if k not in collect.torch_pairs()}
    assert sorted(got) == sorted(want)
    diff = {k: (want[k], got[k]) for k in want if got[k] != want[k]}
    assert not diff, json.dumps(diff, indent=1)
