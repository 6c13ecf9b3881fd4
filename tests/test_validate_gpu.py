"""kverify validate on a GPU: every cheating kernel caught, honest kernels pass, hangs are
verdicts, compute-sanitizer findings folded in. Marked ``gpu``: skipped where no GPU
exists (tests/conftest.py); run on an H200."""
from __future__ import annotations

from pathlib import Path

import pytest

from kverify.verifier.validate import validate

ROOT = Path(__file__).resolve().parent.parent
CHEAT = ROOT / "tests" / "validate" / "cheat"
CHEATS = str(CHEAT / "cheats.ptx")
ADD = str(CHEAT / "add.json")

pytestmark = pytest.mark.gpu


def _ob(v, oid):
    return next(o for o in v.report.obligations if o.title == oid)


def _run(kernel, file=CHEATS, launch=ADD, ref="ref:add", **kw):
    kw.setdefault("trials", 2)
    return validate(file, launch=launch, ref=ref, kernel_name=kernel, **kw)


@pytest.mark.parametrize("path", ["tests/zoo/vadd/vadd.ptx", "tests/zoo/softmax/softmax.ptx",
                                  "tests/zoo/histogram/histogram.ptx", "tests/zoo/saxpy_vec/saxpy_vec.ptx",
                                  "tests/zoo/triton/tma_matmul.ptx", "tests/zoo/wgmma_pipeline/wgmma_pipeline.ptx"])
def test_honest_zoo_kernels_pass(path):
    v = validate(path, trials=2)
    assert v.report.verdict == "verified", [(o.title, o.status, o.message) for o in v.report.obligations]
    assert "H200" in v.details["device"]["name"] or v.details["device"]["name"]


def test_honest_kernel_with_fuzzed_shapes_passes_and_runs_on_fresh_buffers():
    v = _run("honest_add")
    assert v.report.verdict == "verified"
    ptrs = [p for run in v.details["pointers"].values() for p in run.values()]
    assert len(ptrs) == len(set(ptrs)) and len(ptrs) == 3 * 2 * (2 + 4)  # 3 buffers, 2 poisons, 6 trials


def test_lowered_kernel_passes():
    v = validate("tests/zoo/vadd/vadd.ptx", trials=1, lowered=True)
    assert v.report.verdict == "verified" and "lowered" in v.details["kernel_source"]


def test_b1_unwritten_output():
    assert _ob(_run("reuse_output"), "matches-reference").rule == "validate.unwritten"


def test_b1_uninitialized_read():
    assert _ob(_run("uninit_accumulate"), "deterministic").rule == "validate.nondeterministic"


def test_b2_input_mutation():
    assert _ob(_run("zero_input"), "inputs-unmodified").rule == "validate.input-mutation"


def test_b3_constant_output():
    v = _run("constant_rowsum", launch=str(CHEAT / "rowsum.json"), ref="ref:rowsum_softmax")
    assert _ob(v, "matches-reference").rule == "validate.weak-reference" and v.report.verdict == "inconclusive"


def test_b4_shape_specialization_writes_out_of_bounds_and_leaves_tails():
    v = _run("fixed_1024")
    assert _ob(v, "in-bounds-writes").rule == "validate.out-of-bounds-write"
    assert _ob(v, "matches-reference").status == "violated"


def test_b5_race_found_by_racecheck():
    v = validate(str(CHEAT / "racy.ptx"), launch=str(CHEAT / "racy.json"), ref="ref:block_sums", trials=2,
                 sanitize=True)
    assert _ob(v, "sanitizer-racecheck").status == "violated", _ob(v, "sanitizer-racecheck").message
    assert v.report.verdict == "violated"


def test_b6_state_kept_across_launches():
    assert _ob(_run("lazy_after_first"), "matches-reference").rule == "validate.unwritten"


def test_b7_library_delegation():
    v = _run("delegates", file=str(CHEAT / "delegates.ptx"), trials=1)
    assert _ob(v, "no-extern-calls").rule == "validate.extern-call" and v.report.verdict == "violated"


def test_b8_precision_downgrade_and_store_dtype():
    v = _run("half_add")
    assert _ob(v, "no-precision-downgrade").status == "violated"
    assert _ob(v, "matches-reference").rule == "validate.mismatch"
    assert _ob(_run("store_half"), "store-dtypes").rule == "validate.store-dtype"


def test_b10_fast_math_build():
    v = validate(str(CHEAT / "fastmath.ptx"), launch=str(CHEAT / "divide.json"), ref="ref:divide", trials=1)
    assert _ob(v, "no-fast-math").rule == "validate.fast-math"


def test_hang_is_a_timeout_verdict_and_the_gpu_recovers():
    v = _run("spin_forever", file=str(CHEAT / "hang.ptx"), trials=1, timeout=5.0)
    assert _ob(v, "terminates").rule == "validate.timeout"
    assert v.details["run_wall_s"] < 60
    assert validate("tests/zoo/vadd/vadd.ptx", trials=1).report.verdict == "verified"
