"""Constant memory read through a generic pointer (``cvta.const``, PTX ISA §9.7.9.21).

The kernel picks either an input buffer or a ``__constant__`` table and reads it with a
generic ``ld``; the constant table must be found through the const window, not at address 0.
"""
from pathlib import Path

import numpy as np

import kverify
from kverify.verifier.cli import main

DATA = Path(__file__).parent / "data" / "const_generic"


def test_generic_read_of_a_constant_table_returns_its_values():
    inp = np.arange(8, dtype=np.float32) + 1
    out = np.zeros(8, np.float32)
    r = kverify.run(str(DATA / "scale_by_table.ptx"), grid=1, block=8, args=(inp, out, 8, 1))
    assert r.findings == []
    np.testing.assert_array_equal(r.outputs["out"], inp * np.array([1, 2, 3, 4, 1, 2, 3, 4], np.float32))


def test_generic_pointer_to_the_input_still_reads_the_input():
    inp = np.arange(8, dtype=np.float32) + 1
    out = np.zeros(8, np.float32)
    r = kverify.run(str(DATA / "scale_by_table.ptx"), grid=1, block=8, args=(inp, out, 8, 0))
    assert r.findings == []
    np.testing.assert_array_equal(r.outputs["out"], inp * inp[np.arange(8) % 4])


def test_check_verifies_the_table_kernel(capsys):
    rc = main(["check", str(DATA / "scale_by_table.ptx"), "--grid", "1", "--block", "8",
               "--arg", "n=8", "--arg", "use_table=1"])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "kernel scale_by_table: VERIFIED" in out


def test_read_past_the_constant_table_is_a_bounds_finding(capsys):
    rc = main(["check", str(DATA / "scale_by_table__past_table.ptx"), "--grid", "1", "--block", "8",
               "--arg", "n=8", "--arg", "use_table=1"])
    out = capsys.readouterr().out
    assert rc == 1, out
    assert ("scale_by_table__past_table.cu:7:3: error[bounds]: const access of 4 bytes at offset 0x10 is "
            "outside the 16-byte constant bank (thread 4 (warp 0, lane 4)") in out
