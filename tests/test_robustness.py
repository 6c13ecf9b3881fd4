"""Every input gets a verdict or a clear error within stated memory: ``--max-memory``, and the
regressions found by mutation fuzzing (bench/fuzz.py), each from its reproducer."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _kverify(*argv, cwd=ROOT):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "kverify", *argv], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300)


def test_a_launch_over_the_memory_budget_is_unknown_not_a_crash(tmp_path):
    spec = {"kernel": "vadd", "grid": [4096, 1, 1], "block": [256, 1, 1], "args": {"n": 1048576},
            "buffers": {n: {"dtype": "float32", "shape": [67108864]} for n in "abc"}}  # 768 MiB of buffers
    (tmp_path / "big.json").write_text(json.dumps(spec))
    r = _kverify("check", "tests/zoo/vadd/vadd.ptx", "--launch", str(tmp_path / "big.json"), "--max-memory", "0.5",
                 "--format", "json")
    assert r.returncode == 3, r.stderr
    (k,) = json.loads(r.stdout)["kernels"]
    st = {o["id"]: (o["status"], o["message"]) for o in k["obligations"]}
    assert st["memory"] == ("unknown", "memory budget exhausted in checker interpreter (kverify check --max-memory "
                                       "sets it)")
    assert st["race.global"][0] == "proved"  # the SMT checker needs no buffers: its verdict stands


# ----------------------------------------------------------------- signatures found by bench/fuzz.py

_PTX = """.version 8.0
.target sm_90
.address_size 64

.visible .entry k(.param .u64 p)
{{
    .reg .b32 %r<4>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [p];
    {body}
    ret;
}}
"""


def _show(tmp_path, body, name="k.ptx"):
    f = tmp_path / name
    f.write_text(_PTX.format(body=body))
    return _kverify("show", str(f))


def test_a_literal_too_long_is_an_input_error_with_its_location(tmp_path):
    # was: ValueError: Exceeds the limit (4300 digits) for integer string conversion (exit 3)
    r = _show(tmp_path, "mov.u32 %r1, " + "9" * 5000 + ";")
    assert r.returncode == 2, r.stderr
    assert f"k.ptx:10:18: numeric literal of 5000 characters (PTX constants are at most 128 bits)" in r.stderr


def test_an_identifier_too_long_is_an_input_error_with_its_location(tmp_path):
    # was: OSError: [Errno 36] File name too long (exit 3)
    r = _show(tmp_path, "mov.u32 %r1, " + "x" * 20000 + ";")
    assert r.returncode == 2, r.stderr
    assert "k.ptx:10:18: identifier of 20000 characters (at most 16384)" in r.stderr


def test_a_file_directive_with_a_long_name_is_not_an_oserror(tmp_path):
    # was: OSError: File name too long, looking for the .file's source next to the PTX
    f = tmp_path / "k.ptx"
    f.write_text(_PTX.format(body="").replace(".address_size 64", ".address_size 64\n.file 1 \"" + "y" * 5000 + ".cu\""))
    r = _kverify("show", str(f))
    assert r.returncode == 0, r.stderr
    assert "internal error" not in r.stdout + r.stderr


def test_a_register_where_an_address_belongs_is_an_input_error(tmp_path):
    # was: AttributeError: 'Reg' object has no attribute 'base' (exit 3)
    r = _show(tmp_path, "ld.global.u32 %r1, %rd1;")
    assert r.returncode == 2, r.stderr
    assert "k.ptx:10:5: ld.global.u32: operand 2 (" in r.stderr and "must be an address [...], got %rd1" in r.stderr


def test_an_mbarrier_outside_shared_memory_is_a_bounds_finding_not_an_internal_error(tmp_path):
    # was: internal error in checker interpreter (Fault: shared access ... outside every shared variable)
    f = tmp_path / "k.ptx"
    f.write_text(""".version 8.0
.target sm_90
.address_size 64

.visible .entry k()
{
    .reg .b32 %r<4>;
    .shared .align 8 .b64 bar;
    mov.u32 %r1, bar;
    add.u32 %r2, %r1, 4096;
    mbarrier.init.shared.b64 [%r2], 1;
    ret;
}
""")
    (tmp_path / "k.json").write_text(json.dumps({"kernel": "k", "grid": [1, 1, 1], "block": [32, 1, 1]}))
    r = _kverify("check", str(f), "--no-smt", "--launch", str(tmp_path / "k.json"), "--format", "json")
    assert r.returncode == 1, r.stderr
    (k,) = json.loads(r.stdout)["kernels"]
    st = {o["id"]: o for o in k["obligations"]}
    assert st["memory"]["status"] == "violated"
    assert "internal error" not in r.stdout + r.stderr
    assert "shared access of 8 bytes at offset 0x1000 is outside every shared variable (4088 bytes past the end of bar)" \
        in r.stdout + r.stderr


def test_a_negative_shift_in_an_address_is_not_a_crash(tmp_path):
    # was: internal error: ValueError: negative shift count (induction-variable analysis of shl)
    src = (ROOT / "tests/zoo/cp_async_gemm/cp_async_gemm_single.ptx").read_text()
    assert "shl.b32 \t%r4, %r19, 4;" in src
    f = tmp_path / "k.ptx"
    f.write_text(src.replace("shl.b32 \t%r4, %r19, 4;", "shl.b32 \t%r4, %r19, -2147483649;"))
    r = _kverify("show", str(f))
    assert r.returncode == 0, r.stderr
    assert "internal error" not in r.stdout + r.stderr


def test_a_parameter_load_past_the_parameter_space_is_a_bounds_finding(tmp_path):
    # was: internal error in checker interpreter (IndexError: index 16 is out of bounds for axis 0 with size 16)
    f = tmp_path / "k.ptx"
    f.write_text(""".version 8.0
.target sm_90
.address_size 64

.visible .entry k(.param .u64 p, .param .u32 n)
{
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [n];
    ret;
}
""")
    (tmp_path / "k.json").write_text(json.dumps({"kernel": "k", "grid": [1, 1, 1], "block": [32, 1, 1],
                                                 "args": {"n": 4}, "buffers": {"p": {"dtype": "float32", "shape": [4]}}}))
    r = _kverify("check", str(f), "--no-smt", "--launch", str(tmp_path / "k.json"))
    assert r.returncode == 1, r.stdout + r.stderr
    assert "internal error" not in r.stdout + r.stderr
    assert "parameter access of 8 bytes at offset 0x8 is past the end of the 12-byte parameter space" in r.stdout + r.stderr


@pytest.mark.parametrize("body,message", [
    # was: internal error in checker interpreter (AttributeError: 'Reg' object has no attribute 'base')
    ("mbarrier.init.shared::cta.b64 %rd1, 1;",
     "k.ptx:10:5: mbarrier.init.shared::cta.b64: operand 1 (a) must be an address [...], got %rd1"),
    # was: ... (AttributeError: 'Sink' object has no attribute 'name')
    ("mbarrier.init.shared::cta.b64 _, 1;",
     "k.ptx:10:5: mbarrier.init.shared::cta.b64: operand 1 (a) must be an address [...], got _"),
    # was: ... (AttributeError: 'Addr' object has no attribute 'value')
    ("add.s32 %r1, [%rd1], 1;", "k.ptx:10:5: add.s32: operand 2 (a) is a value, not an address, got [%rd1]"),
])
def test_an_operand_of_the_wrong_kind_is_an_input_error(tmp_path, body, message):
    r = _show(tmp_path, body)
    assert r.returncode == 2, r.stderr
    assert message in r.stderr, r.stderr


def test_operand_kinds_are_checked_for_every_instruction_of_a_long_running_process():
    # was: the front end's validation memo was keyed by opcode and operand count only, so after
    # one well-formed ld every later ld with a register where its address belongs passed
    # unchecked (in one process: gate --jobs 1, the API, the fuzz workers) and crashed later
    from kverify.semantics.ir import KernelError
    from kverify.semantics.ir.ptx import parse_ptx

    head = ".version 8.0\n.target sm_90a\n.address_size 64\n.visible .entry k(.param .u64 p)\n{\n" \
           "\t.reg .b32 %r<4>;\n\t.reg .b64 %rd<4>;\n"
    parse_ptx(head + "\tld.global.u32 %r1, [%rd1];\n\tret;\n}\n", "ok.ptx")
    with pytest.raises(KernelError, match="must be an address"):
        parse_ptx(head + "\tld.global.u32 %r1, %rd1;\n\tret;\n}\n", "bad.ptx")


def test_a_vector_of_written_registers_with_a_constant_in_it_is_an_input_error(tmp_path):
    # was: internal error in checker interpreter (AttributeError: 'Imm' object has no attribute 'name')
    ptx = (ROOT / "tests/zoo/wgmma_tile/wgmma_tile.ptx").read_text()
    line = next(x for x in ptx.splitlines() if "wgmma.mma_async" in x and "{%f" in x)
    first = line[line.index("{") + 1:].split(",")[0]
    bad = tmp_path / "k.ptx"
    bad.write_text(ptx.replace(line, line.replace("{" + first + ",", "{42,", 1)))
    r = _kverify("show", str(bad))
    assert r.returncode == 2, r.stderr
    assert "operand 1 (d) must be a vector of registers, got 42 in it" in r.stderr


TMA_LAUNCH = {"kernel": "tma_matmul_kernel", "grid": [4, 1, 1], "block": [128, 1, 1], "cluster": [1, 1, 1], "shared_bytes": 98328, "args": {"tma_matmul_kernel_param_1": 256, "tma_matmul_kernel_param_2": 384, "tma_matmul_kernel_param_3": 384, "tma_matmul_kernel_param_4": 1, "tma_matmul_kernel_param_6": 384, "tma_matmul_kernel_param_7": 256, "tma_matmul_kernel_param_8": 256, "tma_matmul_kernel_param_9": 1, "tma_matmul_kernel_param_11": 256, "tma_matmul_kernel_param_12": 256, "tma_matmul_kernel_param_13": 256, "tma_matmul_kernel_param_14": 1, "tma_matmul_kernel_param_15": 256, "tma_matmul_kernel_param_16": 256, "tma_matmul_kernel_param_17": 384, "tma_matmul_kernel_param_18": 0, "tma_matmul_kernel_param_19": 0}, "buffers": {"a": {"dtype": "float16", "shape": [256, 384]}, "b": {"dtype": "float16", "shape": [384, 256]}, "c": {"dtype": "float16", "shape": [256, 256]}}, "tensormaps": {"tma_matmul_kernel_param_0": {"dtype": "float16", "shape": [256, 384], "strides": [384, 1], "box": [128, 64], "swizzle": "128B", "elem_type_enum": 6, "padding": "zero", "buffer": "a"}, "tma_matmul_kernel_param_5": {"dtype": "float16", "shape": [384, 256], "strides": [256, 1], "box": [64, 64], "swizzle": "128B", "elem_type_enum": 6, "padding": "zero", "buffer": "b"}, "tma_matmul_kernel_param_10": {"dtype": "float16", "shape": [256, 256], "strides": [256, 1], "box": [128, 64], "swizzle": "128B", "elem_type_enum": 6, "padding": "zero", "buffer": "c"}}, "outputs": ["c"]}


def _tma_mutant(tmp_path, old, new):
    text = (ROOT / "tests/zoo/triton/tma_matmul.ptx").read_text()
    assert text.count(old) == 1
    (tmp_path / "k.ptx").write_text(text.replace(old, new))
    (tmp_path / "launch.json").write_text(json.dumps(TMA_LAUNCH))
    return _kverify("check", str(tmp_path / "k.ptx"), "--launch", str(tmp_path / "launch.json"), "--no-smt",
                    "--budget", "2")


def test_a_type_without_value_semantics_is_unknown_with_the_reason(tmp_path):
    # was: internal error in checker interpreter (ValueError: unknown PTX type 'e4m3')
    r = _tma_mutant(tmp_path, "setp.lt.s32 \t%p7, %r27, 64;", "setp.lt.e4m3 \t%p7, %r27, 64;")
    assert "internal error" not in r.stdout, r.stdout
    assert "setp.lt.e4m3: unknown PTX type 'e4m3' for setp" in r.stdout


def test_a_misaligned_swizzled_tma_destination_is_a_bounds_finding(tmp_path):
    # was: internal error in checker interpreter (ValueError: TMA shared-memory address 0xc001 must be
    # 128-byte aligned); an odd destination offset comes from a mutated shift
    r = _tma_mutant(tmp_path, "shl.b32 \t%r35, %r4, 13;", "shl.b32 \t%r35, %r4, 0;")
    assert "internal error" not in r.stdout, r.stdout
    assert "error[bounds]: TMA shared-memory destination at offset 0xc001 must be 128-byte aligned for the 128B " \
           "swizzle" in r.stdout


def _vadd_mutant(tmp_path, old, new):
    """tests/zoo/vadd with one line of its PTX changed, beside its sources (names resolve)."""
    for f in (ROOT / "tests/zoo/vadd").iterdir():
        if f.is_file():  # (not the __pycache__ a run of ref.py leaves)
            (tmp_path / f.name).write_bytes(f.read_bytes())
    text = (tmp_path / "vadd.ptx").read_text()
    assert text.count(old) == 1, old
    (tmp_path / "vadd.ptx").write_text(text.replace(old, new))
    return _kverify("check", str(tmp_path / "vadd.ptx"), "--launch", str(tmp_path / "launch.json"), "--no-smt",
                    "--budget", "2")


@pytest.mark.parametrize("old,new,reason", [
    # was: OverflowError: Python int too large to convert to C long
    ("st.global.f32 \t[%rd10], %f3;", "st.global.b128 \t[%rd10], %f3;",
     "st.global.b128: 128-bit elements are not modelled"),
    # was: KeyError: 'u64'
    ("add.f32 \t%f3, %f2, %f1;", "ex2.approx.u64 \t%f3, %f1;", "ex2.approx.u64: no value semantics for type u64"),
    # was: TypeError: int() argument must be ... not 'NoneType'
    ("add.f32 \t%f3, %f2, %f1;", "cvt.rn.f16x2.f32 \t%f3, %f1;", "cvt.rn.f16x2.f32: an operand this form reads is missing"),
])
def test_forms_without_value_semantics_are_unknown_with_the_reason(tmp_path, old, new, reason):
    r = _vadd_mutant(tmp_path, old, new)
    assert "internal error" not in r.stdout, r.stdout
    assert reason in r.stdout, r.stdout
    assert r.returncode == 3


def test_an_address_based_on_the_sink_is_an_input_error(tmp_path):
    # was: internal error in checker interpreter (AttributeError: 'Sink' object has no attribute 'name')
    r = _show(tmp_path, "ld.global.u32 %r1, [_+8];")
    assert r.returncode == 2, r.stderr
    assert "k.ptx:10:5: ld.global.u32: operand 2: an address needs a register or a variable, got [_+8]" in r.stderr


def test_a_parameter_larger_than_the_parameter_space_is_an_input_error(tmp_path):
    # was: internal error in checker interpreter (ValueError: Maximum allowed dimension exceeded)
    p = tmp_path / "k.ptx"
    p.write_text(".version 8.0\n.target sm_90a\n.address_size 64\n"
                 ".visible .entry k(.param .align 64 .b8 k_param_0[18446744073709551616])\n{\n\tret;\n}\n")
    r = _kverify("show", str(p))
    assert r.returncode == 2, r.stderr
    assert (f"{p}:4:" in r.stderr and "parameter k_param_0 of 18446744073709551616 bytes exceeds the 32764-byte "
            "kernel parameter space" in r.stderr), r.stderr


def test_a_float_to_int_cvt_without_rounding_is_unknown_with_the_reason(tmp_path):
    # was: internal error in checker interpreter (ValueError: cvt float->int needs one of .rni/.rzi/.rmi/.rpi)
    r = _vadd_mutant(tmp_path, "add.f32 \t%f3, %f2, %f1;", "cvt.u32.f32 \t%f3, %f2;")
    assert "internal error" not in r.stdout, r.stdout
    assert "cvt.u32.f32: cvt float->int needs one of .rni/.rzi/.rmi/.rpi for cvt" in r.stdout


@pytest.mark.parametrize("body,message", [
    # was: ValueError: Maximum allowed dimension exceeded (a parameter image aligned to 2^64)
    ("mov.u32 %r1, 1;", None),
    # was: OverflowError: Python int too large to convert to C long
    ("ld.shared.f32 %f1, [%rd1+0xfffffffffffffffff];",
     "ld.shared.f32: operand 2: the address offset 0xfffffffffffffffff does not fit in 64 bits"),
])
def test_out_of_range_offsets_are_input_errors(tmp_path, body, message):
    r = _show(tmp_path, body)
    if message is None:
        assert r.returncode == 0, r.stderr
    else:
        assert r.returncode == 2 and message in r.stderr, r.stderr


def test_an_alignment_that_is_not_a_small_power_of_two_is_an_input_error(tmp_path):
    p = tmp_path / "k.ptx"
    p.write_text(".version 8.0\n.target sm_90a\n.address_size 64\n"
                 ".visible .entry k(.param .u64 .ptr .global .align 18446744073709551616 k_param_0)\n{\n\tret;\n}\n")
    r = _kverify("show", str(p))
    assert r.returncode == 2, r.stderr
    assert ".align 18446744073709551616 is not a power of two up to 65536" in r.stderr, r.stderr


def test_a_negative_shared_address_is_a_bounds_finding(tmp_path):
    # was: internal error in checker interpreter (IndexError: list index out of range)
    p = tmp_path / "k.ptx"
    p.write_text(".version 8.0\n.target sm_90a\n.address_size 64\n.visible .entry k()\n{\n"
                 "\t.reg .b32 %r<4>;\n\t.reg .f32 %f<2>;\n\t.shared .align 4 .b8 s[128];\n"
                 "\tmov.u32 %r1, s;\n\tld.shared.f32 %f1, [%r1+-64];\n\tret;\n}\n")
    r = _kverify("check", str(p), "--grid", "1", "--block", "32", "--no-smt")
    assert "internal error" not in r.stdout, r.stdout
    # (the 32-bit address register's sum wraps: 0 - 64 is 0xffffffc0, PTX ISA 6.4.1)
    assert r.returncode == 1 and "error[bounds]: shared::cluster address 0xffffffc0 names CTA rank 254, outside " \
        "the cluster" in r.stdout, r.stdout


def test_a_whole_file_check_reports_an_entry_without_a_block_size_at_its_line_and_runs_the_others():
    # one entry has __launch_bounds__, the other (a helper) has no block size
    r = _kverify("check", "tests/data/whole_file/two_entries.ptx", "--arg", "n=100")
    assert ("tests/data/whole_file/two_entries.ptx:54:17: error: no block size for helper_fill: give --block "
            "X[,Y,Z]") in r.stderr + r.stdout, r.stderr + r.stdout
    assert "tests/data/whole_file/two_entries.ptx: kernel scale: VERIFIED" in r.stdout
    assert "tests/data/whole_file/two_entries.ptx: kernel helper_fill: ERROR" in r.stdout
    assert r.returncode == 2


@pytest.mark.parametrize("body,line,message", [
    ("\tmov.u32 %r1, 1;\n$L1:\n\tadd.u32 %r1, %r1, 1;\n$L1:\n\tret;\n", 12, "label $L1 is defined twice in one scope"),
    ("\tmov.u32 %r1, 1;\n\tadd.u32 %r2, %r1, %q9;\n\tret;\n", 10, "register %q9 is not declared"),
    ("\tmov.u32 %r1, 1;\n\tadd.u32 %r9, %r1, 1;\n\tret;\n", 10, "register %r9 is not declared"),
])
def test_ptx_that_ptxas_rejects_is_bad_input(tmp_path, body, line, message):
    # (was parsed and verified: a duplicate label, a register never declared, one past a %r<N> range)
    p = tmp_path / "k.ptx"
    p.write_text(".version 8.0\n.target sm_90a\n.address_size 64\n.visible .entry k()\n{\n"
                 "\t.reg .b32 %r<6>;\n\t.reg .pred %p<2>;\n\t.reg .f32 %f<2>;\n" + body + "}\n")
    r = _kverify("check", str(p), "--grid", "1", "--block", "32")
    assert r.returncode == 2 and f"k.ptx:{line}:1: error: {message}" in r.stdout + r.stderr, r.stdout + r.stderr


@pytest.mark.parametrize("grid", ["-1", "4.5", "1e3", "4,2,1,1"])
def test_grid_text_that_is_not_1_to_3_positive_integers_is_bad_input(grid):
    # (digits were pulled out of any text: -1 ran grid 1, 4.5 ran 4x5)
    r = _kverify("check", "tests/zoo/vadd/vadd.ptx", "--grid", grid, "--block", "256", "--arg", "n=1000")
    assert r.returncode == 2 and f"--grid must be 1 to 3 positive integers, got '{grid}'" in r.stdout + r.stderr


def test_a_launch_spec_naming_no_kernel_or_an_output_that_is_no_buffer_is_bad_input(tmp_path):
    # (both were ignored: the module's only kernel was checked, with no output compared)
    base = json.loads(json.dumps({"grid": [4], "block": [256], "args": {"n": 1000},
                                  "buffers": {k: {"dtype": "float32", "shape": [1000]} for k in "abc"}}))
    for extra, message in (({"kernel": "vaddx"}, "launch spec: no kernel 'vaddx' in this module (kernels: vadd)"),
                           ({"outputs": ["nope"]}, "launch spec: outputs names 'nope', not a buffer of the launch")):
        spec = tmp_path / "l.json"
        spec.write_text(json.dumps({**base, **extra}))
        r = _kverify("check", "tests/zoo/vadd/vadd.ptx", "--launch", str(spec))
        assert r.returncode == 2 and message in r.stdout + r.stderr, r.stdout + r.stderr


@pytest.mark.parametrize("flag,value", [("--budget", "-1"), ("--timeout", "-5"), ("--timeout", "0")])
def test_a_budget_or_timeout_that_is_not_positive_is_a_usage_error(flag, value):
    # (--budget -1 verified; --timeout -5 ended "solver budget (-5 solver seconds) spent")
    r = _kverify("check", "tests/zoo/vadd/vadd.ptx", "--grid", "4", "--block", "256", "--arg", "n=1000", flag, value)
    assert r.returncode == 2 and f"argument {flag}: must be positive, got {value}" in r.stderr, r.stderr


def test_a_launch_spec_and_launch_flags_together_are_a_usage_error(tmp_path):
    # (the spec silently won: --grid 8 --block 128 were ignored)
    spec = tmp_path / "l.json"
    spec.write_text(json.dumps({"grid": [4], "block": [256], "args": {"n": 1000},
                                "buffers": {k: {"dtype": "float32", "shape": [1000]} for k in "abc"}}))
    r = _kverify("check", "tests/zoo/vadd/vadd.ptx", "--launch", str(spec), "--grid", "8", "--block", "128")
    assert r.returncode == 2 and "give either --launch or --grid/--block/--cluster/--arg, not both" in r.stderr
