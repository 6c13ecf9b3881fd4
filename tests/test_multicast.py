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
    # tx bytes: rank 0's copy, evaluated for each CTA of the cluster, brings 4096 bytes to the
    # barrier of every rank its ctaMask names: both ranks' expect-tx, for every CTA of the grid
    tx = rep.obligation("mbarrier.tx-bytes")
    assert tx.status == "proved", tx.message
    assert "tma_multicast.cu:90:5 (ptx 79)" in tx.message and "assuming" not in tx.message


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


def _mutant(tmp_path, old, new):
    ptx = tmp_path / "tma_multicast__m.ptx"
    (tmp_path / "tma_multicast.cu").write_text(open(f"{D}/tma_multicast.cu").read())  # parameter names
    text = open(f"{D}/tma_multicast.ptx").read()
    assert text.count(old) == 1
    ptx.write_text(text.replace(old, new))
    return str(ptx)


def test_static_tx_bytes_finds_the_cta_a_multicast_mask_leaves_out(tmp_path):
    """ctaMask 0b01: rank 1 announces 4096 bytes and no copy of the cluster signals its barrier."""
    rep = kverify.check(_mutant(tmp_path, "mov.u16 \t%rs1, 3;", "mov.u16 \t%rs1, 1;"), launch=LAUNCH)
    tx = rep.obligation("mbarrier.tx-bytes")
    assert tx.status == "violated" and tx.rule == "mbarrier.tx-mismatch"
    assert "announces 4096 tx bytes on the barrier at shared address 0x1000 but the copies signalling it in the " \
           "same phase deliver 0 (tma_multicast.cu:91:5 (ptx 92)); in CTA (" in tx.message
    cex = tx.counterexample
    assert cex["expected_bytes"] == 4096 and cex["copied_bytes"] == 0 and cex["cluster_rank"] == 1
    assert cex["cta"][0] % 2 == 1


def test_static_tx_bytes_counts_a_multicast_issued_by_every_rank_twice(tmp_path):
    """Without the rank-0 guard both ranks multicast the tile to both: 8192 bytes per barrier."""
    rep = kverify.check(_mutant(tmp_path, "\t@%p3 bra \t$L__BB0_5;\n", ""), launch=LAUNCH)
    tx = rep.obligation("mbarrier.tx-bytes")
    assert tx.status == "violated" and tx.rule == "mbarrier.tx-mismatch"
    assert tx.counterexample["expected_bytes"] == 4096 and tx.counterexample["copied_bytes"] == 8192


def test_a_multicast_mask_read_from_memory_is_not_carried_to_the_peers(tmp_path):
    """A mask loaded by the issuing CTA is a value of its own run: unknown, not proved."""
    rep = kverify.check(_mutant(tmp_path, "mov.u16 \t%rs1, 3;", "ld.global.nc.u16 \t%rs1, [%rd2];"),
                        launch=LAUNCH)
    tx = rep.obligation("mbarrier.tx-bytes")
    assert tx.status == "unknown"
    assert tx.message.endswith("tma_multicast.cu:91:5 (ptx 92): the multicast copy's mask, size, barrier or issuing "
                               "threads depend on values of the issuing CTA's own run, which the encoding does not "
                               "carry over to the other CTAs of the cluster")


ELECT = f"{D}/launch_elect.json"


def test_an_elected_leader_issuing_the_multicast_copy_is_proved_for_every_cta():
    """CUTLASS's idiom: warp 0's ``elect.sync`` leader (full mask) posts the expect-tx and issues
    the multicast copy. The leader is one function of the CTA and warp indices, so the static
    tx-bytes proof carries the copy over to the other CTA of the cluster by substitution, as it
    does for ``threadIdx.x == 0``; it used to stop at the leader ("values of the issuing CTA's own
    run") and leave the obligation bounded by the run."""
    rep = kverify.check(f"{D}/tma_multicast_elect.ptx", launch=ELECT)
    assert rep.verdict == "verified" and rep.findings == []
    tx = rep.obligation("mbarrier.tx-bytes")
    assert tx.status == "proved", tx.message
    assert tx.message.startswith("in each phase the expected tx bytes equal the bytes of that phase's copies, for "
                                 "all iterations: ") and "tma_multicast_elect.cu:111:5 (ptx 215)" in tx.message
    assert rep.obligation("mbarrier.arrivals").status == rep.obligation("mbarrier.parity").status == "proved"


def test_an_elected_leader_expecting_half_the_bytes_is_violated_statically():
    """The seeded twin (built with -DTX_BYTES=2048): the static checker names the expect-tx and
    the multicast copy with both byte counts, for the CTA and rank."""
    rep = kverify.check(f"{D}/tma_multicast_elect__short_tx.ptx", launch=ELECT)
    assert rep.verdict == "violated"
    tx = rep.obligation("mbarrier.tx-bytes")
    assert tx.status == "violated" and tx.rule == "mbarrier.tx-mismatch"
    assert tx.message == ("tma_multicast_elect.cu:111:5 (ptx 215) announces 2048 tx bytes on the barrier at shared "
                          "address 0x1000 but the copies signalling it in the same phase deliver 4096 "
                          "(tma_multicast_elect.cu:112:5 (ptx 228)); in CTA (0,0,0), cluster rank 0")
    assert [(x.line, x.ptx_line) for x in tx.locations] == [(111, 215), (112, 228)]
