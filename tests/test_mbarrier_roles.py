"""Static mbarrier obligations on the rings of tests/data/mbarrier_roles/ (tests/data/pipeline_races/
ring2.cu and generic-store rings, mutated): what the obligations may claim when a site runs in only
some iterations, when several arrive sites hit one barrier's phase from different ring positions,
which initial parity a wait must name, and which block size the counts assume."""
import re
from pathlib import Path

from kverify.launch import from_flags
from kverify.semantics.ir import load_module
from kverify.verifier.mbarrier import check_mbarrier

DATA = Path(__file__).parent / "data" / "mbarrier_roles"


def _check(name, block=None):
    path = DATA / f"{name}.ptx"
    m = load_module(str(path))
    k = next(k for k in m.kernels if k.is_entry)
    obs = check_mbarrier(m, k, from_flags(k, str(path), None, block))
    return {o.title.split(": ", 1)[1].split(" (")[0]: o for o in obs}


def _status(obs):
    return {w: o.status for w, o in obs.items()}


def test_a_release_skipped_in_one_iteration_leaves_arrivals_unknown():
    """ring2__skipped_release: ``if (lane == 0 && it != 3) arrive(&empty[s])``. The count of
    arriving threads (1 per consumer warp) holds only where ``it != 3``; the arrivals were proved
    under that condition, so the phase of iteration 3 (no arrival: the producer hangs) was never
    checked."""
    obs = _check("ring2__skipped_release")
    arr = obs["arrivals"]
    assert arr.status == "unknown"
    assert re.fullmatch(r"ring2__skipped_release\.cu:120:9 \(ptx 238\): its threads run it in iteration \d+ and not in "
                        r"iteration 3 of loop \$L__BB0_5 \(line 108\): a phase may miss its arrivals", arr.message)
    assert [(l.line, l.ptx_line) for l in arr.locations] == [(120, 238)]


def test_a_fill_skipped_in_one_iteration_leaves_arrivals_unknown_and_tx_proved():
    """ring2__skipped_fill: the producer skips the expect-tx and the copy of iteration 3. Its
    arrive.expect_tx (the only arrival on full[s], count 1) runs in some iterations only: arrivals
    unknown. The tx bytes stay proved: the expect-tx and the copy run under one condition, so a
    phase gets both (1024 = 1024) or neither (0 = 0)."""
    obs = _check("ring2__skipped_fill")
    arr = obs["arrivals"]
    assert arr.status == "unknown"
    assert re.fullmatch(r"ring2__skipped_fill\.cu:103:11 \(ptx 145\): its threads run it in iteration \d+ and not in "
                        r"iteration 3 of loop \$L__BB0_10 \(line 99\): a phase may miss its arrivals", arr.message)
    assert obs["tx bytes"].status == "proved"


def test_the_correct_ring_keeps_its_proofs():
    obs = _check("../pipeline_races/ring2")
    assert _status(obs) == {"parity": "proved", "tx bytes": "proved", "arrivals": "proved"}


def test_two_releases_hitting_one_barrier_from_different_iterations_leave_arrivals_unknown():
    """ring2__release_both_stages: lane 0 of each consumer warp arrives on empty[s] and on
    empty[s ^ 1]. Each site alone brings 4 arrivals (the count) and in one iteration the two name
    different barriers, so no per-iteration sum saw them together; but empty[1] gets both sites'
    arrivals (iteration 1 of the first, iterations 0 and 2 of the second): 8 per phase."""
    arr = _check("ring2__release_both_stages")["arrivals"]
    assert arr.status == "unknown"
    m = re.fullmatch(
        r"arrive sites ring2__release_both_stages\.cu:120:9 \(ptx 236\) and ring2__release_both_stages\.cu:121:9 "
        r"\(ptx 246\) may arrive on one barrier in different iterations \(the first in iteration (\d+), the second in "
        r"iteration (\d+) of loop \$L__BB0_5 \(line 108\)\): the arrivals of sites are added up only within an "
        r"iteration, and a phase of that barrier may get those of both", arr.message)
    assert m and (int(m[1]) - int(m[2])) % 2 == 1  # empty[k % 2] of the first is empty[(k' + 1) % 2] of the second
    assert [l.line for l in arr.locations] == [120, 121]


def test_an_extra_release_in_the_first_iteration_leaves_arrivals_unknown():
    """ring2__early_release: ``if (it == 0 && lane == 0) arrive(&empty[s ^ 1])`` -- an extra
    arrival on empty[1] in iteration 0 only (its count of 4 holds where ``it == 0``)."""
    arr = _check("ring2__early_release")["arrivals"]
    assert arr.status == "unknown"
    assert re.fullmatch(r"ring2__early_release\.cu:123:9 \(ptx 255\): its threads run it in iteration 0 and not in "
                        r"iteration [1-9]\d* of loop \$L__BB0_5 \(line 108\): a phase may miss its arrivals", arr.message)


def test_a_warp_wide_producer_wait_is_the_rings_pass_through():
    """ring2_warp_wait (correct): the whole producer warp waits on empty[s], lane 0 posts the
    expect-tx and issues the copy. The consumers' release of empty[s] first waits on full[s],
    which the producer's copy fills: the producer's wait passes through (parity 1 first). It was
    taken for a consumer (parity violated) because not every waiting lane fills."""
    par = _check("ring2_warp_wait")["parity"]
    assert par.status == "proved"


def test_roles_of_a_ring_released_by_arrivals_alone_follow_the_data_handed_over():
    """ring_all and gen_ring (correct): neither barrier is filled, both roles write shared memory
    (the producer the stage, the consumers their acc[] slot) and arrive on the other's barrier.
    The producer passes through: it writes the stage the consumers read after their wait, and
    they write nothing it reads. The twins whose consumers name parity 1 first (reading the stage
    before the write) are violated there; the wrong role was proved before (and the correct
    kernels violated)."""
    for name, line in (("ring_all", 49), ("gen_ring", 48)):
        assert _check(name)["parity"].status == "proved"
        par = _check(f"{name}__consumer_parity_flipped")["parity"]
        assert par.status == "violated" and par.rule == "mbarrier.parity"
        assert [l.line for l in par.locations] == [line]
        assert "names parity 1, but it must wait on parity 0 (consumer: it reads shared memory the releasing role " \
               "writes at " in par.message


def test_an_arrive_on_a_barrier_no_wait_names_is_not_counted():
    """gen_ring_order: the producer's lane 0 arrives once, in iteration 0, on an "order" barrier
    (CUTLASS's load-order barrier) that no thread waits on. Its phases block nobody and order
    nothing: arrivals proved, and the message names the arrive it did not count. With a wait on
    that barrier (gen_ring_order__waited) the arrive counts again, and it runs in iteration 0 only:
    unknown."""
    obs = _check("gen_ring_order")
    assert _status(obs) == {"parity": "proved", "tx bytes": "proved", "arrivals": "proved"}
    assert obs["arrivals"].message.endswith(
        "gen_ring_order.cu:55:7 (ptx 180) x1, gen_ring_order.cu:70:7 (ptx 268) x4; not counted: the arrive at "
        "gen_ring_order.cu:60:7 (ptx 193), on a barrier no wait names and no byte count tracks (its phases order "
        "nothing and block no thread)")
    obs = _check("gen_ring_order__waited")
    assert obs["arrivals"].status == "unknown"
    assert re.fullmatch(r"gen_ring_order\.cu:60:7 \(ptx 197\): its threads run it in iteration 0 and not in iteration "
                        r"\d+ of loop \$L__BB0_15 \(line 50\): a phase may miss its arrivals", obs["arrivals"].message)
    # the arrive brings 2 arrivals on count 1 (the pending count would go below 0): counted, not skipped
    obs = _check("gen_ring_order__count2")
    assert obs["arrivals"].status == "unknown"
    assert obs["arrivals"].message.startswith("gen_ring_order.cu:58:9 (ptx 193): its threads run it in iteration 0")
    # no mbarrier.init of the unwaited barrier: still an arrive on an uninitialized barrier
    obs = _check("gen_ring_order__uninit")
    assert (obs["arrivals"].status, obs["arrivals"].rule) == ("violated", "mbarrier.uninitialized")
    assert obs["arrivals"].message.startswith("gen_ring_order.cu:60:7 (ptx 187): the arrive names the barrier at "
                                              "shared address 0x620 in iterations {'$L__BB0_13 (line 50)': 0}, which no "
                                              "mbarrier.init of the kernel initializes")


def test_an_unwaited_barrier_that_copies_signal_is_still_counted():
    """Triton's tma_matmul with the consumer's wait on the full barrier removed: no wait names that
    barrier, but its copies complete bytes on it, and an arrival while its bytes are pending drives
    the pending count below 0 (the run's mbarrier.arrival-overflow). Its arrive.expect_tx is
    counted as before (unknown: its prefetch runs in some iterations only), not skipped."""
    path = Path(__file__).parent / "zoo" / "triton" / "tma_matmul__no_full_wait.ptx"
    m = load_module(str(path))
    k = next(k for k in m.kernels if k.is_entry)
    obs = {o.title.split(": ", 1)[1].split(" (")[0]: o for o in check_mbarrier(m, k, from_flags(k, str(path)))}
    assert obs["parity"].message == "no parity wait"
    assert obs["arrivals"].status == "unknown"
    assert re.fullmatch(r"tests/zoo/triton/generate\.py:100:22 \(ptx 515\): its threads run it in iteration \d+ and not "
                        r"in iteration \d+ of loop \$L__BB0_2 \(line 100\): a phase may miss its arrivals",
                        obs["arrivals"].message)
