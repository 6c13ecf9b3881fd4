"""Static mbarrier parity for waits in two nested loops (verifier.mbarrier.ring): the
persistent_pipeline family, whose (index, phase) ring state runs on across a persistent tile
loop and the k loop, is proved for every ntiles / k_tiles (scalar parameters symbolic), and its
seeded twins are violated with the iteration and line, or not proved."""
import json

import pytest

from conftest import ZOO
from kverify.launch import LaunchSpec
from kverify.semantics.ir import load_module
from kverify.verifier.mbarrier import check_mbarrier

FAM = "persistent_pipeline"


def _parity(file, symbolic):
    man = json.loads((ZOO / FAM / "manifest.json").read_text())
    v = next(v for v in man["variants"] if v["file"] == file)
    launch = dict(v["launch"])
    if symbolic:
        launch["args"] = {}  # ntiles and k_tiles symbolic
    module = load_module(str((ZOO / FAM / file).with_suffix(".ptx")))
    obs = check_mbarrier(module, v["kernel"], LaunchSpec.from_dict(launch))
    assert obs[0].title == "mbarrier conformance: parity (initial phase and alternation)"
    return obs[0]


@pytest.mark.parametrize("symbolic", [True, False])
def test_persistent_ring_is_proved_for_every_trip_count(symbolic):
    ob = _parity("persistent_pipeline.cu", symbolic)
    assert ob.status == "proved", ob.message
    assert [loc.line for loc in ob.locations] == [127, 142]
    # the producer passes fresh empty[] barriers, the consumer waits for the fills
    assert "persistent_pipeline.cu:127:11 (ptx 152): first use parity 1 (producer's pass-through" in ob.message
    assert "persistent_pipeline.cu:142:9 (ptx 243): first use parity 0 (consumer of the fill" in ob.message
    assert ob.message.count("flipping every 3 executions") == 2
    assert "uses barrier 0xc18, 0xc20, 0xc28[n mod 3]" in ob.message  # empty[0..2]
    assert "uses barrier 0xc00, 0xc08, 0xc10[n mod 3]" in ob.message  # full[0..2]
    assert ob.message.count("periodic in n (period 6)") == 2


@pytest.mark.parametrize("symbolic", [True, False])
def test_consumer_starting_at_phase_one_is_violated_at_the_first_execution(symbolic):
    ob = _parity("persistent_pipeline__wrong_initial_phase.cu", symbolic)
    assert ob.status == "violated" and ob.rule == "mbarrier.parity"
    assert [loc.line for loc in ob.locations] == [148]
    cex = ob.counterexample
    assert cex["iterations"] == [0, 0] and cex["execution"] == 0 and cex["use"] == 0
    assert cex["parity"] == 1 and cex["expected_parity"] == 0
    assert cex["barrier_address"] == 0xc00  # full[0]
    assert "parity 1 returns at once" in ob.message


def test_ring_without_phase_flip_is_violated_at_its_second_round():
    ob = _parity("persistent_pipeline__consumer_no_phase_flip.cu", symbolic=True)
    assert ob.status == "violated" and ob.rule == "mbarrier.parity"
    assert [loc.line for loc in ob.locations] == [149]
    cex = ob.counterexample
    # execution 3 of the consumer's wait is the second use of full[0]: it needs k_tiles >= 4
    assert cex["iterations"] == [0, 3] and cex["use"] == 1 and cex["reuse_distance"] == 3
    assert cex["parity"] == 0 and cex["expected_parity"] == 1
    assert cex["barrier_address"] == 0xc00
    assert cex["params"]["k_tiles"] >= 4


def test_ring_without_phase_flip_is_not_proved_when_the_launch_keeps_it_in_the_first_tile_round():
    # the launch's k_tiles = 2: execution 3 is in a later tile, beyond the first outer iteration
    ob = _parity("persistent_pipeline__consumer_no_phase_flip.cu", symbolic=False)
    assert ob.status == "unknown"
    assert [loc.line for loc in ob.locations] == [149]
    assert ("execution 3 (use 1 of its barrier) names parity 0 instead of 1, but it is not reached in the first "
            "iteration of loop") in ob.message


@pytest.mark.parametrize("symbolic", [True, False])
def test_producer_ring_reset_per_tile_is_not_proved(symbolic):
    ob = _parity("persistent_pipeline__producer_resets_per_tile.cu", symbolic)
    assert ob.status == "unknown"
    assert [loc.line for loc in ob.locations] == [136]
    assert "the wait is inside nested loops" in ob.message
    assert "the ring position is not carried as one count across the loops" in ob.message


def _elect_guarded(mask: str, cond: str):
    from test_mbarrier_static import HEAD, OWN_SPEC, wait
    from kverify.semantics.ir import parse_ptx

    body = (f"\telect.sync \t%r9|%p5, {mask};\n\tsetp.{cond}.s32 \t%p6, %r1, {0 if cond == 'eq' else 2};\n"
            "\tand.pred \t%p7, %p5, %p6;\n"
            "\t@!%p7 bra \t$L_skip;\n\tmov.u32 \t%r10, 64;\n"
            "\tmbarrier.arrive.expect_tx.shared::cta.b64 _, [%r2], %r10;\n"
            "\tcp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r4], [%rd2], %r10, [%r2];\n"
            "$L_skip:\n" + wait("W0", "%r2", 0) + "\tret;\n}\n")
    module = parse_ptx(HEAD.replace("{count}", "1") + body, "own.ptx")
    return {o.title.split(": ", 1)[1].split(" (")[0]: o
            for o in check_mbarrier(module, module.kernel("k"), LaunchSpec.from_dict(OWN_SPEC), timeout_s=20)}


def test_elect_sync_and_thread_zero_guard_is_counted_assuming_lane_zero():
    """CUTLASS posts expect-tx under ``elect_one_sync() && warp-group thread 0``: the count is one
    if the full-mask election picks lane 0, as current hardware does; the ISA says only that the
    election is deterministic, so the proof says what it assumes."""
    obs = _elect_guarded("-1", "eq")
    for what in ("tx bytes", "arrivals"):
        assert obs[what].status == "proved", obs[what].message
        assert obs[what].message.endswith(
            "; assuming elect.sync with the full membermask elects lane 0 (current hardware elects the lowest "
            "active lane; the PTX ISA, §9.7.13.9, says only that the election is deterministic)")


@pytest.mark.parametrize("mask,cond", [("65535", "eq"), ("-1", "lt")])
def test_elect_sync_guard_stays_unknown_without_a_full_mask_or_beyond_lane_zero(mask, cond):
    """A partial membermask (the elected lane need not be 0), or a condition lanes 0 and 1 meet
    (which one is elected decides nothing, but more than lane 0 meet it): not counted."""
    obs = _elect_guarded(mask, cond)
    for what in ("tx bytes", "arrivals"):
        assert obs[what].status == "unknown"
        assert "which the PTX ISA leaves unspecified" in obs[what].message
        assert ("an elect.sync guard combined with a condition that only lane(s) "
                + ("0" if cond == "eq" else "[0, 1]") + " of warp 0 meet") in obs[what].message


def test_elect_with_a_constant_mask_elects_the_same_lane_in_every_iteration():
    """"the same leader thread is elected for the same membermask every time" (§9.7.13.9): the
    symbolic leader of an elect.sync with a constant membermask inside a loop does not depend on
    the iteration; with a membermask read from memory it does."""
    from kverify.semantics.ir import parse_ptx
    from kverify.symbolic import Env
    from kverify.symbolic.executor import Executor
    import z3

    def leaders(mask_setup):
        body = ("\t.reg .pred %p<4>;\n\t.reg .b32 %r<12>;\n\t.reg .b64 %rd<4>;\n"
                "\tld.param.u64 %rd1, [k_param_0];\n" + mask_setup +
                "\tmov.u32 %r1, 0;\n$L_loop:\n\telect.sync %r2|%p1, %r9;\n\t@%p1 st.global.u32 [%rd1], %r1;\n"
                "\tadd.s32 %r1, %r1, 1;\n"
                "\tsetp.lt.u32 %p2, %r1, 4;\n\t@%p2 bra $L_loop;\n\tret;\n}\n")
        ptx = (".version 8.0\n.target sm_90a\n.address_size 64\n.visible .entry k(\n\t.param .u64 k_param_0\n)\n"
               ".reqntid 64\n{\n" + body)
        m = parse_ptx(ptx, "own.ptx")
        env = Env(m, m.kernel("k"), None)
        def check(f):
            sol = z3.Solver()
            sol.add(f)
            r = sol.check()
            return ("sat", sol.model()) if r == z3.sat else ("unsat" if r == z3.unsat else "unknown", None)

        ex = Executor(env, check)
        ex.run()
        return sorted(f.arity() for n, f in env.uf_decls.items() if n.startswith("elect"))

    assert leaders("\tmov.u32 %r9, -1;\n") == [4]
    assert leaders("\tld.global.u32 %r9, [%rd1];\n") == [5]


def test_producer_tail_after_the_loops_goes_on_with_the_ring():
    """CUTLASS's load_tail: after the loops the producer waits on each stage's empty barrier once
    more (unrolled, line 145), execution G + j of its ring: proved for the launch's trip counts."""
    ob = _parity("persistent_pipeline_tail.cu", symbolic=False)
    assert ob.status == "proved", ob.message
    assert [loc.line for loc in ob.locations] == [135, 156, 145, 145, 145]
    assert [loc.ptx_line for loc in ob.locations][2:] == [216, 236, 255]
    for j in range(3):
        assert (f"after the loops: execution G + {j} of the ring of persistent_pipeline_tail.cu:135:11 (ptx 154) (G: "
                "the thread's executions of that wait before it), so barrier 0xc18, 0xc20, 0xc28"
                f"[(G + {j}) mod 3] and parity ((G + {j}) div 3 + 1) mod 2") in ob.message


def test_producer_tail_with_the_opposite_parity_is_not_proved():
    ob = _parity("persistent_pipeline_tail__wrong_tail_parity.cu", symbolic=True)
    assert ob.status == "unknown" and ob.rule is None
    assert [loc.line for loc in ob.locations] == [151]
    assert "after the loops it must be execution G + 0 of the ring of" in ob.message
    assert "parity ((G + 0) div 3 + 1) mod 2, but for G = " in ob.message
    assert ob.message.endswith("the counterexample rests on loop-carried values the summaries havoc, which the run decides")


def test_producer_tail_with_symbolic_trip_counts_is_left_unknown_within_its_cap():
    """With ntiles and k_tiles symbolic, following the count's residue costs z3 4-9 million units
    a wait: each tail query stops at its cap and says so; the loops' waits stay proved."""
    ob = _parity("persistent_pipeline_tail.cu", symbolic=True)
    assert ob.status == "unknown"
    assert [loc.line for loc in ob.locations] == [145]
    assert ob.message.endswith("the solver gave no answer within 3,000,000 units (symbolic trip counts make the "
                               "count's residue hard to follow)")


def test_producer_tail_that_does_not_advance_its_ring_is_not_proved():
    """The tail's second wait repeats the first one's stage and parity: it is execution G + 1 of the
    ring and must use the next stage, so it is not proved (the first tail wait, execution G, is)."""
    ob = _parity("persistent_pipeline_tail__tail_no_advance.cu", symbolic=False)
    assert ob.status == "unknown" and ob.rule is None
    assert [loc.line for loc in ob.locations] == [152]
    assert "after the loops it must be execution G + 1 of the ring of" in ob.message
    assert "[(G + 1) mod 3] and parity ((G + 1) div 3 + 1) mod 2, but for G = " in ob.message
