"""kverify equiv fails closed on what its symbolic walk cannot see: an access outside the buffer
its address comes from, a non-coherent load (``ld.global.nc``) of a buffer the kernel writes; and
a ``--shapes`` or launch spec that does not bind what it names is bad input (exit 2)."""
from pathlib import Path

import pytest

from conftest import ZOO
from kverify.verifier.cli import main
from kverify.verifier.equivalence import check_pair, load_side

DATA = Path(__file__).resolve().parent / "data" / "equiv_fail_closed"
VADD = str(ZOO / "vadd" / "vadd.ptx")


def _pair(name, cand, model):
    ptx, launch = str(DATA / f"{name}.ptx"), str(DATA / f"{name}.json")
    return check_pair(load_side(ptx, launch, {}, cand), load_side(ptx, launch, {}, "ref"), model,
                      test_on_unknown=False)


def test_the_reference_pairs_are_proved():
    assert _pair("oob_alias", "ref", "real").verdict == "proved"
    assert _pair("ldg_written", "ref", "bitexact").verdict == "proved"


@pytest.mark.parametrize("model", ["real", "bitexact"])
def test_a_load_past_the_end_of_its_own_buffer_is_unknown_not_a_read_of_the_next(model):
    # a[i + 512] with a of 256 floats: 1024 bytes past a, where a layout with red zones puts b
    r = _pair("oob_alias", "past_a", model)
    if model == "bitexact":  # the interpreter's witness sees it too (and refutes first)
        assert r.verdict == "refuted"
        return
    assert r.verdict == "unknown"
    assert r.message == ("symbolic execution stopped (unsupported): a global load of 4 bytes at 0x10000800 is "
                         "outside a, the buffer its address is derived from (1024 bytes past its end) at "
                         "oob_alias.cu:11")


def test_a_load_past_a_buffer_chosen_at_run_time_lands_in_no_buffer():
    # p = n > 0 ? a : b (selp): no single parameter derives p; the walk's buffers lie far apart
    r = _pair("oob_alias", "past_chosen", "bitexact")
    assert r.verdict == "unknown"
    assert r.message == ("symbolic execution stopped (unsupported): a global load of 4 bytes at 0x10000800 is "
                         "outside every buffer (1024 bytes past the end of a) at oob_alias.cu:17")


def test_a_non_coherent_load_of_a_buffer_the_kernel_writes_is_unknown():
    r = _pair("ldg_written", "ldg_written", "bitexact")
    assert r.verdict == "unknown"
    assert r.message == ("symbolic execution stopped (unsupported): ld.global.nc.f32 reads c through the "
                         "non-coherent path, and this kernel also writes c (the path is for data read-only for the "
                         "whole kernel: the load may return stale values) at ldg_written.cu:14")


def test_a_non_coherent_load_of_a_read_only_buffer_is_proved():
    assert _pair("ldg_written", "ldg_read_only", "bitexact").verdict == "proved"


def test_a_non_coherent_load_of_a_written_buffer_is_inconclusive_on_the_command_line(capsys, tmp_path):
    ptx = str(DATA / "ldg_written.ptx")
    rc = main(["equiv", ptx, ptx, "--kernel", "ldg_written", "--ref-kernel", "ref", "--launch",
               str(DATA / "ldg_written.json"), "--fp", "bitexact", "--tests", "1", "--cex-dir", str(tmp_path)])
    out = capsys.readouterr().out
    assert rc == 3 and "INCONCLUSIVE" in out and "through the non-coherent path" in out


@pytest.mark.parametrize("shapes, message", [
    ("N=256,768", "--shapes N: the launch {t} has no arg or symbol N (it has n)"),
    ("n=768;n=256", "--shapes n: given twice (give each name once: n=V1,V2,...)"),
    ("=3", "--shapes expects NAME=V1,V2,...[;NAME=...], got '=3'"),
])
def test_shapes_that_do_not_name_one_launch_arg_each_are_usage_errors(capsys, shapes, message):
    t = str(DATA / "vadd_template.json")
    rc = main(["equiv", VADD, VADD, "--launch", t, "--fp", "bitexact", "--shapes", shapes])
    cap = capsys.readouterr()
    assert rc == 2 and cap.out == ""
    assert cap.err.strip() == "<command line>:1:1: " + message.format(t=t)


def test_shapes_naming_the_launch_arg_run_every_shape(capsys):
    rc = main(["equiv", VADD, VADD, "--launch", str(DATA / "vadd_template.json"), "--fp", "bitexact",
               "--shapes", "n=256,768"])
    out = capsys.readouterr().out
    assert rc == 0 and "equivalence[n=256]" in out and "equivalence[n=768]" in out


@pytest.mark.parametrize("model", ["real", "bitexact"])
def test_a_launch_spec_without_a_parameter_value_is_bad_input(capsys, model):
    spec = str(DATA / "vadd_no_n.json")
    rc = main(["equiv", VADD, VADD, "--launch", spec, "--fp", model])
    cap = capsys.readouterr()
    assert rc == 2 and cap.out == ""
    assert cap.err.strip() == (f"{spec}:1:1: launch spec: no value for parameter(s) n of vadd (give them in "
                               f"\"args\", \"buffers\" or \"tensormaps\")")
