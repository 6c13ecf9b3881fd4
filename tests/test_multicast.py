"""TMA multicast (``cp.async.bulk.tensor ... .multicast::cluster``, PTX ISA §9.7.9.25.5.1): the
tile and the mbarrier signal land at the same offsets of every CTA named by ``ctaMask``.
tests/data/multicast/tma_multicast.cu: a 2-CTA cluster shares one tile load from rank 0."""
from __future__ import annotations

import numpy as np

import kverify
from kverify.verifier.cli import main

D = "tests/data/multicast"
LAUNCH = f"{D}/launch.json"


def _status(rep):
    return {o.id: o.status for o in rep.obligations}


def test_a_multicast_load_reaches_both_ctas_and_verifies():
    rep = kverify.check(f"{D}/tma_multicast.ptx", launch=LAUNCH)
    assert rep.verdict == "verified" and rep.findings == []
    st = _status(rep)
    assert st["mbarrier.parity"] == "proved" and st["mbarrier.arrivals"] == "proved"
    assert st["race.shared"] == st["race.async"] == st["deadlock"] == st["memory"] == "bounded"
    # tx bytes: the static checker does not follow a multicast signal; the run bounds it
    assert st["mbarrier.tx-bytes"] == "bounded"


def test_each_cta_copies_the_tile_its_cluster_shared():
    res = kverify.run(f"{D}/tma_multicast.ptx", launch=LAUNCH)
    assert res.status == "complete", res.reason
    src, out = res.inputs["in"], res.outputs["out"]
    want = np.concatenate([src, src], axis=1)  # columns 32*rank of row block by: the tile at rows 32*by
    assert np.array_equal(out, want)


def test_a_cluster_without_the_init_barrier_is_violated_in_the_other_cta(capsys):
    assert main(["check", f"{D}/tma_multicast__no_cluster_sync.ptx", "--launch", LAUNCH]) == 1
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith(f"{D}/tma_multicast.cu:91:5: error[mbarrier.init-visibility]: the cp.async.bulk.tensor "
                            "issued at tma_multicast.cu:91 uses the mbarrier with no happens-before edge from its "
                            "mbarrier.init")
    assert "(mbarrier bar of CTA (1,0,0))" in first


def test_a_mask_that_leaves_out_the_second_cta_hangs_it(tmp_path):
    ptx = (tmp_path / "tma_multicast__mask_rank0_only.ptx")
    (tmp_path / "tma_multicast.cu").write_text(open(f"{D}/tma_multicast.cu").read())  # parameter names
    text = open(f"{D}/tma_multicast.ptx").read()
    assert text.count("mov.u16 \t%rs1, 3;") == 1
    ptx.write_text(text.replace("mov.u16 \t%rs1, 3;", "mov.u16 \t%rs1, 1;"))
    rep = kverify.check(str(ptx), launch=LAUNCH)
    assert rep.verdict == "violated"
    dl = rep.obligation("deadlock")
    assert dl.status == "violated" and dl.rule == "deadlock"
    assert ("waits in mbarrier wait for phase 0 of bar of CTA (1,0,0) (barrier in phase 0: 0 of 1 arrivals missing, "
            "tx-count 4096)") in dl.message
