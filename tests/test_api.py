"""The Python API (kverify.check / run / equiv, kverify.Tensor, Report): launches from Python
values, given inputs, the report's JSON / SARIF / text against the command line's, bad arguments,
and a kernel whose given input makes every CTA return before its barrier (never verified)."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import jsonschema
import numpy as np
import pytest

import kverify
from conftest import official_sarif_schema
from kverify.semantics.ir import KernelError

ROOT = Path(__file__).resolve().parent.parent
ZOO = ROOT / "tests" / "zoo"
EARLY = str(ZOO / "early_exit" / "early_exit.ptx")
RACY = "tests/zoo/reduce_smem/reduce_smem__missing_sync.ptx"


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "kverify", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)


def test_import_kverify_loads_neither_torch_nor_triton_nor_the_checkers():
    code = ("import sys, kverify; kverify.Tensor; kverify.check; "
            "print(sorted(m for m in ('torch', 'triton', 'z3', 'kverify.verifier.check') if m in sys.modules))")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"


def test_given_input_that_returns_before_every_barrier_is_never_verified():
    torch = pytest.importorskip("torch")
    x, out = torch.randn(256), torch.empty(256)
    rep = kverify.check(EARLY, grid=2, block=128, args=(torch.tensor([0], dtype=torch.int32), x, out, 5))
    assert rep.verdict == "inconclusive" and not rep.ok and rep.exit_code == 3
    for oid in ("barrier.named", "deadlock"):
        o = rep.obligation(oid)
        assert o.status == "unknown"
        assert o.message == "not exercised: the run executed none of bar.sync (line 9)"
        assert (o.locations[0].path, o.locations[0].line) == ("early_exit.cu", 9)
    # the same kernel with an input that reaches the barrier
    rep = kverify.check(EARLY, grid=2, block=128, args=(torch.tensor([10], dtype=torch.int32), x, out, 5))
    assert rep.verdict == "verified" and rep.ok
    assert rep.obligation("barrier.named").status == "bounded"


def test_numpy_arrays_placeholders_and_names():
    ctl = np.array([10], np.int32)
    rep = kverify.check(EARLY, grid=2, block=128,
                        args={"ctl": ctl, "in": kverify.Tensor(256, "fp32"), "out": kverify.Tensor((256,), "torch.float32"),
                              "threshold": 5})
    assert rep.verdict == "verified"
    rep = kverify.check(EARLY, grid=2, block=128, args=(np.array([0], np.int32), kverify.Tensor(256, "f32"),
                                                        kverify.Tensor(256, "float"), 5))
    assert rep.verdict == "inconclusive"


def test_given_contents_reach_the_interpreter():
    a = np.arange(1000, dtype=np.float32)
    b = np.full(1000, 2.0, np.float32)
    r = kverify.run(str(ZOO / "vadd" / "vadd.ptx"), grid=4, block=256, args=(a, b, kverify.Tensor(1000), 1000))
    assert r.status == "complete" and not r.findings
    np.testing.assert_array_equal(r.outputs["c"], a + 2.0)


def test_ptx_text_is_accepted_and_written_for_replay():
    text = (ZOO / "reduce_smem" / "reduce_smem__missing_sync.ptx").read_text()
    rep = kverify.check(text, grid=4, block=256, args=(kverify.Tensor(1024), kverify.Tensor(4), 1024))
    assert rep.verdict == "violated"
    o = rep.obligation("race.shared")
    assert o.status == "violated" and o.rule == "race.shared"
    assert Path(rep.kernels[0].path).read_text() == text


@pytest.mark.parametrize("args, message", [
    ((1, 2), "kernel early_exit takes 4 argument(s) (ctl, in, out, threshold), got 2"),
    ({"nope": 1}, "kernel early_exit has no parameter 'nope' (parameters: ctl, in, out, threshold)"),
    ((kverify.Tensor(1, "int32"), kverify.Tensor(256, "float17"), kverify.Tensor(256), 0), "unknown dtype 'float17'"),
    ((object(), None, None, 0), "argument ctl: cannot pass a object"),
])
def test_bad_arguments_are_kernel_errors(args, message):
    with pytest.raises(KernelError) as e:
        kverify.check(EARLY, grid=2, block=128, args=args)
    assert message in str(e.value)


def test_unknown_kernel_name_lists_the_entries():
    with pytest.raises(KernelError, match=r"no kernel 'x' \(entries: early_exit\)"):
        kverify.check(EARLY, grid=1, block=128, args=(None, None, None, 0), kernel_name="x")


def _no_times(d):
    """The report without times and SMT models (z3's model of one query can differ between a
    fresh process and one that ran other queries)."""
    if isinstance(d, dict):
        return {k: _no_times(v) for k, v in d.items() if k not in ("time_s", "smt")}
    if isinstance(d, list):
        return [_no_times(x) for x in d]
    return d


def test_json_and_text_are_the_command_lines():
    manifest = "tests/zoo/reduce_smem/manifest.json"
    rep = kverify.check(RACY, launch=manifest)
    cli = _cli("check", RACY, "--launch", manifest, "--format", "json")
    assert cli.returncode == rep.exit_code == 1
    assert _no_times(rep.to_json()) == _no_times(json.loads(cli.stdout))
    text = _cli("check", RACY, "--launch", manifest).stdout
    strip = lambda s: re.sub(r"\d+\.\d\ds", "T", s)  # noqa: E731
    assert strip(str(rep)) == strip(text)
    assert str(rep).startswith("tests/zoo/reduce_smem/reduce_smem__missing_sync.cu:15:7: error[race.shared]: ")
    assert f"\n{RACY}: kernel reduce_smem: VIOLATED\n" in str(rep)


def test_sarif_has_a_result_per_finding_and_unknown_obligation():
    rep = kverify.check(RACY, launch="tests/zoo/reduce_smem/manifest.json")
    s = rep.to_sarif()
    assert s["version"] == "2.1.0"
    jsonschema.Draft7Validator(official_sarif_schema()).validate(s)
    run = s["runs"][0]
    rules = {r["id"]: r for r in run["tool"]["driver"]["rules"]}
    assert rules["race.shared"]["helpUri"].startswith("https://docs.nvidia.com/cuda/parallel-thread-execution/")
    res = [r for r in run["results"] if r["ruleId"] == "race.shared"]
    assert len(res) == 1 and res[0]["level"] == "error"
    loc = res[0]["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"]["uri"] == "tests/zoo/reduce_smem/reduce_smem__missing_sync.cu"
    assert loc["region"] == {"startLine": 15, "startColumn": 7}
    assert run["tool"]["driver"]["rules"][res[0]["ruleIndex"]]["id"] == "race.shared"
    # an inconclusive report: its unknown obligations are notes
    torch = pytest.importorskip("torch")
    rep = kverify.check(EARLY, grid=2, block=128, args=(torch.zeros(1, dtype=torch.int32), torch.randn(256),
                                                         torch.empty(256), 5))
    s = rep.to_sarif()
    jsonschema.Draft7Validator(official_sarif_schema()).validate(s)
    notes = sorted(r["ruleId"] for r in s["runs"][0]["results"])
    assert notes == ["unknown.barrier.named", "unknown.deadlock"]


def test_check_inputs_npz(tmp_path):
    launch = tmp_path / "launch.json"
    launch.write_text(json.dumps({"kernel": "early_exit", "grid": [2], "block": [128], "args": {"threshold": 5},
                                  "buffers": {"ctl": {"dtype": "int32", "shape": [1]},
                                              "in": {"dtype": "float32", "shape": [256]},
                                              "out": {"dtype": "float32", "shape": [256]}}}))
    for ctl, code, verdict in ((0, 3, "INCONCLUSIVE"), (10, 0, "VERIFIED")):
        npz = tmp_path / f"in{ctl}.npz"
        np.savez(npz, ctl=np.array([ctl], np.int32))
        r = _cli("check", EARLY, "--launch", str(launch), "--inputs", str(npz))
        assert r.returncode == code, r.stdout + r.stderr
        assert f"kernel early_exit: {verdict}" in r.stdout
    r = _cli("check", EARLY, "--launch", str(launch), "--inputs", str(tmp_path / "missing.npz"))
    assert r.returncode == 2 and "cannot read inputs" in r.stderr


@pytest.mark.slow
def test_equiv_through_the_api():
    t = lambda *s: kverify.Tensor(s, "float32")  # noqa: E731
    rep = kverify.equiv(str(ZOO / "gemm_tiled" / "gemm_tiled.ptx"), str(ZOO / "gemm_tiled" / "gemm_naive.ptx"),
                        grid=(1, 1), block=(16, 16), args=(t(16, 16), t(16, 16), t(16, 16), 16, 16, 16))
    assert rep.verdict == "verified", str(rep.to_json())
    assert rep.obligations[0].status == "proved"


def test_assumptions_are_checked_against_the_concrete_arguments():
    t = kverify.Tensor
    args = (np.array([10], np.int32), t(256), t(256), 5)
    assert kverify.check(EARLY, grid=2, block=128, args=args, assume="threshold > 0 and threshold < 8").ok
    with pytest.raises(KernelError, match=r"break the assumption 'threshold % 2 == 0' \(threshold=5\)"):
        kverify.check(EARLY, grid=2, block=128, args=args, assume=["threshold > 0", "threshold % 2 == 0"])
    with pytest.raises(KernelError, match=r"no parameter 'nope' \(the kernel's: "):
        kverify.check(EARLY, grid=2, block=128, args=args, assume="nope > 0")
