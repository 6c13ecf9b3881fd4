"""``kverify show`` / ``kverify parse`` and the CUDA front end."""
import subprocess
import sys

import pytest

from conftest import ZOO, needs_nvcc
from kverify.semantics.ir import load_module, print_module
from kverify.semantics.ir.cuda import kernel_param_names
from kverify.verifier.cli import main


def test_show_prints_structured_ir_with_source_lines(capsys):
    assert main(["show", str(ZOO / "bulk_pipeline" / "bulk_pipeline.ptx")]) == 0
    out = capsys.readouterr().out
    assert "loop $L__BB0_" in out and "blocking mbarrier.try_wait.parity.shared::cta.b64" in out
    assert "// bulk_pipeline.cu:" in out  # the CUDA line next to the instruction


def test_parse_reports_counts(capsys):
    assert main(["parse", str(ZOO / "vadd" / "vadd.ptx"), str(ZOO / "triton" / "tma_matmul.ptx")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"{ZOO / 'vadd' / 'vadd.ptx'}: ok: 1 function(s) (entry vadd),")
    assert out[1].endswith("0 unsupported")


def test_parse_keeps_going_and_fails_with_2(tmp_path, capsys):
    bad = tmp_path / "bad.ptx"
    bad.write_text(".version 9.0\n.target sm_90a\n.address_size 64\n.visible .entry k()\n{\n ret\n}\n")
    assert main(["parse", str(bad), str(ZOO / "vadd" / "vadd.ptx")]) == 2
    cap = capsys.readouterr()
    assert cap.err.startswith(f"{bad}:7:1: unexpected '}}'")
    assert "vadd.ptx: ok" in cap.out


def test_cuda_parameter_names_come_from_the_source():
    src = '''extern "C" __global__ void __launch_bounds__(128) k(const float* __restrict__ a,
        float* b /* out */, int n, const __grid_constant__ CUtensorMap tmap) {}
template <int N> __global__ void t(float (*x)[4], int y) {}'''
    assert kernel_param_names(src) == {"k": ["a", "b", "n", "tmap"], "t": ["x", "y"]}


@needs_nvcc
def test_cu_and_its_ptx_give_the_same_ir_modulo_source_locations():
    for fam, stem in [("vadd", "vadd"), ("bulk_pipeline", "bulk_pipeline"), ("reduce_smem", "reduce_smem__missing_sync")]:
        from_cu = load_module(str(ZOO / fam / f"{stem}.cu"))
        from_ptx = load_module(str(ZOO / fam / f"{stem}.ptx"))
        a = print_module(from_cu, with_locs=False).split("\n", 4)
        b = print_module(from_ptx, with_locs=False).split("\n", 4)
        # everything but the .file table (an absolute path when compiled here)
        assert a[:3] == b[:3]
        assert a[4].split("\n.visible", 1)[1] == b[4].split("\n.visible", 1)[1]
        assert [p.source_name for p in from_cu.kernels[0].params][:1] != [None]
        # same CUDA lines on every instruction
        from kverify.semantics.ir import instructions

        la = [(i.loc.line, i.loc.col) for i in instructions(from_cu.kernels[0].body)]
        lb = [(i.loc.line, i.loc.col) for i in instructions(from_ptx.kernels[0].body)]
        assert la == lb


def test_console_script_module_entry_point():
    r = subprocess.run([sys.executable, "-m", "kverify.verifier.cli", "--help"], capture_output=True, text=True)
    assert r.returncode == 0 and "show" in r.stdout and "parse" in r.stdout


def test_the_command_restarts_itself_with_one_hash_seed(monkeypatch):
    """Set iteration order decides the order terms are made in, and z3's work on a budgeted
    query with it: the command always runs with PYTHONHASHSEED=0."""
    import kverify.__main__ as entry

    calls = []

    def fake_execve(path, argv, env):
        calls.append((path, argv, env["PYTHONHASHSEED"]))
        raise SystemExit(0)

    monkeypatch.setattr(entry.os, "execve", fake_execve)
    monkeypatch.setattr(entry.sys, "argv", ["kverify", "rules"])
    # the command's starting state (collector off) is the command's, not this test process's
    monkeypatch.setattr("kverify.verifier.server.fresh_heap", lambda command: None)
    monkeypatch.setenv("PYTHONHASHSEED", "1")
    with pytest.raises(SystemExit):
        entry.run()
    assert calls == [(entry.sys.executable, [entry.sys.executable, "-m", "kverify", "rules"], "0")]
    monkeypatch.setenv("PYTHONHASHSEED", "0")  # already seeded: no restart, the command runs
    calls.clear()
    with pytest.raises(SystemExit) as e:
        entry.run()
    assert calls == [] and e.value.code == 0


def test_the_parser_builds_only_the_command_named_and_every_one_otherwise(capsys):
    import pytest

    from kverify.verifier.cli import COMMANDS, build_parser

    sub = next(a for a in build_parser(["check", "x.ptx"])._actions if a.dest == "command")
    assert list(sub.choices) == ["check"]
    sub = next(a for a in build_parser(["--help"])._actions if a.dest == "command")
    assert list(sub.choices) == list(COMMANDS) == ["show", "parse", "run", "check", "audit", "rules", "validate",
                                                   "capture", "equiv", "gate", "serve"]
    with pytest.raises(SystemExit) as e:  # a mistyped command lists every command
        build_parser(["chek"]).parse_args(["chek"])
    assert e.value.code == 2
    assert "invalid choice: 'chek' (choose from 'show', 'parse', 'run', 'check', 'audit', 'rules', 'validate', " \
           "'capture', 'equiv', 'gate', 'serve')" in capsys.readouterr().err


def test_version_is_answered_before_the_checkers_load(capsys):
    """``kverify --version`` prints what the parser's --version prints, without importing the
    checkers (numpy, z3) or restarting with a hash seed."""
    import subprocess
    import sys

    from kverify.verifier.cli import build_parser

    code = ("import sys, runpy; sys.argv = ['kverify', '--version']\n"
            "try:\n    runpy.run_module('kverify', run_name='__main__')\n"
            "except SystemExit as e:\n    print(e.code, 'numpy' in sys.modules, 'z3' in sys.modules)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={"PATH": "/usr/bin"})
    with pytest.raises(SystemExit):
        build_parser(["--version"]).parse_args(["--version"])
    parser_says = capsys.readouterr().out
    assert parser_says == f"kverify {__import__('kverify').__version__}\n"
    assert r.stdout.splitlines() == [parser_says.strip(), "0 False False"], r.stderr
