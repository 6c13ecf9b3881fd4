"""Bad input: ``file:line:col: message`` and exit code 2, never a traceback."""
import random
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from conftest import ZOO, needs_nvcc
from kverify.semantics.ir import KernelError, parse_ptx
from kverify.verifier.cli import main

DATA = Path(__file__).parent / "data"
GOOD = (ZOO / "vadd" / "vadd.ptx").read_text()


def _err(text):
    with pytest.raises(KernelError) as e:
        parse_ptx(text, "bad.ptx")
    return e.value


def test_truncated_ptx_reports_end_of_input():
    cut = GOOD[: GOOD.index("ret;")]
    e = _err(cut)
    assert "unexpected end of input" in e.message
    assert e.line == cut.count("\n") + 1


def test_unknown_directive_is_named_with_its_position():
    e = _err(GOOD.replace(".reg .pred", ".rge .pred", 1))
    line = GOOD.splitlines().index(next(l for l in GOOD.splitlines() if ".reg .pred" in l)) + 1
    assert (e.line, e.col) == (line, 2)
    assert ".rge" in e.message


def test_bad_operand_is_reported_at_the_operand():
    bad = GOOD.replace("ld.param.u64 \t%rd1, [vadd_param_0];", "ld.param.u64 \t%rd1, [vadd_param_0;", 1)
    assert bad != GOOD
    e = _err(bad)
    line = bad.splitlines().index(next(l for l in bad.splitlines() if "[vadd_param_0;" in l)) + 1
    assert e.line == line and "unexpected" in e.message


def test_wrong_operand_count_is_an_error():
    bad = GOOD.replace("ld.param.u64 \t%rd1, [vadd_param_0];", "ld.param.u64 \t%rd1;", 1)
    e = _err(bad)
    assert "expected 2 to 3 operands, got 1" in e.message


def test_branch_to_undefined_label():
    bad = GOOD.replace("bra.uni", "bra.uni", 1).replace("$L__BB0_2;", "$L__nowhere;", 1)
    if bad == GOOD:
        pytest.skip("vadd has no branch")
    e = _err(bad)
    assert "undefined label $L__nowhere" in e.message


def test_modifiers_that_fit_no_form_are_an_error_naming_the_conflict():
    line = next(l for l in GOOD.splitlines() if l.strip().startswith("add.s64"))
    bad = GOOD.replace(line, line.replace("add.s64", "add.rn.lo.s64"), 1)
    e = _err(bad)
    assert e.message == "add.rn.lo.s64: .lo does not apply to add"
    assert (e.line, e.col) == (bad.splitlines().index(line.replace("add.s64", "add.rn.lo.s64")) + 1,
                               line.index("add") + 1)


def test_cli_exit_code_2_for_an_invalid_modifier_combination(capsys, tmp_path):
    f = tmp_path / "k.ptx"
    f.write_text(GOOD.replace("ld.param.u64", "ld.param.global.u64", 1))
    assert main(["show", str(f)]) == 2
    err = capsys.readouterr().err
    assert f"{f}:" in err and "ld.param.global.u64: more than one state space (.param, .global)" in err


def test_cli_exit_code_2_and_message_for_irreducible_flow(capsys):
    rc = main(["show", str(DATA / "irreducible.ptx")])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.strip() == f"{DATA / 'irreducible.ptx'}:19:1: irreducible control flow: the branch to $L_A enters a loop other than through its header"


def test_cli_unknown_suffix_and_missing_file(capsys, tmp_path):
    assert main(["show", str(tmp_path / "k.txt")]) == 2
    assert "unknown input kind .txt" in capsys.readouterr().err
    assert main(["show", str(tmp_path / "k.ptx")]) == 2
    assert f"{tmp_path / 'k.ptx'}:0:0: no such file" in capsys.readouterr().err


def test_cli_unknown_kernel(capsys):
    assert main(["show", str(ZOO / "vadd" / "vadd.ptx"), "--kernel", "nope"]) == 2
    assert capsys.readouterr().err.strip() == f"{ZOO / 'vadd' / 'vadd.ptx'}:1:1: no kernel 'nope' in this module (kernels: vadd)"


@needs_nvcc
def test_nvcc_compile_error_is_file_line_col(tmp_path, capsys):
    cu = tmp_path / "broken.cu"
    cu.write_text('extern "C" __global__ void k(float* x) {\n  x[0] = y;\n}\n')
    assert main(["show", str(cu)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"{cu}:2:10: ") and "undefined" in err


@needs_nvcc
@pytest.mark.parametrize("files, where, says", [
    # the caret's column, looked up in the real line (EDG echoes __global__ expanded)
    ({"k.cu": "template <int N> __global__ void k(float *a) { a[0] = N.x; }\ntemplate __global__ void k<1>(float*);\n"},
     "k.cu:1:55", "expression must have class type"),
    # an error in an included header is that header's line
    ({"h.h": "#pragma once\n__device__ int f() { return zz; }\n",
      "k.cu": '#include "h.h"\n__global__ void k(int *a) { a[0] = f(); }\n'}, "h.h:2:29", '"zz" is undefined'),
    # the host preprocessor's own format
    ({"k.cu": '#include "missing.h"\n__global__ void k(int *a) {}\n'}, "k.cu:1:10", "missing.h: No such file"),
    # inline asm ptxas rejects: the CUDA line its PTX came from
    ({"k.cu": '__global__ void k(float *a) {\n  a[0] = 1;\n  asm volatile("bogus.instr %%r1;");\n}\n'},
     "k.cu:3:3", "ptxas: Unknown modifier '.instr'"),
])
def test_nvcc_errors_name_file_line_and_column(tmp_path, capsys, files, where, says):
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    assert main(["show", str(tmp_path / "k.cu")]) == 2
    err = capsys.readouterr().err.strip().splitlines()[0]
    assert err.startswith(f"{tmp_path}/{where}: ") and says in err, err


def _mutate(text: str, rng: random.Random) -> str:
    ops = rng.randrange(6)
    i = rng.randrange(len(text))
    if ops == 0:
        return text[:i]
    if ops == 1:
        return text[:i] + text[i + rng.randrange(1, 40):]
    if ops == 2:
        return text[:i] + rng.choice(["{", "}", ";", ",", "[", "]", "%", "@", ".", "!", "|", "<", "0x", "\n", ".reg", "bra", "::"]) + text[i:]
    if ops == 3:
        lines = text.splitlines(True)
        j = rng.randrange(len(lines))
        k = rng.randrange(len(lines))
        lines[j], lines[k] = lines[k], lines[j]
        return "".join(lines)
    if ops == 4:
        lines = text.splitlines(True)
        del lines[rng.randrange(len(lines))]
        return "".join(lines)
    j = rng.randrange(len(text))
    return text[:i] + text[j:j + 30] + text[i:]


SOURCES = [ZOO / "vadd" / "vadd.ptx", ZOO / "bulk_pipeline" / "bulk_pipeline.ptx",
           ZOO / "triton" / "tma_matmul.ptx", ZOO / "named_barrier" / "named_barrier.ptx"]


@pytest.mark.parametrize("src", SOURCES, ids=lambda p: p.name)
def test_fuzzed_ptx_never_raises_anything_but_a_positioned_error(src):
    text = src.read_text()
    rng = random.Random(zlib.crc32(src.name.encode()))  # the same mutations in every process
    n_err = 0
    for _ in range(120):
        bad = _mutate(text, rng)
        try:
            parse_ptx(bad, "fuzz.ptx")
        except KernelError as e:
            n_err += 1
            assert str(e).startswith("fuzz.ptx:")
            assert e.line >= 0 and e.col >= 0 and e.message
    assert n_err > 30


def test_cli_never_prints_a_traceback_on_garbage(tmp_path):
    f = tmp_path / "garbage.ptx"
    f.write_bytes(b"\x00\xff\xfe .version 9.0 {{{")
    r = subprocess.run([sys.executable, "-m", "kverify.verifier.cli", "show", str(f)], capture_output=True, text=True)
    assert r.returncode == 2
    assert "Traceback" not in r.stderr and r.stderr.startswith(str(f) + ":")
