"""Deadlock: when every live warp of a cluster is blocked, the finding that says what each
waits for, which asynchronous operations are still in flight, and the wait-for graph
(blocked warp -> the barrier it waits on -> the warps that could still arrive).
"""
from __future__ import annotations

from kverify.semantics.ir.nodes import where as _fmt_loc
from kverify.semantics.memory_model.execution import DEADLOCK


def report_deadlock(m, blocked):
    """Report the deadlock of a cluster whose live warps are all blocked: what each waits for,
    the copies still in flight, and the wait-for graph."""
    lines = []
    locs = []
    for w in blocked:
        desc = w.wait.describe() if w.wait else "is not blocked"
        lines.append(f"{w.describe()} {desc}")
        if w.wait and w.wait.instr is not None and w.wait.instr.loc not in locs:
            locs.append(w.wait.instr.loc)
    for w in blocked:
        for info in getattr(w.wait, "mbars", ()):
            m.mbar_quiescent(info)
            for l in list(info.arrive_locs)[:3]:
                if l not in locs:
                    locs.append(l)
    for c in {id(w.cta): w.cta for w in blocked}.values():
        for x in c.warps:
            if x.done and getattr(x, "last_loc", None) is not None:
                lines.append(f"{x.describe()} exited after {_fmt_loc(x.last_loc)}")
                locs.append(x.last_loc)
    pending = [f"{op.kind} issued at {_fmt_loc(op.instr.loc)} (waiting for "
               f"{'all four warps of the warpgroup' if op.kind == 'wgmma' else 'nothing'})"
               for op in m.inflight]
    msg = "every live warp is blocked:\n  " + "\n  ".join(lines)
    if pending:
        msg += "\n  in flight: " + "; ".join(pending)
    msg += "\n  wait-for: " + wait_for(blocked)
    m.report(DEADLOCK.id, msg, locs[:8], waits=lines)
    m.status = "deadlock"
    m.reason = f"{len(blocked)} warp(s) blocked forever"


def wait_for(blocked) -> str:
    """The wait-for graph (networkx): blocked warp -> the barrier it waits on -> the warps
    that arrive on that barrier. A cycle is a circular wait between roles; without one,
    the missing arrivals can only come from warps that exited (roles disagree on the
    number of rounds) or never arrive."""
    import networkx as nx  # only when a run deadlocks: its import costs a tenth of a second

    g = nx.DiGraph()
    for w in blocked:
        for info in getattr(w.wait, "mbars", ()):
            g.add_edge(("warp", w.describe()), ("mbarrier", info.name))
            for a in sorted(info.arrivers, key=lambda x: (x.cta.rank, x.index)):
                g.add_edge(("mbarrier", info.name), ("warp", a.describe()))
        bar = getattr(w.wait, "barrier", None)
        if bar is not None:
            cta, bid = bar
            g.add_edge(("warp", w.describe()), ("barrier", f"barrier {bid} of {cta.describe()}"))
            for a in cta.warps:
                if a not in blocked or a is w:
                    continue
                g.add_edge(("barrier", f"barrier {bid} of {cta.describe()}"), ("warp", a.describe()))
    exited = sorted({n[1] for n in g.nodes if n[0] == "warp" and any(
        x.describe() == n[1] and x.done for c in {id(b.cta): b.cta for b in blocked}.values() for x in c.warps)})
    if exited:
        return ("the missing arrivals were expected from " + ", ".join(exited) +
                ", which exited (the roles disagree on the number of rounds or arrivals)")
    try:
        cyc = nx.find_cycle(g)
        return "circular wait: " + " -> ".join(n[1] for n, _ in cyc) + f" -> {cyc[0][0][1]}"
    except nx.NetworkXNoCycle:
        pass
    return "no circular wait: no warp arrives on what the blocked warps wait for"
