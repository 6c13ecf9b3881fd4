"""Cooperative launches: cooperative groups' grid.sync() reads its grid workspace through
%envreg1/%envreg2 and traps when it is null. A cooperative launch (``--cooperative``, the launch
spec's ``"cooperative": true``, or assumed when the kernel reads that workspace) gets a zeroed
workspace and runs every CTA side by side; the arrive-and-spin of the grid barrier is one
blocking atomic (kverify.semantics.ir.grid_barrier), so one run stands for every order of the
arrivals, and the acquire of the flipped counter orders the two phases (release sequences
through the arrivals' RMWs); a plain launch traps with the reason (tests/data/grid_sync)."""
import json
from pathlib import Path

import numpy as np
import pytest

from kverify.launch import LaunchSpec
from kverify.semantics.interpreter import run_kernel
from kverify.semantics.ir import instructions, load_module
from kverify.verifier.cli import main

DATA = Path(__file__).parent / "data" / "grid_sync"
LAUNCH = ["--grid", "4", "--block", "128", "--arg", "n=500"]


def _spec(**kw):
    return LaunchSpec.from_dict({"kernel": "two_phase", "grid": [4, 1, 1], "block": [128, 1, 1], "args": {"n": 500},
                                 "buffers": {k: {"dtype": "float32", "shape": [500]} for k in ("in", "tmp", "out")},
                                 "outputs": ["out"], **kw})


def test_cooperative_run_completes_without_a_race_and_computes_the_result():
    m = load_module(str(DATA / "two_phase.ptx"))
    x = np.arange(500, dtype=np.float32)
    r = run_kernel(m, m.kernel("two_phase"), _spec(), inputs={"in": x})
    assert r.status == "complete" and r.cooperative, r.reason
    assert not r.findings, [f.message for f in r.findings]
    np.testing.assert_array_equal(r.outputs["out"], 2 * np.roll(x, -1) + 2 * x)


def test_a_plain_launch_traps_with_the_reason(capsys):
    rc = main(["check", str(DATA / "two_phase.ptx"), *LAUNCH, "--no-cooperative"])
    out = capsys.readouterr().out
    assert rc == 1
    assert ("tests/data/grid_sync/two_phase.cu:11:3: error[trap]: trap executed by warp 0 (threads 0-31) of CTA (0,0,0) "
            "(the launch is not cooperative: cooperative groups' grid.sync() traps when its grid workspace") in out


def test_the_spec_key_and_the_bound(capsys):
    assert _spec(cooperative=False).to_dict()["cooperative"] is False
    m = load_module(str(DATA / "two_phase.ptx"))
    r = run_kernel(m, m.kernel("two_phase"), _spec(cooperative=False))
    assert r.status == "complete" and not r.cooperative and {f.rule for f in r.findings} == {"trap"}
    rc = main(["check", str(DATA / "two_phase.ptx"), *LAUNCH, "--format", "json"])
    rep = json.loads(capsys.readouterr().out)
    assert rc == 0 and rep["kernels"][0]["verdict"] == "verified"
    (ob,) = [o for o in rep["kernels"][0]["obligations"] if o["title"] == "deadlock-free"]
    assert ob["status"] == "bounded"
    assert ("grid 4x1x1, block 128x1x1, cooperative launch (every CTA co-resident, cooperative groups' grid "
            "workspace given; assumed: the kernel reads that workspace), its inputs (seeded random contents of in, tmp, out); "
            "every schedule (one run") in ob["bound"]


def test_the_grid_barrier_spin_is_one_blocking_atomic():
    k = load_module(str(DATA / "two_phase.ptx")).kernel("two_phase")
    (atom,) = [i for i in instructions(k.body) if i.op == "atom"]
    assert atom.blocking and atom.mods == ("add", "release", "gpu", "u32")
    assert not [i for i in instructions(k.body) if i.op == "ld" and "acquire" in i.mods]


@pytest.mark.parametrize("edit, why", [
    ("setp.gt.s32 \t%p5, %r27, -1;", "the loop keeps spinning on another condition"),
    ("ld.acquire.gpu.u32 %r26,[%rd15];", "the loop polls another location"),
    ("atom.add.release.gpu.u32 %r13,[%rd15],%r14;", "the atomic does not release"),
])
def test_the_spin_is_not_folded_when_it_is_not_the_grid_barrier(tmp_path, edit, why):
    text = (DATA / "two_phase.ptx").read_text()
    assert edit in text
    changed = {"setp.gt.s32 \t%p5, %r27, -1;": "setp.gt.s32 \t%p5, %r27, 0;",
               "ld.acquire.gpu.u32 %r26,[%rd15];": "ld.acquire.gpu.u32 %r26,[%rd15+4];",
               "atom.add.release.gpu.u32 %r13,[%rd15],%r14;": "atom.add.relaxed.gpu.u32 %r13,[%rd15],%r14;"}[edit]
    (tmp_path / "two_phase.cu").write_text((DATA / "two_phase.cu").read_text())
    p = tmp_path / "two_phase.ptx"
    p.write_text(text.replace(edit, changed))
    k = load_module(str(p)).kernel("two_phase")
    (atom,) = [i for i in instructions(k.body) if i.op == "atom"]
    assert not atom.blocking, why


def test_a_cta_that_never_arrives_deadlocks_the_grid(capsys):
    rc = main(["check", str(DATA / "two_phase__early_exit.ptx"), *LAUNCH])
    out = capsys.readouterr().out
    assert rc == 1 and "kernel two_phase: VIOLATED" in out
    assert "error[deadlock]: every live warp is blocked" in out
    assert ("warp 0 (threads 0-31) of CTA (0,0,0) waits in the grid barrier at grid workspace (cooperative launch)+4 "
            "for the other CTAs of the grid to arrive") in out


def test_a_cta_barrier_in_place_of_the_grid_barrier_races(capsys):
    rc = main(["check", str(DATA / "two_phase__no_grid_sync.ptx"), *LAUNCH])
    out = capsys.readouterr().out
    assert rc == 1 and "kernel two_phase: VIOLATED" in out
    assert ("two_phase__no_grid_sync.cu:12:3: error[race.global]: read-after-write, not ordered: read of global tmp "
            "by thread 115 (warp 3, lane 19) of CTA (3,0,0)") in out


# --------------------------------------------------------------------------- validate, lowering, the GPU runner


def _validate(name, tmp_path):
    from kverify.verifier.validate import validate
    from kverify.verifier.validate.runner import InterpreterRunner

    p = str(DATA / f"{name}.ptx")
    m = load_module(p)
    return validate(p, launch=str(DATA / "launch.json"), ref="ref:two_phase", trials=2, workdir=str(tmp_path),
                    runner=InterpreterRunner(m, m.kernel("two_phase")))


def test_validate_launches_it_cooperatively_and_the_plain_barrier_twin_is_wrong(tmp_path):
    ok = _validate("two_phase", tmp_path)
    assert ok.report.verdict == "verified", [(o.title, o.status, o.message) for o in ok.report.obligations]
    plan = json.loads((Path(ok.details["workdir"]) / "plan.json").read_text())
    assert {(r["cooperative"], r["launch"].get("cooperative")) for r in plan["runs"]} == {(True, None)}
    bad = _validate("two_phase__no_grid_sync", tmp_path)
    assert bad.report.verdict == "violated"
    (m,) = [o for o in bad.report.obligations if o.title == "matches-reference"]
    assert m.status == "violated"
    assert m.message.startswith("trial 0 (defaults n=500) run A: out: 3 of 500 elements differ (first at flat index "
                                "127: got nan")
    plan = json.loads((Path(bad.details["workdir"]) / "plan.json").read_text())
    assert {r["cooperative"] for r in plan["runs"]} == {False}  # reads no grid workspace: a plain launch


def test_the_lowered_grid_barrier_spins_again():
    """The lowering gives the blocking atomic its spin back; nvcc's PTX of it is read as the grid
    barrier again (tests/test_lowering.py runs it against the original)."""
    from kverify.lowering import lower_module

    src = lower_module(load_module(str(DATA / "two_phase.ptx")))
    assert ('unsigned kv_spin; do { asm volatile("ld.acquire.gpu.u32 %0, [%1];" : "=r"(kv_spin) : "l"(rd15) '
            ': "memory"); } while ((int)(kv_spin ^ r13) >= 0); }') in src
    assert 'asm volatile("atom.add.release.gpu.u32 %0, [%1], %2;" : "=r"(r13) : "l"(rd15), "r"(r14)' in src


def test_the_gpu_launch_sets_the_cooperative_and_programmatic_attributes():
    """``Gpu.launch`` with a fake driver: the cuLaunchKernelEx config carries each attribute."""
    import ctypes

    from kverify.lowering import gpu as G

    seen = []

    class Cu:
        def cuLaunchKernelEx(self, cfg, fn, argv, extra):
            c = ctypes.cast(cfg, ctypes.POINTER(G._LaunchConfig)).contents
            assert (c.gridDimY, c.gridDimZ, c.blockDimY, c.blockDimZ) == (1, 1, 1, 1)
            seen.append((c.gridDimX, c.blockDimX, c.hStream,
                         [(c.attrs[i].id, bytes(c.attrs[i].value[:12])) for i in range(c.numAttrs)]))
            return 0

        def cuLaunchKernel(self, *a):
            seen.append("plain")
            return 0

    g = object.__new__(G.Gpu)
    g.cu = Cu()
    one = (1).to_bytes(4, "little") + bytes(8)
    g.launch(None, (4, 1, 1), (128, 1, 1), [b"\0" * 8], cooperative=True)
    g.launch(None, (4, 1, 1), (128, 1, 1), [], programmatic=True, stream=ctypes.c_void_p(77))
    g.launch(None, (2, 1, 1), (64, 1, 1), [], cluster=(2, 1, 1), cooperative=True)
    g.launch(None, (2, 1, 1), (64, 1, 1), [])
    g.launch(None, [4], [128], [], cooperative=True)  # a launch spec's one-dimensional grid and block
    assert seen == [(4, 128, None, [(2, one)]), (4, 128, 77, [(6, one)]),
                    (2, 64, None, [(4, bytes([2, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0])), (2, one)]), "plain",
                    (4, 128, None, [(2, one)])]


@pytest.mark.gpu
def test_on_the_gpu_the_cooperative_launch_matches_the_reference(tmp_path):
    from kverify.verifier.validate import validate

    v = validate(str(DATA / "two_phase.ptx"), launch=str(DATA / "launch.json"), ref="ref:two_phase", trials=2,
                 workdir=str(tmp_path))
    assert v.report.verdict == "verified", [(o.title, o.status, o.message) for o in v.report.obligations]
