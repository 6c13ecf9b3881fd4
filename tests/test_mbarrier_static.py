"""Static mbarrier conformance (verifier.mbarrier): parity flips, tx bytes and arrival
counts proved for all loop iterations on the zoo's pipelines, and the seeded bugs found
with their rule and line."""
import json
import time
from dataclasses import replace

import pytest

from conftest import ZOO
from kverify.launch import LaunchSpec
from kverify.semantics.ir import load_module
from kverify.verifier.mbarrier import check_mbarrier


def _variant(fam, file):
    man = json.loads((ZOO / fam / "manifest.json").read_text())
    return next(v for v in man["variants"] if v["file"] == file)


def _check(fam, file, launch_patch=None):
    v = _variant(fam, file)
    launch = dict(v["launch"])
    if launch_patch:
        launch["args"] = {**launch.get("args", {}), **launch_patch}
    module = load_module(str((ZOO / fam / file).with_suffix(".ptx")))
    t = time.perf_counter()
    obs = check_mbarrier(module, v["kernel"], LaunchSpec.from_dict(launch))
    dt = time.perf_counter() - t
    assert all(o.checker == "mbarrier" and o.title.startswith("mbarrier conformance: ") for o in obs)
    return {o.title.split(": ", 1)[1]: o for o in obs}, v, dt


@pytest.mark.parametrize("fam, file", [
    ("bulk_pipeline", "bulk_pipeline.cu"),
    ("wgmma_pipeline", "wgmma_pipeline.cu"),
    ("tma_tensor_load", "tma_tensor_load.cu"),
    ("warp_specialized", "warp_specialized.cu"),
    ("triton", "tma_matmul.ptx"),
])
def test_correct_pipelines_are_proved_for_all_iterations(fam, file):
    obs, _, dt = _check(fam, file)
    assert {k: o.status for k, o in obs.items()} == {"parity": "proved", "tx bytes": "proved",
                                                     "arrivals": "proved"}
    assert dt < 10


@pytest.mark.parametrize("fam, file, what, rule", [
    ("bulk_pipeline", "bulk_pipeline__wrong_parity.cu", "parity", "mbarrier.parity"),
    ("bulk_pipeline", "bulk_pipeline__tx_mismatch.cu", "tx bytes", "mbarrier.tx-mismatch"),
    ("bulk_pipeline", "bulk_pipeline__wrong_arrival_count.cu", "arrivals", "mbarrier.arrival-overflow"),
    ("triton", "tma_matmul__parity_never_flips.ptx", "parity", "mbarrier.parity"),
    ("triton", "tma_matmul__half_tx_bytes.ptx", "tx bytes", "mbarrier.tx-mismatch"),
])
def test_seeded_mbarrier_bugs_are_violated_with_rule_and_line(fam, file, what, rule):
    obs, v, _ = _check(fam, file)
    ob = obs[what]
    assert ob.status == "violated" and ob.rule == rule
    lines = {l.line for l in ob.locations} | {l.ptx_line for l in ob.locations}
    assert v["bug"]["line"] in lines
    assert ob.counterexample and ob.counterexample["rule"] == rule
    others = [o for k, o in obs.items() if k != what]
    assert all(o.status != "violated" for o in others)


def test_parity_counterexample_names_iterations_and_barrier():
    obs, _, _ = _check("bulk_pipeline", "bulk_pipeline__wrong_parity.cu")
    ce = obs["parity"].counterexample
    k0, k1 = ce["iterations"]
    assert k1 - k0 == ce["reuse_distance"] == 3
    assert ce["parity"][0] == ce["parity"][1]
    assert isinstance(ce["barrier_address"], int)


def test_remote_arrivals_and_arrive_drop_are_unknown_with_a_reason():
    for fam, file in (("cluster_arrive", "cluster_arrive.cu"), ("arrive_drop", "arrive_drop.cu")):
        obs, _, _ = _check(fam, file)
        assert obs["arrivals"].status == "unknown" and obs["arrivals"].message
        assert all(o.status != "violated" for o in obs.values())


def test_tensor_copy_without_tensor_maps_is_unknown_not_proved():
    v = _variant("triton", "tma_matmul.ptx")
    module = load_module(str(ZOO / "triton" / "tma_matmul.ptx"))
    spec = replace(LaunchSpec.from_dict(v["launch"]), tensormaps={})
    obs = {o.title.split(": ", 1)[1]: o for o in check_mbarrier(module, v["kernel"], spec)}
    assert obs["tx bytes"].status == "unknown" and "tensor map" in obs["tx bytes"].message


def test_cost_does_not_grow_with_the_trip_count():
    _check("bulk_pipeline", "bulk_pipeline.cu", {"iters": 8})  # warm-up
    a, _, t8 = _check("bulk_pipeline", "bulk_pipeline.cu", {"iters": 8})
    b, _, t64 = _check("bulk_pipeline", "bulk_pipeline.cu", {"iters": 64})
    assert all(o.status == "proved" for o in list(a.values()) + list(b.values()))
    assert t64 < 3 * t8 + 0.5
