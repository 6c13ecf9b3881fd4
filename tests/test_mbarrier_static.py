"""Static mbarrier conformance (verifier.mbarrier): parity flips, tx bytes and arrival
counts proved for all loop iterations on the zoo's pipelines, and the seeded bugs found
with their rule and line."""
import json
import re
import time
from dataclasses import replace

import pytest

from conftest import ZOO
from kverify.launch import LaunchSpec
from kverify.semantics.ir import load_module
from kverify.verifier.mbarrier import check_mbarrier


def _variant(fam, file):
    man = json.loads((ZOO / fam / "manifest.json").read_text())
    return next(v for v in man["variants"] if v["file"] == file)


def _check(fam, file, launch_patch=None):
    v = _variant(fam, file)
    launch = dict(v["launch"])
    if launch_patch:
        launch["args"] = {**launch.get("args", {}), **launch_patch}
    module = load_module(str((ZOO / fam / file).with_suffix(".ptx")))
    t = time.perf_counter()
    obs = check_mbarrier(module, v["kernel"], LaunchSpec.from_dict(launch))
    dt = time.perf_counter() - t
    assert [o.title for o in obs] == ["mbarrier conformance: parity (initial phase and alternation)",
                                      "mbarrier conformance: tx bytes (per phase)",
                                      "mbarrier conformance: arrivals (per phase)"]
    assert all(o.checker == "mbarrier" for o in obs)
    return {o.title.split(": ", 1)[1].split(" (")[0]: o for o in obs}, v, dt


@pytest.mark.parametrize("fam, file", [
    ("bulk_pipeline", "bulk_pipeline.cu"),
    ("wgmma_pipeline", "wgmma_pipeline.cu"),
    ("peek_pipeline", "peek_pipeline.cu"),
    ("tma_tensor_load", "tma_tensor_load.cu"),
    ("warp_specialized", "warp_specialized.cu"),
])
def test_correct_pipelines_are_proved_for_all_iterations(fam, file):
    obs, _, dt = _check(fam, file)
    assert {k: o.status for k, o in obs.items()} == {"parity": "proved", "tx bytes": "proved",
                                                     "arrivals": "proved"}


def test_triton_prefetch_predicated_on_the_iteration_leaves_arrivals_unknown():
    """Triton's software pipeline issues the expect-tx of iteration k + 2 in iteration k under
    ``k + 2 < num_k``: its one arrival per phase holds only while that is true. Whether no wait
    waits for a phase past the end is not checked, so the arrivals are unknown (they were proved
    under that condition); parity and tx bytes stay proved."""
    obs, _, _ = _check("triton", "tma_matmul.ptx")
    assert {k: o.status for k, o in obs.items()} == {"parity": "proved", "tx bytes": "proved",
                                                     "arrivals": "unknown"}
    assert re.fullmatch(r"tests/zoo/triton/generate\.py:100:22 \(ptx 515\): its threads run it in iteration \d+ and "
                        r"not in iteration \d+ of loop \$L__BB0_2 \(line 100\): a phase may miss its arrivals",
                        obs["arrivals"].message)


@pytest.mark.parametrize("fam, file, what, rule", [
    ("bulk_pipeline", "bulk_pipeline__wrong_parity.cu", "parity", "mbarrier.parity"),
    ("peek_pipeline", "peek_pipeline__wrong_parity.cu", "parity", "mbarrier.parity"),
    ("bulk_pipeline", "bulk_pipeline__tx_mismatch.cu", "tx bytes", "mbarrier.tx-mismatch"),
    ("bulk_pipeline", "bulk_pipeline__wrong_arrival_count.cu", "arrivals", "mbarrier.arrival-overflow"),
    ("triton", "tma_matmul__parity_never_flips.ptx", "parity", "mbarrier.parity"),
    ("triton", "tma_matmul__half_tx_bytes.ptx", "tx bytes", "mbarrier.tx-mismatch"),
])
def test_seeded_mbarrier_bugs_are_violated_with_rule_and_line(fam, file, what, rule):
    obs, v, _ = _check(fam, file)
    ob = obs[what]
    assert ob.status == "violated" and ob.rule == rule
    lines = {l.line for l in ob.locations} | {l.ptx_line for l in ob.locations}
    assert v["bug"]["line"] in lines
    assert ob.counterexample and ob.counterexample["rule"] == rule
    others = [o for k, o in obs.items() if k != what]
    assert all(o.status != "violated" for o in others)


def test_parity_counterexample_names_iterations_and_barrier():
    obs, _, _ = _check("bulk_pipeline", "bulk_pipeline__wrong_parity.cu")
    ce = obs["parity"].counterexample
    k0, k1 = ce["iterations"]
    assert k1 - k0 == ce["reuse_distance"] == 3
    assert ce["parity"][0] == ce["parity"][1]
    assert isinstance(ce["barrier_address"], int)


def test_arrive_drop_is_unknown_with_a_reason():
    obs, _, _ = _check("arrive_drop", "arrive_drop.cu")
    assert obs["arrivals"].status == "unknown" and "arrive_drop changes the expected count" in obs["arrivals"].message
    assert all(o.status != "violated" for o in obs.values())


def test_remote_arrivals_are_counted_on_the_rank_they_name(tmp_path):
    # rank 1's 128 threads arrive on rank 0's barrier (count 128) through mapa; rank 1's own
    # barrier gets none and nothing waits on it there
    obs, _, _ = _check("cluster_arrive", "cluster_arrive.cu")
    arr = obs["arrivals"]
    assert arr.status == "proved", arr.message
    assert ("cluster_arrive.cu:96:5 (ptx 111) x128 on cluster rank 0, 0 on cluster rank 1 (not waited on there) "
            "(remote" in arr.message)
    # the same kernel with the barrier initialized for 64 arrivals: rank 0 receives 128
    v = _variant("cluster_arrive", "cluster_arrive.cu")
    text = (ZOO / "cluster_arrive" / "cluster_arrive.ptx").read_text()
    assert text.count("mov.u32 \t%r5, 128;") == 1
    ptx = tmp_path / "cluster_arrive.ptx"
    ptx.write_text(text.replace("mov.u32 \t%r5, 128;", "mov.u32 \t%r5, 64;"))
    (tmp_path / "cluster_arrive.cu").write_text((ZOO / "cluster_arrive" / "cluster_arrive.cu").read_text())
    arr = check_mbarrier(load_module(str(ptx)), v["kernel"], LaunchSpec.from_dict(v["launch"]))[2]
    assert arr.status == "violated" and arr.rule == "mbarrier.arrival-overflow", arr.message
    assert (arr.counterexample["arrivals"], arr.counterexample["init_count"], arr.counterexample["cluster_rank"]) == (128, 64, 0)
    assert [loc.line for loc in arr.locations] == [86, 96]


def test_tensor_copy_without_tensor_maps_is_unknown_not_proved():
    v = _variant("triton", "tma_matmul.ptx")
    module = load_module(str(ZOO / "triton" / "tma_matmul.ptx"))
    spec = replace(LaunchSpec.from_dict(v["launch"]), tensormaps={})
    obs = {o.title.split(": ", 1)[1].split(" (")[0]: o for o in check_mbarrier(module, v["kernel"], spec)}
    assert obs["tx bytes"].status == "unknown" and "tensor map" in obs["tx bytes"].message


def test_the_obligations_do_not_depend_on_the_trip_count():
    # the cost's growth with the trip count is measured by bench/bench_check.py, not asserted here
    a, _, _ = _check("bulk_pipeline", "bulk_pipeline.cu", {"iters": 8})
    b, _, _ = _check("bulk_pipeline", "bulk_pipeline.cu", {"iters": 64})
    assert all(o.status == "proved" for o in list(a.values()) + list(b.values()))


# ---------------------------------------------------------------------------------------------
# Kernels of our own for the documented limits: straight-line phases, a producer / consumer ring
# with plain arrives, a flip that starts at the wrong stage, nested loops.

HEAD = """
.version 8.0
.target sm_90a
.address_size 64
.visible .entry k(
\t.param .u64 k_param_0
)
.reqntid 64, 1, 1
{
\t.reg .pred \t%p<8>;
\t.reg .b32 \t%r<48>;
\t.reg .b64 \t%rd<8>;
\t.shared .align 128 .b8 stage[1024];
\t.shared .align 8 .b8 full[16];
\t.shared .align 8 .b8 empty[16];
\tld.param.u64 \t%rd1, [k_param_0];
\tcvta.to.global.u64 \t%rd2, %rd1;
\tmov.u32 \t%r1, %tid.x;
\tmov.u32 \t%r2, full;
\tmov.u32 \t%r3, empty;
\tmov.u32 \t%r4, stage;
\tsetp.ne.s32 \t%p1, %r1, 0;
\t@%p1 bra \t$L_init_done;
\tmov.u32 \t%r5, {count};
\tmbarrier.init.shared::cta.b64 [%r2], %r5;
\tadd.u32 \t%r6, %r2, 8;
\tmbarrier.init.shared::cta.b64 [%r6], %r5;
\tmbarrier.init.shared::cta.b64 [%r3], %r5;
\tadd.u32 \t%r6, %r3, 8;
\tmbarrier.init.shared::cta.b64 [%r6], %r5;
\tfence.mbarrier_init.release.cluster;
$L_init_done:
\tbar.sync \t0;
\tand.b32 \t%r7, %r1, 31;
\tshr.u32 \t%r8, %r1, 5;
"""


def wait(label, addr, parity):
    return (f"\t{{\n\t.reg .pred p;\n\t{label}:\n\tmbarrier.try_wait.parity.shared::cta.b64 p, [{addr}], {parity};\n"
            f"\t@!p bra {label};\n\t}}\n")


def two_phases(p0=0, p1=1, copy1=32):
    """Thread 0 posts expect-tx and copies 64 bytes, every thread waits with parity ``p0``; then
    a second phase on the same barrier: expect-tx 32, a copy of ``copy1`` bytes, waits with
    parity ``p1``."""
    body = ""
    for i, (n, c, p) in enumerate(((64, 64, p0), (32, copy1, p1))):
        body += (f"\t@%p1 bra \t$L_skip{i};\n\tmov.u32 \t%r9, {n};\n\tmov.u32 \t%r11, {c};\n"
                 "\tmbarrier.arrive.expect_tx.shared::cta.b64 _, [%r2], %r9;\n"
                 f"\tcp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r4], [%rd2], %r11, [%r2];\n"
                 f"$L_skip{i}:\n" + wait(f"W{i}", "%r2", p))
    return HEAD.replace("{count}", "1") + body + "\tret;\n}\n"


def ring(consumer_arrives_on="%r15", first=1, nested=False, iters=4):
    """Warp 0 fills stage[k % 2] with generic stores and arrives on full[k % 2] after waiting
    empty[k % 2] with parity ``((k / 2) & 1) ^ first``; warp 1 waits full[k % 2] with parity
    ``(k / 2) & 1``, reads the stage and arrives on ``consumer_arrives_on`` (empty[k % 2]:
    %r15, full[k % 2]: %r16). With ``nested``, both loops run inside an outer loop of 3 tiles
    and restart ``k`` at 0 each tile."""
    def role(name, wait_on, par, action, arrive_on):
        return (f"\tmov.u32 \t%r10, 0;\n$L_{name}:\n"
                "\trem.u32 \t%r13, %r10, 2;\n\tshl.b32 \t%r14, %r13, 3;\n"
                "\tadd.u32 \t%r15, %r3, %r14;\n\tadd.u32 \t%r16, %r2, %r14;\n"
                "\tdiv.u32 \t%r12, %r10, 2;\n\tand.b32 \t%r12, %r12, 1;\n"
                f"\txor.b32 \t%r17, %r12, {first};\n"
                + wait(f"W_{name}", wait_on, par) +
                "\tshl.b32 \t%r18, %r13, 7;\n\tshl.b32 \t%r19, %r7, 2;\n\tadd.u32 \t%r20, %r18, %r19;\n"
                "\tadd.u32 \t%r20, %r20, %r4;\n" + action +
                f"\tmbarrier.arrive.shared::cta.b64 \t%rd3, [{arrive_on}];\n"
                f"\tadd.s32 \t%r10, %r10, 1;\n\tsetp.lt.s32 \t%p3, %r10, {iters};\n\t@%p3 bra \t$L_{name};\n")
    prod = role("p", "%r15", "%r17", "\tst.shared.u32 \t[%r20], %r10;\n", "%r16")
    cons = role("c", "%r16", "%r12", "\tld.shared.u32 \t%r21, [%r20];\n", consumer_arrives_on)
    body = "\tsetp.ne.s32 \t%p2, %r8, 0;\n\t@%p2 bra \t$L_consumer;\n"
    if nested:
        prod = (f"\tmov.u32 \t%r30, 0;\n$L_tp:\n{prod}\tadd.s32 \t%r30, %r30, 1;\n"
                f"\tsetp.lt.s32 \t%p4, %r30, 3;\n\t@%p4 bra \t$L_tp;\n")
        cons = (f"\tmov.u32 \t%r30, 0;\n$L_tc:\n{cons}\tadd.s32 \t%r30, %r30, 1;\n"
                f"\tsetp.lt.s32 \t%p4, %r30, 3;\n\t@%p4 bra \t$L_tc;\n")
    body += prod + "\tbra.uni \t$L_done;\n$L_consumer:\n" + cons + "$L_done:\n\tret;\n}\n"
    return HEAD.replace("{count}", "32") + body


OWN_SPEC = {"kernel": "k", "grid": [1, 1, 1], "block": [64, 1, 1],
            "buffers": {"k_param_0": {"dtype": "uint8", "shape": [1024]}}}


def _own(ptx):
    from kverify.semantics.ir import parse_ptx

    module = parse_ptx(ptx, "own.ptx")
    obs = check_mbarrier(module, module.kernel("k"), LaunchSpec.from_dict(OWN_SPEC), timeout_s=20)
    return {o.title.split(": ", 1)[1].split(" (")[0]: o for o in obs}


def test_two_straight_line_phases_on_one_barrier_are_proved_per_phase():
    obs = _own(two_phases())
    assert {k: o.status for k, o in obs.items()} == {"parity": "proved", "tx bytes": "proved",
                                                     "arrivals": "proved"}
    assert "use 1 waits on parity 1" in obs["parity"].message


def test_straight_line_tx_bytes_of_each_phase_are_matched_with_that_phase_only():
    obs = _own(two_phases(copy1=48))  # expect-tx 32 in phase 1, copy 48
    assert obs["tx bytes"].status == "violated"
    assert obs["tx bytes"].counterexample["expected_bytes"] == 32
    assert obs["tx bytes"].counterexample["copied_bytes"] == 48


@pytest.mark.parametrize("p0, p1, use", [(1, 0, 0), (0, 0, 1)])
def test_a_straight_line_wait_on_the_wrong_phase_is_violated(p0, p1, use):
    obs = _own(two_phases(p0, p1))
    ob = obs["parity"]
    assert ob.status == "violated" and ob.rule == "mbarrier.parity"
    assert ob.counterexample["use"] == use and ob.counterexample["expected_parity"] == use
    assert obs["tx bytes"].status == "proved" and obs["arrivals"].status == "proved"


def test_ring_with_generic_stores_is_proved_with_the_producer_pass_through():
    obs = _own(ring())
    assert {k: o.status for k, o in obs.items()} == {"parity": "proved", "tx bytes": "proved",
                                                     "arrivals": "proved"}
    assert "first use parity 1 (producer's pass-through: the waiting threads write shared memory" \
        in obs["parity"].message
    assert "first use parity 0 (consumer" in obs["parity"].message


def test_producer_that_waits_for_a_release_before_its_first_fill_is_violated():
    obs = _own(ring(first=0))  # the producer's first wait names phase 0 of the empty barrier: a hang
    ob = obs["parity"]
    assert ob.status == "violated" and ob.counterexample["iterations"] == [0]
    assert ob.counterexample["expected_parity"] == 1


def test_two_arrive_sites_on_one_barrier_and_none_on_its_partner_is_not_proved():
    obs = _own(ring(consumer_arrives_on="%r16"))  # the consumer releases full[s] instead of empty[s]
    assert obs["arrivals"].status == "unknown"
    assert "no arrive instruction or copy" in obs["arrivals"].message
    assert obs["parity"].status == "unknown"


def test_waits_in_nested_loops_are_unknown_not_proved():
    obs = _own(ring(nested=True))
    assert obs["parity"].status == "unknown" and "nested loops" in obs["parity"].message


def test_a_flip_that_starts_at_the_wrong_stage_is_violated():
    from test_symbolic_vs_protocol import SPEC, program
    from kverify.semantics.ir import parse_ptx

    ptx = program(n_init=1, stages=3, arrivers=1, tx_bytes=64, issuers=1, copy_bytes=64, iters=6, parity="phase")
    ptx = ptx.replace("div.u32 \t%r12, %r10, 3;", "add.u32 \t%r12, %r10, 1;\n\tdiv.u32 \t%r12, %r12, 3;")
    module = parse_ptx(ptx, "gen.ptx")
    obs = {o.title.split(": ", 1)[1].split(" (")[0]: o for o in check_mbarrier(module, module.kernel("gen"),
                                                                   LaunchSpec.from_dict(SPEC), timeout_s=20)}
    ob = obs["parity"]
    assert ob.status == "violated" and ob.counterexample["iterations"] == [2]
    wait_line = next(i for i, ln in enumerate(ptx.splitlines(), 1) if "mbarrier.try_wait" in ln)
    assert ob.locations[0].line == wait_line


def test_a_vector_pack_does_not_stop_the_static_obligations():
    """``mov.b64 %rd, {%r1, %r2}`` (in every CUTLASS / CuTe kernel) is one value of the symbolic
    engine, not a crash that leaves parity, tx bytes and arrivals unknown."""
    from kverify.launch import from_flags

    path = ZOO.parent / "data" / "vector_pack" / "vector_pack.ptx"
    m = load_module(str(path))
    k = m.kernels[0]
    obs = check_mbarrier(m, k, from_flags(k, str(path), "1", "64", ["n=64"]))
    assert [(o.title, o.status) for o in obs] == [
        ("mbarrier conformance: parity (initial phase and alternation)", "proved"),
        ("mbarrier conformance: tx bytes (per phase)", "proved"),
        ("mbarrier conformance: arrivals (per phase)", "proved")]


def test_mbarrier_complete_tx_counts_in_the_tx_bytes():
    """``mbarrier.complete_tx [bar], 32`` twice completes the 64 bytes of an
    ``arrive.expect_tx 64`` (no false tx-mismatch); one of them alone is violated at the expect-tx."""
    from kverify.launch import from_flags

    got = {}
    for name in ("complete_tx", "complete_tx__short"):
        path = ZOO.parent / "data" / "complete_tx" / f"{name}.ptx"
        m = load_module(str(path))
        k = m.kernels[0]
        obs = check_mbarrier(m, k, from_flags(k, str(path), "1", "64", []))
        got[name] = {o.title.split(": ", 1)[1].split(" (")[0]: o for o in obs}
    assert {t: o.status for t, o in got["complete_tx"].items()} == {
        "parity": "proved", "tx bytes": "proved", "arrivals": "proved"}
    tx = got["complete_tx__short"]["tx bytes"]
    assert tx.status == "violated" and tx.rule == "mbarrier.tx-mismatch"
    assert tx.locations[0].line == 25 and "deliver 32" in tx.message


def test_a_wait_that_does_not_block_separates_no_phases():
    """bulk_pipeline__wait_flips_parity: every try_wait retry loop flips its parity before each
    try, so no wait blocks until its phase completes; the tx and arrival obligations tell phases
    apart by the waits between the signals, and proved both while the run found arrivals and tx
    bytes counted into the wrong phases (mbarrier.arrival-overflow, mbarrier.tx-mismatch)."""
    obs, _, _ = _check("bulk_pipeline", "bulk_pipeline__wait_flips_parity.cu")
    for what in ("parity", "tx bytes", "arrivals"):
        assert obs[what].status == "unknown"
        assert [l.line for l in obs[what].locations] == [111]
    assert obs["arrivals"].message == (
        "bulk_pipeline__wait_flips_parity.cu:111:9 (ptx 146): the wait is not a recognized blocking retry loop: it may "
        "return before its phase completed, and the phases of the barriers are told apart by waits that block")


def test_threads_that_leave_a_loop_early_are_not_counted_in_its_later_phases():
    """bulk_pipeline__warp_leaves_early: consumer warp 3 runs 4 iterations fewer (its trip count
    depends on the thread), so the last phases of empty[] get 3 of their 4 arrivals: arrivals
    (per phase) counted every consumer in every iteration and was proved; the run deadlocks."""
    obs, _, _ = _check("bulk_pipeline", "bulk_pipeline__warp_leaves_early.cu")
    o = obs["arrivals"]
    assert o.status == "unknown" and [l.line for l in o.locations] == [130]
    assert o.message == ("bulk_pipeline__warp_leaves_early.cu:130:9 (ptx 264): cannot count the arriving threads "
                         "(the threads running it may leave loop $L__BB0_5 (line 118) after different iterations "
                         "(its trip count depends on the thread))")


def test_a_proof_states_the_block_grid_and_scalars_it_assumed():
    """A proved obligation's scope names what it rests on: the launch's block and scalar
    arguments, or, with no launch (below), every scalar value and the block of ``.maxntid`` --
    the largest the kernel allows, so smaller launches are not covered."""
    obs, v, _ = _check("bulk_pipeline", "bulk_pipeline.cu")
    assert obs["tx bytes"].status == "proved"
    assert obs["tx bytes"].bound == ("every loop iteration, the launch's scalar arguments (iters=8); "
                                     "block 160x1x1 (the launch's); grid 1x1x1 only (the launch's)")
    obs, _, _ = _check("tma_tensor_load", "tma_tensor_load.cu")  # copies sized by the launch's tensor maps
    assert obs["tx bytes"].bound == ("every loop iteration and trip count, every value of the scalar parameters; the "
                                     "launch's tensor maps (their boxes size the copies); block 128x1x1 (the launch's); "
                                     "grid 2x2x1 only (the launch's)")


@pytest.mark.slow
def test_a_proof_without_a_launch_states_the_maxntid_block_it_assumed(tmp_path, capfd):
    from kverify.verifier.cli import main

    ptx = tmp_path / "bulk_pipeline.ptx"  # no manifest next to it: the block is the kernel's .maxntid
    ptx.write_text((ZOO / "bulk_pipeline" / "bulk_pipeline.ptx").read_text())
    main(["check", str(ptx), "--format", "json", "--timeout", "20"])
    k = json.loads(capfd.readouterr().out)["kernels"][0]
    tx = next(o for o in k["obligations"] if o["title"] == "mbarrier conformance: tx bytes (per phase)")
    assert tx["status"] == "proved"
    assert tx["bound"] == ("every loop iteration and trip count, every value of the scalar parameters; block "
                           "160x1x1 (from .maxntid, the largest the kernel allows: smaller blocks not covered); "
                           "every grid (no dimension read by the kernel, the others 1)")
