"""Atomics are morally strong only when each one's scope contains the other's thread (PTX ISA 8.7):
.cta atomics of two CTAs race, .cluster atomics of two clusters race; wider ones do not."""
import json
import subprocess
import sys

import pytest

from conftest import ROOT

D = ROOT / "tests" / "data" / "scoped_atomics"


def check(name, *launch):
    r = subprocess.run([sys.executable, "-m", "kverify", "check", str(D / name), "--format", "json", *launch],
                       cwd=ROOT, capture_output=True, text=True)
    (k,) = json.loads(r.stdout)["kernels"]
    return r.returncode, k["verdict"], {o["title"]: o for o in k["obligations"]}


@pytest.mark.parametrize("name, launch, code, title, status, line", [
    # a membar makes the SMT checker give up: the run's atomics of two CTAs were never a race
    ("ctaatom_fence.ptx", ["--grid", "2", "--block", "32"], 1, "race-free: global", "violated", 18),
    ("ctaatom_fence_ok.ptx", ["--grid", "2", "--block", "32"], 0, "race-free: global", "proved", None),
    # distributed shared memory: only the run decides (verified before: atomics never raced)
    ("dsatom_cta_bug.ptx", ["--grid", "2", "--block", "64"], 1, "race-free: shared", "violated", 19),
    ("dsatom_cluster_ok.ptx", ["--grid", "2", "--block", "64"], 0, "race-free: shared", "bounded", None),
    # .cluster atomics within one cluster: no race (the SMT checker reported CTAs 0 and 1)
    ("clatom.ptx", ["--grid", "2", "--block", "32", "--cluster", "2"], 0, "race-free: global", "proved", None),
    ("clatom.ptx", ["--grid", "4", "--block", "32", "--cluster", "2"], 1, "race-free: global", "violated", 18),
])
def test_atomic_scopes(name, launch, code, title, status, line):
    rc, verdict, obs = check(name, *launch, "--arg", "p_out=4:u32")
    o = obs[title]
    assert (rc, o["status"]) == (code, status), o
    if line:
        assert o["rule"] == "race.global" if "global" in title else "race.shared"
        assert o["locations"][0]["line"] == line
    if status == "proved" and name == "clatom.ptx":
        assert "cluster 2x1x1 (the launch's)" in o["bound"]
