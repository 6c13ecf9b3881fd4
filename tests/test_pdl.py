"""Programmatic dependent launch (PDL) pairs (kverify.semantics.interpreter.dependent): a launch
spec's ``dependent`` names the grid launched after the primary with programmatic stream
serialization; ``check`` reports the primary, then the dependent, whose global accesses before
``griddepcontrol.wait`` are checked against the primary's run (tests/data/pdl: a correct pair and
three seeded bugs: a load hoisted above the wait, no wait at all, a write of the primary's input
before the wait)."""
import json
from pathlib import Path

import numpy as np
import pytest

from kverify.launch import LaunchSpec
from kverify.semantics.interpreter import run_kernel
from kverify.semantics.ir import KernelError, load_module
from kverify.verifier.cli import main
from conftest import needs_nvcc

DATA = Path(__file__).parent / "data" / "pdl"


def _check(name, launch="pair.json", capsys=None):
    rc = main(["check", str(DATA / f"{name}.ptx"), "--launch", str(DATA / launch), "--format", "json"])
    return rc, json.loads(capsys.readouterr().out)


def _ob(kernel_report, oid):
    (o,) = [o for o in kernel_report["obligations"] if o["id"] == oid]
    return o


def test_correct_pair_is_verified_and_says_what_its_bound_covers(capsys):
    rc, rep = _check("pair", capsys=capsys)
    assert rc == 0 and rep["verdict"] == "verified"
    assert [(k["name"], k["verdict"]) for k in rep["kernels"]] == [("producer", "verified"), ("consumer", "verified")]
    g = _ob(rep["kernels"][1], "race.global")
    # the SMT proof covers the consumer's own threads only: bounded, saying so
    assert g["status"] == "bounded"
    assert g["message"].startswith("within this grid: no two distinct threads access the same global bytes")
    assert "against the primary grid producer: not covered by this proof (the run checks it)" in g["message"]
    d = _ob(rep["kernels"][1], "deadlock")
    assert "launched as the programmatic dependent (PDL) of producer from the memory its run left" in d["bound"]
    assert _ob(rep["kernels"][0], "race.global")["status"] == "proved"  # the primary alone: unchanged


@pytest.mark.parametrize("name,launch,line,access,other,other_line", [
    ("pair__read_before_wait", "pair.json", 11, "read of global y", "write", 5),
    ("pair__no_wait", "pair.json", 11, "read of global y", "write", 5),
    ("pair__write_before_wait", "pair__write_before_wait.json", 11, "write of global x", "read", 5),
])
def test_seeded_bugs_are_violated_at_both_lines(capsys, name, launch, line, access, other, other_line):
    rc, rep = _check(name, launch, capsys)
    assert rc == 1
    assert [(k["name"], k["verdict"]) for k in rep["kernels"]] == [("producer", "verified"), ("consumer", "violated")]
    g = _ob(rep["kernels"][1], "race.global")
    assert (g["status"], g["rule"], g["locations"][0]["line"]) == ("violated", "race.global.dependent-grid", line)
    assert [(Path(l["path"]).name, l["line"]) for l in g["locations"]] == [(f"{name}.cu", line),
                                                                             (f"{name}.cu", other_line)]
    assert g["message"].startswith(f"{access} by thread 0 (warp 0, lane 0) of CTA (0,0,0) at ")
    assert f"before its griddepcontrol.wait, and the primary grid's {other} at " in g["message"]
    assert f"the primary executes griddepcontrol.launch_dependents at " in g["message"]
    assert g["message"].split("launch_dependents at ")[1].split(")")[0].endswith(f"{name}.cu:6")
    assert g["counterexample"]["replay"] == f"kverify check {DATA / (name + '.ptx')} --launch {DATA / launch}"


def test_the_dependent_runs_on_the_memory_the_primary_left():
    m = load_module(str(DATA / "pair.ptx"))
    spec = LaunchSpec.load(str(DATA / "pair.json"))
    x = np.arange(500, dtype=np.float32)
    r1 = run_kernel(m, m.kernel("producer"), spec, inputs={"x": x}, footprint=True)
    assert r1.status == "complete" and not r1.findings and r1.footprint is not None
    assert r1.footprint.trigger is not None and r1.footprint.trigger.line == 7
    dspec, shared = spec.dependent_spec()
    assert shared == {"y": "y"} and dspec.kernel == "consumer"
    w = np.full(500, 0.5, np.float32)
    r2 = run_kernel(m, m.kernel("consumer"), dspec, inputs={"y": r1.outputs["y"], "w": w},
                    prior=(r1.footprint, r1.layout, shared))
    assert r2.status == "complete" and not r2.findings, [f.message for f in r2.findings]
    np.testing.assert_array_equal(r2.outputs["z"], 2 * x + w)
    # the same run without the wait's ordering: the hoisted load is a race
    bad = load_module(str(DATA / "pair__read_before_wait.ptx"))
    r1 = run_kernel(bad, bad.kernel("producer"), spec, inputs={"x": x}, footprint=True)
    r2 = run_kernel(bad, bad.kernel("consumer"), dspec, inputs={"y": r1.outputs["y"], "w": w},
                    prior=(r1.footprint, r1.layout, shared))
    assert {f.rule for f in r2.findings} == {"race.global.dependent-grid"}


@pytest.mark.parametrize("dep,message,at", [
    ({"kernel": "consumer", "buffers": {"y": "nope"}},
     "launch spec: dependent.buffers.y: 'nope' is not a buffer of this launch (its buffers: x, y)", '"nope"'),
    ({"kernel": "consumer", "tensormaps": {}},
     "launch spec: dependent: unknown key(s) tensormaps (a dependent launch has kernel, grid, block, cluster, args, "
     "buffers, outputs, dynamic_smem)", '{"kernel": "consumer", "tensormaps"'),
    ({"grid": [4]}, "launch spec: dependent.kernel: a dependent launch names its kernel (a string), got null", '{"grid": [4]}'),
    ({"kernel": "consumer", "block": [2048]},
     "launch spec: dependent.block[0]: a block dimension x is at most 1024 on sm_90, got 2048", "2048"),
])
def test_bad_dependent_launches_are_bad_input(tmp_path, capsys, dep, message, at):
    spec = {"kernel": "producer", "grid": [4], "block": [128], "args": {"n": 500},
            "buffers": {"x": {"dtype": "float32", "shape": [500]}, "y": {"dtype": "float32", "shape": [500]}},
            "dependent": dep}
    f = tmp_path / "l.json"
    text = json.dumps(spec)
    f.write_text(text)
    col = text.index(at) + 1  # the offending value, on the file's one line
    with pytest.raises(KernelError) as e:
        LaunchSpec.load(str(f))
    assert (e.value.message, e.value.line, e.value.col) == (message, 1, col)
    rc = main(["check", str(DATA / "pair.ptx"), "--launch", str(f)])
    assert rc == 2 and f"{f}:1:{col}: error: {message}" in capsys.readouterr().out


def test_the_python_api_checks_the_pair():
    import kverify

    rep = kverify.check(str(DATA / "pair__no_wait.ptx"), kernel_name="producer", launch=str(DATA / "pair.json"))
    assert [(k.name, k.verdict) for k in rep.kernels] == [("producer", "verified"), ("consumer", "violated")]
    with pytest.raises(KernelError, match="launch spec: dependent.kernel: no kernel 'nope' \\(entries: producer, consumer\\)"):
        kverify.check(str(DATA / "pair.ptx"), kernel_name="producer",
                      launch={**json.loads((DATA / "pair.json").read_text()), "dependent": {
                          **json.loads((DATA / "pair.json").read_text())["dependent"], "kernel": "nope"}})


# --------------------------------------------------------------------------- validate and the GPU runner


def test_validate_refuses_a_pair_and_says_what_checks_it():
    from kverify.verifier.validate import validate

    with pytest.raises(KernelError) as e:
        validate(str(DATA / "pair.ptx"), launch=str(DATA / "pair.json"), ref="ref:nothing")
    assert str(e.value).startswith(f"{DATA / 'pair.json'}:1:1: validate runs one grid against its reference; this "
                                   "launch names a dependent grid (PDL pair): `kverify check` checks the pair")


@needs_nvcc
def test_conformance_plans_the_pair_and_the_cooperative_grid_for_the_gpu_runner(tmp_path):
    """bench/conformance.py's plans: the PDL pair as one run whose ``dependent`` grid names the
    shared buffer and its own (``dep.``), the grid-sync kernel cooperative; the interpreter runs
    the pair as ``check`` does, and the lowered kernels compute the same, bit for bit."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parent.parent
    d = tmp_path / "conf"
    p = subprocess.run([sys.executable, str(root / "bench" / "conformance.py"), "gen", "--zoo-only", "--families",
                        "data_grid_sync,data_pdl", "--dir", str(d)], capture_output=True, text=True, cwd=root)
    assert p.returncode == 0, p.stderr
    index = json.loads((d / "index.json").read_text())
    by = {e["name"]: e for e in index["zoo"] + index["zoo_lowered"]}
    assert sorted(by) == ["data_grid_sync__two_phase", "data_grid_sync__two_phase__lowered", "data_pdl__pair",
                          "data_pdl__pair__lowered"]
    pair = by["data_pdl__pair"]
    assert (pair["interp_status"], pair["outputs"]) == ("complete", ["y", "dep.z"])
    (run,) = pair["plan"]["runs"]
    assert run["dependent"] == {"kernel": "consumer", "grid": [4, 1, 1], "block": [128, 1, 1], "dynamic_smem": 0,
                                "params": [{"kind": "buffer", "buffer": "y"}, {"kind": "buffer", "buffer": "dep.w"},
                                           {"kind": "buffer", "buffer": "dep.z"},
                                           {"kind": "bytes", "hex": "f4010000"}]}
    inp = np.load(d / "zoo" / "data_pdl__pair.in.npz")
    out = np.load(str(d) + "_interp/data_pdl__pair.interp.npz")
    assert sorted(inp) == sorted(out) == ["dep.w", "dep.z", "x", "y"]
    np.testing.assert_array_equal(out["y"], 2 * inp["x"])
    np.testing.assert_array_equal(out["dep.z"], 2 * inp["x"] + inp["dep.w"])
    assert by["data_grid_sync__two_phase"]["plan"]["runs"][0]["cooperative"] is True
    assert by["data_grid_sync__two_phase__lowered"]["plan"]["runs"][0]["cooperative"] is True
    assert "dependent" in by["data_pdl__pair__lowered"]["plan"]["runs"][0]
    assert by["data_pdl__pair__lowered"]["interp_same"] and by["data_grid_sync__two_phase__lowered"]["interp_same"]


@pytest.mark.gpu
def test_on_the_gpu_the_pair_runs_as_a_programmatic_dependent_launch(tmp_path):
    """The worker launches the consumer with programmatic stream serialization after the producer,
    in one stream, on the same buffers: z = 2x + w, as the interpreter computes it."""
    from kverify.lowering.gpu import Gpu, module_image
    from kverify.verifier.validate.worker import run_plan

    rng = np.random.default_rng(0)
    x, w = rng.standard_normal(500).astype(np.float32), rng.standard_normal(500).astype(np.float32)
    np.savez(tmp_path / "in.npz", x=x, y=np.zeros(500, np.float32), w=w, z=np.zeros(500, np.float32))
    image, how = module_image((DATA / "pair.ptx").read_text())
    (tmp_path / "k.cubin").write_bytes(image.rstrip(b"\0") if how == "driver JIT" else image)
    n = {"kind": "bytes", "hex": (500).to_bytes(4, "little").hex()}
    buf = [{"kind": "buffer", "buffer": b} for b in "xywz"]
    plan = {"image": str(tmp_path / "k.cubin"), "image_is_ptx": how == "driver JIT", "kernel": "producer", "runs": [
        {"id": "r", "npz": str(tmp_path / "in.npz"), "out": str(tmp_path / "out.npz"), "grid": [4, 1, 1],
         "block": [128, 1, 1], "params": [buf[0], buf[1], n],
         "dependent": {"kernel": "consumer", "grid": [4, 1, 1], "block": [128, 1, 1], "params": [buf[1], buf[2], buf[3], n]}}]}
    events = []
    assert run_plan(Gpu(), plan, lambda **kw: events.append(kw)) == 0, events
    out = np.load(tmp_path / "out.npz")
    np.testing.assert_array_equal(out["z"], np.float32(2) * x + w)


def test_an_async_copy_issued_before_the_wait_is_checked_as_of_its_issue(capsys):
    """A cp.async of the primary's output issued before griddepcontrol.wait: async copies never
    met the primary's footprint (neither recorded in it nor checked against it), and the pair was
    verified."""
    rc, rep = _check("pair__async_before_wait", "pair__async_before_wait.json", capsys)
    assert rc == 1
    g = _ob(rep["kernels"][1], "race.global")
    assert (g["status"], g["rule"], g["locations"][0]["line"]) == ("violated", "race.global.dependent-grid", 14)
    assert g["message"].startswith("read of global y by thread 0 (warp 0, lane 0) of CTA (0,0,0) at ")


def test_module_global_variables_are_not_claimed(capsys):
    """The primary's footprint carries the launch's buffers; a __device__ variable the dependent reads
    before the wait was not checked while the verdict said verified."""
    rc, rep = _check("pair__global_var", "pair__global_var.json", capsys)
    assert [(k["name"], k["verdict"]) for k in rep["kernels"]] == [("producer", "verified"), ("consumer", "inconclusive")]
    g = _ob(rep["kernels"][1], "race.global")
    assert g["status"] == "unknown"
    assert g["message"].startswith("not checked against the primary grid producer: the grids use module global "
                                   "variable(s) g_count, which the primary's footprint does not carry over")
