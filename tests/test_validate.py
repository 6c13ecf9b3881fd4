"""kverify validate without a GPU: poison and tolerance rules, shape templates, the static
audits on the cheating kernels, the timeout of the GPU worker (with a fake worker), the
exit code where no GPU exists, and the dynamic defences run end to end on the interpreter
(``InterpreterRunner``), which executes the same plans the GPU worker does."""
from __future__ import annotations

import ast
import ctypes.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest

from kverify.launch import LaunchSpec, instantiate
from kverify.semantics.ir import KernelError, load_module
from kverify.verifier.validate import audit, harness_hash, poison, shapes, tolerance, validate
from kverify.verifier.validate.runner import InterpreterRunner, SubprocessRunner

ROOT = Path(__file__).resolve().parent.parent
CHEAT = ROOT / "tests" / "validate" / "cheat"
CHEATS = str(CHEAT / "cheats.ptx")
ADD = str(CHEAT / "add.json")


def _interp_validate(file, kernel, launch, ref, **kw):
    m = load_module(file)
    return validate(file, launch=launch, ref=ref, kernel_name=kernel, runner=InterpreterRunner(m, m.kernel(kernel)),
                    **kw)


def _status(v, oid):
    return next(o for o in v.report.obligations if o.title == oid)


# --------------------------------------------------------------------------- poison


def test_poison_a_is_nan_and_b_is_finite_and_both_vary_with_the_seed():
    rng = np.random.default_rng(0)
    for dt in ("float16", "float32", "float64"):
        a = poison.filled(dt, (4,), poison.poison_bits(dt, "A", rng))
        b = poison.filled(dt, (4,), poison.poison_bits(dt, "B", rng))
        assert np.isnan(a).all() and np.isfinite(b).all() and (np.abs(b) >= 1024).all()
    bits = {poison.poison_bits("float32", "A", np.random.default_rng(s)) for s in range(8)}
    assert len(bits) > 1


def test_still_poisoned_compares_bit_patterns_not_values():
    bits = poison.poison_bits("float32", "A", np.random.default_rng(1))
    out = poison.filled("float32", (3,), bits)
    out[1] = np.float32("nan")  # a different NaN is a written element
    assert poison.still_poisoned(out, bits).tolist() == [True, False, True]


def test_runs_disagree_only_where_the_references_agree():
    ra = np.array([1.0, 5.0], np.float32)
    rb = np.array([1.0, 6.0], np.float32)  # element 1 depends on the initial contents
    oa = np.array([2.0, 5.0], np.float32)
    ob = np.array([3.0, 6.0], np.float32)
    assert poison.runs_disagree(oa, ob, ra, rb).tolist() == [True, False]


# --------------------------------------------------------------------------- tolerance


def test_float32_tolerance_is_relative_to_the_reference_and_rejects_nan():
    ref = np.linspace(-1, 1, 101).astype(np.float32)
    assert tolerance.compare(ref.copy(), ref, "float32").ok
    bad = ref.copy()
    bad[7] += 1e-3
    c = tolerance.compare(bad, ref, "float32")
    assert not c.ok and c.first_index == 7
    nan = ref.copy()
    nan[3] = np.nan
    assert not tolerance.compare(nan, ref, "float32").ok
    assert tolerance.compare(np.array([np.nan]), np.array([np.nan]), "float32").ok


def test_fp16_rounding_of_fp32_data_fails_the_float32_tolerance():
    x = np.random.default_rng(0).uniform(-1, 1, 1000).astype(np.float32)
    assert not tolerance.compare(x.astype(np.float16).astype(np.float32), x, "float32").ok
    assert tolerance.compare(x.astype(np.float16), x, "float16").ok


def test_integers_compare_exactly():
    assert not tolerance.compare(np.array([1, 2], np.int32), np.array([1, 3]), "int32").ok
    assert tolerance.compare(np.array([1, 2], np.uint32), np.array([1, 2]), "uint32").ok


def test_constant_reference_and_loose_atol_are_weak():
    assert tolerance.is_constant(np.ones(16, np.float32), "float32")
    assert not tolerance.is_constant(np.arange(16, dtype=np.float32), "float32")
    assert tolerance.signal_below_tolerance(np.array([0.1, -0.2]), "float32", atol=0.5)
    assert not tolerance.signal_below_tolerance(np.array([0.1, -0.2]), "float32", atol=None)


# --------------------------------------------------------------------------- shapes


def test_template_symbols_give_tails_and_derived_grids():
    t = json.loads(Path(ADD).read_text())
    ls = shapes.launches(t)
    labels = [lbl for lbl, _ in ls]
    assert labels[0].startswith("defaults") and "n=1023" in labels and "n=1025" in labels and "n=1" in labels
    d = dict(ls)["n=1025"]
    assert d["grid"] == [5, 1, 1] and d["buffers"]["a"]["shape"] == [1025] and d["args"]["n"] == 1025


def test_shapes_on_a_concrete_launch_rewrite_dims_and_grid():
    man = json.loads((ROOT / "tests/zoo/vadd/manifest.json").read_text())["variants"][0]["launch"]
    ls = shapes.launches(man, {"n": [257]})
    lbl, d = ls[1]
    assert d["args"]["n"] == 257 and d["buffers"]["c"]["shape"] == [257] and d["grid"][0] == 2, lbl


def test_shapes_naming_an_unknown_symbol_is_an_error():
    with pytest.raises(KernelError):
        shapes.launches(json.loads(Path(ADD).read_text()), {"m": [3]})
    assert shapes.parse_shapes(["n=1,7", "m=3"]) == {"n": [1, 7], "m": [3]}


# --------------------------------------------------------------------------- static audits


def _spec(path=ADD):
    return LaunchSpec.from_dict(instantiate(json.loads(Path(path).read_text()), {}))


def test_extern_call_is_reported():
    m = load_module(str(CHEAT / "delegates.ptx"))
    f = audit.extern_calls(m, m.kernel("delegates"))
    assert [x["rule"] for x in f] == ["validate.extern-call"] and "lib_add" in f[0]["message"]


@pytest.mark.skipif(__import__("shutil").which("ptxas") is None, reason="ptxas is not on PATH")
def test_b7_delegating_kernel_is_violated_even_though_it_cannot_be_assembled(tmp_path):
    v = validate(str(CHEAT / "delegates.ptx"), launch=ADD, ref="ref:add", trials=1, workdir=str(tmp_path))
    assert _status(v, "no-extern-calls").rule == "validate.extern-call"
    assert _status(v, "terminates").rule == "validate.build-error" and v.report.verdict == "violated"


def test_store_of_fp16_into_a_float32_buffer_is_reported():
    m = load_module(CHEATS)
    f, counts = audit.store_dtypes(m, m.kernel("store_half"), _spec())
    assert f and f[0]["rule"] == "validate.store-dtype" and counts["checked"] == 1
    assert audit.store_dtypes(m, m.kernel("honest_add"), _spec())[0] == []


def test_precision_downgrade_is_reported_for_fp16_math_on_fp32_data():
    m = load_module(CHEATS)
    assert audit.precision_downgrades(m, m.kernel("half_add"), _spec())[0]["rule"] == "validate.precision-downgrade"
    assert audit.precision_downgrades(m, m.kernel("honest_add"), _spec()) == []


def test_fast_math_build_is_reported():
    m = load_module(str(CHEAT / "fastmath.ptx"))
    f = audit.fast_math(m, m.kernel("scale_fast"))
    assert f and "div.approx.ftz.f32" in f[0]["message"]
    z = load_module(str(ROOT / "tests/zoo/softmax/softmax.ptx"))  # ex2.approx from expf is not fast math
    assert audit.fast_math(z, z.kernel()) == []


def test_launch_value_that_does_not_fit_the_param_type_is_reported():
    m = load_module(CHEATS)
    d = instantiate(json.loads(Path(ADD).read_text()), {})
    d["args"]["n"] = 2 ** 32 + 5
    f = audit.abi(m.kernel("honest_add"), LaunchSpec.from_dict(d))
    assert f and f[0]["rule"] == "validate.abi" and "does not fit" in f[0]["message"]
    d["args"]["n"] = 1.5
    assert audit.abi(m.kernel("honest_add"), LaunchSpec.from_dict(d))[0]["rule"] == "validate.abi"
    assert audit.param_blob(7, m.kernel("honest_add").params[3]) == (7).to_bytes(4, "little")


def test_static_audits_fail_the_validation(tmp_path):
    v = _interp_validate(CHEATS, "store_half", ADD, "ref:add", trials=1, workdir=str(tmp_path))
    assert _status(v, "store-dtypes").status == "violated"
    assert v.report.verdict == "violated"


# --------------------------------------------------------------------------- timeouts, no GPU, harness pins

FAKE_HANG = ("import json,sys,time;print(json.dumps({'event':'device','name':'fake'}),flush=True);"
             "p=json.load(open(sys.argv[1]));print(json.dumps({'event':'start','run':p['runs'][0]['id']}),flush=True);"
             "time.sleep(60)")


def test_a_hung_launch_is_killed_and_reported_as_a_timeout(tmp_path):
    runner = SubprocessRunner(timeout=1.0, startup=5.0, command=lambda plan: [sys.executable, "-c", FAKE_HANG, plan])
    v = validate(str(CHEAT / "hang.ptx"), launch=ADD, ref="ref:add", trials=1, runner=runner, workdir=str(tmp_path))
    t = _status(v, "terminates")
    assert t.status == "violated" and t.rule == "validate.timeout" and "t0A" in t.message
    assert v.details["run_wall_s"] < 20


def test_a_worker_that_never_starts_a_launch_times_out_too(tmp_path):
    silent = "import time; time.sleep(60)"
    runner = SubprocessRunner(timeout=0.5, startup=1.0, command=lambda plan: [sys.executable, "-c", silent])
    out = runner({"runs": []}, str(tmp_path / "plan.json"))
    assert out.runs["<startup>"]["status"] == "timeout"


@pytest.mark.skipif(ctypes.util.find_library("cuda") is not None, reason="a CUDA driver is present")
def test_without_a_gpu_validate_exits_3_with_the_reason(capsys):
    from kverify.verifier.cli import main

    rc = main(["validate", "tests/zoo/vadd/vadd.ptx", "--trials", "1"])
    assert rc == 3
    assert "no GPU" in capsys.readouterr().err


def test_report_pins_the_harness_and_reference_by_hash(tmp_path):
    v = _interp_validate(CHEATS, "honest_add", ADD, "ref:add", trials=1, workdir=str(tmp_path))
    d = v.to_json()
    assert d["schema"] == "kverify.report/2" and d["validate"]["harness_sha256"] == harness_hash()
    assert len(d["validate"]["reference_sha256"]) == 64 and len(d["validate"]["ptx_sha256"]) == 64
    assert "--seed 0" in d["validate"]["replay"]


def test_gpu_worker_imports_nothing_but_numpy_and_the_driver_wrapper():
    tree = ast.parse((ROOT / "kverify/verifier/validate/worker.py").read_text())
    mods = {n.module if isinstance(n, ast.ImportFrom) else a.name for n in ast.walk(tree)
            if isinstance(n, (ast.Import, ast.ImportFrom)) for a in getattr(n, "names", [])}
    assert mods <= {"__future__", "json", "sys", "time", "numpy", "kverify.lowering.gpu"}


# --------------------------------------------------------------------------- dynamic defences, on the interpreter


def test_honest_kernel_passes_every_check(tmp_path):
    v = _interp_validate(CHEATS, "honest_add", ADD, "ref:add", trials=1, workdir=str(tmp_path))
    assert v.report.verdict == "verified", [(o.title, o.message) for o in v.report.obligations]
    assert len(v.details["launches"]) == 5


def test_b1_output_left_unwritten_is_caught(tmp_path):
    v = _interp_validate(CHEATS, "reuse_output", ADD, "ref:add", trials=1, workdir=str(tmp_path))
    assert _status(v, "matches-reference").rule == "validate.unwritten"


def test_b1_read_of_uninitialized_output_is_caught_by_the_two_poisons(tmp_path):
    v = _interp_validate(CHEATS, "uninit_accumulate", ADD, "ref:add", trials=1, workdir=str(tmp_path))
    assert _status(v, "deterministic").status == "violated"
    assert _status(v, "deterministic").rule == "validate.nondeterministic"


def test_b2_input_mutation_is_caught(tmp_path):
    v = _interp_validate(CHEATS, "zero_input", ADD, "ref:add", trials=1, workdir=str(tmp_path))
    assert _status(v, "inputs-unmodified").rule == "validate.input-mutation"
    assert _status(v, "matches-reference").status == "bounded"  # the answer itself was right


def test_b3_constant_output_against_a_constant_reference_is_inconclusive(tmp_path):
    v = _interp_validate(CHEATS, "constant_rowsum", str(CHEAT / "rowsum.json"), "ref:rowsum_softmax", trials=2,
                         workdir=str(tmp_path))
    assert _status(v, "matches-reference").rule == "validate.weak-reference"
    assert v.report.verdict == "inconclusive"


def test_b3_loose_atol_does_not_let_a_wrong_kernel_pass(tmp_path):
    v = _interp_validate(CHEATS, "half_add", ADD, "ref:add", trials=1, atol=10.0, workdir=str(tmp_path))
    assert _status(v, "matches-reference").status in ("violated", "unknown")
    assert v.report.verdict != "verified"


def test_b4_shape_specialized_kernel_fails_on_fuzzed_tails(tmp_path):
    v = _interp_validate(CHEATS, "fixed_1024", ADD, "ref:add", trials=1, workdir=str(tmp_path))
    assert _status(v, "matches-reference").status == "violated"
    assert "n=" in _status(v, "matches-reference").message


def test_the_gpu_worker_finds_the_package_outside_an_editable_install(tmp_path):
    """The worker runs as ``python -m kverify.verifier.validate.worker`` with ``runner.ROOT`` on
    its PYTHONPATH: ROOT must hold the ``kverify`` package (an installed copy, not only this
    checkout), and a process started with only that path imports the worker."""
    import os
    import subprocess

    from kverify.verifier.validate import runner

    assert (runner.ROOT / "kverify" / "__init__.py").is_file()
    env = dict(os.environ, PYTHONPATH=str(runner.ROOT))
    r = subprocess.run([sys.executable, "-c", "import kverify.verifier.validate.worker, kverify; print(kverify.__file__)"],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert Path(r.stdout.strip()).resolve() == runner.ROOT / "kverify" / "__init__.py"


def test_sanitizer_findings_fold_into_the_report_under_their_rules(monkeypatch, tmp_path):
    """--sanitize with a compute-sanitizer that reports hazards (faked here: the GPU test runs the
    real one): each tool's obligation is violated under its rule, its further messages are findings."""
    from kverify.verifier.validate import sanitize

    results = {"memcheck": {"status": "ok", "messages": []},
               "racecheck": {"status": "findings", "errors": 3,
                             "messages": ["Error: Race reported between Write access at add+0x80",
                                          "Error: Race reported between Read access at add+0x90",
                                          "Error: Race reported between Write access at add+0xa0"]},
               "synccheck": {"status": "timeout", "messages": [], "tail": "no output"}}
    monkeypatch.setattr(sanitize, "find_sanitizer", lambda: "/usr/local/cuda/bin/compute-sanitizer")
    monkeypatch.setattr(sanitize, "run_tool", lambda tool, plan, timeout, san: results[tool])
    v = _interp_validate(CHEATS, "honest_add", ADD, "ref:add", trials=1, sanitize=True, workdir=str(tmp_path))
    by = {o.title: o for o in v.report.obligations}
    assert (by["sanitizer-memcheck"].status, by["sanitizer-memcheck"].message) == ("bounded",
                                                                                     "compute-sanitizer memcheck: 0 errors")
    r = by["sanitizer-racecheck"]
    assert (r.status, r.rule) == ("violated", "sanitizer.racecheck")
    assert r.message == "compute-sanitizer racecheck: 3 error(s): Error: Race reported between Write access at add+0x80"
    assert [(f.rule, f.message) for f in v.report.findings if f.rule.startswith("sanitizer.")] == [
        ("sanitizer.racecheck", "Error: Race reported between Read access at add+0x90"),
        ("sanitizer.racecheck", "Error: Race reported between Write access at add+0xa0")]
    s = by["sanitizer-synccheck"]
    assert (s.status, s.rule, s.message) == ("unknown", "sanitizer.synccheck", "compute-sanitizer synccheck: timeout: no output")
    assert v.report.verdict == "violated"
    # the JSON report names each tool's obligation (``--sanitize --format json`` on the H100 ended in
    # an internal error: the titles had no id)
    ids = {o["title"]: o["id"] for o in v.report.to_json()["obligations"] if o["title"].startswith("sanitizer-")}
    assert ids == {f"sanitizer-{t}": f"validate.sanitizer-{t}" for t in ("memcheck", "racecheck", "synccheck")}


def test_interpreter_cli_says_no_image_and_replays_on_the_interpreter(capfd):
    # (it named a ptxas image nothing built, and its replay line ran on a GPU: inconclusive without one)
    from kverify.verifier.cli import main

    assert main(["validate", str(ROOT / "tests" / "zoo" / "vadd" / "vadd.ptx"), "--interpreter"]) == 0
    out = capfd.readouterr().out
    assert "image: none (the interpreter runs the kernel's IR)" in out
    assert f"replay: kverify validate {ROOT / 'tests' / 'zoo' / 'vadd' / 'vadd.ptx'} --ref ref:vadd --trials 4 --seed 0 --interpreter" in out
    assert main(["validate", str(ROOT / "tests" / "zoo" / "vadd" / "vadd.ptx"), "--timeout", "0"]) == 2
    assert "--timeout must be positive seconds, got 0" in capfd.readouterr().err
