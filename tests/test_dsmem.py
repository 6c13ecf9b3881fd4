"""Distributed shared memory lifetime (tests/data/dsmem, a cluster of two CTAs): an access to another
CTA's shared memory must follow something that shows the CTA started (``dsmem.before-start``) and
precede its exit (``dsmem.after-exit``: a release cluster barrier after it, or an mbarrier wait its
arrive completes, CUTLASS's producer tail)."""
import json
from pathlib import Path

import pytest

from kverify.verifier.cli import main

D = Path(__file__).parent / "data" / "dsmem"
LAUNCH = ["--grid", "4", "--block", "64", "--arg", "out=256:i32"]


def _check(capsys, kernel):
    rc = main(["check", str(D / "dsmem.ptx"), "--kernel", kernel, *LAUNCH, "--format", "json"])
    k = json.loads(capsys.readouterr().out)["kernels"][0]
    return rc, k, {o["title"]: o for o in k["obligations"]}


@pytest.mark.parametrize("kernel", ["exchange", "tail", "push"])
def test_accesses_between_the_cluster_barriers_and_a_producer_tail_are_verified(capsys, kernel):
    rc, k, by = _check(capsys, kernel)
    assert rc == 0 and k["verdict"] == "verified", [(o["title"], o["status"], o["message"]) for o in k["obligations"]]
    assert by["memory safety"]["status"] == "bounded"


@pytest.mark.parametrize("kernel, rule, line, message", [
    ("exchange__no_start_sync", "dsmem.before-start", 50,
     "access to the shared memory of CTA (1,0,0) by warp 0 (threads 0-31) of CTA (0,0,0) at dsmem.cu:50 before any "
     "cluster barrier wait or synchronization with CTA (1,0,0): it may not have started"),
    ("exchange__late_write", "dsmem.after-exit", 60,
     "access to the shared memory of CTA (0,0,0) by warp 1 (threads 32-63) of CTA (1,0,0) at dsmem.cu:60: nothing "
     "orders the exit of CTA (0,0,0) (its last warp exited after dsmem.cu:60) after it"),
    ("exchange__late_read", "dsmem.after-exit", 69,
     "access to the shared memory of CTA (1,0,0) by warp 0 (threads 0-31) of CTA (0,0,0) at dsmem.cu:69: CTA (1,0,0) "
     "exited before it"),
    ("push__no_wait", "dsmem.after-exit", 130,  # an async bulk copy into the peer, which never waits for it
     "access to the shared memory of CTA (0,0,0) by warp 0 (threads 0-31) of CTA (1,0,0) at dsmem.cu:130: CTA (0,0,0) "
     "exited before it"),
    ("tail__no_wait", "dsmem.after-exit", 97,
     "access to the shared memory of CTA (0,0,0) by warp 1 (threads 32-63) of CTA (1,0,0) at dsmem.cu:97: nothing "
     "orders the exit of CTA (0,0,0)"),
])
def test_an_access_outside_the_peers_lifetime_is_violated(capsys, kernel, rule, line, message):
    rc, k, by = _check(capsys, kernel)
    o = by["memory safety"]
    assert rc == 1 and k["verdict"] == "violated"
    assert (o["status"], o["rule"], o["locations"][0]["line"]) == ("violated", rule, line)
    assert message in o["message"]


# st.async / red.async (tests/data/dsmem/st_async.cu): asynchronous stores and reductions into the peer's
# shared memory, completed on the peer's mbarrier. The bodies are one template, inlined into one-line
# kernels: a finding's line is the kernel's (nvcc's inlined_at call site).
def _st_async(capsys, kernel):
    rc = main(["check", str(D / "st_async.ptx"), "--kernel", kernel, *LAUNCH, "--format", "json"])
    k = json.loads(capsys.readouterr().out)["kernels"][0]
    return rc, k, {o["title"]: o for o in k["obligations"]}


@pytest.mark.parametrize("kernel, want", [("send", [1063, 1062, 1061, 63, 62, 61]),
                                          ("accumulate", [1, 2, 3, 101, 102, 103])])
def test_st_async_and_red_async_exchanges_are_verified_with_their_values(capsys, kernel, want):
    import numpy as np

    from kverify.launch import LaunchSpec
    from kverify.semantics.interpreter import run_kernel
    from kverify.semantics.ir import load_module

    rc, k, by = _st_async(capsys, kernel)
    assert rc == 0 and k["verdict"] == "verified", [(o["title"], o["status"], o["message"]) for o in k["obligations"]]
    assert by["race-free: async"]["status"] == by["race-free: shared"]["status"] == "bounded"
    m = load_module(str(D / "st_async.ptx"))
    r = run_kernel(m, m.kernel(kernel), LaunchSpec.from_dict(
        {"kernel": kernel, "grid": [4, 1, 1], "block": [64, 1, 1], "buffers": {"out": {"dtype": "int32", "shape": [256]}}}))
    out = r.outputs["out"].reshape(4, 64)
    assert r.status == "complete" and not r.findings
    assert list(out[0, :3]) + list(out[1, :3]) == want  # CTA 0 holds what CTA 1 sent, and back


@pytest.mark.parametrize("kernel, title, rule, line, message", [
    ("send__no_expect_tx", "mbarrier conformance", "mbarrier.tx-mismatch", 67,
     "mbarrier bar of CTA (0,0,0): phase 0 completed while 32 copy(ies) signalling it were still in flight (128 bytes)"),
    ("send__no_expect_tx", "race-free: async", "race.async-pending", 67,
     "read of a destination of an in-flight async copy: read of shared inbox[63] by thread 0 (warp 0, lane 0) of CTA "
     "(1,0,0)"),
    ("send__short_tx", "mbarrier conformance", "mbarrier.tx-mismatch", 68,
     "phase 0 completed while 32 copy(ies) signalling it were still in flight (128 bytes): expect-tx announced fewer "
     "bytes than the copies deliver"),
    ("send__no_wait", "race-free: shared", "race.shared", 69,
     "write-after-read, not ordered: async write of shared inbox[0] by warp 0 (threads 0-31) of CTA (0,0,0)"),
    ("send__no_cluster_sync", "mbarrier conformance", "mbarrier.init-visibility", 71,
     "the st.async issued at st_async.cu:71 uses the mbarrier with no happens-before edge from its mbarrier.init"),
    ("send__no_cluster_sync", "memory safety", "dsmem.before-start", 71,
     "before any cluster barrier wait or synchronization with CTA (1,0,0): it may not have started"),
])
def test_st_async_twins_are_violated(capsys, kernel, title, rule, line, message):
    rc, k, by = _st_async(capsys, kernel)
    o = by[title]
    assert rc == 1 and k["verdict"] == "violated"
    assert (o["status"], o["rule"], o["locations"][0]["line"]) == ("violated", rule, line)
    assert message in o["message"]


def test_red_async_into_one_word_is_unknown_not_a_race(capsys):
    rc, k, by = _st_async(capsys, "accumulate__same_word")
    assert k["verdict"] == "inconclusive"
    o = by["deadlock-free"]
    assert o["status"] == "unknown"
    assert "overlaps the bytes of another asynchronous reduction; the atomicity of reductions to the same elements is " \
           "not modelled" in o["message"]
    assert all(x["status"] != "violated" for x in k["obligations"])


def test_the_step_budget_is_per_cta_of_a_cluster():
    """Clusters run one after another, so the budget that catches a spinning loop is counted per
    cluster, and a cluster gets it once per CTA (a cluster of 8 CTAs does 8 CTAs' work: the
    CUTLASS GEMM at 4096x4096x512 ran out of a budget per cluster on honest work): four clusters
    of two CTAs and 92 warp-instructions each complete under a budget of 46 per CTA, and a budget
    below a cluster's work stops the run."""
    from kverify.launch import LaunchSpec
    from kverify.semantics.interpreter import run_kernel
    from kverify.semantics.ir import load_module

    m = load_module(str(D / "dsmem.ptx"))
    spec = LaunchSpec.from_dict({"kernel": "exchange", "grid": [8, 1, 1], "block": [64, 1, 1],
                                 "buffers": {"out": {"dtype": "int32", "shape": [512]}}})
    full = run_kernel(m, m.kernel("exchange"), spec)
    assert (full.status, full.steps) == ("complete", 368)
    assert run_kernel(m, m.kernel("exchange"), spec, max_steps=46).status == "complete"
    short = run_kernel(m, m.kernel("exchange"), spec, max_steps=45)
    assert (short.status, short.reason) == ("incomplete", "budget: 45 warp-instructions per CTA of a cluster, a loop "
                                                          "may spin forever")
