"""check --recheck cvc5 (the recheck extra): the exported queries re-proved by cvc5; a
disagreement makes the obligation unknown with the reason. Skipped where cvc5 is not installed."""
import os
import shutil

import pytest

from kverify import api
from kverify.symbolic.budget import export_smt
from kverify.symbolic.recheck import recheck
from kverify.verifier.cli import _recheck

pytest.importorskip("cvc5")
KERNEL = "tests/zoo/relaxed_mbarrier/relaxed_mbarrier.ptx"


def test_cvc5_agrees_then_a_tampered_query_is_unknown(tmp_path):
    with export_smt(str(tmp_path), "k"):
        rep = api.check(KERNEL, launch="tests/zoo/relaxed_mbarrier/manifest.json")
    assert rep.obligation("mbarrier.parity").status == "proved"
    assert recheck(str(tmp_path), "k") == []  # cvc5 answers all 7 queries as z3 did
    name = sorted(n for n in os.listdir(tmp_path) if n.endswith(".unsat.smt2"))[0]
    forged = name.replace(".unsat.", ".sat.")
    shutil.move(tmp_path / name, tmp_path / forged)  # z3 "said" sat: cvc5 disagrees
    assert recheck(str(tmp_path), "k") == [(forged, "mbarrier", "sat", "unsat")]
    _recheck(rep.kernels[0], str(tmp_path), "k", "cvc5")
    ob = rep.obligation("mbarrier.parity")
    assert ob.status == "unknown"
    assert ob.message == f"re-check with cvc5 disagrees on {forged}: z3 sat, cvc5 unsat"
