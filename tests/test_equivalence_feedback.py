"""kverify equiv, speed and feedback: a pair that differs only by FMA contraction is refuted
under ``bitexact`` by a concrete witness before the solver (and proved under ``real``), the
phases show on stderr (never on stdout), and the messages name outputs as outputs, count the
output elements, and never claim "never written" for an element a kernel wrote."""
import io
import json

import pytest

from conftest import ZOO
from kverify.verifier.cli import main
from kverify.verifier.equivalence import equivalence_report, progress as progress_mod

PAIRS = {p["name"]: p for p in json.loads((ZOO / "equivalence.json").read_text())["pairs"]}
THRESHOLD = {"grid": [2, 1, 1], "block": [64, 1, 1], "args": {"n": 100},
             "buffers": {"x": {"dtype": "float32", "shape": [100]}, "y": {"dtype": "float32", "shape": [100]}}}


def _pair(name, tmp_path, **kw):
    p = PAIRS[name]
    kw.setdefault("model", p["model"])
    kw.setdefault("test_examples", 2)
    rep, results = equivalence_report(str(ZOO / p["candidate"]), str(ZOO / p["reference"]), launch=p["launch"],
                                      ref_launch=p.get("ref_launch", p["launch"]), cex_dir=str(tmp_path), **kw)
    return rep, results[0][1]


def test_fma_contraction_difference_is_refuted_by_a_concrete_witness_before_the_solver(tmp_path, capsys):
    rep, r = _pair("stencil_fma_fmul_rn_vs_naive", tmp_path)
    assert r.verdict == "refuted" and r.model == "bitexact", r.message
    assert r.solver == 0 and r.sym_time_s == 0.0  # neither the solver nor symbolic execution ran
    c = r.counterexample
    assert c["confirmed"] and c["buffer"] == "out" and c["index"] == 11
    assert c["found_by"] == "concrete witness before symbolic execution (input set '1+2^-12')"
    # the store lines, from the interpreter's write shadow
    assert c["candidate_line"].endswith("stencil_tiled__fmul_rn.cu:15")
    assert c["reference_line"].endswith("stencil_naive.cu:10")
    # shrunk to the stencil's three points, +-(1 + 2^-12); the output's initial contents zeroed
    assert set(c["inputs"]) == {"in"} and c["inputs"]["in"]["role"] == "input"
    assert set(c["inputs"]["in"]["nonzero"]) <= {"10", "11", "12"}
    assert {abs(v) for v in c["inputs"]["in"]["nonzero"].values()} == {1.000244140625}
    assert r.elements == 300 and r.outputs == ["out"]
    assert r.time_s < 30  # the 5 s target is measured by bench/bench_equiv.py
    assert rep.obligations[0].status == "violated" and rep.obligations[0].rule == "equivalence.mismatch"
    # the replay compares bit for bit and reproduces the last-bit difference
    assert c["replay"].endswith("--rtol 0 --atol 0")
    capsys.readouterr()
    assert main(c["replay"].split()[1:]) == 1
    assert "differs at flat index 11:" in capsys.readouterr().out


def test_fma_contraction_pair_is_proved_under_the_real_model(tmp_path):
    _, r = _pair("stencil_fma_fmul_rn_vs_naive_real", tmp_path)
    assert r.verdict == "proved" and r.model == "real", r.message
    assert r.structural == r.elements == 300


def test_tiled_stencil_contracted_like_the_naive_one_is_proved_bitexact(tmp_path):
    _, r = _pair("stencil_fma_tiled_vs_naive", tmp_path)
    assert r.verdict == "proved" and r.model == "bitexact", r.message
    assert r.witness_time_s > 0 and r.sym_time_s > 0  # the witnesses found nothing, the proof followed


def test_witnesses_switched_off_reach_the_solver(tmp_path):
    """The same pair without the witnesses: symbolic execution, then the solver gets element
    out[0] (equal except on subnormal inputs, 0.25*x) first."""
    _, r = _pair("stencil_fma_fmul_rn_vs_naive", tmp_path, witnesses=False, timeout_s=0.5, test_examples=0)
    assert r.sym_time_s > 0 and r.solver >= 1
    assert r.verdict == "unknown" and "solver budget (0.5 solver seconds) spent on output element out[0]" in r.message


def test_progress_goes_to_stderr_and_never_into_json_stdout(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(progress_mod, "DELAY_S", 0.0)
    p = PAIRS["stencil_fma_fmul_rn_vs_naive"]
    lc = tmp_path / "l.json"
    lc.write_text(json.dumps(p["launch"]))
    argv = ["equiv", str(ZOO / p["candidate"]), str(ZOO / p["reference"]), "--launch", str(lc), "--ref-launch",
            str(lc), "--fp", "bitexact", "--cex-dir", str(tmp_path), "--format", "json"]
    assert main(argv + ["--progress"]) == 1
    cap = capsys.readouterr()
    out = json.loads(cap.out)  # stdout is the report alone
    ob = out["kernels"][0]["obligations"][0]
    assert ob["equivalence"] == "refuted" and ob["outputs"] == ["out"]
    assert "concrete witnesses before the solver: input set 1/4 (1+2^-12)" in cap.err
    assert "concrete witness found: out[11]: shrinking the inputs" in cap.err
    # a pair that is proved goes through symbolic execution
    q = PAIRS["stencil_fma_tiled_vs_naive"]
    assert main(["equiv", str(ZOO / q["candidate"]), str(ZOO / q["reference"]), "--launch", str(lc), "--ref-launch",
                 str(lc), "--fp", "bitexact", "--format", "json", "--progress"]) == 0
    cap = capsys.readouterr()
    assert json.loads(cap.out)["verdict"] == "verified"
    assert "symbolic execution of the candidate (stencil_tiled): CTA 1/3" in cap.err
    assert "symbolic execution of the reference (stencil_naive): CTA 1/3" in cap.err
    # not a terminal and not asked for: nothing on stderr
    assert main(argv) == 1
    assert capsys.readouterr().err == ""


def test_progress_shows_the_solver_and_testing_phases():
    buf = io.StringIO()
    pr = progress_mod.Progress(stream=buf, delay=0.0)
    pr.update("solver", "element out[0] (1/300 whose terms differ)")
    pr.update("testing", "example 1/8 (uniform [-1, 1])")
    assert buf.getvalue().splitlines()[0].endswith("solver: element out[0] (1/300 whose terms differ)")
    assert "testing: example 1/8" in buf.getvalue().splitlines()[1]
    quiet = progress_mod.Progress(stream=io.StringIO(), delay=5.0)
    quiet.update("solver")
    assert quiet.lines == 0  # a quick answer shows no progress


def test_a_difference_found_by_testing_does_not_claim_never_written(tmp_path, capsys):
    """Both kernels write every y[i]; the real model stops at the data-dependent select, so
    testing finds the difference. The store lines then come from the interpreter's race
    shadow, not "candidate never written, reference never written"."""
    f = [str(ZOO / "threshold" / "threshold__wrong_cut.ptx"), str(ZOO / "threshold" / "threshold.ptx")]
    rep, results = equivalence_report(*f, launch=THRESHOLD, ref_launch=THRESHOLD, model="real",
                                      cex_dir=str(tmp_path), test_examples=4)
    r = results[0][1]
    assert r.verdict == "refuted", r.message
    assert r.elements == 100 and r.outputs == ["y"]  # not "0 output elements"
    c = r.counterexample
    assert c["buffer"] == "y" and c["lines_known"] is True
    assert c["candidate_line"].endswith("threshold__wrong_cut.cu:5") and c["reference_line"].endswith("threshold.cu:5")
    # the outputs are the buffers the kernels store to (the launch names none): x is an input
    assert r.tested["outputs"] == ["y"] and r.tested["input_mutation_checked"] == ["x"]
    # shrunk to the one element that matters
    assert c["inputs"]["x"]["nonzero_count"] == 1 and list(c["inputs"]["x"]["nonzero"]) == [str(c["index"])]
    lc = tmp_path / "l.json"
    lc.write_text(json.dumps(THRESHOLD))
    capsys.readouterr()
    assert main(["equiv", *f, "--launch", str(lc), "--ref-launch", str(lc), "--cex-dir", str(tmp_path)]) == 1
    text = capsys.readouterr().out
    assert "never written" not in text and " 0 output elements" not in text
    assert "100 output elements (y)" in text
    assert "lines: candidate threshold__wrong_cut.cu:5, reference threshold.cu:5" in text


def test_outputs_default_to_the_buffers_the_kernels_store_to(tmp_path, capsys):
    launch = dict(PAIRS["vadd_tail_off_by_one"]["launch"], args={"n": 300})
    launch.pop("outputs")
    f = [str(ZOO / "vadd" / "vadd__tail_off_by_one.ptx"), str(ZOO / "vadd" / "vadd.ptx")]
    _, results = equivalence_report(*f, launch=launch, ref_launch=launch, model="bitexact", cex_dir=str(tmp_path))
    r = results[0][1]
    assert r.verdict == "refuted" and r.outputs == ["c"] and r.elements == 300  # not a, b and c (900)
    c = r.counterexample
    assert c["buffer"] == "c" and c["index"] == 299
    # the candidate really never writes c[299]; its initial contents are labelled as an output's
    assert c["candidate_line"] == "never written" and c["reference_line"].endswith("vadd.cu:8")
    assert all(d["role"] == ("output (initial contents)" if n == "c" else "input") for n, d in c["inputs"].items())
    lc = tmp_path / "l.json"
    lc.write_text(json.dumps(launch))
    capsys.readouterr()
    main(["equiv", *f, "--launch", str(lc), "--ref-launch", str(lc), "--fp", "bitexact", "--cex-dir", str(tmp_path)])
    text = capsys.readouterr().out
    assert "input c" not in text and "output c, initial contents: nonzero" in text


@pytest.mark.parametrize("name", ["stencil_fma_tiled_vs_naive", "stencil_fma_fmul_rn_vs_naive_real",
                                  "stencil_fma_fmul_rn_vs_naive"])
def test_the_fma_stencil_pairs_are_in_the_zoo_with_their_verdicts(name):
    p = PAIRS[name]
    assert (ZOO / p["candidate"]).exists() and (ZOO / p["reference"]).exists()
    assert p["expect"] == ("refuted" if name == "stencil_fma_fmul_rn_vs_naive" else "proved")
    if p["expect"] == "refuted":
        assert p["target_s"] == 5 and p["cex_buffer"] == "out" and p["cex_index"] == 11


def test_witness_input_sets_after_symbolic_execution_catch_integer_overflow(tmp_path):
    """(a + b) >> 1 in 32 bits against the 64-bit mean: the small integers of the first input
    set agree, so symbolic execution runs; the terms differ and the full-range input set,
    tried before the solver, shows the wrap-around."""
    rep, r = _pair("midpoint_overflow", tmp_path)
    assert r.verdict == "refuted" and r.model == "int", r.message
    assert r.sym_time_s > 0 and r.solver == 0
    c = r.counterexample
    assert c["buffer"] == "m" and c["index"] == 2
    assert c["found_by"] == "concrete witness before the solver (input set 'full mantissas')"
    assert c["candidate_line"].endswith("midpoint__overflow.cu:5") and c["reference_line"].endswith("midpoint.cu:4")
    assert {n: d["nonzero_count"] for n, d in c["inputs"].items()} == {"a": 1, "b": 1}
    a, b = c["inputs"]["a"]["nonzero"]["2"], c["inputs"]["b"]["nonzero"]["2"]
    assert not -2**31 <= a + b < 2**31  # the sum overflows
    assert c["reference_value"] == (a + b) >> 1


def test_overflow_free_midpoint_is_proved_by_the_solver(tmp_path):
    _, r = _pair("midpoint_halves_vs_wide", tmp_path)
    assert r.verdict == "proved", r.message
    assert r.solver == r.elements == 128 and r.structural == 0


def test_progress_on_a_terminal_redraws_one_line_and_erases_it():
    class Tty(io.StringIO):
        def isatty(self):
            return True

    t = Tty()
    pr = progress_mod.Progress(stream=t, delay=0.0)
    pr.update("symbolic execution of the candidate (k)", "CTA 1/4")
    pr.update("solver", "element out[0] (1/2 whose terms differ)")
    pr.clear()
    v = t.getvalue()
    assert "\n" not in v and v.count("\r\x1b[K") == 3 and v.endswith("\r\x1b[K")
    assert "symbolic execution of the candidate (k): CTA 1/4" in v and "solver: element out[0]" in v


def test_fma_contraction_in_a_tiled_2d_stencil(tmp_path):
    """The 5-point 2D stencil: the tiled kernel written like the naive one is proved bitexact,
    the __fmul_rn one is refuted with the inputs shrunk to a 3x3 box around out[0, 2] (the
    row below is 24 flat indices away), and proved under the real model."""
    _, r = _pair("stencil2d_fma_tiled_vs_naive", tmp_path)
    assert r.verdict == "proved" and r.elements == 480, r.message
    _, r = _pair("stencil2d_fma_fmul_rn_vs_naive", tmp_path)
    assert r.verdict == "refuted", r.message
    c = r.counterexample
    assert c["buffer"] == "out" and c["index_nd"] == [0, 2] and c["mismatches"] == 3
    assert c["candidate_line"].endswith("stencil2d_tiled__fmul_rn.cu:17")
    assert c["reference_line"].endswith("stencil2d_naive.cu:14")
    assert set(c["inputs"]) == {"in"} and {int(i) for i in c["inputs"]["in"]["nonzero"]} <= {1, 2, 3, 25, 26, 27}
    _, r = _pair("stencil2d_fma_fmul_rn_vs_naive_real", tmp_path)
    assert r.verdict == "proved" and r.structural == 480
