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
