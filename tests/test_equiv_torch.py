"""kverify equiv against a PyTorch reference (``--ref torch:MODULE:FN``, ``kverify.equiv(reference=fn)``):
the zoo's kernels proved against torch.add / torch.matmul / torch.softmax / layer_norm under the
real model, their seeded-bug twins refuted with counterexamples confirmed by the interpreter and
by torch on the CPU, the binding's errors, and the operator table's normal forms."""
import json
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch references need PyTorch (optional; not installed)")

import kverify  # noqa: E402
from kverify.verifier.cli import main  # noqa: E402
from kverify.verifier.equivalence import equivalence_report, load_side  # noqa: E402
from kverify.verifier.equivalence.algebra import RealAlgebra  # noqa: E402
from kverify.verifier.equivalence.torchref import TorchReference, TorchUnsupported  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
ZOO = ROOT / "tests" / "zoo"
PAIRS = {p["name"]: p for p in json.loads((ZOO / "equivalence.json").read_text())["pairs"]
         if p["reference"].startswith("torch:")}
LN = ZOO / "layernorm"
LN_REF = f"torch:{LN / 'ref.py'}:layer_norm"
BIND = "x=0,weight=1,bias=2"


def _ref(p):
    return "torch:" + str(ZOO / p["reference"][len("torch:"):])


def _pair(name, tmp_path, **kw):
    p = PAIRS[name]
    rep, results = equivalence_report(str(ZOO / p["candidate"]), _ref(p), launch=p["launch"], model=p["model"],
                                      cex_dir=str(tmp_path), test_examples=2, bind=p.get("bind"), **kw)
    return p, rep, results[0][1]


@pytest.mark.parametrize("name", [n for n, p in PAIRS.items() if p["expect"] == "proved"])
def test_kernel_is_proved_equal_to_its_torch_reference_in_the_real_model(name, tmp_path):
    p, rep, r = _pair(name, tmp_path)
    assert r.verdict == "proved", r.message
    assert r.model == "real" and rep.verdict == "verified"
    assert r.elements == r.structural > 0 and r.counterexample is None
    assert "torch reference" in r.scope
    o = rep.obligations[0].to_json()
    assert o["status"] == "proved" and o["equivalence"] == "proved" and o["model"] == "real"
    # every candidate store line corresponds to the torch line computing the same terms
    assert o["correspondence"] and all(ref.endswith(".py:" + ref.rsplit(":", 1)[1]) for c in o["correspondence"]
                                       for ref in c["reference"])


@pytest.mark.parametrize("name", [n for n, p in PAIRS.items() if p["expect"] == "refuted"])
def test_seeded_bug_is_refuted_against_torch_with_a_confirmed_replayable_counterexample(name, tmp_path, capsys):
    p, rep, r = _pair(name, tmp_path)
    assert r.verdict == "refuted", r.message
    assert rep.verdict == "violated" and rep.obligations[0].rule == "equivalence.mismatch"
    c = r.counterexample
    assert c["confirmed"] and c["buffer"] == p["cex_buffer"] and c["index"] == p["cex_index"]
    cand_line, ref_line = p["cex_lines"]
    assert c["candidate_line"].endswith(cand_line) and c["reference_line"].endswith(ref_line)
    assert "reference" not in c["launch"]  # a torch reference has no launch
    # the inputs file carries torch's outputs: torch on the CPU computes them from the same inputs
    with np.load(c["inputs_file"]["candidate"]) as z:
        arrays = {k: z[k] for k in z.files}
    expected = arrays[f"expected__{c['buffer']}"].reshape(-1)
    assert expected[c["index"]] == pytest.approx(c["reference_value"])
    # the candidate's replay on the interpreter shows the difference at the same element
    capsys.readouterr()
    assert main(c["replay"].split()[1:]) == 1
    assert f"differs at flat index {p['cex_index']}:" in capsys.readouterr().out
    # and the torch side's replay prints the reference value
    from kverify.verifier.equivalence.torchref import main as torch_main

    assert torch_main(c["replay_reference"].split()[3:]) == 0
    assert f"{c['buffer']}[{c['index']}] = {c['reference_value']!r}" in capsys.readouterr().out


def test_cli_ref_torch_module_file_with_bind_proves_the_triton_layer_norm(tmp_path, capsys):
    rc = main(["equiv", str(LN / "layernorm.ptx"), "--ref", LN_REF, "--bind", BIND, "--format", "json",
               "--cex-dir", str(tmp_path)])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["verdict"] == "verified"
    ob = out["kernels"][0]["obligations"][0]
    assert ob["equivalence"] == "proved" and ob["model"] == "real"
    assert ob["correspondence"][0]["candidate"].endswith("generate.py:60")
    assert ob["correspondence"][0]["reference"] == ["tests/zoo/layernorm/ref.py:18"]


def test_the_twin_is_refuted_from_the_command_line(tmp_path, capsys):
    rc = main(["equiv", str(LN / "layernorm__var_unbiased.ptx"), LN_REF, "--bind", BIND, "--cex-dir", str(tmp_path),
               "--launch", str(LN / "layernorm__var_unbiased.launch.json")])
    text = capsys.readouterr().out
    assert rc == 1 and "refuted" in text and "generate.py:76" in text and "ref.py:18" in text
    assert "replay: kverify run" in text and "reference: python -m kverify.verifier.equivalence.torchref" in text


def test_python_api_takes_a_callable_reference(tmp_path):
    def add(a, b):
        return {"c": a + b}

    launch = PAIRS["vadd_vs_torch_add"]["launch"]
    rep = kverify.equiv(str(ZOO / "vadd" / "vadd.ptx"), add, launch=launch, cex_dir=str(tmp_path))
    assert rep.verdict == "verified" and rep.obligations[0].equivalence == "proved"
    rep = kverify.equiv(str(ZOO / "vadd" / "vadd.ptx"), lambda a, b: a - b, launch=launch, cex_dir=str(tmp_path))
    o = rep.obligations[0]
    assert rep.verdict == "violated" and o.counterexample["buffer"] == "c" and o.counterexample["confirmed"]


def test_python_api_binds_a_callable_to_a_launch_given_as_arrays(tmp_path):
    n = 300
    a, b, c = (np.zeros(n, np.float32) for _ in range(3))
    rep = kverify.equiv(str(ZOO / "vadd" / "vadd.ptx"), lambda a, b: torch.add(a, b), grid=2, block=256,
                        args=(a, b, c, n), cex_dir=str(tmp_path))
    o = rep.obligations[0]
    assert o.equivalence == "proved" and o.model == "real" and "grid 2x1x1 block 256x1x1" in o.scope
    with pytest.raises(kverify.api.KernelError, match="matches no parameter"):
        kverify.equiv(str(ZOO / "vadd" / "vadd.ptx"), lambda x, y: x + y, grid=2, block=256, args=(a, b, c, n))


def test_an_operator_outside_the_table_is_unknown_naming_it_and_the_line_then_tested(tmp_path):
    launch = PAIRS["triton_layernorm_vs_torch"]["launch"]
    rep, results = equivalence_report(str(LN / "layernorm.ptx"), f"torch:{LN / 'ref.py'}:layer_norm_unsupported_op",
                                      launch=launch, cex_dir=str(tmp_path), test_examples=2, bind=BIND)
    r = results[0][1]
    assert r.verdict == "tested", r.message
    assert "aten.erf" in r.message and "tests/zoo/layernorm/ref.py:25" in r.message
    assert r.tested["examples"] == 2 and rep.verdict == "inconclusive"


def test_bitexact_against_torch_is_never_a_proof(tmp_path):
    p = PAIRS["vadd_vs_torch_add"]
    rep, results = equivalence_report(str(ZOO / p["candidate"]), _ref(p), launch=p["launch"], model="bitexact",
                                      cex_dir=str(tmp_path), test_examples=2)
    r = results[0][1]
    assert r.verdict == "tested" and "real model only" in r.message
    assert rep.obligations[0].status == "unknown"


@pytest.mark.parametrize("argv, msg", [
    (["--ref", LN_REF], "parameter 'x' of layer_norm matches no parameter of kernel layernorm_kernel"),
    (["--ref", "torch:nothing"], "expected torch:MODULE:FN"),
    (["--ref", "torch:tests/zoo/layernorm/missing.py:f"], "no such file"),
    (["--ref", f"torch:{LN / 'ref.py'}:nope", "--bind", BIND], "has no function 'nope'"),
    (["--ref", LN_REF, "--bind", "x"], "--bind expects NAME=PARAM"),
    (["--ref", LN_REF, "--bind", BIND, "--ref-launch", "{}"], "--ref-launch has no meaning"),
    ([], "a reference is required"),
])
def test_bad_torch_references_are_usage_errors_with_a_location(argv, msg, capsys):
    assert main(["equiv", str(LN / "layernorm.ptx"), *argv]) == 2
    err = capsys.readouterr().err
    assert msg in err and "Traceback" not in err
    if "matches no parameter" in msg:
        assert "ref.py:15:1:" in err and "--bind x=PARAM" in err


# ------------------------------------------------------------------ the operator table


M = N = K = 8


@pytest.fixture(scope="module")
def side():
    launch = {"grid": [1, 1, 1], "block": [16, 16, 1], "args": {"M": M, "N": N, "K": K},
              "buffers": {"A": {"dtype": "float32", "shape": [M, K]}, "B": {"dtype": "float32", "shape": [K, N]},
                          "C": {"dtype": "float32", "shape": [M, N]}}, "outputs": ["C"]}
    return load_side(str(ZOO / "gemm_tiled" / "gemm_naive.ptx"), launch, {})


def _terms(fn, side, alg):
    names = {"A": "A", "B": "B", "C": "C"}
    return [v for v, _ in TorchReference(fn, side).symbolic_run(alg, names, "t").output_terms()["C"]]


def _same(f, g, side):
    alg = RealAlgebra()
    return _terms(f, side, alg) == _terms(g, side, alg)


def test_rms_norm_is_its_decomposition(side):
    assert _same(lambda A: torch.nn.functional.rms_norm(A, (K,), eps=1e-6),
                 lambda A: A * torch.rsqrt(A.pow(2).mean(-1, keepdim=True) + 1e-6), side)


def test_layer_norm_is_mean_and_biased_variance(side):
    def manual(A, B):
        m = A.mean(-1, keepdim=True)
        var = ((A - m) * (A - m)).sum(-1, keepdim=True) / K
        return (A - m) / torch.sqrt(var + 1e-5) * B[0] + B[1]
    assert _same(lambda A, B: torch.nn.functional.layer_norm(A, (K,), B[0], B[1], eps=1e-5), manual, side)
    assert not _same(lambda A, B: torch.nn.functional.layer_norm(A, (K,), B[0], B[1], eps=1e-3), manual, side)


def test_softmax_and_log_softmax_are_their_definitions(side):
    assert _same(lambda A: torch.softmax(A, -1),
                 lambda A: torch.exp(A - A.amax(-1, keepdim=True)) /
                 torch.exp(A - A.amax(-1, keepdim=True)).sum(-1, keepdim=True), side)
    assert _same(lambda A: torch.log_softmax(A, 1),
                 lambda A: A - A.max(1, keepdim=True).values -
                 torch.log(torch.exp(A - A.max(1, keepdim=True).values).sum(1, keepdim=True)), side)


def test_matmul_views_and_broadcasts(side):
    assert _same(lambda A, B: A @ B, lambda A, B: (A.unsqueeze(2) * B.unsqueeze(0)).sum(1), side)
    assert _same(lambda A, B: torch.bmm(A.unsqueeze(0), B.unsqueeze(0)).squeeze(0),
                 lambda A, B: (B.t() @ A.t()).transpose(0, 1), side)
    assert _same(lambda A: A.reshape(4, 16).permute(1, 0).contiguous().view(16, 4).t().reshape(8, 8),
                 lambda A: A.reshape(4, 16).permute(1, 0).reshape(16, 4).permute(1, 0).reshape(8, 8), side)
    assert _same(lambda A: A[:, :1].expand(M, N) + 0, lambda A: A[:, 0:1] * torch.ones(M, N), side)


def test_a_cast_to_half_stays_visible(side):
    assert not _same(lambda A: A.half().float(), lambda A: A, side)
    assert _same(lambda A: A.half().float(), lambda A: A.to(torch.float16).to(torch.float32), side)
    assert _same(lambda A: A.float().contiguous(), lambda A: A, side)  # no narrowing: no round atom


def test_where_and_masks_on_constants_are_exact(side):
    causal = lambda A: torch.where(torch.ones(M, N, dtype=torch.bool).tril(), A, 0.0)  # noqa: E731
    assert _same(causal, lambda A: A.tril(), side)
    assert _same(lambda A: A.masked_fill(torch.ones(M, N).triu(1) > 0, float("-inf")).amax(-1, keepdim=True)
                 .expand(M, N) * 1,
                 lambda A: torch.stack([A[i, :i + 1].amax() for i in range(M)]).unsqueeze(1).expand(M, N) * 1, side)


def test_a_comparison_on_input_data_is_unsupported_with_its_line(side):
    def relu_by_where(A):
        return torch.where(A > 0, A, 0.0)
    with pytest.raises(TorchUnsupported) as e:
        _terms(relu_by_where, side, RealAlgebra())
    assert "depends on input data" in str(e.value) and e.value.instr.loc.line == relu_by_where.__code__.co_firstlineno + 1
    assert _same(lambda A: torch.relu(A), lambda A: torch.maximum(A, torch.zeros(M, N)), side)
