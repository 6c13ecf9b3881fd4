"""mbarrier.init-fence (a warning): a TMA/bulk copy's complete-tx on an mbarrier whose init the
initializing thread did not fence (fence.mbarrier_init or fence.proxy.async) before the copy was
issued — the fix CUTLASS (PR #2030), FlashAttention-3's vendored pipeline and FlashKDA (#25) made,
and what the CUDA guide's TMA example does. tests/data/init_fence: the init, expect-tx and copy in
one thread, and an init made visible to the issuing warp by __syncthreads only; each with its
fenced twin (fence.mbarrier_init; fence.proxy.async)."""
import json
from pathlib import Path

import numpy as np
import pytest

from kverify.launch import LaunchSpec
from kverify.semantics.interpreter import run_kernel
from kverify.semantics.ir import load_module
from kverify.verifier.cli import main

DATA = Path(__file__).parent / "data" / "init_fence"
LAUNCH = ["--grid", "2", "--block", "256", "--arg", "in=512:f32", "--arg", "out=512:f32"]


def _check(name, capsys, *extra):
    rc = main(["check", str(DATA / f"{name}.ptx"), *LAUNCH, "--format", "json", *extra])
    return rc, json.loads(capsys.readouterr().out)["kernels"][0]


@pytest.mark.parametrize("name", ["same_thread", "after_barrier"])
def test_unfenced_init_before_a_copy_is_a_warning_at_the_copy_and_the_init(capsys, name):
    rc, k = _check(name, capsys)
    assert rc == 0 and k["verdict"] == "verified"
    (f,) = [f for f in k["findings"] if f["rule"] == "mbarrier.init-fence"]
    assert f["severity"] == "warning"
    assert [(Path(l["path"]).name, l["line"]) for l in f["locations"]] == [(f"{name}.cu", 17), (f"{name}.cu", 10)]
    assert f["message"].startswith(f"the cp.async.bulk issued at {name}.cu:17 completes tx on an mbarrier whose "
                                   f"init was not followed by fence.mbarrier_init (or fence.proxy.async)")
    rc, k = _check(name, capsys, "--strict")
    assert rc == 1 and k["verdict"] == "violated"


@pytest.mark.parametrize("name", ["same_thread__fenced", "after_barrier__proxy_fenced"])
def test_fenced_twins_have_no_finding_and_copy_the_data(capsys, name):
    rc, k = _check(name, capsys)
    assert rc == 0 and k["verdict"] == "verified" and k["findings"] == []
    m = load_module(str(DATA / f"{name}.ptx"))
    spec = LaunchSpec.from_dict({"kernel": "copy_in", "grid": [2], "block": [256],
                                 "buffers": {"in": {"dtype": "float32", "shape": [512]},
                                             "out": {"dtype": "float32", "shape": [512]}}, "outputs": ["out"]})
    x = np.arange(512, dtype=np.float32)
    r = run_kernel(m, m.kernel("copy_in"), spec, inputs={"in": x})
    assert r.status == "complete" and not r.findings
    np.testing.assert_array_equal(r.outputs["out"], 2 * x)


def test_cutlass_init_sequence_with_a_relaxed_cluster_arrive(capsys):
    """fence.mbarrier_init.release.cluster, then barrier.cluster.arrive.relaxed + wait: the fence's
    release reaches the issuing warp through the cluster barrier (CUTLASS's sequence, which made
    its example 48 GEMM carry this warning before the cluster path was followed): no finding. The
    same sequence without the fence: the init reaches neither the expect-tx nor the copy."""
    rc, k = _check("cluster_sequence", capsys)
    assert rc == 0 and k["verdict"] == "verified" and k["findings"] == []
    rc, k = _check("cluster_sequence__no_fence", capsys)
    assert rc == 1
    got = sorted((f["rule"], f["severity"], f["locations"][0]["line"]) for f in k["findings"])
    assert got == [("mbarrier.init-fence", "warning", 18), ("mbarrier.init-visibility", "error", 16),
                   ("mbarrier.init-visibility", "error", 18)]


def test_a_fence_after_the_copy_is_too_late(capsys):
    """The initializing thread fences only after issuing the copy: the fence does not happen before
    the copy's issue, so the warning stands (the same thread's program order is not enough)."""
    rc, k = _check("same_thread__late_fence", capsys)
    assert rc == 0
    (f,) = [f for f in k["findings"] if f["rule"] == "mbarrier.init-fence"]
    assert [(Path(l["path"]).name, l["line"]) for l in f["locations"]] == [("same_thread__late_fence.cu", 18),
                                                                             ("same_thread__late_fence.cu", 11)]
