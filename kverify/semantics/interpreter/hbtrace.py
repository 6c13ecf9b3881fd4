"""Which synchronization orders each pair of conflicting accesses of a run: ``kverify audit``'s
evidence. Off unless ``Machine.trace`` is set (``HBTrace``); the race checks of ``kverify check``
never pay for it (one ``is not None`` test per access and per synchronization step).

The race shadow (``hb``) decides, for every access, whether the earlier conflicting accesses of
the same bytes happen before it (their agent's clock entry is covered by the accessor's vector
clock). This module says *why*: for each access site, the earlier conflicting access sites it was
ordered after (line, warp, proxy, instruction) and the edge that ordered them.

What is recorded while the run goes on:
  * the releases into each synchronization instance (a named-barrier instance, an mbarrier phase,
    a cluster-barrier phase): the releasing agent (a warp, or an asynchronous copy whose
    complete-tx releases into an mbarrier phase), its own clock, the trace time, the instruction;
  * per warp, every acquire that raised an entry of its vector clock (``Machine.acquire``, the one
    place a warp joins another clock): per entry raised, the values in the order raised, each with
    its acquire record (instruction, object, phase or instance, and the releases that went into it;
    a group wait's releases are the completions of the operations it covers; a strong read's the
    release clock of the write it observed);
  * per asynchronous operation, its issues (the warp and its clock at the issue; a wgmma has four);
  * per warp, its ``fence.proxy.async`` (own clock, instruction);
  * per access site, the ordered pairs found (bounded: ``SITE_PAIRS`` distinct explanations per
    site, each with its first instance and a count).

How the edge of one ordered pair is found (access B by agent ``b`` after access A by agent ``a``
at ``a``'s clock ``c``): if ``b == a``, program order. If ``b`` is an asynchronous operation,
through the first of its issues whose warp was already ordered after A. Else the first acquire of
``b`` that raised its entry ``a`` to ``>= c`` is the acquiring half (bisection over the values
raised); of the releases it took, the first whose releaser was already ordered after A at the
release (the releaser is ``a`` with its own clock ``>= c``, or its own first such acquire came
before the release, or it is an asynchronous operation whose clock covers A) is the releasing
half; the releaser's own ordering after A is found the same way, up to ``MAX_HOPS`` edges. For a
generic-proxy access A before an async-proxy access B (§8.6 proxies, the condition the race
shadow checks), the first ``fence.proxy.async`` of A's warp after A is named too (role ``fence``),
else one of B's issuing warp after it was ordered after A (role ``issuer-fence``: the warning
``race.async-proxy.issuer-fence``), else the pair is ``proxy-unordered``: ordered by
happens-before but not for the async proxy (the finding ``race.async-proxy``). Fences are looked
up when B is checked, so only fences before B count.

What is not named as the other side: earlier atomics and strong (``.relaxed``/``.acquire``...)
reads, which the shadow keeps apart from its plain records (their pairs are checked, not traced),
and readers the shadow had to drop (``hb``: ``lossy``). Pairs are resolved at most
``RESOLVE_PER_AGENTS`` times per (line, other line, warp, other warp): the evidence is an example
per chain of edges, not a census of the run.

Clock entries of a warp only grow, and only through its own ticks and its acquires, so the first
acquire that raised an entry past a value is the one that made the pair ordered; the edges named
are the ones the shadow's verdict rests on, not a reconstruction.
"""
from __future__ import annotations

from bisect import bisect_left

import numpy as np

from kverify.names import object_name
from kverify.semantics.ir.nodes import where as _fmt_loc

from .hb import ASYNC, GENERIC, vget

#: Distinct explanations (other site, conflict, chain of edges) kept per access site.
SITE_PAIRS = 6
#: Longest chain of release/acquire edges followed from one access back to the other.
MAX_HOPS = 8
#: Ordered pairs one access contributes: one per (other line, other warp, conflict), at most this many.
PAIRS_PER_ACCESS = 16
#: Ordered pairs resolved per (site, other site, warp, other warp): later executions of the same
#: pair between the same warps are not looked at (the evidence is an example, not a census).
RESOLVE_PER_AGENTS = 4

PROXY = {GENERIC: "generic", ASYNC: "async", 2: "generic (cp.async)"}


class Release:
    """One release into a synchronization instance (or the issue of an asynchronous operation)."""

    __slots__ = ("agent", "clock", "time", "op", "loc", "warp", "obj", "phase", "async_op")

    def __init__(self, agent, clock, time, op, loc, warp, obj=None, phase=None, async_op=None):
        self.agent, self.clock, self.time, self.op, self.loc = agent, clock, time, op, loc
        self.warp, self.obj, self.phase, self.async_op = warp, obj, phase, async_op


class Acquire:
    """One acquire of a warp that raised entries of its clock."""

    __slots__ = ("agent", "time", "op", "loc", "warp", "obj", "phase", "releases")

    def __init__(self, agent, time, op, loc, warp, obj, phase, releases):
        self.agent, self.time, self.op, self.loc, self.warp = agent, time, op, loc, warp
        self.obj, self.phase, self.releases = obj, phase, releases


class HBTrace:
    """The audit's record of the happens-before edges of one run (see the module doc)."""

    def __init__(self, m):
        self.m = m
        self.time = 0
        self.raised: dict = {}  # warp agent -> {entry: ([values], [Acquire])}
        self.releases: dict = {}  # instance key -> [Release]
        self.issues: dict = {}  # async-op agent -> [Release] (its issues)
        self.proxy_fences: dict = {}  # warp agent -> ([own clocks], [Loc], [trace times])
        self.pending_strong: dict = {}  # warp agent -> [Release] its relaxed strong reads observed
        self.warps: dict = {}  # agent -> Warp
        self.sites: dict = {}  # site loc id -> {signature: entry}
        self.more: dict = {}  # site loc id -> ordered pairs beyond SITE_PAIRS explanations
        self.resolved: dict = {}  # (site, other loc, warp, other warp) -> pairs resolved so far
        self.site_op: dict = {}  # loc id -> opcode of the access there
        self.unresolved = 0  # ordered pairs whose edge the trace could not name
        self.accessed: set = set()  # line keys of the access sites the run executed
        self.line_of: dict = {}  # loc id -> its source line's key (file, line), or (None, -ptx line)
        self.first_loc: dict = {}  # line key -> the first Loc seen on it
        self.arrays = {v.name: bool(v.dims) for v in (*m.module.vars, *m.kernel.vars)}
        self.names: dict = {}  # mbarrier name -> as the source names it

    def _obj_name(self, name):
        """An mbarrier as the source names it (``_ZZ4kernE4full+16 of CTA (0, 0, 0)`` ->
        ``full[2]``: 8-byte objects); other names unchanged."""
        if not isinstance(name, str) or " of CTA" not in name:
            return name
        out = self.names.get(name)
        if out is None:
            sym, _, off = name.split(" of CTA")[0].partition("+")
            out = self.names[name] = object_name(sym, int(off) if off.isdigit() else 0, 8, self.arrays.get(sym, True))
        return out

    def _line(self, loc_id):
        k = self.line_of.get(loc_id)
        if k is None:
            loc = self.m.locs[loc_id]
            k = (loc.file, loc.line) if loc is not None and loc.line else (None, -(loc.ptx_line if loc else 0))
            self.line_of[loc_id] = k
            self.first_loc.setdefault(k, loc)
        return k

    def _tick(self):
        self.time += 1
        return self.time

    # ------------------------------------------------------------------ recording
    def release(self, key, w, ins, obj=None, phase=None):
        """Warp ``w`` releases into instance ``key`` at ``ins`` (one record per warp and instruction)."""
        lst = self.releases.setdefault(key, [])
        clk = w.clock()
        if lst and lst[-1].agent == w.agent and lst[-1].clock == clk and lst[-1].loc == ins.loc:
            return
        self.warps[w.agent] = w
        lst.append(Release(w.agent, clk, self._tick(), ins.opcode, ins.loc, w, self._obj_name(obj), phase))

    def release_op(self, key, op, what, obj=None, phase=None):
        """The asynchronous operation ``op`` releases into ``key`` at its completion (complete-tx)."""
        self.releases.setdefault(key, []).append(
            Release(op.agent, int(op.vc[op.agent]), self._tick(), what, op.instr.loc, op.warp, self._obj_name(obj),
                    phase, op))

    def completion(self, op, what, clk=None):
        """The completion of ``op`` as a release (what a group wait acquires; ``clk``: the agent's
        clock it acquires, its source reads only for a ``.read`` wait)."""
        return Release(op.agent, int(op.vc[op.agent]) if clk is None else clk, self.time, what, op.instr.loc, op.warp,
                       None, None, op)

    def issue(self, op, w, ins):
        """Warp ``w`` issued (its part of) the asynchronous operation ``op``."""
        self.warps[w.agent] = w
        self.issues.setdefault(op.agent, []).append(
            Release(w.agent, w.clock(), self._tick(), ins.opcode, ins.loc, w, None, None, op))

    def proxy_fence(self, w, ins):
        clocks, locs, times = self.proxy_fences.setdefault(w.agent, ([], [], []))
        clocks.append(w.clock())
        locs.append(ins.loc)
        times.append(self._tick())

    def _fence_after(self, w, a, c):
        """The first ``fence.proxy.async`` of warp ``w`` after agent ``a``'s event ``c`` (``w``'s own
        access when ``w`` is ``a``, else one ``w`` was already ordered after): (Loc, warp) or None."""
        f = self.proxy_fences.get(w.agent) if w is not None else None
        if f is None:
            return None
        clocks, locs, times = f
        if w.agent == a:
            i = bisect_left(clocks, c)
        else:
            rec = self.first_raise(w.agent, a, c)
            if rec is None:
                return None
            i = bisect_left(times, rec.time)
        return (locs[i], w) if i < len(locs) else None

    def strong_release(self, sh, idx):
        """The release a strong read of ``idx`` observes: the last write of its first byte."""
        b = int(idx[0])
        a = int(sh.w_agent[b])
        if a < 0:
            return []
        w = self.warps.get(a)
        op = self.m.ops_by_agent.get(a)
        return [Release(a, int(sh.w_clk[b]), self.time, self.site_op.get(int(sh.w_loc[b]), "a releasing write"),
                        self.m.locs[int(sh.w_loc[b])], w if w is not None else (op.warp if op else None),
                        async_op=op)]

    def acquire(self, w, vc, ins, obj=None, phase=None, releases=None):
        """Warp ``w`` is about to join ``vc`` into its clock at ``ins``: record the entries raised."""
        old = w.vc
        n = len(vc)
        if n == 0:
            return
        mine = old[:n] if len(old) >= n else np.concatenate([old, np.zeros(n - len(old), np.int64)])
        up = np.flatnonzero(vc > mine)
        if not len(up):
            return
        self.warps[w.agent] = w
        rec = Acquire(w.agent, self._tick(), ins.opcode if ins is not None else "exit", getattr(ins, "loc", None),
                      w, self._obj_name(obj), phase, releases)
        d = self.raised.setdefault(w.agent, {})
        for p, v in zip(up.tolist(), vc[up].tolist()):
            e = d.get(p)
            if e is None:
                d[p] = ([v], [rec])
            else:
                e[0].append(v)
                e[1].append(rec)

    # ------------------------------------------------------------------ accesses
    def access(self, sh, idx, agent, vc, loc, ins, kind, proxy, w):
        """Access B (``kind`` read | write | atomic, at site ``loc``, by ``agent`` with clock ``vc``;
        ``w`` the warp, or the issuing warp of an asynchronous operation) of bytes ``idx`` of the
        shadow ``sh``, before the shadow records it: its ordered pairs with the earlier accesses."""
        self.site_op.setdefault(loc, ins.opcode)
        self.accessed.add(self._line(loc))
        self.warps.setdefault(w.agent, w)
        if not len(idx):
            return
        found = []  # (other agent, its clock, other loc, other proxy, conflict)
        wa = sh.w_agent[idx]
        has = wa >= 0
        if has.any():
            wc = sh.w_clk[idx]
            ordered = has & (vget(vc, wa) >= wc)
            if ordered.any():
                sel = np.flatnonzero(ordered)
                locs = sh.w_loc[idx[sel]]
                conflict = "read-after-write" if kind == "read" else "write-after-write"
                for j in _firsts(wa[sel], locs):
                    b = int(idx[sel[j]])
                    found.append((int(wa[sel[j]]), int(wc[sel[j]]), int(locs[j]), int(sh.w_proxy[b]), conflict))
        if kind != "read":
            found += self._readers(sh, idx, vc)
        if not found:
            return
        # one pair per (other line, other warp, conflict): the asynchronous operations a warp issued
        # at one line count as that warp's
        seen = set()
        for other, clk, oloc, oproxy, conflict in found:
            k = (self._line(oloc), self._warp_agent(other), conflict)
            if k in seen:
                continue
            seen.add(k)
            self._pair(loc, agent, w, other, clk, oloc, oproxy, conflict, proxy)
            if len(seen) >= PAIRS_PER_ACCESS:
                break

    def _readers(self, sh, idx, vc):
        out = []
        if sh.dense:
            rc = sh.r_clk[idx]
            ordered = (rc > 0) & (rc <= vget(vc, sh.agents)[None, :])
            if ordered.any():
                rows, cols = np.nonzero(ordered)
                ag = sh.agents[cols]
                locs = sh.r_loc[idx[rows], cols]
                for j in _firsts(ag, locs):
                    out.append((int(ag[j]), int(rc[rows[j], cols[j]]), int(locs[j]), GENERIC, "write-after-read"))
        else:
            ra = sh.r_agent[idx]
            ordered = (ra >= 0) & (vget(vc, ra) >= sh.r_clk1[idx])
            if ordered.any():
                rows, cols = np.nonzero(ordered)
                ag = ra[rows, cols]
                locs = sh.r_loc1[idx[rows], cols]
                clks = sh.r_clk1[idx[rows], cols]
                for j in _firsts(ag, locs):
                    out.append((int(ag[j]), int(clks[j]), int(locs[j]), GENERIC, "write-after-read"))
        ra = sh.ra_agent[idx]
        ordered = (ra >= 0) & (vget(vc, ra) >= 1)
        if ordered.any():
            rows, cols = np.nonzero(ordered)
            ag = ra[rows, cols]
            locs = sh.ra_loc[idx[rows], cols]
            for j in _firsts(ag, locs):
                op = self.m.ops_by_agent.get(int(ag[j]))
                out.append((int(ag[j]), 1, int(locs[j]), getattr(op, "proxy", ASYNC), "write-after-read"))
        return out

    def _pair(self, loc, agent, w, other, clk, oloc, oproxy, conflict, proxy):
        # bounded work: a few resolutions per (site, other site, warp, other warp); an asynchronous
        # operation counts as its issuing warp here (each operation is an agent of its own)
        loc, oline = self._line(loc), self._line(oloc)
        key = (loc, oline, w.agent, self._warp_agent(other))
        n = self.resolved.get(key, 0)
        if n >= RESOLVE_PER_AGENTS:
            return
        self.resolved[key] = n + 1
        site = self.sites.setdefault(loc, {})
        steps = self.chain(agent, other, clk)
        if steps is None:
            self.unresolved += 1
            steps = [("unresolved", None)]
        unfenced = False
        if oproxy == GENERIC and proxy == ASYNC:
            # §8.6: a generic access is ordered before an async-proxy one only through a
            # fence.proxy.async after it: the writer's (race.async-proxy without one), or the
            # issuing warp's (the warning race.async-proxy.issuer-fence)
            f = self._fence_after(self.warps.get(other), other, clk)
            if f is not None:
                steps = [("fence", f)] + steps
            elif (f := self._fence_after(w, other, clk)) is not None:
                steps = steps + [("issuer-fence", f)] if not steps or steps[-1][0] != "issue" else \
                    steps[:-1] + [("issuer-fence", f), steps[-1]]
            else:
                unfenced = True
        sig = (oline, conflict, unfenced, tuple((s[0], _step_site(s)) for s in steps))
        e = site.get(sig)
        if e is not None:
            e["count"] += 1
            return
        if len(site) >= SITE_PAIRS:
            self.more[loc] = self.more.get(loc, 0) + 1
            return
        site[sig] = {"steps": steps, "count": 1, "other": (other, oloc, oproxy), "this": w,
                     "conflict": conflict, "proxy": proxy, "unfenced": unfenced}

    def _warp_agent(self, agent):
        op = self.m.ops_by_agent.get(agent)
        return op.warp.agent if op is not None else agent

    # ------------------------------------------------------------------ edges
    def first_raise(self, b, a, c):
        """The first acquire of warp ``b`` that raised its clock entry ``a`` to ``>= c``."""
        e = self.raised.get(b, {}).get(a)
        if e is None:
            return None
        i = bisect_left(e[0], c)
        return e[1][i] if i < len(e[0]) else None

    def covers(self, rel, a, c) -> bool:
        """Whether the releaser of ``rel`` was ordered after agent ``a``'s event ``c`` at the release."""
        if rel.agent == a:
            return rel.clock >= c
        op = rel.async_op if rel.async_op is not None and rel.async_op.agent == rel.agent else None
        if op is not None:
            return int(vget(op.vc, np.array([a]))[0]) >= c
        rec = self.first_raise(rel.agent, a, c)
        return rec is not None and rec.time < rel.time

    def chain(self, b, a, c, depth=0):
        """The edges by which agent ``b`` (now) is ordered after agent ``a``'s event ``c``:
        a list of steps (empty: program order), or None when none is found."""
        if b == a:
            return []
        if depth >= MAX_HOPS:
            return None
        op = self.m.ops_by_agent.get(b)
        if op is not None:
            for iss in reversed(self.issues.get(b, ())):  # the latest issue first (a wgmma's own warp)
                if self.covers(iss, a, c):
                    sub = self.chain(iss.agent, a, c, depth + 1)
                    if sub is not None:
                        return sub + [("issue", iss)]
            return None
        rec = self.first_raise(b, a, c)
        if rec is None:
            return None
        for rel in rec.releases or ():
            if self.covers(rel, a, c):
                sub = self.chain(rel.agent, a, c, depth + 1)
                if sub is not None:
                    return sub + [("release", rel), ("acquire", rec)]
        return [("acquire", rec)]

    # ------------------------------------------------------------------ output
    def evidence(self) -> dict:
        """{Loc of an access line the run executed: [evidence item]} (see ``kverify.verifier.audit``),
        the explanation with the most examples first; an empty list: no earlier conflicting access
        was ordered before any execution of the line (a race would be a finding instead)."""
        m = self.m
        out = {}
        multi_cta = m.ctas_run > 1
        for loc, site in self.sites.items():
            items = []
            for e in sorted(site.values(), key=lambda e: -e["count"]):
                other, oloc, oproxy = e["other"]
                steps = [self._step(s, multi_cta) for s in e["steps"]]
                sync = any(s["role"] in ("acquire", "unresolved") for s in steps)
                w = e["this"]
                kind = "proxy-unordered" if e["unfenced"] else "synchronization" if sync else "program-order"
                item = {"kind": kind, "conflict": e["conflict"],
                        "other": {"line": _line(m.locs[oloc]), "access": self._access(other, oloc, e["conflict"]),
                                  **self._who(other, multi_cta), "proxy": PROXY.get(oproxy, str(oproxy))},
                        "this": {"warp": w.index, **({"cta": list(w.cta.ctaid)} if multi_cta else {}),
                                 "proxy": PROXY.get(e["proxy"], str(e["proxy"]))},
                        "via": steps, "examples": e["count"]}
                items.append(item)
            if self.more.get(loc):
                items.append({"kind": "more", "examples": self.more[loc]})
            out[self.first_loc[loc]] = items
        for k in self.accessed - set(self.sites):
            out[self.first_loc[k]] = []
        return out

    def _access(self, agent, loc, conflict):
        what = "write" if conflict.startswith("read-after") or conflict.startswith("write-after-write") else "read"
        op = self.m.ops_by_agent.get(agent)
        return f"{what} ({op.instr.opcode if op is not None else self.site_op.get(loc, '?')})"

    def _who(self, agent, multi_cta):
        op = self.m.ops_by_agent.get(agent)
        w = op.warp if op is not None else self.warps.get(agent)
        if w is None:
            return {"warp": None}
        out = {"warp": w.index}
        if multi_cta:
            out["cta"] = list(w.cta.ctaid)
        if op is not None:
            out["async_op"] = op.kind
        return out

    def _step(self, s, multi_cta) -> dict:
        role, x = s
        if role == "unresolved":
            return {"role": "unresolved", "op": "an edge the trace did not record"}
        if role in ("fence", "issuer-fence"):
            loc, w = x
            out = {"role": role, "op": "fence.proxy.async", "line": _line(loc)}
            if w is not None:
                out["warp"] = w.index
            return out
        out = {"role": role, "op": x.op, "line": _line(x.loc)}
        w = x.warp
        if w is not None:
            out["warp"] = w.index
            if multi_cta:
                out["cta"] = list(w.cta.ctaid)
        if role == "release" and x.async_op is not None and x.agent == x.async_op.agent:
            out["proxy"] = PROXY.get(getattr(x.async_op, "proxy", ASYNC), "async")
            out["async_op"] = x.async_op.kind
        if x.obj is not None:
            out["barrier"] = x.obj
        if x.phase is not None:
            out["phase"] = x.phase
        return out


def _firsts(agents, locs):
    """Positions of the first occurrence of each (agent, loc) pair."""
    keys = (np.asarray(agents, np.int64) << 32) | np.asarray(locs, np.int64)
    _, first = np.unique(keys, return_index=True)
    return np.sort(first).tolist()


def _step_site(s):
    role, x = s
    if x is None:
        return None
    if role in ("fence", "issuer-fence"):
        return (x[0].line, x[0].file)
    return (x.op, getattr(x.loc, "line", None), getattr(x.loc, "file", None))


def _line(loc):
    return _fmt_loc(loc) if loc is not None else None
