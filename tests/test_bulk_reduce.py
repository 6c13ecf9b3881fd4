"""cp.reduce.async.bulk (§9.7.9.25.4.3): a bulk reduction of a shared tile into global memory,
completed through a bulk async-group; tests/data/bulk_reduce (kernels of our own)."""
import json
from pathlib import Path

import numpy as np

import kverify
from kverify.verifier.cli import main

D = Path(__file__).parent / "data" / "bulk_reduce"
PTX = D / "bulk_reduce.ptx"


def _check(capsys, tmp_path, kernel):
    launch = json.loads((D / "launch.json").read_text()) | {"kernel": kernel}
    (tmp_path / "l.json").write_text(json.dumps(launch))
    rc = main(["check", str(PTX), "--kernel", kernel, "--launch", str(tmp_path / "l.json"), "--format", "json"])
    k = json.loads(capsys.readouterr().out)["kernels"][0]
    return rc, k, {o["id"]: o for o in k["obligations"]}


def test_each_element_becomes_the_sum_of_destination_and_source():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 128)).astype(np.float32)
    o = rng.standard_normal((2, 128)).astype(np.float32)
    r = kverify.run(str(PTX), kernel_name="bulk_reduce", launch=str(D / "launch.json"), inputs={"in": x, "out": o})
    assert r.status == "complete" and np.array_equal(r.outputs["out"].view(np.uint32), (o + x).view(np.uint32))


def test_the_correct_kernel_is_verified(capsys, tmp_path):
    rc, k, by = _check(capsys, tmp_path, "bulk_reduce")
    assert rc == 0 and k["verdict"] == "verified" and by["race.async"]["status"] == "bounded"


def test_without_the_proxy_fence_the_reduction_reads_unfenced_stores(capsys, tmp_path):
    rc, k, by = _check(capsys, tmp_path, "bulk_reduce__no_fence")
    o = by["race.async"]
    assert rc == 1 and o["status"] == "violated" and o["rule"] == "race.async-proxy"
    assert o["locations"][0]["line"] == 78


def test_overwriting_the_source_before_the_group_wait_races_with_the_reduction(capsys, tmp_path):
    rc, k, by = _check(capsys, tmp_path, "bulk_reduce__overwrite")
    o = by["race.async"]
    assert rc == 1 and o["status"] == "violated" and o["rule"] == "race.async-pending"
    assert o["locations"][0]["line"] == 117


def test_reductions_of_two_ctas_into_the_same_elements_are_unknown_not_a_race(capsys, tmp_path):
    rc, k, by = _check(capsys, tmp_path, "bulk_reduce__same_row")
    assert rc == 3 and k["verdict"] == "inconclusive"
    assert "overlaps the bytes of another bulk reduction; the atomicity of reductions to the same elements is " \
           "not modelled" in by["memory"]["message"]


def test_a_warp_wide_issue_is_one_reduction_per_lane_not_one_copy(tmp_path):
    """Lanes with identical operands each add the source (unlike a bulk store, which writes the
    same bytes once): 32 overlapping reductions, which stay unknown."""
    text = PTX.read_text().replace("    setp.ne.s32 %p1, %r1, 0;\n    @%p1 bra $L_done;\n", "    setp.ne.s32 %p1, %r1, 32;\n    @%p1 bra $L_done;\n", 1)
    text = text.replace("    setp.ne.s32 %p1, %r1, 32;", "    setp.gt.u32 %p1, %r1, 31;", 1)
    (tmp_path / "w.ptx").write_text(text)
    r = kverify.run(str(tmp_path / "w.ptx"), kernel_name="bulk_reduce", launch=str(D / "launch.json"))
    assert r.status == "unsupported" and "overlaps the bytes of another bulk reduction" in r.reason
