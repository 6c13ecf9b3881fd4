"""The pipeline race argument (kverify/verifier/races/pipeline.py): "race-free: async" proved
for every loop iteration and trip count of the zoo's TMA + mbarrier (+ wgmma) rings, and never
proved for a twin whose bug is a race -- the zoo's seeded twins and kernels of our own
(tests/data/pipeline_races) written to make the argument lie."""
import json
import time
from pathlib import Path

import pytest

from conftest import ZOO
from kverify.launch import LaunchSpec
from kverify.semantics.ir import load_module
from kverify.verifier.check import check_kernel, combine, CHECKERS
from kverify.verifier.races.pipeline import check_pipeline_races
from kverify.verifier.report import Obligation

DATA = Path(__file__).resolve().parent / "data" / "pipeline_races"
RING2 = {"kernel": "ring2", "grid": [1, 1, 1], "block": [160, 1, 1], "args": {"iters": 6},
         "buffers": {"in": {"dtype": "float32", "shape": [1536]}, "out": {"dtype": "float32", "shape": [1536]}}}


def _zoo(fam, file):
    man = json.loads((ZOO / fam / "manifest.json").read_text())
    v = next(v for v in man["variants"] if v["file"] == file)
    return load_module(str((ZOO / fam / file).with_suffix(".ptx"))), v["kernel"], LaunchSpec.from_dict(v["launch"])


def _data(name):
    return load_module(str(DATA / f"{name}.ptx")), "ring2", LaunchSpec.from_dict(RING2)


def _run(module, kernel, spec):
    t = time.perf_counter()
    obs = {o.title: o for o in check_pipeline_races(module, kernel, spec)}
    return obs, time.perf_counter() - t


def _lines(o):
    return sorted({l.line for l in o.locations})


@pytest.mark.parametrize("src, lines", [
    (("wgmma_pipeline", "wgmma_pipeline.cu"), [171, 172, 185]),
    (("peek_pipeline", "peek_pipeline.cu"), [184, 185, 204]),
    (("ring2",), [101]),
])
def test_ring_pipelines_are_proved_for_every_trip_count(src, lines):
    obs, _ = _run(*(_zoo(*src) if len(src) == 2 else _data(*src)))
    o = obs["race-free: async"]
    assert o.status == "proved" and o.checker == "races" and o.rule is None
    assert o.bound.startswith("every loop iteration and trip count, every value of the scalar parameters, every "
                              "schedule") and "block 160x1x1" in o.bound
    assert "proved for every trip count" in o.message
    assert _lines(o) == lines
    # no generic shared write: race-free: shared follows
    assert obs["race-free: shared"].status == "proved"


def test_three_stage_ring_is_proved_for_the_launch_trip_count_only():
    # STAGES = 3: the division by 3 in the stage index keeps the parity premise unanswered for a
    # symbolic trip count within the budget; the launch's iters=8 then gives the proof, scoped so
    obs, _ = _run(*_zoo("bulk_pipeline", "bulk_pipeline.cu"))
    o = obs["race-free: async"]
    assert o.status == "proved"
    assert "the launch's scalar arguments (iters=8)" in o.bound and "trip count" not in o.bound
    assert "not proved for every value of the scalar parameters" in o.message
    assert _lines(o) == [113]


@pytest.mark.parametrize("fam, file, lines, words", [
    ("wgmma_pipeline", "wgmma_pipeline__wait_group_too_shallow.cu", [176, 190],
     "the wgmma at line 190 is not retired by a wgmma.wait_group in its iteration"),
    ("peek_pipeline", "peek_pipeline__wait_group_too_shallow.cu", [189, 209],
     "the wgmma at line 209 is not retired by a wgmma.wait_group in its iteration"),
])
def test_wait_group_too_shallow_is_not_proved_and_names_both_lines(fam, file, lines, words):
    obs, _ = _run(*_zoo(fam, file))
    o = obs["race-free: async"]
    assert o.status == "unknown" and "race-free: shared" not in obs
    assert _lines(o) == lines and words in o.message
    k_copy, k_read = o.counterexample["iterations"]
    assert k_copy > k_read and (k_copy - k_read) % 2 == 0  # the refill of the stage the wgmma reads


def test_missing_proxy_fence_before_the_release_is_violated():
    obs, _ = _run(*_zoo("bulk_pipeline", "bulk_pipeline__missing_proxy_fence.cu"))
    o = obs["race-free: async"]
    assert o.status == "violated" and o.rule == "race.async-proxy"
    assert _lines(o) == [118, 129] and o.locations[0].line == 129  # the manifest's bug line first
    assert "no fence.proxy.async between the generic access at line 129 and its release (line 134)" in o.message
    k_copy, k_read = o.counterexample["iterations"]
    assert k_copy > k_read and (k_copy - k_read) % 3 == 0


def test_generic_write_read_by_wgmma_without_fence_is_violated():
    obs, _ = _run(*_zoo("wgmma_tile", "wgmma_tile__missing_proxy_fence.cu"))
    o = obs["race-free: async"]
    assert o.status == "violated" and o.rule == "race.async-proxy"
    assert [l.line for l in o.locations] == [133, 143]
    # with the fence the staged operands are ordered by the CTA barrier (tests/test_straight_line.py)
    obs, _ = _run(*_zoo("wgmma_tile", "wgmma_tile.cu"))
    assert obs["race-free: async"].status == "proved"
    assert "race-free: shared" not in obs  # the threads' own writes are not this argument's


@pytest.mark.parametrize("fam, file, words", [
    ("bulk_pipeline", "bulk_pipeline__no_empty_wait.cu",
     "bulk_pipeline__no_empty_wait.cu:115:9 (ptx 135): the signal in iteration"),
    ("peek_pipeline", "peek_pipeline__missing_wait.cu", "the wait is not a recognized blocking retry loop"),
    ("peek_pipeline", "peek_pipeline__wrong_parity.cu", "parity (initial phase and alternation): violated"),
    ("bulk_pipeline", "bulk_pipeline__wrong_parity.cu", "parity (initial phase and alternation): violated"),
    ("bulk_pipeline", "bulk_pipeline__wrong_arrival_count.cu", "arrivals (per phase): violated"),
    ("bulk_pipeline", "bulk_pipeline__tx_mismatch.cu", "tx bytes (per phase): violated"),
    ("bulk_pipeline", "bulk_pipeline__missing_init_fence.cu",
     "bulk_pipeline__missing_init_fence.cu:104:7 (ptx 51): the mbarrier.init is not followed by fence.mbarrier_init"),
])
def test_twins_whose_premise_fails_are_unknown_with_the_reason(fam, file, words):
    obs, _ = _run(*_zoo(fam, file))
    o = obs["race-free: async"]
    assert o.status == "unknown" and words in o.message
    assert "race-free: shared" not in obs


def test_refill_after_waiting_the_wrong_stage_is_not_proved():
    obs, _ = _run(*_data("ring2__refill_wrong_stage"))
    o = obs["race-free: async"]
    assert o.status == "unknown"
    assert "ring2__refill_wrong_stage.cu:104:9 (ptx 139): the signal in iteration" in o.message
    assert "is not shown to follow the completion of its barrier's previous phase" in o.message


def test_read_of_the_stage_after_the_one_waited_for_is_not_proved():
    obs, _ = _run(*_data("ring2__read_next_stage"))
    o = obs["race-free: async"]
    assert o.status == "unknown" and _lines(o) == [104, 115]
    assert "may be unordered: no mbarrier phase orders them" in o.message
    k_copy, k_read = o.counterexample["iterations"]
    assert (k_copy - k_read) % 2 == 1  # the copy fills the other stage than the one waited for


def test_check_kernel_reports_the_proof_and_the_interpreter_still_wins_on_a_race():
    module, kernel, spec = _zoo("wgmma_pipeline", "wgmma_pipeline.cu")
    rep = check_kernel(module, module.kernel(kernel), spec)
    ob = {o.title: o for o in rep.obligations}
    assert ob["race-free: async"].status == "proved" and "trip count" in ob["race-free: async"].bound
    module, kernel, spec = _zoo("wgmma_pipeline", "wgmma_pipeline__wait_group_too_shallow.cu")
    rep = check_kernel(module, module.kernel(kernel), spec)
    o = {o.title: o for o in rep.obligations}["race-free: async"]
    assert o.status == "violated" and o.rule == "race.async-pending"
    assert 192 in {l.line for l in o.locations}


def test_a_proof_and_a_violation_of_one_obligation_are_reported_as_a_disagreement():
    by = {c.name: c for c in CHECKERS}
    proved = Obligation("race-free: async", "races", "proved", "ordered", "every loop iteration", [], None, 0.0)
    viol = Obligation("race-free: async", "races", "violated", "race", "launch", [], {"rule": "race.async-pending"},
                      0.0, "race.async-pending")
    o = combine("race-free: async", [(by["pipeline"], proved), (by["interpreter"], viol)], False)
    assert o.status == "violated" and o.rule == "race.async-pending"
    assert "checker pipeline proved this obligation (every loop iteration): the two disagree" in o.message


def test_timings_of_the_proof_on_the_zoo_pipelines():
    # the cost is reported (README / docs/races.md), bounded loosely here for a loaded machine
    for src in (("wgmma_pipeline", "wgmma_pipeline.cu"), ("peek_pipeline", "peek_pipeline.cu")):
        obs, dt = _run(*_zoo(*src))
        assert obs["race-free: async"].status == "proved" and dt < 60


def test_a_global_proxy_fence_does_not_order_the_stage_reads_of_a_ring(tmp_path):
    """bulk_pipeline's consumer fences its generic reads of a stage before releasing it with
    fence.proxy.async.shared::cta (proved). Made fence.proxy.async.global, the fence names
    another state space and orders none of the stage's bytes (§9.7.13.4): violated, static and
    dynamic alike."""
    text = (ZOO / "bulk_pipeline" / "bulk_pipeline.ptx").read_text()
    assert text.count("fence.proxy.async.shared::cta;") == 1
    (tmp_path / "bulk_pipeline.cu").write_text((ZOO / "bulk_pipeline" / "bulk_pipeline.cu").read_text())
    p = tmp_path / "bulk_pipeline.ptx"
    p.write_text(text.replace("fence.proxy.async.shared::cta;", "fence.proxy.async.global;"))
    _, kernel, spec = _zoo("bulk_pipeline", "bulk_pipeline.cu")
    obs, _ = _run(load_module(str(p)), kernel, spec)
    o = obs["race-free: async"]
    assert (o.status, o.rule) == ("violated", "race.async-proxy")
    assert "no fence.proxy.async between the generic access at line 124 and its r" in o.message
    rep = check_kernel(load_module(str(p)), load_module(str(p)).kernel(kernel), spec)
    by = {x.title: x for x in rep.obligations}
    assert (by["race-free: async"].status, by["race-free: async"].rule) == ("violated", "race.async-proxy")


# ---- rings: the stage and phase carried across a persistent tile loop and a k loop --------------
# (tests/zoo/persistent_pipeline and twins of it in tests/data/pipeline_races, persistent_ring__*)

def _ring(name):
    return load_module(str(DATA / f"{name}.ptx")), *_zoo("persistent_pipeline", "persistent_pipeline.cu")[1:]


def test_a_ring_across_a_tile_loop_and_a_k_loop_is_proved_for_every_trip_count():
    """The sites in the ring's two loops are counted by the ring count (the parity obligation's
    ring forms): every copy and stage read ordered for every value of ntiles and k_tiles."""
    obs, _ = _run(*_zoo("persistent_pipeline", "persistent_pipeline.cu"))
    o = obs["race-free: async"]
    assert o.status == "proved" and "proved for every trip count" in o.message
    assert o.bound.startswith("every loop iteration and trip count, every value of the scalar parameters")
    assert "(the ring over loops $L__BB0_14 (line 124) and $L__BB0_16 (line 126), the ring over loops $L__BB0_5 " \
        "(line 138) and $L__BB0_7 (line 141))" in o.bound
    assert "the stage accesses cp.async line 129, ld line 143, ld line 144" in o.bound
    assert _lines(o) == [129] and obs["race-free: shared"].status == "proved"


def test_a_ring_without_the_proxy_fence_is_violated_at_ring_steps():
    obs, _ = _run(*_ring("persistent_ring__no_proxy_fence"))
    o = obs["race-free: async"]
    assert (o.status, o.rule) == ("violated", "race.async-proxy")
    assert [l.line for l in o.locations] == [146, 132]
    assert "no fence.proxy.async between the generic access at line 146 and its release (line 150)" in o.message
    k_copy, k_read = o.counterexample["iterations"]
    assert f"at ring step {k_copy}" in o.message and f"at ring step {k_read}" in o.message
    assert k_copy > k_read and (k_copy - k_read) % 3 == 0  # the same stage, a later round


@pytest.mark.parametrize("name, lines, steps", [
    ("persistent_ring__release_before_read", [132, 151], lambda c, r: (c - r) % 3 == 0 and c > r),
    ("persistent_ring__read_next_stage", [132, 146], lambda c, r: (c - r) % 3 == 1),
    # the copy completes full[index] but fills the next stage
    ("persistent_ring__copy_next_stage", [132, 146], lambda c, r: (r - c) % 3 == 1),
])
def test_ring_twins_with_a_race_are_not_proved(name, lines, steps):
    obs, _ = _run(*_ring(name))
    o = obs["race-free: async"]
    assert o.status == "unknown" and "race-free: shared" not in obs
    assert "may be unordered: no mbarrier phase orders them" in o.message and _lines(o) == lines
    assert o.counterexample["rule"] == "race.async-pending" and steps(*o.counterexample["iterations"])


@pytest.mark.parametrize("name, words", [
    # every empty barrier still gets its 4 arrivals a round, from the release of the stage before
    ("persistent_ring__release_next_stage", "persistent_ring__release_next_stage.cu:132:11 (ptx 165): the signal at "
                                            "ring step"),
    # right in tile 0, where a run of one tile shows nothing: not a function of the ring position
    ("persistent_ring__tile_skewed_read", "ring is not a function of the ring position and the thread"),
])
def test_ring_twins_the_argument_cannot_order_are_unknown_with_the_reason(name, words):
    obs, _ = _run(*_ring(name))
    o = obs["race-free: async"]
    assert o.status == "unknown" and words in o.message and "race-free: shared" not in obs


def test_a_ring_with_waits_before_its_inner_loop_is_not_counted_outside_both_loops():
    # CUTLASS's consumer: the first wait of a tile is hoisted into the tile loop
    obs, _ = _run(*_zoo("persistent_pipeline_split", "persistent_pipeline_split.cu"))
    o = obs["race-free: async"]
    assert o.status == "unknown"
    assert ("persistent_pipeline_split.cu:159:9 (ptx 236): the barrier address depends on a value the loop summary "
            "does not track (in the outer loop of the wait at persistent_pipeline_split.cu:164:11 (ptx 304): a ring's "
            "site outside its inner loop is not counted by the ring's count)") in o.message
    assert "premises" not in o.message and "phase correspondence" not in o.message  # said before the premises


def test_a_producer_tail_after_the_loops_needs_no_count():
    """CUTLASS's producer tail: waits after every loop order only what follows them there, which the
    argument does not order anyway; the ring inside is proved (for the launch's trip counts: the
    tail's parity premise needs them)."""
    obs, _ = _run(*_zoo("persistent_pipeline", "persistent_pipeline_tail.cu"))
    o = obs["race-free: async"]
    assert o.status == "proved" and "the launch's scalar arguments (ntiles=3, k_tiles=2)" in o.bound
    assert "not proved for every value of the scalar parameters" in o.message


def test_an_access_after_the_tail_waits_is_not_taken_as_ordered():
    obs, _ = _run(*_ring("persistent_ring__tail_then_write"))
    o = obs["race-free: async"]
    assert o.status == "unknown" and _lines(o) == [141, 152]
    assert "persistent_ring__tail_then_write.cu:152:7 (ptx 261) (outside every loop) may touch the bytes of the copy at" in o.message


# ---- a TMA + wgmma ring across a persistent tile loop (tests/data/wgmma_ring) ---------------------
# On the interpreter (kverify validate --interpreter, launch.json, 2 trials) wgmma_ring matches ref.py.

WGMMA_RING = Path(__file__).resolve().parent / "data" / "wgmma_ring"


def _wgmma_ring(name):
    spec = LaunchSpec.from_dict(json.loads((WGMMA_RING / "launch.json").read_text()))
    return load_module(str(WGMMA_RING / f"{name}.ptx")), "wgmma_ring", spec


def test_a_tma_wgmma_ring_across_a_tile_loop_is_proved_for_every_trip_count():
    obs, _ = _run(*_wgmma_ring("wgmma_ring"))
    o = obs["race-free: async"]
    assert o.status == "proved" and "proved for every trip count" in o.message and "7 site pairs" in o.message
    assert "every value of the scalar parameters" in o.bound
    assert "the stage accesses cp.async line 171, cp.async line 172, wgmma line 189" in o.bound
    assert _lines(o) == [171, 172, 189] and obs["race-free: shared"].status == "proved"


def test_a_release_before_the_wait_group_that_retires_the_wgmma_is_not_proved():
    module, kernel, spec = _wgmma_ring("wgmma_ring__release_before_retire")
    obs, _ = _run(module, kernel, spec)
    o = obs["race-free: async"]
    assert o.status == "unknown" and _lines(o) == [175, 193]
    assert ("(the arrive at line 196 comes before the wgmma.wait_group that retires the wgmma at line 193)"
            in o.message)
    k_copy, k_read = o.counterexample["iterations"]
    assert k_copy > k_read and (k_copy - k_read) % 3 == 0  # the stage's next fill
    # the interpreter's run of the launch shows the race
    rep = check_kernel(module, module.kernel(kernel), spec)
    o = {x.title: x for x in rep.obligations}["race-free: async"]
    assert (o.status, o.rule) == ("violated", "race.async-pending")


def test_a_wait_before_the_loop_on_the_loops_barriers_stays_counted():
    """A wait outside every loop is left out only after every loop wait of its threads on its
    barriers (a tail): before the loop (persistent_pipeline_split_one_tile's hoisted wait) it would
    shift the loop waits' uses of those barriers, so it stays, and the argument does not cover it."""
    obs, _ = _run(*_zoo("persistent_pipeline_split", "persistent_pipeline_split_one_tile.cu"))
    o = obs["race-free: async"]
    assert o.status == "unknown"
    assert ("persistent_pipeline_split_one_tile.cu:138:9 (ptx 207): a barrier site outside any loop" in o.message)


def test_barriers_a_byte_apart_are_not_proved():
    """The producer names its barriers a byte apart: its stage-1 and stage-2 arrives and copies land on
    addresses no mbarrier.init initializes. The arrivals used to be counted against the nearest init
    and proved (and the race argument with them); now the arrivals obligation is not proved and says
    which addresses, and the race argument stops at that premise."""
    module, kernel, spec = _ring("persistent_ring__barrier_byte_stride")
    obs, _ = _run(module, kernel, spec)
    o = obs["race-free: async"]
    assert o.status == "unknown" and "race-free: shared" not in obs
    assert ("arrivals (per phase): unknown: persistent_ring__barrier_byte_stride.cu:136:11 (ptx 164): the arrive is "
            "not shown to name a barrier an mbarrier.init of the kernel initializes (it may name 0xc01, 0xc02, which "
            "none does)") in o.message
    rep = check_kernel(module, module.kernel(kernel), spec)
    by = {x.title: x for x in rep.obligations}
    assert by["mbarrier conformance: arrivals (per phase)"].status == "unknown"
    assert rep.verdict == "violated"  # the run: uninitialized barriers, then the consumers' deadlock


def test_the_proof_says_it_takes_the_copies_global_reads_within_their_buffers():
    """The argument orders the stages' bytes; a copy reading past its global buffer may meet another
    buffer's writes (an immediate mutant of persistent_pipeline's source stride showed one in the run),
    which is memory safety's to find: the bound says so."""
    obs, _ = _run(*_zoo("persistent_pipeline", "persistent_pipeline.cu"))
    assert obs["race-free: async"].bound.endswith(
        "the copies' global reads taken within their buffers (memory safety is the run's)")


def test_an_arrive_after_the_k_loop_on_its_ring_barriers_is_not_counted_as_a_phase():
    """persistent_ring__extra_tail_release: after each tile's k loop every consumer warp arrives once
    more on empty[] of the next, unread stage. Each arrive site alone completed a phase, so arrivals
    (per phase) was proved -- and with one tile per CTA the verdict was verified -- while the extra
    phases let the producer refill a stage the consumers are reading from the second tile on."""
    from kverify.verifier.mbarrier import check_mbarrier

    m, kernel, spec = _ring("persistent_ring__extra_tail_release")
    obs = {o.title.split(": ", 1)[1]: o for o in check_mbarrier(m, kernel, spec)}
    a = obs["arrivals (per phase)"]
    assert a.status == "unknown" and _lines(a) == [148, 154]
    assert "arrives after the loop of" in a.message
    assert _run(m, kernel, spec)[0]["race-free: async"].status == "unknown"
    rep = check_kernel(m, m.kernel(kernel), spec)  # the zoo launch: 3 tiles over 2 CTAs
    assert rep.verdict == "violated"
    assert "mbarrier.arrival-overflow" in {f.rule for f in rep.findings} | {o.rule for o in rep.obligations}
