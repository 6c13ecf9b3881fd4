"""The static mbarrier checker (verifier.mbarrier.static: SMT over one symbolic thread) against
the interpreter (the mbarrier step function over every thread of one launch) on generated
single-CTA pipelines.

Each program: thread 0 initializes S mbarriers with count N; a loop of K iterations uses
barrier ``k % S``; threads ``tid < T`` post ``arrive.expect_tx`` of B bytes, threads
``tid < C`` issue a ``cp.async.bulk`` of B' bytes signalling it, then every thread waits with
a parity that follows the barrier's phase, flips every iteration or never flips, and the CTA
meets at ``bar.sync 0``.

The property (per obligation O of parity, tx bytes, arrivals):

* O proved -> the run has no finding of O's rule (``mbarrier.parity``,
  ``mbarrier.tx-mismatch``, ``mbarrier.arrival-overflow``), and all three proved -> the run
  completes with no mbarrier finding and no deadlock;
* a finding of O's rule -> O is not proved; a deadlock -> not all three are proved.

The obligations are modular: tx bytes and arrivals are stated per phase, assuming the waits
wait for the phase they name (the parity obligation). Once the checker reports a violation,
the run's later findings can be consequences of it (a wait that does not wait lets the next
iteration's arrivals land on a pending phase), so the first bullet is not asserted for the
other obligations of a kernel with a violated one. The initial parity is 0 in the generated
programs except in ``test_first_wait_on_parity_one_is_violated``, where the first wait names
parity 1 and returns at once on the fresh barrier.
"""
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kverify.launch import LaunchSpec
from kverify.semantics.interpreter import run_kernel
from kverify.semantics.ir import parse_ptx
from kverify.verifier.mbarrier import check_mbarrier

RULES = {"parity": "mbarrier.parity", "tx bytes": "mbarrier.tx-mismatch", "arrivals": "mbarrier.arrival-overflow"}
BLOCK = 64


def program(n_init, stages, arrivers, tx_bytes, issuers, copy_bytes, iters, parity, parity0=0):
    """PTX of the pipeline described in the module docstring; ``parity``: ``phase`` (the
    barrier's phase: ``(k / S) & 1``), ``iteration`` (``k & 1``) or ``constant``."""
    par = {"phase": f"div.u32 \t%r12, %r10, {stages};\n\tand.b32 \t%r12, %r12, 1;",
           "iteration": "and.b32 \t%r12, %r10, 1;",
           "constant": "mov.u32 \t%r12, 0;"}[parity]
    inits = "\n".join(f"\tadd.u32 \t%r5, %r3, {8 * s};\n\tmbarrier.init.shared::cta.b64 [%r5], %r4;"
                      for s in range(stages))
    return f"""
.version 8.0
.target sm_90a
.address_size 64
.visible .entry gen(
\t.param .u64 gen_param_0
)
.reqntid {BLOCK}, 1, 1
{{
\t.reg .pred \t%p<8>;
\t.reg .b32 \t%r<32>;
\t.reg .b64 \t%rd<8>;
\t.shared .align 128 .b8 stage[512];
\t.shared .align 8 .b8 full[{8 * stages}];
\tld.param.u64 \t%rd1, [gen_param_0];
\tcvta.to.global.u64 \t%rd2, %rd1;
\tmov.u32 \t%r1, %tid.x;
\tmov.u32 \t%r3, full;
\tsetp.ne.s32 \t%p1, %r1, 0;
\t@%p1 bra \t$L_init_done;
\tmov.u32 \t%r4, {n_init};
{inits}
\tfence.mbarrier_init.release.cluster;
$L_init_done:
\tbar.sync \t0;
\tmov.u32 \t%r10, 0;
$L_loop:
\trem.u32 \t%r13, %r10, {stages};
\tmad.lo.u32 \t%r14, %r13, 8, %r3;
\t{par}
\txor.b32 \t%r12, %r12, {parity0};
\tsetp.ge.u32 \t%p2, %r1, {arrivers};
\t@%p2 bra \t$L_no_arrive;
\tmov.u32 \t%r6, {tx_bytes};
\tmbarrier.arrive.expect_tx.shared::cta.b64 _, [%r14], %r6;
$L_no_arrive:
\tsetp.ge.u32 \t%p3, %r1, {issuers};
\t@%p3 bra \t$L_no_copy;
\tmov.u32 \t%r7, stage;
\tmad.lo.u32 \t%r8, %r1, {copy_bytes}, %r7;
\tmov.u32 \t%r9, {copy_bytes};
\tcp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r8], [%rd2], %r9, [%r14];
$L_no_copy:
\t{{
\t.reg .pred p;
\tLAB_WAIT:
\tmbarrier.try_wait.parity.shared::cta.b64 p, [%r14], %r12;
\t@!p bra LAB_WAIT;
\t}}
\tbar.sync \t0;
\tadd.s32 \t%r10, %r10, 1;
\tsetp.lt.s32 \t%p4, %r10, {iters};
\t@%p4 bra \t$L_loop;
\tret;
}}
"""


SPEC = {"kernel": "gen", "grid": [1, 1, 1], "block": [BLOCK, 1, 1],
        "buffers": {"gen_param_0": {"dtype": "uint8", "shape": [1024]}}}


def verdicts(**kw):
    """(static status per obligation, interpreter run) for one generated program."""
    module = parse_ptx(program(**kw), "gen.ptx")
    kernel = module.kernel("gen")
    spec = LaunchSpec.from_dict(SPEC)
    static = {o.title.split(": ", 1)[1].split(" (")[0]: o.status for o in check_mbarrier(module, kernel, spec, timeout_s=20)}
    return static, run_kernel(module, kernel, spec)


def disagreements(static, run) -> list:
    """The ways ``static`` and ``run`` contradict the property of the module docstring (one
    condition covers both directions of each bullet)."""
    rules = run.rules()
    out = []
    violated = {k for k, s in static.items() if s == "violated"}
    for what, rule in RULES.items():
        if static[what] == "proved" and rule in rules and not violated:
            out.append(f"{what} proved but the run finds {rule}")
    if all(s == "proved" for s in static.values()):
        bad = sorted(r for r in rules if r.startswith("mbarrier.") or r == "deadlock")
        if bad or run.status != "complete":
            out.append(f"all obligations proved but the run ends {run.status} with {bad}")
    return out


@st.composite
def programs(draw):
    """Pipelines whose arrivals and tx bytes match or not (each about half the time), with the
    barriers reused (more iterations than stages) or not."""
    kw = {"n_init": draw(st.integers(1, 3)), "stages": draw(st.integers(1, 3)),
          "tx_bytes": draw(st.sampled_from([16, 32, 64])), "issuers": draw(st.integers(1, 2)),
          "parity": draw(st.sampled_from(["phase", "iteration", "constant"]))}
    kw["iters"] = draw(st.integers(1, 2)) * kw["stages"] + draw(st.integers(0, 1))  # barriers reused or not
    kw["arrivers"] = kw["n_init"] if draw(st.booleans()) else draw(st.integers(1, 3))
    if draw(st.booleans()):  # the copies deliver what the arrivals announce
        total = kw["arrivers"] * kw["tx_bytes"]
        kw["issuers"] = kw["issuers"] if total % kw["issuers"] == 0 else 1
        kw["copy_bytes"] = total // kw["issuers"]
    else:
        kw["copy_bytes"] = draw(st.sampled_from([16, 32, 64]))
    return kw


@pytest.mark.slow
@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_static_obligations_agree_with_the_interpreter(kw):
    static, run = verdicts(**kw)
    assert run.status in ("complete", "deadlock"), run.reason
    assert not disagreements(static, run), (kw, static, run.status, sorted(run.rules()))


def test_matching_pipeline_is_proved_and_runs_clean():
    static, run = verdicts(n_init=2, stages=2, arrivers=2, tx_bytes=32, issuers=2, copy_bytes=32, iters=4,
                           parity="phase")
    assert static == {"parity": "proved", "tx bytes": "proved", "arrivals": "proved"}
    assert run.status == "complete" and not {r for r in run.rules() if r.startswith("mbarrier.")}


@pytest.mark.parametrize("change, what", [
    ({"parity": "constant"}, "parity"),
    ({"copy_bytes": 16}, "tx bytes"),
    ({"n_init": 1}, "arrivals"),
])
def test_each_seeded_mismatch_is_found_by_both(change, what):
    kw = dict(n_init=2, stages=1, arrivers=2, tx_bytes=32, issuers=2, copy_bytes=32, iters=3, parity="phase")
    static, run = verdicts(**{**kw, **change})
    assert static[what] == "violated"
    assert run.rules() & {RULES[what], "deadlock"}


@pytest.mark.parametrize("stages", [1, 3])
def test_first_wait_on_parity_one_is_violated(stages):
    """A consumer whose first wait names parity 1 passes the fresh barrier at once and runs
    ahead of the copies: the static check alone reports it, at the wait, in iteration 0."""
    kw = dict(n_init=1, stages=stages, arrivers=1, tx_bytes=64, issuers=1, copy_bytes=64, iters=2 * stages,
              parity="phase", parity0=1)
    static, run = verdicts(**kw)
    assert static["parity"] == "violated"
    assert not disagreements(static, run), (static, sorted(run.rules()))
    ptx = program(**kw)
    module = parse_ptx(ptx, "gen.ptx")
    ob = check_mbarrier(module, module.kernel("gen"), LaunchSpec.from_dict(SPEC), timeout_s=20)[0]
    wait_line = next(i for i, ln in enumerate(ptx.splitlines(), 1) if "mbarrier.try_wait" in ln)
    assert ob.rule == "mbarrier.parity" and [l.line for l in ob.locations] == [wait_line]
    assert ob.counterexample["iterations"][0] < stages and ob.counterexample["expected_parity"] == 0
    assert "first use" in ob.message and "returns at once" in ob.message


def test_first_wait_on_parity_zero_is_proved_with_its_role():
    module = parse_ptx(program(n_init=1, stages=3, arrivers=1, tx_bytes=64, issuers=1, copy_bytes=64, iters=6,
                               parity="phase"), "gen.ptx")
    obs = {o.title.split(": ", 1)[1].split(" (")[0]: o for o in check_mbarrier(module, module.kernel("gen"),
                                                                   LaunchSpec.from_dict(SPEC), timeout_s=20)}
    assert obs["parity"].status == "proved"
    assert "first use parity 0 (consumer of the fill" in obs["parity"].message


def test_the_property_runs_in_bounded_time():
    t = time.perf_counter()
    verdicts(n_init=3, stages=3, arrivers=3, tx_bytes=64, issuers=2, copy_bytes=64, iters=4, parity="phase")
    assert time.perf_counter() - t < 10
