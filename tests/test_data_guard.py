"""A release guarded by data (tests/data/data_guard/arrive_on_data.cu: a consumer warp arrives on the
empty barrier only while its wgmma accumulator is not NaN). The static arrivals count takes an arrive
site's remaining condition as given; one that reads approximated values (the accumulator) may skip the
arrive in some iterations, so the obligation is not proved for every value (it was), and the
interpreter finds the hang once the inputs hold a NaN."""
import json
from pathlib import Path

import numpy as np

from kverify.verifier.cli import main

D = Path(__file__).parent / "data" / "data_guard"


def _check(capsys, tmp_path, nan):
    argv = ["check", str(D / "arrive_on_data.ptx"), "--launch", str(D / "launch.json"), "--format", "json"]
    if nan:
        a = np.zeros((8, 1024), np.float16)
        a[0, 0] = np.nan
        np.savez(tmp_path / "in.npz", a_tiles=a)
        argv += ["--inputs", str(tmp_path / "in.npz")]
    rc = main(argv)
    k = json.loads(capsys.readouterr().out)["kernels"][0]
    return rc, k, {o["title"]: o for o in k["obligations"]}


def test_arrivals_guarded_by_data_are_not_proved(capsys, tmp_path):
    rc, k, by = _check(capsys, tmp_path, nan=False)
    o = by["mbarrier conformance: arrivals (per phase)"]
    assert o["status"] == "bounded"
    assert "arrive_on_data.cu:195:9 (ptx 328): whether its threads arrive depends on values the encoding " \
           "approximates" in o["message"] and "a phase may get none of its arrivals" in o["message"]
    assert by["mbarrier conformance: tx bytes (per phase)"]["status"] == "proved"


def test_a_nan_in_the_inputs_hangs_the_producer(capsys, tmp_path):
    rc, k, by = _check(capsys, tmp_path, nan=True)
    o = by["deadlock-free"]
    assert rc == 1 and (o["status"], o["rule"], o["locations"][0]["line"]) == ("violated", "deadlock", 185)
    assert "--inputs" in o["counterexample"]["replay"]
