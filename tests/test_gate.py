"""kverify gate over the fixture policy tests/data/gate/kverify.toml (ten zoo kernels): exit codes,
per-kernel verdicts, SARIF, Markdown, JSON, the cache, and bad policies (file:line:col, exit 2)."""
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import jsonschema
import pytest

from conftest import official_sarif_schema

ROOT = Path(__file__).resolve().parents[1]
POLICY = ROOT / "tests/data/gate/kverify.toml"


def gate(*argv, cache, cwd=ROOT):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "KVERIFY_GATE_CACHE": str(cache)}
    return subprocess.run([sys.executable, "-m", "kverify", "gate", *argv], cwd=cwd, env=env,
                          capture_output=True, text=True)


@pytest.fixture(scope="module")
def first(tmp_path_factory):
    d = tmp_path_factory.mktemp("gate")
    t0 = time.perf_counter()
    r = gate("--policy", str(POLICY), "--format", "json", "--sarif", str(d / "out.sarif"),
             "--summary", str(d / "summary.md"), "--jobs", "2", cache=d / "cache")
    return d, r, time.perf_counter() - t0


@pytest.mark.slow
def test_gate_verdicts_and_exit(first):
    d, r, _ = first
    assert r.returncode == 1, r.stderr
    doc = json.loads(r.stdout)
    assert doc["format"] == "kverify.gate/1" and doc["passed"] is False
    by = {Path(k["file"]).name: k for k in doc["kernels"]}
    assert len(by) == 10
    assert {n for n, k in by.items() if k["passed"]} == {
        "reduce_smem.ptx", "scan.ptx", "stencil.ptx", "named_barrier.ptx", "reduce_smem__missing_sync.ptx",
        "saxpy_vec.ptx"}
    ob = {o["id"]: o for o in by["scan__missing_sync.ptx"]["obligations"]}
    assert (ob["race.shared"]["status"], ob["race.shared"]["line"], ob["race.shared"]["required"]) == ("violated", 21, True)
    ob = {o["id"]: o for o in by["named_barrier__wrong_count.ptx"]["obligations"]}
    assert (ob["barrier.named"]["status"], ob["barrier.named"]["rule"], ob["barrier.named"]["line"]) == \
        ("violated", "barrier.named-count", 30)
    # the warning tier: a violated obligation the entry does not require is reported, does not fail
    ob = {o["id"]: o for o in by["reduce_smem__missing_sync.ptx"]["obligations"]}
    assert (ob["race.shared"]["status"], ob["race.shared"]["required"]) == ("violated", False)
    # GPU validation: no GPU here -> unknown (fails) unless the policy allows skipping it
    ob = {o["id"]: o for o in by["saxpy_scalar.ptx"]["obligations"]}
    assert (ob["gpu"]["status"], ob["gpu"]["required"]) == ("unknown", True)
    assert [o["id"] for o in by["saxpy_scalar.ptx"]["obligations"] if o["required"] and o["status"] != "proved"
            and o["status"] not in ("bounded", "vacuous")] == ["gpu"]
    ob = {o["id"]: o for o in by["saxpy_vec.ptx"]["obligations"]}
    assert (ob["gpu"]["status"], ob["gpu"]["required"]) == ("skipped", False)


@pytest.mark.slow
def test_gate_sarif_and_markdown(first):
    d, r, _ = first
    log = json.loads((d / "out.sarif").read_text())
    assert log["version"] == "2.1.0"
    jsonschema.Draft7Validator(official_sarif_schema()).validate(log)
    run = log["runs"][0]
    rules = [x["id"] for x in run["tool"]["driver"]["rules"]]
    for res in run["results"]:
        assert rules[res["ruleIndex"]] == res["ruleId"]
        assert res["level"] in ("error", "warning", "note", "none")
        for loc in res.get("locations", []):
            assert loc["physicalLocation"]["region"]["startLine"] >= 1
    ids = {(Path(x["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]).name, x["ruleId"])
           for x in run["results"] if x.get("locations")}
    assert ("named_barrier__wrong_count.cu", "barrier.named-count") in ids
    assert ("saxpy_scalar.ptx", "gate.unknown.gpu") in ids
    md = (d / "summary.md").read_text()
    assert md.startswith("## kverify gate: ❌ FAIL (6/10 kernels)")
    assert "| `tests/zoo/scan/scan__missing_sync.ptx` | **FAIL** | `race.shared` violated, `memory` violated | - |" in md
    assert "| `tests/zoo/reduce_smem/reduce_smem__missing_sync.ptx` | pass | - | `race.shared` violated |" in md


@pytest.mark.slow
def test_gate_second_run_is_cached(first):
    d, r, _ = first
    t0 = time.perf_counter()
    r2 = gate("--policy", str(POLICY), "--format", "json", cache=d / "cache")
    wall = time.perf_counter() - t0
    assert r2.returncode == 1
    doc = json.loads(r2.stdout)
    assert all(k["cached"] for k in doc["kernels"])
    assert [k["passed"] for k in doc["kernels"]] == [k["passed"] for k in json.loads(r.stdout)["kernels"]]
    # the whole process (interpreter start included) under 2 s; the gate itself well under 1 s
    assert wall < 2.0, wall
    assert "(cached)" in r2.stderr


def test_gate_bad_policy(tmp_path):
    p = tmp_path / "kverify.toml"
    p.write_text('[defaults]\nrequire = ["race"]\n\n[[kernel]]\npath = "x.ptx"\nbogus = 1\n')
    r = gate("--policy", str(p), cache=tmp_path / "c")
    assert r.returncode == 2 and r.stderr.strip() == f"{p}:6:1: unknown policy key 'bogus'"
    p.write_text('[defaults]\nrequire = ["race"\n')
    r = gate("--policy", str(p), cache=tmp_path / "c")
    assert r.returncode == 2 and r.stderr.startswith(f"{p}:") and "invalid TOML" in r.stderr
    assert "Traceback" not in r.stderr


def test_gate_one_passing_kernel(tmp_path):
    r = gate("--policy", str(POLICY), str(ROOT / "tests/zoo/reduce_smem/reduce_smem.ptx"), "--format", "md",
             cache=tmp_path / "c")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("## kverify gate: ✅ PASS (1/1 kernels)")


@pytest.mark.parametrize("strict,code", [("false", 0), ("true", 1)])
def test_a_warning_passes_the_gate_unless_the_policy_is_strict(tmp_path, strict, code):
    """zoo named_barrier's only finding is barrier.aligned-split, a warning: a required
    barrier.named obligation violated at the warning tier passes; strict = true fails it."""
    rel = os.path.relpath(ROOT / "tests" / "zoo" / "named_barrier", tmp_path)  # paths are relative to the policy
    (tmp_path / "kverify.toml").write_text(f"""
[[kernel]]
path = "{rel}/named_barrier.ptx"
launch = "{rel}/manifest.json"
require = ["barrier.named"]
strict = {strict}
""")
    r = gate("--policy", str(tmp_path / "kverify.toml"), "--format", "json", cache=tmp_path / "cache")
    assert r.returncode == code, r.stdout + r.stderr
    (k,) = json.loads(r.stdout)["kernels"]
    (o,) = [o for o in k["obligations"] if o["id"] == "barrier.named"]
    assert o["status"] == "violated" and o["rule"] == "barrier.aligned-split"
    assert o["severity"] == ("error" if strict == "true" else "warning")


def test_a_policy_that_gates_no_kernel_is_an_error(tmp_path):
    (tmp_path / "kverify.toml").write_text('[[kernel]]\npath = "nothing/*.ptx"\n')
    r = gate("--policy", str(tmp_path / "kverify.toml"), cache=tmp_path / "cache")
    assert r.returncode == 2
    assert "kverify.toml:1:1: the policy gates no kernel file" in r.stderr


_BODY = ("__device__ void body(float* a, float* s) {\n  s[threadIdx.x] = a[threadIdx.x];\n  SYNC\n"
         "  a[threadIdx.x] = s[(threadIdx.x + 1) % 256];\n}\n")


@pytest.mark.parametrize("files, edit", [
    # the cache key hashed the kernel file only: removing the __syncthreads from a header the .cu
    # includes kept the cached pass
    ({"impl.h": _BODY.replace("SYNC", "__syncthreads();"), "k.cu": '#include "impl.h"\n'}, "impl.h"),
    # only .cu/.cuh/.h/.hpp/.inc were followed: a header reached through impl.hh kept a cached pass
    ({"cfg.h": "#define SYNC __syncthreads();\n", "impl.hh": '#include "cfg.h"\n' + _BODY,
      "k.cu": '#include "impl.hh"\n'}, "cfg.h"),
    # only literal #include "..." lines were followed: a computed include kept a cached pass
    pytest.param({"impl.h": _BODY.replace("SYNC", "__syncthreads();"), "k.cu": '#define IMPL "impl.h"\n#include IMPL\n'},
                 "impl.h", marks=pytest.mark.skipif(not shutil.which("nvcc"), reason="nvcc -MM lists a computed "
                                                    "include; the literal scan without nvcc cannot")),
])
def test_a_cached_verdict_is_not_reused_when_an_included_header_changed(tmp_path, files, edit):
    for name, text in files.items():
        (tmp_path / name).write_text(text + ('extern "C" __global__ void k(float* a) {\n  __shared__ float s[256];\n'
                                             "  body(a, s);\n}\n" if name == "k.cu" else ""))
    (tmp_path / "p.toml").write_text('[defaults]\nrequire = ["race", "memory"]\n[[kernel]]\npath = "*.cu"\n'
                                     "grid = [1]\nblock = [256]\n")
    r = gate("--policy", "p.toml", cache=tmp_path / "cache", cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    h = tmp_path / edit
    h.write_text(h.read_text().replace("__syncthreads();", ""))
    r = gate("--policy", "p.toml", cache=tmp_path / "cache", cwd=tmp_path)
    assert r.returncode == 1 and "(cached)" not in r.stdout + r.stderr, r.stdout + r.stderr


@pytest.mark.parametrize("policy,message", [
    ('[defaults]\nrequire = "race"\n[[kernel]]\npath = "*.ptx"\n',
     ':2:1: require must be a list of obligation ids (require = ["race", ...])'),  # was split into r, a, c, e
    ('[defaults]\nbudget = -3\n[[kernel]]\npath = "*.ptx"\n', ":2:1: budget must be a positive number, got -3"),
    ('[[kernel]]\npath = "*.ptx"\ngrid = [1]\nblock = [32]\n[[kernel]]\npath = "nothere.ptx"\n',
     ":6:1: policy path 'nothere.ptx' names no file"),  # was dropped while the other entry matched
])
def test_policy_values_that_would_gate_something_else_are_bad_policies(tmp_path, policy, message):
    (tmp_path / "k.ptx").write_text((ROOT / "tests/zoo/vadd/vadd.ptx").read_text())
    p = tmp_path / "kverify.toml"
    p.write_text(policy)
    r = gate("--policy", str(p), "--no-cache", cache=tmp_path / "c", cwd=tmp_path)
    assert r.returncode == 2 and r.stderr.strip().endswith(message), r.stderr


def test_a_directory_argument_gates_its_cu_files_too(tmp_path):
    # (only *.ptx were gated: a racy .cu beside them was skipped and the gate passed)
    d = tmp_path / "sub"
    d.mkdir()
    (d / "racy.cu").write_text('extern "C" __global__ void racy(float* a) {\n  __shared__ float s[256];\n'
                               "  s[threadIdx.x] = a[threadIdx.x];\n  a[threadIdx.x] = s[(threadIdx.x + 1) % 256];\n}\n")
    (tmp_path / "kverify.toml").write_text('[defaults]\nrequire = ["race"]\n[[kernel]]\npath = "sub/*"\n'
                                           "grid = [1]\nblock = [256]\n")
    r = gate("--policy", "kverify.toml", "--no-cache", "sub", cache=tmp_path / "c", cwd=tmp_path)
    assert r.returncode == 1 and "sub/racy.cu" in r.stdout + r.stderr, r.stdout + r.stderr


def test_a_policy_entry_picks_the_kernel_of_a_file_with_several(tmp_path):
    # (the entry's kernel key was accepted and ignored: a file with several kernels could not be gated)
    (tmp_path / "c.ptx").write_text((ROOT / "tests/data/novalues/collectives.ptx").read_text())
    for kernel, code in (("shfl_all", 0), ("shfl_div", 1)):
        (tmp_path / "kverify.toml").write_text(f'[defaults]\nrequire = ["barrier.named"]\n[[kernel]]\npath = "c.ptx"\n'
                                               f'kernel = "{kernel}"\ngrid = [1]\nblock = [32]\nargs = {{{kernel}_param_1 = 16}}\n')
        r = gate("--policy", "kverify.toml", "--no-cache", cache=tmp_path / "c", cwd=tmp_path)
        assert r.returncode == code, (kernel, r.stdout + r.stderr)


@pytest.mark.parametrize("spelling", ["./sub/racy.cu", "{abs}/sub/racy.cu", "sub/../sub/racy.cu"])
def test_a_policy_path_names_its_file_however_spelled(tmp_path, spelling):
    # (./x and absolute paths matched no file after globbing: the racy kernel went ungated, PASS)
    d = tmp_path / "sub"
    d.mkdir()
    (d / "racy.cu").write_text('extern "C" __global__ void racy(float* a) {\n  __shared__ float s[256];\n'
                               "  s[threadIdx.x] = a[threadIdx.x];\n  a[threadIdx.x] = s[(threadIdx.x + 1) % 256];\n}\n")
    (d / "ok.cu").write_text('extern "C" __global__ void ok(float* a) {\n  a[threadIdx.x] = 1.0f;\n}\n')
    (tmp_path / "kverify.toml").write_text(f'[defaults]\nrequire = ["race"]\ngrid = [1]\nblock = [256]\n'
                                           f'[[kernel]]\npath = "sub/ok.cu"\n'
                                           f'[[kernel]]\npath = "{spelling.format(abs=tmp_path)}"\n')
    r = gate("--policy", "kverify.toml", "--no-cache", cache=tmp_path / "c", cwd=tmp_path)
    assert r.returncode == 1 and "1/2 kernels pass -> FAIL" in r.stdout + r.stderr, r.stdout + r.stderr


def test_a_double_star_glob_gates_top_level_files_with_and_without_paths(tmp_path):
    # (files were matched with fnmatch: "**/*.cu" matched no top-level file, which went ungated)
    (tmp_path / "sub").mkdir()
    (tmp_path / "bad.cu").write_text('extern "C" __global__ void k(float* out, int n) {\n'
                                     "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                                     "  if (i < n) out[i / 2] = (float)i;\n}\n")
    (tmp_path / "sub" / "good.cu").write_text('extern "C" __global__ void k(float* out, int n) {\n'
                                              "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                                              "  if (i < n) out[i] = (float)i;\n}\n")
    (tmp_path / "kverify.toml").write_text('[[kernel]]\npath = "**/*.cu"\ngrid = [2]\nblock = [128]\n'
                                           'args = {n = 256}\nrequire = ["race", "memory"]\n')
    for paths in ([], ["bad.cu", "sub/good.cu"], ["."]):
        r = gate("--no-cache", *paths, cache=tmp_path / "c", cwd=tmp_path)
        assert r.returncode == 1 and "1/2 kernels pass -> FAIL" in r.stdout + r.stderr, (paths, r.stdout + r.stderr)


def test_the_cache_key_of_cuda_source_rests_on_the_compiler(tmp_path, monkeypatch):
    # (a cached verdict of a .cu kernel outlived a change of nvcc, which compiles it)
    from kverify.verifier import gate as G

    for name in ("k.cu", "k.ptx"):
        (tmp_path / name).write_text("x")
    monkeypatch.chdir(tmp_path)
    cu, ptx = ({"file": str(tmp_path / n), "entry": {"path": n}} for n in ("k.cu", "k.ptx"))
    keys = G.cache_key(cu), G.cache_key(ptx)
    monkeypatch.setattr(G, "_compiler", lambda: "Cuda compilation tools, release 99.9")
    assert G.cache_key(cu) != keys[0] and G.cache_key(ptx) == keys[1]


def test_the_cache_key_rests_on_kverify_code_and_the_working_directory(tmp_path, monkeypatch):
    # (the version string alone kept results of code before a soundness fix; the results' paths are
    # relative to the directory of the run that filled the cache)
    from kverify.verifier import gate as G

    (tmp_path / "k.ptx").write_text("x")
    job = {"file": str(tmp_path / "k.ptx"), "entry": {"path": "k.ptx"}}
    monkeypatch.chdir(tmp_path)
    key = G.cache_key(job)
    monkeypatch.setattr(G, "_code", lambda: "other code")
    assert G.cache_key(job) != key
    monkeypatch.undo()
    monkeypatch.chdir(ROOT)
    assert G.cache_key(job) != key


TWO = ROOT / "tests/data/gate_multikernel"  # two_kernels.ptx: good (a barrier) and bad (none: a race)
_ENTRY = 'path = "{ptx}"\ngrid = [1]\nblock = [64]\n'


def _two_kernels(tmp_path, *kernels):
    """A policy of one entry per name in ``kernels`` (None: no ``kernel =``) over two_kernels.ptx."""
    ptx = os.path.relpath(TWO / "two_kernels.ptx", tmp_path)
    text = '[defaults]\nrequire = ["race", "memory"]\n'
    for k in kernels:
        text += "[[kernel]]\n" + _ENTRY.format(ptx=ptx) + (f'kernel = "{k}"\n' if k else "")
    (tmp_path / "kverify.toml").write_text(text)
    return gate("--policy", "kverify.toml", "--no-cache", cache=tmp_path / "c", cwd=tmp_path)


def test_each_entry_for_one_file_gates_its_own_kernel(tmp_path):
    # (a file took its first matching entry: the entry for the racy kernel was dropped, PASS)
    r = _two_kernels(tmp_path, "good", "bad")
    assert r.returncode == 1, r.stdout + r.stderr
    ptx = os.path.relpath(TWO / "two_kernels.ptx", tmp_path)
    lines = r.stdout.splitlines()
    assert lines[0] == f"{ptx}:good: pass"
    assert lines[1] == f"{ptx}:bad: FAIL"
    assert lines[-1] == "gate: 1/2 kernels pass -> FAIL"


@pytest.mark.parametrize("kernels,error", [
    # (the check's own message, "give kernel_name=", at the kernel file's line 0)
    ((None,), "kverify.toml:3:1: {ptx} has 2 kernels (good, bad): name one with kernel = NAME in its [[kernel]] entry"),
    (("good", "bda"), "kverify.toml:12:1: {ptx} has no kernel 'bda' (kernels: good, bad)"),
])
def test_an_entry_that_picks_no_kernel_of_its_file_is_a_bad_policy_at_the_entry(tmp_path, kernels, error):
    r = _two_kernels(tmp_path, *kernels)
    assert r.returncode == 2, r.stdout + r.stderr
    assert f"  error: {error.format(ptx=os.path.relpath(TWO / 'two_kernels.ptx', tmp_path))}" in r.stdout.splitlines()


def test_an_entry_every_file_of_which_an_earlier_entry_gates_is_a_bad_policy(tmp_path):
    # (it was silently ignored: its settings never applied)
    r = _two_kernels(tmp_path, "good", "good")
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.strip() == ("kverify.toml:9:1: this entry gates nothing: every file its path "
                                f"'{os.path.relpath(TWO / 'two_kernels.ptx', tmp_path)}' matches is gated for the "
                                "same kernel by an earlier entry")


def test_an_unknown_obligation_is_reported_at_its_own_file(tmp_path):
    # scatter.ptx, compiled from scatter.cu with line info: the store out[idx[t]] is scatter.cu:5
    # (the gate's SARIF result and text line put line 5 on scatter.ptx, a comment of nvcc's header)
    r = gate("--policy", "tests/data/gate_sarif/kverify.toml", "--no-cache", "--sarif", str(tmp_path / "g.sarif"),
             cache=tmp_path / "c")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "  memory: unknown (required) at tests/data/gate_sarif/scatter.cu:5" in r.stdout.splitlines()
    (res,) = [x for x in json.loads((tmp_path / "g.sarif").read_text())["runs"][0]["results"]
              if x["ruleId"] == "gate.unknown.memory"]
    assert res["locations"] == [{"physicalLocation": {"artifactLocation": {"uri": "tests/data/gate_sarif/scatter.cu"},
                                                      "region": {"startLine": 5}}}]


@pytest.mark.parametrize("out,code,memory", [("64:f32", 0, "bounded"), ("32:f32", 1, "violated")])
def test_a_grid_block_entry_gives_buffers_as_shape_and_dtype(tmp_path, out, code, memory):
    # (args = {out = "64:f32"} failed: "argument out: cannot pass a str"); good writes out[t], t < 64
    ptx = os.path.relpath(TWO / "two_kernels.ptx", tmp_path)
    (tmp_path / "kverify.toml").write_text(f'[defaults]\nrequire = ["race", "memory"]\n[[kernel]]\n'
                                           f'{_ENTRY.format(ptx=ptx)}kernel = "good"\n'
                                           f'args = {{in = "64:f32", out = "{out}"}}\n')
    r = gate("--policy", "kverify.toml", "--no-cache", "--format", "json", cache=tmp_path / "c", cwd=tmp_path)
    assert r.returncode == code, r.stdout + r.stderr
    (k,) = json.loads(r.stdout)["kernels"]
    assert k["error"] is None
    assert {o["id"]: o["status"] for o in k["obligations"]}["memory"] == memory
