"""GPUVerify tests as input: the annotation intrinsics (kverify/semantics/ir/gpuverify.h) compile,
``__assert`` and CUDA's ``assert()`` are checked (``assert.failed``), ``__requires`` is a
precondition (a launch that breaks it is ``unknown``, values the launch leaves out are chosen to
meet it), intrinsics kverify does not evaluate leave what uses them undecided, proof hints are
listed as not checked, and bench/gpuverify_suite.py classifies a suite's kernels. The kernels in
tests/data/gpuverify are our own, in GPUVerify's idioms; their .ptx is nvcc 13's output with the
header force-included, so that the PTX tests run without nvcc."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import needs_nvcc
from kverify.semantics.ir import KernelError
from kverify.semantics.ir import gpuverify as gv
from kverify.verifier.cli import main

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "gpuverify"


def _check(capsys, *argv):
    rc = main(["check", *map(str, argv), "--format", "json"])
    k = json.loads(capsys.readouterr().out)["kernels"][0]
    return rc, k, {o["id"]: o for o in k["obligations"]}


# --------------------------------------------------------------------------- the header, the source


def test_proof_hints_are_found_outside_comments_with_their_lines():
    src = ("//pass\n//--blockDim=64 --gridDim=1\n__axiom(blockDim.x == 64);\n"
           "__global__ void k(int *A) {\n"
           "  for (int i = 0; /* __invariant(i < 3), */ __invariant(i >= 0), i < 4; i++) {\n"
           "    // __invariant(i < 99)\n"
           "    __ensures(true);\n  }\n}\n")
    assert gv.annotations(src) == [("__axiom", 3, 1), ("__invariant", 5, 45), ("__ensures", 7, 5)]


def test_header_lines_any_case_and_only_gpuverify_tests(tmp_path):
    a, b = tmp_path / "a.cu", tmp_path / "b.cu"
    a.write_text("//XFAIL:NOT_ALL_VERIFIED\n//--blockDim=32 --gridDim=1\n__global__ void k() {}\n")
    b.write_text("// a kernel\n__global__ void k() {}\n")
    assert gv.header_lines(str(a)) == ["//XFAIL:NOT_ALL_VERIFIED", "//--blockDim=32 --gridDim=1"]
    assert gv.is_test(str(a)) and not gv.is_test(str(b))


def test_curand_without_curand_kernel_h_is_bad_input_at_its_line(tmp_path, monkeypatch):
    monkeypatch.setattr(gv, "_cuda_include_dirs", lambda: [tmp_path])
    src = "//pass\n//--blockDim=32 --gridDim=1\n\n__global__ void k(curandState *s, float *A) {\n}\n"
    with pytest.raises(KernelError) as e:
        gv.compile_options(str(tmp_path / "kernel.cu"), src)
    assert (e.value.line, e.value.col) == (4, 19)
    assert "curandState: this GPUVerify test relies on GPUVerify's cuda.h providing cuRAND" in e.value.message
    # cooperative groups come from the toolkit, with GPUVerify's free synchronize()
    inc, defs = gv.compile_options("k.cu", "using namespace cooperative_groups;\n")
    assert inc == [str(gv.HEADER)] and defs == {"KVERIFY_GPUVERIFY_COOPERATIVE_GROUPS": None}


def test_the_header_is_package_data():
    assert gv.HEADER.is_file() and gv.HEADER.parent.name == "ir"
    text = (ROOT / "pyproject.toml").read_text()
    assert '"*.h"' in text


# --------------------------------------------------------------------------- PTX (no nvcc needed)


def test_a_failing_assert_is_assert_failed_at_its_line_by_both_checkers(capsys):
    rc, k, by = _check(capsys, DATA / "clamp_assert.ptx", "--grid", "2", "--block", "64", "--arg", "n=64")
    o = by["assert.holds"]
    assert rc == 1 and k["verdict"] == "violated"
    assert o["status"] == "violated" and o["rule"] == "assert.failed" and o["severity"] == "error"
    assert o["locations"][0]["line"] == 10 and o["locations"][0]["path"].endswith("clamp_assert.cu")
    assert o["message"].startswith("assertion failed: __assert is false for thread 0 (warp 0, lane 0) of CTA (1,0,0)")
    # the symbolic checker's counterexample, for every thread: one of CTA 1 (i = 64 + tid >= n)
    smt = o["counterexample"]["smt"]
    assert smt["thread"]["ctaid"] == [1, 0, 0] and smt["params"] == {"n": 64}
    # race freedom is proved under the precondition, and the scope says so
    assert by["race.global"]["status"] == "proved"
    assert "under the kernel's preconditions (__requires at line 8)" in by["race.global"]["bound"]


def test_values_the_launch_leaves_out_are_chosen_to_meet_the_preconditions(capsys):
    rc, k, by = _check(capsys, DATA / "block_sum.ptx", "--grid", "8", "--block", "128")
    assert rc == 0 and k["verdict"] == "verified"
    assert "n=1024 chosen to satisfy the kernel's preconditions (the launch gives no value)" in by["deadlock"]["bound"]
    assert by["race.global"]["status"] == "proved"
    # a value that breaks the precondition: the run is no evidence, the proofs would be vacuous
    rc, k, by = _check(capsys, DATA / "block_sum.ptx", "--grid", "8", "--block", "128", "--arg", "n=1000")
    assert rc == 3 and k["verdict"] == "inconclusive"
    assert by["deadlock"]["status"] == "unknown"
    assert by["deadlock"]["message"].endswith(
        ":8: the launch's values break the kernel's precondition (__requires is false for thread 0 (warp 0, "
        "lane 0) of CTA (0,0,0)): kverify checks a kernel only under its preconditions; give values that meet "
        "it (--arg, --grid/--block)")
    assert by["race.global"]["status"] == "unknown"
    assert by["race.global"]["message"].startswith("no thread of the launch meets the kernel's preconditions "
                                                   "(__requires at ")


def test_a_launch_that_breaks_requires_is_unknown_not_a_finding(capsys):
    rc, k, by = _check(capsys, DATA / "launch_breaks_requires.ptx", "--grid", "4", "--block", "128")
    assert rc == 3 and k["verdict"] == "inconclusive" and not k["findings"]
    for oid in ("barrier.named", "deadlock", "memory"):
        assert by[oid]["status"] == "unknown"
        assert "the launch's values break the kernel's precondition (__requires is false" in by[oid]["message"]
    for oid in ("race.shared", "race.global"):
        assert by[oid]["status"] == "unknown" and "meets the kernel's preconditions" in by[oid]["message"]
    # the launch it was written for
    rc, k, by = _check(capsys, DATA / "launch_breaks_requires.ptx", "--grid", "4", "--block", "256")
    assert rc == 0 and by["race.global"]["status"] == "proved"


def test_a_function_pointer_named_by_a_precondition_is_a_dispatch_over_those_functions(capsys):
    """fptr_requires: ``__requires(f == halve | f == negate)`` on a pointer the host passes; each
    function stores only its thread's element: race freedom proved under the precondition. Without
    the precondition the pointer may be anything: the races stay unknown, and a null pointer is a
    call.invalid-target violation of memory safety at the call's line. With ``spread``
    among the possible functions (v[i / 2] = v[i]): the race in spread, at its line."""
    path = DATA / "fptr_requires.ptx"
    rc, k, by = _check(capsys, path, "--kernel", "update", "--grid", "4", "--block", "256")
    for oid in ("race.shared", "race.global"):
        assert by[oid]["status"] == "proved", by[oid]["message"]
    assert "all values of f; under the kernel's preconditions (__requires at line 14)" in by["race.global"]["bound"]
    # f is no buffer (the kernel only calls through it): the run takes a function the precondition
    # allows, named in the bound, and checks the rest on it
    assert rc == 0 and k["verdict"] == "verified"
    bound = by["deadlock"]["bound"]
    assert ("f=halve(float*, unsigned int) (0x740000000000) chosen to satisfy the kernel's preconditions" in bound
            or "f=negate(float*, unsigned int) (0x740000000010) chosen to satisfy the kernel's preconditions" in bound)
    assert "buffers sized to the kernel's accesses: v float32[1024]" in bound
    rc, k, by = _check(capsys, path, "--kernel", "update_any", "--grid", "4", "--block", "256")
    assert rc == 1
    mem = by["memory"]
    assert (mem["status"], mem["rule"], mem["locations"][0]["line"]) == ("violated", "call.invalid-target", 19)
    assert mem["counterexample"]["target"] == 0 and mem["counterexample"]["params"] == {"f": 0}
    for oid in ("race.shared", "race.global"):
        assert by[oid]["status"] == "unknown"
        assert by[oid]["message"].startswith(
            "call at tests/data/gpuverify/fptr_requires.cu:19: indirect call through %rd2: the pointer may hold the "
            "address of none of the functions the call can reach (undefined behaviour; functions of the "
            "prototype's signature whose address is taken: halve(float*, unsigned int), negate(float*, unsigned "
            "int), spread(float*, unsigned int))"), by[oid]["message"]
    rc, k, by = _check(capsys, path, "--kernel", "update_spread", "--grid", "4", "--block", "256")
    o = by["race.global"]
    assert rc == 1 and o["status"] == "violated" and o["rule"] == "race.global"
    assert {(loc["path"].endswith("fptr_requires.cu"), loc["line"]) for loc in o["locations"]} == {(True, 11)}
    # the static counterexample: the pointer's value is spread's address (the interpreter's, for a
    # replay), and the text names it
    from kverify.launch import LaunchSpec
    from kverify.semantics.ir import load_module
    from kverify.verifier.races.smt import check_races

    spec = LaunchSpec.from_dict({"kernel": "_Z13update_spreadPfPFvS_jE", "grid": [4, 1, 1], "block": [256, 1, 1]})
    o = check_races(load_module(str(path)), "_Z13update_spreadPfPFvS_jE", launch=spec)[1]
    assert o.status == "violated" and o.counterexample["params"] == {"f": 0x7400_0000_0020}
    assert o.message.endswith("grid 4x1x1, block 256x1x1, f=_Z6spreadPfj (0x740000000020)")


def test_a_file_without_a_kernel_is_bad_input(tmp_path, capsys):
    p = tmp_path / "f.ptx"
    p.write_text(".version 8.0\n.target sm_90\n.address_size 64\n.visible .func f()\n{\n  ret;\n}\n")
    assert main(["check", str(p)]) == 2
    assert capsys.readouterr().out.splitlines()[0] == (
        f"{p}:1:1: error: no kernel in this file: nothing to check (no __global__ function, no PTX .entry)")


# --------------------------------------------------------------------------- .cu (nvcc)


@needs_nvcc
def test_requires_and_invariants_verified_and_the_invariants_listed(capsys):
    rc = main(["check", str(DATA / "block_sum.cu")])
    out = capsys.readouterr().out
    first, second = out.splitlines()[:2]
    assert first.endswith("block_sum.cu:14:8: note[annotation.unchecked]: GPUVerify __invariant (lines 14, 15) not "
                          "checked: a proof hint kverify does not check (no verdict rests on it)")
    assert rc == 0 and second.endswith("block_sum.cu: kernel block_sum(const int*, int*, int): VERIFIED")


@needs_nvcc
def test_an_invariant_only_kernel_is_verified_with_notes(capsys):
    rc, k, by = _check(capsys, DATA / "invariant_only.cu")
    assert rc == 0 and k["verdict"] == "verified"
    notes = [(f["rule"], f["severity"], f["locations"][0]["line"], f["message"]) for f in k["findings"]]
    assert notes == [
        ("annotation.unchecked", "note", 8, "GPUVerify __invariant (line 8) not checked: a proof hint kverify does "
         "not check (no verdict rests on it)"),
        ("annotation.unchecked", "note", 9, "GPUVerify __global_invariant (line 9) not checked: a proof hint "
         "kverify does not check (no verdict rests on it)")]
    assert by["race.global"]["status"] == "proved" and "assert.holds" not in by


@needs_nvcc
def test_assert_and_requires_from_the_source(capsys):
    rc, k, by = _check(capsys, DATA / "clamp_assert.cu")
    assert rc == 1 and by["assert.holds"]["rule"] == "assert.failed"
    assert by["assert.holds"]["locations"][0]["line"] == 10
    rc, k, by = _check(capsys, DATA / "launch_breaks_requires.cu")
    assert rc == 3 and by["memory"]["status"] == "unknown"
    assert "the launch's values break the kernel's precondition" in by["memory"]["message"]


@needs_nvcc
def test_an_assertion_over_another_threads_value_is_not_decided(tmp_path, capsys):
    src = tmp_path / "kernel.cu"
    src.write_text("//pass\n//--blockDim=64 --gridDim=1\n__global__ void k(int *A) {\n"
                   "  __assert(__implies(threadIdx.x == 4, __other_int(threadIdx.x) != 4));\n"
                   "  A[threadIdx.x] = 1;\n}\n")
    rc, k, by = _check(capsys, src)
    o = by["assert.holds"]
    assert rc == 3 and o["status"] == "unknown"
    assert o["message"].endswith("depends on __other_int, which kverify does not evaluate") and o["locations"][0][
        "line"] == 4
    # an assertion kverify can evaluate is proved for every thread
    src.write_text("//pass\n//--blockDim=64 --gridDim=1\n__global__ void k(int *A, int y) {\n"
                   "  __assume(y < 100);\n  __assert(__implies(__enabled(), y < 200));\n  A[threadIdx.x] = y;\n}\n")
    rc, k, by = _check(capsys, src)
    assert rc == 0 and by["assert.holds"]["status"] == "proved"
    assert by["assert.holds"]["message"] == "every assertion holds (1 reached)"
    assert "all values of y; under the kernel's preconditions (__assume at line 4)" in by["assert.holds"]["bound"]


@needs_nvcc
def test_a_race_under_a_precondition_kverify_cannot_evaluate_is_not_claimed(tmp_path, capsys):
    src = tmp_path / "kernel.cu"
    src.write_text("//pass\n//--blockDim=32 --gridDim=1\n__global__ void k(int *A, int p) {\n"
                   "  int idx = p + (threadIdx.x & 1);\n  __requires(__distinct_int(idx));\n"
                   "  A[idx] = threadIdx.x;\n}\n")
    rc, k, by = _check(capsys, src)
    o = by["race.global"]
    assert rc == 3 and o["status"] == "unknown" and {l["line"] for l in o["locations"]} == {6}
    assert o["message"].endswith(":5 uses __other_int, which kverify does not evaluate)")


@needs_nvcc
def test_cuda_assert_is_checked_too(tmp_path, capsys):
    src = tmp_path / "k.cu"
    src.write_text("#include <cassert>\n__global__ void k(int *a) {\n  assert(threadIdx.x < 16);\n"
                   "  a[threadIdx.x] = 1;\n}\n")
    rc, k, by = _check(capsys, src, "--block", "32")
    o = by["assert.holds"]
    assert rc == 1 and o["rule"] == "assert.failed" and o["locations"][0]["line"] == 3
    assert o["message"].startswith("assertion failed: CUDA assert() is false for thread 16 (warp 0, lane 16)")


@needs_nvcc
def test_an_axiom_makes_a_race_unclaimed(tmp_path, capsys):
    src = tmp_path / "kernel.cu"
    src.write_text("//pass\n//--blockDim=32 --gridDim=4\n__axiom(blockIdx.x == 2);\n"
                   "__global__ void k(int *A) {\n  if (blockIdx.x != 2) A[0] = threadIdx.x;\n}\n")
    rc, k, by = _check(capsys, src)
    assert rc == 3 and by["race.global"]["status"] == "unknown"
    assert "not claimed as a violation: the kernel has a GPUVerify __axiom (" in by["race.global"]["message"]
    assert [f["rule"] for f in k["findings"]] == ["annotation.unchecked"]
    assert "GPUVerify __axiom (line 3) not checked: an assumption about the launch" in k["findings"][0]["message"]


@needs_nvcc
def test_gpuverify_cooperative_groups_synchronize(tmp_path, capsys):
    src = tmp_path / "kernel.cu"
    src.write_text("//pass\n//--blockDim=32 --gridDim=1\n#include <cuda.h>\nusing namespace cooperative_groups;\n"
                   "__global__ void k(int *A) {\n  thread_block t = this_thread_block();\n"
                   "  int v = A[threadIdx.x + 1];\n  synchronize(t);\n  A[threadIdx.x] = v;\n}\n")
    rc, k, by = _check(capsys, src)
    assert rc == 0 and by["race.global"]["status"] == "proved"


@needs_nvcc
def test_the_suite_script_classifies_and_saves(tmp_path):
    suite = tmp_path / "testsuite" / "CUDA"
    for name, text in {
        "ok": "//pass\n//--blockDim=32 --gridDim=1\n__global__ void k(int *A) {\n  A[threadIdx.x] = 1;\n}\n",
        "racy": "//xfail:NOT_ALL_VERIFIED\n//--blockDim=32 --gridDim=1\n__global__ void k(int *A) {\n"
                "  A[0] = threadIdx.x;\n}\n",
        "alarm": "//pass\n//--blockDim=32 --gridDim=1\n__global__ void k(int *A) {\n  A[0] = threadIdx.x;\n}\n",
        "broken": "//pass\n//--blockDim=32 --gridDim=1\n__global__ void k(int *A) {\n  A[0] = nope;\n}\n",
    }.items():
        (suite / name).mkdir(parents=True)
        (suite / name / "kernel.cu").write_text(text)
    out = tmp_path / "r.json"
    r = subprocess.run([sys.executable, str(ROOT / "bench" / "gpuverify_suite.py"), "--suite", str(suite),
                        "--jobs", "2", "--out", str(out), "--gpuverify-commit", "abc", "--quiet"],
                       capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0] == "2 of 4 kernels agree with their label"
    d = json.loads(out.read_text())
    rows = {x["path"]: x for x in d["rows"]}
    assert {p: (x["label"], x["exit"], x["class"]) for p, x in rows.items()} == {
        "alarm/kernel.cu": ("pass", 1, "false alarm"), "broken/kernel.cu": ("pass", 2, "error"),
        "ok/kernel.cu": ("pass", 0, "agree"), "racy/kernel.cu": ("xfail:NOT_ALL_VERIFIED", 1, "agree")}
    assert rows["racy/kernel.cu"]["reason"] == "race.global" and rows["racy/kernel.cu"]["rules"] == ["race.global"]
    assert rows["broken/kernel.cu"]["reason"] == 'line 4: identifier "nope" is undefined'
    assert d["summary"]["classes"] == {"agree": 2, "false alarm": 1, "missed": 0, "inconclusive": 0, "error": 1,
                                       "timeout": 0}
    assert d["gpuverify_commit"] == "abc" and d["machine"]["cores"] >= 1
