"""A non-aligned barrier (``barrier.sync``, ``barrier.cluster.arrive``) reached by part of a warp:
the warp arrives once all its non-exited threads have executed it (PTX ISA §9.7.13.1, §9.7.13
barrier.cluster), possibly from different places, which the interpreter's warp-at-a-time model
does not follow. It counted the whole warp as arrived, and two kernels that hang were verified
(tests/data/partial_warp: warp 0 split between named barriers 1 and 2; lanes 16-31 spinning on a
flag that lanes 0-15 set only after the cluster barrier). Such a run is now unknown (the
reason named); an aligned cluster barrier reached by part of a warp is a divergence."""
from pathlib import Path

import pytest

from kverify.launch import LaunchSpec
from kverify.semantics.ir import load_module
from kverify.verifier.check import check_kernel

DATA = Path(__file__).resolve().parent / "data" / "partial_warp"


@pytest.mark.parametrize("name,block,why", [
    ("split_named", 64, "barrier.sync reached by part of a warp (lanes 0..15 of warp 0 (threads 0-31) of CTA (0,0,0)): "
                        "a non-aligned barrier whose warp arrives from several places is not modelled"),
    ("split_cluster", 32, "barrier.cluster.arrive reached by part of a warp (lanes 0..15 of warp 0 (threads 0-31) of "
                          "CTA (0,0,0)): a cluster barrier whose warp arrives from several places is not modelled"),
])
def test_a_barrier_reached_by_part_of_a_warp_is_not_verified(name, block, why):
    m = load_module(str(DATA / f"{name}.ptx"))
    spec = LaunchSpec.from_dict({"kernel": name, "grid": [2, 1, 1], "block": [block, 1, 1],
                                 "buffers": {"in": {"dtype": "float32", "shape": [128]},
                                             "out": {"dtype": "float32", "shape": [128]}}, "outputs": ["out"]})
    rep = check_kernel(m, m.kernel(name), spec)
    assert rep.verdict != "verified"
    dl = {o.title: o for o in rep.obligations}["deadlock-free"]
    assert dl.status == "unknown" and why in dl.message
