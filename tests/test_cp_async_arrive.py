"""cp.async.mbarrier.arrive{.noinc} (PTX ISA §9.7.9.25.3.3) on the interpreter: the mbarrier tracks the
lane's earlier cp.async; its arrive-on happens once they completed and releases what they wrote
(tests/data/cp_async_arrive/copy_arrive.cu, the idiom of cuda::memcpy_async with a cuda::barrier)."""
import json
from pathlib import Path

import numpy as np
import pytest

from kverify.launch import LaunchSpec
from kverify.semantics.interpreter import run_kernel
from kverify.semantics.ir import load_module
from kverify.verifier.cli import main

PTX = Path(__file__).parent / "data" / "cp_async_arrive" / "copy_arrive.ptx"
LAUNCH = ["--grid", "2", "--block", "64", "--arg", "in=512:f32", "--arg", "out=512:f32"]


def _check(capsys, kernel):
    rc = main(["check", str(PTX), "--kernel", kernel, *LAUNCH, "--format", "json"])
    k = json.loads(capsys.readouterr().out)["kernels"][0]
    return rc, k, {o["title"]: o for o in k["obligations"]}


@pytest.mark.parametrize("kernel", ["noinc", "inc"])
def test_tracked_copies_are_verified_and_read_back(capsys, kernel):
    rc, k, by = _check(capsys, kernel)
    assert rc == 0 and k["verdict"] == "verified", [(o["title"], o["status"], o["message"]) for o in k["obligations"]]
    m = load_module(str(PTX))
    x = np.arange(512, dtype=np.float32)
    r = run_kernel(m, m.kernel(kernel), LaunchSpec.from_dict({
        "kernel": kernel, "grid": [2, 1, 1], "block": [64, 1, 1],
        "buffers": {"in": {"dtype": "float32", "shape": [512]}, "out": {"dtype": "float32", "shape": [512]}}}),
        inputs={"in": x})
    assert r.status == "complete" and not r.findings
    want = x.reshape(2, 64, 4)[:, ::-1, :].reshape(-1)  # each thread reads the float4 of thread 63 - t
    assert np.array_equal(r.outputs["out"], want)


@pytest.mark.parametrize("kernel, line", [("noinc__no_track", 57), ("inc__noinc", 68)])
def test_a_wait_that_does_not_cover_the_copies_is_a_race(capsys, kernel, line):
    """A plain arrive in place of cp.async.mbarrier.arrive, or .noinc beside the threads' own
    arrivals (128 arrivals for a count of 64: the phase completes before the copies), lets the
    read of another thread's part run before its copy landed."""
    rc, k, by = _check(capsys, kernel)
    o = by["race-free: async"]
    assert rc == 1 and (o["status"], o["rule"], o["locations"][0]["line"]) == ("violated", "race.async-pending", line)
    assert o["message"].startswith("read of a destination of an in-flight async copy: read of shared tile[252] by "
                                   "thread 0 (warp 0, lane 0) of CTA (0,0,0)")
