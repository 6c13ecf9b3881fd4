"""Warp collectives' membermasks, per lane (kverify/semantics/interpreter/handlers/collectives.py):
an executing lane must name itself and every lane a mask names must execute the instruction
(PTX ISA 9.7.9.6; undefined otherwise). A shuffle whose mask left out lanes that ran it was not
reported; lanes may name different groups (a tiled partition), which must not be reported."""
from pathlib import Path

from kverify.launch import LaunchSpec
from kverify.semantics.interpreter import run_kernel
from kverify.semantics.ir import load_module

DATA = Path(__file__).resolve().parent / "data" / "membermask"


def _run(kernel):
    m = load_module(str(DATA / "masks.ptx"))
    spec = LaunchSpec.from_dict({"kernel": kernel, "grid": [1, 1, 1], "block": [32, 1, 1],
                                 "buffers": {"x": {"dtype": "float32", "shape": [32]},
                                             "y": {"dtype": "float32", "shape": [32]}}, "outputs": ["y"]})
    return run_kernel(m, m.kernel(kernel), spec)


def test_lane_dependent_masks_of_a_tiled_partition_are_fine():
    r = _run("halves")
    assert r.status == "complete" and r.findings == []
    x, y = r.inputs["x"], r.outputs["y"]
    assert list(y) == [x[0]] * 16 + [x[16]] * 16


def test_a_lane_outside_its_own_mask_is_reported():
    r = _run("self_excluded")
    assert [(f.rule, f.locs[0].line) for f in r.findings] == [("barrier.divergence", 15)]
    assert "in lanes 16, 17, 18, 19, 20, 21, 22, 23, which their mask leaves out" in r.findings[0].message


def test_lanes_a_mask_names_must_pass_the_same_mask():
    r = _run("shifted")
    assert [(f.rule, f.locs[0].line) for f in r.findings] == [("barrier.divergence", 22)]
    assert "lane 0's membermask 0xffffffff names lane 1, whose membermask is 0xfffffffe" in r.findings[0].message


def test_one_full_mask_for_every_lane_is_fine():
    r = _run("full")
    assert r.status == "complete" and r.findings == []
    assert list(r.outputs["y"]) == [r.inputs["x"][0]] * 32


def test_one_full_mask_run_by_half_the_warp_is_reported():
    """Every lane holds the same mask (the check on the mask alone), and lanes 16-31, which it
    names, do not run the shuffle: undefined (§9.7.9.6)."""
    r = _run("partial_full")
    assert [(f.rule, f.locs[0].line) for f in r.findings] == [("barrier.divergence", 34)]
    assert "with membermask 0xffffffff" in r.findings[0].message
    assert "lanes 16, 17, 18, 19, 20, 21, 22, 23 of the mask do not execute it" in r.findings[0].message
