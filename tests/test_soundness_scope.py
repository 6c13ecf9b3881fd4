"""Every proof states its scope, and claims nothing beyond it (issue 12, items 7, 5 and the
SMT side of 1), on kernels of our own in tests/zoo/scope:

- a check without a grid is symbolic in the grid: a race that needs a fourth CTA is violated
  (with a counterexample grid), never proved for the one CTA the run assumed;
- a proof under a launch's argument values says it holds for those values only, and without
  them the race is found with the values in the counterexample;
- bounds by provenance: an overflow that lands where the next buffer (or shared variable)
  would be is ``bounds``;
- ``__syncwarp`` orders the lanes of one warp in the SMT race checker.
"""
import json

import pytest

from conftest import ZOO
from kverify.launch import LaunchSpec, from_flags
from kverify.semantics.ir import load_module
from kverify.verifier.check import check_kernel
from kverify.verifier.races import check_races

SCOPE = ZOO / "scope"


def _manifest_launch(file):
    for v in json.loads((SCOPE / "manifest.json").read_text())["variants"]:
        if v["file"] == file:
            return v["launch"]
    raise KeyError(file)


def _races(stem, launch):
    m = load_module(str(SCOPE / f"{stem}.ptx"))
    k = m.kernels[0]
    spec = launch(k) if callable(launch) else launch
    return {o.title: o for o in check_races(m, k, spec, timeout_s=30)}


def _no_grid(block):
    return lambda k: from_flags(k, str(SCOPE / "x.ptx"), None, block)


# ---------------------------------------------------------------- item 7: the grid


def test_no_grid_given_means_the_launch_assumed_one():
    m = load_module(str(SCOPE / "grid_slots.ptx"))
    spec = from_flags(m.kernels[0], str(SCOPE / "x.ptx"), None, "64")
    assert spec.grid == (1, 1, 1) and spec.grid_assumed
    assert not from_flags(m.kernels[0], str(SCOPE / "x.ptx"), "1", "64").grid_assumed
    assert LaunchSpec.from_dict({"block": [64]}).grid_assumed
    assert not LaunchSpec.from_dict({"block": [64], "grid": [1]}).grid_assumed


def test_race_that_needs_a_fourth_cta_is_violated_without_a_grid():
    ob = _races("grid_slots__wraps_at_4", _no_grid("64"))["race-free: global"]
    assert ob.status == "violated" and ob.rule == "race.global"
    ce = ob.counterexample
    assert ce["grid"][0] >= 4
    assert sorted(t["ctaid"][0] % 3 for t in ce["threads"]) == [0, 0]
    assert {l.line for l in ob.locations} == {8}
    assert f"grid {ce['grid'][0]}x1x1" in ob.message


def test_race_that_needs_a_fourth_cta_is_proved_for_three_only():
    ob = _races("grid_slots__wraps_at_4", LaunchSpec.from_dict({"grid": [3], "block": [64]}))["race-free: global"]
    assert ob.status == "proved"
    assert "grid 3x1x1 only" in ob.bound


def test_correct_twin_is_proved_for_every_grid():
    ob = _races("grid_slots", _no_grid("64"))["race-free: global"]
    assert ob.status == "proved"
    assert "every grid" in ob.bound and "every schedule" in ob.bound


def test_check_without_a_grid_is_not_verified_for_the_fourth_cta_race():
    m = load_module(str(SCOPE / "grid_slots__wraps_at_4.ptx"))
    k = m.kernels[0]
    rep = check_kernel(m, k, from_flags(k, str(SCOPE / "x.ptx"), None, "64"), budget=2, timeout_s=30)
    ob = {o.title: o for o in rep.obligations}["race-free: global"]
    assert rep.verdict == "violated" and ob.status == "violated" and ob.rule == "race.global"


def test_interpreter_bound_says_the_grid_was_assumed():
    m = load_module(str(SCOPE / "grid_slots.ptx"))
    k = m.kernels[0]
    rep = check_kernel(m, k, from_flags(k, str(SCOPE / "x.ptx"), None, "64"), budget=2, timeout_s=30, smt=False)
    ob = {o.title: o for o in rep.obligations}["deadlock-free"]
    assert ob.status == "bounded"
    assert ob.bound.startswith("grid 1x1x1 (assumed: the launch gives no grid), block 64x1x1, its inputs (seeded "
                               "random contents of in, slots);")


def test_an_arg_name_the_kernel_does_not_have_is_an_error_listing_the_parameters():
    from kverify.semantics.ir import KernelError

    k = load_module(str(SCOPE / "grid_slots.ptx")).kernels[0]
    with pytest.raises(KernelError) as e:
        from_flags(k, str(SCOPE / "x.ptx"), "4", "64", ["n=1000"])
    assert str(e.value) == ("<command line>:1:1: --arg n: grid_slots has no parameter of that name (parameters: "
                            "in (grid_slots_param_0), slots (grid_slots_param_1); a position 0..1 also works)")
    assert from_flags(k, str(SCOPE / "x.ptx"), "4", "64", ["1=7"]).args == {"1": 7}


# ---------------------------------------------------------------- item 7: argument values


def test_even_stride_race_proved_at_stride_1_says_for_stride_1_only():
    launch = dict(_manifest_launch("strided_scatter__even_stride.cu"), args={"stride": 1})
    ob = _races("strided_scatter__even_stride", LaunchSpec.from_dict(launch))["race-free: global"]
    assert ob.status == "proved"
    assert "for stride=1 only" in ob.bound and "grid 4x1x1 only" in ob.bound


def test_even_stride_race_without_a_stride_is_violated_with_an_even_stride():
    launch = dict(_manifest_launch("strided_scatter__even_stride.cu"), args={})
    ob = _races("strided_scatter__even_stride", LaunchSpec.from_dict(launch))["race-free: global"]
    assert ob.status == "violated" and ob.rule == "race.global"
    stride = ob.counterexample["params"]["stride"]
    assert stride % 2 == 0
    assert f"stride={stride}" in ob.message
    assert {l.line for l in ob.locations} == {9}


def test_odd_stride_twin_is_proved_for_all_strides():
    launch = dict(_manifest_launch("strided_scatter.cu"), args={})
    ob = _races("strided_scatter", LaunchSpec.from_dict(launch))["race-free: global"]
    assert ob.status == "proved"
    assert "all values of stride" in ob.bound


# ---------------------------------------------------------------- item 5: bounds by provenance


def _check(stem, file):
    m = load_module(str(SCOPE / f"{stem}.ptx"))
    spec = LaunchSpec.from_dict(_manifest_launch(file))
    rep = check_kernel(m, m.kernels[0], spec, budget=2, timeout_s=30)
    return rep, {o.title: o for o in rep.obligations}


@pytest.mark.parametrize("stem, line", [("shift_right__past_end", 10), ("smem_halo__past_tile", 16)])
def test_overflow_into_the_neighbouring_allocation_is_bounds(stem, line):
    rep, obs = _check(stem, f"{stem}.cu")
    ob = obs["memory safety"]
    assert rep.verdict == "violated"
    assert ob.status == "violated" and ob.rule == "bounds"
    assert {l.line for l in ob.locations} == {line}
    assert "0 bytes past the end of" in ob.message


@pytest.mark.parametrize("stem", ["shift_right", "smem_halo"])
def test_correct_twins_are_in_bounds(stem):
    rep, obs = _check(stem, f"{stem}.cu")
    assert obs["memory safety"].status == "bounded"
    assert rep.verdict == "verified"


def test_buffers_are_placed_past_a_red_zone():
    from kverify.launch.layout import RED_ZONE, next_buffer

    assert next_buffer(0, 4096) >= 4096 + RED_ZONE


# ---------------------------------------------------------------- item 1, SMT side: __syncwarp

WARP = ZOO.parent / "data" / "warp_sync"


def _warp_races(path, launch):
    m = load_module(str(path))
    return {o.title: o for o in check_races(m, m.kernels[0], launch, timeout_s=30)}


@pytest.mark.parametrize("launch", [None, LaunchSpec.from_dict({"grid": [2], "block": [64]})])
def test_warp_tree_ordered_by_syncwarp_is_proved(launch):
    ob = _warp_races(SCOPE / "warp_tree.ptx", launch)["race-free: shared"]
    assert ob.status == "proved", ob.message
    assert "every schedule" in ob.bound


def test_warp_tree_without_syncwarp_between_steps_is_violated():
    ob = _warp_races(WARP / "warp_tree__no_syncwarp.ptx", None)["race-free: shared"]
    assert ob.status == "violated" and ob.rule == "race.shared"
    assert {l.line for l in ob.locations} == {14}
    a, b = ob.counterexample["threads"]
    assert a["tid"][0] // 32 == b["tid"][0] // 32  # two lanes of one warp
    assert "no __syncwarp between them" in ob.message


def test_syncwarp_does_not_order_two_warps():
    ob = _warp_races(WARP / "warp_swap__cross_warp.ptx", None)["race-free: shared"]
    assert ob.status == "violated" and ob.rule == "race.shared"
    assert {l.line for l in ob.locations} == {10, 12}
    a, b = ob.counterexample["threads"]
    assert a["tid"][0] // 32 != b["tid"][0] // 32


@pytest.mark.parametrize("given, says", [
    ((), "its inputs (seeded random contents of a, b, c);"),  # was "its inputs": not the program's
    (("a", "b"), "its inputs (seeded random contents of c);"),
    (("a", "b", "c"), "its inputs (the given contents);"),
])
def test_a_runs_bound_says_whose_buffer_contents_it_ran(given, says):
    import numpy as np

    m = load_module(str(ZOO / "vadd" / "vadd.ptx"))
    k = m.kernel("vadd")
    spec = LaunchSpec.from_dict(json.loads((ZOO / "vadd" / "manifest.json").read_text())["variants"][0]["launch"])
    inputs = {n: np.zeros(spec.buffers[n]["shape"], np.float32) for n in given}
    rep = check_kernel(m, k, spec, inputs=inputs or None, smt=False)
    ob = {o.title: o for o in rep.obligations}["memory safety"]
    assert ob.status == "bounded" and says in ob.bound, ob.bound


def test_the_bound_says_why_every_cta_was_interpreted():
    """A grid large enough for CTA symmetry, whose CTAs communicate (global atomics): the bound
    says every CTA ran and why (it said nothing: a reader could not tell whether the cost was
    the grid's or a missed symmetry)."""
    import subprocess
    import sys

    from conftest import ROOT

    r = subprocess.run([sys.executable, "-m", "kverify", "check", str(ZOO / "histogram" / "histogram.ptx"), "--grid",
                        "64", "--block", "256", "--arg", "data=16384:u32", "--arg", "bins=256:u32", "--arg", "n=16384",
                        "--format", "json"], cwd=ROOT, capture_output=True, text=True)
    (k,) = json.loads(r.stdout)["kernels"]
    ob = {o["title"]: o for o in k["obligations"]}["memory safety"]
    assert ob["bound"].startswith("grid 64x1x1, block 256x1x1 (every CTA interpreted: global atomics or strong "
                                  "accesses (counted as inter-CTA communication)), its inputs"), ob["bound"]
