"""A value derived from a register no instruction wrote (``uninitialized.register``): the run reads
such a register as 0, so an accumulator nobody zeroed, a value assigned on one branch only or a
shuffle from a lane that loaded nothing gave the reference's output and ``verified``. The run now
carries the undefined lanes through the value instructions and reports them where they are used
(stored, an address, a guard or branch condition, a barrier operand); without values, memory safety
is no longer ``vacuous`` for a kernel that may read a register before writing it.

Kernels: tests/data/uninit_reg/uninit_reg.cu (nvcc 13, build.sh: the kernels as written, the
``__init`` twins with every register written first, ``__lane1`` shuffling from a lane that loaded
nothing) and sinks.ptx (written by hand: the uses nvcc does not leave in PTX)."""
import json

import pytest

from conftest import ROOT
from kverify.launch import LaunchSpec
from kverify.semantics.interpreter import run_kernel
from kverify.semantics.ir import load_module
from kverify.semantics.ir.definedness import undefined_reads
from kverify.verifier.check import check_kernel

DATA = ROOT / "tests" / "data" / "uninit_reg"
RULE = "uninitialized.register"

DOT = {"grid": [2, 1, 1], "block": [32, 1, 1], "args": {"n": 4},
       "buffers": {"a": {"dtype": "float32", "shape": [256]}, "b": {"dtype": "float32", "shape": [4]},
                   "out": {"dtype": "float32", "shape": [64]}}}
INT = {"grid": [2, 1, 1], "block": [32, 1, 1], "args": {"n": 40},
       "buffers": {"a": {"dtype": "int32", "shape": [64]}, "out": {"dtype": "int32", "shape": [64]}}}
SINKS = {"grid": [1, 1, 1], "block": [64, 1, 1],
         "buffers": {"p_ptrs": {"dtype": "int64", "shape": [1]}, "p_in": {"dtype": "int32", "shape": [64]},
                     "p_out": {"dtype": "int32", "shape": [64]}}}


def _run(ptx, kernel, launch):
    m = load_module(str(DATA / ptx))
    r = run_kernel(m, m.kernel(kernel), LaunchSpec.from_dict(launch))
    return [f for f in r.findings if f.rule == RULE], r


def _line(f):
    return f.locs[0].line or f.locs[0].ptx_line


def test_an_accumulator_nobody_zeroed_is_reported_where_it_is_stored():
    (f,), _ = _run("uninit_reg.ptx", "dot_rows", DOT)
    assert _line(f) == 13  # out[row] = acc
    assert f.message.startswith("st.global.f32 uses a stored value that is undefined in 32 lane(s) of warp 0")
    assert "%f26, read at uninit_reg.cu:12" in f.message  # acc += ...: its first fma


@pytest.mark.parametrize("kernel, launch", [("dot_rows", DOT), ("pick", INT), ("pick_guarded", INT),
                                            ("broadcast", INT)])
def test_every_register_written_first_is_no_finding(kernel, launch):
    found, r = _run("uninit_reg__init.ptx", kernel, launch)
    assert found == [] and r.status == "complete"


def test_a_value_assigned_on_one_branch_only_is_reported_in_the_lanes_that_skipped_it():
    (f,), _ = _run("uninit_reg.ptx", "pick", INT)
    assert _line(f) == 26  # out[i] = v
    assert "undefined in 24 lane(s) of warp 0 (threads 0-31) of CTA (1,0,0), first thread 8 " in f.message
    assert "%r9, which no instruction wrote in those lanes" in f.message


def test_a_select_that_does_not_pick_the_undefined_value_is_no_finding():
    """``i < n ? v : 0``: nvcc's selp reads v in every lane; only the lanes that pick it matter."""
    found, _ = _run("uninit_reg.ptx", "pick_guarded", INT)
    assert found == []


def test_a_shuffle_moves_definedness_from_its_source_lane():
    found, _ = _run("uninit_reg.ptx", "broadcast", INT)  # from lane 0, which loaded
    assert found == []
    (f,), _ = _run("uninit_reg__lane1.ptx", "broadcast", INT)  # from lane 1, which did not
    assert _line(f) == 48 and "undefined in 32 lane(s) of warp 0" in f.message
    assert "%r10, computed from %r14, which no instruction wrote" in f.message


@pytest.mark.parametrize("kernel, ptx_line, what, lanes", [
    ("addr_undef", 23, "an address", 31),  # lane 0 loaded the pointer
    ("guard_undef", 39, "a guard predicate", 16),  # the comparison of lanes 0-15 only
    ("branch_undef", 74, "its condition", 1),  # lane 0 loaded nothing
    ("barrier_id_undef", 91, "an operand", 32),  # warp 1 never computed the id
])
def test_an_undefined_address_guard_condition_or_barrier_id_is_reported(kernel, ptx_line, what, lanes):
    found, _ = _run("sinks.ptx", kernel, SINKS)
    assert [(f.locs[0].ptx_line, f.message.split(" uses ")[1].split(" that ")[0]) for f in found] == \
        [(ptx_line, what)]
    assert f"undefined in {lanes} lane(s)" in found[0].message


def test_a_guard_written_on_every_path_first_is_no_finding():
    found, _ = _run("sinks.ptx", "guard_defined", SINKS)
    assert found == []


def test_the_finding_makes_the_kernel_violated_under_memory_safety():
    m = load_module(str(DATA / "uninit_reg.ptx"))
    rep = check_kernel(m, m.kernel("dot_rows"), LaunchSpec.from_dict(DOT))
    assert rep.verdict == "violated"
    mem = next(o for o in rep.obligations if o.title == "memory safety")
    assert (mem.status, mem.rule) == ("violated", RULE)
    m = load_module(str(DATA / "uninit_reg__init.ptx"))
    rep = check_kernel(m, m.kernel("dot_rows"), LaunchSpec.from_dict(DOT))
    assert rep.verdict == "verified"


def test_registers_read_before_any_write_on_some_path():
    m = load_module(str(DATA / "uninit_reg.ptx"))
    got = {k: sorted({(n, s.loc.line) for n, s in undefined_reads(m.kernel(k).body)})
           for k in ("dot_rows", "pick", "pick_guarded", "broadcast")}
    assert got == {"dot_rows": [("%f26", 12), ("%f26", 13)], "pick": [("%r9", 26)],
                   "pick_guarded": [("%r10", 35)], "broadcast": [("%r14", 47)]}
    m = load_module(str(DATA / "uninit_reg__init.ptx"))
    assert all(undefined_reads(m.kernel(k).body) == [] for k in ("dot_rows", "pick"))
    # the static side is path-insensitive and does not know which lane a shuffle reads: the broadcast
    # from the lane that loaded is still a read of a register the other lanes never wrote
    assert [n for n, _ in undefined_reads(m.kernel("broadcast").body)] == ["%r14"]
    m = load_module(str(DATA / "sinks.ptx"))
    assert [n for n, _ in undefined_reads(m.kernel("guard_defined").body)] == []
    assert [n for n, _ in undefined_reads(m.kernel("guard_undef").body)] == ["%p2"]


def test_without_values_memory_safety_is_not_vacuous_when_a_register_may_be_read_first():
    """``pick`` without a value for n: the interpreter cannot run; memory safety was ``vacuous``
    (buffers sized to the accesses) and the kernel ``verified``."""
    spec = LaunchSpec.from_dict({"grid": [2, 1, 1], "block": [64, 1, 1]})
    for ptx, status in (("uninit_reg.ptx", "unknown"), ("uninit_reg__init.ptx", "vacuous")):
        m = load_module(str(DATA / ptx))
        rep = check_kernel(m, m.kernel("pick"), spec)
        mem = next(o for o in rep.obligations if o.title == "memory safety")
        assert mem.status == status, (ptx, mem.message)
    assert "%r9 may be read at uninit_reg.cu:26 before any instruction wrote it" in json.dumps(
        check_kernel(load_module(str(DATA / "uninit_reg.ptx")), load_module(str(DATA / "uninit_reg.ptx")).kernel("pick"),
                     spec).to_json())


@pytest.mark.parametrize("model", ["real", "bitexact"])
def test_equivalence_is_not_tested_on_runs_that_read_an_undefined_register(model):
    """The candidate's accumulator is never zeroed: the interpreter's 0 made it agree with the reference
    on every input, and ``equiv`` said ``tested`` (8 inputs without a difference)."""
    from kverify.verifier.equivalence import check_pair, load_side

    launch = str(DATA / "dot_rows.json")
    side = lambda ptx: load_side(str(DATA / ptx), launch, {}, "dot_rows")  # noqa: E731
    r = check_pair(side("uninit_reg.ptx"), side("uninit_reg__init.ptx"), model)
    assert r.verdict == "unknown"
    assert r.message.endswith("not tested: the candidate kernel's run uses a value derived from a register no "
                              "instruction wrote (uninitialized.register at uninit_reg.cu:13): a GPU need not "
                              "give the output the interpreter computed")
    assert check_pair(side("uninit_reg__init.ptx"), side("uninit_reg__init.ptx"), model).verdict == "proved"


def test_a_wgmma_reads_its_accumulator_only_when_scale_d_is_set(tmp_path):
    """tests/zoo/fp8_mma/wgmma_fp8_f16 with its accumulator's zeroing removed: scale-d 0 (as written)
    does not read it (CUTLASS's first k-block never zeroes its accumulators); scale-d 1 adds the
    undefined accumulator to the product, and the stores of the result are the finding."""
    import re
    import shutil

    fam = ROOT / "tests" / "zoo" / "fp8_mma"
    for f in ("wgmma_fp8_f16.cu", "wgmma_fp8_common.cuh"):
        shutil.copy(fam / f, tmp_path / f)
    (v,) = [v for v in json.loads((fam / "manifest.json").read_text())["variants"] if v["file"] == "wgmma_fp8_f16.cu"]
    text = (fam / "wgmma_fp8_f16.ptx").read_text()
    no_zero = re.sub(r"\tmov.u32 \t%r(39, 0|4[012], %r39);\n", "", text)
    assert no_zero.count("\n") == text.count("\n") - 4
    got = []
    for t in (no_zero, no_zero.replace("%rd15, 0, 1, 1;", "%rd15, 1, 1, 1;")):
        (tmp_path / "wgmma_fp8_f16.ptx").write_text(t)
        m = load_module(str(tmp_path / "wgmma_fp8_f16.ptx"))
        r = run_kernel(m, m.kernel(v["kernel"]), LaunchSpec.from_dict(v["launch"]))
        got.append(sorted({(f.rule, f.locs[0].line) for f in r.findings}))
    assert got[0] == []
    assert got[1] == [(RULE, 21)]  # the first store of the accumulator (wgmma_fp8_f16.cu:21)


def test_a_stmatrix_of_an_undefined_register_is_a_stored_value(tmp_path):
    """tests/data/matrix_rows/ldsm_warp with the stmatrix's first source register renamed to one no
    instruction wrote before it: ldmatrix/stmatrix are accesses, their registers a load's
    destinations and a store's values (not a register exchange among the lanes)."""
    import shutil

    data = ROOT / "tests" / "data" / "matrix_rows"
    shutil.copy(data / "ldsm_warp.cu", tmp_path / "ldsm_warp.cu")
    spec = LaunchSpec.from_dict(json.loads((data / "launch_warp.json").read_text()))
    text = (data / "ldsm_warp.ptx").read_text()
    got = []
    for t in (text, text.replace("[%r289], {%r285,", "[%r289], {%r290,")):
        (tmp_path / "ldsm_warp.ptx").write_text(t)
        m = load_module(str(tmp_path / "ldsm_warp.ptx"))
        r = run_kernel(m, m.kernel("ldsm_warp"), spec)
        got.append([(f.rule, f.locs[0].line, f.message.split(" that ")[0]) for f in r.findings])
    assert got[0] == []
    assert got[1] == [(RULE, 53, "stmatrix.sync.aligned.m8n8.x4.shared.b16 uses a stored value")]


@pytest.mark.parametrize("c, found", [(-0.0, False), (1.0, False), (-1.0, True), (float("nan"), True)])
def test_slct_flows_the_operand_its_selector_picks(c, found):
    """slct.s32.f32 d, a, b, c picks a when c >= 0 (-0.0 too) and b otherwise (NaN too); b is
    undefined in lanes 16..31. A sign-bit test took -0.0 for b (a false alarm) and NaN for a (missed)."""
    launch = {"grid": [1, 1, 1], "block": [32, 1, 1], "args": {"p_c": c},
              "buffers": {"p_out": {"dtype": "int32", "shape": [32]}}}
    got, _ = _run("sinks.ptx", "slct_pick", launch)
    assert [(f.locs[0].ptx_line, "undefined in 16 lane(s)" in f.message) for f in got] == ([(114, True)] if found else [])
