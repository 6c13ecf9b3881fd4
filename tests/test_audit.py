"""kverify audit: per-line rows, evidence, summary and the three renderings on a TMA+mbarrier
kernel (correct and seeded-bug twin) and a Triton kernel against a CUDA reference."""
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ZOO = os.path.join(ROOT, "tests", "zoo")


def audit(*argv):
    env = {**os.environ, "PYTHONPATH": ROOT}
    p = subprocess.run([sys.executable, "-m", "kverify", "audit", *argv], capture_output=True, text=True, env=env,
                       cwd=ROOT)
    return p.returncode, p.stdout, p.stderr


def row(doc, line):
    return next(r for r in doc["rows"] if r["line"] == line)


def test_tma_bug_rows_and_evidence():
    rc, out, _ = audit("tests/zoo/tma_tensor_load/tma_tensor_load__read_before_wait.ptx", "--format", "json")
    assert rc == 1
    doc = json.loads(out)
    assert doc["summary"]["verdict"] == "violated"
    r = row(doc, "tma_tensor_load__read_before_wait.cu:87")
    assert r["status"] == "violated"
    assert {"race.async-pending", "uninitialized"} <= {f["rule"] for f in r["findings"]}
    assert all(f["severity"] == "error" for f in r["findings"])
    # the run's evidence: warp 3 reads after the __syncthreads only, with no mbarrier wait before it
    ev = [e for e in r["evidence"] if e.startswith("warp 3 ")]
    assert ev and "bar.sync (tma_tensor_load__read_before_wait.cu:76" in ev[0] and "mbarrier.try_wait" not in ev[0]
    assert any(c["replay"].startswith("kverify run tests/zoo/tma_tensor_load/") for c in doc["counterexamples"])
    kinds = {e["kind"] for e in doc["timeline"]["events"]}
    assert {"issue", "complete", "phase", "access"} <= kinds


def test_tma_correct_evidence_names_the_wait():
    rc, out, _ = audit("tests/zoo/tma_tensor_load/tma_tensor_load.ptx", "--format", "json")
    doc = json.loads(out)
    assert doc["summary"]["verdict"] == "verified", doc["summary"]
    assert rc == 0
    reads = [r for r in doc["rows"] if "load shared::cta" in r["accesses"]]
    assert reads and all(r["status"] in ("proved", "bounded") for r in reads)
    assert any("mbarrier.try_wait" in e for r in reads for e in r["evidence"])


TRITON_LAUNCH = json.dumps({"grid": ["cdiv(n, 1024)", 1, 1], "block": [128, 1, 1],
                            "args": {"n": 1000, "add_kernel_param_3": "n", "add_kernel_param_4": 0,
                                     "add_kernel_param_5": 0},
                            "buffers": {f"add_kernel_param_{i}": {"dtype": "float32", "shape": ["n"]} for i in range(3)},
                            "outputs": ["add_kernel_param_2"]})
VADD_LAUNCH = json.dumps({"grid": ["cdiv(n, 256)", 1, 1], "block": [256, 1, 1], "args": {"n": 1000},
                          "buffers": {"a": {"dtype": "float32", "shape": ["n"]}, "b": {"dtype": "float32", "shape": ["n"]},
                                      "c": {"dtype": "float32", "shape": ["n"]}}, "outputs": ["c"]})


@pytest.mark.slow
def test_triton_against_cuda_reference(tmp_path):
    rc, out, err = audit("tests/zoo/triton/add.ptx", "--ref", "tests/zoo/vadd/vadd.ptx", "--launch", TRITON_LAUNCH,
                         "--ref-launch", VADD_LAUNCH, "--fp", "bitexact", "--format", "json",
                         "--cex-dir", str(tmp_path))
    doc = json.loads(out)
    eq = [o for o in doc["obligations"] if o["checker"] == "equivalence"]
    assert [o["status"] for o in eq] == ["proved"], eq
    stores = [r for r in doc["rows"] if r["reference"]]
    assert stores and all(x.startswith("vadd.cu:") for r in stores for x in r["reference"])
    assert "output stores only" in doc["summary"]["reference_matched"]


@pytest.mark.slow
def test_markdown_and_html(tmp_path):
    rc, out, _ = audit("tests/zoo/tma_tensor_load/tma_tensor_load__read_before_wait.ptx")
    assert out.startswith("# kverify audit: tma_tensor_load") and "**Verdict: violated**" in out
    assert "| tma_tensor_load__read_before_wait.cu:87 |" in out
    f = tmp_path / "a.html"
    rc, out, _ = audit("tests/zoo/tma_tensor_load/tma_tensor_load__read_before_wait.ptx", "--format", "html",
                       "-o", str(f))
    h = f.read_text()
    assert "http://" not in h.replace('xmlns="http://www.w3.org/2000/svg"', "") and "https://" not in h
    assert h.count('class="ev ev-') > 10 and "<svg" in h


def test_bad_input_is_exit_2():
    rc, out, err = audit("tests/zoo/nope.ptx")
    assert rc == 2 and "Traceback" not in err
