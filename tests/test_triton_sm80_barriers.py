"""The sm_80 Triton ``tl.dot`` matmul (cp.async + ldmatrix + mma.sync, num_stages=3;
tests/zoo/tc_gemm/triton_sm80.py) with each of its five ``bar.sync 0`` removed in turn (the
mutants are made here from the committed PTX). Four guard a stage that is read or refilled: each
removal is a ``race.shared`` at the racing access. The first one, in the prologue between the
cp.async of stage 0 and that of stage 1, orders no access pair at all (nothing reads shared
memory before the next barrier): removing it is not a bug, and the kernel stays verified."""
import json

import pytest

from conftest import ROOT
from kverify.verifier.cli import main

TC = ROOT / "tests" / "zoo" / "tc_gemm"
PTX = TC / "triton_matmul_sm80.ptx"
LAUNCH = TC / "triton_matmul_sm80.launch.json"


def _check(tmp_path, capsys, line):
    lines = PTX.read_text().splitlines()
    if line is not None:
        assert lines[line - 1].strip().startswith("bar.sync")
        lines[line - 1] = "\t// bar.sync removed"
    p = tmp_path / "m.ptx"
    p.write_text("\n".join(lines) + "\n")
    rc = main(["check", str(p), "--launch", str(LAUNCH), "--format", "json"])
    k = json.loads(capsys.readouterr().out)["kernels"][0]
    return rc, k


@pytest.mark.parametrize("line, at", [(220, 224), (252, 270), (312, 377), (383, 394)])
def test_each_stage_barrier_removed_is_a_shared_race(tmp_path, capsys, line, at):
    rc, k = _check(tmp_path, capsys, line)
    assert rc == 1 and k["verdict"] == "violated"
    o = next(o for o in k["obligations"] if o["title"] == "race-free: shared")
    assert (o["status"], o["rule"], o["locations"][0]["ptx_line"]) == ("violated", "race.shared", at)


@pytest.mark.parametrize("line", [None, 138])
def test_the_kernel_and_its_redundant_prologue_barrier_removed_are_verified(tmp_path, capsys, line):
    rc, k = _check(tmp_path, capsys, line)
    assert rc == 0 and k["verdict"] == "verified"
