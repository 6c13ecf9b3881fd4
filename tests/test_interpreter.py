"""The interpreter on the kernel zoo: outputs against the numpy references, no findings on
correct kernels, and every seeded bug found (rule id and source line) under the exhaustive
scheduler."""
import json

import numpy as np
import pytest

from kverify.rules import severity

from conftest import ZOO, needs_nvcc, zoo_variants
from kverify.launch import LaunchSpec
from kverify.semantics.interpreter import call_reference, compare_outputs, load_reference, run_kernel
from kverify.semantics.ir import KernelError, load_module
from kverify.verifier.cli import main

VARIANTS = [(d, v) for d, v in zoo_variants()]
CORRECT = [p for p in VARIANTS if p[1]["correct"]]
BUGGY = [p for p in VARIANTS if not p[1]["correct"]]
HEAVY = ("triton", "gemm_tiled", "cp_async_gemm", "softmax")


def _ptx(d, v):
    return d / v["file"].replace(".cu", ".ptx")


def _run(d, v, **kw):
    path = _ptx(d, v)
    m = load_module(str(path))
    spec = LaunchSpec.from_dict(v["launch"])
    return path, spec, run_kernel(m, m.kernel(v["kernel"]), spec, **kw)


def _lines(f):
    return {l.line for l in f.locs} | {l.ptx_line for l in f.locs}


@pytest.mark.parametrize("d,v", CORRECT, ids=[f"{d.name}/{v['file']}" for d, v in CORRECT])
def test_correct_kernel_matches_reference_without_findings(d, v):
    path, spec, r = _run(d, v, seed=1)
    assert r.status == "complete", r.reason
    # warning-tier findings (zoo named_barrier: barrier.aligned-split, the ThunderKittens idiom) are allowed
    assert [(f.rule, f.message) for f in r.findings if severity(f.rule) == "error"] == []
    fn = load_reference(v["reference"], str(path))
    expected = call_reference(fn, r.inputs, spec)
    # wgmma accumulates in an order PTX leaves open (and the float32 references round
    # their own sums): agreement to 1e-4 relative / 1e-5 absolute there
    loose = d.name in ("triton", "wgmma_tile", "wgmma_pipeline", "peek_pipeline")
    assert compare_outputs(r.outputs, expected, rtol=1e-4 if loose else 1e-5,
                           atol=1e-5 if loose else 1e-6) == []


@pytest.mark.parametrize("d,v", BUGGY, ids=[f"{d.name}/{v['file']}" for d, v in BUGGY])
def test_seeded_bug_is_found_under_exhaustive_schedule(d, v):
    bug = v["bug"]
    budget = 2 if d.name in HEAVY else 6
    _, _, r = _run(d, v, schedule="exhaustive", budget=budget)
    lines = {bug["line"], *bug.get("also_lines", ())}
    hits = [f for f in r.findings if f.rule == bug["rule"]]
    assert hits, f"{bug['rule']} not among {sorted(r.rules())}"
    assert any(_lines(f) & lines for f in hits), [sorted(_lines(f)) for f in hits]
    if v["expect"].get("deadlock") == "deadlock" and bug["rule"] == "deadlock":
        assert r.status == "deadlock"


def test_correct_pipeline_has_no_findings_on_any_explored_schedule():
    d = ZOO / "bulk_pipeline"
    v = json.loads((d / "manifest.json").read_text())["variants"][0]
    _, _, r = _run(d, v, schedule="exhaustive", budget=24, reduce=False)
    assert r.findings == [] and r.status == "complete"
    assert r.schedules_run == 25
    # the first run already stands for every schedule (tests/test_schedules.py)
    _, _, r = _run(d, v, schedule="exhaustive", budget=24)
    assert r.robust and r.dependence == [] and (r.schedules_run, r.schedules_total) == (1, 1)


def test_random_schedule_is_replayable_from_its_seed():
    d = ZOO / "bulk_pipeline"
    v = json.loads((d / "manifest.json").read_text())["variants"][1]  # wrong parity
    a = _run(d, v, schedule="random", seed=7)[2]
    b = _run(d, v, schedule="random", seed=7)[2]
    assert [(f.rule, f.message) for f in a.findings] == [(f.rule, f.message) for f in b.findings]
    assert a.steps == b.steps


def test_tx_mismatch_is_reported_with_expect_tx_and_copy_lines():
    d = ZOO / "bulk_pipeline"
    v = [x for x in json.loads((d / "manifest.json").read_text())["variants"] if "tx_mismatch" in x["file"]][0]
    _, _, r = _run(d, v)
    f = [f for f in r.findings if f.rule == "mbarrier.tx-mismatch"][0]
    assert [l.line for l in f.locs] == [116, 117]
    assert "tx-count -512" in f.message
    assert r.status == "deadlock"


def test_missing_launch_argument_is_a_clear_error():
    d = ZOO / "vadd"
    v = json.loads((d / "manifest.json").read_text())["variants"][0]
    launch = dict(v["launch"], args={})
    m = load_module(str(_ptx(d, v)))
    with pytest.raises(KernelError, match="no value for parameter"):
        run_kernel(m, m.kernel(), LaunchSpec.from_dict(launch))


def test_inputs_are_taken_from_numpy_arrays():
    d = ZOO / "vadd"
    v = json.loads((d / "manifest.json").read_text())["variants"][0]
    spec = LaunchSpec.from_dict(v["launch"])
    m = load_module(str(_ptx(d, v)))
    n = spec.buffers["a"]["shape"][0]
    a = np.arange(n, dtype=np.float32)
    b = np.full(n, 0.5, np.float32)
    r = run_kernel(m, m.kernel(), spec, inputs={"a": a, "b": b})
    c = r.outputs["c"].reshape(-1)[: int(spec.args["n"])]
    assert np.array_equal(c, (a + b)[: c.size])


def test_cli_run_reports_findings_and_exit_codes(capsys):
    d = ZOO / "reduce_smem"
    rc = main(["run", str(d / "reduce_smem.ptx"), "--launch", str(d / "manifest.json")])
    out = capsys.readouterr().out
    assert rc == 0 and "findings: none" in out and "outputs match (out)" in out
    rc = main(["run", str(d / "reduce_smem__missing_sync.ptx"), "--launch", str(d / "manifest.json"),
               "--format", "json"])
    rep = json.loads(capsys.readouterr().out)
    assert rc == 1
    assert rep["status"] == "complete"
    assert {f["rule"] for f in rep["findings"]} == {"race.shared"}
    assert any(l["line"] == 15 for f in rep["findings"] for l in f["locations"])
    assert rep["mismatches"]


def test_cli_run_bad_launch_is_exit_2(tmp_path, capsys):
    bad = tmp_path / "l.json"
    bad.write_text('{"grid": [1], "block": [0]}')
    rc = main(["run", str(ZOO / "vadd" / "vadd.ptx"), "--launch", str(bad)])
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith(f"{bad}:1:25: launch spec: block[0]: expected a positive integer (at most 2147483647), got 0")


def test_cli_check_verdicts_and_json_schema(capsys):
    d = ZOO / "reduce_smem"
    rc = main(["check", str(d / "reduce_smem.ptx"), "--format", "json"])
    rep = json.loads(capsys.readouterr().out)
    assert rc == 0 and rep["schema"] == "kverify.report/2"
    k = rep["kernels"][0]
    assert k["verdict"] == "verified"
    status = {o["id"]: o["status"] for o in k["obligations"]}
    assert [o["id"] for o in k["obligations"]] == ["race.shared", "race.global", "race.async", "mbarrier.protocol",
                                                   "barrier.named", "deadlock", "memory"]
    assert {o["id"]: o["title"] for o in k["obligations"]}["deadlock"] == "deadlock-free"
    assert status["deadlock"] == "bounded" and status["race.async"] == "vacuous"
    assert status["mbarrier.protocol"] == "vacuous"
    assert status["race.shared"] == "proved"  # the SMT two-thread proof
    rc = main(["check", str(d / "reduce_smem__missing_sync.ptx"), "--format", "json"])
    rep = json.loads(capsys.readouterr().out)
    k = rep["kernels"][0]
    assert rc == 1 and k["verdict"] == "violated"
    o = next(o for o in k["obligations"] if o["title"] == "race-free: shared")
    assert o["status"] == "violated" and o["rule"] == "race.shared"
    assert any(l["line"] == 15 for l in o["locations"])
    assert o["counterexample"]["replay"].startswith("kverify run ")


def test_cli_check_budget_exhaustion_is_inconclusive(capsys, tmp_path):
    # a histogram whose shared atomic's old value is used: the order of the atomics
    # matters, so one run does not stand for every schedule and exploration runs
    d = ZOO / "histogram"
    src = (d / "histogram.ptx").read_text()
    atom = "atom.shared.add.u32 \t%r20, [%r19], 1;"
    assert atom in src
    (tmp_path / "histogram.cu").write_text((d / "histogram.cu").read_text())  # parameter names
    (tmp_path / "histogram.ptx").write_text(src.replace(atom, atom + "\n\tadd.u32 \t%r20, %r20, 0;"))
    rc = main(["check", str(tmp_path / "histogram.ptx"), "--launch", str(d / "manifest.json"), "--budget", "2",
               "--no-smt"])
    out = capsys.readouterr().out
    assert rc == 3 and "INCONCLUSIVE" in out
    assert ("incomplete: schedule budget exhausted after 3 runs (2 classes of schedules explored by dynamic "
            "partial-order reduction; more remain)") in out


LIGHT = [p for p in VARIANTS if p[0].name not in HEAVY]


@pytest.mark.parametrize("d,v", LIGHT, ids=[f"{d.name}/{v['file']}" for d, v in LIGHT])
def test_check_never_violates_a_correct_kernel_and_finds_every_seeded_bug(d, v):
    from kverify.verifier.check import check_kernel

    path = _ptx(d, v)
    m = load_module(str(path))
    rep = check_kernel(m, m.kernel(v["kernel"]), LaunchSpec.from_dict(v["launch"]), path=str(path))
    if v["correct"]:
        assert rep.verdict in ("verified", "inconclusive")
        assert all(o.message for o in rep.obligations if o.status == "unknown")
        return
    bug = v["bug"]
    lines = {bug["line"], *bug.get("also_lines", ())}
    assert rep.verdict == "violated"
    hits = [f for f in rep.findings if f.rule == bug["rule"]]
    assert any(({l.line for l in f.locations} | {l.ptx_line for l in f.locations}) & lines for f in hits)


@needs_nvcc
def test_check_reads_gpuverify_headers(tmp_path, capsys):
    src = tmp_path / "race.cu"
    src.write_text("//xfail:BOOGIE_ERROR\n//--blockDim=64 --gridDim=1 --no-inline\n"
                   "__global__ void foo(int *A) {\n  A[threadIdx.x] = A[threadIdx.x + 1];\n}\n")
    rc = main(["check", str(src), "--format", "json"])
    k = json.loads(capsys.readouterr().out)["kernels"][0]
    assert rc == 1 and k["verdict"] == "violated" and k["path"] == str(src)
    o = next(o for o in k["obligations"] if o["title"] == "race-free: global")
    assert o["status"] == "violated" and {l["line"] for l in o["locations"]} == {4}
    # the replay command carries the command-line launch as JSON and runs as printed
    import shlex
    rc = main(shlex.split(o["counterexample"]["replay"])[1:])
    assert "race.global" in capsys.readouterr().out
    # the header gives no buffer: A is sized to what the threads touch (A[64] is read)
    dl = next(o for o in k["obligations"] if o["title"] == "deadlock-free")
    assert dl["status"] == "bounded" and dl["bound"].endswith("buffers sized to the kernel's accesses: A uint32[65]")
    # a complete run without a memory-safety finding, on buffers sized to the accesses
    ms = next(o for o in k["obligations"] if o["title"] == "memory safety")
    assert ms["status"] == "vacuous" and ms["message"].startswith("not applicable: buffers sized to the kernel's")


@needs_nvcc
def test_gpuverify_header_defines_and_label_case(tmp_path, capsys):
    # line 2's -DNAME=VALUE are the test's preprocessor definitions; the label is read in any case
    src = tmp_path / "kernel.cu"
    src.write_text("//PASS\n//--blockDim=256 --gridDim=2 -DWIDTH=256\n"
                   "__global__ void k(int *A) {\n  A[blockIdx.x * WIDTH + threadIdx.x] = threadIdx.x;\n}\n")
    rc = main(["check", str(src)])
    out = capsys.readouterr().out
    assert rc == 0 and "kernel k(int*): VERIFIED" in out and "proved    race-free: global" in out
    # the command line's own -D wins: a width smaller than the block makes CTAs overlap
    rc = main(["check", str(src), "-DWIDTH=128"])
    assert rc == 1 and "race.global" in capsys.readouterr().out


def test_check_sizes_buffers_from_the_accesses_or_says_why_not(tmp_path, capsys):
    for f in ("vadd.ptx", "vadd.cu"):
        (tmp_path / f).write_text((ZOO / "vadd" / f).read_text())
    rc = main(["check", str(tmp_path / "vadd.ptx"), "--grid", "4", "--block", "256", "--arg", "n=1000",
               "--format", "json"])
    k = json.loads(capsys.readouterr().out)["kernels"][0]
    by = {o["title"]: o for o in k["obligations"]}
    assert rc == 0 and by["deadlock-free"]["status"] == "bounded"
    assert by["deadlock-free"]["bound"].endswith(
        "buffers sized to the kernel's accesses: a float32[1000], b float32[1000], c float32[1000]")
    # memory safety is not applicable on buffers sized to the accesses (and does not block exit 0)
    assert by["memory safety"]["status"] == "vacuous"
    assert by["memory safety"]["message"].startswith("not applicable: buffers sized to the kernel's own accesses")
    # Triton's trailing scratch pointers are never read: a placeholder byte each
    (tmp_path / "add.ptx").write_text((ZOO / "triton" / "add.ptx").read_text())
    rc = main(["check", str(tmp_path / "add.ptx"), "--grid", "4", "--arg", "add_kernel_param_3=1000",
               "--format", "json"])
    k = json.loads(capsys.readouterr().out)["kernels"][0]
    dl = next(o for o in k["obligations"] if o["title"] == "deadlock-free")
    assert dl["status"] == "bounded" and dl["bound"].endswith(
        "add_kernel_param_2 uint32[1000], add_kernel_param_4 uint8[1], add_kernel_param_5 uint8[1]")
    # a grid-stride loop over data[i]: an iteration counts as reached only when every
    # earlier one went on, so data is sized by n
    for f in ("histogram.ptx", "histogram.cu"):
        (tmp_path / f).write_text((ZOO / "histogram" / f).read_text())
    rc = main(["check", str(tmp_path / "histogram.ptx"), "--grid", "4", "--block", "256", "--arg", "n=5000",
               "--format", "json"])
    k = json.loads(capsys.readouterr().out)["kernels"][0]
    dl = next(o for o in k["obligations"] if o["title"] == "deadlock-free")
    assert dl["status"] == "bounded" and dl["bound"].endswith("data uint32[5000], bins uint32[64]")
    # without the scalars the offsets are not bounded: the run is not attempted, and says why
    rc = main(["check", str(tmp_path / "histogram.ptx"), "--grid", "4", "--block", "256", "--format", "json"])
    k = json.loads(capsys.readouterr().out)["kernels"][0]
    dl = next(o for o in k["obligations"] if o["title"] == "deadlock-free")
    assert rc == 3 and dl["status"] == "unknown"
    assert "not sized from the accesses: data: offsets of ld.global.u32 (line 16) are not bounded" in dl["message"]


@pytest.mark.parametrize("file,expect", [
    ("bulk_pipeline__role_off_by_one.ptx", "expected from warp 4 (threads 128-159) of CTA (0,0,0), which exited"),
])
def test_deadlock_wait_for_graph_names_the_role_that_left(file, expect):
    d = ZOO / "bulk_pipeline"
    v = [x for x in json.loads((d / "manifest.json").read_text())["variants"] if x["file"].replace(".cu", ".ptx") == file][0]
    _, _, r = _run(d, v)
    f = next(f for f in r.findings if f.rule == "deadlock")
    assert expect in f.message and r.status == "deadlock"


def test_deadlock_wait_for_graph_finds_a_circular_wait():
    from kverify.semantics.interpreter.scheduler import parse_replay

    d = ZOO / "bulk_pipeline"
    v = json.loads((d / "manifest.json").read_text())["variants"][1]  # wrong parity
    _, _, r = _run(d, v, schedule="replay", replay=parse_replay("57:4"))
    f = next(f for f in r.findings if f.rule == "deadlock")
    cycle = f.message.split("circular wait:")[1]
    assert "_ZZ13bulk_pipelineE5empty" in cycle and "_ZZ13bulk_pipelineE4full" in cycle
    assert "warp 4 (threads 128-159)" in cycle  # the producer, between the two barriers


def test_inputs_may_be_cpu_torch_tensors_and_the_reference_may_return_them():
    torch = pytest.importorskip("torch", reason="torch (CPU) is not installed: pip install torch==2.13.0")
    d = ZOO / "saxpy_vec"
    v = json.loads((d / "manifest.json").read_text())["variants"][1]
    spec = LaunchSpec.from_dict(v["launch"])
    m = load_module(str(_ptx(d, v)))
    names = [p.source_name for p in m.kernel(v["kernel"]).params]
    bufs = {k: b for k, b in spec.buffers.items()}
    inputs = {k: torch.linspace(-1, 1, int(np.prod(b["shape"])), dtype=torch.float32) for k, b in bufs.items()}
    r = run_kernel(m, m.kernel(v["kernel"]), spec, inputs=inputs)
    assert r.status == "complete" and not r.findings
    for k in bufs:
        if k not in spec.outputs:
            assert np.array_equal(r.inputs[k], inputs[k].numpy())

    def ref(ins, args):
        return {o: torch.from_numpy(e) for o, e in call_reference(load_reference(v["reference"], str(_ptx(d, v))),
                                                                 ins, spec).items()}

    assert compare_outputs(r.outputs, call_reference(ref, r.inputs, spec)) == []
    assert names  # parameters carry their CUDA names


LOCAL_DEPOT = """.version 8.3
.target sm_90a
.address_size 64
.visible .entry depot(.param .u64 depot_param_0)
{
  .local .align 8 .b8 __local_depot0[16];
  .reg .b64 %SP;
  .reg .b64 %SPL;
  .reg .b32 %r<6>;
  .reg .b64 %rd<6>;
  mov.u64 %SPL, __local_depot0;
  cvta.local.u64 %SP, %SPL;
  mov.u32 %r0, %tid.x;
  add.u64 %rd0, %SP, 4;
  st.u32 [%rd0], %r0;
  add.u32 %r1, %r0, 100;
  st.local.u32 [__local_depot0+8], %r1;
  ld.local.u32 %r2, [%SPL+4];
  add.u64 %rd1, %SP, 8;
  cvta.to.local.u64 %rd2, %rd1;
  ld.local.u32 %r3, [%rd2];
  ld.u32 %r4, [%rd1];
  add.u32 %r5, %r2, %r3;
  add.u32 %r5, %r5, %r4;
  ld.param.u64 %rd3, [depot_param_0];
  cvta.to.global.u64 %rd3, %rd3;
  mul.wide.u32 %rd4, %r0, 4;
  add.s64 %rd3, %rd3, %rd4;
  st.global.u32 [%rd3], %r5;
  ret;
}
"""


def test_local_variable_address_is_in_the_local_space_and_cvta_makes_it_generic(tmp_path):
    """``mov %SPL, __local_depot`` gives the variable's address in the local state space
    (as for .shared); ``cvta.local`` makes it generic. nvcc writes this pattern for every
    local array and for a by-reference argument of a non-inlined function (the lowered
    device_func passes its return slot so); the interpreter used to give the generic
    address, so the accesses fell outside the local frame."""
    from kverify.semantics.ir import parse_ptx

    m = parse_ptx(LOCAL_DEPOT, str(tmp_path / "depot.ptx"))
    spec = LaunchSpec.from_dict({"kernel": "depot", "grid": [1, 1, 1], "block": [32, 1, 1],
                                 "buffers": {"0": {"dtype": "uint32", "shape": [32]}}, "outputs": ["0"]})
    r = run_kernel(m, m.kernel("depot"), spec, inputs={"0": np.zeros(32, np.uint32)})
    assert r.status == "complete", r.reason
    assert [f.message for f in r.findings] == []
    tid = np.arange(32, dtype=np.uint32)
    out = next(iter(r.outputs.values()))
    assert (out == tid + 2 * (tid + 100)).all()


def _cluster_arrive_edited(tmp_path, edit, drop=None):
    """The zoo's cluster_arrive kernel (nvcc-compiled PTX) with its first
    ``barrier.cluster.arrive`` edited by ``edit(line) -> lines`` (and the lines containing
    ``drop`` removed)."""
    d = ZOO / "cluster_arrive"
    v = json.loads((d / "manifest.json").read_text())["variants"][0]
    lines = _ptx(d, v).read_text().split("\n")
    i = next(k for k, l in enumerate(lines) if "barrier.cluster.arrive" in l)
    lines[i:i + 1] = edit(lines[i])
    if drop is not None:
        lines = [l for l in lines if drop not in l]
    path = tmp_path / "cluster_arrive.ptx"
    path.write_text("\n".join(lines))
    (tmp_path / "cluster_arrive.cu").write_text((d / v["file"]).read_text())  # parameter names
    m = load_module(str(path))
    return i + 1, run_kernel(m, m.kernel(v["kernel"]), LaunchSpec.from_dict(v["launch"]))


def test_cluster_barrier_double_arrive_is_the_protocols_rule(tmp_path):
    line, r = _cluster_arrive_edited(tmp_path, lambda l: [l, l])
    assert r.status == "complete", r.reason
    hits = [f for f in r.findings if f.rule == "cluster-barrier.double-arrive"]
    assert hits and line + 1 in _lines(hits[0])
    assert r.rules() == {"cluster-barrier.double-arrive"}


def test_cluster_barrier_wait_without_arrive_is_the_protocols_rule(tmp_path):
    line, r = _cluster_arrive_edited(tmp_path, lambda l: [])
    hits = [f for f in r.findings if f.rule == "cluster-barrier.wait-without-arrive"]
    assert hits, r.rules()
    assert not any(f.rule.startswith("barrier.cluster") for f in r.findings)


def test_cluster_barrier_relaxed_arrive_releases_nothing(tmp_path):
    """``.relaxed``: the arrival orders nothing but the inits a preceding
    fence.mbarrier_init.release.cluster releases (§9.7.12.4): with the fence CTA 0's init is
    visible to CTA 1's remote arrive; without it, it is not."""
    _, r = _cluster_arrive_edited(tmp_path, lambda l: [l.replace(".release", ".relaxed")])
    assert r.status == "complete", r.reason
    assert r.findings == []
    no_fence = tmp_path / "no_fence"
    no_fence.mkdir()
    _, r = _cluster_arrive_edited(no_fence, lambda l: [l.replace(".release", ".relaxed")], drop="fence.mbarrier_init")
    assert "mbarrier.init-visibility" in r.rules()
