"""Equivalence through device-function calls (the symbolic executor's ``h_call``): the callee runs
in a frame of its own over the call-site ``.param`` contents, its returns copied back; nested calls
and returns inside branches on launch values are followed; a return inside a branch on input data
is not merged (tested, never proved). tests/data/call_equiv (kernels of our own)."""
import json
from pathlib import Path

import pytest

from kverify.verifier.cli import main

D = Path(__file__).parent / "data" / "call_equiv"


def _equiv(capsys, ptx, cand, ref, fp, launch=None, ref_launch=None):
    rc = main(["equiv", str(D / ptx), str(D / ptx), "--kernel", cand, "--ref-kernel", ref,
               "--launch", launch or str(D / f"{cand}.json"), "--ref-launch", ref_launch or str(D / f"{ref}.json"),
               "--fp", fp, "--format", "json"])
    return rc, json.loads(capsys.readouterr().out)


def _ob(rep):
    (o,) = [o for o in rep["kernels"][0]["obligations"] if o["title"] == "equivalence"]
    return o


@pytest.mark.parametrize("cand", ["inlined", "nested"])
@pytest.mark.parametrize("fp", ["real", "bitexact"])
def test_a_kernel_calling_smoothstep_is_proved_equal_to_its_inlined_and_nested_forms(capsys, cand, fp):
    rc, rep = _equiv(capsys, "calls.ptx", cand, "called", fp)
    o = _ob(rep)
    assert rc == 0 and rep["verdict"] == "verified" and o["status"] == "proved"
    assert o["message"] == (f"proved under the {fp} model: all 1000 output elements equal for all inputs (1000 by "
                            f"identical normal forms, 0 by the solver)")


def test_swapped_arguments_of_the_call_are_refuted(capsys):
    rc, rep = _equiv(capsys, "calls.ptx", "called__swapped", "called", "real")
    o = _ob(rep)
    assert rc == 1 and o["status"] == "violated" and o["message"].endswith("y[0] differs: candidate 0.0, reference 1.0")


def _int_launch(kernel):
    return json.dumps({"kernel": kernel, "grid": [1], "block": [64], "outputs": ["y"],
                       "buffers": {"x": {"dtype": "int32", "shape": [64]}, "y": {"dtype": "int32", "shape": [64]}}})


@pytest.mark.parametrize("cand, ref, rc, status, message", [
    ("called", "inline_ref", 0, "proved",
     "all 64 output elements equal for all inputs (64 by identical normal forms, 0 by the solver)"),
    ("called__mode1", "inline_ref", 1, "violated", "y[0] differs: candidate 9, reference 6"),
    ("called_g", "inline_g", 3, "unknown",
     "symbolic execution stopped (control flow or an address depends on input data): the branch at ptx line 36 "
     "depends on input data (its body has ret at ptx line 42); tested on 8 inputs without a difference (not a proof)"),
])
def test_returns_inside_branches_of_called_functions(capsys, cand, ref, rc, status, message):
    got_rc, rep = _equiv(capsys, "early_ret.ptx", cand, ref, "int", _int_launch(cand), _int_launch(ref))
    o = _ob(rep)
    assert (got_rc, o["status"]) == (rc, status)
    assert o["message"].endswith(message), o["message"]


def test_the_zoo_device_function_kernel_is_proved_against_itself(capsys):
    zoo = Path(__file__).parent / "zoo" / "device_func" / "device_func.ptx"
    rc = main(["equiv", str(zoo), str(zoo), "--format", "json"])
    rep = json.loads(capsys.readouterr().out)
    assert rc == 0 and _ob(rep)["status"] == "proved"


def test_unbounded_recursion_is_unknown_and_claims_no_testing(capsys):
    """Neither the symbolic walk nor the interpreter follows calls past MAX_CALL_DEPTH; with no
    interpreter run complete, testing compared nothing and says so (it used to report 'tested on 8
    inputs without a difference')."""
    launch = _int_launch("k")
    rc, rep = _equiv(capsys, "recursion.ptx", "k", "k", "int", launch, launch)
    o = _ob(rep)
    assert (rc, o["status"]) == (3, "unknown")
    assert o["message"].endswith(
        "symbolic execution stopped (unsupported): call of f: calls nested deeper than 64 (recursion) are not "
        "followed at ptx line 17; not tested: the candidate kernel's run on the interpreter ended unsupported: ptx "
        "line 17: call of f: calls nested deeper than 64 (recursion) are not followed"), o["message"]
    assert main(["check", str(D / "recursion.ptx"), "--launch", launch, "--format", "json"]) == 3
    k = json.loads(capsys.readouterr().out)["kernels"][0]
    (mem,) = [x for x in k["obligations"] if x["title"] == "memory safety"]
    assert mem["message"] == ("not checked: ptx line 17: call of f: calls nested deeper than 64 (recursion) are not "
                              "followed")
