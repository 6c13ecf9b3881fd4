"""Pointers read out of by-value struct parameters, and pointers passed through the thread's
local memory, without a launch that gives the struct's bytes (kverify.launch.params
.with_struct_pointers, kverify.verifier.races.extents.struct_slots, kverify.symbolic.provenance).

The 8-byte slots a kernel uses as global addresses get a buffer each (``A.p``, named from the
source's layout), sized from the kernel's accesses like a pointer parameter's buffer, seen by the
SMT race checker and the interpreter alike; a field used as a value stays a scalar (free for
the symbolic checkers, missing for the interpreter). Pointers selected by a scalar and loaded
back from local memory are followed; anything that may have changed a kept pointer makes it
unknown again. The kernels in tests/data/structptr are our own; their .ptx is nvcc 13's output
(sm_90a, -lineinfo), so that the tests run without nvcc."""
import json

import pytest

from conftest import ROOT, needs_nvcc
from kverify.launch import LaunchSpec
from kverify.launch.params import param_bytes, with_struct_pointers
from kverify.semantics.ir import KernelError, load_module
from kverify.semantics.ir.structs import struct_pointer_fields
from kverify.verifier.cli import main
from kverify.verifier.races.extents import struct_slots

DATA = ROOT / "tests" / "data" / "structptr"
STRUCTS = DATA / "struct_ptr.ptx"
SELECT = DATA / "select_ptr.ptx"
FORGET = DATA / "local_forget.ptx"
ALIAS = ("distinct pointer parameters and struct pointer fields ({}: buffers of their own, the launch giving no "
         "bytes for their struct) are assumed not to alias")


def _check(capsys, path, kernel, *argv):
    rc = main(["check", str(path), "--kernel", kernel, *argv, "--format", "json"])
    k = json.loads(capsys.readouterr().out)["kernels"][0]
    return rc, k, {o["id"]: o for o in k["obligations"]}


def _grid(*extra):
    return ("--grid", "2", "--block", "64", *extra)


# --------------------------------------------------------------------------- struct pointer fields


def test_struct_pointer_field_gets_a_buffer_sized_from_the_accesses_and_verifies(capsys):
    rc, k, by = _check(capsys, STRUCTS, "fill", *_grid())
    assert rc == 0 and k["verdict"] == "verified"
    race = by["race.global"]
    assert race["status"] == "proved" and race["checker"] == "races"
    assert "any addresses of A.p" in race["bound"]
    dl = by["deadlock"]
    assert dl["status"] == "bounded"
    assert dl["bound"].endswith("buffers sized to the kernel's accesses: A.p uint32[128]")
    assert by["memory"]["status"] == "vacuous"


def test_race_through_a_struct_pointer_is_violated_with_line_and_threads(capsys):
    rc, k, by = _check(capsys, STRUCTS, "fill_race", *_grid())
    o = by["race.global"]
    assert rc == 1 and k["verdict"] == "violated"
    assert o["status"] == "violated" and o["rule"] == "race.global"
    assert o["locations"][0]["line"] == 13 and o["locations"][0]["path"].endswith("struct_ptr.cu")
    assert o["message"] == ("lanes 0 and 1 of warp 0 (threads 0-31) of CTA (0,0,0) store different values to global "
                            "A.p in one instruction at struct_ptr.cu:13")
    # the replay names the struct's pointer field and its buffer
    launch = json.loads(o["counterexample"]["replay"].split("--launch ", 1)[1].strip("'"))
    assert launch["args"] == {"A": {"struct": {"0": {"ptr": "A.p"}}}}
    assert launch["buffers"] == {"A.p": {"dtype": "uint32", "shape": [1]}}
    # the SMT checker found it too, in the same buffer
    smt = o["counterexample"]["smt"]
    assert smt["kind"] == "write-write" and {a["buffer"] for a in smt["accesses"]} == {"A.p"}


def test_two_pointer_fields_are_two_buffers_assumed_not_to_alias(capsys):
    rc, k, by = _check(capsys, STRUCTS, "add_one", *_grid())
    assert rc == 0 and k["verdict"] == "verified"
    race = by["race.global"]
    assert race["status"] == "proved" and race["message"].endswith(ALIAS.format("A.in, A.out"))
    assert "any addresses of A.in, A.out" in race["bound"]
    assert by["deadlock"]["bound"].endswith("buffers sized to the kernel's accesses: A.in uint32[128], "
                                            "A.out uint32[128]")


def test_a_field_used_as_a_value_stays_a_scalar_free_for_the_proof_and_missing_for_the_run(capsys):
    m = load_module(str(STRUCTS))
    for kernel, ptr in (("first_n", 8), ("tagged", 8)):
        k = m.kernel(kernel)
        # the int n (first_n) and the 8-byte long tag (tagged, loaded with ld.param.u64) are not
        # addresses: only the pointer's slot is found, and the kernel reads other bytes
        assert struct_slots(m, k, LaunchSpec(kernel, (2, 1, 1), (64, 1, 1))) == \
            {0: {"pointers": [ptr], "other_bytes": True}}
    rc, k, by = _check(capsys, STRUCTS, "first_n", *_grid())
    # the interpreter does not run (no value for n); the checks without values decide the rest
    # for every value of the other bytes (verifier/uniform.py)
    assert rc == 0 and k["verdict"] == "verified"
    race = by["race.global"]
    assert race["status"] == "proved"
    assert "all values of the other bytes of A; any addresses of A.p" in race["bound"]
    assert by["deadlock"]["status"] == "proved"
    assert "all values of the other bytes of A" in by["deadlock"]["bound"]
    assert by["memory"]["status"] == "vacuous" and by["barrier.named"]["status"] == "vacuous"
    assert by["memory"]["message"].startswith("not applicable: buffers sized to the kernel's own accesses")


def test_struct_passed_by_value_to_a_device_function(capsys):
    rc, k, by = _check(capsys, STRUCTS, "through_call", *_grid())
    assert rc == 0 and k["verdict"] == "verified"
    assert by["deadlock"]["bound"].endswith("buffers sized to the kernel's accesses: A.p uint32[128]")


def test_local_copy_of_the_struct_changed_through_its_address(capsys):
    # nvcc keeps A in local memory; advance() adds to A.p through &A; the kernel loads it back
    rc, k, by = _check(capsys, STRUCTS, "local_copy", *_grid())
    assert rc == 0 and k["verdict"] == "verified"
    assert by["race.global"]["status"] == "proved"
    assert by["deadlock"]["bound"].endswith("buffers sized to the kernel's accesses: A.p uint32[256]")
    rc, k, by = _check(capsys, STRUCTS, "local_copy_race", *_grid())
    o = by["race.global"]
    assert rc == 1 and o["status"] == "violated" and o["rule"] == "race.global"
    assert o["locations"][0]["line"] == 48
    assert o["message"].startswith("write-after-write between lanes of one warp with no __syncwarp (bar.warp.sync) "
                                   "or barrier between them: write of global A.p+4 by thread 0 (warp 0, lane 0) of "
                                   "CTA (0,0,0) at struct_ptr.cu:48 and an access by thread 1")


def test_nested_struct_fields_are_named_from_the_gpuverify_style_source(capsys):
    rc, k, by = _check(capsys, DATA / "gv_fields.ptx", "_Z11copy_fields1S", *_grid())
    assert rc == 0 and k["verdict"] == "verified"
    assert k["display_name"] == "copy_fields(S)"
    assert by["race.global"]["message"].endswith(ALIAS.format("A.s.p, A.s.q"))
    assert by["deadlock"]["bound"].endswith("buffers sized to the kernel's accesses: A.s.p uint32[128], "
                                            "A.s.q uint32[128]")


@needs_nvcc
def test_gpuverify_test_with_struct_pointers_verifies_from_its_header(capsys):
    rc = main(["check", str(DATA / "gv_fields.cu"), "--format", "json"])
    k = json.loads(capsys.readouterr().out)["kernels"][0]
    assert rc == 0 and k["verdict"] == "verified"


def test_a_launch_that_gives_the_struct_is_used_as_given(capsys):
    launch = {"grid": [2], "block": [64], "args": {"A": {"struct": {"0": {"ptr": "x"}}}},
              "buffers": {"x": {"dtype": "int32", "shape": [1]}}}
    rc, k, by = _check(capsys, STRUCTS, "fill", "--launch", json.dumps(launch))
    # 128 threads write a 1-element buffer: out of bounds, not resized
    assert rc == 1 and by["memory"]["status"] == "violated" and by["memory"]["rule"] == "bounds"


# --------------------------------------------------------------------------- layouts and names


def _layout_names(tmp_path, source, psize, pointers):
    cu = tmp_path / "k.cu"
    cu.write_text(source)
    ptx = tmp_path / "k.ptx"
    ptx.write_text(f".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry _Z1k1S("
                   f".param .align 8 .b8 _Z1k1S_param_0[{psize}])\n{{\n\tret;\n}}\n\t.file\t1 \"k.cu\"\n")
    m = load_module(str(ptx))
    return struct_pointer_fields(m, m.kernels[0], {0: {"pointers": pointers}})


def test_field_names_follow_the_c_layout(tmp_path):
    src = ("struct In { char c; double *d; };\n"
           "struct S { int n; float *x[2]; struct In in; short s; int *tail; };\n"
           "__global__ void k(const S args) {}\n")
    # n at 0, x[0] at 8, x[1] at 16, in.c at 24, in.d at 32, s at 40, tail at 48; 56 bytes
    assert _layout_names(tmp_path, src, 56, [8, 16, 32, 48]) == \
        {0: {8: "x[0]", 16: "x[1]", 32: "in.d", 48: "tail"}}


def test_a_layout_that_does_not_match_the_parameter_names_nothing(tmp_path):
    src = "struct S { int *p; };\n__global__ void k(S a) {}\n"
    assert _layout_names(tmp_path, src, 16, [0]) == {}  # 8 bytes in the source, 16 in the PTX
    src = "union U { int *p; long v; };\nstruct S { union U u; };\n__global__ void k(S a) {}\n"
    assert _layout_names(tmp_path, src, 8, [0]) == {}


def test_fields_without_a_known_layout_are_named_by_offset():
    m = load_module(str(STRUCTS))
    k = m.kernel("add_one")
    spec = with_struct_pointers(k, LaunchSpec("add_one"), {0: {"pointers": [0, 8], "other_bytes": False}})
    assert spec.args == {"A": {"struct": {"0": {"ptr": "A+0"}, "8": {"ptr": "A+8"}}}}
    assert spec.struct_pointers == {"A": {"pointers": {0: "A+0", 8: "A+8"}, "other_bytes": False}}


def test_the_interpreter_has_no_value_for_unsized_struct_buffers_or_other_bytes():
    m = load_module(str(STRUCTS))
    k = m.kernel("first_n")
    spec = with_struct_pointers(k, LaunchSpec("first_n"), {0: {"pointers": [8], "other_bytes": True}},
                                {0: {8: "p"}})
    with pytest.raises(KernelError) as e:
        param_bytes(k, spec, {"A.p": (0, "int32", (128,))})
    assert "no value for parameter(s) A (its bytes besides the pointer field(s) A.p) of first_n" in e.value.message
    spec = with_struct_pointers(k, LaunchSpec("first_n"), {0: {"pointers": [8], "other_bytes": False}},
                                {0: {8: "p"}})
    with pytest.raises(KernelError) as e:
        param_bytes(k, spec, {})
    assert "no value for parameter(s) A (buffers for its pointer field(s) A.p) of first_n" in e.value.message


# --------------------------------------------------------------------------- pointers through local memory


def test_pointer_selected_by_a_scalar_through_local_memory_verifies(capsys):
    rc, k, by = _check(capsys, SELECT, "pick", "--grid", "1", "--block", "64", "--arg", "c=1")
    assert rc == 0 and k["verdict"] == "verified"
    assert by["race.global"]["status"] == "proved"
    assert by["deadlock"]["bound"].endswith("buffers sized to the kernel's accesses: A uint8[64], B uint8[64]")
    # without c the proof holds for every value of it (the interpreter has no value to run)
    rc, k, by = _check(capsys, SELECT, "pick", "--grid", "1", "--block", "64")
    assert rc == 3 and by["race.global"]["status"] == "proved"
    assert "all values of c; any addresses of A, B" in by["race.global"]["bound"]


def test_pointer_selected_through_local_memory_racy_twin_is_violated(capsys):
    rc, k, by = _check(capsys, SELECT, "pick_race", "--grid", "1", "--block", "64", "--arg", "c=0")
    o = by["race.global"]
    assert rc == 1 and o["status"] == "violated" and o["rule"] == "race.global"
    assert o["locations"][0]["line"] == 11
    assert o["message"] == ("lanes 0 and 1 of warp 0 (threads 0-31) of CTA (0,0,0) store different values to global "
                            "A in one instruction at select_ptr.cu:11")
    # for every value of c, by the SMT checker alone
    rc, k, by = _check(capsys, SELECT, "pick_race", "--grid", "1", "--block", "64")
    o = by["race.global"]
    assert rc == 1 and o["status"] == "violated" and o["checker"] == "races" and o["locations"][0]["line"] == 11


def test_pointer_selected_inline_is_one_access_per_buffer(capsys):
    rc, k, by = _check(capsys, SELECT, "pick_inline", "--grid", "1", "--block", "64")
    assert by["race.global"]["status"] == "proved"
    assert "all values of c; any addresses of A, B" in by["race.global"]["bound"]


@pytest.mark.parametrize("kernel", ["unknown_store", "one_arm", "in_loop"])
def test_a_kept_pointer_that_may_have_changed_is_not_followed(capsys, kernel):
    # each kernel stores A + 4*tid to its local slot; an unknown generic store, a store on one arm
    # only, or a loop that changes the slot: the proof may not rest on the stored value
    rc, k, by = _check(capsys, FORGET, kernel, "--grid", "1", "--block", "64")
    o = by["race.global"]
    assert o["status"] in ("unknown", "bounded")
    assert "the global buffer this address points into cannot be determined" in o["message"]
