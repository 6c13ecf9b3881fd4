"""The quick path: ``kverify check FILE --grid --block --arg`` with no launch spec. Buffers are
sized from the kernel's accesses (``verifier/races/extents.py``), memory safety on them is
``vacuous`` with its reason (not applicable), never hiding a fault the run found; ``--assume``
states preconditions over the symbolic parameters; counterexamples print their values."""
import json

import pytest
import z3

import kverify
from kverify.semantics.ir import KernelError
from kverify.symbolic.assume import WIDTH, to_z3
from kverify.verifier.check import SIZED_FROM_ACCESSES
from kverify.verifier.cli import main

from conftest import ZOO

SCATTER = ZOO / "scope" / "strided_scatter__even_stride.ptx"


def _quick(path, launch, *extra, capsys):
    """``check PATH`` with only the grid, block and scalar arguments of ``launch``: the exit
    code and the JSON report's obligations by id."""
    argv = ["check", str(path), "--format", "json", "--grid", ",".join(map(str, launch["grid"])),
            "--block", ",".join(map(str, launch["block"]))]
    for k, v in (launch.get("args") or {}).items():
        argv += ["--arg", f"{k}={v}"]
    rc = main(argv + list(extra))
    out = capsys.readouterr().out
    rep = json.loads(out)
    (k,) = rep["kernels"]
    return rc, {o["id"]: o for o in k["obligations"]}


def _variants(families, correct):
    out = []
    for fam in families:
        for v in json.loads((ZOO / fam / "manifest.json").read_text())["variants"]:
            if v["correct"] == correct and v["file"].startswith(fam):
                out.append(pytest.param(ZOO / fam / v["file"].replace(".cu", ".ptx"), v,
                                        id=f"quick:{v['file']}"))
    return out


FAMILIES = ("vadd", "reduce_smem", "stencil", "histogram")


@pytest.mark.parametrize("path,variant", _variants(FAMILIES, True))
def test_correct_kernels_verify_without_a_launch_spec(path, variant, capsys):
    rc, obs = _quick(path, variant["launch"], capsys=capsys)
    assert rc == 0, {k: (o["status"], o["message"]) for k, o in obs.items()}
    mem = obs["memory"]
    assert mem["status"] == "vacuous" and mem["message"] == SIZED_FROM_ACCESSES
    assert mem["message"].startswith("not applicable: buffers sized to the kernel's own accesses: an "
                                     "out-of-bounds access cannot show")
    assert "buffers sized to the kernel's accesses" in mem["bound"]
    assert obs["race.shared"]["status"] == "proved" and obs["race.global"]["status"] == "proved"


@pytest.mark.parametrize("path,variant", _variants(FAMILIES, False))
def test_seeded_bugs_are_violated_without_a_launch_spec(path, variant, capsys):
    rc, obs = _quick(path, variant["launch"], capsys=capsys)
    assert rc == 1
    rule = variant["bug"]["rule"]
    assert any(o["status"] == "violated" and o["rule"] == rule for o in obs.values()), \
        {k: (o["status"], o["rule"]) for k, o in obs.items()}


def test_a_run_that_faults_on_sized_buffers_is_still_violated(capsys):
    # stencil__missing_sync reads a shared halo cell before any thread wrote it: that finding
    # is memory safety's, and sizing the buffers to the accesses must not hide it
    rc, obs = _quick(ZOO / "stencil" / "stencil__missing_sync.ptx",
                     {"grid": [4, 1, 1], "block": [256, 1, 1], "args": {"n": 1000}}, capsys=capsys)
    assert rc == 1
    assert obs["memory"]["status"] == "violated" and obs["memory"]["rule"] == "uninitialized"


@pytest.mark.parametrize("path,launch,sizes", [
    (ZOO / "bulk_pipeline" / "bulk_pipeline.ptx", {"grid": [1, 1, 1], "block": [160, 1, 1], "args": {"iters": 8}},
     "in uint8[8192], out float32[2048]"),
    (ZOO / "tma_store" / "tma_store.ptx", {"grid": [1, 1, 1], "block": [128, 1, 1], "args": {"iters": 4}},
     "in float32[2048], out uint8[8192]"),
], ids=["quick:bulk_pipeline", "quick:tma_store"])
def test_buffers_reached_by_bulk_copies_are_sized_from_their_byte_counts(path, launch, sizes, capsys):
    # cp.async.bulk global->shared (bulk_pipeline's in) and shared->global (tma_store's out):
    # the size operand of each copy, over every iteration, is the buffer's reach; the manifests
    # give the same 2048 floats
    rc, obs = _quick(path, launch, capsys=capsys)
    assert rc == 0, {k: (o["status"], o["message"]) for k, o in obs.items()}
    assert obs["memory"]["bound"].endswith(f"buffers sized to the kernel's accesses: {sizes}")
    # bulk_pipeline's stage races are proved by the pipeline argument; tma_store's by its run
    assert obs["race.async"]["status"] == ("proved" if "bulk_pipeline" in path.name else "bounded")


def test_tensor_map_parameters_are_not_sized_and_say_why(capsys):
    rc, obs = _quick(ZOO / "tma_tensor_load" / "tma_tensor_load.ptx",
                     {"grid": [2, 2, 1], "block": [128, 1, 1]}, capsys=capsys)
    assert rc == 3
    assert obs["memory"]["status"] == "unknown"
    assert ("not sized from the accesses: tmap: a tensor map (its global address, shape, strides and box are "
            "host-side data the kernel does not show): give it under \"tensormaps\" in a launch spec"
            ) in obs["memory"]["message"]


def test_assume_turns_a_violated_race_into_a_proof_with_its_scope(capsys):
    launch = {"grid": [4, 1, 1], "block": [256, 1, 1]}
    rc, obs = _quick(SCATTER, launch, capsys=capsys)
    assert rc == 1
    race = obs["race.global"]
    assert race["status"] == "violated"
    # the symbolic stride the solver picked is in the text, and even
    stride = race["counterexample"]["params"]["stride"]
    assert race["message"].endswith(f"grid 4x1x1, block 256x1x1, stride={stride}") and stride % 2 == 0
    rc, obs = _quick(SCATTER, launch, "--assume", "stride % 2 == 1", "--assume", "stride >= 1", capsys=capsys)
    race = obs["race.global"]
    assert race["status"] == "proved"
    assert "all values of stride; assuming stride % 2 == 1 and stride >= 1;" in race["bound"]
    # stride has no value: the interpreter does not run, and the checks without values stand in
    # (no barrier; deadlock freedom proved for every stride; out[(i * stride) & 1023] and in[i] are
    # sized from the accesses)
    assert rc == 0
    assert obs["deadlock"]["status"] == "proved" and "all values of stride" in obs["deadlock"]["bound"]
    assert obs["memory"]["status"] == "vacuous"


@pytest.mark.parametrize("expr,message", [
    ("strid > 0", "<command line>:1:1: error: --assume 'strid > 0': no parameter 'strid' "
                  "(the kernel's: in, out, stride)"),
    ("stride >", "<command line>:1:1: error: --assume 'stride >': invalid syntax"),
    ("stride % n == 1", "<command line>:1:10: error: --assume 'stride % n == 1': // and % take a positive "
                        "integer literal on the right"),
    ("stride ** 2 > 1", "<command line>:1:1: error: --assume 'stride ** 2 > 1': unsupported expression"),
    ("stride > 2 and stride < 1", "<command line>:1:1: error: --assume 'stride > 2 and stride < 1': no "
                                  "parameter values satisfy them together"),
])
def test_bad_assumptions_are_command_line_errors(expr, message, capsys):
    rc = main(["check", str(SCATTER), "--grid", "4", "--block", "256", "--assume", expr])
    out = capsys.readouterr()
    assert rc == 2
    assert message in out.out + out.err


def test_assume_in_the_api_reaches_the_symbolic_checker():
    t = kverify.Tensor
    args = {"in": t(1024), "out": t(1024)}  # stride left out: symbolic
    rep = kverify.check(str(SCATTER), grid=4, block=256, args=args, assume="stride % 2 == 1")
    race = next(o for o in rep.obligations if o.id == "race.global")
    assert race.status == "proved" and "assuming stride % 2 == 1" in race.bound
    with pytest.raises(KernelError, match=r"break the assumption 'stride % 2 == 1' \(stride=2\)"):
        kverify.check(str(SCATTER), grid=4, block=256, args={**args, "stride": 2}, assume="stride % 2 == 1")


def test_assumption_arithmetic_is_pythons():
    r = z3.BitVec("r", WIDTH)
    for v in range(-13, 14):
        for d in (1, 2, 3, 7):
            for op in ("//", "%"):
                s = z3.Solver()
                s.add(to_z3(f"a {op} {d} == r", {"a": z3.BitVecVal(v, WIDTH), "r": r}))
                assert s.check() == z3.sat
                assert s.model()[r].as_signed_long() == eval(f"{v} {op} {d}")
    s = z3.Solver()
    s.add(to_z3("not (a > 1 or a < -1) and -a * 2 + 1 == 3", {"a": z3.BitVec("a", WIDTH)}))
    assert s.check() == z3.sat and s.model()[z3.BitVec("a", WIDTH)].as_signed_long() == -1


@pytest.mark.slow
def test_static_mbarrier_counterexamples_print_the_symbolic_parameters(capsys):
    # iters left symbolic: the arrivals counterexample names the value the solver chose, and
    # not the pointer parameters (whose base addresses are arbitrary)
    rc = main(["check", str(ZOO / "bulk_pipeline" / "bulk_pipeline__wrong_arrival_count.ptx"), "--block", "160",
               "--format", "json"])
    (k,) = json.loads(capsys.readouterr().out)["kernels"]
    o = next(o for o in k["obligations"] if o["id"] == "mbarrier.arrivals")
    assert rc == 1 and o["status"] == "violated"
    params = o["counterexample"]["params"]
    assert set(params) == {"iters"}
    assert o["message"].endswith(f"; with iters={params['iters']}")


def _flags(launch, kernel):
    """The command-line form of a zoo launch: --grid/--block/--cluster/--dynamic-smem and one
    --arg per scalar, per buffer parameter (SHAPE:DTYPE) and per tensor map
    (SHAPE:DTYPE:box=BOX:swizzle=S) — no launch JSON."""
    argv = ["--grid", ",".join(map(str, launch["grid"])), "--block", ",".join(map(str, launch["block"]))]
    if launch.get("cluster", [1, 1, 1]) != [1, 1, 1]:
        argv += ["--cluster", ",".join(map(str, launch["cluster"]))]
    if launch.get("dynamic_smem") or launch.get("shared_bytes"):
        argv += ["--dynamic-smem", str(launch.get("dynamic_smem") or launch.get("shared_bytes"))]
    for k, v in (launch.get("args") or {}).items():
        argv += ["--arg", f"{k}={v}"]
    names = {n for p in kernel.params for n in (p.name, p.source_name) if n}
    for k, b in (launch.get("buffers") or {}).items():
        if k in names:
            argv += ["--arg", f"{k}={'x'.join(map(str, b['shape']))}:{b['dtype']}"]
    for k, t in (launch.get("tensormaps") or {}).items():
        argv += ["--arg", f"{k}={'x'.join(map(str, t['shape']))}:{t['dtype']}:box={'x'.join(map(str, t['box']))}"
                          f":swizzle={t.get('swizzle', 'none')}"]
    return argv


def _zoo_flag_cases():
    out = []
    for m in sorted(ZOO.glob("*/manifest.json")):
        for v in json.loads(m.read_text())["variants"]:
            ptx = m.parent / (v["file"].rsplit(".", 1)[0] + ".ptx")
            launch = v.get("launch") or {}
            if not ptx.exists() or not launch:
                continue
            if any(isinstance(a, dict) for a in (launch.get("args") or {}).values()):
                continue  # by-value structs are given in a launch spec (tests/test_launch_struct.py)
            out.append(pytest.param(ptx, v, id=f"{m.parent.name}/{ptx.name}"))
    return out


@pytest.mark.parametrize("ptx,variant", _zoo_flag_cases())
def test_every_zoo_kernel_from_command_line_flags_alone(ptx, variant, capsys):
    """Every zoo kernel (but the by-value struct family) checked from --grid/--block/--cluster/
    --dynamic-smem/--arg, with no launch JSON: correct ones exit 0, seeded bugs exit 1 with the
    manifest's rule."""
    from kverify.semantics.ir import load_module

    launch = variant["launch"]
    kernel = load_module(str(ptx)).kernel(launch["kernel"])
    rc = main(["check", str(ptx), "--kernel", launch["kernel"], "--format", "json"] + _flags(launch, kernel))
    (k,) = json.loads(capsys.readouterr().out)["kernels"]
    st = {o["id"]: (o["status"], o["rule"]) for o in k["obligations"]}
    if variant["correct"]:
        assert rc == 0, st
    else:
        assert rc == 1, st
        assert any(s == "violated" and r == variant["bug"]["rule"] for s, r in st.values()), st


def test_a_tensor_map_argument_needs_a_box_and_a_known_option(capsys):
    ptx = str(ZOO / "tma_tensor_load" / "tma_tensor_load.ptx")
    base = ["check", ptx, "--grid", "2,2", "--block", "128"]
    assert main(base + ["--arg", "tmap=64x64:f32"]) == 2  # a buffer where a tensor map belongs
    assert main(base + ["--arg", "tmap=64x64:f32:swizzle=128B"]) == 2
    assert main(base + ["--arg", "tmap=64x64:f32:box=32x32:fill=0"]) == 2
    cap = capsys.readouterr()
    err = cap.out + cap.err
    assert "--arg tmap: tma_tensor_load_param_0 is a 128-byte by-value parameter: give a tensor map" in err
    assert "--arg tmap: a tensor map needs box=..." in err
    assert "--arg tmap: unknown tensor-map option 'fill=0'" in err
    assert main(base + ["--arg", "tmap=64x64:f32:box=32x32", "--arg", "out=64x64:f32"]) == 0
