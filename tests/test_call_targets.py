"""Calls through a pointer that holds no function (``call.invalid-target``, memory safety): the
symbolic checker (``kverify.verifier.calls``) shows a thread that reaches the call with such a
value (null first) over the launch's free parameters; the interpreter reports the value a lane
holds. Soundness both ways: a precondition that keeps the pointer to functions, or a call not
reached where the pointer is null, gives no finding; a pointer read from the host's memory is not
claimed. tests/data/gpuverify/fptr_invalid.cu is our own (its .ptx: nvcc 13 with the GPUVerify
header force-included, see test_gpuverify.py)."""
import json
from pathlib import Path

import pytest

from kverify.verifier.cli import main

ROOT = Path(__file__).resolve().parent.parent
PTX = ROOT / "tests" / "data" / "gpuverify" / "fptr_invalid.ptx"
LAUNCH = ("--grid", "4", "--block", "256")


def _check(capsys, kernel, *argv):
    rc = main(["check", str(PTX), "--kernel", kernel, *LAUNCH, *argv, "--format", "json"])
    k = json.loads(capsys.readouterr().out)["kernels"][0]
    return rc, k, {o["id"]: o for o in k["obligations"]}


def test_a_host_pointer_without_precondition_is_null_at_the_call_line(capsys):
    rc, k, by = _check(capsys, "call_param")
    mem = by["memory"]
    assert rc == 1 and k["verdict"] == "violated"
    assert (mem["status"], mem["rule"], mem["checker"]) == ("violated", "call.invalid-target", "calls")
    assert [(loc["line"], loc["ptx_line"]) for loc in mem["locations"]] == [(16, 96)]
    ce = mem["counterexample"]
    assert ce["target"] == 0 and ce["params"] == {"f": 0, "n": 1}
    assert ce["thread"] == {"tid": [0, 0, 0], "ctaid": [0, 0, 0]}
    assert mem["message"] == ("call through %rd2: 0x0 is not the address of a function (thread tid=(0,0,0) "
                              "ctaid=(0,0,0); grid 4x1x1, block 256x1x1, f=0, n=1)")
    # the races keep their reason: what the call would do is undefined
    assert by["race.global"]["status"] == "unknown"
    assert "the pointer may hold the address of none of the functions" in by["race.global"]["message"]


def test_an_integer_cast_to_a_function_pointer_names_its_value(capsys):
    rc, k, by = _check(capsys, "call_const")
    mem = by["memory"]
    assert rc == 1 and (mem["status"], mem["rule"]) == ("violated", "call.invalid-target")
    assert mem["locations"][0]["line"] == 23 and mem["counterexample"]["target"] == 5
    assert mem["message"].startswith("call through %rd2: 0x5 is not the address of a function (thread tid=(0,0,0)")


def test_the_interpreter_reports_the_lanes_value_and_replays(capsys):
    rc, k, by = _check(capsys, "call_const", "--arg", "v=1024:f32")
    mem = by["memory"]
    assert rc == 1 and (mem["status"], mem["rule"], mem["checker"]) == ("violated", "call.invalid-target", "memory")
    assert mem["message"] == ("call through %rd2: 0x5 is not the address of a function of this module (thread 0 "
                              "(warp 0, lane 0) of CTA (0,0,0) (and 31 more lane(s) of warp 0 (threads 0-31) of CTA "
                              "(0,0,0)))")
    assert mem["locations"][0]["line"] == 23
    assert mem["counterexample"]["details"]["target"] == "0x5"
    assert mem["counterexample"]["replay"].startswith("kverify run ")
    assert mem["counterexample"]["smt"]["target"] == 5  # the symbolic checker's, attached
    # a null pointer the launch passes
    rc, k, by = _check(capsys, "call_param", "--arg", "f=0", "--arg", "n=1000", "--arg", "v=1024:f32")
    mem = by["memory"]
    assert rc == 1 and mem["checker"] == "memory" and mem["counterexample"]["details"]["target"] == "0x0"
    assert mem["message"].startswith("call through %rd2: 0x0 is not the address of a function of this module")
    # a function's address: no finding, the callee runs
    rc, k, by = _check(capsys, "call_param", "--arg", "f=0x740000000000", "--arg", "n=1000", "--arg", "v=1024:f32")
    assert by["memory"]["status"] != "violated" and "call.invalid-target" not in {f["rule"] for f in k["findings"]}


def test_null_only_where_the_call_is_not_reached_is_no_finding(capsys):
    rc, k, by = _check(capsys, "call_guarded")
    # the calls checker shows the pointer holds a function wherever the call is reached, for every
    # value of which; the buffers are sized to the accesses: memory safety not applicable
    assert by["memory"]["status"] == "vacuous"
    assert "no call through a pointer that may hold no function" in by["memory"]["message"]
    assert by["race.global"]["status"] == "proved"
    # reached when which is neither 1 nor 2: violated, with such a value
    rc, k, by = _check(capsys, "call_maybe_null")
    mem = by["memory"]
    assert rc == 1 and mem["rule"] == "call.invalid-target" and mem["locations"][0]["line"] == 37
    assert mem["counterexample"]["params"] == {"which": 0} and mem["counterexample"]["target"] == 0


def test_a_precondition_that_names_the_functions_leaves_no_finding(capsys):
    rc, k, by = _check(capsys, "call_requires")
    assert rc == 0 and k["verdict"] == "verified"
    assert by["memory"]["status"] == "vacuous"  # the run's buffers were sized to its accesses
    assert not [f for f in k["findings"] if f["rule"] == "call.invalid-target"]


def test_a_pointer_read_from_the_hosts_memory_is_not_claimed(capsys):
    rc, k, by = _check(capsys, "call_from_table")
    mem = by["memory"]
    assert rc == 3 and mem["status"] == "unknown"
    # (the checks without values, which refine the interpreter's "no values", give the reasons)
    assert mem["message"].endswith("fptr_invalid.cu:48: a call through a pointer not shown to hold a function's "
                                   "address wherever it is reached")


@pytest.mark.parametrize("kernel", ["call_param", "call_const", "call_maybe_null"])
def test_the_static_finding_is_printed_at_the_call(capsys, kernel):
    rc = main(["check", str(PTX), "--kernel", kernel, *LAUNCH])
    first = capsys.readouterr().out.splitlines()[0]
    assert rc == 1 and "error[call.invalid-target]: call through %rd" in first
    assert first.startswith("tests/data/gpuverify/fptr_invalid.cu:")
