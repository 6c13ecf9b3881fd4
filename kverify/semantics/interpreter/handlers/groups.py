"""Async-group instructions: cp.async.commit_group/wait_group/wait_all and
cp.async.bulk.commit_group/wait_group on the async-group protocols (§9.7.9.25.3-4); the
wait helpers the wgmma family shares.
"""
from __future__ import annotations

from kverify.semantics.memory_model.protocols import async_groups as AG

from ..async_ops import READ_DONE
from ..state import Wait, on_change
from .common import registry, yield_once

HANDLERS, handler = registry()


@handler("cp.async.commit_group")
def h_cp_async_commit(m, w, ins, mask):
    m.step(w.cp_async, AG.CommitGroup(), ins, w.describe())


@handler("cp.async.wait_group", "cp.async.wait_all")
def h_cp_async_wait(m, w, ins, mask):
    cmd = AG.WaitAll() if ins.row.sync == "cp.async.wait_all" else AG.WaitGroup(int(m.val(w, ins.operands[0], 32)))
    return group_wait(m, w, ins, "cp_async", cmd)


def group_wait(m, w, ins, attr, cmd):
    """A wait on the warp's ``attr`` groups (cp_async | bulk | wgmma): blocks until the
    protocol lets it pass, then acquires the completed operations."""
    w.last_group_wait[attr] = ins.loc
    obj = getattr(w, attr)
    out = obj.protocol.step(obj.state, cmd)
    if out.violation is not None:
        m.step(obj, cmd, ins, w.describe())
        return None
    if out.has("blocked"):
        return _group_wait_gen(m, w, ins, obj, cmd, attr)
    out = m.step(obj, cmd, ins, w.describe())
    _acquire_ops(m, w, ins, attr, out.effects[0] if out.effects else ("none",))
    return yield_once()


def _group_wait_gen(m, w, ins, obj, cmd, attr):
    def missing():
        return AG.waiting_for(obj.protocol.step(obj.state, cmd))

    def describe():
        left = missing()
        return (f"waits in {ins.opcode} for {len(left)} operation(s): "
                + "; ".join(m.agents[a] for a in list(left)[:3]))

    yield Wait("group", on_change(obj, lambda: not missing()), describe, ins)
    out = m.step(obj, cmd, ins, w.describe())
    if out.effects:
        _acquire_ops(m, w, ins, attr, out.effects[0])


GROUPS = {"cp_async": "cp.async groups", "bulk": "bulk async-groups", "wgmma": "wgmma groups"}


def _acquire_ops(m, w, ins, attr, eff):
    """The wait acquires the completions of the operations it covers."""
    if eff[0] in ("wait-satisfied", "read-wait-satisfied"):
        for agent in eff[1]:
            op = m.ops_by_agent.get(agent)
            if op is not None:
                vc = op.vc
                if eff[0] == "read-wait-satisfied" and vc[agent] > READ_DONE:
                    vc = vc.copy()  # the source reads observed, not the writes
                    vc[agent] = READ_DONE
                rel = [m.trace.completion(op, f"completion of {op.instr.opcode}", int(vc[agent]))] \
                    if m.trace is not None else None
                m.acquire(w, vc, ins, GROUPS[attr], releases=rel)
                if attr == "wgmma" and op.done:  # every warp of the warpgroup acquired it: no wait will again
                    op.acquired_by.add(w.index)
                    if len(op.acquired_by) == 4:
                        op.drop_clock()
            w.wgmma_regs.pop(agent, None)


@handler("cp.async.bulk.commit_group")
def h_bulk_commit(m, w, ins, mask):
    m.step(w.bulk, AG.CommitGroup(), ins, w.describe())


@handler("cp.async.bulk.wait_group")
def h_bulk_wait(m, w, ins, mask):
    cmd = AG.WaitGroup(int(m.val(w, ins.operands[0], 32)), read="read" in ins.mods)
    return group_wait(m, w, ins, "bulk", cmd)
