"""A fence.proxy.async in the issuing thread after the rendezvous, instead of in every writer
before it, orders the other threads' generic writes with the async-proxy access only through a
rule the ISA does not spell out ("takes effect within a single thread"): the warning
``race.async-proxy.issuer-fence``. The same fence before the barrier orders nothing of the
others: ``race.async-proxy`` (tests/data/proxy_fence, our tests/zoo/tma_store with the fence
moved)."""
import json
from pathlib import Path

import pytest

from kverify.verifier.cli import main

DATA = Path(__file__).parent / "data" / "proxy_fence"
LAUNCH = ["--grid", "1", "--block", "128", "--arg", "iters=4", "--arg", "in=2048:f32", "--arg", "out=2048:f32"]


def _check(capsys, name, *extra):
    rc = main(["check", str(DATA / f"{name}.ptx"), *LAUNCH, *extra])
    return rc, capsys.readouterr().out


def test_a_fence_in_the_issuer_after_the_barrier_is_a_warning(capsys):
    rc, out = _check(capsys, "issuer_fence")
    assert rc == 0, out
    assert "kernel tma_store: VERIFIED" in out
    assert ("tests/data/proxy_fence/issuer_fence.cu:48:7: warning[race.async-proxy.issuer-fence]: async-proxy read of a "
            "generic-proxy write ordered by a fence.proxy.async of the issuing thread only, not of the writer: async "
            "read of shared tile+128 by warp 0 (threads 0-31) of CTA (0,0,0)") in out
    assert "  warning   race-free: async" in out and "error[" not in out
    rc, out = _check(capsys, "issuer_fence", "--strict")
    assert rc == 1 and "error[race.async-proxy.issuer-fence]" in out


def test_a_fence_in_the_issuer_before_the_barrier_orders_nothing(capsys):
    rc, out = _check(capsys, "issuer_fence__before_barrier")
    assert rc == 1, out
    assert ("tests/data/proxy_fence/issuer_fence__before_barrier.cu:46:7: error[race.async-proxy]: async-proxy read of "
            "a generic-proxy write with no fence.proxy.async after the write: async read of shared tile+128") in out


# --------------------------------------------------------------------------- the state space a fence names

def _tma_after_store(kernel, capsys):
    launch = {"kernel": kernel, "grid": [2], "block": [128], "outputs": ["out"],
              "buffers": {"buf": {"dtype": "float32", "shape": [64, 32]}, "out": {"dtype": "float32", "shape": [2048]}},
              "tensormaps": {"tmap": {"dtype": "float32", "shape": [64, 32], "box": [32, 32], "buffer": "buf"}}}
    rc = main(["check", str(DATA / "tma_after_store.ptx"), "--kernel", kernel, "--launch", json.dumps(launch),
               "--format", "json"])
    k = json.loads(capsys.readouterr().out)["kernels"][0]
    return rc, {o["title"]: o for o in k["obligations"]}


@pytest.mark.parametrize("kernel, rc, status, line", [("fenced", 0, "bounded", None),
                                                      ("unfenced", 1, "violated", 31),
                                                      ("wrong_space", 1, "violated", 32)])
def test_a_tma_load_of_generic_global_stores_needs_a_global_proxy_fence(capsys, kernel, rc, status, line):
    """fence.proxy.async.shared::cta orders shared-memory accesses only (§9.7.13.4): global stores a
    TMA load reads stay unfenced."""
    got, by = _tma_after_store(kernel, capsys)
    o = by["race-free: async"]
    assert (got, o["status"]) == (rc, status)
    if line:
        assert (o["rule"], o["locations"][0]["line"]) == ("race.async-proxy", line)
        assert o["message"].startswith("async-proxy read of a generic-proxy write with no fence.proxy.async after "
                                       "the write: async read of global buf")


@pytest.mark.parametrize("fence, verdict", [
    ("fence.proxy.async.global;", "verified"),
    ("fence.proxy.async;", "verified"),
    ("fence.proxy.alias;", "violated"),  # aliased virtual addresses, within the generic proxy
    ("fence.proxy.async::generic.release.sync_restrict::shared::cluster.cluster;", "violated"),  # shared only
])
def test_which_proxy_fences_order_global_stores_before_a_tma_load(tmp_path, capsys, fence, verdict):
    text = (DATA / "tma_after_store.ptx").read_text()
    assert text.count("fence.proxy.async.global;") == 1
    (tmp_path / "tma_after_store.cu").write_text((DATA / "tma_after_store.cu").read_text())
    p = tmp_path / "tma_after_store.ptx"
    p.write_text(text.replace("fence.proxy.async.global;", fence))
    launch = {"kernel": "fenced", "grid": [2], "block": [128], "outputs": ["out"],
              "buffers": {"buf": {"dtype": "float32", "shape": [64, 32]}, "out": {"dtype": "float32", "shape": [2048]}},
              "tensormaps": {"tmap": {"dtype": "float32", "shape": [64, 32], "box": [32, 32], "buffer": "buf"}}}
    main(["check", str(p), "--kernel", "fenced", "--launch", json.dumps(launch), "--format", "json"])
    k = json.loads(capsys.readouterr().out)["kernels"][0]
    o = {x["title"]: x for x in k["obligations"]}["race-free: async"]
    assert k["verdict"] == verdict
    if verdict == "violated":
        assert (o["rule"], o["locations"][0]["line"]) == ("race.async-proxy", 30)


@pytest.mark.parametrize("fence, verdict", [
    ("fence.proxy.async::generic.release.sync_restrict::shared::cluster.cluster;", "verified"),
    ("fence.proxy.async::generic.acquire.sync_restrict::shared::cluster.cluster;", "violated"),  # async -> generic
])
def test_the_unidirectional_proxy_fence_orders_generic_before_async_only_as_release(tmp_path, capsys, fence, verdict):
    src = Path(__file__).parent / "data" / "bulk_reduce"
    text = (src / "bulk_reduce.ptx").read_text()
    p = tmp_path / "bulk_reduce.ptx"
    p.write_text(text.replace("    fence.proxy.async.shared::cta;\n", f"    {fence}\n"))
    main(["check", str(p), "--kernel", "bulk_reduce", "--launch", str(src / "launch.json"), "--format", "json"])
    k = json.loads(capsys.readouterr().out)["kernels"][0]
    o = {x["title"]: x for x in k["obligations"]}["race-free: async"]
    assert k["verdict"] == verdict
    if verdict == "violated":
        assert (o["rule"], o["locations"][0]["line"]) == ("race.async-proxy", 41)  # the reduction
