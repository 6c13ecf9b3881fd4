"""kverify equiv fails closed on what its symbolic walk cannot see: an access outside the buffer
its address comes from."""
from pathlib import Path

import pytest

from kverify.verifier.equivalence import check_pair, load_side

DATA = Path(__file__).resolve().parent / "data" / "equiv_fail_closed"


def _pair(name, cand, model):
    ptx, launch = str(DATA / f"{name}.ptx"), str(DATA / f"{name}.json")
    return check_pair(load_side(ptx, launch, {}, cand), load_side(ptx, launch, {}, "ref"), model,
                      test_on_unknown=False)


def test_the_reference_pairs_are_proved():
    assert _pair("oob_alias", "ref", "real").verdict == "proved"


@pytest.mark.parametrize("model", ["real", "bitexact"])
def test_a_load_past_the_end_of_its_own_buffer_is_unknown_not_a_read_of_the_next(model):
    # a[i + 512] with a of 256 floats: 1024 bytes past a, where a layout with red zones puts b
    r = _pair("oob_alias", "past_a", model)
    if model == "bitexact":  # the interpreter's witness sees it too (and refutes first)
        assert r.verdict == "refuted"
        return
    assert r.verdict == "unknown"
    assert r.message == ("symbolic execution stopped (unsupported): a global load of 4 bytes at 0x10000800 is "
                         "outside a, the buffer its address is derived from (1024 bytes past its end) at "
                         "oob_alias.cu:11")


def test_a_load_past_a_buffer_chosen_at_run_time_lands_in_no_buffer():
    # p = n > 0 ? a : b (selp): no single parameter derives p; the walk's buffers lie far apart
    r = _pair("oob_alias", "past_chosen", "bitexact")
    assert r.verdict == "unknown"
    assert r.message == ("symbolic execution stopped (unsupported): a global load of 4 bytes at 0x10000800 is "
                         "outside every buffer (1024 bytes past the end of a) at oob_alias.cu:17")
