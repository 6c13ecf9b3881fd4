"""SMT race freedom with two symbolic threads (verifier.races): the classic zoo kernels
(synchronized by __syncthreads only) and hand-written soundness cases in tests/data."""
import json
from dataclasses import replace

import pytest

from conftest import ROOT, ZOO
from kverify.launch import LaunchSpec
from kverify.semantics.ir import load_module
from kverify.semantics.ir.nodes import Loop
from kverify.semantics.ir.symint import SymInt
from kverify.semantics.ir.visit import map_stmts
from kverify.verifier.races import check_races

DATA = ROOT / "tests" / "data"
IDS = ["race-free: shared", "race-free: global"]
FAMILIES = ("vadd", "saxpy_vec", "reduce_smem", "gemm_tiled", "transpose", "softmax", "scan",
            "stencil", "histogram", "reduce_warp", "vote")

#: (shared, global) under the manifest's launch, per zoo variant
EXPECTED = {
    "vadd.cu": ("proved", "proved"),
    "saxpy_scalar.cu": ("proved", "proved"),
    "saxpy_vec.cu": ("proved", "proved"),
    "reduce_smem.cu": ("proved", "proved"),
    "reduce_smem__missing_sync.cu": ("violated", "proved"),
    # the barrier inside `if (tid < s)` is divergent: it is not taken as ordering, and the
    # race it would exclude is not claimed either (barrier.divergence reports the bug)
    "reduce_smem__divergent_barrier.cu": ("unknown", "proved"),
    "gemm_tiled.cu": ("proved", "proved"),
    "gemm_naive.cu": ("proved", "proved"),
    "gemm_tiled__missing_sync_after_compute.cu": ("violated", "proved"),
    "gemm_tiled__missing_sync_after_load.cu": ("violated", "proved"),
    "transpose.cu": ("proved", "proved"),
    "transpose_naive.cu": ("proved", "proved"),
    "softmax.cu": ("proved", "proved"),
    "softmax_online.cu": ("proved", "proved"),
    "scan.cu": ("proved", "proved"),
    "scan__missing_sync.cu": ("violated", "proved"),
    "stencil.cu": ("proved", "proved"),
    "stencil__missing_sync.cu": ("violated", "proved"),
    "histogram.cu": ("proved", "proved"),
    "histogram__missing_sync.cu": ("violated", "proved"),
    "reduce_warp.cu": ("proved", "proved"),
    "vote.cu": ("proved", "proved"),
}


def _variants():
    for fam in FAMILIES:
        man = json.loads((ZOO / fam / "manifest.json").read_text())
        for v in man["variants"]:
            yield pytest.param(fam, v, id=v["file"])


def _check(path, kernel=None, launch=None):
    module = load_module(str(path))
    spec = LaunchSpec.from_dict(launch) if isinstance(launch, dict) else launch
    obs = check_races(module, kernel, spec)
    assert [o.title for o in obs] == IDS
    assert all(o.checker == "races" for o in obs)
    return {o.title.split(": ")[1]: o for o in obs}


def _assert_counterexample(ob, space, same_value=False):
    """The counterexample names two distinct threads whose accesses overlap, at least one a
    write, in one barrier interval (or in different CTAs, for global memory), and the
    obligation's two locations are those accesses'."""
    ce = ob.counterexample
    assert ob.rule == f"race.{space}" + (".same-value" if same_value else "") and ce["space"] == space
    a, b = ce["threads"]
    assert (a["tid"], a["ctaid"]) != (b["tid"], b["ctaid"])
    x, y = ce["accesses"]
    assert {x["thread"], y["thread"]} == {"A", "B"}
    assert {x["access"], y["access"]} != {"read"}
    assert x["address"] < y["address"] + y["bytes"] and y["address"] < x["address"] + x["bytes"]
    if space == "shared" or a["ctaid"] == b["ctaid"]:
        assert a["ctaid"] == b["ctaid"]
        assert x["barrier_interval"] == y["barrier_interval"]
    assert [x["location"], y["location"]] == [str(loc) for loc in ob.locations]
    assert len(ob.locations) == 2


@pytest.mark.parametrize("family, variant", list(_variants()))
def test_zoo_kernel_race_verdicts(family, variant):
    obs = _check((ZOO / family / variant["file"]).with_suffix(".ptx"), variant["kernel"], variant["launch"])
    assert (obs["shared"].status, obs["global"].status) == EXPECTED[variant["file"]]
    if variant["correct"]:
        assert all(o.status != "violated" for o in obs.values())
    bug = variant.get("bug")
    if bug and bug["rule"].startswith("race."):
        space = bug["rule"].split(".")[1]
        ob = obs[space]
        assert ob.status == "violated"
        assert bug["line"] in [loc.line for loc in ob.locations]
        _assert_counterexample(ob, space)
    for o in obs.values():
        if o.status == "unknown":
            assert o.message  # a stated reason


def test_missing_barrier_after_compute_races_across_k_tiles():
    """The store of k-tile i+1 against the read of k-tile i: the counterexample names the
    loop iterations of both threads, one apart, in one barrier interval."""
    man = json.loads((ZOO / "gemm_tiled" / "manifest.json").read_text())
    v = next(v for v in man["variants"] if v["file"] == "gemm_tiled__missing_sync_after_compute.cu")
    path = ZOO / "gemm_tiled" / "gemm_tiled__missing_sync_after_compute.ptx"
    ob = _check(path, v["kernel"], v["launch"])["shared"]
    x, y = ob.counterexample["accesses"]
    (it_x,), (it_y,) = x["iterations"].values(), y["iterations"].values()
    writer, reader = (it_x, it_y) if x["access"] == "write" else (it_y, it_x)
    assert writer == reader + 1
    assert ob.counterexample["params"] == {"M": 64, "N": 32, "K": 48}


def test_divergent_barrier_variant_names_the_barrier():
    man = json.loads((ZOO / "reduce_smem" / "manifest.json").read_text())
    v = next(v for v in man["variants"] if v["file"] == "reduce_smem__divergent_barrier.cu")
    path = ZOO / "reduce_smem" / "reduce_smem__divergent_barrier.ptx"
    ob = _check(path, v["kernel"], v["launch"])["shared"]
    assert ob.status == "unknown"
    assert "divergent" in ob.message and "reduce_smem__divergent_barrier.cu:16" in ob.message


# ----------------------------------------------------------------- soundness pitfalls
def test_one_symbolic_thread_is_not_enough_every_thread_writes_one_word():
    """A disjointness check over one symbolic thread sees a single store and passes; two
    distinct symbolic threads collide on s[0]."""
    obs = _check(DATA / "races_pitfalls.ptx", "same_word")
    assert obs["shared"].status == "violated"
    _assert_counterexample(obs["shared"], "shared")
    assert obs["global"].status == "proved"


def test_one_symbolic_thread_is_not_enough_neighbouring_threads_share_a_slot():
    obs = _check(DATA / "races_pitfalls.ptx", "pair_slot")
    ob = obs["shared"]
    assert ob.status == "violated"
    _assert_counterexample(ob, "shared")
    a, b = ob.counterexample["threads"]
    assert a["tid"][0] // 2 == b["tid"][0] // 2 and a["tid"][0] != b["tid"][0]


def test_uniform_barrier_orders_store_and_load():
    assert _check(DATA / "races_pitfalls.ptx", "uniform_barrier")["shared"].status == "proved"


def test_barrier_in_divergent_code_is_not_treated_as_ordering():
    ob = _check(DATA / "races_pitfalls.ptx", "divergent_barrier")["shared"]
    assert ob.status == "unknown"
    assert "divergent" in ob.message


def test_threads_that_return_early_do_not_make_a_barrier_divergent():
    assert _check(DATA / "races_pitfalls.ptx", "early_return")["shared"].status == "proved"


def test_atomics_do_not_race_with_each_other_but_race_with_a_plain_store():
    assert _check(DATA / "races_pitfalls.ptx", "atomics_only")["shared"].status == "proved"
    ob = _check(DATA / "races_pitfalls.ptx", "atomic_vs_store")["shared"]
    assert ob.status == "violated"
    _assert_counterexample(ob, "shared")
    assert sorted(x["access"] for x in ob.counterexample["accesses"]) == ["update", "write"]


def test_global_race_between_ctas_needs_more_than_one_cta():
    path = DATA / "races_pitfalls.ptx"
    two = _check(path, "grid_race", {"grid": [2, 1, 1], "block": [64, 1, 1]})["global"]
    assert two.status == "violated"
    _assert_counterexample(two, "global", same_value=True)  # both CTAs' thread t store t to out[t]
    a, b = two.counterexample["threads"]
    assert a["ctaid"] != b["ctaid"] and a["tid"] == b["tid"]
    assert "different CTAs" in two.message
    assert _check(path, "grid_race", {"grid": [1, 1, 1], "block": [64, 1, 1]})["global"].status == "proved"
    # without a launch spec a grid dimension the kernel never reads is taken as 1, and said so
    ob = _check(path, "grid_race")["global"]
    assert ob.status == "proved" and "gridDim" in ob.message


def test_pairs_of_every_access_are_asked_in_one_query_and_a_late_race_is_still_found():
    """The checker first asks whether any pair of accesses can race in one query over every
    access's candidates (the address terms bit-blasted once); only when that query is not
    unsat does it ask access by access. A race of the last access alone must survive it."""
    from kverify.semantics.ir import load_module
    from kverify.verifier.races.smt import _Checker

    path, launch = DATA / "races_pitfalls.ptx", LaunchSpec.from_dict({"grid": [1, 1, 1], "block": [64, 1, 1]})
    module = load_module(str(path))
    fixed = _Checker(module, module.kernel("late_race_fixed"), launch, 10.0, 0.0)
    obs = {o.title: o for o in fixed.run()}
    assert obs["race-free: global"].status == "proved"
    assert "(3 accesses, 6 pairs)" in obs["race-free: global"].message
    assert fixed.queries == 1  # three accesses: one query, not one per access
    late = _Checker(module, module.kernel("late_race"), launch, 10.0, 0.0)
    ob = {o.title: o for o in late.run()}["race-free: global"]
    assert ob.status == "violated"
    _assert_counterexample(ob, "global")
    x, y = ob.counterexample["accesses"]
    assert (x["buffer"], x["offset"], y["buffer"], y["offset"]) == ("late_race_param_0", 768) * 2
    assert [loc.ptx_line for loc in ob.locations] == [219, 219]


def test_the_first_query_keeps_a_loop_exit_axiom_to_the_accesses_after_the_loop():
    """The one query over every access must give each access only the constraints its own query
    takes: the summary's exit axiom of ``for (i = 0; i != n; i += 2)`` implies an even n, which
    holds after the loop and not for the racing store inside it (run for an odd n only). Stated
    for all the disjuncts at once, it proved this kernel race-free."""
    ob = _check(DATA / "races_pitfalls.ptx", "loop_exit_axiom", {"grid": [1, 1, 1], "block": [64, 1, 1]})["global"]
    assert ob.status == "violated"
    _assert_counterexample(ob, "global")
    assert [loc.ptx_line for loc in ob.locations] == [269, 269]


def test_unsupported_instruction_gives_unknown_not_proved():
    obs = _check(DATA / "races_pitfalls.ptx", "opaque_op")
    for ob in obs.values():
        assert ob.status == "unknown"
        assert "unsupported instruction frobnicate" in ob.message


def test_loop_carried_race_is_found_across_iterations():
    ob = _check(DATA / "races_loops.ptx", "loop_carried")["shared"]
    assert ob.status == "violated"
    _assert_counterexample(ob, "shared")
    x, y = ob.counterexample["accesses"]
    (it_x,), (it_y,) = x["iterations"].values(), y["iterations"].values()
    assert (it_x if x["access"] == "write" else it_y) == (it_y if x["access"] == "write" else it_x) + 1
    assert _check(DATA / "races_loops.ptx", "loop_fixed")["shared"].status == "proved"


def test_loop_that_cannot_be_summarized_is_never_proved():
    ob = _check(DATA / "races_loops.ptx", "unsummarized")["shared"]
    assert ob.status == "unknown"
    assert "over-approximates" in ob.message


def test_wrong_induction_variable_from_the_front_end_cannot_make_a_proof():
    """The checker re-validates Loop.ivs: a step recorded as 128 where the code adds 64
    is dropped (the register is havocked), so the race is not proved away."""
    path = DATA / "races_loops.ptx"
    module = load_module(str(path))
    k = module.kernel("stride_too_short")
    one = LaunchSpec.from_dict({"block": [128, 1, 1]})
    right = {o.title: o for o in check_races(module, k, one)}["race-free: global"]
    assert right.status == "violated"
    _assert_counterexample(right, "global", same_value=True)  # out[i] = i from two threads

    def tamper(s):
        if isinstance(s, Loop):
            return replace(s, ivs=tuple(replace(iv, step=SymInt.const(128)) for iv in s.ivs))
        return s

    wrong = {o.title: o for o in check_races(module, replace(k, body=map_stmts(k.body, tamper)), one)}
    assert wrong["race-free: global"].status == "unknown"


# ----------------------------------------------------------------- scope and launch
@pytest.mark.parametrize("path", ["bulk_pipeline/bulk_pipeline.ptx", "cp_async_gemm/cp_async_gemm.ptx",
                                  "wgmma_tile/wgmma_tile.ptx"])
def test_async_kernels_are_unknown_with_the_reason(path):
    obs = _check(ZOO / path)
    for ob in obs.values():
        assert ob.status == "unknown"
        assert "asynchronous copies, mbarriers and wgmma" in ob.message
        assert ob.locations


def test_without_launch_spec_block_comes_from_launch_bounds():
    obs = _check(ZOO / "reduce_smem" / "reduce_smem.ptx")
    assert obs["shared"].status == "proved" and obs["global"].status == "proved"
    assert "256x1x1" in obs["shared"].message and ".maxntid" in obs["shared"].message
    bad = _check(ZOO / "reduce_smem" / "reduce_smem__missing_sync.ptx")["shared"]
    assert bad.status == "violated" and 15 in [loc.line for loc in bad.locations]


def test_threads_read_one_value_from_an_input_buffer():
    """Both symbolic threads see the same value at the same address of a buffer the kernel
    never writes: `if (in[0] == tid) out[0] = ...` stores from one thread only."""
    path = DATA / "races_pitfalls.ptx"
    assert _check(path, "input_consistency", {"block": [64, 1, 1]})["global"].status == "proved"


def test_nested_loop_barrier_count_is_summarized_from_the_inner_trip_count():
    """Eight barriers per outer iteration (an inner loop of four iterations with two each):
    the store of r after the inner loop and the read of r after the outer loop share the
    last interval; one more barrier separates them."""
    bad = _check(DATA / "races_loops.ptx", "nested")["shared"]
    assert bad.status == "violated"
    _assert_counterexample(bad, "shared")
    x, y = bad.counterexample["accesses"]
    assert {x["variable"], y["variable"]} == {"r"}
    assert x["barrier_interval"] % 8 == 0 and x["barrier_interval"] >= 8
    assert _check(DATA / "races_loops.ptx", "nested_fixed")["shared"].status == "proved"
