"""The equivalence engine's FP8 mma.sync (real model): e4m3 x e5m2 operands read as their values,
f32 and f16 accumulators (an f16 C/D is two registers of two halves, each sum rounded to f16 once).
tests/data/fp8_mma_equiv: one m16n8k32 against two chained m16n8k16 (the same sums: proved), a
twin reading B's next column (a counterexample with fp8-coded inputs, confirmed by the
interpreter), and the f16 accumulator against explicit rounding of the f32 result."""
import json
from pathlib import Path

import numpy as np

from kverify.semantics.values.narrow import fp8_code, fp8_to_f32
from kverify.verifier.cli import main

DATA = Path(__file__).parent / "data" / "fp8_mma_equiv"


def _equiv(cand, ref, launch, capsys, tmp_path):
    rc = main(["equiv", str(DATA / f"{cand}.ptx"), str(DATA / f"{ref}.ptx"), "--launch", str(DATA / launch),
               "--cex-dir", str(tmp_path), "--format", "json"])
    return rc, json.loads(capsys.readouterr().out)


def _ob(rep):
    (k,) = rep["kernels"]
    (o,) = k["obligations"]
    return o


def test_one_k32_mma_equals_two_chained_k16(capsys, tmp_path):
    rc, rep = _equiv("k32", "k16x2", "launch.json", capsys, tmp_path)
    o = _ob(rep)
    assert rc == 0 and o["status"] == "proved"
    assert o["message"] == ("proved under the real model: all 128 output elements equal for all inputs (128 by identical "
                            "normal forms, 0 by the solver)")


def test_wrong_b_column_has_a_counterexample_with_fp8_codes(capsys, tmp_path):
    rc, rep = _equiv("k32__wrong_col", "k16x2", "launch.json", capsys, tmp_path)
    o = _ob(rep)
    assert rc == 1 and o["status"] == "violated"
    assert o["message"] == "refuted under the real model: out[0, 0] differs: candidate 0.0, reference -2.0"
    inputs = np.load(next(tmp_path.glob("*.candidate.npz")))
    a, bt = inputs["a"].reshape(-1), inputs["bt"].reshape(-1)
    assert a.dtype == np.uint8 and {int(i): int(a[i]) for i in np.flatnonzero(a)} == {9: fp8_code(-2.0, "e4m3")}
    assert {int(i): int(bt[i]) for i in np.flatnonzero(bt)} == {9: fp8_code(1.0, "e5m2")}
    assert float(fp8_to_f32(a[9], "e4m3")) == -2.0


def test_f16_accumulator_rounds_each_sum_once(capsys, tmp_path):
    rc, rep = _equiv("k32_f16", "k32_round", "launch_f16.json", capsys, tmp_path)
    assert rc == 0 and _ob(rep)["status"] == "proved"


def test_fp8_code_is_the_exact_inverse_of_the_decoding():
    for fmt in ("e4m3", "e5m2"):
        vals = fp8_to_f32(np.arange(256), fmt)
        for code in range(256):
            v = float(vals[code])
            if np.isfinite(v) and code != 0x80:  # -0.0 encodes as +0.0
                assert fp8_code(v, fmt) == code
        assert fp8_code(0.1, fmt) is None and fp8_code(float("inf"), fmt) is None


def test_fp8_bytes_read_in_the_other_format_are_not_proved(capsys, tmp_path):
    """A's e4m3 bytes fed to the mma.sync as e5m2: the input element's value is known only under its
    buffer's format, so the symbolic walk stops (never proved) and the bit-level test refutes it."""
    rc, rep = _equiv("k32__wrong_format", "k16x2", "launch.json", capsys, tmp_path)
    o = _ob(rep)
    assert rc == 1 and o["status"] == "violated"
    assert o["message"].startswith("refuted")
