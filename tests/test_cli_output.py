"""Linter-grade output of ``kverify check`` / ``run``: one ``path:line:col: severity[rule]:
message (ptx N)`` line per finding, demangled kernel and object names (``kverify.names``),
per-file isolation (a bad file is its own ``error`` entry, JSON is always printed, the exit
code is the worst), unknown kernel names as bad input, dtype aliases in launch specs."""
import json

import pytest

from conftest import ROOT, ZOO
from kverify import names
from kverify.launch import LaunchSpec
from kverify.semantics.ir import KernelError
from kverify.verifier.cli import main

DATA = ROOT / "tests" / "data"
STENCIL = "tests/data/stencil3.ptx"  # our own kernel, non-extern-C: its names are mangled


@pytest.fixture(autouse=True)
def _at_root(monkeypatch):
    monkeypatch.chdir(ROOT)  # paths are printed relative to the working directory


# --------------------------------------------------------------------------- names


@pytest.mark.parametrize("symbol,name", [
    ("_Z8stencil3PKfPfi", "stencil3(const float*, float*, int)"),
    ("_Z6kernelPKjS0_", "kernel(const unsigned int*, const unsigned int*)"),
    ("_Z1fPKcRKi", "f(const char*, const int&)"),
    ("_Z3fooIfEvPT_", "void foo<float>(float*)"),
    ("_ZN2ns4smemE", "ns::smem"),
    ("vadd", "vadd"),  # extern "C": not mangled
    ("_Zbad", "_Zbad"),  # does not demangle: the PTX name
])
def test_demangle(symbol, name):
    assert names.demangle(symbol) == name


@pytest.mark.parametrize("symbol,name", [
    ("_ZZ8stencil3PKfPfiE1s", "s"),
    ("_ZZ13bulk_pipelineE4full", "full"),
    ("_ZZ3fooIfEvPT_E4tile", "tile"),
    ("_ZZN2ns3fooEvE4full", "full"),
    ("_ZZ4mainE1s_0", "s"),  # a discriminator
    ("_ZN2ns4smemE", "ns::smem"),
    ("global_smem", "global_smem"),
])
def test_short_name_of_variables(symbol, name):
    assert names.short_name(symbol) == name


def test_object_names_use_the_element_size_or_keep_the_byte_offset():
    s = "_ZZ8stencil3PKfPfiE1s"
    assert names.object_name(s, 132, 4) == "s[33]"
    assert names.object_name(s, 0, 4) == "s[0]"
    assert names.object_name(s, 132, None) == "s+132"  # element size unknown: bytes
    assert names.object_name(s, 130, 4) == "s+130"  # inside an element
    assert names.object_name(s, 0, None) == "s"
    assert names.object_name("_ZZ16relaxed_mbarrierE4full", 0, 8, array=False) == "full"


def test_rewrite_names_objects_and_lists_them():
    text, objs = names.rewrite("read of shared _ZZ8stencil3PKfPfiE1s+132 by thread 0; mbarrier "
                               "_ZZ13bulk_pipelineE4full+8 of CTA (0,0,0); calls _Z3foov; global_smem+1024",
                               {"_ZZ8stencil3PKfPfiE1s": (None, True), "_ZZ13bulk_pipelineE4full": (8, True),
                                "global_smem": (None, True)}, {"_ZZ8stencil3PKfPfiE1s": 4})
    assert text == "read of shared s[33] by thread 0; mbarrier full[1] of CTA (0,0,0); calls foo(); global_smem+1024"
    assert objs == [{"name": "s[33]", "symbol": "_ZZ8stencil3PKfPfiE1s", "offset": 132, "element_bytes": 4},
                    {"name": "full[1]", "symbol": "_ZZ13bulk_pipelineE4full", "offset": 8, "element_bytes": 8},
                    {"name": "global_smem+1024", "symbol": "global_smem", "offset": 1024, "element_bytes": None}]


def test_messages_show_kernel_parameters_and_long_kernel_names_briefly():
    """A CUTLASS kernel's name demangles to kilobytes: messages show a parameter as ``param_<i>``
    and elide a long name's template arguments and parameter list (the header has the whole name)."""
    kern = "_ZN7cutlass13device_kernelINS_4gemm6kernel13GemmUniversalIN4cute5tupleIJiiiEEEEEEEvNT_6ParamsE"
    assert len(names.demangle(kern)) == 170
    text, _ = names.rewrite(f"no value for parameter(s) {kern}_param_0 (its bytes besides {kern}_param_0+776) of {kern}")
    assert text == "no value for parameter(s) param_0 (its bytes besides param_0+776) of void cutlass::device_kernel<…>(…)"
    long = "void ns::k<" + ", ".join(f"ns::T<{i}>" for i in range(30)) + ">(ns::P<int>)"
    assert names.brief(long) == "void ns::k<…>(…)"
    assert names.brief("void k(int)") == "void k(int)"
    assert names.brief("bool ns::operator<(" + "x" * 200 + ")").startswith("bool ns::operator<(")


# --------------------------------------------------------------------------- linter lines


def test_check_prints_a_linter_line_per_finding_then_the_table(capsys):
    rc = main(["check", "tests/zoo/reduce_smem/reduce_smem__missing_sync.ptx",
               "tests/zoo/tma_store/tma_store__missing_proxy_fence.ptx"])
    out = capsys.readouterr().out.splitlines()
    assert rc == 1
    assert out[0] == (
        "tests/zoo/reduce_smem/reduce_smem__missing_sync.cu:15:7: error[race.shared]: read-after-write between "
        "lanes of one warp with no __syncwarp (bar.warp.sync) or barrier between them: read of shared sdata[16] by "
        "thread 0 (warp 0, lane 0) of CTA (0,0,0) at reduce_smem__missing_sync.cu:15 and an access by thread 16 "
        "(warp 0 of CTA (0,0,0)) at reduce_smem__missing_sync.cu:15 (ptx 99)")
    assert out[1] == (
        "tests/zoo/tma_store/tma_store__missing_proxy_fence.cu:61:7: error[race.async-proxy]: async-proxy read of a "
        "generic-proxy write with no fence.proxy.async after the write: async read of shared tile by warp 0 "
        "(threads 0-31) of CTA (0,0,0) at tma_store__missing_proxy_fence.cu:61 and an access by thread 0 (warp 0 "
        "of CTA (0,0,0)) at tma_store__missing_proxy_fence.cu:57 (iterations 0) (ptx 74)")
    # then the per-obligation tables, one per kernel
    assert out[2] == "tests/zoo/reduce_smem/reduce_smem__missing_sync.ptx: kernel reduce_smem: VIOLATED"
    assert out[3].startswith("  violated  race-free: shared ") and out[3].endswith(
        "reduce_smem__missing_sync.cu:15:7 (ptx 99)")
    assert "tests/zoo/tma_store/tma_store__missing_proxy_fence.ptx: kernel tma_store: VIOLATED" in out


def test_json_and_sarif_locations_are_the_paths_the_text_shows(capsys):
    """nvcc's ``.file`` names only the base name (``stencil__missing_sync.cu``); JSON and SARIF
    give the path relative to the working directory, as the linter lines do, and JSON keeps the
    ``.file`` name as ``file``."""
    from kverify.api import check

    ptx = "tests/zoo/stencil/stencil__missing_sync.ptx"
    assert main(["check", ptx, "--format", "json"]) == 1
    (k,) = json.loads(capsys.readouterr().out)["kernels"]
    (o,) = [o for o in k["obligations"] if o["id"] == "race.shared"]
    assert o["locations"][0] == {"path": "tests/zoo/stencil/stencil__missing_sync.cu", "line": 22, "column": 5,
                                 "ptx_line": 86, "file": "stencil__missing_sync.cu"}
    uris = {l["physicalLocation"]["artifactLocation"]["uri"] for r in check(ptx, launch="tests/zoo/stencil/manifest.json").to_sarif()["runs"][0]["results"]
            for l in r["locations"]}
    assert uris == {"tests/zoo/stencil/stencil__missing_sync.cu"}


def test_run_prints_the_linter_line_first(capsys):
    rc = main(["run", "tests/zoo/reduce_smem/reduce_smem__missing_sync.ptx", "--launch",
               "tests/zoo/reduce_smem/manifest.json", "--no-ref"])
    out = capsys.readouterr().out.splitlines()
    assert rc == 1
    assert out[0].startswith("tests/zoo/reduce_smem/reduce_smem__missing_sync.cu:15:7: error[race.shared]: "
                             "read-after-write between lanes of one warp")
    assert "read of shared sdata[16] by thread 0" in out[0] and out[0].endswith(" (ptx 99)")
    assert out[1].startswith("kverify run tests/zoo/reduce_smem/reduce_smem__missing_sync.ptx: kernel reduce_smem,")


def test_mangled_kernel_and_shared_array_are_shown_as_written(capsys):
    rc = main(["check", STENCIL, "--grid", "1", "--block", "64", "--arg", "n=64", "--no-smt"])
    out = capsys.readouterr().out.splitlines()
    assert rc == 1
    # stencil3.ptx's .file is where it was compiled; the source is found next to the PTX
    assert ("tests/data/stencil3.cu:14:3: error[uninitialized]: read of uninitialized shared memory s[33] by "
            "thread 31 (warp 0, lane 31) of CTA (0,0,0) (ptx 74)") in out
    assert "tests/data/stencil3.ptx: kernel stencil3(const float*, float*, int): VIOLATED" in out
    assert not any("_ZZ" in line for line in out if not line.lstrip().startswith("replay:"))
    # JSON: the PTX names stay, with the byte offset of each object named
    rc = main(["check", STENCIL, "--kernel", "stencil3", "--grid", "1", "--block", "64", "--arg", "n=64",
               "--no-smt", "--format", "json"])
    k = json.loads(capsys.readouterr().out)["kernels"][0]
    assert rc == 1 and k["name"] == "_Z8stencil3PKfPfi"
    assert k["display_name"] == "stencil3(const float*, float*, int)"
    f = next(f for f in k["findings"] if f["rule"] == "uninitialized")
    assert f["objects"] == [{"name": "s[33]", "symbol": "_ZZ8stencil3PKfPfiE1s", "offset": 132, "element_bytes": 4}]
    assert f["details"]["address"] is not None


# --------------------------------------------------------------------------- isolation, bad input


def _bad(tmp_path):
    bad = tmp_path / "bad.ptx"
    bad.write_text(".version 9.0\n.target sm_90a\n.address_size 64\n.visible .entry k()\n{\n ret\n}\n")
    return bad


def test_a_bad_file_is_its_own_error_entry_and_the_others_are_reported(tmp_path, capsys):
    bad = _bad(tmp_path)
    vadd, red = "tests/zoo/vadd/vadd.ptx", "tests/zoo/reduce_smem/reduce_smem.ptx"
    rc = main(["check", vadd, str(bad), red])
    out = capsys.readouterr().out.splitlines()
    assert rc == 2
    assert out[0] == (f"{bad}:7:1: error: unexpected '}}' (expected one of: BANG, COLON, FLOAT, INT, LBRACE, LPAR)")
    assert f"{vadd}: kernel vadd: VERIFIED" in out and f"{red}: kernel reduce_smem: VERIFIED" in out
    assert f"{bad}: ERROR" in out
    rc = main(["check", vadd, str(bad), red, "--format", "json"])
    rep = json.loads(capsys.readouterr().out)
    assert rc == 2 and rep["verdict"] == "error"
    assert [(k["path"], k["verdict"]) for k in rep["kernels"]] == [(vadd, "verified"), (str(bad), "error"),
                                                                     (red, "verified")]
    e = rep["kernels"][1]
    assert e["error"].startswith("unexpected '}'")
    assert e["error_location"] == {"path": str(bad), "line": 7, "column": 1, "ptx_line": 0}


def test_a_violated_file_next_to_a_bad_one_exits_2(tmp_path, capsys):
    rc = main(["check", "tests/zoo/reduce_smem/reduce_smem__missing_sync.ptx", str(_bad(tmp_path)), "--no-smt"])
    out = capsys.readouterr().out
    assert rc == 2 and "kernel reduce_smem: VIOLATED" in out and "error[race.shared]" in out


def test_a_crash_on_one_kernel_is_inconclusive_for_it_alone(monkeypatch, capsys):
    from kverify.verifier import check

    real = check.check_kernel

    def flaky(m, k, spec, **kw):
        if k.name == "vadd":
            raise RuntimeError("boom")
        return real(m, k, spec, **kw)

    monkeypatch.setattr(check, "check_kernel", flaky)
    rc = main(["check", "tests/zoo/vadd/vadd.ptx", "tests/zoo/reduce_smem/reduce_smem.ptx", "--format", "json"])
    rep = json.loads(capsys.readouterr().out)
    assert rc == 3
    assert [k["verdict"] for k in rep["kernels"]] == ["inconclusive", "verified"]
    assert rep["kernels"][0]["error"].startswith("internal error: RuntimeError: boom (no verdict;")


def test_parse_keeps_going_past_a_bad_file(tmp_path, capsys):
    bad = _bad(tmp_path)
    assert main(["parse", str(bad), "tests/zoo/vadd/vadd.ptx"]) == 2
    cap = capsys.readouterr()
    assert cap.err.startswith(f"{bad}:7:1: unexpected '}}'") and "vadd.ptx: ok" in cap.out


def test_unknown_kernel_is_bad_input_listing_the_kernels(capsys):
    vadd = "tests/zoo/vadd/vadd.ptx"
    msg = f"{vadd}:1:1: no kernel 'x' in this module (kernels: vadd)"
    assert main(["check", vadd, "--kernel", "x"]) == 2
    assert capsys.readouterr().out.splitlines()[0] == f"{vadd}:1:1: error: no kernel 'x' in this module (kernels: vadd)"
    assert main(["check", vadd, "--kernel", "x", "--format", "json"]) == 2
    k = json.loads(capsys.readouterr().out)["kernels"][0]
    assert k["verdict"] == "error" and k["error"] == "no kernel 'x' in this module (kernels: vadd)"
    for cmd in (["run", vadd, "--kernel", "x"], ["show", vadd, "--kernel", "x"]):
        assert main(cmd) == 2
        assert capsys.readouterr().err.strip() == msg


def test_version(capsys):
    from kverify import __version__

    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0 and capsys.readouterr().out.strip() == f"kverify {__version__}"


@pytest.mark.parametrize("spelling", ["f32", "fp32", "float", "float32", "torch.float32", "FP32"])
def test_float32_aliases_in_a_launch_spec(spelling):
    s = LaunchSpec.from_dict({"buffers": {"a": {"dtype": spelling, "shape": [4]}}})
    assert s.buffers["a"]["dtype"] == "float32"


@pytest.mark.parametrize("spelling,canonical", [("bf16", "bfloat16"), ("torch.bfloat16", "bfloat16"),
                                                ("half", "float16"), ("i32", "int32"), ("u8", "uint8")])
def test_other_aliases_in_a_launch_spec(spelling, canonical):
    assert LaunchSpec.from_dict({"buffers": {"a": {"dtype": spelling, "shape": [4]}}}).buffers["a"]["dtype"] == canonical


def test_a_bad_dtype_lists_the_valid_names():
    with pytest.raises(KernelError) as e:
        LaunchSpec.from_dict({"buffers": {"a": {"dtype": "f33", "shape": [4]}}}, "l.json")
    assert str(e.value) == ("l.json:1:1: launch spec: buffer 'a' has unknown dtype 'f33' (valid: float16, bfloat16, "
                            "float32, float64, int8, int16, int32, int64, uint8, uint16, uint32, uint64, bool, "
                            "float8_e4m3fn, float8_e5m2)")


@pytest.mark.parametrize("command", ["show", "parse", "run", "check", "rules", "validate", "capture", "equiv", "gate",
                                     "audit"])
def test_every_command_prints_its_help(command, capsys):
    """argparse formats help strings with %: an unescaped one crashes --help."""
    with pytest.raises(SystemExit) as e:
        main([command, "--help"])
    assert e.value.code == 0
    assert capsys.readouterr().out.startswith("usage: kverify ")


def test_object_names_do_not_rewrite_english_words():
    # variables named like words ("a", "s", "in") appear bare in prose: only name+OFFSET and
    # mangled names are objects; an apostrophe is no word boundary ("kernel's")
    from kverify.names import rewrite

    text, objs = rewrite("a data race on a+8 by the kernel's s; s+0 and _ZZ8stencil3PKfPfiE1s+132",
                         {"a": (4, True), "s": (4, True), "_ZZ8stencil3PKfPfiE1s": (4, True)})
    assert text == "a data race on a[2] by the kernel's s; s[0] and s[33]"
    assert [o["name"] for o in objs] == ["a[2]", "s[0]", "s[33]"]
