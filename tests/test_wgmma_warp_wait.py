"""wgmma.mma_async's ``.sync.aligned`` synchronizes the threads of one warp, not the four warps of
the warpgroup: each warp's part of the product may read the operands once that warp issues. A
warp that does not wait for the copy filling the stage races with it even when the other three
waited (tests/data/wgmma_warp_wait: the zoo's wgmma_pipeline, warp 3 skipping its wait)."""
import json

from conftest import ROOT
from kverify.verifier.cli import main

DATA = ROOT / "tests" / "data" / "wgmma_warp_wait"


def test_a_warp_that_skips_the_wait_races_with_the_copy(capfd):
    main(["check", str(DATA / "wgmma_warp_wait.ptx"), "--launch", str(DATA / "launch.json"), "--format", "json"])
    (k,) = json.loads(capfd.readouterr().out)["kernels"]
    assert k["verdict"] == "violated"
    o = next(o for o in k["obligations"] if o["title"] == "race-free: async")
    assert (o["status"], o["rule"]) == ("violated", "race.async-pending")
    assert [(loc["line"], loc["ptx_line"]) for loc in o["locations"]][:1] == [(190, 287)]
    assert "wgmma operand read of shared sA[0] by warp 3 (threads 96-127)" in o["message"]
    assert "cp.async.bulk issued by warp 4" in o["message"]
