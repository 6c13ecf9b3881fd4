"""Deliberately simple reference models, used only by the differential tests.

They share no code with the step functions (only the command classes, which are plain
data).  The mbarrier reference keeps the accepted history as an event log and recomputes
everything (phase, arrivals so far, net tx bytes, whether the last completed phase was
observed) by replaying the log from the last ``init``; it counts arrivals *up* to the
phase's target instead of counting pending *down*.  The named-barrier reference keeps, per
barrier id, the plain list of arrivals since its last reset.

The async-group reference numbers groups by commit index and keeps one flat record per
operation instead of a queue of group tuples.

All apply the checks in the order documented in the step-function modules, so that the
reported rule ids can be compared.
"""

from __future__ import annotations

from . import mbarrier as mb
from . import named_barrier as nb

MAX20 = 2**20 - 1


class RefMbarrier:
    """mbarrier as an event log (layout v0 limits)."""

    def __init__(self) -> None:
        self.log: list[tuple] = []

    # -- replay -------------------------------------------------------------------------
    def replay(self) -> dict:
        live = False
        phase = arrived = target = expected = net_tx = 0
        last_completion = -1
        last_true_wait = -1
        for i, ev in enumerate(self.log):
            kind = ev[0]
            if kind == "init":
                live, phase, arrived, target, expected, net_tx = True, 0, 0, ev[1], ev[1], 0
                last_completion = last_true_wait = -1
                continue
            if kind == "inval":
                live = False
                continue
            if kind == "wait-true":
                last_true_wait = i
                continue
            if kind == "arrive":
                _, count, tx, drop = ev
                net_tx += tx
                if drop:
                    expected -= count
                arrived += count
            elif kind == "tx":
                net_tx += ev[1]
            elif kind == "inc":
                target += 1
            if arrived == target and net_tx == 0:
                phase, arrived, target, net_tx = phase + 1, 0, expected, 0
                last_completion = i
        return {
            "initialized": live,
            "phase": phase,
            "pending": target - arrived,
            "expected": expected,
            "tx": net_tx,
            "observed": last_completion == -1 or last_true_wait > last_completion,
        }

    # -- commands -----------------------------------------------------------------------
    def apply(self, cmd) -> tuple[str | None, object]:
        """Returns (violated rule id or None, instruction value)."""
        v = self.replay()
        if isinstance(cmd, mb.Init):
            if v["initialized"]:
                return "mbarrier.reinit", None
            if cmd.count < 1 or cmd.count > MAX20:
                return "mbarrier.init-count", None
            self.log.append(("init", cmd.count))
            return None, None
        if not v["initialized"]:
            return "mbarrier.uninitialized", None
        if isinstance(cmd, mb.Inval):
            self.log.append(("inval",))
            return None, None
        if isinstance(cmd, mb.Arrive):
            if cmd.count < 1 or cmd.count > MAX20:
                return "mbarrier.arrive-count", None
            if cmd.expect_tx < 0 or cmd.expect_tx > MAX20:
                return "mbarrier.tx-range", None
            if not v["observed"]:
                return "mbarrier.parity", None
            if cmd.drop and v["expected"] - cmd.count <= 0:
                return "mbarrier.arrival-overflow", None
            if cmd.count > v["pending"]:
                return "mbarrier.arrival-overflow", None
            if v["tx"] + cmd.expect_tx > MAX20:
                return "mbarrier.tx-range", None
            if cmd.no_complete and cmd.count == v["pending"] and v["tx"] + cmd.expect_tx == 0:
                return "mbarrier.no-complete", None
            self.log.append(("arrive", cmd.count, cmd.expect_tx, cmd.drop))
            return None, (None if cmd.remote else v["phase"])
        if isinstance(cmd, (mb.ExpectTx, mb.CompleteTx)):
            if cmd.bytes < 0 or cmd.bytes > MAX20:
                return "mbarrier.tx-range", None
            delta = cmd.bytes if isinstance(cmd, mb.ExpectTx) else -cmd.bytes
            if abs(v["tx"] + delta) > MAX20:
                return "mbarrier.tx-range", None
            self.log.append(("tx", delta))
            return None, None
        if isinstance(cmd, mb.CpAsyncArriveIssue):
            if not cmd.noinc:
                if v["pending"] + 1 > MAX20:
                    return "mbarrier.arrival-overflow", None
                self.log.append(("inc",))
            return None, None
        if isinstance(cmd, mb.TestWait):
            if cmd.remote:
                return "mbarrier.remote-wait", None
            phase = v["phase"]
            named = cmd.state_phase if cmd.state_phase is not None else cmd.waiter_phase
            if named is not None and named not in (phase, phase - 1):
                return "mbarrier.parity", None
            if named is not None:
                done = named < phase
            else:
                # the most recent phase with this parity is the preceding one or the current one
                done = (phase - 1) % 2 == cmd.parity
            result = done and not cmd.timed_out
            if result:
                self.log.append(("wait-true",))
            return None, result
        raise TypeError(cmd)


class RefNamedBarriers:
    """Named barriers as lists of arrivals since the last reset of each id."""

    def __init__(self, cta_threads: int) -> None:
        self.cta_threads = cta_threads
        self.lists: dict[int, list[dict]] = {i: [] for i in range(16)}

    def blocked(self) -> set:
        return {a["warp"] for lst in self.lists.values() for a in lst if a["kind"] != "arrive"}

    def apply(self, cmd) -> tuple[str | None, tuple | None]:
        """Returns (rule id or None, released warps if the barrier completed else None),
        or ("not-enabled", None) for a blocked warp."""
        if cmd.warp in self.blocked():
            return "not-enabled", None
        if cmd.bar_id not in range(16):
            return "barrier.named-id", None
        kind = {nb.Sync: "sync", nb.Arrive: "arrive", nb.Red: "red"}[type(cmd)]
        if cmd.count is None:
            count = self.cta_threads
        else:
            limit = ((self.cta_threads + 31) // 32) * 32
            if cmd.count <= 0 or cmd.count % 32 or cmd.count > limit:
                return "barrier.named-count", None
            count = cmd.count
        lst = self.lists[cmd.bar_id]
        if any(a["warp"] == cmd.warp for a in lst):
            return "barrier.named-reuse", None
        op = getattr(cmd, "op", None)
        if lst:
            first = lst[0]
            if (first["kind"] == "red") != (kind == "red") or first["op"] != op:
                return "barrier.named-reuse", None
            if first["count"] != count:
                return "barrier.named-count", None
        lst.append({"warp": cmd.warp, "kind": kind, "count": count,
                    "threads": cmd.warp_threads, "op": op, "value": getattr(cmd, "value", None)})
        if sum(a["threads"] for a in lst) >= count:
            released = tuple(sorted(a["warp"] for a in lst if a["kind"] != "arrive"))
            self.lists[cmd.bar_id] = []
            return None, released
        return None, None


class RefGroups:
    """Async-operation groups as flat records numbered by commit index (bulk semantics
    when ``bulk``: separate read completion)."""

    def __init__(self) -> None:
        self.records: list[dict] = []  # op, group (None = uncommitted), done, read, retired
        self.commits = 0
        self.retired_groups = 0  # groups 0 .. retired_groups-1 are retired

    def live(self) -> list[dict]:
        return [r for r in self.records if not r["retired"]]

    def issue(self, op) -> str | None:
        if any(r["op"] == op for r in self.live()):
            return "not-enabled"
        self.records.append({"op": op, "group": None, "done": False, "read": False,
                             "retired": False})
        return None

    def commit(self) -> None:
        for r in self.live():
            if r["group"] is None:
                r["group"] = self.commits
        self.commits += 1

    def complete(self, op, read_only: bool = False) -> str | None:
        for r in self.live():
            if r["op"] == op:
                if r["done"] or (read_only and r["read"]):
                    return "not-enabled"
                r["read"] = True
                if not read_only:
                    r["done"] = True
                return None
        return "not-enabled"

    def wait(self, n: int, read: bool = False):
        """Returns ("async-group.wait-range", None), ("blocked", missing) or
        ("ok", covered ops in issue order)."""
        if n < 0:
            return "async-group.wait-range", None
        upto = max(self.commits - n, self.retired_groups)
        covered = [r for r in self.live() if r["group"] is not None and r["group"] < upto]
        key = "read" if read else "done"
        missing = [r["op"] for r in covered if not r[key]]
        if missing:
            return "blocked", tuple(missing)
        if not read:
            for r in covered:
                r["retired"] = True
            self.retired_groups = upto
        return "ok", tuple(r["op"] for r in covered)
