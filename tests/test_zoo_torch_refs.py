"""Every zoo reference has a PyTorch twin (``torch_<name>`` beside the numpy ``<name>`` in
the family's ref.py), and on random inputs the two agree within the validator's tolerance
(integers exactly), with the same dtypes. bench/validate_zoo.py --ref-kind torch validates
the zoo on a GPU against the PyTorch ones."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import zoo_variants
from kverify.launch import LaunchSpec
from kverify.launch.dtypes import dtype as dtype_row
from kverify.semantics.interpreter import call_reference, load_reference
from kverify.verifier.validate import tolerance

CORRECT = [(d, v) for d, v in zoo_variants() if v["correct"]]
IDS = [f"{d.name}/{v['file']}" for d, v in CORRECT]


def _torch_ref(v):
    mod, _, fn = v["reference"].partition(":")
    return f"{mod}:torch_{fn}"


def _inputs(spec, rng):
    out = {}
    for name, b in spec.buffers.items():
        shape = tuple(int(s) for s in b["shape"])
        row = dtype_row(b["dtype"])
        dt = np.dtype(row.np)
        if row.name.startswith("float8"):  # fp8 codes as the launch draws them: finite, >= 0
            out[name] = rng.integers(0, 100, shape).astype(dt)
        elif dt.kind == "f":
            out[name] = rng.uniform(-1, 1, shape).astype(dt)
        elif dt.kind == "i":
            out[name] = rng.integers(-100, 100, shape).astype(dt)
        else:
            out[name] = rng.integers(0, 200, shape).astype(dt)
    return out


@pytest.mark.parametrize("d,v", CORRECT, ids=IDS)
def test_every_reference_has_a_torch_twin(d, v):
    load_reference(_torch_ref(v), str(d / v["file"]))


@pytest.mark.parametrize("d,v", CORRECT, ids=IDS)
def test_torch_reference_agrees_with_the_numpy_one(d, v):
    pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch; not a core dependency)")
    spec = LaunchSpec.from_dict(v["launch"])
    near = str(d / v["file"])
    np_fn, torch_fn = load_reference(v["reference"], near), load_reference(_torch_ref(v), near)
    for seed in range(3):
        inputs = _inputs(spec, np.random.default_rng(seed))
        before = {k: a.copy() for k, a in inputs.items()}
        want = call_reference(np_fn, inputs, spec)
        got = call_reference(torch_fn, inputs, spec)
        assert all(np.array_equal(inputs[k], before[k]) for k in inputs)  # neither changes its inputs
        assert sorted(got) == sorted(want)
        for name, w in want.items():
            g = got[name]
            assert g.dtype == w.dtype and g.size == w.size, (name, g.dtype, w.dtype, g.shape, w.shape)
            c = tolerance.compare(g, w, str(np.dtype(spec.buffers[name]["dtype"])))
            assert c.ok, (name, seed, c)
