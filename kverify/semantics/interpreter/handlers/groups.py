"""Async-group instructions: cp.async.commit_group/wait_group/wait_all and
cp.async.bulk.commit_group/wait_group on the async-group protocols (§9.7.9.25.3-4); the
wait helpers the wgmma family shares.
"""
from __future__ import annotations

from kverify.semantics.memory_model.protocols import async_groups as AG

from ..hb import join
from ..state import Wait
from .common import registry, yield_once

HANDLERS, handler = registry()


@handler("cp.async.commit_group")
def h_cp_async_commit(m, w, ins, mask):
    w.cp_async = AG.cp_async_step(w.cp_async, AG.CommitGroup()).state


@handler("cp.async.wait_group", "cp.async.wait_all")
def h_cp_async_wait(m, w, ins, mask):
    cmd = AG.WaitAll() if ins.row.sync == "cp.async.wait_all" else AG.WaitGroup(int(m.val(w, ins.operands[0], 32)))
    return group_wait(m, w, ins, "cp_async", AG.cp_async_step, cmd)


def group_wait(m, w, ins, attr, step, cmd):
    w.last_group_wait[attr] = ins.loc
    out = step(getattr(w, attr), cmd)
    if out.violation is not None:
        m.report(out.violation.rule, out.violation.message, [ins.loc])
        return None
    eff = out.effects[0] if out.effects else ("none",)
    if eff[0] == "blocked":
        return _group_wait_gen(m, w, ins, attr, step, cmd)
    setattr(w, attr, out.state)
    _acquire_ops(m, w, eff)
    return yield_once()


def _group_wait_gen(m, w, ins, attr, step, cmd):
    def ready():
        out = step(getattr(w, attr), cmd)
        return not (out.effects and out.effects[0][0] == "blocked")

    def describe():
        out = step(getattr(w, attr), cmd)
        missing = out.effects[0][1] if out.effects and out.effects[0][0] == "blocked" else ()
        return (f"waits in {ins.opcode} for {len(missing)} operation(s): "
                + "; ".join(m.agents[a] for a in list(missing)[:3]))

    yield Wait("group", ready, describe, ins)
    out = step(getattr(w, attr), cmd)
    setattr(w, attr, out.state)
    if out.effects:
        _acquire_ops(m, w, out.effects[0])


def _acquire_ops(m, w, eff):
    if eff[0] in ("wait-satisfied", "read-wait-satisfied"):
        for agent in eff[1]:
            op = m.ops_by_agent.get(agent)
            if op is not None:
                w.vc = join(w.vc, op.vc)
            w.wgmma_regs.pop(agent, None)


@handler("cp.async.bulk.commit_group")
def h_bulk_commit(m, w, ins, mask):
    w.bulk = AG.bulk_group_step(w.bulk, AG.CommitGroup()).state


@handler("cp.async.bulk.wait_group")
def h_bulk_wait(m, w, ins, mask):
    cmd = AG.WaitGroup(int(m.val(w, ins.operands[0], 32)), read="read" in ins.mods)
    return group_wait(m, w, ins, "bulk", AG.bulk_group_step, cmd)
