"""Happens-before bookkeeping of one launch: vector clocks and the race shadow of memory.

Agents are warps and asynchronous operations (each bulk copy, TMA copy, cp.async
and wgmma is an agent whose single event is its completion). A vector clock is a numpy
``int64`` array indexed by agent; entries past its end are 0.

Lanes are agents too (independent thread scheduling, §8 and the CUDA programming guide's
"independent thread scheduling"): the interpreter steps a warp's lanes together, but two lanes
of one warp are ordered only by a warp-synchronizing point both execute between their
accesses: ``bar.warp.sync`` (which orders memory among its participating threads,
§9.7.13.2) or a completed CTA barrier (§9.7.13.1). ``LaneOrder`` keeps, per warp, the last
such point each pair of lanes shared; the shadow records with every access the warp's count
of those points, and an access by lane j conflicts with another lane i's earlier access (one
of them a write) when no point of both lies after it. Order through a third lane (i with k,
then k with j) is not followed: such a pair is reported (a possible false alarm, never a
missed race). Shuffles, votes and other collectives do not order memory.

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
    ``fence.proxy.async`` after its access (writes before an async read or an async write,
    reads before an async write).

Memory order (§8.4 operation types, §8.5 scope, §8.7 morally strong, §8.8 causality order):
  * a strong access (``.relaxed``/``.acquire``/``.release``/``.acq_rel``/``.sc`` ld/st,
    ``.volatile`` = relaxed at ``.sys`` scope, every atom/red) carries a ``Strength``; two
    strong accesses each of whose scopes contains the other thread are morally strong and
    never a data race (the ISA also asks that they overlap exactly: not checked, a mixed-size
    pair of strong accesses is taken as morally strong);
  * release patterns: a write with ``.release``/``.acq_rel``/``.sc``, or a strong write after a
    ``fence.sc``/``fence.acq_rel``/``fence.release``/``membar`` of its warp, keeps per byte the
    release clock (the warp's clock at the write, resp. at the fence); acquire patterns: a
    strong read with ``.acquire``/``.acq_rel``/``.sc`` of such a byte, in scope, joins that
    clock into the reader's at once, a relaxed one at the warp's next acquiring fence
    (synchronizes-with, §8.8 / §8.9.2 base causality order). Release sequences through
    later atomics of the byte are not followed (the release clock of a byte is its last
    writer's), so a chain of read-modify-writes only orders what its last writer released.
  * release and fence clocks are per warp, not per lane: a release by one lane stands for the
    accesses its warp made before it.

The shadow keeps per byte: the last write (agent, clock, lane, location, proxy), the async
operation in flight writing it, up to ``READER_SLOTS`` async operations in flight reading it
and completed async readers not known to be ordered before the next write, and the reads
since the last write: per warp of the CTA for shared memory (dense); for global memory one
slot per reader warp not ordered before a later reader (a read ordered before another one
needs no slot: a write ordered after the later read is ordered after both), the slots
growing with the most unordered readers any byte has, up to ``GLOBAL_READER_SLOTS``. Where a
record must still replace one that is not ordered before it (more unordered global readers
than slots, an async reader, a reader of another CTA's shared memory), the byte is marked
``lost``: a later write to it can no longer be checked against every earlier reader, which
``lossy`` tells the caller (the interpreter reports it in ``RunResult.shadow_dropped``, and a
run with a dropped reader does not claim race freedom for the schedules it ran).

The per-byte records are ``paged.PagedArray``s: storage for a 1 KiB page of the region is
allocated when a record of one of its bytes is first written, so a launch checked through a
few representative CTAs pays for the bytes they access, not for its whole global memory.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kverify.semantics.memory_model.execution import (RACE_ASYNC_PENDING, RACE_ASYNC_PROXY,
                                                     RACE_ASYNC_PROXY_ISSUER_FENCE, RACE_GLOBAL, RACE_SHARED)

from .paged import PagedArray, PageTable

GENERIC, ASYNC = 0, 1
READER_SLOTS = 4  # async readers kept per byte (several warpgroups' wgmma read one tile)
GLOBAL_READER_SLOTS = 16  # most warps whose unordered reads of one global byte are kept


def vget(vc: np.ndarray, agents: np.ndarray) -> np.ndarray:
    """``vc[agents]`` with 0 past the end and for agent -1 (no agent is below -1)."""
    n = len(vc)
    ext = np.zeros(n + 1, np.int64)  # ext[n] == ext[-1] == 0: past the end, and agent -1
    ext[:n] = vc
    return ext[np.minimum(agents, n)]


def join(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if len(a) < len(b):
        a, b = b, a
    out = a.copy()
    out[: len(b)] = np.maximum(out[: len(b)], b)
    return out


def hb_after(vc: np.ndarray, ref: np.ndarray) -> bool:
    """Whether the event with clock ``vc`` is ordered after every event ``ref`` covers."""
    n = len(ref)
    if n == 0:
        return True
    mine = vc[:n] if len(vc) >= n else np.concatenate([vc, np.zeros(n - len(vc), np.int64)])
    return bool((mine >= ref).all())


def tick(vc: np.ndarray, agent: int) -> np.ndarray:
    if agent >= len(vc):
        vc = np.concatenate([vc, np.zeros(agent + 1 - len(vc), np.int64)])
    vc[agent] += 1
    return vc


class LaneOrder:
    """Warp-synchronizing points among the lanes of one warp (see the module doc)."""

    __slots__ = ("now", "common", "full")

    def __init__(self):
        self.now = 0  # warp-synchronizing points so far
        # [i, j]: the last point after which lane i's earlier accesses are ordered before lane j's
        # (both passed a warp-synchronizing point, or j acquired i's mbarrier arrive)
        self.common = np.zeros((32, 32), np.int64)
        self.full = 0  # the last point every lane of the warp took part in

    def sync(self, members: np.ndarray, valid: np.ndarray):
        """Lanes ``members`` (bool, 32) passed a warp-synchronizing point together."""
        self.now += 1
        s = np.flatnonzero(members)
        self.common[np.ix_(s, s)] = self.now
        if not (valid & ~members).any():
            self.full = self.now

    def point(self) -> int:
        """A new point at which lanes release (an mbarrier arrive): what a lane accessed before
        it is ordered before what lanes that later acquire it (``acquire``) access."""
        self.now += 1
        return self.now

    def acquire(self, points: np.ndarray, lanes: np.ndarray):
        """Lanes ``lanes`` acquire the release points ``points`` (per lane, 0 for none): each
        lane ``a``'s accesses before ``points[a]`` are ordered before what ``lanes`` access from
        now on (one direction only: ``common[earlier, later]``)."""
        cols = self.common[:, lanes]
        self.common[:, lanes] = np.maximum(cols, np.asarray(points, np.int64)[:, None])

    def unordered(self, earlier, later, since) -> np.ndarray:
        """Whether lane ``earlier``'s access at point count ``since`` and lane ``later``'s
        access now are different lanes with no point of both in between (arrays)."""
        earlier = np.asarray(earlier, np.int64)
        later = np.asarray(later, np.int64)
        return (earlier != later) & (self.common[earlier, later] <= since)

    def unordered_readers(self, readers, later, since) -> np.ndarray:
        """Per byte, a mask of the lanes in the 32-bit reader masks ``readers`` that read at
        point count ``since`` or later and are not ordered before lane ``later``."""
        bits = ((readers[:, None] >> np.arange(32, dtype=np.uint32)[None, :]) & 1).astype(bool)
        rows = self.common[:, np.asarray(later, np.int64)].T  # [k, i]: last point of lane i and later[k]
        bits &= rows <= np.asarray(since)[:, None]
        bits[np.arange(len(later)), np.asarray(later, np.int64)] = False
        return bits


SCOPE_LEVEL = {"cta": 0, "cluster": 1, "gpu": 2, "sys": 3}
RELEASING = ("release", "acq_rel", "sc")
ACQUIRING = ("acquire", "acq_rel", "sc")


@dataclass(frozen=True)
class Strength:
    """The memory order of a strong access (§8.4) and the scope instance it names (§8.5):
    ``sem`` relaxed/acquire/release/acq_rel/sc, ``scope`` cta/cluster/gpu/sys, and the CTA and
    cluster of the thread (scopes ``cta`` and ``cluster`` contain the threads sharing them)."""

    sem: str
    scope: str
    cta: tuple
    cluster: tuple

    def contains(self, other: "Strength") -> bool:
        """Whether this access's scope contains the thread of ``other``."""
        level = SCOPE_LEVEL[self.scope]
        return level >= 2 or (level == 1 and self.cluster == other.cluster) or self.cta == other.cta

    def morally_strong(self, other: "Strength | None") -> bool:
        return other is not None and self.contains(other) and other.contains(self)


def strength(mods, cta: tuple, cluster: tuple, atomic: bool = False) -> Strength | None:
    """The Strength of an access with modifiers ``mods`` by a thread of ``cta``/``cluster``;
    None for a weak access. ``.volatile`` and ``.mmio`` are relaxed at ``.sys`` scope;
    atomics are relaxed by default; a missing scope is ``.gpu`` (§8.4, §9.7.9.8 ld, §9.7.13.5 atom)."""
    mods = set(mods)
    if mods & {"volatile", "mmio"}:
        return Strength("relaxed", "sys", cta, cluster)
    sem = next((x for x in ("relaxed", "acquire", "release", "acq_rel", "sc") if x in mods), None)
    if sem is None and not atomic:
        return None
    scope = next((x for x in SCOPE_LEVEL if x in mods), "gpu")
    return Strength(sem or "relaxed", scope, cta, cluster)


def lane_bits(lanes) -> np.ndarray:
    return (np.uint32(1) << np.asarray(lanes, np.uint32)).astype(np.uint32)


class Conflict:
    """One racing pair found by a shadow check (before it becomes a finding)."""

    __slots__ = ("rule", "kind", "byte", "other_agent", "other_lane", "other_loc", "mine_lane", "ordering")

    def __init__(self, rule, kind, byte, other_agent, other_lane, other_loc, mine_lane=-1, ordering=False):
        self.rule, self.kind, self.byte = rule, kind, byte
        self.other_agent, self.other_lane, self.other_loc = other_agent, other_lane, other_loc
        self.mine_lane = mine_lane
        # a morally strong pair not ordered by happens-before: no data race, but the value
        # read (or the final value) depends on the order the schedule gives the two
        self.ordering = ordering


def _member(a: np.ndarray, agents) -> np.ndarray:
    """``np.isin(a, agents)``: for a few agents (the operations in flight before one), one
    comparison each, where ``isin`` sorts."""
    if len(agents) > 8:
        return np.isin(a, np.fromiter(agents, np.int64))
    out = np.zeros(a.shape, bool)
    for x in agents:
        out |= a == x
    return out


class Shadow:
    """Race shadow of one memory region, byte granularity."""

    def __init__(self, nbytes: int, space: str, dense_agents: np.ndarray | None = None, whole: bool = False):
        n = max(nbytes, 1)
        self.space = space
        self.race_rule = RACE_SHARED.id if space == "shared" else RACE_GLOBAL.id
        # per-byte records, stored by the pages written so far (``paged``): the cost of a
        # launch's shadow follows the bytes its interpreted CTAs access, not the region size.
        # Three groups, each stored by the pages its own group wrote: the last writes (and
        # marks), the asynchronous readers, the generic readers -- a tile only copies read (a
        # GEMM's A and B) stores no writer or generic-reader records, an output only threads
        # write (its C and D) no asynchronous-reader slots. ``whole``: stored whole from the
        # start (a CTA's shared memory, which a run touches almost whole, when the CTAs run
        # together are one cluster)
        self.pages = PageTable(n, dense=whole)
        async_pages = PageTable(n, dense=whole)
        self._tables = [self.pages, async_pages]
        self._arrays: list[PagedArray] = []
        self.w_agent = self._paged(np.int32, -1)
        self.w_clk = self._paged(np.int64)
        self.w_lane = self._paged(np.int8)
        self.w_loc = self._paged(np.int32)
        self.w_proxy = self._paged(np.int8)
        self.w_wsync = self._paged(np.int64)  # the writer warp's LaneOrder.now at the write
        self.pend_w = self._paged(np.int32, -1)
        self.pend_w_loc = self._paged(np.int32)
        self.pend_r = self._paged(np.int32, -1, READER_SLOTS, async_pages)
        self.pend_r_loc = self._paged(np.int32, 0, READER_SLOTS, async_pages)
        self.ra_agent = self._paged(np.int32, -1, READER_SLOTS, async_pages)
        self.ra_loc = self._paged(np.int32, 0, READER_SLOTS, async_pages)
        self.dense = dense_agents is not None
        if self.dense:  # shared memory: one column per warp of the CTA
            self.agents = np.asarray(dense_agents, np.int64)  # agent of each column
            # paged on their own: a page is stored once a generic read records into it (asynchronous
            # copies and wgmma fill most of a pipeline's shared memory, but warps read few of its bytes)
            reads = PageTable(n)
            w = len(self.agents)
            self.r_clk = PagedArray(reads, np.int64, 0, w)
            self.r_loc = PagedArray(reads, np.int32, 0, w)
            self.r_lanes = PagedArray(reads, np.uint32, 0, w)  # reader lanes of the column
            self.r_wsync = PagedArray(reads, np.int64, 0, w)  # LaneOrder.now at the latest
        else:
            reads = PageTable(n, dense=whole)
            self._tables.append(reads)
            self.r_agent = self._paged(np.int32, -1, 1, reads)
            self.r_clk1 = self._paged(np.int64, 0, 1, reads)
            self.r_lane = self._paged(np.int8, 0, 1, reads)
            self.r_loc1 = self._paged(np.int32, 0, 1, reads)
            self.r_lanes1 = self._paged(np.uint32, 0, 1, reads)  # lanes of the slot's warp that read
            self.r_wsync1 = self._paged(np.int64, 0, 1, reads)  # its LaneOrder.now at the latest
        self.uninit = self._paged(bool, True) if space in ("shared", "local") else None
        self.lost = None
        # atomics since the last plain write, per byte: the join of their clocks, their
        # operation and one location (sparse: only bytes atomics touched)
        # strong accesses (sparse: flags are few bytes): the Strength of the last write when
        # strong, the strong reads since it (agent -> (clock, location, lane, Strength); they
        # are not in the dense/slot reader records), and the release clock of the last write
        self.strong_w: dict = {}
        self.strong_r: dict = {}
        self.rel: dict = {}
        self.has_atom = None
        self.atom_vc: dict = {}
        self.atom_op: dict = {}
        self.atom_loc: dict = {}
        self.atom_strength: dict = {}
        self.atom_read: set = set()  # bytes with an atomic whose returned value is read
        self.atom_lane: dict = {}  # the last atomic's (agent, lane) per byte

    def _paged(self, dtype, fill=0, width=None, pages=None) -> PagedArray:
        arr = PagedArray(self.pages if pages is None else pages, dtype, fill, width)
        self._arrays.append(arr)
        return arr

    def footprint(self) -> int:
        """Bytes the shadow's per-byte records hold now."""
        dense = sum(a.nbytes for a in (getattr(self, k, None) for k in ("r_clk", "r_loc", "r_lanes", "r_wsync"))
                    if a is not None)
        return sum(a.nbytes for a in self._arrays) + sum(t.table.nbytes for t in self._tables) + dense

    def _reader_slots(self, k):
        """Grow the global reader slots to ``k`` per byte, keeping the ones there are."""
        for arr in (self.r_agent, self.r_clk1, self.r_lane, self.r_loc1, self.r_lanes1, self.r_wsync1):
            arr.widen(k)

    def record_atomic(self, idx, vc, loc, op, strong, rel=None, used=False, agent=-1,
                      lanes=None) -> tuple[bool, bool, bool, list]:
        """An atomic ``op`` (``strong``: its Strength; ``rel``: its release clock, if it
        releases; ``used``: its returned value is read) by ``agent`` with clock ``vc`` updated
        ``idx`` (one entry per lane and byte, ``lanes`` the lane of each); returns ``(mixed,
        unordered, read)``: a byte had an atomic of another operation since its last plain
        write (their order matters); a byte had an atomic that does not happen before this
        one -- of another agent, or of another lane of this warp (lanes are ordered only at
        warp-synchronizing points, which this test does not follow) -- or two lanes of this
        one update one byte (the two may come in either order); a byte had an earlier atomic
        whose returned value is read; and the races: an earlier atomic of another agent that
        does not happen before this one and is not morally strong with it (a ``.cta`` atomic and
        one of another CTA, a ``.cluster`` one and one of another cluster, §8.7)."""
        if self.has_atom is None:
            self.has_atom = self._paged(bool, False)
        mixed = read = False
        uniq, first = np.unique(idx, return_index=True)
        unordered = len(uniq) < len(idx)
        lane_of = (lanes[first] if lanes is not None and not unordered else np.full(len(uniq), -1)).tolist()
        races = []
        for b, lane in zip(uniq.tolist(), lane_of):
            mine = (agent, lane)
            last = self.atom_lane.get(b)
            if last is not None and last[0] == agent and last[1] != mine[1]:
                unordered = True
            if last is not None and last[0] != agent and not races \
                    and not strong.morally_strong(self.atom_strength.get(b)) and not hb_after(vc, self.atom_vc[b]):
                races.append(Conflict(self.race_rule, "atomics whose scopes do not contain each other's thread, "
                                      "not ordered", b, last[0], last[1], self.atom_loc[b], lane))
            self.atom_lane[b] = mine
            self.atom_strength[b] = strong
            if rel is not None:  # an RMW continues the release sequences before it (§8.9): join
                old = self.rel.get(b)
                self.rel[b] = (rel if old is None else join(old[0], rel), strong)
            prev = self.atom_vc.get(b)
            if prev is None:
                self.atom_vc[b] = vc.copy()
            else:
                unordered = unordered or not hb_after(vc, prev)
                self.atom_vc[b] = join(prev, vc)
            mixed |= self.atom_op.setdefault(b, op) != op
            self.atom_loc.setdefault(b, loc)
            if b in self.atom_read:
                read = True
            elif used:
                self.atom_read.add(b)
        self.has_atom[idx] = True
        return mixed, unordered, read, races

    def _check_atomics(self, idx, vc, lanes, what, strong=None):
        if self.has_atom is None:
            return []
        hit = self.has_atom[idx]
        if strong is not None and hit.any():  # a strong access and an atomic: morally strong
            hit &= ~np.fromiter((strong.morally_strong(self.atom_strength.get(b)) for b in idx.tolist()), bool,
                                len(idx))
        if not hit.any():
            return []
        for i in np.flatnonzero(hit).tolist():
            b = int(idx[i])
            ref = self.atom_vc[b]
            if not hb_after(vc, ref):
                other = int(np.flatnonzero(vget(vc, np.arange(len(ref))) < ref)[0])
                return [Conflict(self.race_rule, f"{what} of a location an atomic updates, not ordered", b, other,
                                 -1, self.atom_loc[b], int(lanes[i]) if lanes is not None else -1)]
        return []

    def _lose(self, idx, mask):
        if mask.any():
            if self.lost is None:
                self.lost = self._paged(bool, False)
            self.lost[idx[mask]] = True

    def _morally_strong_write(self, idx, strong) -> np.ndarray:
        """Per position of ``idx``: the byte's last write and the access ``strong`` are
        morally strong (never a data race)."""
        if strong is None or not self.strong_w:
            return np.zeros(len(idx), bool)
        return np.fromiter((strong.morally_strong(self.strong_w.get(b)) for b in idx.tolist()), bool, len(idx))

    def released(self, idx, strong) -> np.ndarray | None:
        """The join of the release clocks of the last writes of ``idx`` that the strong read
        ``strong`` observes in scope (None when none)."""
        out = None
        if self.rel:
            for b in np.unique(idx).tolist():
                r = self.rel.get(b)
                if r is not None and strong.morally_strong(r[1]):
                    out = r[0] if out is None else join(out, r[0])
        return out

    def lossy(self, idx) -> bool:
        """Whether a write of bytes ``idx`` can miss an earlier reader (see the module doc)."""
        return self.lost is not None and bool(self.lost[idx].any())

    def _place(self, agents, locs, idx, agent, loc, replaceable, cur):
        """Put ``agent`` into a slot of each byte of ``idx`` (``cur``: ``agents[idx]``): a free
        one, its own, or one whose holder ``replaceable`` marks; bytes with no such slot lose a
        record."""
        free = (cur < 0) | (cur == agent) | replaceable
        if free[:, 0].all():  # the common case: the first slot of every byte (what argmax picks)
            agents[idx, 0] = agent
            locs[idx, 0] = loc
            return
        has = free.any(axis=1)
        slot = free.argmax(axis=1)
        if has.all():  # ``idx`` itself, whose storage rows are cached
            rows, cols = idx, slot
        else:
            self._lose(idx, ~has)
            rows, cols = idx[has], slot[has]
        agents[rows, cols] = agent
        locs[rows, cols] = loc

    def set_pending_read(self, idx, agent, loc, subsumes=()):
        """An async operation in flight reads ``idx`` (``subsumes``: as for
        ``record_async_read``; such an operation completes before ``agent``)."""
        p = self.pend_r[idx]
        repl = _member(p, subsumes) if subsumes else False
        self._place(self.pend_r, self.pend_r_loc, idx, agent, loc, repl, p)

    def record_async_read(self, idx, agent, vc, loc, subsumes=()):
        """The async reader ``agent`` (issue clock ``vc``) completed its read of ``idx``; it
        takes the slot of a reader ordered before it or in ``subsumes`` (operations whose
        completion every observer of ``agent``'s also observes)."""
        p = self.pend_r[idx]
        rows, cols = np.nonzero(p == agent)
        self.pend_r[idx[rows], cols] = -1
        ra = self.ra_agent[idx]
        repl = (ra >= 0) & (vget(vc, ra) >= 1)
        if subsumes:
            repl |= _member(ra, subsumes)
        self._place(self.ra_agent, self.ra_loc, idx, agent, loc, repl, ra)

    # ------------------------------------------------------------------ checks
    def _first(self, bad, idx, lanes):
        i = int(np.flatnonzero(bad)[0])
        return i, int(idx[i]), (int(lanes[i]) if lanes is not None else -1)

    def _lane_conflicts(self, idx, agent, lanes, order, write, strong_pair=None):
        """Conflicts of an access by lanes ``lanes`` of the warp ``agent`` (its LaneOrder
        ``order``) with other lanes of that warp: their last write, and for a ``write`` their
        reads since it."""
        if order is None or lanes is None:
            return []
        out = []
        lanes = np.asarray(lanes, np.int64)
        same = (self.w_agent[idx] == agent) & (self.w_proxy[idx] == GENERIC)
        if same.any():
            bad = same & order.unordered(self.w_lane[idx].astype(np.int64), lanes, self.w_wsync[idx])
            if strong_pair is not None and (bad & strong_pair).any():
                i, b, ln = self._first(bad & strong_pair, idx, lanes)
                out.append(Conflict(self.race_rule, "morally strong accesses of lanes of one warp with no "
                                    "__syncwarp between them", b, agent, int(self.w_lane[b]), int(self.w_loc[b]),
                                    ln, ordering=True))
                bad &= ~strong_pair
            if bad.any():
                i, b, ln = self._first(bad, idx, lanes)
                out.append(Conflict(self.race_rule, f"{'write-after-write' if write else 'read-after-write'} "
                                    f"between lanes of one warp with no __syncwarp (bar.warp.sync) or barrier "
                                    f"between them", b, agent, int(self.w_lane[b]), int(self.w_loc[b]), ln))
        if not write:
            return out
        if self.dense:
            cols = np.flatnonzero(self.agents == agent)
            if not len(cols):
                return out
            col = int(cols[0])
            readers, since, rlocs = self.r_lanes[idx, col], self.r_wsync[idx, col], self.r_loc[idx, col]
        else:
            mine = self.r_agent[idx] == agent
            col = mine.argmax(axis=1)
            readers = np.where(mine.any(axis=1), self.r_lanes1[idx, col], 0).astype(np.uint32)
            since, rlocs = self.r_wsync1[idx, col], self.r_loc1[idx, col]
        if readers.any():
            bad = order.unordered_readers(readers, lanes, since)
            if bad.any():
                k, other = map(int, np.argwhere(bad)[0])
                b = int(idx[k])
                out.append(Conflict(self.race_rule, "write-after-read between lanes of one warp with no "
                                    "__syncwarp (bar.warp.sync) or barrier between them", b, agent, other,
                                    int(rlocs[k]), int(lanes[k])))
        return out

    def check_read(self, idx, agent, vc, fence_clk, lanes=None, proxy=GENERIC, order=None, strong=None,
                   issuer_fence=None):
        """Conflicts of a read of bytes ``idx`` by ``agent`` with clock ``vc`` (``order``: the
        LaneOrder of a warp reading, for conflicts between its lanes; ``strong``: the
        Strength of a strong read)."""
        ms = self._morally_strong_write(idx, strong)
        out = self._lane_conflicts(idx, agent, lanes, order, False, ms)
        pw = self.pend_w[idx]
        bad = pw >= 0
        if bad.any():
            i, b, ln = self._first(bad, idx, lanes)
            out.append(Conflict(RACE_ASYNC_PENDING.id, "read of a destination of an in-flight async copy",
                                b, int(pw[i]), -1, int(self.pend_w_loc[b]), ln))
        wa = self.w_agent[idx]
        bad = (wa >= 0) & (wa != agent) & (vget(vc, wa) < self.w_clk[idx])
        out += self._ordering(bad & ms, idx, lanes)
        bad &= ~ms
        if bad.any():
            i, b, ln = self._first(bad, idx, lanes)
            rule = RACE_ASYNC_PENDING.id if self.w_proxy[b] == ASYNC else self.race_rule
            kind = ("read before the completion of the async write is observed" if rule == RACE_ASYNC_PENDING.id
                    else "read-after-write, not ordered")
            out.append(Conflict(rule, kind, b, int(wa[i]), int(self.w_lane[b]), int(self.w_loc[b]), ln))
        elif (atomic := self._check_atomics(idx, vc, lanes, "read", strong)):
            out += atomic
        elif proxy == ASYNC:
            gen = (wa >= 0) & (self.w_proxy[idx] == GENERIC) & (vget(fence_clk, wa) < self.w_clk[idx])
            out += self._proxy_conflicts(gen, idx, lanes, wa, issuer_fence, "async-proxy read of a generic-proxy "
                                         "write with no fence.proxy.async after the write")
        return out

    def _proxy_conflicts(self, gen, idx, lanes, wa, issuer_fence, what) -> list:
        """The generic writes ``gen`` no fence of their writer orders before an async-proxy access:
        ``race.async-proxy``, or its warning ``race.async-proxy.issuer-fence`` for those a
        fence.proxy.async of the issuing thread after them (``issuer_fence``: its clock there) orders."""
        if not gen.any():
            return []
        covered = (vget(issuer_fence, wa) >= self.w_clk[idx]) if issuer_fence is not None else np.zeros(len(idx), bool)
        hard = gen & ~covered
        rule = RACE_ASYNC_PROXY.id if hard.any() else RACE_ASYNC_PROXY_ISSUER_FENCE.id
        i, b, ln = self._first(hard if hard.any() else gen, idx, lanes)
        if rule != RACE_ASYNC_PROXY.id:
            what = what.replace("with no fence.proxy.async after the write",
                                "ordered by a fence.proxy.async of the issuing thread only, not of the writer")
        return [Conflict(rule, what, b, int(wa[i]), int(self.w_lane[b]), int(self.w_loc[b]), ln)]

    def check_write(self, idx, agent, vc, fence_clk, lanes=None, proxy=GENERIC, atomic=False, order=None,
                    strong=None, issuer_fence=None):
        """Conflicts of a write (``atomic``: an atomic update, which does not race with other
        atomics; ``strong``: the Strength of a strong write or atomic) of bytes ``idx``."""
        ms = self._morally_strong_write(idx, strong)
        out = [] if atomic else self._lane_conflicts(idx, agent, lanes, order, True, ms)
        out += self._check_strong_readers(idx, agent, vc, lanes, strong)
        p = self.pend_w[idx]
        bad = (p >= 0) & (p != agent)
        if bad.any():
            i, b, ln = self._first(bad, idx, lanes)
            out.append(Conflict(RACE_ASYNC_PENDING.id, "write to a destination of an in-flight async copy", b,
                                int(p[i]), -1, int(self.pend_w_loc[b]), ln))
        for slots, slocs, bad_of, what in (
                (self.pend_r, self.pend_r_loc, lambda a: (a >= 0) & (a != agent),
                 "overwrite of bytes an in-flight async operation still reads"),
                (self.ra_agent, self.ra_loc, lambda a: (a >= 0) & (a != agent) & (vget(vc, a) < 1),
                 "overwrite of bytes an async operation read, before its completion is observed")):
            a = slots[idx]
            bad = bad_of(a)
            if bad.any():
                i, j = map(int, np.argwhere(bad)[0])
                b = int(idx[i])
                out.append(Conflict(RACE_ASYNC_PENDING.id, what, b, int(a[i, j]), -1, int(slocs[b, j]),
                                    int(lanes[i]) if lanes is not None else -1))
        if not atomic:
            out += self._check_atomics(idx, vc, lanes, "write", strong)
        wa = self.w_agent[idx]
        bad = (wa >= 0) & (wa != agent) & (vget(vc, wa) < self.w_clk[idx])
        out += self._ordering(bad & ms, idx, lanes)
        bad &= ~ms
        if bad.any():
            i, b, ln = self._first(bad, idx, lanes)
            rule = RACE_ASYNC_PENDING.id if (self.w_proxy[b] == ASYNC or proxy == ASYNC) else self.race_rule
            out.append(Conflict(rule, "write-after-write, not ordered", b, int(wa[i]), int(self.w_lane[b]),
                                int(self.w_loc[b]), ln))
        elif proxy == ASYNC:
            gen = (wa >= 0) & (self.w_proxy[idx] == GENERIC) & (vget(fence_clk, wa) < self.w_clk[idx])
            out += self._proxy_conflicts(gen, idx, lanes, wa, issuer_fence, "async-proxy write over a generic-proxy "
                                         "write with no fence.proxy.async after the write")
        if self.dense:
            rc = self.r_clk[idx]  # (k, W)
            mine = self.agents == agent
            unordered = (rc > vget(vc, self.agents)[None, :]) & ~mine[None, :]
            if unordered.any():
                i, j = map(int, np.argwhere(unordered)[0])
                b = int(idx[i])
                rule = RACE_ASYNC_PENDING.id if proxy == ASYNC else self.race_rule
                out.append(Conflict(rule, "write-after-read, not ordered", b, int(self.agents[j]), -1,
                                    int(self.r_loc[b, j]), int(lanes[i]) if lanes is not None else -1))
            elif proxy == ASYNC:
                unfenced = (rc > 0) & (rc > vget(fence_clk, self.agents)[None, :]) & ~mine[None, :]
                if unfenced.any():
                    i, j = map(int, np.argwhere(unfenced)[0])
                    b = int(idx[i])
                    out.append(Conflict(RACE_ASYNC_PROXY.id,
                                        "async-proxy write over a generic-proxy read with no fence.proxy.async "
                                        "after the read", b, int(self.agents[j]), -1, int(self.r_loc[b, j])))
        else:
            ra = self.r_agent[idx]
            bad = (ra >= 0) & (ra != agent) & (vget(vc, ra) < self.r_clk1[idx])
            if bad.any():
                i, j = map(int, np.argwhere(bad)[0])
                b = int(idx[i])
                out.append(Conflict(self.race_rule, "write-after-read, not ordered", b, int(ra[i, j]),
                                    int(self.r_lane[b, j]), int(self.r_loc1[b, j]),
                                    int(lanes[i]) if lanes is not None else -1))
        return out

    def _ordering(self, pair, idx, lanes):
        """An ordering conflict (see ``Conflict.ordering``) for the first position of ``pair``
        (morally strong, unordered accesses of another warp's last write)."""
        if not pair.any():
            return []
        i, b, ln = self._first(pair, idx, lanes)
        return [Conflict(self.race_rule, "morally strong accesses not ordered by happens-before", b,
                         int(self.w_agent[b]), int(self.w_lane[b]), int(self.w_loc[b]), ln, ordering=True)]

    def _check_strong_readers(self, idx, agent, vc, lanes, strong):
        """Conflicts of a write with the strong reads since the last write (kept apart from
        the reader records) by another warp, unordered: a data race unless morally strong
        with it, else an ordering conflict."""
        if not self.strong_r:
            return []
        for i, b in enumerate(idx.tolist()):
            for a, (clk, loc, lane, st) in self.strong_r.get(b, {}).items():
                if a != agent and int(vget(vc, np.array([a]))[0]) < clk:
                    ms = st.morally_strong(strong)
                    return [Conflict(self.race_rule, "morally strong accesses not ordered by happens-before" if ms
                                     else "write-after-read, not ordered", b, a, lane, loc,
                                     int(lanes[i]) if lanes is not None else -1, ordering=ms)]
        return []

    # ------------------------------------------------------------------ records
    @staticmethod
    def _add_readers(masks, since, col, idx, keep, lanes, order):
        """Add reader ``lanes`` to the lane masks ``masks`` (column ``col``) of bytes ``idx``,
        with ``since`` the warp's point count at the latest of those reads (a later write checks
        every lane of the mask against it: conservative for the earlier readers): kept where
        ``keep`` and no point of every lane passed since, else started afresh."""
        if order is None or lanes is None:
            masks[idx, col] = 0
            return
        fresh = ~keep | (since[idx, col] < order.full) | (masks[idx, col] == 0)
        since[idx, col] = order.now
        masks[idx, col] = np.where(fresh, 0, masks[idx, col]).astype(np.uint32)
        masks.at(np.bitwise_or, (idx, col), lane_bits(lanes))

    def record_read(self, idx, agent, clk, loc, lanes=None, column=None, vc=None, order=None, strong=None):
        if strong is not None:
            for b, lane in zip(idx.tolist(), (lanes if lanes is not None else np.full(len(idx), -1)).tolist()):
                self.strong_r.setdefault(b, {})[agent] = (clk, loc, int(lane), strong)
            return
        if self.dense:
            if column is None:  # a reader with no column (another CTA of the cluster)
                self._lose(idx, np.ones(len(idx), bool))
                return
            self.r_clk[idx, column] = clk
            self.r_loc[idx, column] = loc
            self._add_readers(self.r_lanes, self.r_wsync, column, idx, np.ones(len(idx), bool), lanes, order)
        else:
            self._record_global_read(idx, agent, clk, loc, lanes, vc, order)

    def _record_global_read(self, idx, agent, clk, loc, lanes, vc, order):
        """Put the read into the byte's slot of ``agent``, else a free slot or one whose reader
        is ordered before this read; with none, grow the slots (up to GLOBAL_READER_SLOTS), and
        past that replace the first slot and mark the byte lost. Every position of ``idx``
        of one byte picks the same slot (they see the same row)."""
        while True:
            ra = self.r_agent[idx]
            own = ra == agent
            free = (ra < 0) | (vget(vc, ra) >= self.r_clk1[idx] if vc is not None else np.zeros(ra.shape, bool))
            has = own.any(axis=1) | free.any(axis=1)
            k = ra.shape[1]
            if has.all() or k >= GLOBAL_READER_SLOTS:
                break
            self._reader_slots(min(2 * k, GLOBAL_READER_SLOTS))
        self._lose(idx, ~has)
        col = np.where(own.any(axis=1), own.argmax(axis=1), np.where(has, free.argmax(axis=1), 0))
        keep = own.any(axis=1)
        self.r_agent[idx, col] = agent
        self.r_clk1[idx, col] = clk
        self.r_loc1[idx, col] = loc
        if lanes is not None:
            self.r_lane[idx, col] = lanes
        if order is None or lanes is None:
            self.r_lanes1[idx, col] = 0
            return
        fresh = ~keep | (self.r_wsync1[idx, col] < order.full) | (self.r_lanes1[idx, col] == 0)
        self.r_wsync1[idx, col] = order.now
        self.r_lanes1[idx, col] = np.where(fresh, 0, self.r_lanes1[idx, col]).astype(np.uint32)
        self.r_lanes1.at(np.bitwise_or, (idx, col), lane_bits(lanes))

    def record_write(self, idx, agent, clk, loc, lanes=None, proxy=GENERIC, order=None, strong=None, rel=None):
        """The last write of ``idx`` (``strong``: its Strength; ``rel``: its release clock)."""
        if strong is not None or self.strong_w or self.strong_r or self.rel:
            for b in np.unique(idx).tolist():
                self.strong_r.pop(b, None)
                if strong is None:
                    self.strong_w.pop(b, None)
                else:
                    self.strong_w[b] = strong
                if rel is None:
                    self.rel.pop(b, None)
                else:
                    self.rel[b] = (rel, strong)
        self.w_agent[idx] = agent
        self.w_wsync[idx] = order.now if order is not None else 0
        self.w_clk[idx] = clk
        self.w_loc[idx] = loc
        self.w_proxy[idx] = proxy
        if lanes is not None:
            self.w_lane[idx] = lanes
        self.ra_agent.clear(idx)  # (back to the fill: no page of another group is stored for it)
        if self.dense:
            self.r_clk.clear(idx)
            self.r_lanes.clear(idx)
        else:
            self.r_agent.clear(idx)
            self.r_lanes1.clear(idx)
        if self.uninit is not None:
            self.uninit[idx] = False
        if self.lost is not None:
            self.lost[idx] = False
        if self.has_atom is not None and self.has_atom[idx].any():
            for b in idx[self.has_atom[idx]].tolist():
                self.atom_vc.pop(b, None)
                self.atom_op.pop(b, None)
                self.atom_loc.pop(b, None)
                self.atom_strength.pop(b, None)
                self.atom_read.discard(b)
                self.atom_lane.pop(b, None)
            self.has_atom[idx] = False
