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

