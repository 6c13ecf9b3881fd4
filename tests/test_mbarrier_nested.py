"""Static mbarrier parity for waits in two nested loops (verifier.mbarrier.ring): the
persistent_pipeline family, whose (index, phase) ring state runs on across a persistent tile
loop and the k loop, is proved for every ntiles / k_tiles (scalar parameters symbolic), and its
seeded twins are violated with the iteration and line, or not proved. The persistent_pipeline_split
family waits on one ring at two sites (the first k-tile before the k loop, the others in it), with
and without a tile loop around them."""
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


# ---------------------------------------------------------------------- one ring, two wait sites
SPLIT = "persistent_pipeline_split"


def _split_parity(file, symbolic=False):
    man = json.loads((ZOO / SPLIT / "manifest.json").read_text())
    v = next(v for v in man["variants"] if v["file"] == file)
    launch = dict(v["launch"])
    if symbolic:
        launch["args"] = {}
    module = load_module(str((ZOO / SPLIT / file).with_suffix(".ptx")))
    obs = check_mbarrier(module, v["kernel"], LaunchSpec.from_dict(launch))
    assert obs[0].title == "mbarrier conformance: parity (initial phase and alternation)"
    return obs[0]


def test_ring_waited_on_before_and_inside_the_k_loop_is_proved_over_both_sites():
    """CUTLASS's consumer waits for a tile's first k-tile before the k loop (line 159) and for the
    others in it (line 164), one ring state advanced after each: the ring count is the sum of both
    sites' counts, and each wait is proved to follow it."""
    ob = _split_parity("persistent_pipeline_split.cu")
    assert ob.status == "proved", ob.message
    assert [loc.line for loc in ob.locations] == [144, 159, 164]
    assert ("persistent_pipeline_split.cu:159:9 (ptx 236): before loop $L__BB0_10 (line 163): execution G + 0 of the "
            "ring of persistent_pipeline_split.cu:164:11 (ptx 304) (G: the ring count at the head of loop $L__BB0_5 "
            "(line 155)), so barrier 0xc00, 0xc08, 0xc10[(G + 0) mod 3] and parity ((G + 0) div 3 + 0) mod 2") \
        in ob.message
    assert ("persistent_pipeline_split.cu:164:11 (ptx 304): first use parity 0 (consumer of the fill" in ob.message)
    assert ("the n-th execution (counted over the waits at persistent_pipeline_split.cu:159:9 (ptx 236) and here, "
            "loops $L__BB0_5 (line 155) and $L__BB0_10 (line 163)) uses barrier 0xc00, 0xc08, 0xc10[n mod 3] for the "
            "(n div 3)-th time") in ob.message
    # the producer's one-site ring is unchanged
    assert ("the n-th execution (counted over loops $L__BB0_17 (line 141) and $L__BB0_19 (line 143)) uses barrier "
            "0xc18, 0xc20, 0xc28[n mod 3]") in ob.message


def test_hoisted_wait_with_the_opposite_parity_is_violated_at_its_first_execution():
    ob = _split_parity("persistent_pipeline_split__hoisted_wrong_parity.cu")
    assert ob.status == "violated" and ob.rule == "mbarrier.parity", ob.message
    assert [loc.line for loc in ob.locations] == [159]
    cex = ob.counterexample
    assert cex["iterations"] == [0] and cex["execution"] == 0 and cex["use"] == 0
    assert cex["parity"] == 1 and cex["expected_parity"] == 0
    assert cex["barrier_address"] == 0xc00  # full[0]
    assert ("in iteration 0 of loop $L__BB0_5 (line 155) (before loop $L__BB0_10 (line 163)) is execution 0 of the "
            "ring it shares with persistent_pipeline_split__hoisted_wrong_parity.cu:164:11 (ptx 306)") in ob.message
    assert ob.message.endswith("on a fresh barrier (phase 0 in progress) parity 1 returns at once, before the phase "
                               "completes")


def test_k_loop_wait_with_the_opposite_parity_is_violated_at_the_rings_second_execution():
    """Execution 1 of the ring (the hoisted wait is execution 0) is the k loop's first iteration:
    use 0 of full[1], in outer iteration 0."""
    ob = _split_parity("persistent_pipeline_split__kloop_wrong_parity.cu")
    assert ob.status == "violated" and ob.rule == "mbarrier.parity"
    assert [loc.line for loc in ob.locations] == [164]
    cex = ob.counterexample
    assert cex["iterations"] == [0, 0] and cex["execution"] == 1 and cex["use"] == 0
    assert cex["parity"] == 1 and cex["expected_parity"] == 0
    assert cex["barrier_address"] == 0xc08  # full[1]


def test_hoisted_wait_that_does_not_advance_the_ring_is_not_proved():
    """The k loop starts on the stage the hoisted wait used: the ring state at the tile loop's head
    is no function of the ring count over both sites."""
    ob = _split_parity("persistent_pipeline_split__hoisted_no_advance.cu")
    assert ob.status == "unknown" and ob.rule is None
    assert [loc.line for loc in ob.locations] == [164]
    assert ob.message == (
        "persistent_pipeline_split__hoisted_no_advance.cu:164:11 (ptx 296): the wait is inside nested loops (a ring "
        "waited on here and at persistent_pipeline_split__hoisted_no_advance.cu:159:9 (ptx 236)): the ring registers "
        "of loop $L__BB0_5 (line 155) (%r104, %r105) are not a function of the ring position at its head")


def test_two_site_ring_with_symbolic_trip_counts_is_left_unknown_with_the_reason():
    """The outer loop's ring registers are guessed by running its step with the k loop's trip count
    a constant; with k_tiles symbolic that is not done, and the obligation says so."""
    ob = _split_parity("persistent_pipeline_split.cu", symbolic=True)
    assert ob.status == "unknown"
    assert [loc.line for loc in ob.locations] == [164]
    assert ob.message.endswith("the iterations of loop $L__BB0_10 (line 163) are not a constant in iteration 0 of loop "
                               "$L__BB0_5 (line 155): the ring's step over loop $L__BB0_5 (line 155) is not simulated")


@pytest.mark.parametrize("symbolic", [True, False])
def test_ring_waited_on_before_and_inside_a_single_k_loop_is_proved(symbolic):
    """Without a tile loop (CUTLASS's non-persistent kernel) the wait before the k loop (line 138)
    is the ring's execution 0 and the k loop's iteration k execution 1 + k: proved for every
    k_tiles."""
    ob = _split_parity("persistent_pipeline_split_one_tile.cu", symbolic)
    assert ob.status == "proved", ob.message
    assert [loc.line for loc in ob.locations] == [123, 143, 138]
    assert ("persistent_pipeline_split_one_tile.cu:143:11 (ptx 265): iteration k of loop $L__BB0_9 (line 142) is "
            "execution 1 + k of the ring it shares with the waits at persistent_pipeline_split_one_tile.cu:138:9 "
            "(ptx 207) before the loop: iterations 0 .. 2 each name the phase of its barrier's use after those waits "
            "(consumer of the fill") in ob.message
    assert "persistent_pipeline_split_one_tile.cu:138:9 (ptx 207): use 0 waits on parity 0 (consumer of the fill" \
        in ob.message


def test_single_k_loop_starting_on_the_hoisted_waits_stage_is_violated_at_its_first_iteration():
    ob = _split_parity("persistent_pipeline_split_one_tile__hoisted_no_advance.cu", symbolic=True)
    assert ob.status == "violated" and ob.rule == "mbarrier.parity"
    assert [loc.line for loc in ob.locations] == [143]
    cex = ob.counterexample
    assert cex["iterations"] == [0] and cex["execution"] == 1 and cex["use"] == 1
    assert cex["parity"] == [0] and cex["expected_parity"] == 1
    assert cex["barrier_address"] == 0xc00  # full[0], used by the wait before the loop
    assert cex["params"]["k_tiles"] >= 2
    assert ("in iteration 0 of loop $L__BB0_9 (line 142) is execution 1 of the ring it shares with the waits at "
            "persistent_pipeline_split_one_tile__hoisted_no_advance.cu:138:9 (ptx 207) before the loop, use 1 of the "
            "barrier at shared address 0xc00 (reuse distance 3), and names parity 0, but it must wait on parity 1") \
        in ob.message


def _split_arrivals(ptx_path, symbolic=False):
    man = json.loads((ZOO / SPLIT / "manifest.json").read_text())
    v = next(v for v in man["variants"] if v["file"] == "persistent_pipeline_split.cu")
    launch = dict(v["launch"])
    if symbolic:
        launch["args"] = {}  # ntiles and k_tiles symbolic
    obs = check_mbarrier(load_module(str(ptx_path)), v["kernel"], LaunchSpec.from_dict(launch))
    assert obs[2].title == "mbarrier conformance: arrivals (per phase)"
    return obs[2]


def test_releases_before_and_inside_the_k_loop_are_counted_in_the_rings_forms():
    """The consumers release the stage of a tile's first k-tile before the k loop (its barrier a
    register of the tile loop's head) and the others in it: both addresses are the ring's forms
    (the outer head's ones for the first), so each release is one phase of one empty barrier."""
    ob = _split_arrivals(ZOO / SPLIT / "persistent_pipeline_split.ptx")
    assert ob.status == "proved", ob.message
    assert ("persistent_pipeline_split.cu:115:5 (ptx 271) x4, persistent_pipeline_split.cu:115:5 (ptx 337) x4"
            in ob.message)


def test_an_unguarded_release_before_the_k_loop_is_violated(tmp_path):
    """Every lane (not lane 0 of each warp) releases the first k-tile's stage: 128 arrivals per
    phase on a barrier of count 4."""
    text = (ZOO / SPLIT / "persistent_pipeline_split.ptx").read_text()
    guard = "\t@%p5 bra \t$L__BB0_8;\n"
    assert text.count(guard) == 1
    ptx = tmp_path / "persistent_pipeline_split.ptx"
    ptx.write_text(text.replace(guard, ""))
    (tmp_path / "persistent_pipeline_split.cu").write_text((ZOO / SPLIT / "persistent_pipeline_split.cu").read_text())
    ob = _split_arrivals(ptx)
    assert ob.status == "violated" and ob.rule == "mbarrier.arrival-overflow", ob.message
    assert (ob.counterexample["arrivals"], ob.counterexample["init_count"]) == (128, 4)
    assert [loc.line for loc in ob.locations][-1] == 115


@pytest.mark.parametrize("symbolic", [True, False])
def test_a_tail_query_over_the_launchs_trip_counts_gets_the_larger_cap(symbolic, monkeypatch):
    """A tail proof over the launch's trip counts takes z3 1.1 million units in one process and
    over 2.75 million in another (the snapshot's collection: z3 numbers the terms otherwise), where
    a cap of 3 million made the verdict depend on what the process did before: its cap is
    ``TAIL_UNITS_CONCRETE``; a tail query over symbolic trip counts keeps ``TAIL_UNITS``."""
    from kverify.symbolic.budget import SolverBudget
    from kverify.verifier.mbarrier import parity

    caps = []
    orig = SolverBudget.capped

    def capped(self, units):
        caps.append(units)
        return orig(self, units)

    monkeypatch.setattr(SolverBudget, "capped", capped)
    ob = _parity("persistent_pipeline_tail.cu", symbolic)
    tails = [u for u in caps if u in (parity.TAIL_UNITS, parity.TAIL_UNITS_CONCRETE)]
    assert tails and set(tails) == {parity.TAIL_UNITS if symbolic else parity.TAIL_UNITS_CONCRETE}
    assert ob.status == ("unknown" if symbolic else "proved"), ob.message


def test_every_barrier_the_split_ring_shares_is_found_by_a_small_witness(monkeypatch):
    """Each may-alias answer 'sat' of the split ring's parity comes from a small witness (first
    iterations, or every value the queries are made of below ``WITNESS_ITERATIONS``), not from the
    query over all iterations: that one took 0.1 to over 2 million units on the same terms,
    depending on what the process solved before, and ended 'unknown' at its cap in a full test run
    (the consumer's waits then lost their role and the proof ended unknown)."""
    from kverify.verifier.mbarrier import facts

    full = []
    orig = facts.Facts._capped_solve

    def capped(self, q):
        r = orig(self, q)
        full.append(r)
        return r

    monkeypatch.setattr(facts.Facts, "_capped_solve", capped)
    ob = _split_parity("persistent_pipeline_split.cu")
    assert ob.status == "proved", ob.message
    assert "sat" not in full and "unknown" not in full, full
