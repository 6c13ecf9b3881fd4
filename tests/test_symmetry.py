"""CTA symmetry (kverify/verifier/races/symmetry.py): representative CTAs stand for the grid
only when no CTA can affect another; a bug in a middle CTA is still found."""
import json
from pathlib import Path

import pytest

from kverify.launch import LaunchSpec
from kverify.semantics.interpreter import run_kernel
from kverify.semantics.ir import load_module
from kverify.verifier.check import check_kernel
from kverify.verifier.races.symmetry import representatives

HERE = Path(__file__).parent
DATA = HERE / "data" / "symmetry"
ZOO = HERE / "zoo"


PROVED = ("no inter-CTA communication (proved); every global and shared access of the other CTAs in bounds (proved); "
          "their outputs are not checked by this run")


def _spec(grid):
    return LaunchSpec.from_dict(json.loads((DATA / f"launch_{grid}.json").read_text()))


def _by(rep):
    return {o.title: o for o in rep.obligations}


def test_cost_does_not_grow_with_the_grid():
    m = load_module(str(DATA / "scale.ptx"))
    k = m.kernel("scale")
    reps, why = representatives(m, k, _spec(1024))
    assert why == PROVED
    # first, second, the one before last, last (the tail: n = 1024*128 - 50)
    assert reps == [(0, 0, 0), (1, 0, 0), (1022, 0, 0), (1023, 0, 0)]
    assert representatives(m, k, _spec(4)) == (None, "small grid")
    big = run_kernel(m, k, _spec(1024), schedule="exhaustive", ctas=reps)
    small = run_kernel(m, k, _spec(4), schedule="exhaustive")
    assert big.status == small.status == "complete" and not big.findings
    assert big.ctas_run == small.ctas_run == 4
    assert big.steps <= small.steps


def test_symmetric_verdict_says_what_it_covers():
    m = load_module(str(DATA / "scale.ptx"))
    ob = _by(check_kernel(m, m.kernel("scale"), _spec(1024)))
    mem = ob["memory safety"]
    assert mem.status == "bounded"
    assert mem.bound.startswith("grid 1024x1x1, block 128x1x1 (CTAs {0, 1, 1022, 1023} interpreted, the others "
                                "are symmetric: " + PROVED + ")")
    assert ob["race-free: global"].status == "proved"


def test_bug_in_a_middle_cta_is_found():
    m = load_module(str(DATA / "scale__mid_oob.ptx"))
    k = m.kernel("scale")
    reps, _ = representatives(m, k, _spec(1024))
    assert (37, 0, 0) in reps and len(reps) == 5
    mem = _by(check_kernel(m, k, _spec(1024)))["memory safety"]
    assert mem.status == "violated" and mem.rule == "bounds"
    assert "CTA (37,0,0)" in mem.message and mem.locations[0].line == 7


def test_race_between_ctas_falls_back_to_every_cta():
    m = load_module(str(DATA / "scale__mid_race.ptx"))
    k = m.kernel("scale")
    reps, why = representatives(m, k, _spec(1024))
    assert reps is None and "race-free: global is not proved" in why
    glob = _by(check_kernel(m, k, _spec(1024)))["race-free: global"]
    assert glob.status == "violated" and glob.locations[0].line == 7


@pytest.mark.parametrize("fam,file,grid,reason", [
    ("histogram", "histogram.ptx", 16, "global atomics or strong accesses (counted as inter-CTA communication)"),
    ("work_steal", "work_steal.ptx", 8, None),
    ("flag_handoff", "flag_handoff.ptx", 8, None),
])
def test_communicating_kernels_interpret_every_cta(fam, file, grid, reason):
    man = json.loads((ZOO / fam / "manifest.json").read_text())
    v = next(v for v in man["variants"] if v["file"] == file.replace(".ptx", ".cu"))
    launch = dict(v["launch"], grid=[grid, 1, 1])
    m = load_module(str(ZOO / fam / file))
    reps, why = representatives(m, m.kernel(v["kernel"]), LaunchSpec.from_dict(launch))
    assert reps is None, why
    if reason:
        assert why == reason


def _flagged(kernel, grid=16):
    return LaunchSpec.from_dict({"kernel": kernel, "grid": [grid, 1, 1], "block": [128, 1, 1],
                                 "buffers": {"flags": {"dtype": "int32", "shape": [grid]},
                                             "out": {"dtype": "float32", "shape": [grid * 128]}}})


def test_control_on_loaded_data_is_not_symmetric():
    """A barrier reached only where a CTA's flag is 5: with the flag set in CTA 9 alone, the first,
    second and last CTAs do not stand for it (they once did, and the kernel was verified)."""
    import numpy as np

    m = load_module(str(DATA / "flagged.ptx"))
    k = m.kernel("flagged")
    reps, why = representatives(m, k, _flagged("flagged"))
    assert reps is None
    assert why == "control may differ between CTAs beyond %ctaid (a barrier at line 8 depends on loaded data)"
    flags = np.zeros(16, np.int32)
    flags[9] = 5
    ob = _by(check_kernel(m, k, _flagged("flagged"), inputs={"flags": flags}))
    nb = ob["named-barrier conformance"]
    assert nb.status == "violated" and nb.rule == "barrier.divergence"
    assert "CTA (9,0,0)" in nb.message and nb.locations[0].line == 8


def test_loop_trip_on_loaded_data_is_not_symmetric():
    m = load_module(str(DATA / "flagged.ptx"))
    reps, why = representatives(m, m.kernel("flagged_loop"), _flagged("flagged_loop"))
    assert reps is None
    assert why.startswith("control may differ between CTAs beyond %ctaid (")
    assert why.endswith("(a barrier at line 19 depends on loaded data)")


def test_data_guarding_a_global_store_keeps_symmetry():
    m = load_module(str(DATA / "flagged.ptx"))
    spec = LaunchSpec.from_dict({"kernel": "positive", "grid": [64, 1, 1], "block": [128, 1, 1],
                                 "buffers": {"x": {"dtype": "float32", "shape": [8192]},
                                             "y": {"dtype": "float32", "shape": [8192]}}})
    reps, why = representatives(m, m.kernel("positive"), spec)
    assert why == PROVED and reps == [(0, 0, 0), (1, 0, 0), (62, 0, 0), (63, 0, 0)]


def test_a_bug_that_needs_two_ctaid_tests_at_once_is_found():
    """The representatives cover every combination of %ctaid tests that occurs in the grid, not
    each test alone: CTA (3,5) is chosen, and its split barrier is found (it was verified when
    the representatives were (3,0) for one test and (0,5) for the other)."""
    m = load_module(str(DATA / "conjunction.ptx"))
    k = m.kernel("conjunction")
    spec = LaunchSpec.from_dict({"kernel": "conjunction", "grid": [8, 8, 1], "block": [64, 1, 1],
                                 "buffers": {"out": {"dtype": "float32", "shape": [4096]}}})
    reps, why = representatives(m, k, spec)
    assert why == PROVED and (3, 5, 0) in reps and len(reps) <= 8
    nb = _by(check_kernel(m, k, spec))["named-barrier conformance"]
    assert nb.status == "violated" and nb.rule == "barrier.divergence"
    assert "CTA (3,5,0)" in nb.message and nb.locations[0].line == 6


STAGED = ["staged__uninit_shared", "staged__uninit_local", "staged__shfl_mask"]


def test_shared_local_addresses_and_membermasks_are_compared_between_ctas():
    """tests/data/symmetry/staged.cu and three twins whose CTA 37 alone goes wrong through a value,
    not a branch (nvcc makes each ``?:`` a selp): an uninitialized shared read, an uninitialized
    local read, a shuffle whose membermask names lanes that do not run it. The representatives
    compared CTAs by their conditions only, left CTA 37 out and the twins were verified."""
    spec = LaunchSpec.from_dict(json.loads((DATA / "launch_staged.json").read_text()))
    m = load_module(str(DATA / "staged.ptx"))
    assert representatives(m, m.kernel("staged"), spec) == ([(0, 0, 0), (1, 0, 0), (62, 0, 0), (63, 0, 0)], PROVED)
    assert check_kernel(m, m.kernel("staged"), spec).verdict == "verified"
    found = {}
    for name in STAGED:
        m = load_module(str(DATA / f"{name}.ptx"))
        k = m.kernel("staged")
        assert representatives(m, k, spec)[0] == [(0, 0, 0), (1, 0, 0), (37, 0, 0), (62, 0, 0), (63, 0, 0)]
        ob = _by(check_kernel(m, k, spec))
        bad = [o for o in ob.values() if o.status == "violated"]
        found[name] = [(o.title, o.rule, o.locations[0].line) for o in bad]
        assert all("CTA (37,0,0)" in o.message for o in bad)
    assert found == {"staged__uninit_shared": [("memory safety", "uninitialized", 14)],
                     "staged__uninit_local": [("memory safety", "uninitialized", 14)],
                     "staged__shfl_mask": [("named-barrier conformance", "barrier.divergence", 15)]}


def test_an_index_loaded_from_memory_interprets_every_cta():
    """out[i] = in[idx[i]] with a bad index in CTA 37 only: z3's model CTA of the failed in-bounds proof
    stands for no CTA in particular (it once did, and CTAs {0, 1, 62, 63} verified the launch)."""
    import numpy as np

    m = load_module(str(DATA / "gather.ptx"))
    k = m.kernel("gather")
    spec = LaunchSpec.from_dict(json.loads((DATA / "launch_gather.json").read_text()))
    reps, why = representatives(m, k, spec)
    assert reps is None
    assert why.startswith("memory safety of the CTAs not interpreted is not shown (") and \
        why.endswith("the address of the global access at gather.cu:6 depends on loaded data")
    idx = np.arange(2048, dtype=np.int32)
    idx[37 * 32 + 5] = 4096
    ob = _by(check_kernel(m, k, spec, inputs={"idx": idx}))["memory safety"]
    assert ob.status == "violated" and ob.rule == "bounds" and ob.locations[0].line == 6
    assert "CTA (37,0,0)" in ob.message
