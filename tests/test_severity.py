"""Severity tiers (kverify.rules): a warning-tier finding is printed with its tier, carried in
the JSON and SARIF, and leaves the verdict and exit code alone; --strict makes it an error.
The kernel of our own: tests/data/warp_mbarrier/warp_mbarrier__all_lanes_init.ptx (the
warp_mbarrier kernel with its tid.x == 0 guard removed: all 32 lanes run the same
mbarrier.init); its twin ..._counts gives each lane its own count (mbarrier.reinit, an error)."""
import json
import os
import subprocess
import sys
from pathlib import Path


import kverify.semantics.memory_model.protocols.mbarrier  # noqa: F401  (defines its rules)
from kverify.rules import RULES, severity
from kverify.verifier.report import KernelReport, Obligation, kernel_verdict

ROOT = Path(__file__).resolve().parent.parent
D = ROOT / "tests" / "data" / "warp_mbarrier"
LAUNCH = ["--block", "32", "--arg", "in=32:f32", "--arg", "out=32:f32"]


def kv(*args):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "kverify", *args], capture_output=True, text=True, env=env,
                          timeout=300)


def test_tiers_in_the_rule_table():
    assert RULES["mbarrier.init-replicated"].severity == "warning"
    assert RULES["mbarrier.reinit"].severity == "error"
    assert severity("mbarrier.init-replicated") == "warning"
    assert severity("mbarrier.init-replicated", strict=True) == "error"
    assert severity("mbarrier.reinit", strict=True) == "error"


def test_verdict_follows_errors_only():
    warn = Obligation("mbarrier conformance", "interpreter", "violated", "m", rule="mbarrier.init-replicated")
    ok = Obligation("deadlock-free", "interpreter", "bounded")
    assert warn.severity() == "warning" and warn.severity(strict=True) == "error"
    assert kernel_verdict([warn, ok]) == "verified"
    assert kernel_verdict([warn, ok], strict=True) == "violated"
    err = Obligation("mbarrier conformance", "interpreter", "violated", "m", rule="mbarrier.reinit")
    assert kernel_verdict([warn, err]) == "violated"
    unk = Obligation("memory safety", "interpreter", "unknown", "why")
    assert kernel_verdict([warn, unk]) == "inconclusive"
    rep = KernelReport("k", "k.ptx", [warn, ok])
    d = rep.to_json()
    assert d["verdict"] == "verified" and d["obligations"][0]["severity"] == "warning"
    assert d["obligations"][1]["severity"] is None


def test_all_lanes_init_is_a_warning_exit_0():
    p = kv("check", str(D / "warp_mbarrier__all_lanes_init.ptx"), *LAUNCH)
    assert p.returncode == 0, p.stdout + p.stderr
    first = p.stdout.splitlines()[0]
    assert first.startswith("tests/data/warp_mbarrier/warp_mbarrier.cu:8:3: warning[mbarrier.init-replicated]: "
                            "mbarrier.init of bar of CTA (0,0,0) with count 32 executed by 32 lanes") or \
        ": warning[mbarrier.init-replicated]: mbarrier.init of bar of CTA (0,0,0) with count 32 executed by 32 lanes" \
        in first, first
    assert "kernel warp_mbarrier(const float*, float*): VERIFIED" in p.stdout
    assert "  warning   mbarrier conformance: bar" in p.stdout
    # the rest of the exploration went on: every other obligation holds
    assert "  bounded   deadlock-free" in p.stdout and "  bounded   race-free: shared" in p.stdout


def test_strict_turns_the_warning_into_an_error_exit_1():
    p = kv("check", str(D / "warp_mbarrier__all_lanes_init.ptx"), *LAUNCH, "--strict", "--format", "json")
    assert p.returncode == 1, p.stdout + p.stderr
    k = json.loads(p.stdout)["kernels"][0]
    assert k["verdict"] == "violated"
    f = [f for f in k["findings"] if f["rule"] == "mbarrier.init-replicated"]
    assert len(f) == 1 and f[0]["severity"] == "error" and f[0]["locations"][0]["line"] == 8
    p = kv("check", str(D / "warp_mbarrier__all_lanes_init.ptx"), *LAUNCH, "--format", "json")
    k = json.loads(p.stdout)["kernels"][0]
    assert p.returncode == 0 and k["verdict"] == "verified"
    assert [f["severity"] for f in k["findings"]] == ["warning"]
    o = {o["id"]: o for o in k["obligations"]}
    assert o["mbarrier.protocol"]["status"] == "violated" and o["mbarrier.protocol"]["severity"] == "warning"
    assert o["deadlock"]["status"] == "bounded"


def test_sarif_level_follows_the_tier():
    from kverify.verifier.report import Finding, Location
    from kverify.verifier.sarif import sarif

    f = Finding("mbarrier.init-replicated", "m", [Location("k.cu", 8, 3)])
    rep = KernelReport("k", "k.ptx", [], [f])
    assert [r["level"] for r in sarif([rep])["runs"][0]["results"]] == ["warning"]
    rep.strict = True
    assert [r["level"] for r in sarif([rep])["runs"][0]["results"]] == ["error"]


def test_per_lane_counts_stay_an_error():
    """The twin: each lane inits the barrier with its own count (32 + lane): re-initializing a
    valid mbarrier with another count is mbarrier.reinit, an error."""
    p = kv("check", str(D / "warp_mbarrier__all_lanes_init_counts.ptx"), *LAUNCH)
    assert p.returncode == 1, p.stdout + p.stderr
    assert ": error[mbarrier.reinit]: mbarrier.init on a valid mbarrier without mbarrier.inval" in p.stdout
    assert "warning[mbarrier.init-replicated]" not in p.stdout


def test_api_strict():
    import kverify

    import numpy as np

    args = dict(grid=1, block=32, args=(np.arange(32, dtype=np.float32), np.zeros(32, np.float32)))
    rep = kverify.check(str(D / "warp_mbarrier__all_lanes_init.ptx"), **args)
    assert rep.verdict == "verified" and rep.exit_code == 0
    rep = kverify.check(str(D / "warp_mbarrier__all_lanes_init.ptx"), strict=True, **args)
    assert rep.verdict == "violated" and rep.exit_code == 1


S = ROOT / "tests" / "data" / "split_named_barrier"
SPLIT = ["--block", "64", "--arg", "split_named_barrier_param_0=32:u32"]


def test_split_aligned_named_barrier_is_a_warning():
    """Warp 0 and warp 1 complete one instance of `bar.sync 15, 64` from two different
    instructions (ThunderKittens' producer/consumer branches): a warning; the data passed
    through the barrier is race-free; exit 0."""
    p = kv("check", str(S / "split_named_barrier.ptx"), *SPLIT)
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.splitlines()[0].startswith(
        "tests/data/split_named_barrier/split_named_barrier.ptx:29:1: warning[barrier.aligned-split]: one instance "
        "of barrier 15 was completed by different .aligned barrier instructions at ptx line 29, ptx line 32")
    assert "kernel split_named_barrier: VERIFIED" in p.stdout
    assert "  warning   named-barrier conformance" in p.stdout and "  bounded   race-free: shared" in p.stdout
    assert kv("check", str(S / "split_named_barrier.ptx"), *SPLIT, "--strict").returncode == 1


def test_split_barrier_twin_with_a_write_after_the_barrier_is_an_error():
    p = kv("check", str(S / "split_named_barrier__write_after.ptx"), *SPLIT, "--format", "json")
    assert p.returncode == 1
    k = json.loads(p.stdout)["kernels"][0]
    sev = {(f["rule"], f["locations"][0]["line"]): f["severity"] for f in k["findings"]}
    assert sev[("race.shared", 29)] == "error" and sev[("barrier.aligned-split", 28)] == "warning"
    assert k["verdict"] == "violated"
