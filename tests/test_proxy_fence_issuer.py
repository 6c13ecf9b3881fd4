"""A fence.proxy.async in the issuing thread after the rendezvous, instead of in every writer
before it, orders the other threads' generic writes with the async-proxy access only through a
rule the ISA does not spell out ("takes effect within a single thread"): the warning
``race.async-proxy.issuer-fence``. The same fence before the barrier orders nothing of the
others: ``race.async-proxy`` (tests/data/proxy_fence, our tests/zoo/tma_store with the fence
moved)."""
from pathlib import Path

from kverify.verifier.cli import main

DATA = Path(__file__).parent / "data" / "proxy_fence"
LAUNCH = ["--grid", "1", "--block", "128", "--arg", "iters=4", "--arg", "in=2048:f32", "--arg", "out=2048:f32"]


def _check(capsys, name, *extra):
    rc = main(["check", str(DATA / f"{name}.ptx"), *LAUNCH, *extra])
    return rc, capsys.readouterr().out


def test_a_fence_in_the_issuer_after_the_barrier_is_a_warning(capsys):
    rc, out = _check(capsys, "issuer_fence")
    assert rc == 0, out
    assert "kernel tma_store: VERIFIED" in out
    assert ("tests/data/proxy_fence/issuer_fence.cu:48:7: warning[race.async-proxy.issuer-fence]: async-proxy read of a "
            "generic-proxy write ordered by a fence.proxy.async of the issuing thread only, not of the writer: async "
            "read of shared tile+128 by warp 0 (threads 0-31) of CTA (0,0,0)") in out
    assert "  warning   race-free: async" in out and "error[" not in out
    rc, out = _check(capsys, "issuer_fence", "--strict")
    assert rc == 1 and "error[race.async-proxy.issuer-fence]" in out


def test_a_fence_in_the_issuer_before_the_barrier_orders_nothing(capsys):
    rc, out = _check(capsys, "issuer_fence__before_barrier")
    assert rc == 1, out
    assert ("tests/data/proxy_fence/issuer_fence__before_barrier.cu:46:7: error[race.async-proxy]: async-proxy read of "
            "a generic-proxy write with no fence.proxy.async after the write: async read of shared tile+128") in out
