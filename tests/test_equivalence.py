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
    rep, results = equivalence_report(str(ZOO / p["candidate"]), _reference(p), launch=p["launch"],
                                      ref_launch=_ref_launch(p), model=p["model"],
                                      cex_dir=str(tmp_path), test_examples=2, bind=p.get("bind"), **kw)
    return rep, results[0][1]


def _reference(p):
    """A kernel path, or ``torch:MODULE:FN`` with MODULE relative to the zoo."""
    r = p["reference"]
    return "torch:" + str(ZOO / r[len("torch:"):]) if r.startswith("torch:") else str(ZOO / r)


def _ref_launch(p):
    return None if p["reference"].startswith("torch:") else p.get("ref_launch", p["launch"])


PROVED = [p for p in PAIRS if p["expect"] == "proved"]
REFUTED = [p for p in PAIRS if p["expect"] == "refuted"]


def _sweep(pairs):
    """The pairs as parameters: the first two in the fast subset, the others marked slow (a pair
    with a torch reference is skipped where PyTorch is not installed)."""
    try:
        import torch  # noqa: F401
        have_torch = True
    except ImportError:
        have_torch = False

    def marks(i, p):
        m = [] if i < 2 else [pytest.mark.slow]
        if p["reference"].startswith("torch:"):
            m.append(pytest.mark.skipif(not have_torch, reason="a torch reference needs PyTorch (not installed)"))
        return m
    return [pytest.param(p, id=p["name"], marks=marks(i, p)) for i, p in enumerate(pairs)]


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
    # the candidate's name for the buffer (buffers paired by position keep their own names)
    ref_bufs, cand_bufs = list(pair.get("ref_launch", pair["launch"])["buffers"]), list(pair["launch"]["buffers"])
    shown = c["buffer"] if c["buffer"] in cand_bufs else cand_bufs[ref_bufs.index(c["buffer"])]
    assert f"{shown} differs" in out
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


# ---------------------------------------------------------------------- tensor cores (wgmma, mma.sync)
TENSOR_CORE = {
    # pair: (expected verdict, counterexample (buffer, flat index, candidate line, reference line) or None)
    "mma_sync_gemm_vs_naive": ("proved", None),
    "mma_sync_gemm_skip_last_k": ("refuted", ("C", 0, "mma_gemm__skip_last_k.cu:39", "gemm_naive_f16.cu:12")),
    "triton_wgmma_matmul_vs_naive": ("proved", None),
    "triton_wgmma_matmul_wrong_b_offset": ("refuted", ("C", 0, "tests/zoo/triton/generate.py:87",
                                                       "gemm_naive_f16.cu:12")),
    # Triton for sm_80: cp.async + ldmatrix(.trans) + mma.sync
    "triton_sm80_mma_matmul_vs_naive": ("proved", None),
    "triton_sm80_mma_matmul_b_not_transposed": ("refuted", ("C", 0, "tests/zoo/triton/generate.py:87",
                                                            "gemm_naive_f16.cu:12")),
}


@pytest.mark.parametrize("name", [pytest.param(n, marks=() if n.startswith("mma") else pytest.mark.slow)
                                  for n in TENSOR_CORE])  # the Triton pairs take longer
def test_tensor_core_gemm_is_proved_and_its_seeded_bug_refuted_under_real(name, tmp_path, capsys):
    """wgmma.mma_async (Triton tl.dot for sm_90a, m64n64k16, descriptors from shared memory)
    and mma.sync.m16n8k16 (our CUDA with f16x2 fragments packed from global loads; Triton
    for sm_80 with ldmatrix) are exact dot products in the real model: the tiled
    tensor-core GEMM has the naive GEMM's normal form."""
    pair = BY_NAME[name]
    verdict, cex = TENSOR_CORE[name]
    rep, r = _run_pair(pair, tmp_path)
    assert (r.verdict, r.model) == (verdict, "real"), r.message
    if cex is None:
        assert r.message.startswith(f"all {r.elements} output elements equal")
        shape = pair["ref_launch"]["args"]
        assert r.elements == shape["M"] * shape["N"]
        assert r.counterexample is None and rep.verdict == "verified"
        return
    c = r.counterexample
    assert c["confirmed"] and (c["buffer"], c["index"]) == cex[:2]
    assert c["candidate_line"].endswith(cex[2]) and c["reference_line"].endswith(cex[3])
    capsys.readouterr()
    assert main(c["replay"].split()[1:]) == 1
    assert f"differs at flat index {cex[1]}:" in capsys.readouterr().out


def test_tensor_core_sum_under_bitexact_is_unknown_not_tested(tmp_path, capsys):
    """The ISA leaves a tensor-core sum's accumulation order open: no bit-exact proof, and no
    bit-level testing either (the interpreter's order would be one arbitrary choice)."""
    pair = BY_NAME["mma_sync_gemm_vs_naive"]
    rep, results = equivalence_report(str(ZOO / pair["candidate"]), str(ZOO / pair["reference"]),
                                      launch=pair["launch"], ref_launch=pair["ref_launch"], model="bitexact",
                                      cex_dir=str(tmp_path), test_examples=2)
    r = results[0][1]
    assert (r.verdict, r.model, r.tested) == ("unknown", "bitexact", None)
    assert "accumulation order of a tensor-core sum is not specified by the ISA" in r.message
    assert "use --fp real" in r.message and "mma_gemm.cu:" in r.message
    assert rep.obligations[0].status == "unknown" and rep.verdict == "inconclusive"
    lc, lr = tmp_path / "c.json", tmp_path / "r.json"
    lc.write_text(json.dumps(pair["launch"]))
    lr.write_text(json.dumps(pair["ref_launch"]))
    capsys.readouterr()
    rc = main(["equiv", str(ZOO / pair["candidate"]), str(ZOO / pair["reference"]), "--launch", str(lc),
               "--ref-launch", str(lr), "--fp", "int"])
    assert rc == 3 and "no int result exists): use --fp real" in capsys.readouterr().out


TENSOR_CORE_FORMS = ["wgmma_tile_vs_naive", "wgmma_a_in_registers_vs_naive", "wgmma_f16_accumulator_vs_naive",
                     "mma_sync_m16n8k8_vs_naive", "mma_sync_m16n8k8_tf32_vs_naive", "mma_sync_m16n8k16_bf16_vs_naive",
                     "ldmatrix_stmatrix_trans_vs_transpose"]


@pytest.mark.parametrize("name", TENSOR_CORE_FORMS)
def test_tensor_core_instruction_forms_are_proved_against_the_naive_gemm(name, tmp_path):
    """The layouts shared with the interpreter (no-swizzle descriptors, A in registers, f16
    accumulators two per register, the m16n8k8 fragments) give the naive GEMM's terms; a wrong
    layout rule would pair the wrong products and fail the proof."""
    pair = BY_NAME[name]
    rep, r = _run_pair(pair, tmp_path)
    assert (r.verdict, r.model) == ("proved", pair["model"]), r.message
    assert r.structural + r.solver == r.elements > 0 and (r.structural == r.elements or pair["model"] != "real")


@pytest.mark.parametrize("kernel", ["wgmma_areg", "wgmma_f16acc", "mma_m16n8k8", "mma_m16n8k8_tf32",
                                    "mma_m16n8k16_bf16"])
def test_interpreter_runs_the_tensor_core_forms_like_numpy(kernel):
    """The interpreter, which confirms every refutation, computes the same products (same
    shared layout functions): random small integers, compared exactly with numpy."""
    from kverify.launch import LaunchSpec
    from kverify.semantics.interpreter import run_kernel
    from kverify.semantics.ir.load import load_module

    pair = BY_NAME[{"wgmma_areg": "wgmma_a_in_registers_vs_naive", "wgmma_f16acc": "wgmma_f16_accumulator_vs_naive",
                    "mma_m16n8k8": "mma_sync_m16n8k8_vs_naive", "mma_m16n8k8_tf32": "mma_sync_m16n8k8_tf32_vs_naive",
                    "mma_m16n8k16_bf16": "mma_sync_m16n8k16_bf16_vs_naive"}[kernel]]
    launch = dict(pair["launch"])
    path = ZOO / pair["candidate"]
    m = load_module(str(path))
    names = list(launch["buffers"])
    rng = np.random.default_rng(7)
    in_dt = np.float32 if launch["buffers"][names[0]]["dtype"] == "float32" else np.float16
    a = rng.integers(-3, 4, launch["buffers"][names[0]]["shape"]).astype(in_dt)
    b = rng.integers(-3, 4, launch["buffers"][names[1]]["shape"]).astype(in_dt)
    out_dt = np.float16 if launch["buffers"][names[2]]["dtype"] == "float16" else np.float32
    spec = LaunchSpec.from_dict(launch)
    if launch["buffers"][names[0]]["dtype"] == "bfloat16":  # bf16 arrays are their uint16 bit patterns
        a, b = (x.astype(np.float32) for x in (a, b))
        ins = [(x.view(np.uint32) >> 16).astype(np.uint16) for x in (a, b)]
    else:
        ins = [a, b]
    r = run_kernel(m, m.kernel(kernel), spec, inputs={names[0]: ins[0], names[1]: ins[1],
                                                       names[2]: np.zeros(launch["buffers"][names[2]]["shape"], out_dt)})
    assert r.status == "complete", r.reason
    want = (a.astype(np.float64) @ b.astype(np.float64)).astype(out_dt)
    np.testing.assert_array_equal(np.asarray(r.outputs[names[2]]).reshape(want.shape), want)


INT_MMA = """.version 8.0
.target sm_90a
.address_size 64
.visible .entry imma(.param .u64 p)
{
  .reg .b32 %r<8>;
  .reg .b64 %rd<3>;
  ld.param.u64 %rd1, [p];
  cvta.to.global.u64 %rd2, %rd1;
  ld.global.u32 %r1, [%rd2];
  mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%r2, %r3, %r4, %r5}, {%r1, %r1, %r1, %r1}, {%r1, %r1}, {%r1, %r1, %r1, %r1};
  bar.sync 0;
  st.global.u32 [%rd2], %r2;
  ret;
}
"""


@pytest.mark.parametrize("model", ["int", "real"])
def test_integer_mma_is_exact_in_the_int_model_and_unknown_in_the_real_one(model, tmp_path):
    """Integer mma.sync is computed exactly under --fp int (tests/test_int_mma_equiv.py has the
    zoo kernels); under real, where integer data is opaque, it stops with the reason and the line."""
    path = tmp_path / "imma.ptx"
    path.write_text(INT_MMA)
    launch = {"grid": [1, 1, 1], "block": [32, 1, 1], "buffers": {"p": {"dtype": "int32", "shape": [1]}},
              "outputs": ["p"]}
    rep, results = equivalence_report(str(path), str(path), launch=launch, ref_launch=launch, model=model,
                                      cex_dir=str(tmp_path), test_examples=1)
    r = results[0][1]
    if model == "int":
        assert r.verdict == "proved", r.message
        return
    assert r.verdict in ("unknown", "tested"), r.message
    assert "an integer tensor-core sum on integer data (the real model keeps integer data opaque): use --fp int" \
        in r.message
    assert "line 11 (mma.sync.aligned.m16n8k32" in r.message


@pytest.mark.parametrize("name", ["triton_sm80_mma_matmul_vs_naive", "mma_sync_gemm_vs_naive"])
def test_interpreter_runs_the_mma_sync_gemms_like_numpy(name):
    """The interpreter (ldmatrix with and without .trans, mma.sync fragments from the layout
    functions shared with the symbolic engine) computes A.B exactly on small integers."""
    from kverify.semantics.interpreter import run_kernel
    from kverify.verifier.equivalence import load_side

    pair = BY_NAME[name]
    side = load_side(str(ZOO / pair["candidate"]), json.dumps(pair["launch"]), {})
    bufs = list(pair["launch"]["buffers"])
    args = pair["ref_launch"]["args"]
    rng = np.random.default_rng(3)
    a = rng.integers(-3, 4, (args["M"], args["K"])).astype(np.float16)
    b = rng.integers(-3, 4, (args["K"], args["N"])).astype(np.float16)
    r = run_kernel(side.module, side.kernel, side.spec,
                   inputs={bufs[0]: a, bufs[1]: b, bufs[2]: np.zeros((args["M"], args["N"]), np.float32)})
    assert r.status == "complete", r.reason
    np.testing.assert_array_equal(np.asarray(r.outputs[bufs[2]]).reshape(args["M"], args["N"]),
                                  (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32))


def test_fp8_operand_constants_have_their_ocp_values():
    """fp8 wgmma operands that are constants (zero fill, literals) are read as OCP FP8 values."""
    from fractions import Fraction

    from kverify.verifier.equivalence.algebra import ModelUnsupported
    from kverify.verifier.equivalence.symexec.tensorcore import _fp8_value

    assert _fp8_value(0x38, "e4m3") == 1 and _fp8_value(0x7E, "e4m3") == 448 and _fp8_value(0xB8, "e4m3") == -1
    assert _fp8_value(0x01, "e4m3") == Fraction(1, 512) and _fp8_value(0x3C, "e5m2") == 1
    assert _fp8_value(0x7B, "e5m2") == 57344 and _fp8_value(0x01, "e5m2") == Fraction(1, 1 << 16)
    for bits, fmt in ((0x7F, "e4m3"), (0x7C, "e5m2"), (0x7E, "e5m2")):
        with pytest.raises(ModelUnsupported):
            _fp8_value(bits, fmt)


def test_interpreter_ldmatrix_then_stmatrix_trans_transposes():
    from kverify.semantics.interpreter import run_kernel
    from kverify.verifier.equivalence import load_side

    pair = BY_NAME["ldmatrix_stmatrix_trans_vs_transpose"]
    side = load_side(str(ZOO / pair["candidate"]), json.dumps(pair["launch"]), {})
    x = np.arange(64, dtype=np.float16).reshape(8, 8)
    r = run_kernel(side.module, side.kernel, side.spec, inputs={"in": x, "out": np.zeros((8, 8), np.float16)})
    assert r.status == "complete", r.reason
    np.testing.assert_array_equal(np.asarray(r.outputs["out"]).reshape(8, 8), x.T)
