"""Happens-before bookkeeping of one launch: vector clocks and the race shadow of memory.

Agents are warps (a warp's lanes execute in program order; PTX orders different warps only
through synchronization) and asynchronous operations (each bulk copy, TMA copy, cp.async
and wgmma is an agent whose single event is its completion). A vector clock is a numpy
``int64`` array indexed by agent; entries past its end are 0.

Ordering edges (PTX ISA §8 memory consistency model, as used by the sync protocols):
  * ``bar.sync``/``barrier.sync``/``bar.red``: every arriving warp releases into the barrier
    instance, every waiting warp acquires it when the instance completes (§9.7.13.1);
    ``bar.arrive`` releases only.
  * mbarrier: arrive-on operations and complete-tx of async copies release into the current
    phase; a wait that observes the phase complete acquires it (§9.7.13.15).
  * group waits (``cp.async.wait_group``, ``cp.async.bulk.wait_group[.read]``,
    ``wgmma.wait_group``) acquire the completions of the operations they cover.
  * async proxy (§8.6 proxies): a generic-proxy access and an async-proxy access of the same
    bytes are ordered only when, besides happens-before, the generic side executed
    ``fence.proxy.async`` after its access (writes before an async read, reads before an
    async write).

The shadow keeps per byte: the last write (agent, clock, lane, location, proxy), the async
operation in flight writing or reading it, the last completed async reader, and the reads
since the last write: per warp of the CTA for shared memory (dense), the last reader for
global memory.
"""
from __future__ import annotations

import numpy as np

GENERIC, ASYNC = 0, 1


def vget(vc: np.ndarray, agents: np.ndarray) -> np.ndarray:
    """``vc[agents]`` with 0 past the end and for agent -1."""
    agents = np.asarray(agents)
    out = np.zeros(agents.shape, np.int64)
    ok = (agents >= 0) & (agents < len(vc))
    out[ok] = vc[agents[ok]]
    return out


def join(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if len(a) < len(b):
        a, b = b, a
    out = a.copy()
    out[: len(b)] = np.maximum(out[: len(b)], b)
    return out


def tick(vc: np.ndarray, agent: int) -> np.ndarray:
    if agent >= len(vc):
        vc = np.concatenate([vc, np.zeros(agent + 1 - len(vc), np.int64)])
    vc[agent] += 1
    return vc


class Conflict:
    """One racing pair found by a shadow check (before it becomes a finding)."""

    __slots__ = ("rule", "kind", "byte", "other_agent", "other_lane", "other_loc", "mine_lane")

    def __init__(self, rule, kind, byte, other_agent, other_lane, other_loc, mine_lane=-1):
        self.rule, self.kind, self.byte = rule, kind, byte
        self.other_agent, self.other_lane, self.other_loc = other_agent, other_lane, other_loc
        self.mine_lane = mine_lane


class Shadow:
    """Race shadow of one memory region, byte granularity."""

    def __init__(self, nbytes: int, space: str, dense_agents: np.ndarray | None = None):
        n = max(nbytes, 1)
        self.space = space
        self.race_rule = "race.shared" if space == "shared" else "race.global"
        self.w_agent = np.full(n, -1, np.int32)
        self.w_clk = np.zeros(n, np.int64)
        self.w_lane = np.zeros(n, np.int8)
        self.w_loc = np.zeros(n, np.int32)
        self.w_proxy = np.zeros(n, np.int8)
        self.pend_w = np.full(n, -1, np.int32)
        self.pend_r = np.full(n, -1, np.int32)
        self.pend_r_loc = np.zeros(n, np.int32)
        self.pend_w_loc = np.zeros(n, np.int32)
        self.ra_agent = np.full(n, -1, np.int32)
        self.ra_loc = np.zeros(n, np.int32)
        self.dense = dense_agents is not None
        if self.dense:
            self.agents = np.asarray(dense_agents, np.int64)  # agent of each column
            self.r_clk = np.zeros((n, len(self.agents)), np.int64)
            self.r_loc = np.zeros((n, len(self.agents)), np.int32)
        else:
            self.r_agent = np.full(n, -1, np.int32)
            self.r_clk1 = np.zeros(n, np.int64)
            self.r_lane = np.zeros(n, np.int8)
            self.r_loc1 = np.zeros(n, np.int32)
        self.uninit = np.ones(n, bool) if space in ("shared", "local") else None

    # ------------------------------------------------------------------ checks
    def _first(self, bad, idx, lanes):
        i = int(np.flatnonzero(bad)[0])
        return i, int(idx[i]), (int(lanes[i]) if lanes is not None else -1)

    def check_read(self, idx, agent, vc, fence_clk, lanes=None, proxy=GENERIC):
        """Conflicts of a read of bytes ``idx`` by ``agent`` with clock ``vc``."""
        out = []
        pw = self.pend_w[idx]
        bad = pw >= 0
        if bad.any():
            i, b, ln = self._first(bad, idx, lanes)
            out.append(Conflict("race.async-pending", "read of a destination of an in-flight async copy",
                                b, int(pw[i]), -1, int(self.pend_w_loc[b]), ln))
        wa = self.w_agent[idx]
        bad = (wa >= 0) & (wa != agent) & (vget(vc, wa) < self.w_clk[idx])
        if bad.any():
            i, b, ln = self._first(bad, idx, lanes)
            rule = "race.async-pending" if self.w_proxy[b] == ASYNC else self.race_rule
            kind = ("read before the completion of the async write is observed" if rule == "race.async-pending"
                    else "read-after-write, not ordered")
            out.append(Conflict(rule, kind, b, int(wa[i]), int(self.w_lane[b]), int(self.w_loc[b]), ln))
        elif proxy == ASYNC:
            gen = (wa >= 0) & (self.w_proxy[idx] == GENERIC) & (vget(fence_clk, wa) < self.w_clk[idx])
            if gen.any():
                i, b, ln = self._first(gen, idx, lanes)
                out.append(Conflict("race.async-proxy",
                                    "async-proxy read of a generic-proxy write with no fence.proxy.async "
                                    "after the write", b, int(wa[i]), int(self.w_lane[b]), int(self.w_loc[b]), ln))
        return out

    def check_write(self, idx, agent, vc, fence_clk, lanes=None, proxy=GENERIC):
        out = []
        for pend, ploc, what in ((self.pend_w, self.pend_w_loc, "write to a destination of an in-flight async copy"),
                                 (self.pend_r, self.pend_r_loc, "overwrite of bytes an in-flight async operation still reads")):
            p = pend[idx]
            bad = (p >= 0) & (p != agent)
            if bad.any():
                i, b, ln = self._first(bad, idx, lanes)
                out.append(Conflict("race.async-pending", what, b, int(p[i]), -1, int(ploc[b]), ln))
        ra = self.ra_agent[idx]
        bad = (ra >= 0) & (ra != agent) & (vget(vc, ra) < 1)
        if bad.any():
            i, b, ln = self._first(bad, idx, lanes)
            out.append(Conflict("race.async-pending",
                                "overwrite of bytes an async operation read, before its completion is observed",
                                b, int(ra[i]), -1, int(self.ra_loc[b]), ln))
        wa = self.w_agent[idx]
        bad = (wa >= 0) & (wa != agent) & (vget(vc, wa) < self.w_clk[idx])
        if bad.any():
            i, b, ln = self._first(bad, idx, lanes)
            rule = "race.async-pending" if (self.w_proxy[b] == ASYNC or proxy == ASYNC) else self.race_rule
            out.append(Conflict(rule, "write-after-write, not ordered", b, int(wa[i]), int(self.w_lane[b]),
                                int(self.w_loc[b]), ln))
        if self.dense:
            rc = self.r_clk[idx]  # (k, W)
            mine = self.agents == agent
            unordered = (rc > vget(vc, self.agents)[None, :]) & ~mine[None, :]
            if unordered.any():
                i, j = map(int, np.argwhere(unordered)[0])
                b = int(idx[i])
                rule = "race.async-pending" if proxy == ASYNC else self.race_rule
                out.append(Conflict(rule, "write-after-read, not ordered", b, int(self.agents[j]), -1,
                                    int(self.r_loc[b, j]), int(lanes[i]) if lanes is not None else -1))
            elif proxy == ASYNC:
                unfenced = (rc > 0) & (rc > vget(fence_clk, self.agents)[None, :]) & ~mine[None, :]
                if unfenced.any():
                    i, j = map(int, np.argwhere(unfenced)[0])
                    b = int(idx[i])
                    out.append(Conflict("race.async-proxy",
                                        "async-proxy write over a generic-proxy read with no fence.proxy.async "
                                        "after the read", b, int(self.agents[j]), -1, int(self.r_loc[b, j])))
        else:
            ra = self.r_agent[idx]
            bad = (ra >= 0) & (ra != agent) & (vget(vc, ra) < self.r_clk1[idx])
            if bad.any():
                i, b, ln = self._first(bad, idx, lanes)
                out.append(Conflict(self.race_rule, "write-after-read, not ordered", b, int(ra[i]),
                                    int(self.r_lane[b]), int(self.r_loc1[b]), ln))
        return out

    # ------------------------------------------------------------------ records
    def record_read(self, idx, agent, clk, loc, lanes=None, column=None):
        if self.dense:
            if column is None:
                return
            self.r_clk[idx, column] = clk
            self.r_loc[idx, column] = loc
        else:
            self.r_agent[idx] = agent
            self.r_clk1[idx] = clk
            self.r_loc1[idx] = loc
            if lanes is not None:
                self.r_lane[idx] = lanes

    def record_write(self, idx, agent, clk, loc, lanes=None, proxy=GENERIC):
        self.w_agent[idx] = agent
        self.w_clk[idx] = clk
        self.w_loc[idx] = loc
        self.w_proxy[idx] = proxy
        if lanes is not None:
            self.w_lane[idx] = lanes
        self.ra_agent[idx] = -1
        if self.dense:
            self.r_clk[idx] = 0
        else:
            self.r_agent[idx] = -1
        if self.uninit is not None:
            self.uninit[idx] = False
