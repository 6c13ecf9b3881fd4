"""An atomic's result used as an index (``j = atomicAdd(c, k); out[j] = ...``): the race checker's
refinements of the value an ``atom.add`` returns (``kverify/verifier/races/atomics.py``). A ticket
counter (the same nonzero constant increment, the only write of its address, one execution per
thread, few enough executions not to wrap) proves race freedom and says so; an increment of 0 or
of tid races under an order of the atomics, named in the counterexample with the values returned;
what is not a ticket counter (increment tid + 1, another write of the counter, exch, cas, an
increment that wraps for the launch) stays unknown. tests/data/atomic_index/tickets.cu is our own;
its .ptx is nvcc 13's output (regenerated and compared where nvcc is on PATH)."""
import json
import subprocess
from pathlib import Path

import pytest

from kverify.launch import LaunchSpec
from kverify.semantics.ir import load_module
from kverify.verifier.cli import main
from kverify.verifier.races.smt import check_races

DATA = Path(__file__).resolve().parent / "data" / "atomic_index"
PTX = DATA / "tickets.ptx"


def _global(kernel, grid=2, block=64):
    spec = LaunchSpec.from_dict({"kernel": kernel, "grid": [grid, 1, 1], "block": [block, 1, 1]})
    return check_races(load_module(str(PTX)), kernel, launch=spec)[1]


@pytest.mark.parametrize("kernel, line, k", [("ticket", 6, 1), ("ticket_down", 12, -1)])
def test_a_ticket_counter_proves_the_indexed_stores_race_free(kernel, line, k):
    o = _global(kernel)
    assert o.status == "proved", o.message
    assert (f"assuming atom.add at line {line} is a ticket counter: the only write of its address, increment {k} "
            f"for every thread, at most 128 executions on one address (the launch's 128 threads x 1 per thread; "
            f"127 x 1 < 2^32), so two threads' results on one address differ by a nonzero multiple of 1") in o.message


def test_the_ticket_bound_comes_from_the_launch():
    # increment 2^31: two executions differ, a third wraps around to the first value
    o = _global("ticket_half", grid=1, block=2)
    assert o.status == "proved" and "at most 2 executions on one address" in o.message
    assert "1 x 2147483648 < 2^32" in o.message
    o = _global("ticket_half", grid=1, block=3)
    assert o.status == "unknown" and "ticket counter" not in o.message


@pytest.mark.parametrize("kernel, line", [("add_zero", 19), ("add_tid", 25)])
def test_an_increment_of_zero_or_tid_races_under_an_order_of_the_atomics(kernel, line):
    o = _global(kernel)
    assert (o.status, o.rule) == ("violated", "race.global"), o.message
    assert [loc.line for loc in o.locations] == [line, line]
    ce = o.counterexample
    (at,) = ce["atomics"]
    assert at["location"] == f"line {line - 1}"
    assert at["returned"]["A"] == at["returned"]["B"] == 0  # the initial value 0, asked for first
    assert [a["offset"] for a in ce["accesses"]] == [0, 0]
    a, b = ce["threads"]
    first = a if at["first"] == "A" else b
    if kernel == "add_tid":  # the thread that adds its tid first must add 0
        assert first["tid"] == [0, 0, 0]
    t = lambda th: f"tid=({','.join(map(str, th['tid']))}) ctaid=({','.join(map(str, th['ctaid']))})"
    assert o.message.endswith(f"atom.add at line {line - 1} returned 0 to {t(a)} and 0 to {t(b)} (the address's "
                              f"initial value 0; {t(first)}'s atomic first, then {t(b if first is a else a)}'s)")


@pytest.mark.parametrize("kernel", ["add_tid_plus_one", "ticket_reset", "exch_index", "cas_index"])
def test_what_is_not_a_ticket_counter_stays_unknown(kernel):
    o = _global(kernel)
    assert o.status == "unknown", o.message
    assert "is possible for values the encoding over-approximates" in o.message
    assert "ticket counter" not in o.message


def test_a_write_of_another_element_of_the_counters_buffer_keeps_the_ticket():
    o = _global("ticket_neighbour")
    assert o.status == "proved", o.message
    assert "atom.add at line 46 is a ticket counter" in o.message


def test_check_reports_the_race_with_the_atomic_values(capsys):
    rc = main(["check", str(PTX), "--kernel", "add_zero", "--grid", "1", "--block", "2", "--format", "json"])
    k = json.loads(capsys.readouterr().out)["kernels"][0]
    by = {o["id"]: o for o in k["obligations"]}
    assert rc == 1 and by["race.global"]["status"] == "violated" and by["race.global"]["rule"] == "race.global"
    assert by["race.global"]["counterexample"]["atomics"][0]["returned"] == {"A": 0, "B": 0}
    # the ticket: race-free: global proved, the rest needs buffers (out's extent is the counter's value)
    rc = main(["check", str(PTX), "--kernel", "ticket", "--grid", "1", "--block", "2", "--format", "json"])
    k = json.loads(capsys.readouterr().out)["kernels"][0]
    by = {o["id"]: o for o in k["obligations"]}
    assert by["race.global"]["status"] == "proved" and rc == 3
    assert by["memory"]["status"] == "unknown"


def test_committed_ptx_is_what_nvcc_writes(tmp_path):
    if subprocess.run(["which", "nvcc"], capture_output=True).returncode:
        pytest.skip("nvcc not on PATH")
    subprocess.run(["nvcc", "-arch=sm_90a", "-lineinfo", "-ptx", "-o", str(tmp_path / "f.ptx"), "tickets.cu"],
                   check=True, capture_output=True, cwd=DATA)
    body = lambda t: [l.split("//")[0].strip() for l in t.split(".section\t.debug_str")[0].splitlines()
                      if l.strip() and not l.strip().startswith((".file", "//"))]
    assert body(PTX.read_text()) == body((tmp_path / "f.ptx").read_text())


def test_a_floating_point_add_is_not_a_ticket_counter():
    # atom.add.f32 with a subnormal increment: flushed to zero, every thread gets the same result and
    # all of them store to one element (the increment's bit pattern, 1, was taken for an integer)
    o = _global("ticket_float", grid=64, block=256)
    assert o.status == "unknown", o.message
    assert "ticket counter" not in o.message
