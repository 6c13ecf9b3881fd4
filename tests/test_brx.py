"""Indirect branches (``brx.idx`` over a ``.branchtargets`` list, PTX ISA §9.7.12.4, §11.6.1)
and indirect calls (``call`` through a function pointer with a ``.callprototype``,
§9.7.12.5, §11.6.2).

Kernels of our own: tests/data/brx (LLVM IR compiled by the NVPTX back end bundled with
Triton, regen.py; nvcc does not emit brx.idx) and tests/data/indirect_call (CUDA, nvcc).
"""
import subprocess
from pathlib import Path

import numpy as np
import pytest

from kverify.launch import LaunchSpec
from kverify.semantics.interpreter import run_kernel
from kverify.semantics.ir import KernelError, load_module, parse_ir, parse_ptx
from kverify.semantics.ir.nodes import If, Instr
from kverify.semantics.ir.printer import print_module
from kverify.semantics.ir.visit import indirect_targets, instructions
from kverify.verifier import check as C
from kverify.verifier.races.smt import check_races

DATA = Path(__file__).resolve().parent / "data"
BRX = DATA / "brx"
CALLS = DATA / "indirect_call"


def _check(path, kernel, args=None, buffers=None, grid=1):
    m = load_module(str(path))
    k = m.kernel(kernel)
    spec = LaunchSpec.from_dict({"kernel": kernel, "grid": [grid, 1, 1], "block": [128, 1, 1],
                                 "args": args or {}, "buffers": buffers or {}})
    rep = C.check_kernel(m, k, spec, path=str(path))
    return rep, {o.title: o for o in rep.obligations}


def _spec(kernel):
    return LaunchSpec.from_dict({"kernel": kernel, "grid": [1, 1, 1], "block": [128, 1, 1], "buffers": {
        f"{kernel}_param_0": {"dtype": "float32", "shape": [128]},
        f"{kernel}_param_1": {"dtype": "float32", "shape": [128]}}})


def _ptx_line(path, text):
    return next(n for n, l in enumerate(Path(path).read_text().splitlines(), 1) if text in l)


# --------------------------------------------------------------------------- structuring


def test_brx_idx_becomes_the_dispatch_check_and_a_chain_of_ifs():
    m = load_module(str(BRX / "roles.ptx"))
    body = m.kernel("roles").body
    checks = [i for i in instructions(body) if i.op == "brx.idx"]
    assert [(str(i.operands[0]), i.operands[1].value) for i in checks] == [("%r2", 4)]
    tests = [i for i in instructions(body) if i.op == "setp" and str(i.operands[0]).startswith("%brx$")]
    assert [i.operands[2].value for i in tests] == [0, 1, 2]
    assert all(i.loc.ptx_line == _ptx_line(BRX / "roles.ptx", "brx.idx") for i in checks + tests)
    # the four stores, one per arm, each under its own if
    stores = [i for i in instructions(body) if i.op == "st" and "shared" in i.mods]
    assert len(stores) == 4
    assert sum(isinstance(s, If) for s in body) == 1


def test_structured_brx_round_trips_through_the_ir_text():
    m = load_module(str(BRX / "roles.ptx"))
    text = print_module(m)
    assert "brx.idx %r2, 4;" in text
    m2 = parse_ir(text)
    assert print_module(m2) == text
    assert m2.kernel("roles").body == m.kernel("roles").body


def test_brx_naming_an_undeclared_list_is_bad_input_at_its_position(tmp_path):
    text = (BRX / "roles.ptx").read_text().replace("brx.idx \t%r2, $L_brx_0;", "brx.idx \t%r2, $L_brx_9;")
    line = _ptx_line(BRX / "roles.ptx", "brx.idx")
    with pytest.raises(KernelError) as e:
        parse_ptx(text, "roles.ptx")
    assert (e.value.line, e.value.col) == (line, 2)
    assert "$L_brx_9 is not a .branchtargets list declared in this function" in str(e.value)
    # the CLI: file:line:col and exit 2
    bad = tmp_path / "bad.ptx"
    bad.write_text(text)
    r = subprocess.run(["python", "-m", "kverify", "check", str(bad)], capture_output=True, text=True)
    assert r.returncode == 2
    assert f"{bad}:{line}:2: error: brx.idx: $L_brx_9 is not a .branchtargets list" in r.stdout


def test_a_branchtargets_label_that_is_not_in_the_function_is_bad_input():
    text = (BRX / "roles.ptx").read_text().replace("\t\t$L__BB0_2,", "\t\t$L__BB0_99,")
    with pytest.raises(KernelError) as e:
        parse_ptx(text, "roles.ptx")
    assert e.value.line == _ptx_line(BRX / "roles.ptx", "$L__BB0_2,")
    assert "$L__BB0_99 is not a label of this function" in str(e.value)


def test_a_label_listed_twice_is_a_join_not_copied_code():
    """Two list entries naming one block: both arms break to it (its code appears once)."""
    text = (BRX / "roles.ptx").read_text().replace("\t\t$L__BB0_4;", "\t\t$L__BB0_1;")
    m = parse_ptx(text, "dup.ptx")
    k = m.kernel("roles")
    stores = [i for i in instructions(k.body) if i.op == "st" and "shared" in i.mods]
    assert len(stores) == 3  # role 3's arm is unreachable now, role 0's code is not duplicated
    spec = _spec("roles")
    x = np.arange(128, dtype=np.float32)
    r = run_kernel(m, k, spec, inputs={"roles_param_0": x})
    assert r.status == "complete", r.reason
    y = r.outputs["roles_param_1"].view(np.float32)
    t = np.arange(128)
    o = 127 - t  # thread t reads element 127 - t, written by role (127 - t) // 32 (3 -> role 0's code)
    want = np.select([o // 32 == 1, o // 32 == 2], [2 * x[o], x[o] + 3], x[o])
    assert (y == want).all()


# --------------------------------------------------------------------------- interpreter


def test_roles_runs_each_warp_through_its_own_arm():
    m = load_module(str(BRX / "roles.ptx"))
    spec = _spec("roles")
    x = np.arange(128, dtype=np.float32) + 0.5
    r = run_kernel(m, m.kernel("roles"), spec, inputs={"roles_param_0": x})
    assert r.status == "complete" and r.findings == []
    y = r.outputs["roles_param_1"].view(np.float32)
    o = 127 - np.arange(128)
    want = np.choose(o // 32, [x[o], 2 * x[o], x[o] + 3, -x[o]])
    assert (y == want).all()


def test_correct_roles_kernel_is_verified():
    rep, by = _check(BRX / "roles.ptx", "roles")
    assert rep.verdict == "verified"
    assert by["race-free: shared"].status == "proved"
    assert by["race-free: global"].status == "proved"


def test_out_of_range_index_is_branch_index_range_at_the_brx_line():
    path = BRX / "roles_oob.ptx"
    rep, by = _check(path, "roles_oob")
    assert rep.verdict == "violated"
    o = by["memory safety"]
    assert o.status == "violated" and o.rule == "branch.index-range"
    assert o.locations[0].line == _ptx_line(path, "brx.idx")
    assert "index 4 is outside the 4 targets" in o.message and "thread 64 (warp 2, lane 0)" in o.message
    # the static side cannot prove the index in range: unknown with the reason, never proved
    for ob in check_races(load_module(str(path)), "roles_oob"):
        assert ob.status == "unknown"
        assert "the index may be 4 or more" in ob.message and "branch.index-range" in ob.message


def test_the_static_range_proof_depends_on_the_block_size():
    """tid.x / 32 is below 4 for 128 threads (proved); with 160 threads warp 4 would index
    past the list: unknown with the reason, never proved."""
    text = (BRX / "roles.ptx").read_text().replace(".reqntid 128", "")
    m = parse_ptx(text, "roles.ptx")
    for block, want in ((128, "proved"), (160, "unknown")):
        spec = LaunchSpec.from_dict({"kernel": "roles", "grid": [1, 1, 1], "block": [block, 1, 1]})
        obs = check_races(m, "roles", launch=spec)
        assert [o.status for o in obs] == [want, want]
        assert all(("the index may be 4 or more" in o.message) == (want == "unknown") for o in obs)


def test_race_in_one_arm_is_race_shared_at_that_arm():
    path = BRX / "roles_race.ptx"
    rep, by = _check(path, "roles_race")
    o = by["race-free: shared"]
    assert o.status == "violated" and o.rule == "race.shared"
    lines = Path(path).read_text().splitlines()
    arm2 = next(n for n, l in enumerate(lines, 1) if "add.rn.f32" in l and "0f40400000" in l) + 1
    assert "st.shared" in lines[arm2 - 1]
    assert "thread 96 (warp 3, lane 0)" in o.message and "thread 95" in o.message
    assert f"ptx line {arm2}" in o.message
    # the static race checker finds it too
    shared = check_races(load_module(str(path)), "roles_race")[0]
    assert shared.status == "violated"


def test_barrier_in_one_arm_is_barrier_divergence():
    path = BRX / "roles_barrier.ptx"
    rep, by = _check(path, "roles_barrier")
    o = by["named-barrier conformance"]
    assert o.status == "violated" and o.rule == "barrier.divergence"
    bars = [n for n, l in enumerate(Path(path).read_text().splitlines(), 1) if "bar.sync" in l]
    assert len(bars) == 2
    assert o.locations[0].line == bars[0]
    assert f"ptx line {bars[0]}, ptx line {bars[1]}" in o.message


def test_divergent_index_of_a_uni_branch_is_reported():
    path = BRX / "roles_uni.ptx"
    rep, by = _check(path, "roles_uni")
    o = by["memory safety"]
    assert o.status == "violated" and o.rule == "branch.uni-divergence"
    assert o.locations[0].line == _ptx_line(path, "brx.idx.uni")
    assert "index values 0, 1, 2, 3" in o.message
    # without .uni the same divergent dispatch is legal: each lane takes its own arm
    text = path.read_text().replace("brx.idx.uni", "brx.idx")
    m = parse_ptx(text, "div.ptx")
    spec = _spec("roles_uni")
    x = np.arange(128, dtype=np.float32)
    r = run_kernel(m, m.kernel("roles_uni"), spec, inputs={"roles_uni_param_0": x})
    assert r.status == "complete" and r.findings == []
    o = 127 - np.arange(128)
    want = np.choose(o % 4, [x[o], 2 * x[o], x[o] + 3, -x[o]])
    assert (r.outputs["roles_uni_param_1"].view(np.float32) == want).all()


# --------------------------------------------------------------------------- indirect calls


def _fptr_args(kernel, which):
    return ({f"{kernel}_param_2": which, f"{kernel}_param_3": 128},
            {f"{kernel}_param_0": {"dtype": "float32", "shape": [128]},
             f"{kernel}_param_1": {"dtype": "float32", "shape": [128]}})


@pytest.mark.parametrize("kernel", ["apply", "apply_table"])
@pytest.mark.parametrize("which", [0, 1])
def test_call_through_a_function_pointer_runs_the_function_it_holds(kernel, which):
    m = load_module(str(CALLS / "fptr.ptx"))
    args, bufs = _fptr_args(kernel, which)
    spec = LaunchSpec.from_dict({"kernel": kernel, "grid": [1, 1, 1], "block": [128, 1, 1],
                                 "args": args, "buffers": bufs})
    x = np.linspace(-2, 2, 128, dtype=np.float32)
    r = run_kernel(m, m.kernel(kernel), spec, inputs={"x": x})
    assert r.status == "complete" and r.findings == []
    y = r.outputs["y"]
    assert (y == (x + 1 if which else 2 * x)).all()


def test_indirect_targets_are_the_address_taken_functions_of_the_prototype():
    m = load_module(str(CALLS / "fptr.ptx"))
    for kernel, want in (("apply", ["_Z5twicef", "_Z8plus_onef"]),
                         ("store", ["_Z10store_herePfif", "_Z10store_halfPfif"])):
        k = m.kernel(kernel)
        call = next(i for i in instructions(k.body) if i.op == "call")
        assert sorted(f.name for f in indirect_targets(m, k, call)) == sorted(want)


def test_a_pointer_known_by_constant_propagation_is_a_direct_call_for_the_static_side():
    rep, by = _check(CALLS / "fptr.ptx", "apply", *_fptr_args("apply", 1))
    assert rep.verdict == "verified"
    assert by["race-free: global"].status == "proved"


def test_a_pointer_not_known_statically_is_unknown_naming_the_candidates():
    m = load_module(str(CALLS / "fptr.ptx"))
    for ob in check_races(m, "apply"):
        assert ob.status == "unknown"
        assert "indirect call through %rd6: the callee is not known statically" in ob.message
        assert "(functions of the prototype's signature whose address is taken: _Z5twicef, _Z8plus_onef)" in ob.message
    for ob in check_races(m, "apply_table"):
        assert ob.status == "unknown" and "the callee is not known statically" in ob.message


def test_race_inside_the_called_function_is_race_global_at_its_line():
    rep, by = _check(CALLS / "fptr.ptx", "store", *_fptr_args("store", 1))
    o = by["race-free: global"]
    assert o.status == "violated" and o.rule == "race.global"
    assert (o.locations[0].path.endswith("fptr.cu"), o.locations[0].line) == (True, 14)
    assert "store different values to global y" in o.message
    rep, by = _check(CALLS / "fptr.ptx", "store", *_fptr_args("store", 0))
    assert rep.verdict == "verified"


def test_committed_fptr_ptx_is_what_nvcc_writes(tmp_path):
    if subprocess.run(["which", "nvcc"], capture_output=True).returncode:
        pytest.skip("nvcc not on PATH")
    subprocess.run(["nvcc", "-arch=sm_90a", "-lineinfo", "-ptx", "-o", str(tmp_path / "f.ptx"), "fptr.cu"],
                   check=True, capture_output=True, cwd=CALLS)
    body = lambda t: [l.split("//")[0].strip() for l in t.splitlines()
                      if l.strip() and not l.strip().startswith((".file", "//"))]
    assert body((CALLS / "fptr.ptx").read_text()) == body((tmp_path / "f.ptx").read_text())
    assert ".callprototype" in (CALLS / "fptr.ptx").read_text()


def test_static_side_checks_the_uni_promise():
    """``brx.idx.uni``: the SMT race checker asks whether two threads of one warp can reach it with
    different indices; then nothing is proved (the branch is undefined behaviour). The warp-index
    dispatch of roles.ptx keeps its proofs as ``.uni``; roles_uni.ptx (lane % 4) does not."""
    m = load_module(str(BRX / "roles_uni.ptx"))
    obs = check_races(m, "roles_uni")
    line = _ptx_line(BRX / "roles_uni.ptx", "brx.idx.uni")
    assert [o.status for o in obs] == ["unknown", "unknown"]
    assert all(o.message == f"brx.idx.uni at ptx line {line}: two threads of one warp may reach it with different "
               "indices (undefined behaviour, branch.uni-divergence)" for o in obs)
    uniform = parse_ptx((BRX / "roles.ptx").read_text().replace("brx.idx ", "brx.idx.uni "), "roles.ptx")
    assert [o.status for o in check_races(uniform, "roles")] == ["proved", "proved"]
