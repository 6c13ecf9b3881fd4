"""The registers of an in-flight wgmma, statically (kverify/verifier/races/wgmma_regs.py): the
pipeline race argument's pairs are about shared memory, and it proved "race-free: async" for a
ring whose consumer read an accumulator between the commit and the retiring wait_group
(tests/data/wgmma_ring/wgmma_ring__acc_read_before_wait.cu) while the run found the access
(race.async-pending). The argument now asks the register dataflow first; the group discipline
is tested on tests/data/wgmma_regs/regs.ptx."""
import json
from pathlib import Path

import pytest

from kverify.launch import LaunchSpec
from kverify.semantics.ir import load_module
from kverify.verifier.check import check_kernel
from kverify.verifier.races.pipeline import check_pipeline_races
from kverify.verifier.races.wgmma_regs import hazards

DATA = Path(__file__).resolve().parent / "data"
REGS = load_module(str(DATA / "wgmma_regs" / "regs.ptx"))


@pytest.mark.parametrize("kernel,regs", [
    ("retired", []), ("newest_kept", [("%f5",)]), ("empty_group_counts", []), ("uncommitted", [("%f1",)]),
    ("guarded_wait", [("%f1",)]), ("loop_tail", [("%f1",)]), ("loop_tail_waited", []), ("read_in_loop", [("%f1",)]),
    ("deeper_than_pending", [("%f1",), ("%f5",)]),  # wait_group N with fewer than N groups pending retires none
])
def test_group_discipline(kernel, regs):
    hz = hazards(REGS.kernel(kernel))
    assert [h.registers for h in hz] == regs
    assert all(h.access.opcode == "st.global.f32" and h.wgmma.opcode.startswith("wgmma.mma_async") for h in hz)


def test_an_accumulator_read_before_the_wait_is_not_proved():
    spec = LaunchSpec.from_dict(json.loads((DATA / "wgmma_ring" / "launch.json").read_text()))
    m = load_module(str(DATA / "wgmma_ring" / "wgmma_ring__acc_read_before_wait.ptx"))
    o = {o.title: o for o in check_pipeline_races(m, "wgmma_ring", spec)}["race-free: async"]
    assert o.status == "unknown"
    assert o.message == ("pipeline argument: the mov.f32 at wgmma_ring__acc_read_before_wait.cu:192:9 (ptx 343) may "
                         "access %f58 of the wgmma at wgmma_ring__acc_read_before_wait.cu:189:9 (ptx 333) before a "
                         "wgmma.wait_group retires it (§9.7.15.7: undefined while the wgmma is in flight)")
    rep = check_kernel(m, m.kernel("wgmma_ring"), spec)
    run = {o.title: o for o in rep.obligations}["race-free: async"]
    assert run.status == "violated" and run.rule == "race.async-pending"
    assert [l.line for l in run.locations][:1] == [192]
    assert "checker pipeline proved" not in run.message  # no disagreement: nothing was proved


def test_the_correct_ring_still_proves_and_says_so():
    spec = LaunchSpec.from_dict(json.loads((DATA / "wgmma_ring" / "launch.json").read_text()))
    m = load_module(str(DATA / "wgmma_ring" / "wgmma_ring.ptx"))
    o = {o.title: o for o in check_pipeline_races(m, "wgmma_ring", spec)}["race-free: async"]
    assert o.status == "proved", o.message
    assert o.message.endswith("; no instruction but the wgmma family touches an in-flight wgmma's registers before "
                              "the wgmma.wait_group that retires it")
