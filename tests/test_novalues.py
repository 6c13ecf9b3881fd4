"""Checks that need no parameter values (kverify/verifier/uniform.py) and user-given summaries of
body-less functions (``--extern-summary``, kverify/symbolic/extern.py).

The kernels in tests/data/novalues are our own; their .ptx is nvcc 13's output (``nvcc
-arch=sm_90a -lineinfo -ptx``), so that the tests run without nvcc. The launch gives a grid and a
block and no scalar argument: the interpreter cannot run, and barrier uniformity, deadlock freedom
and memory safety are decided for every value of the free parameters."""
import json
from pathlib import Path

import pytest

from kverify.semantics.ir import KernelError
from kverify.verifier.cli import main

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "novalues"
UNIFORM = DATA / "uniform.ptx"
EXTERN = DATA / "extern_pure.ptx"
LAUNCH = ("--grid", "4", "--block", "64")


def _check(capsys, path, kernel, *argv):
    rc = main(["check", str(path), "--kernel", kernel, *LAUNCH, *argv, "--format", "json"])
    k = json.loads(capsys.readouterr().out)["kernels"][0]
    return rc, k, {o["id"]: o for o in k["obligations"]}


def _lines(o):
    return {(Path(loc["path"]).name, loc["line"]) for loc in o["locations"]}


def test_a_barrier_under_a_parameter_condition_is_uniform_for_every_value(capsys):
    rc, k, by = _check(capsys, UNIFORM, "_Z11param_guardPii")
    assert rc == 0 and k["verdict"] == "verified"
    o = by["barrier.named"]
    assert o["status"] == "proved" and o["checker"] == "mbarrier"
    assert o["bound"] == ("block 64x1x1 (the launch's); grid 4x1x1 only (the launch's); all values of x; any "
                          "addresses of out; two arbitrary distinct threads of one CTA")
    assert o["message"].startswith("every barrier is reached by both or neither of two arbitrary threads of a CTA "
                                   "that have not exited (1 barrier instance(s))")
    d = by["deadlock"]
    assert d["status"] == "proved" and d["bound"] == o["bound"]
    assert d["message"].startswith("the only blocking operations are CTA barriers (barrier 0 without a thread count)")
    assert d["message"].endswith("termination of the kernel's loops is not checked")
    m = by["memory"]
    assert m["status"] == "vacuous" and m["message"].startswith("not applicable: buffers sized to the kernel's own "
                                                                "accesses: an out-of-bounds access cannot show, for "
                                                                "any parameter values")


def test_a_barrier_under_a_thread_condition_is_divergent_with_the_value_of_x(capsys):
    rc, k, by = _check(capsys, UNIFORM, "_Z9tid_guardPii")
    assert rc == 1 and k["verdict"] == "violated"
    o = by["barrier.named"]
    assert o["status"] == "violated" and o["rule"] == "barrier.divergence"
    assert _lines(o) == {("uniform.cu", 21)}
    ce = o["counterexample"]
    x = ce["params"]["x"]
    a, b = ce["threads"]
    assert a["ctaid"] == b["ctaid"] and a["tid"] != b["tid"]
    # thread A is below x (it waits at the barrier), B is not: the model is a real divergence
    assert a["tid"][0] < x <= b["tid"][0] < 64
    assert f"x={x}" in o["message"] and "which has not exited" in o["message"]
    assert ce["block"] == [64, 1, 1] and ce["grid"] == [4, 1, 1]
    # deadlock freedom rests on uniformity: not decided, with the reason
    assert by["deadlock"]["status"] == "unknown"
    assert "a barrier may be divergent" in by["deadlock"]["message"]


def test_a_loop_with_a_parameter_trip_count_around_a_barrier_is_uniform(capsys):
    rc, k, by = _check(capsys, UNIFORM, "_Z10param_loopPii")
    assert rc == 0 and k["verdict"] == "verified"
    assert by["barrier.named"]["status"] == "proved" and "all values of n" in by["barrier.named"]["bound"]
    assert by["deadlock"]["status"] == "proved"


def test_a_loop_whose_trip_count_depends_on_the_thread_is_divergent(capsys):
    rc, k, by = _check(capsys, UNIFORM, "_Z8tid_loopPii")
    assert rc == 1
    o = by["barrier.named"]
    assert o["status"] == "violated" and o["rule"] == "barrier.divergence"
    assert _lines(o) <= {("uniform.cu", 39), ("uniform.cu", 40), ("uniform.cu", 41)}
    ce = o["counterexample"]
    n = ce["params"]["n"]
    a, b = ce["threads"]
    assert a["tid"][0] + n != b["tid"][0] + n  # different trip counts (tid + n)


def test_shared_memory_without_values_is_not_claimed_memory_safe(capsys):
    rc, k, by = _check(capsys, UNIFORM, "_Z13shared_rotatePii")
    assert rc == 3 and k["verdict"] == "inconclusive"
    assert by["barrier.named"]["status"] == "proved" and by["deadlock"]["status"] == "proved"
    m = by["memory"]
    assert m["status"] == "unknown"
    assert m["message"].startswith("not checked on the interpreter (the launch gives no values for the interpreter "
                                   "(no value for parameter(s) n of shared_rotate(int*, int)")
    assert "without values: 2 shared memory access(es) (first: st.shared.u32 at " in m["message"]
    assert "their bounds and initialization are not checked without values" in m["message"]


def test_with_values_the_interpreter_still_decides(capsys):
    """A launch that gives x: the interpreter runs, and the checks without values do not."""
    rc, k, by = _check(capsys, UNIFORM, "_Z9tid_guardPii", "--arg", "x=3")
    assert rc == 1 and by["barrier.named"]["status"] == "violated"
    assert by["barrier.named"]["checker"] == "mbarrier" and by["barrier.named"]["counterexample"].get("replay")


# --------------------------------------------------------------------------- --extern-summary


def test_loops_on_a_pure_extern_function_verify_only_with_the_summary(capsys):
    rc, k, by = _check(capsys, EXTERN, "_Z12count_nondetPi")
    assert rc == 3 and "assumptions" not in k
    for oid in ("race.shared", "race.global"):
        assert by[oid]["status"] == "unknown"
        assert "call at extern_pure.cu:13: callee nondet() has no body in this module" in by[oid]["message"]
    assert by["deadlock"]["status"] == "unknown" and "call of unknown function nondet()" in by["deadlock"]["message"]

    rc, k, by = _check(capsys, EXTERN, "_Z12count_nondetPi", "--extern-summary", "nondet=pure")
    assert rc == 0 and k["verdict"] == "verified"
    assert k["assumptions"] == [{"function": "nondet()", "ptx_name": "_Z6nondetv", "summary": "pure",
                                 "meaning": "reads and writes no memory, does not synchronize, returns an "
                                            "arbitrary value"}]
    said = ("assuming nondet() is pure (reads and writes no memory, does not synchronize, returns an arbitrary "
            "value)")
    for oid in ("race.shared", "race.global", "barrier.named", "deadlock", "memory"):
        assert said in by[oid]["bound"], oid
    assert by["deadlock"]["status"] == "proved"
    assert by["deadlock"]["message"].startswith("the kernel has no blocking operation")
    # the interpreter does not run a call with an arbitrary result: the reason names the function
    assert by["memory"]["status"] == "vacuous"


def test_a_pure_summary_does_not_hide_a_race_on_memory_the_kernel_writes(capsys):
    rc, k, by = _check(capsys, EXTERN, "_Z15store_at_nondetPi", "--extern-summary", "*=pure")
    assert rc == 1
    o = by["race.global"]
    assert o["status"] == "violated" and o["rule"] == "race.global"
    assert _lines(o) == {("extern_pure.cu", 25)}
    assert o["message"].endswith("; assuming nondet() is pure (reads and writes no memory, does not synchronize, "
                                 "returns an arbitrary value)")
    # out[v] with any v: no buffer is as large as the accesses
    assert by["memory"]["status"] == "unknown" and "no buffer out can be sized" in by["memory"]["message"]
    assert "the interpreter cannot run a call whose result is arbitrary (nondet(): summarized as pure" in \
        by["memory"]["message"]


@pytest.mark.parametrize("item, message", [
    ("nondet", "--extern-summary 'nondet': expected NAME=KIND"),
    ("nondet=const", "--extern-summary nondet=const: unknown summary 'const' (known: pure)"),
    ("=pure", "--extern-summary =pure: the function name is empty"),
])
def test_bad_extern_summary_syntax_is_bad_input(capsys, item, message):
    rc = main(["check", str(EXTERN), *LAUNCH, "--extern-summary", item])
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith("<command line>:0:0: " + message), err


def test_an_extern_summary_for_no_body_less_function_is_bad_input(capsys):
    rc = main(["check", str(EXTERN), "--kernel", "_Z12count_nondetPi", *LAUNCH, "--extern-summary", "foo=pure"])
    out = capsys.readouterr().out
    assert rc == 2
    assert ("error: --extern-summary foo=pure: no body-less function 'foo' is called in "
            f"{EXTERN} (body-less functions it calls: nondet())") in out
    rc = main(["check", str(UNIFORM), "--kernel", "_Z11param_guardPii", *LAUNCH, "--extern-summary",
               "param_guard=pure"])
    assert rc == 2 and "param_guard has a body in this module" in capsys.readouterr().out


def test_the_python_api_takes_the_summary():
    import kverify

    rep = kverify.check(str(EXTERN), grid=4, block=64, kernel_name="_Z12count_nondetPi", args={}, extern={"nondet": "pure"})
    k = rep.kernels[0]
    assert k.verdict == "verified" and k.assumptions[0]["function"] == "nondet()"
    with pytest.raises(KernelError, match="no body-less function 'bar'"):
        kverify.check(str(EXTERN), grid=4, block=64, kernel_name="_Z12count_nondetPi", args={}, extern=["bar=pure"])


COLLECTIVES = DATA / "collectives.ptx"


def test_a_full_mask_warp_collective_is_checked_like_a_warp_barrier(capsys):
    """Warp collectives were not part of the uniformity argument: a shuffle with the full mask
    under ``threadIdx.x < n`` was verified without values (undefined for n = 16: lanes 16-31 are
    named and do not execute it, §9.7.9.6)."""
    rc, k, by = _check(capsys, COLLECTIVES, "shfl_all", "--grid", "1")
    assert rc == 0 and k["verdict"] == "verified"
    assert by["barrier.named"]["status"] == "proved" and by["deadlock"]["status"] == "proved"
    rc, k, by = _check(capsys, COLLECTIVES, "shfl_div", "--grid", "1")
    o = by["barrier.named"]
    assert rc == 1 and o["status"] == "violated" and o["rule"] == "barrier.divergence"
    assert _lines(o) == {("collectives.cu", 14)}
    assert "which its membermask names" in o["message"] and by["deadlock"]["status"] == "unknown"
    rc, k, by = _check(capsys, COLLECTIVES, "vote_active", "--grid", "1")
    assert by["barrier.named"]["status"] == "unknown"
    assert "a warp collective whose membermask is partial or in a register is not covered" in by["barrier.named"]["message"]


ALIGNED = DATA / "aligned.ptx"


@pytest.mark.parametrize("kernel, block, status, line, says", [
    # (not part of the argument: named-barrier conformance and deadlock freedom were proved)
    ("setmaxnreg_div", "256", "violated", 16, "of the same warpgroup (CTA (0,0,0)), which has not exited"),
    ("setmaxnreg_by_warpgroup", "256", "proved", None, None),
    ("mma_div", "64", "violated", 48, "of the same warp (CTA (0,0,0)), which has not exited"),
    # a non-aligned barrier at two instructions is legal (it was reported as a divergence)
    ("nonaligned_two_sites", "64", "unknown", None, "a non-aligned barrier may be reached at different instructions"),
])
def test_aligned_instructions_without_a_membermask_are_collectives(capsys, kernel, block, status, line, says):
    rc, k, by = _check(capsys, ALIGNED, kernel, "--grid", "1", "--block", block)
    o = by["barrier.named"]
    assert o["status"] == status, o
    if status == "violated":
        assert o["rule"] == "barrier.divergence" and _lines(o) == {("aligned.ptx", line)}
        assert ".sync.aligned: every thread of the" in o["message"]
    if says:
        assert says in o["message"]
