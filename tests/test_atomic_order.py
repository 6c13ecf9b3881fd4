"""When the order of atomics matters (``AccessMixin.atomic_access``): one run stands for every
order of the atomics on a location where happens-before orders them, or where they commute and
no returned value is read; tests/data/atom_shared/order.cu has a kernel for each case, and
tests/data/atom_shared/atom_float.cu float adds into a slot per thread (the conformance kernels)."""
import numpy as np
import pytest

from conftest import ROOT
from kverify.launch import LaunchSpec
from kverify.semantics.interpreter import run_kernel
from kverify.semantics.ir import load_module
from kverify.verifier.check import check_kernel

ORDER = ROOT / "tests" / "data" / "atom_shared" / "order.ptx"
FLOAT = ROOT / "tests" / "data" / "atom_shared" / "atom_float.ptx"


def _launch(kernel, out=128, dtype="float32"):
    return LaunchSpec.from_dict({"kernel": kernel, "grid": [1, 1, 1], "block": [128, 1, 1],
                                 "buffers": {"x": {"dtype": "float32", "shape": [128]},
                                             **({"y": {"dtype": "float32", "shape": [128]}} if kernel.startswith("add_")
                                                else {}),
                                             "out": {"dtype": dtype, "shape": [out]}}})


def _run(path, kernel, **kw):
    m = load_module(str(path))
    return run_kernel(m, m.kernel(kernel), _launch(kernel, **kw), schedule="exhaustive", budget=8)


@pytest.mark.parametrize("kernel, line, why", [
    ("shared_slot", 19, "add.f32 atomics do not commute bit for bit"),
    ("one_instruction", 28, "add.f32 atomics do not commute bit for bit"),
    ("ticket_then_add", 38, "an earlier atomic's returned value is used"),
    ("two_lanes", 71, "add.f32 atomics do not commute bit for bit"),
])
def test_unordered_atomics_whose_order_shows_make_the_run_schedule_dependent(kernel, line, why):
    r = _run(ORDER, kernel)
    assert not r.robust and r.schedules_run > 1
    assert r.dependence == [f"order.cu:{line}: atom.add: {why}, so the order of atomics matters"]


def test_the_ticket_and_the_add_give_both_orders_over_the_schedules():
    m = load_module(str(ORDER))
    seen = set()
    for seed in range(16):
        r = run_kernel(m, m.kernel("ticket_then_add"), _launch("ticket_then_add"), schedule="random", seed=seed)
        seen.add(float(r.outputs["out"][0]))
    assert seen == {0.0, 2.0}


@pytest.mark.parametrize("kernel", ["ordered", "own_slot"])
def test_atomics_ordered_or_on_locations_of_their_own_are_one_run(kernel):
    r = _run(ORDER, kernel)
    assert r.robust and r.dependence == [] and r.schedules_run == 1


@pytest.mark.parametrize("kernel, dtype, n", [("add_f32", "float32", 128), ("add_f16", "float32", 256),
                                              ("add_f64", "float64", 128)])
def test_float_atomics_into_a_slot_per_thread_are_verified_for_every_schedule(kernel, dtype, n):
    m = load_module(str(FLOAT))
    rep = check_kernel(m, m.kernel(kernel), _launch(kernel, out=n, dtype=dtype), path=str(FLOAT))
    assert rep.verdict == "verified"
    bounds = [o.bound for o in rep.obligations if o.status == "bounded"]
    assert bounds and all("every schedule (one run" in b for b in bounds), bounds


def test_shared_atom_add_f32_keeps_subnormals_as_the_h200_does():
    """The lane classes of atom_float.cu (t % 4): 0 normal operands, 1 a subnormal addend, 2 a
    subnormal slot value, 3 a subnormal sum. On ``.shared`` ptxas compiles atom.add.f32 to a
    compare-and-swap loop around a plain FADD: nothing is flushed (measured on the H200,
    bench/results/conformance_data.json), unlike red.global.add.f32, which flushes (PTX ISA §9.7.13.5)."""
    m = load_module(str(FLOAT))
    x = np.linspace(-0.9, 0.9, 128, dtype=np.float32)
    y = np.linspace(0.7, -0.7, 128, dtype=np.float32)
    r = run_kernel(m, m.kernel("add_f32"), _launch("add_f32"), inputs={"x": x, "y": y})
    out = r.outputs["out"]
    tiny = np.float32(2.0 ** -127)
    for t in range(128):
        a, b = [(x[t], y[t]), (x[t], y[t] * tiny), (x[t] * tiny, y[t]),
                (np.float32(1.5 * 2 ** -126), np.float32(-(2 ** -126) * (1.25 if y[t] > 0 else 1.0)))][t % 4]
        assert out[t].view(np.uint32) == np.float32(a + b).view(np.uint32), t
    assert out[3] == np.float32(2 ** -128)  # 1.5 * 2^-126 - 1.25 * 2^-126: a subnormal sum, kept
