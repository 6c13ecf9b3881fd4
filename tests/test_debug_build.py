"""Kernels compiled with ``nvcc -G`` (device optimizations off, tests/data/O0/generate.py).

At -O0 nvcc calls what it inlines otherwise: ``atomicAdd`` calls ``__uAtomicAdd`` (a call
inside a called function, each with its own ``ret``), ``__threadfence`` is a function holding
``membar.gl``, and call sites in different functions declare ``param0`` with different widths.
Each of these ended as an internal error or a false race before.
"""
import json
from pathlib import Path

import numpy as np
import pytest

import kverify
from kverify.verifier.cli import main

ROOT = Path(__file__).resolve().parents[1]
O0 = ROOT / "tests" / "data" / "O0"


def _launch(family, stem):
    m = json.loads((ROOT / "tests" / "zoo" / family / "manifest.json").read_text())
    return json.dumps(next(v["launch"] for v in m["variants"] if v["file"] == stem + ".cu"))


def _check(capsys, family, stem, *extra):
    rc = main(["check", str(O0 / f"{stem}.ptx"), "--launch", _launch(family, stem), *extra])
    return rc, capsys.readouterr().out


@pytest.mark.parametrize("family,stem", [
    ("flag_handoff", "flag_handoff_fence"),  # __threadfence() is a called function: its fence orders
    ("work_steal", "work_steal"),            # param0 is .b64 in one callee, .b32 in another
    ("scope", "warp_tree"),                  # __shfl_down_sync wrappers
    ("device_func", "device_func"),          # nested calls, each returning
])
def test_correct_kernels_built_at_O0_verify(capsys, family, stem):
    rc, out = _check(capsys, family, stem)
    assert rc == 0, out
    assert "VERIFIED" in out.splitlines()[0] or f"kernel {family if family != 'scope' else stem}: VERIFIED" in out
    assert "internal error" not in out


def test_seeded_race_built_at_O0_is_found(capsys):
    rc, out = _check(capsys, "work_steal", "work_steal_slot")
    assert rc == 1, out
    assert "tests/zoo/work_steal/work_steal_slot.cu:16:5: error[race.shared]: write-after-write, not ordered" in out
    assert "kernel work_steal_slot: VIOLATED" in out


def test_static_race_check_runs_called_functions_in_place():
    """At -O0 every atomicAdd is a call of __uAtomicAdd, whose atom the pointer argument reaches
    through its .param: the static race checker runs the callee in place, so the shared-memory
    histogram's atomics are atomics of sbins (proved), not an unknown call."""
    from kverify.semantics.ir import load_module
    from kverify.verifier.races.smt import check_races

    keep = []
    shared, glob = check_races(load_module(str(O0 / "histogram.ptx")), "histogram", keep=keep)
    assert (shared.status, glob.status) == ("proved", "proved"), (shared.message, glob.message)
    accs = keep[0].ex.accesses
    assert [(a.space, a.region, a.atomic) for a in accs] == [
        ("shared", "shared", False), ("global", "param:data", False), ("shared", "shared", True),
        ("shared", "shared", False), ("global", "param:bins", True)]
    # one atom instruction of __uAtomicAdd, run from two call sites: two accesses, each at its
    # call's place in program order
    assert accs[2].instr is accs[4].instr
    assert [a.seq for a in accs] == sorted(a.seq for a in accs) and len({a.seq for a in accs}) == 5


def test_nested_call_returns_run_to_the_end():
    # atomicAdd -> __uAtomicAdd: the inner ret must not take the outer call's return mask
    rng = np.random.default_rng(7)
    data = rng.integers(0, 1000, 600).astype(np.uint32)
    bins = np.zeros(64, np.uint32)
    r = kverify.run(str(O0 / "histogram.ptx"), grid=2, block=256, args=(data, bins, 600))
    assert r.status == "complete", r.reason
    assert [f.rule for f in r.findings] == []
    np.testing.assert_array_equal(r.outputs["bins"], np.bincount(data % 64, minlength=64).astype(np.uint32))


WIDE_PARAM = """.version 8.0
.target sm_90a
.address_size 64
.func f(.param .b32 f_param_0)
{
	ret;
}
.visible .entry k()
{
	.reg .b64 %rd<2>;
	mov.u64 %rd1, 7;
	{
	.param .b32 param0;
	st.param.b64 [param0+0], %rd1;
	call.uni f, (param0);
	}
	ret;
}
"""


def test_param_store_past_its_declaration_is_a_bounds_finding(tmp_path, capsys):
    bad = tmp_path / "wide_param.ptx"
    bad.write_text(WIDE_PARAM)
    rc = main(["check", str(bad), "--grid", "1", "--block", "32", "--no-smt"])
    out = capsys.readouterr().out
    assert rc == 1, out
    assert (f"{bad}:14:1: error[bounds]: .param access of 8 bytes at offset 0 is past the end of the "
            "4-byte .param variable") in out, out
