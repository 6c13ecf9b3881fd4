"""kverify audit: per-line rows, evidence, summary and the three renderings on a TMA+mbarrier
kernel (correct and seeded-bug twin) and a Triton kernel against a CUDA reference; the
happens-before evidence of the pipelines (which access, which edge) and the reference lines
whose values a candidate line computes."""
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
    # the run's evidence: no earlier write is ordered before the read (the race), and warp 3 of CTA
    # (0,0,0) reads after the __syncthreads only, with no mbarrier wait before it
    assert r["evidence"][0]["kind"] == "no-conflict" and "race" in r["evidence"][0]["note"]
    assert not [e for e in r["evidence"] if e["kind"] in ("synchronization", "program-order")]
    ev = [e for e in r["evidence"] if e["kind"] == "issued-after" and e["warp"] == 3 and e["cta"] == [0, 0, 0]]
    assert ev and ev[0]["after"] == [{"op": "bar.sync", "line": "tma_tensor_load__read_before_wait.cu:76",
                                      "turn": ev[0]["after"][0]["turn"]}]
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
    # the read of the tile is ordered after the TMA write by the copy's complete-tx on the
    # mbarrier and the wait that observes the phase
    ev = row(doc, "tma_tensor_load.cu:84")["evidence"][0]
    assert ev["kind"] == "synchronization" and ev["conflict"] == "read-after-write"
    assert ev["other"] == {"line": "tma_tensor_load.cu:76", "access": ev["other"]["access"], "warp": 0,
                           "cta": [0, 0, 0], "async_op": "cp.async.bulk.tensor", "proxy": "async"}
    assert ev["other"]["access"].startswith("write (cp.async.bulk.tensor.2d.shared::cluster.global")
    assert [(s["role"], s["op"].split(".")[0], s["line"], s.get("barrier"), s.get("phase")) for s in ev["via"]] == [
        ("release", "complete_tx", "tma_tensor_load.cu:76", "bar", 0),
        ("acquire", "mbarrier", "tma_tensor_load.cu:78", "bar", 0)]
    # the TMA row itself is an async access line now: its store to shared and load from global
    tma = row(doc, "tma_tensor_load.cu:76")
    assert tma["accesses"] == ["async load global", "async store shared::cluster"]
    assert tma["evidence"][0]["kind"] == "no-conflict"


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
    # both loads of the Triton kernel are the loads of vadd.cu:8 (every value), the sum and its store
    # the sum and store of that line
    assert row(doc, "generate.py:60")["reference"] == [
        {"kind": "load", "values": 1000, "capped": False,
         "lines": [{"line": "vadd.cu:8", "kinds": ["load"], "matched": 1000, "all": True, "capped": False}]}]
    assert row(doc, "generate.py:61")["reference"][0]["lines"][0]["line"] == "vadd.cu:8"
    st = row(doc, "generate.py:62")["reference"]
    assert [(x["kind"], x["lines"][0]["kinds"], x["lines"][0]["all"]) for x in st] == [
        ("arith", ["arith", "store"], True), ("store", ["arith", "store"], True)]
    assert doc["summary"]["reference_matched"].startswith("loads, mma/wgmma accumulations, reductions")


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


# --------------------------------------------------------------------------- happens-before evidence


def trace_of(path, args=None):
    """The deterministic run of a zoo kernel with the happens-before trace on: (machine-free)
    {"file:line": evidence items}."""
    from kverify.launch import resolve
    from kverify.semantics.ir import load_module
    from kverify.semantics.ir.nodes import where
    from kverify.verifier.audit import run_events

    m = load_module(os.path.join(ROOT, path))
    k = next(k for k in m.kernels if k.is_entry)
    spec = resolve(None, os.path.join(ROOT, path), k.name).spec
    _, status, trace, _ = run_events(m, k, spec, evidence=True)
    assert status == "complete" and trace["unresolved"] == 0
    return {where(loc): items for loc, items in trace["items"].items()}


TMA_G2S = "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes"
TRY_WAIT = "mbarrier.try_wait.parity.shared::cta.b64"


def test_pipeline_consumer_read_names_the_tma_write_and_the_full_phase():
    ev = trace_of("tests/zoo/bulk_pipeline/bulk_pipeline.ptx")
    # the consumers' ld.shared of a stage (line 124): after the bulk copy's write of line 113 (the
    # producer warp 4's copy, async proxy), whose complete_tx on full[s] releases into the phase the
    # consumer's try_wait of line 120 acquires; one explanation for every warp, stage and round
    assert ev["bulk_pipeline.cu:124"] == [{
        "kind": "synchronization", "conflict": "read-after-write",
        "other": {"line": "bulk_pipeline.cu:113", "access": f"write ({TMA_G2S})", "warp": 4,
                  "async_op": "cp.async.bulk", "proxy": "async"},
        "this": {"warp": 3, "proxy": "generic"},
        "via": [{"role": "release", "op": "complete_tx", "line": "bulk_pipeline.cu:113", "warp": 4, "proxy": "async",
                 "async_op": "cp.async.bulk", "barrier": "full[0]", "phase": 0},
                {"role": "acquire", "op": TRY_WAIT, "line": "bulk_pipeline.cu:120", "warp": 3, "barrier": "full[0]",
                 "phase": 0}],
        "examples": 16}]
    # the producer's copy into a stage (line 113): after the consumers' generic reads of line 124,
    # through their fence.proxy.async (line 127) and arrive on empty[s] (line 130), which the
    # producer's try_wait (line 111) acquires before it issues the copy
    first = ev["bulk_pipeline.cu:113"][0]
    assert first["conflict"] == "write-after-read" and first["other"]["line"] == "bulk_pipeline.cu:124"
    assert first["other"]["proxy"] == "generic" and first["this"] == {"warp": 4, "proxy": "async"}
    assert [(s["role"], s["line"], s.get("warp"), s.get("barrier")) for s in first["via"]] == [
        ("fence", "bulk_pipeline.cu:127", 0, None), ("release", "bulk_pipeline.cu:130", 0, "empty[0]"),
        ("acquire", "bulk_pipeline.cu:111", 4, "empty[0]"), ("issue", "bulk_pipeline.cu:113", 4, None)]
    # the global store of line 125 has no earlier conflicting access
    assert ev["bulk_pipeline.cu:125"] == []


def test_pipeline_edge_of_a_later_round_names_its_phase():
    """The edge of one ordered pair of round 1 (step 4: stage 1, phase 1 of full[1]), straight
    from the trace: the copy of that step, then the wait that observed phase 1."""
    from kverify.launch import initial_inputs, resolve
    from kverify.semantics.interpreter.hbtrace import HBTrace
    from kverify.semantics.interpreter.machine import Machine
    from kverify.semantics.interpreter.scheduler import Deterministic
    from kverify.semantics.ir import load_module

    path = os.path.join(ZOO, "bulk_pipeline", "bulk_pipeline.ptx")
    mod = load_module(path)
    k = mod.kernels[0]
    spec = resolve(None, path, k.name).spec
    m = Machine(mod, k, spec, initial_inputs(k, spec, None, 0), Deterministic(), 500_000, True)
    m.trace = HBTrace(m)
    m.run()
    copies = sorted(a for a, op in m.ops_by_agent.items() if op.kind == "cp.async.bulk")
    assert len(copies) == 8  # iters = 8
    consumer = next(w for w in m.trace.warps.values() if w.index == 0)
    steps = m.trace.chain(consumer.agent, copies[4], 1)
    assert [(r, x.op, x.loc.line, x.obj, x.phase) for r, x in steps] == [
        ("release", "complete_tx", 113, "full[1]", 1), ("acquire", TRY_WAIT, 120, "full[1]", 1)]
    # no edge to a copy the warp never waited for: the last copy is consumed, but not by an acquire
    # of the producer warp
    assert m.trace.chain(m.ops_by_agent[copies[0]].warp.agent, copies[7], 1) is None


def test_proxy_fence_and_barrier_before_a_tma_store_are_named():
    ev = trace_of("tests/zoo/tma_store/tma_store.ptx")
    first = ev["tma_store.cu:57"][0]
    assert first["kind"] == "synchronization" and first["conflict"] == "read-after-write"
    assert first["other"] == {"line": "tma_store.cu:52", "access": "write (st.shared.f32)", "warp": 1,
                              "proxy": "generic"}
    assert first["via"] == [
        {"role": "fence", "op": "fence.proxy.async", "line": "tma_store.cu:54", "warp": 1},
        {"role": "release", "op": "bar.sync", "line": "tma_store.cu:55", "warp": 1, "barrier": "barrier 0", "phase": 0},
        {"role": "acquire", "op": "bar.sync", "line": "tma_store.cu:55", "warp": 0, "barrier": "barrier 0", "phase": 0},
        {"role": "issue", "op": "cp.async.bulk.global.shared::cta.bulk_group", "line": "tma_store.cu:57", "warp": 0}]
    # the issuing warp's own writes: program order, through its own fence
    own = ev["tma_store.cu:57"][1]
    assert own["kind"] == "program-order" and own["other"]["warp"] == 0
    assert [s["role"] for s in own["via"]] == ["fence", "issue"]
    # the next tile's generic write after the bulk store read it: the wait_group.read, then bar.sync
    war = [e for e in ev["tma_store.cu:52"] if e["conflict"] == "write-after-read" and e["this"]["warp"] == 1]
    assert [(s["role"], s["line"]) for s in war[0]["via"]] == [
        ("release", "tma_store.cu:57"), ("acquire", "tma_store.cu:59"), ("release", "tma_store.cu:61"),
        ("acquire", "tma_store.cu:61")]


def test_missing_proxy_fence_is_proxy_unordered():
    ev = trace_of("tests/zoo/tma_store/tma_store__missing_proxy_fence.ptx")
    items = ev["tma_store__missing_proxy_fence.cu:61"]
    assert {e["kind"] for e in items} == {"proxy-unordered"}
    assert all(s["role"] != "fence" for e in items for s in e["via"])
    assert [s["role"] for s in items[0]["via"]] == ["release", "acquire", "issue"]


def test_wgmma_operand_read_names_the_copy_and_the_wait():
    ev = trace_of("tests/zoo/wgmma_pipeline/wgmma_pipeline.ptx")
    items = ev["wgmma_pipeline.cu:185"]
    assert [e["other"]["line"] for e in items] == ["wgmma_pipeline.cu:171", "wgmma_pipeline.cu:172"]
    assert [(s["role"], s["op"].split(".")[0], s["line"], s.get("barrier"), s.get("warp")) for s in items[0]["via"]] == [
        ("release", "complete_tx", "wgmma_pipeline.cu:171", "full[0]", 4),
        ("acquire", "mbarrier", "wgmma_pipeline.cu:180", "full[0]", 3),
        ("issue", "wgmma", "wgmma_pipeline.cu:185", None, 3)]
    assert items[0]["this"] == {"warp": 3, "proxy": "async"}
    # a stage's next copy (line 171) after the wgmma read it: the wgmma completes, the consumer's
    # wait_group acquires it, its arrive on empty[s] releases to the producer's wait
    war = next(e for e in ev["wgmma_pipeline.cu:171"] if e["conflict"] == "write-after-read")
    assert [(s["role"], s["line"]) for s in war["via"]] == [
        ("release", "wgmma_pipeline.cu:185"), ("acquire", "wgmma_pipeline.cu:187"), ("release", "wgmma_pipeline.cu:190"),
        ("acquire", "wgmma_pipeline.cu:169"), ("issue", "wgmma_pipeline.cu:171")]


def test_audit_markdown_names_fence_and_barrier():
    rc, out, _ = audit("tests/zoo/tma_store/tma_store.ptx")
    assert rc == 0
    line = next(x for x in out.splitlines() if x.startswith("| tma_store.cu:57 |"))
    assert ("read-after-write: after the write (st.shared.f32) at tma_store.cu:52 (warp 1, generic proxy): "
            "fence.proxy.async at tma_store.cu:54 (warp 1) -> bar.sync on barrier 0 phase 0 at tma_store.cu:55 "
            "(warp 1) -> bar.sync at tma_store.cu:55 (warp 0) acquires barrier 0 phase 0 -> issued by warp 0 at "
            "tma_store.cu:57 [12 examples]") in line
    assert "Evidence:" in out


TRITON_MATMUL = json.dumps({"grid": ["cdiv(M, 64) * cdiv(N, 64)", 1, 1], "block": [128, 1, 1], "shared_bytes": 24576,
                            "args": {"M": 64, "N": 16, "K": 64, "matmul_kernel_param_3": "M",
                                     "matmul_kernel_param_4": "N", "matmul_kernel_param_5": "K",
                                     "matmul_kernel_param_6": "K", "matmul_kernel_param_7": "N",
                                     "matmul_kernel_param_8": "N", "matmul_kernel_param_9": 0,
                                     "matmul_kernel_param_10": 0},
                            "buffers": {"matmul_kernel_param_0": {"dtype": "float16", "shape": ["M", "K"]},
                                        "matmul_kernel_param_1": {"dtype": "float16", "shape": ["K", "N"]},
                                        "matmul_kernel_param_2": {"dtype": "float32", "shape": ["M", "N"]}},
                            "outputs": ["matmul_kernel_param_2"]})
NAIVE_F16 = json.dumps({"grid": ["cdiv(N, 16)", "cdiv(M, 16)", 1], "block": [16, 16, 1],
                        "args": {"M": 64, "N": 16, "K": 64},
                        "buffers": {"A": {"dtype": "float16", "shape": ["M", "K"]},
                                    "B": {"dtype": "float16", "shape": ["K", "N"]},
                                    "C": {"dtype": "float32", "shape": ["M", "N"]}}, "outputs": ["C"]})


@pytest.mark.slow
def test_triton_wgmma_matmul_lines_map_to_the_naive_loop(tmp_path):
    """The Triton tl.dot (wgmma) kernel against the naive CUDA GEMM (pair
    triton_wgmma_matmul_vs_naive of tests/zoo/equivalence.json): its A load (a cp.async of
    line 81) copies values the naive loop loads at gemm_naive_f16.cu:11, and every accumulator
    value its wgmma (line 83) produces is a partial sum the naive loop's fma computes there."""
    rc, out, err = audit("tests/zoo/triton/matmul.ptx", "--ref", "tests/zoo/tc_gemm/gemm_naive_f16.ptx", "--launch",
                         TRITON_MATMUL, "--ref-launch", NAIVE_F16, "--fp", "real", "--format", "json",
                         "--cex-dir", str(tmp_path))
    doc = json.loads(out)
    assert [o["status"] for o in doc["obligations"] if o["checker"] == "equivalence"] == ["proved"]
    load = row(doc, "generate.py:81")["reference"]
    assert [(x["kind"], x["values"], [(r["line"], r["all"]) for r in x["lines"]]) for x in load] == [
        ("load", 4096, [("gemm_naive_f16.cu:11", True)])]
    acc = row(doc, "generate.py:83")["reference"]
    assert [(x["kind"], x["values"]) for x in acc] == [("mma", 4096)]
    assert acc[0]["lines"][0] == {"line": "gemm_naive_f16.cu:11", "kinds": ["arith"], "matched": 4096, "all": True,
                                  "capped": False}
    # only the last partial sum of each element is what the naive kernel stores: "some", 1024 of 4096
    assert acc[0]["lines"][1] == {"line": "gemm_naive_f16.cu:12", "kinds": ["store"], "matched": 1024, "all": False,
                                  "capped": False}


def test_tree_reduction_matches_the_sequential_sum_only_in_part(tmp_path):
    """A tree reduction's partial sums are not the sequential loop's: its add line is matched for
    some of its values only; the block sums it stores are the sequential kernel's stores."""
    launch = os.path.join(tmp_path, "l.json")
    pair = next(p for p in json.load(open(os.path.join(ZOO, "equivalence.json")))["pairs"]
                if p["name"] == "reduce_tree_vs_sequential")
    with open(launch, "w") as f:
        json.dump(pair["launch"], f)
    rc, out, err = audit("tests/zoo/reduce_smem/reduce_smem.ptx", "--ref", "tests/zoo/reduce_smem/reduce_seq.ptx",
                         "--launch", launch, "--fp", "real", "--format", "json", "--cex-dir", str(tmp_path))
    doc = json.loads(out)
    assert rc == 0, err
    add = {x["kind"]: x for x in row(doc, "reduce_smem.cu:14")["reference"]}
    assert add["arith"]["values"] == 342 and not any(r["all"] for r in add["arith"]["lines"])
    assert [(r["line"], r["matched"]) for r in add["arith"]["lines"]] == [("reduce_seq.cu:13", 46),
                                                                         ("reduce_seq.cu:16", 2)]
    out_row = {x["kind"]: x for x in row(doc, "reduce_smem.cu:19")["reference"]}
    assert out_row["store"]["lines"][0] == {"line": "reduce_seq.cu:16", "kinds": ["store"], "matched": 2, "all": True,
                                            "capped": False}


def test_lines_the_run_never_executed_are_not_shown_as_bounded():
    # (rows 8-10 said "bounded" like the lines the run checked; a proof over every path stays proved)
    rc, out, _ = audit("tests/data/audit/untaken.ptx", "--launch", "tests/data/audit/untaken.launch.json",
                       "--format", "json")
    doc = json.loads(out)
    assert {r["line"]: r["status"] for r in doc["rows"] if r["lineno"] in range(4, 11)} == {
        "untaken.cu:4": "bounded", "untaken.cu:5": "bounded", "untaken.cu:6": "bounded", "untaken.cu:7": "bounded",
        "untaken.cu:8": "not executed", "untaken.cu:9": "not executed", "untaken.cu:10": "not executed"}
    assert row(doc, "untaken.cu:8")["evidence"][0]["kind"] == "not-executed"


def test_an_equivalence_violation_is_in_its_row():
    # (only the check report's obligations reached the rows: line 16 showed proved, the verdict violated)
    rc, out, _ = audit("tests/zoo/saxpy_vec/saxpy_vec__missing_scale.ptx", "--ref", "tests/zoo/saxpy_vec/saxpy_scalar.ptx",
                       "--launch", "tests/data/gate_equiv/saxpy_vec.launch.json", "--ref-launch",
                       "tests/data/gate_equiv/saxpy_scalar.launch.json", "--fp", "bitexact", "--format", "json")
    assert rc == 1
    doc = json.loads(out)
    r = row(doc, "saxpy_vec__missing_scale.cu:16")
    assert r["status"] == "violated" and {"id": "equivalence", "status": "violated"} in r["obligations"]
    assert doc["summary"]["counts"]["equivalence"] == {"violated": 1}


def test_warning_tier_violations_are_counted_and_shown_as_warnings():
    rc, out, _ = audit("tests/data/warp_mbarrier/warp_mbarrier__all_lanes_init.ptx", "--block", "32", "--arg",
                       "in=32:f32", "--arg", "out=32:f32", "--format", "json")
    doc = json.loads(out)
    assert rc == 0 and doc["summary"]["verdict"] == "verified"
    assert doc["summary"]["counts"]["mbarrier"].get("violated", 0) == 0 and doc["summary"]["counts"]["mbarrier"]["warning"] == 2
    assert row(doc, "warp_mbarrier.cu:8")["status"] == "warning"
    rc, out, _ = audit("tests/data/warp_mbarrier/warp_mbarrier__all_lanes_init.ptx", "--block", "32", "--arg",
                       "in=32:f32", "--arg", "out=32:f32")
    assert "| checker | proved | bounded | violated | warning | unknown | vacuous |" in out


@pytest.mark.parametrize("target, says", [("/nonexistent/x.md", "-o: no such directory"), ("{tmp}", "-o: is a directory")])
def test_an_output_path_that_cannot_be_written_is_exit_2_before_checking(tmp_path, target, says):
    target = target.format(tmp=tmp_path)
    rc, out, err = audit("tests/zoo/vadd/vadd.ptx", "-o", target)
    assert rc == 2 and err.strip() == f"{target}:0:0: {says}"


def test_two_headers_of_one_name_are_rows_of_their_own():
    # a/util.h:3 writes s[t], b/util.h:3 reads s[t + 1] with no barrier: rows keyed by the base
    # name merged them into one util.h:3 row with b's text and each finding twice
    rc, out, _ = audit("tests/data/audit_samebase/two_headers.ptx", "--grid", "1", "--block", "64",
                       "--arg", "in=64:f32", "--arg", "out=64:f32", "--format", "json")
    assert rc == 1
    doc = json.loads(out)
    assert [r["line"] for r in doc["rows"] if "util.h" in r["line"]] == [
        "a/util.h:2", "a/util.h:3", "a/util.h:4", "b/util.h:2", "b/util.h:3"]
    write, read = row(doc, "a/util.h:3"), row(doc, "b/util.h:3")
    assert (write["file"], write["source"], write["accesses"]) == ("a/util.h", "  s[t] = in[t];",
                                                                   ["load global", "store shared::cta"])
    assert (read["file"], read["source"], read["accesses"]) == (
        "b/util.h", "  return s[(t + 1) % 64];   // racy read, no barrier before it", ["load shared::cta"])
    assert [f["rule"] for f in write["findings"]] == ["race.shared", "race.shared"]
    assert [f["rule"] for f in read["findings"]] == ["uninitialized", "race.shared", "race.shared"]
    ev = read["evidence"][0]
    assert (ev["kind"], ev["other"]["line"], ev["other"]["access"]) == ("program-order", "a/util.h:3",
                                                                        "write (st.shared.f32)")


def test_findings_of_a_kernel_without_line_info_are_in_their_ptx_rows():
    # nolineinfo.ptx: nvcc -ptx without -lineinfo; rows are keyed "ptx N" and the findings are
    # located in the PTX file itself (nolineinfo.ptx:83): no row showed its findings
    rc, out, _ = audit("tests/data/audit_nolineinfo/nolineinfo.ptx", "--grid", "1", "--block", "256",
                       "--arg", "0=256:f32", "--arg", "1=1:f32", "--arg", "2=256", "--format", "json")
    assert rc == 1
    doc = json.loads(out)
    r = row(doc, "ptx 83")
    assert r["ptx"] == [{"ptx_line": 83, "text": "ld.shared.f32 %f14, [%r4+64];"}]
    assert [f["rule"] for f in r["findings"]] == ["race.shared"] and r["status"] == "violated"
    assert [f["rule"] for f in row(doc, "ptx 58")["findings"]] == ["race.shared", "race.shared"]
    assert [r["line"] for r in doc["rows"] if r["findings"]] == [
        "ptx 58", "ptx 65", "ptx 74", "ptx 76", "ptx 83", "ptx 85", "ptx 92", "ptx 94", "ptx 101", "ptx 103",
        "ptx 110", "ptx 112", "ptx 118"]


def test_the_audit_run_sizes_the_buffers_the_launch_leaves_out_as_the_check_does():
    # --grid/--block without --arg: check sized in and out from the accesses, the audit's own run
    # had no values for them ("no timeline") and every row lost its evidence
    rc, out, _ = audit("tests/data/gate_multikernel/two_kernels.ptx", "--kernel", "bad", "--grid", "1",
                       "--block", "64", "--format", "json")
    assert rc == 1
    doc = json.loads(out)
    assert doc["timeline"]["note"] == "deterministic schedule, run complete, 12 events"
    ev = row(doc, "two_kernels.cu:12")["evidence"][0]
    assert (ev["kind"], ev["conflict"], ev["other"]["line"]) == ("program-order", "read-after-write", "two_kernels.cu:11")


def test_a_line_violated_by_no_race_does_not_say_the_run_found_one():
    """The store of an accumulator nobody zeroed (uninitialized.register): its row is violated, and its
    evidence says no earlier conflicting access was ordered before it, without the race remark."""
    rc, out, _ = audit("tests/data/uninit_reg/uninit_reg.ptx", "--kernel", "dot_rows", "--launch",
                       "tests/data/uninit_reg/dot_rows.json", "--format", "json")
    assert rc == 1
    r = row(json.loads(out), "uninit_reg.cu:13")
    assert r["status"] == "violated" and {f["rule"] for f in r["findings"]} == {"uninitialized.register"}
    assert r["evidence"][0] == {"kind": "no-conflict", "note": "no earlier conflicting access of the same bytes "
                                "was ordered before it in the run"}
