"""Indirect branches (``brx.idx`` over a ``.branchtargets`` list, PTX ISA §9.7.12.4, §11.6.1)
and indirect calls (``call`` through a function pointer with a ``.callprototype``,
§9.7.12.5, §11.6.2).

Kernels of our own: tests/data/brx (LLVM IR compiled by the NVPTX back end bundled with
Triton, regen.py; nvcc does not emit brx.idx) and tests/data/indirect_call (CUDA, nvcc).
"""
import subprocess
import sys
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
DISPATCH = CALLS / "dispatch.ptx"
SIGNAL = CALLS / "signal.ptx"


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
    r = subprocess.run([sys.executable, "-m", "kverify", "check", str(bad)], capture_output=True, text=True)
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


def test_a_pointer_not_known_statically_is_a_dispatch_over_its_callees():
    """``which ? plus_one : twice`` and ``table[which & 1]``: each function the pointer may hold runs
    under the condition that it holds that function's address; both are pure: proved for every
    value of ``which``."""
    m = load_module(str(CALLS / "fptr.ptx"))
    for kernel in ("apply", "apply_table"):
        obs = check_races(m, kernel)
        assert [(o.title, o.status) for o in obs] == [("race-free: shared", "proved"), ("race-free: global", "proved")]
        assert "all values of which, n" in obs[1].bound
    # the table's contents are its initializer: an assumption the proof states
    assert "the table of function pointers table holds its initializer (the host does not write it before " \
           "the launch)" in check_races(m, "apply_table")[1].message


def test_callees_with_memory_accesses_are_run_under_their_conditions():
    """The callees store through the pointer parameter they are passed (put, put_scaled): each
    store is an access of the kernel's buffer y under ``fptr == address(callee)``."""
    m = load_module(str(DISPATCH))
    for kernel in ("pick_param", "pick_table"):
        obs = check_races(m, kernel)
        assert [o.status for o in obs] == ["proved", "proved"], [o.message for o in obs]
        assert obs[1].message.startswith("no two distinct threads access the same global bytes in one barrier "
                                         "interval with a write")
        assert "all values of which, n" in obs[1].bound


def test_one_racy_callee_is_race_global_at_the_callee_line():
    """pick_param_race: which != 0 calls put_pair, where threads 2k and 2k+1 store to one element."""
    m = load_module(str(DISPATCH))
    shared, glob = check_races(m, "pick_param_race")
    assert shared.status == "proved"
    assert glob.status == "violated" and glob.rule == "race.global"
    assert [(loc.path.endswith("dispatch.cu"), loc.line) for loc in glob.locations] == [(True, 36), (True, 36)]
    assert glob.counterexample["params"]["which"] != 0
    tids = sorted(t["tid"][0] for t in glob.counterexample["threads"])
    assert tids[0] % 2 == 0 and tids[1] == tids[0] + 1
    # fptr.cu's store: the same for a symbolic which (before, only the interpreter found it)
    glob = check_races(load_module(str(CALLS / "fptr.ptx")), "store")[1]
    assert glob.status == "violated" and [loc.line for loc in glob.locations] == [14, 14]


def test_a_pointer_that_may_hold_no_function_is_unknown_with_the_reason():
    """A null pointer (which not 1 or 2), or a table read past its end: undefined behaviour on the
    paths where the pointer is none of the callees' addresses -- never proved."""
    m = load_module(str(DISPATCH))
    for kernel, reg, line in (("pick_maybe_null", "%rd12", 112), ("pick_table_any", "%rd9", 99)):
        for ob in check_races(m, kernel):
            assert ob.status == "unknown", (kernel, ob.message)
            assert ob.message.startswith(
                f"call at dispatch.cu:{line}: indirect call through {reg}: the pointer may hold "
                "the address of none of the functions the call can reach (undefined behaviour; functions of the "
                "prototype's signature whose address is taken: _Z3putPfif, _Z10put_scaledPfif, _Z8put_pairPfif, "
                "_Z9put_smallPiii, _Z10put_nonnegPiii)"), ob.message
    # with which = 1 the pointer is put's address: a direct call, proved
    spec = LaunchSpec.from_dict({"kernel": "pick_maybe_null", "grid": [2, 1, 1], "block": [128, 1, 1],
                                 "args": {"which": 1}})
    assert [o.status for o in check_races(m, "pick_maybe_null", launch=spec)] == ["proved", "proved"]


def test_return_values_and_struct_arguments_pass_through_the_call():
    """pick_index stores to ``y[g(i, n)]`` (same or mirror: both permutations of 0..n-1): proved only
    if the return value reaches the caller; pick_span passes a by-value struct (base, stride)
    field by field: proved only if both fields reach the callee."""
    m = load_module(str(DISPATCH))
    for kernel in ("pick_index", "pick_span"):
        obs = check_races(m, kernel)
        assert [o.status for o in obs] == ["proved", "proved"], (kernel, [o.message for o in obs])
    # a half index (i / 2) in place of the mirror is a race, found through the return value
    text = DISPATCH.read_text()
    start = text.index(".func  (.param .b32 func_retval0) _Z6mirrorii(")
    end = text.index("ret;", start)
    body = text[start:end]
    assert "add.s32 \t%r4, %r3, %r2;" in body
    half = text[:start] + body.replace("add.s32 \t%r4, %r3, %r2;", "shr.s32 \t%r4, %r1, 1;") + text[end:]
    glob = check_races(parse_ptx(half, str(DISPATCH)), "pick_index")[1]
    assert glob.status == "violated" and glob.rule == "race.global", glob.message


def test_barriers_inside_callees_order_their_accesses():
    """pick_tile: both callees write the shared tile, __syncthreads(), then read another thread's
    slot: proved. pick_tile_race: rotate_unsynced has no barrier: race.shared at its lines.
    pick_tile_split: warps call different functions, each with its own barrier: the static side
    does not rely on it (unknown), the interpreter reports barrier.divergence."""
    m = load_module(str(DISPATCH))
    assert [o.status for o in check_races(m, "pick_tile")] == ["proved", "proved"]
    shared, _ = check_races(m, "pick_tile_race")
    assert shared.status == "violated" and shared.rule == "race.shared"
    assert sorted(loc.line for loc in shared.locations) == [57, 58]
    assert shared.counterexample["params"]["which"] != 0
    shared, glob = check_races(m, "pick_tile_split")
    assert shared.status == "unknown" and glob.status == "proved"
    assert "are ordered only by a barrier that may be divergent" in shared.message
    rep, by = _check(DISPATCH, "pick_tile_split")
    o = by["named-barrier conformance"]
    assert o.status == "violated" and o.rule == "barrier.divergence"
    assert "completed by different barrier instructions at dispatch.cu:48, dispatch.cu:53" in o.message


def test_an_assertion_in_a_callee_is_checked_under_its_condition():
    """put_small asserts v < 1000 (false for a large i when which != 0); put_nonneg asserts v >= 0
    (true: i is a global thread index below 2^31)."""
    from kverify.verifier.assertions import check_assertions

    m = load_module(str(DISPATCH))
    k = m.kernel("pick_checked")
    [o] = check_assertions(m, k, None, 10.0)
    assert o.status == "violated" and o.rule == "assert.failed"
    assert (o.locations[0].path.endswith("dispatch.cu"), o.locations[0].line) == (True, 62)
    assert o.counterexample["params"]["which"] != 0 and o.counterexample["params"]["n"] > 1000
    for which, want in ((0, "proved"), (1, "violated")):
        spec = LaunchSpec.from_dict({"kernel": "pick_checked", "grid": [1024, 1, 1], "block": [128, 1, 1],
                                     "args": {"which": which, "n": 1 << 17}})
        assert check_assertions(m, k, spec, 10.0)[0].status == want


def test_a_recursive_callee_is_unknown():
    m = load_module(str(DISPATCH))
    for ob in check_races(m, "pick_fib"):
        assert ob.status == "unknown"
        assert ob.message == "call at dispatch.cu:70: recursive call of _Z3fibi (not modelled)"


def test_calls_inside_a_loop_and_returns_inside_a_callee_loop():
    """pick_loop calls the picked function in every iteration of a loop (the stores are accesses of
    iteration k under the pointer's condition); pick_search's callees return from inside their
    loop (the return leaves the loop as a break would), and the buffer they read is sized from
    those reads."""
    m = load_module(str(DISPATCH))
    keep = []
    assert [o.status for o in check_races(m, "pick_loop", keep=keep)] == ["proved", "proved"]
    stores = [a for a in keep[0].ex.accesses if a.writes]
    assert sorted(a.instr.loc.line for a in stores) == [34, 35]
    assert all(len(a.loops) == 1 for a in stores)
    assert all("pick_loop_param_2" in str(a.pc) for a in stores)  # under which == 0 / which != 0
    assert [o.status for o in check_races(m, "pick_search")] == ["proved", "proved"]
    rep, by = _check(DISPATCH, "pick_search", args={"which": 1, "len": 64}, grid=2)
    assert rep.verdict == "verified"
    assert "buffers sized to the kernel's accesses: v uint32[64], out uint32[256]" in by["deadlock-free"].bound \
        or "buffers sized to the kernel's accesses: v uint32[64], out uint32[256]" in by["named-barrier conformance"].bound


def _chain_ptx(depth):
    """A kernel that calls f1, which calls f2, ..., f<depth>, which stores to the kernel's buffer at
    the thread's index (the pointer and index passed down as .param arguments)."""
    funcs = []
    for d in range(depth, 0, -1):
        body = ("  ld.param.u64 %rd1, [f{d}_p];\n  ld.param.u32 %r1, [f{d}_i];\n").format(d=d)
        if d == depth:
            body += "  mul.wide.u32 %rd2, %r1, 4;\n  add.s64 %rd3, %rd1, %rd2;\n  st.global.u32 [%rd3], %r1;\n"
        else:
            body += ("  {{\n  .param .b64 a0;\n  st.param.b64 [a0+0], %rd1;\n  .param .b32 a1;\n"
                     "  st.param.b32 [a1+0], %r1;\n  call.uni f{n}, (a0, a1);\n  }}\n").format(n=d + 1)
        funcs.append(f".func f{d}(.param .b64 f{d}_p, .param .b32 f{d}_i)\n{{\n  .reg .b32 %r<2>;\n"
                     f"  .reg .b64 %rd<4>;\n{body}  ret;\n}}\n")
    return (".version 8.0\n.target sm_90\n.address_size 64\n" + "".join(funcs) +
            ".visible .entry k(.param .u64 k_out)\n.maxntid 128, 1, 1\n{\n  .reg .b32 %r<2>;\n"
            "  .reg .b64 %rd<3>;\n  ld.param.u64 %rd1, [k_out];\n  cvta.to.global.u64 %rd2, %rd1;\n"
            "  mov.u32 %r1, %tid.x;\n  {\n  .param .b64 a0;\n  st.param.b64 [a0+0], %rd2;\n"
            "  .param .b32 a1;\n  st.param.b32 [a1+0], %r1;\n  call.uni f1, (a0, a1);\n  }\n  ret;\n}\n")


def test_calls_nested_deeper_than_the_limit_are_unknown():
    """Eight nested calls run in place (the store at the bottom is proved race-free, the pointer and
    the index passed down through every frame); a ninth is not run: unknown, naming it."""
    obs = check_races(parse_ptx(_chain_ptx(8), "chain8.ptx"), "k")
    assert [o.status for o in obs] == ["proved", "proved"], [o.message for o in obs]
    assert obs[1].message.startswith("no two distinct threads access the same global bytes in one barrier "
                                     "interval with a write (1 accesses")
    for ob in check_races(parse_ptx(_chain_ptx(9), "chain9.ptx"), "k"):
        assert ob.status == "unknown"
        assert "call of f9 nested more than 8 deep (not modelled)" in ob.message, ob.message


def test_mbarrier_arrivals_inside_a_callee_are_counted():
    """signal.ptx: lane 0 of each warp arrives through the function a parameter picks. With
    arrive_once (which = 0) the static checker counts the callee's arrive (4 per phase, the init
    count); with arrive_twice in play it does not prove the count (and the interpreter finds the
    hang of which = 1)."""
    from kverify.verifier.mbarrier.static import check_mbarrier

    m = load_module(str(SIGNAL))
    spec = LaunchSpec.from_dict({"kernel": "signal", "grid": [1, 1, 1], "block": [128, 1, 1], "args": {"which": 0}})
    by = {o.title: o for o in check_mbarrier(m, "signal", spec)}
    arr = by["mbarrier conformance: arrivals (per phase)"]
    assert arr.status == "proved", arr.message
    assert (arr.locations[0].path.endswith("signal.cu"), arr.locations[0].line) == (True, 16)
    assert by["mbarrier conformance: parity (initial phase and alternation)"].status == "proved"
    by = {o.title: o for o in check_mbarrier(m, "signal")}
    arr = by["mbarrier conformance: arrivals (per phase)"]
    assert arr.status == "unknown" and "signal.cu:21:3" in arr.message and "signal.cu:22:3" in arr.message
    rep, by = _check(SIGNAL, "signal", args={"which": 1})
    assert by["deadlock-free"].status == "violated" and by["deadlock-free"].rule == "deadlock"


def test_race_inside_the_called_function_is_race_global_at_its_line():
    rep, by = _check(CALLS / "fptr.ptx", "store", *_fptr_args("store", 1))
    o = by["race-free: global"]
    assert o.status == "violated" and o.rule == "race.global"
    assert (o.locations[0].path.endswith("fptr.cu"), o.locations[0].line) == (True, 14)
    assert "store different values to global y" in o.message
    rep, by = _check(CALLS / "fptr.ptx", "store", *_fptr_args("store", 0))
    assert rep.verdict == "verified"


@pytest.mark.parametrize("stem", ["fptr", "dispatch", "signal"])
def test_committed_ptx_is_what_nvcc_writes(tmp_path, stem):
    if subprocess.run(["which", "nvcc"], capture_output=True).returncode:
        pytest.skip("nvcc not on PATH")
    subprocess.run(["nvcc", "-arch=sm_90a", "-lineinfo", "-ptx", "-o", str(tmp_path / "f.ptx"), f"{stem}.cu"],
                   check=True, capture_output=True, cwd=CALLS)
    # the .debug_str section names internal-linkage inlined helpers with a hash of the compile's
    # path (_ZN39_INTERNAL_<hash>_...): not code, and different in every checkout
    body = lambda t: [l.split("//")[0].strip() for l in t.split(".section\t.debug_str")[0].splitlines()
                      if l.strip() and not l.strip().startswith((".file", "//"))]
    assert body((CALLS / f"{stem}.ptx").read_text()) == body((tmp_path / "f.ptx").read_text())
    assert ".callprototype" in (CALLS / f"{stem}.ptx").read_text()


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
