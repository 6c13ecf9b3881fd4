"""Peek-then-wait (CUTLASS's consumer_try_wait + consumer_wait(state, token)): one non-blocking
mbarrier.try_wait whose failure falls back to the blocking retry loop on the same barrier and
phase is one blocking wait, so one run stands for every schedule (tests/zoo/peek_pipeline)."""
import json
from pathlib import Path

import time

import pytest

from kverify.launch import LaunchSpec

from kverify.semantics.ir import instructions, load_module, load_ptx, parse_ptx
from kverify.verifier.check import check_kernel
from kverify.semantics.ir.nodes import If

ZOO = Path(__file__).parent / "zoo" / "peek_pipeline"
MAN = {v["file"]: v for v in json.loads((ZOO / "manifest.json").read_text())["variants"]}


def _parse(body):
    src = (".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry j(.param .u32 a)\n{\n"
           " .reg .pred %p<4>;\n .reg .b32 %r<8>;\n ld.param.u32 %r1, [a];\n mov.u32 %r2, 0;\n"
           + body + " ret;\n}\n")
    return parse_ptx(src, "j.ptx").kernel()


PEEK = """ mbarrier.try_wait.parity.shared::cta.b64 %p1, [%r1], %r2;
 selp.b32 %r3, 1, 0, %p1;
{between} setp.ne.s32 %p2, %r3, 0;
 @%p2 bra $L_done;
$L_wait:
 mbarrier.try_wait.parity.shared::cta.b64 %p3, [%r1], {parity};
 @!%p3 bra $L_wait;
$L_done:
 st.shared.u32 [%r1+8], %r3;
"""


def _waits(k):
    return [i for i in instructions(k.body) if i.op == "mbarrier.try_wait"]


def test_peek_then_wait_is_one_blocking_wait():
    k = _parse(PEEK.format(between="", parity="%r2"))
    (w,) = _waits(k)
    assert w.blocking and w.operands[0].name == "%p1"
    assert not any(isinstance(s, If) for s in k.body)


@pytest.mark.parametrize("between, parity, why", [
    ("", "%r4", "the fallback waits on another phase register"),
    (" add.s32 %r2, %r2, 1;\n", "%r2", "the phase register is redefined between the peek and the fallback"),
    (" st.shared.u32 [%r1+16], %r2;\n", "%r2", "a store sits between the peek and the fallback"),
])
def test_peek_then_wait_is_not_folded_when_it_is_not_the_same_wait(between, parity, why):
    k = _parse(PEEK.format(between=between, parity=parity))
    waits = _waits(k)
    assert len(waits) == 2, why
    assert [w.blocking for w in waits] == [False, True], why


# CUTLASS's ClusterBarrier::wait as nvcc emits it: the suspend-time hint moved into a register
# inside the fallback branch, and the retry loop in its own inline-asm scope
PEEK_HINT = """ mbarrier.try_wait.parity.shared::cta.b64 %p1, [%r1], %r2;
 selp.b32 %r3, 1, 0, %p1;
 setp.ne.s32 %p2, %r3, 0;
 @%p2 bra $L_done;
{setup} {{
 .reg .pred P1;
 LAB_WAIT:
 mbarrier.try_wait.parity.shared::cta.b64 P1, [%r1], {parity}, %r5;
 @P1 bra DONE;
 bra LAB_WAIT;
 DONE:
 }}
$L_done:
 st.shared.u32 [%r1+8], {after};
"""


def test_peek_then_wait_with_a_suspend_time_hint_is_one_blocking_wait():
    k = _parse(PEEK_HINT.format(setup=" mov.u32 %r5, 10000000;\n", parity="%r2", after="%r3"))
    (w,) = _waits(k)
    assert w.blocking and w.operands[0].name == "%p1" and len(w.operands) == 3
    assert not any(isinstance(s, If) for s in k.body)


@pytest.mark.parametrize("setup, parity, after, why", [
    (" mov.u32 %r5, 10000000;\n", "%r2", "%r5", "the hint register is read after the wait"),
    (" mov.u32 %r5, 10000000;\n", "%r4", "%r3", "the fallback waits on another phase register"),
    (" mov.u32 %r2, 1;\n", "%r2", "%r3", "the fallback redefines the phase register"),
    (" st.shared.u32 [%r1+16], %r2;\n", "%r2", "%r3", "the fallback stores before it waits"),
])
def test_peek_then_wait_with_a_hint_is_not_folded_when_it_is_not_the_same_wait(setup, parity, after, why):
    k = _parse(PEEK_HINT.format(setup=setup, parity=parity, after=after))
    waits = _waits(k)
    assert len(waits) == 2, why
    assert [w.blocking for w in waits] == [False, True], why


def test_zoo_peek_pipeline_has_only_blocking_waits():
    k = load_ptx(ZOO / "peek_pipeline.ptx").kernel()
    waits = _waits(k)
    assert len(waits) == 2 and all(w.blocking for w in waits)


def _check(file):
    v = MAN[file]
    path = ZOO / file.replace(".cu", ".ptx")
    m = load_module(str(path))
    t = time.perf_counter()
    rep = check_kernel(m, m.kernel(v["kernel"]), LaunchSpec.from_dict(v["launch"]), path=str(path))
    return rep, v, time.perf_counter() - t


def test_correct_peek_pipeline_is_verified_by_one_run():
    rep, _, dt = _check("peek_pipeline.cu")
    assert rep.verdict == "verified"
    by = {o.title: o for o in rep.obligations}
    for t in ("mbarrier conformance", "deadlock-free", "memory safety"):
        assert by[t].status == "bounded" and "every schedule (one run" in by[t].bound, t
    # the pipeline argument (tests/test_pipeline_races.py) proves the stage accesses race-free for
    # every trip count
    assert by["race-free: async"].status == "proved"
    for t in ("parity (initial phase and alternation)", "tx bytes (per phase)", "arrivals (per phase)"):
        assert by[f"mbarrier conformance: {t}"].status == "proved", t
    assert dt < 10


@pytest.mark.parametrize("file, title, rule, line", [
    ("peek_pipeline__wrong_parity.cu", "mbarrier conformance: parity (initial phase and alternation)",
     "mbarrier.parity", 203),
    ("peek_pipeline__wrong_parity.cu", "race-free: async", "race.async-pending", 209),
    ("peek_pipeline__wrong_parity.cu", "deadlock-free", "deadlock", 203),
    ("peek_pipeline__missing_wait.cu", "race-free: async", "race.async-pending", 208),
    ("peek_pipeline__wait_group_too_shallow.cu", "race-free: async", "race.async-pending", 211),
])
def test_seeded_peek_pipeline_bugs_are_violated_with_rule_and_line(file, title, rule, line):
    rep, _, _ = _check(file)
    assert rep.verdict == "violated"
    ob = next(o for o in rep.obligations if o.title == title)
    assert ob.status == "violated" and ob.rule == rule
    assert line in {l.line for l in ob.locations}
