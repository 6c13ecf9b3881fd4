"""Semantics conformance: random PTX programs on the interpreter against recorded H200
results (regressions, CPU), the generator's programs accepted by ptxas and the
interpreter (CPU), and live interpreter-vs-GPU comparison with hypothesis shrinking
(``gpu``)."""
from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from conformance.generate import OUT_BYTES, Program, programs
from kverify.launch import LaunchSpec
from kverify.semantics.interpreter import run_kernel
from kverify.semantics.ir import load_module

ROOT = Path(__file__).resolve().parent.parent
REG = ROOT / "tests" / "conformance" / "regressions"


def interp(ptx_path, grid, block, inputs):
    p = Program("", int(grid), int(block), 0, ())
    m = load_module(str(ptx_path))
    r = run_kernel(m, m.kernel("conf"), LaunchSpec.from_dict(p.launch()),
                   inputs={"conf_param_0": inputs, "conf_param_1": np.zeros(int(grid) * int(block) * OUT_BYTES,
                                                                            np.uint8)}, check=False)
    assert r.status == "complete", r.reason
    return r.outputs["conf_param_1"]


@pytest.mark.parametrize("ptx", sorted(REG.glob("*.ptx")), ids=lambda p: p.stem)
def test_regression_program_matches_the_recorded_h200_output(ptx):
    d = np.load(ptx.with_suffix(".npz"))
    got = interp(ptx, d["grid"], d["block"], d["in_conf_param_0"])
    assert np.array_equal(got, d["gpu_out"])


STEERED = ROOT / "tests" / "conformance" / "steered"


@pytest.mark.parametrize("ptx", sorted(p for p in STEERED.glob("*.ptx") if not p.name.endswith(".as_compiled.ptx")),
                         ids=lambda p: p.stem)
def test_steered_program_h200_output_is_what_the_sass_computes(ptx):
    """The disagreements of the seed-20261203 run that are not semantics bugs: each program
    (cut after its first divergent instruction) with its inputs and the H200's output.
    The interpreter, following the PTX ISA, differs from the H200; the same program with
    the suspect instruction written as the SASS computes it (``.as_compiled.ptx``) gives
    the H200's output bit for bit. The generator no longer writes these forms."""
    d = np.load(ptx.with_suffix(".npz"))
    isa = interp(ptx, d["grid"], d["block"], d["in_conf_param_0"])
    compiled = interp(ptx.with_name(ptx.stem + ".as_compiled.ptx"), d["grid"], d["block"], d["in_conf_param_0"])
    assert not np.array_equal(isa, d["gpu_out"])
    assert np.array_equal(compiled, d["gpu_out"])


@settings(max_examples=8, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(programs(max_len=20))
def test_generated_programs_assemble_and_run_on_the_interpreter(tmp_path_factory, p):
    path = tmp_path_factory.mktemp("conf") / "p.ptx"
    path.write_text(p.ptx)
    if shutil.which("ptxas"):
        from kverify.lowering.build import assemble

        assemble(p.ptx)
    interp(path, p.grid, p.block, p.inputs())


@settings(max_examples=40, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(programs())
def test_generator_steers_clear_of_what_ptxas_miscompiles_or_the_isa_leaves_open(p):
    """No guarded ``testp`` or ``set.*.f32.*`` (ptxas 13.0 drops the guard of the first and
    runs the f32 conversion of the second unguarded), no float ``abs``/``neg`` of a register
    that may hold a NaN (the ISA leaves the NaN open; ptxas picks FADD or FSEL), no
    ``shfl.sync`` predicate destination with only immediate operands (ptxas takes the
    predicate for warp-uniform), no 64-bit shift by a register an f32 instruction may have
    written (ptxas converts the amount from float), no half-precision min/max of two NaNs
    (the ISA leaves that NaN open), no ``bfe.s32`` with immediate position >= 32 and
    length, not even through a register holding the constant (ptxas folds it to -1).
    docs/validation.md has the SASS. Carry chains and match.sync are never guarded; every
    addc/subc/madc reads a carry that an instruction of its chain and of its kind (addition
    or subtraction: ptxas keeps CC.CF as the hardware carry, NOT borrow after a subtraction)
    wrote, in straight-line code (no label or branch in between: the ISA does not specify
    CC.CF before that); a match.sync with a partial membermask runs only in the lanes of
    the mask (a branch on ``%pn0`` just before it)."""
    import re

    carry, prev, t3 = None, "", None
    for line in (x.strip() for x in p.ptx.splitlines()):
        guarded = re.match(r"@!?%\w+ (.*)", line)
        body = guarded.group(1) if guarded else line
        if guarded:
            assert not body.startswith("testp."), line
            assert not re.match(r"set\.\w+\.f32\.", body), line
            assert not re.match(r"((add|sub|mad)(\.lo|\.hi)?\.cc|addc|subc|madc|match)\.", body), line
        if line.endswith(":") or body.startswith(("bra", "bar.sync")):
            carry = None
        m = re.match(r"(add|sub|mad)c?(\.lo|\.hi)?(\.cc)?\.[us]\d+ ", body)
        if m and (body.startswith(("addc", "subc", "madc")) or m.group(3)):
            kind = "sub" if m.group(1) == "sub" else "add"
            if body.startswith(("addc", "subc", "madc")):  # reads the flag its own kind wrote
                assert carry == kind, line
            if m.group(3):
                carry = kind
        m = re.match(r"match\.(any|all)\.sync\.b(32|64) \S+, \S+, (\S+);", body)
        if m and (t3 if m.group(3) == "%t3" else m.group(3)) != "0xffffffff":
            assert prev.startswith("@%pn0 bra $L_match"), line
        if body.startswith("mov.b32 %t3, "):
            t3 = body[len("mov.b32 %t3, "):-1]
        if re.match(r"(abs|neg)(\.ftz)?\.(f32|f64|f16|bf16|f16x2|bf16x2) ", body):
            assert body.endswith((", %s0;", ", %sd0;", ", %sh0;")), line
        m = re.match(r"bfe\.s32 %r\d+, \S+, (\d+), (\d+);", body)
        if m:
            assert int(m.group(1)) < 32, line
        if re.match(r"bfe\.s32 %r\d+, \S+, %s0, \d+;", body):  # a position ptxas cannot fold
            assert re.match(r"add\.u32 %s0, %s0, \d+;", prev), (prev, line)
        m = re.match(r"shfl\.sync\.\w+\.b32 %r\d+\|%p\d+, (.*), 0xffffffff;", body)
        if m:
            assert any(x.strip().startswith("%") for x in m.group(1).split(",")), line
        m = re.match(r"sh[lr]\.[bus]64 %rd\d+, \S+, (%\w+);", body)
        if m:
            assert m.group(1) == "%s0", line
        if re.match(r"(min|max)\.(bf16|f16)", body):  # without .NaN: never two NaN operands
            assert line.startswith("@!%pn1 "), line
        prev = line


_GPU = {}


def _gpu():
    if "gpu" not in _GPU:
        from kverify.lowering.gpu import Gpu

        _GPU["gpu"] = Gpu()
    return _GPU["gpu"]


@pytest.mark.gpu
@settings(max_examples=60, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(programs(control=False))
def test_interpreter_agrees_with_the_gpu_bit_for_bit(tmp_path_factory, p):
    """Without guards and branches (bench/conformance.py runs the programs with control flow
    and records them)."""
    from kverify.lowering.build import assemble
    from kverify.verifier.validate.worker import run_plan

    d = tmp_path_factory.mktemp("confgpu")
    (d / "p.ptx").write_text(p.ptx)
    (d / "p.cubin").write_bytes(assemble(p.ptx))
    inputs = p.inputs()
    np.savez(d / "in.npz", conf_param_0=inputs, conf_param_1=np.zeros(p.grid * p.block * OUT_BYTES, np.uint8))
    plan = {"image": str(d / "p.cubin"), "kernel": "conf", "runs": [{
        "id": "r", "npz": str(d / "in.npz"), "out": str(d / "out.npz"), "grid": [p.grid, 1, 1],
        "block": [p.block, 1, 1], "params": [{"kind": "buffer", "buffer": "conf_param_0"},
                                             {"kind": "buffer", "buffer": "conf_param_1"}]}]}
    assert run_plan(_gpu(), plan, lambda **kw: None) == 0
    gpu_out = np.load(d / "out.npz")["conf_param_1"]
    assert np.array_equal(interp(d / "p.ptx", p.grid, p.block, inputs), gpu_out), p.ptx


def test_vector_pack_moves_and_all_immediate_operands_run(tmp_path):
    """Two interpreter crashes the generator found: ``mov.b64 %rd, {%r, %r}`` (the pack form
    read its vector operand as a value) and an instruction whose operands are all
    immediates (a scalar result could not take the lanes' shape)."""
    from conformance.generate import IN_BYTES, NR, NRD, render

    body = ["mov.b64 %rd1, {%r4, %r11};", "mov.b32 %r1, {%h4, %h3};", "rcp.rn.f32 %r2, 0f7FC00000;",
            "add.rn.f32 %r3, 0f3F800000, 0f3F800000;", "mul.wide.u32 %rd2, 3, 5;"]
    path = tmp_path / "p.ptx"
    path.write_text(render(body, 32))
    inputs = np.random.default_rng(0).integers(0, 256, 32 * IN_BYTES).astype(np.uint8)
    out = interp(path, 1, 32, inputs).reshape(32, OUT_BYTES)
    inp = inputs.reshape(32, IN_BYTES)
    r = out[:, :4 * NR].copy().view(np.uint32)
    rd = out[:, 4 * NR:4 * NR + 8 * NRD].copy().view(np.uint64)
    ri = inp[:, :4 * NR].copy().view(np.uint32)
    h = inp[:, 4 * NR + 8 * NRD:4 * NR + 8 * NRD + 12].copy().view(np.uint16)
    assert (rd[:, 1] == (ri[:, 11].astype(np.uint64) << np.uint64(32)) | ri[:, 4]).all()
    assert (r[:, 1] == (h[:, 3].astype(np.uint32) << 16) | h[:, 4]).all()
    assert (r[:, 2] == 0x7FFFFFFF).all() and (r[:, 3] == 0x40000000).all() and (rd[:, 2] == 15).all()
