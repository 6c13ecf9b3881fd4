"""kverify equiv: the zoo's optimized/reference pairs are proved under their model, the
seeded functional bugs are refuted with a counterexample the interpreter replays, and a
pair the executor cannot handle is only ever ``tested``."""
import json

import numpy as np
import pytest

from conftest import ZOO
from kverify.verifier.cli import main
from kverify.verifier.equivalence import equivalence_report, parse_shapes
from kverify.verifier.equivalence import realterm as R
from kverify.verifier.equivalence.algebra import RealAlgebra

PAIRS = json.loads((ZOO / "equivalence.json").read_text())["pairs"]
BY_NAME = {p["name"]: p for p in PAIRS}


def _run_pair(p, tmp_path, **kw):
    rep, results = equivalence_report(str(ZOO / p["candidate"]), str(ZOO / p["reference"]), launch=p["launch"],
                                      ref_launch=p.get("ref_launch", p["launch"]), model=p["model"],
                                      cex_dir=str(tmp_path), test_examples=2, **kw)
    return rep, results[0][1]


PROVED = [p for p in PAIRS if p["expect"] == "proved"]
REFUTED = [p for p in PAIRS if p["expect"] == "refuted"]


def _sweep(pairs):
    """The pairs as parameters: the first two in the fast subset, the others marked slow."""
    return [pytest.param(p, id=p["name"], marks=() if i < 2 else pytest.mark.slow) for i, p in enumerate(pairs)]


def test_the_zoo_lists_eight_proofs_and_six_bugs():
    assert len(PROVED) >= 8 and len(REFUTED) >= 6
    assert {p["bug"] for p in REFUTED} >= {"tail off-by-one", "wrong stride", "missing scale factor",
                                            "swapped operands of a non-commutative op",
                                            "accumulation in half precision", "a stage index that skips a tile"}


@pytest.mark.parametrize("pair", _sweep(PROVED))
def test_optimized_kernel_is_proved_equivalent_to_its_reference(pair, tmp_path):
    rep, r = _run_pair(pair, tmp_path)
    assert r.verdict == "proved", r.message
    assert r.model == pair["model"]
    assert rep.verdict == "verified"
    o = rep.obligations[0].to_json()
    assert o["status"] == "proved" and o["equivalence"] == "proved" and o["model"] == pair["model"]
    assert any("race" in a for a in o["assumptions"])
    assert r.counterexample is None and r.elements > 0


@pytest.mark.parametrize("pair", _sweep(REFUTED))
def test_seeded_bug_is_refuted_with_a_replayable_counterexample(pair, tmp_path, capsys):
    rep, r = _run_pair(pair, tmp_path)
    assert r.verdict == "refuted", r.message
    assert rep.verdict == "violated"
    o = rep.obligations[0]
    assert o.status == "violated" and o.rule == "equivalence.mismatch" and o.model == pair["model"]
    c = r.counterexample
    assert c["confirmed"] and c["buffer"] == pair["cex_buffer"] and c["index"] == pair["cex_index"]
    assert c["candidate_value"] != c["reference_value"]
    # small inputs: only a few elements are nonzero
    assert sum(len(d["nonzero"]) for d in c["inputs"].values()) <= 64
    # the replay command reproduces the difference on the interpreter
    argv = c["replay"].split()[1:]
    capsys.readouterr()
    assert main(argv) == 1
    out = capsys.readouterr().out
    assert f"{c['buffer'] if pair['name'] != 'triton' else ''}" in out
    assert f"differs at flat index {pair['cex_index']}:" in out


def test_counterexample_names_the_source_line_of_the_differing_store(tmp_path):
    _, r = _run_pair(BY_NAME["saxpy_vec_missing_scale"], tmp_path)
    c = r.counterexample
    assert c["candidate_line"].endswith("saxpy_vec__missing_scale.cu:16")
    assert c["reference_line"].endswith("saxpy_scalar.cu:8")
    _, r = _run_pair(BY_NAME["vadd_tail_off_by_one"], tmp_path)
    assert r.counterexample["candidate_line"] == "never written"


def test_a_family_of_shapes_including_tails_and_size_one_is_bounded(tmp_path):
    p = BY_NAME["triton_add_vs_vadd"]
    rep, results = equivalence_report(str(ZOO / p["candidate"]), str(ZOO / p["reference"]), launch=p["launch"],
                                      ref_launch=p["ref_launch"], model="bitexact", shapes="n=1,7,1031",
                                      cex_dir=str(tmp_path))
    assert [r.verdict for _, r in results] == ["proved"] * 3
    assert [o.status for o in rep.obligations] == ["bounded"] * 3
    assert rep.obligations[0].bound == "shapes n=1" and rep.verdict == "verified"


def test_unsupported_kernel_falls_back_to_testing_and_is_never_proved(tmp_path):
    # an atom whose returned value is read (a ticket counter) is not modelled symbolically
    ws = ZOO / "work_steal" / "work_steal.ptx"
    launch = json.loads((ZOO / "work_steal" / "manifest.json").read_text())["variants"][0]["launch"]
    rep, results = equivalence_report(str(ws), str(ws), launch=launch, ref_launch=launch, model="bitexact",
                                      cex_dir=str(tmp_path), test_examples=2)
    r = results[0][1]
    assert r.verdict == "tested", r.message
    assert "symbolic execution stopped (unsupported)" in r.message
    assert r.tested["examples"] == 2 and "problems" not in r.tested and len(r.tested["tried"]) == 2
    assert rep.obligations[0].status == "unknown" and rep.verdict == "inconclusive"


def test_cli_json_report_and_exit_codes(tmp_path, capsys):
    p = BY_NAME["saxpy_vec_vs_scalar"]
    lc, lr = tmp_path / "c.json", tmp_path / "r.json"
    lc.write_text(json.dumps(p["launch"]))
    lr.write_text(json.dumps(p["ref_launch"]))
    rc = main(["equiv", str(ZOO / p["candidate"]), str(ZOO / p["reference"]), "--launch", str(lc), "--ref-launch",
               str(lr), "--fp", "bitexact", "--format", "json", "--shapes", "n=512"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0
    assert out["schema"] == "kverify.report/2" and out["command"] == "equiv" and out["verdict"] == "verified"
    ob = out["kernels"][0]["obligations"][0]
    assert ob["checker"] == "equivalence" and ob["model"] == "bitexact" and ob["equivalence"] == "proved"
    assert ob["shape"] == {"n": 512}
    assert ob["correspondence"] and ob["correspondence"][0]["reference"][0].endswith("saxpy_scalar.cu:8")
    b = BY_NAME["saxpy_vec_missing_scale"]
    lc.write_text(json.dumps(b["launch"]))
    lr.write_text(json.dumps(b["ref_launch"]))
    rc = main(["equiv", str(ZOO / b["candidate"]), str(ZOO / b["reference"]), "--launch", str(lc), "--ref-launch",
               str(lr), "--fp", "bitexact", "--cex-dir", str(tmp_path / "cex")])
    text = capsys.readouterr().out
    assert rc == 1 and "refuted" in text and "replay: kverify run" in text
    with pytest.raises(SystemExit) as e:
        main(["equiv", str(ZOO / b["candidate"]), str(ZOO / b["reference"]), "--fp", "reals"])
    assert e.value.code == 2


def test_bad_shapes_and_missing_launch_are_usage_errors(capsys):
    assert main(["equiv", str(ZOO / "vadd" / "vadd.ptx"), str(ZOO / "vadd" / "vadd.ptx"), "--shapes", "n=a"]) == 2
    assert "--shapes" in capsys.readouterr().err
    assert parse_shapes("n=1,2;m=3") == [{"n": 1, "m": 3}, {"n": 2, "m": 3}]


def test_real_normal_forms_reassociate_distribute_and_apply_the_exponent_law():
    alg = RealAlgebra()
    A = alg.A
    xs = [A.var(f"x[{i}]") for i in range(8)]
    seq = R.ZERO
    for x in xs:
        seq = A.add(seq, x)
    level = list(xs)
    while len(level) > 1:
        level = [A.add(level[i], level[i + 1]) for i in range(0, len(level), 2)]
    assert level[0] == seq
    a, b, c = xs[:3]
    assert A.mul(a, A.add(b, c)) == A.add(A.mul(c, a), A.mul(b, a))
    assert A.mul(A.ex2(a), A.ex2(A.sub(b, a))) == A.ex2(b)
    assert A.ex2(R.ZERO) == R.const(1)
    assert A.maxmin("max", [A.maxmin("max", [a, b]), c]) == A.maxmin("max", [c, A.maxmin("max", [b, a]), R.NEG_INF])
    assert A.round_to("f16", A.add(a, b)) != A.add(a, b)  # a precision downgrade stays visible


def test_tested_inputs_are_replayable_from_the_seed(tmp_path):
    from kverify.verifier.equivalence.engine import buffer_names
    from kverify.verifier.equivalence.testing import differential_test
    from kverify.verifier.equivalence import load_side

    p = BY_NAME["vadd_tail_off_by_one"]
    c = load_side(str(ZOO / p["candidate"]), p["launch"], {"n": 40})
    r = load_side(str(ZOO / p["reference"]), p["launch"], {"n": 40})
    cn, rn = buffer_names(c, r)
    a = differential_test(c, r, cn, rn, "bitexact", 3, 7)
    b = differential_test(c, r, cn, rn, "bitexact", 3, 7)
    assert a["counterexample"]["index"] == b["counterexample"]["index"] == 39
    assert np.array_equal(a["counterexample"]["inputs_arrays"]["a"], b["counterexample"]["inputs_arrays"]["a"],
                          equal_nan=True)
