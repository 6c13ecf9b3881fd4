"""`kverify equiv` on values whose type the model must keep (tests/data/equiv_types):

* the real model reads an input element as its value, untyped; an int-to-float conversion returned
  that value whatever the conversion's signedness, and an element's bits used as a float were the
  element too: ``(float)(unsigned)a`` and ``__int_as_float(a)`` were proved equal to ``(float)a``;
* a register no instruction wrote was read as 0, and a kernel storing one was proved equal to one
  storing 0 (ptxas gives it whatever the physical register holds)."""
import json
from pathlib import Path

import pytest

from kverify.verifier.cli import main

DATA = Path(__file__).resolve().parent / "data" / "equiv_types"


def _equiv(capsys, cand, ref, launch, model, *kernels):
    rc = main(["equiv", str(DATA / cand), str(DATA / ref), *kernels, "--launch", str(DATA / launch), "--fp", model,
               "--format", "json"])
    (o,) = json.loads(capsys.readouterr().out)["kernels"][0]["obligations"]
    return rc, o


@pytest.mark.parametrize("cand,status", [("as_unsigned", "violated"), ("as_bits", "violated")])
def test_a_conversion_keeps_its_signedness_and_bits_stay_bits(capsys, cand, status):
    rc, o = _equiv(capsys, "i2f.ptx", "i2f.ptx", "launch_i2f.json", "real", "--kernel", cand, "--ref-kernel", "as_signed")
    assert o["status"] == status and rc == 1
    assert o["counterexample"]  # an input on which the two kernels' outputs differ, run on the interpreter


def test_arithmetic_on_converted_integers_is_still_proved(capsys):
    rc, o = _equiv(capsys, "i2f.ptx", "i2f.ptx", "launch_i2f.json", "real", "--kernel", "twice", "--ref-kernel", "doubled")
    assert o["status"] == "proved" and rc == 0


def test_an_unwritten_register_is_not_zero(capsys):
    rc, o = _equiv(capsys, "uninit_reg.ptx", "zero_reg.ptx", "launch_reg.json", "int")
    assert o["status"] not in ("proved", "violated")  # tested on the interpreter: not a proof
    assert "the outputs' terms differ but no input confirmed the difference" in o["message"]


def test_an_integer_kernel_under_the_real_model_gets_a_verdict(capsys):
    # (the real model's integer results have no real value: an internal error where a counterexample was sought)
    rc, o = _equiv(capsys, "ints.ptx", "ints.ptx", "launch_reg.json", "real", "--kernel", "half", "--ref-kernel",
                   "quarter")
    assert o["status"] == "violated" and rc == 1


def test_an_unimplemented_mode_is_unknown_not_an_internal_error(capsys):
    rc, o = _equiv(capsys, "ints.ptx", "ints.ptx", "launch_reg.json", "int", "--kernel", "edge_clamp", "--ref-kernel",
                   "edge_clamp")
    assert o["status"] == "unknown" and "prmt: only the default mode is implemented" in o["message"]
