"""Race freedom of mbarrier ring-buffer pipelines (TMA / ``cp.async.bulk`` producers, wgmma or
generic-load consumers) for every loop iteration and trip count: a static happens-before
argument over the facts of :mod:`kverify.verifier.mbarrier`.

Owns the static evidence for "race-free: async" (rules ``race.async-pending``,
``race.async-proxy``) of such kernels, and for "race-free: shared" where the kernel makes no
generic-proxy write to shared memory. One symbolic thread runs the kernel body (the mbarrier
executor, extended here to record copy destinations, wgmma operand footprints, wgmma
commit / wait_group, ``fence.proxy.async`` and warp barriers); every instruction site inside
a single loop is a function of that loop's iteration counter, and every site in the two loops
of a ring the parity obligation proved (the stage and phase carried across a tile loop and a k
loop, :mod:`kverify.verifier.mbarrier.ring`) a function of the ring count: its values are
closed forms of the ring position and the thread, proved once (``prove_closed``), and "the
iteration" below is the ring count. Then, with z3:

* premises: the three mbarrier conformance obligations (parity, tx bytes, arrivals) are proved
  for the same symbolic launch, every blocking wait's role offset is known, and every
  barrier site runs in every iteration with a reuse distance ``d`` (``a(k+d) == a(k)``, no
  smaller one): the signal (copy complete-tx, arrive) at iteration ``k`` then belongs to phase
  ``n(k) = k div d`` of barrier ``a(k)``, and a wait at ``k`` returns only after phase
  ``n(k) - offset`` completed (§9.7.13.15.4 phases, §9.7.13.15.16 try_wait.parity);
* no early signal: a signal of use ``n >= 1`` follows, through a wait before it in its
  iteration, the completion of phase ``n - 1`` of its barrier (directly, or through every
  arrival of the phase it waits for) -- with the premises, the induction that makes phase
  ``n`` consist of exactly the use-``n`` signals;
* edges: a copy at ``k`` completes phase ``n(k)``; an access after a wait (same iteration,
  program order, executed whenever the access is) for phase ``m >= n(k)`` of the same
  barrier is ordered after the copy (§9.7.9.25.4.1 complete-tx, §9.7.13.15.11). An access is
  released by an arrive after it (the same thread, or a thread of its warp after a warp
  barrier or, for wgmma, after the warp-collective ``wgmma.wait_group N`` that retired its
  group: at least ``N`` commits after the wgmma's own before the wait, §9.7.15.7
  async groups); a generic access released towards an async-proxy write needs a
  ``fence.proxy.async`` between the access and the release (§8.6 proxies). A copy is also
  ordered before a later access when every arrival of the phase the access's wait names
  follows a wait on the copy's phase (write-after-write through the consumers);
* for every pair of a copy (iteration ``k``, one thread) and another access of overlapping
  bytes (iteration ``k'``, another or the same thread), z3 is asked for an instance where
  neither is ordered before the other: unsat -> proved.

A barrier no loop site names is used in program order (``_straight_use``): its sites are outside
every loop, one instance per thread ("iteration" 0), and a site's use is the number of waits on
it its threads ran before; two accesses outside every loop are paired as one iteration's, a
CTA barrier every thread runs ordering a generic access before a later copy
(``cta_barrier_between``, with ``fence.proxy.async`` towards the async proxy). What the threads
write and an asynchronous read takes (a wgmma's staged operands, a bulk store's tile) is ordered
by such a barrier, outside every loop or in a loop all threads run alike (``barrier_order``,
``_staged_pair``), the read first retired by its wait (``_retire``); and no instruction
outside the wgmma family may touch an in-flight wgmma's registers
(:mod:`kverify.verifier.races.wgmma_regs`).

Anything outside the encoding -- nested loops without such a ring (or a ring also waited on
before its inner loop), a stage access outside the copy's loop, barrier sites that are not
periodic or skip iterations (a wait outside every loop after the loop waits on its barrier
orders nothing the argument counts: not counted), unrecognized (non-blocking) waits, async
operations other than bulk copies into and out of shared memory and wgmma, a thread-dependent barrier
address -- makes the obligation ``unknown`` with the reason; an unordered instance is
``unknown`` with both lines and iterations (the interpreter replays races), except a generic
access ordered with an async-proxy write only without the proxy fence, which is ``violated``
(``race.async-proxy``) when no approximated value is involved.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

import z3

from kverify.semantics.memory_model.execution import RACE_ASYNC_PENDING, RACE_ASYNC_PROXY
from kverify.semantics.ir.nodes import Addr, Imm, VecOp
from kverify.semantics.ir.optable import proxy_fence_spaces
from kverify.semantics.ir.types import SCALAR_BITS
from kverify.semantics.memory_model import wgmma as WG
from kverify.symbolic import TRUE, Substitution, mk_and, mk_not, mk_or, operand, row_of, sync_of
from kverify.verifier.mbarrier import arrivals, parity, tx
from kverify.verifier.races import wgmma_regs
from kverify.verifier.mbarrier.static import run_obligations, uses_mbarrier
from kverify.verifier.mbarrier.facts import MAX_REUSE, Facts
from kverify.verifier.mbarrier.ring import invariant_part, variant_names
from kverify.verifier.mbarrier.ring import select as ring_select
from kverify.verifier.mbarrier.sites import MbarExecutor
from kverify.verifier.report import Obligation

TITLE_ASYNC = "race-free: async"
TITLE_SHARED = "race-free: shared"
CLAIM = "every loop iteration and trip count, every value of the scalar parameters, every schedule"


class Uncovered(Exception):
    """Something the pipeline argument does not cover (the message says what)."""


class PremiseUnknown(Uncovered):
    """A premise (mbarrier obligation) gave no answer: another launch binding may still prove it."""


@dataclass
class Ev:
    """One instruction site of the symbolic thread that the argument uses."""

    kind: str  # copy | wgmma | bulkread | read | write | commit | wgwait | bcommit | bwait | fence | other
    instr: object
    seq: int
    pc: object
    loops: tuple
    lo: object = None  # BV32 first shared byte
    hi: object = None  # BV32 one past the last byte
    n: int = 0  # wgmma.wait_group N, cp.async.bulk.wait_group N
    mbar: object = None  # the MbarSite of a copy
    why: str = ""  # an access whose footprint is not understood
    src: str | None = None  # a copy's global source: "param:<name>" of its pointer, "buffer:<name>" of its
    #                          tensor map's buffer, or None (not known)

    @property
    def line(self):
        return self.instr.loc.line or self.instr.loc.ptx_line

    @property
    def generic(self) -> bool:
        return self.kind in ("read", "write")

    @property
    def writes(self) -> bool:
        return self.kind in ("copy", "write")


class _NotModelled(Exception):
    """The symbolic run met something its shared-memory encoding does not cover: the pipeline
    argument cannot conclude, so the rest of the run is not needed."""


class PipelineExecutor(MbarExecutor):
    """The mbarrier executor, also recording what the pipeline argument needs (module docstring).
    It stops at the first thing the shared-memory encoding does not cover (``_NotModelled``): the
    argument would end there anyway, with that reason (on CUTLASS's GEMMs, after seconds of
    loop summaries) -- unless its run also stands for the static mbarrier obligations
    (``stop = False``: the run goes on, as :class:`MbarExecutor`'s would, so that the kernel
    is not run symbolically twice)."""

    stop = True

    def __init__(self, env, check, launch=None):
        super().__init__(env, check, launch)
        self.events: list = []

    def reason(self, msg: str, space: str | None = None, ordering: bool = False):
        super().reason(msg, space, ordering)
        if self.reasons["shared"] and self.stop:
            raise _NotModelled(self.reasons["shared"][0])

    def epochs_unsummarized(self, msg: str):
        pass  # the argument orders by mbarrier phases and barriers within one iteration, not by intervals

    def _loop_attempt(self, lp, st, ivs, mode, written, region_unknown):
        mark = len(self.events)
        res = super()._loop_attempt(lp, st, ivs, mode, written, region_unknown)
        if res[0] != "ok":
            del self.events[mark:]  # the attempt is undone
        return res

    def async_instr(self, ins, st, guard):
        sync, row = sync_of(ins), row_of(ins)
        pc = mk_and(st.pc, guard)
        loops = tuple(self.loop_stack)
        ev = lambda kind, **kw: self.events.append(Ev(kind, ins, self.seq_of(ins), pc, loops, **kw))
        if sync == "bulk.copy":
            dst = ins.operands[0]
            if sum(m.startswith("shared") for m in ins.mods) > 1:  # its source reads are not modelled
                ev("other", why=f"{ins.opcode}: a bulk copy from shared memory into shared memory (the argument "
                   "orders what copies write, not what they read of shared memory)")
            elif _dst_shared(ins) and operand(ins, "size") is not None:  # a byte count, not a tensor box
                lo, _ = self._mbar_addr(st, dst)
                size = self._val32(st, operand(ins, "size"))
                ev("copy", lo=lo, hi=(lo + size) if lo is not None and size is not None else None,
                   why="" if lo is not None and size is not None else "copy destination or size not understood",
                   src=self._copy_source(ins, st))
            elif _dst_shared(ins):
                lo, _ = self._mbar_addr(st, dst)
                size, why = self._tensor_bytes(ins)
                ev("copy", lo=lo, hi=(lo + size) if lo is not None and size is not None else None,
                   why=why or ("" if lo is not None else "copy destination not understood"),
                   src=self._copy_source(ins, st))
            elif len(ins.operands) > 1 and _src_shared(ins):  # a bulk (TMA) store: reads the source until retired
                src = ins.operands[1]
                lo, _ = self._mbar_addr(st, src)
                if operand(ins, "size") is not None and "tensor" not in ins.opcode:
                    size, why = self._val32(st, operand(ins, "size")), ""
                else:
                    size, why = self._tensor_bytes(ins)
                ev("bulkread", lo=lo, hi=(lo + size) if lo is not None and size is not None else None,
                   why=why or ("" if lo is not None and size is not None else "bulk store source not understood"))
            else:
                ev("other", why=f"{ins.opcode}: an asynchronous operation the pipeline argument does not model")
        elif sync == "wgmma.mma":
            spans, why = self._wgmma_footprint(ins, st)
            for lo, hi in spans or [(None, None)]:
                ev("wgmma", lo=lo, hi=hi, why=why)
        elif sync == "wgmma.commit":
            ev("commit")
        elif sync == "bulk.commit":
            ev("bcommit")
        elif sync == "bulk.wait":
            n = operand(ins, "n")
            ev("bwait", n=n.value if isinstance(n, Imm) else -1)
        elif sync == "wgmma.wait":
            n = operand(ins, "n")
            ev("wgwait", n=n.value if isinstance(n, Imm) else -1)
        elif sync == "fence.proxy.async":
            if "shared" in proxy_fence_spaces(ins):  # a .global fence orders no stage access (§9.7.13.4)
                ev("fence")
        elif row is not None and row.effect == "async" or sync in ("cp.async", "cp.async.commit", "cp.async.wait",
                                                                  "cp.async.wait_all", "bulk.commit", "bulk.wait"):
            if sync not in ("bulk.commit", "bulk.wait", "cp.async.commit", "cp.async.wait", "cp.async.wait_all"):
                ev("other", why=f"{ins.opcode}: an asynchronous operation the pipeline argument does not model")
        return super().async_instr(ins, st, guard)

    def _copy_source(self, ins, st):
        """The global buffer a copy reads: ``param:<name>`` of the pointer its source address is
        derived from, ``buffer:<name>`` of its tensor map's buffer (the launch's), or None."""
        if operand(ins, "size") is None:  # a tensor copy: the tensor map's buffer
            tm, _ = self.tensor_map(ins)
            return f"buffer:{tm['buffer']}" if isinstance(tm, dict) and tm.get("buffer") else None
        src = ins.operands[1]
        if not isinstance(src, Addr) or src.base is None:
            return None
        _, region = self.read(st, src.base, None)
        return region if isinstance(region, str) and region.startswith("param:") else None

    def _wgmma_footprint(self, ins, st):
        """The shared bytes the wgmma's descriptor operands may cover: [lo, hi) around the start
        address, over-approximated for every majorness (no swizzle only)."""
        shape = next((m for m in ins.mods if m.startswith("m64n")), None)
        if shape is None:
            return None, "wgmma shape not understood"
        m, n, k = WG.mma_dims(shape)
        tys = ins.types()
        bits = SCALAR_BITS.get(tys[1]) if len(tys) > 1 else None
        if bits is None:
            return None, f"wgmma operand type {tys} not understood"
        esz = bits // 8
        spans = []
        a_op, b_op = operand(ins, "a"), operand(ins, "b")
        for op, rows in ((a_op, m), (b_op, n)):
            if op is None:
                return None, "wgmma operand missing"
            if isinstance(op, VecOp):
                continue  # A from registers
            t, _ = self.read(st, op, 64)
            if t is None or z3.is_bool(t) or t.size() != 64:
                if op is a_op:
                    continue  # A from registers
                return None, "wgmma descriptor not understood"
            t = z3.simplify(t)
            # every field but the start address (bits 0-13) must be constant: decode those bits
            rest = z3.simplify(t & z3.BitVecVal(~0x3FFF & ((1 << 64) - 1), 64))
            if not z3.is_bv_value(rest):
                return None, "wgmma descriptor: LBO, SBO, base offset or swizzle not constant"
            d = WG.decode_descriptor(rest.as_long())
            if d.base_offset or d.swizzle != "none":
                return None, "wgmma descriptor with a swizzle or base offset (footprint not modelled)"
            name = {1: "int8", 2: "float16", 4: "tf32"}[esz]
            offs = []
            for major in ("K", "MN"):
                try:
                    a = WG.operand_byte_addresses(d, rows, k, name, major)
                except (ValueError, NotImplementedError) as e:
                    return None, f"wgmma operand layout: {e}"
                offs += [int(a.min()), int(a.max()) + esz]
            # the start address, as decode_descriptor reads it, symbolic here
            start = z3.simplify(z3.Concat(z3.Extract(13, 0, t), z3.BitVecVal(0, 4)))
            start = z3.ZeroExt(14, start)
            spans.append((start + min(offs), start + max(offs)))
        return spans, ""


def _when(e, k) -> str:
    """Where in its loops the instance ``k`` of ``e`` is: an iteration, or a ring's step (count)."""
    if not e.loops:
        return "(outside every loop)"
    return f"at ring step {k}" if len(e.loops) == 2 else f"in iteration {k}"


def _key(loops) -> tuple:
    """The loops a site is in, as identities (sites of one iteration share them)."""
    return tuple(id(i) for i, _ in loops)


def _src_shared(ins) -> bool:
    """A bulk copy out of shared memory (``.global.shared::cta``, a store or a reduction): its
    destination is not shared memory (``_dst_shared``), its source is."""
    return not _dst_shared(ins) and any(m.startswith("shared") for m in ins.mods)


def _dst_shared(ins) -> bool:
    """The bulk copy writes shared memory (its first state-space modifier is the destination)."""
    for m in ins.mods:
        if m.startswith("shared"):
            return True
        if m == "global":
            return False
    return False


class PipelineFacts(Facts):
    """The mbarrier facts, run with :class:`PipelineExecutor`."""

    executor = PipelineExecutor

    def __init__(self, *args, stop: bool = True):
        super().__init__(*args)
        self.stop = stop

    def _run(self, ex):
        ex.stop = self.stop
        try:
            ex.run()
        except _NotModelled:
            pass  # ex.reasons["shared"] says why (_Proof.run)


def symbolic_launch(launch):
    """``launch`` with its scalar arguments dropped (symbolic): a proof then holds for every
    value of them -- every trip count. By-value structs (tensor maps) stay."""
    if launch is None:
        return None
    args = {k: v for k, v in (launch.args or {}).items() if isinstance(v, dict)}
    return replace(launch, args=args)


def applies(module, kernel) -> bool:
    """The kernel has a bulk copy or a wgmma."""
    from kverify.semantics.ir.visit import instructions

    syncs = {sync_of(i) for i in instructions(kernel.body)}
    return bool(syncs & {"bulk.copy", "wgmma.mma"})


def check_pipeline_races(module, kernel=None, launch=None, timeout_s: float = 10.0, keep: list | None = None) -> list:
    """Static evidence for "race-free: async" (and "race-free: shared" when the kernel has no
    generic shared write) of an mbarrier pipeline; ``[]`` when the kernel is not one. ``keep``
    (a list) receives the static mbarrier obligations when its premises were computed on the
    launch as given (no scalar parameter to drop) over a complete symbolic run: what
    ``check_mbarrier`` would return for the same launch, without a second run."""
    t0 = time.perf_counter()
    if kernel is None or isinstance(kernel, str):
        kernel = module.kernel(kernel)
    if not applies(module, kernel):
        return []
    scalars = {k: v for k, v in ((launch.args or {}) if launch is not None else {}).items()
               if not isinstance(v, dict)}
    # first every value of the scalar parameters (every trip count); when a premise gives no
    # answer there, the launch's own values (a proof for those only, said in its scope)
    attempts = [(True, timeout_s / 4 if scalars else timeout_s)] + ([(False, timeout_s)] if scalars else [])
    why, first = "", ""
    for symbolic, budget in attempts:
        try:
            obs = _Proof(module, kernel, launch, budget, t0, symbolic, keep if not scalars else None).run()
            if first and obs[0].status == "proved":
                obs[0].message += f"; not proved for every value of the scalar parameters: {first}"
            return obs
        except PremiseUnknown as e:
            why = str(e)
            first = first or why
            continue
        except Uncovered as e:
            why = str(e)
        except z3.Z3Exception as e:
            why = f"solver error: {e}"
        except Exception as e:  # noqa: BLE001 - fail closed
            why = f"internal error in the pipeline race argument ({type(e).__name__}: {e})"
        break
    return [Obligation(TITLE_ASYNC, "races", "unknown", f"pipeline argument: {why}", None, [], None,
                       time.perf_counter() - t0)]


class _Proof:
    def __init__(self, module, kernel, launch, timeout_s, t0, symbolic=True, keep=None):
        self.module, self.kernel, self.launch = module, kernel, launch
        self.keep = keep
        self.symbolic = symbolic
        self.timeout_s, self.t0 = timeout_s, t0
        self.tags = {}
        self.fresh_n = 0
        self.extra: list = []
        self.clocks: dict = {}  # loops -> (wait, Ring, definitions of its positions): _ring_clocks
        self.private: list = []  # further symbols of one thread instance (ring positions)
        self.unclocked: dict = {}  # loops -> why the ring proved over them does not count their sites
        self.tables: dict = {}  # id(barrier site in a ring's loops) -> its barrier at each ring position
        self._counted = None  # the barrier sites the argument counts (``counted``)
        self.luse: dict = {}  # id(barrier site outside every loop) -> its use of its barrier (``_straight_use``)
        self.positions: dict = {}  # name of a ring count variable -> (quotient, position, their definition)

    # ------------------------------------------------------------------ driver
    def run(self):
        wanted = self.keep is not None and uses_mbarrier(self.module, self.kernel)
        chk = self.chk = PipelineFacts(self.module, self.kernel,
                                       symbolic_launch(self.launch) if self.symbolic else self.launch, self.timeout_s,
                                       self.t0, stop=not wanted).prepare()
        env = self.env = chk.env
        reasons = chk.ex.reasons["shared"]
        premises = None
        if wanted:
            premises = run_obligations(chk)  # the static mbarrier obligations, over the whole run
            self.keep.append(premises)
        if reasons:
            raise Uncovered(f"the symbolic run does not model everything: {reasons[0]}")
        evs = [e for e in chk.ex.events]
        self.group = [e for e in evs if e.kind in ("commit", "wgwait", "fence", "bcommit", "bwait")]
        reads = [e for e in evs if e.kind in ("wgmma", "bulkread") and not e.why]
        generic = [Ev("write" if a.writes else "read", a.instr, a.seq, a.pc, a.loops, a.addr,
                      a.addr + a.width) for a in chk.ex.accesses if a.space == "shared"]
        # generic writes read by wgmma (the proxy rule in one thread's program order)
        proxy_viol = self._proxy_program_order(generic, reads)
        if proxy_viol is not None:
            return self._out([proxy_viol], generic)
        if env.block is None:
            raise Uncovered("block size unknown (the warp-level release argument counts threads)")
        if any(e.kind == "wgmma" for e in evs):  # the registers an in-flight wgmma owns (its pairs here are memory)
            hz = wgmma_regs.hazards(self.kernel)
            if isinstance(hz, str):
                raise Uncovered(hz)
            if hz:
                h = hz[0]
                locs = [chk.loc(h.access), chk.loc(h.wgmma)]
                return self._out([Obligation(
                    TITLE_ASYNC, "races", "unknown",
                    f"pipeline argument: the {h.access.opcode} at {locs[0]} may access {', '.join(h.registers[:4])} of "
                    f"the wgmma at {locs[1]} before a wgmma.wait_group retires it (§9.7.15.7: undefined while the "
                    f"wgmma is in flight){f'; {len(hz) - 1} more such access(es)' if len(hz) > 1 else ''}",
                    None, locs, None, 0.0)], generic)
        self._sites_counted()  # before the premises' queries: what no premise can make countable
        for i, (what, fn) in enumerate((("parity", parity.check), ("tx bytes", tx.check), ("arrivals", arrivals.check))):
            chk.budget.restart()
            o = premises[i] if premises else fn(chk)
            if o.status != "proved":
                raise (PremiseUnknown if o.status == "unknown" else Uncovered)(
                    f"the mbarrier phase correspondence is not proved{' for every trip count' if self.symbolic else ''} "
                    f"({o.title}: {o.status}: {o.message[:300]})")
        chk.budget.restart()
        # the rings the parity obligation proved: their count is the iteration of the sites in
        # their two loops (one ring per pair of loops: its threads' sites are counted by it)
        self._ring_clocks()
        for s in self.counted():
            if len(s.loops) == 2:
                self.clock(s.loops)  # the sites in nested loops are those of a ring
        for key, (w, _, _) in self.clocks.items():  # every value the argument reads of a ring, in one query
            terms = [t.addr for t in chk.sites if t.kind not in ("init", "inval") and t.addr is not None
                     and _key(t.loops) == key]
            terms += [t for e in evs if e.kind in ("copy", "wgmma") and _key(e.loops) == key
                      for t in (e.lo, e.hi) if t is not None]
            terms += [t for a in chk.ex.accesses if a.space == "shared" and _key(a.loops) == key
                      for t in (a.addr, a.addr + a.width)]
            self.prove_closed(terms, w.loops)
        if self.clocks:  # the program-order proxy rule in a ring's loops, now that they are counted
            proxy_viol = self._proxy_program_order(generic, reads, rings=True)
            if proxy_viol is not None:
                return self._out([proxy_viol], generic)
        self._barrier_sites()
        others = [e for e in evs if e.kind == "other"]
        if others:
            raise Uncovered(f"line {others[0].line}: {others[0].why}")
        # the accesses the argument is about: async copies into shared memory, wgmma operand
        # reads, and the generic shared accesses that may overlap them
        copies = [e for e in evs if e.kind == "copy"]
        reads = [e for e in evs if e.kind == "wgmma"]
        generic = [Ev("write" if a.writes else "read", a.instr, a.seq, a.pc, a.loops, a.addr,
                      a.addr + a.width) for a in chk.ex.accesses if a.space == "shared"]
        stores = [e for e in evs if e.kind == "bulkread"]
        for e in copies + reads + stores:
            if e.why:
                raise Uncovered(f"line {e.line}: {e.why}")
        if not copies and not reads and not stores:
            raise Uncovered("no asynchronous copy into or out of shared memory and no wgmma")
        pairs = []
        for i, x in enumerate(copies):
            for y in copies[i:] + reads + stores + generic:
                pairs.append((x, y))
        self._early_signals()
        unordered = []
        for x, y in pairs:
            r = self._pair(x, y)
            if r is not None:
                if r.status == "violated":
                    return self._out([r], generic)
                unordered.append(r)
        staged = [(r, g) for r in reads + stores for g in generic if g.writes]  # what the threads write, read async
        for r, g in staged:
            o = self._staged_pair(r, g)
            if o is not None:
                if o.status == "violated":
                    return self._out([o], generic)
                unordered.append(o)
        pairs += staged
        if unordered:
            return self._out([unordered[0]], generic)
        locs = sorted({(e.line, e.instr.opcode) for e in copies + reads + stores + generic})
        lines = ", ".join(f"{op.split('.')[0]}{'.' + op.split('.')[1] if op.startswith('cp.') else ''} line {ln}"
                          for ln, op in locs)
        loops = sorted({f"loop {e.loops[0][0].name}" if len(e.loops) == 1 else
                        f"the ring over loops {' and '.join(i.name for i, _ in e.loops)}"
                        for e in copies + reads + stores + generic if e.loops})
        claim = CLAIM if self.symbolic else (
            "every loop iteration, every schedule, the launch's scalar arguments ("
            + ", ".join(f"{k}={v}" for k, v in self.env.param_values.items()) + ")")
        where = ", ".join(loops) if loops else "no loop: each site once per thread"
        bound = (f"{claim} ({where}); {'; '.join(self.env.scope[:1])}; the stage accesses {lines}"
                 + ("; the copies' global reads taken within their buffers (memory safety is the run's)"
                    if copies else ""))
        said = []
        if copies:
            said.append(f"every pair of an asynchronous copy into a stage and another access of its bytes is ordered "
                        f"by the mbarrier ring ({len(pairs) - len(staged)} site pairs; premises: the parity, tx-byte "
                        f"and arrival obligations, proved {'for every trip count' if self.symbolic else 'for the same launch'})")
        if staged:
            said.append(f"every {'wgmma operand read' if reads else 'bulk store'}{' or bulk store' if reads and stores else ''}"
                        f" and generic write of its bytes ({len(staged)} site pairs) is ordered by a CTA barrier, with "
                        "fence.proxy.async after the writes and the asynchronous read retired before the next ones")
        if reads:
            said.append("no instruction but the wgmma family touches an in-flight wgmma's registers before the "
                        "wgmma.wait_group that retires it")
        msg = "; ".join(said)
        locs = list(dict.fromkeys(self.chk.loc(e.instr) for e in copies + reads + stores))[:6]
        written = self._sources_written(copies)
        if written:
            return self._out([Obligation(
                TITLE_ASYNC, "races", "unknown",
                f"pipeline argument: in shared memory, {msg}; not proved: {written} (what the copies read of global "
                "memory is ordered with the kernel's writes only by the run)", None, locs, None,
                time.perf_counter() - self.t0)], generic)
        if stores:  # what the async proxy writes to global memory is not ordered here: no proof of the obligation
            return self._out([Obligation(
                TITLE_ASYNC, "races", "unknown",
                f"pipeline argument: in shared memory, {msg}; not proved: the global bytes the bulk store at "
                f"{self.chk.loc(stores[0].instr)} writes (a store, or a reduction's read-modify-write) are not ordered "
                "by this argument (the run's)", None, locs, None, time.perf_counter() - self.t0)], generic)
        ok = Obligation(TITLE_ASYNC, "races", "proved", msg, bound, locs,
                        None, time.perf_counter() - self.t0)
        return self._out([ok], generic)

    def _sources_written(self, copies) -> str:
        """Why the copies' global reads may meet a write of the kernel ('' when they cannot): every
        generic global write names a pointer parameter other than the copies' sources (distinct
        pointer parameters are assumed not to alias, as the two-thread checker assumes), and a
        tensor map's buffer is not also passed as a pointer the kernel writes."""
        chk = self.chk
        writes = [a for a in chk.ex.accesses if a.space == "global" and a.writes]
        if not writes:
            return ""
        for c in copies:
            if c.src is None:
                return (f"the global source of the copy at {chk.loc(c.instr)} is not known, and the kernel writes "
                        f"global memory (at {chk.loc(writes[0].instr)})")
            for w in writes:
                name = (w.region or "").split(":", 1)[1] if (w.region or "").startswith("param:") else None
                if name is None or c.src in (f"param:{name}", f"buffer:{name}"):
                    return (f"the write at {chk.loc(w.instr)} may touch the global bytes the copy at "
                            f"{chk.loc(c.instr)} reads ({c.src.split(':', 1)[1]})")
        return ""

    def _out(self, obs, generic):
        o = obs[0]
        o.time_s = time.perf_counter() - self.t0
        out = [o]
        if o.status == "proved" and not any(g.writes for g in generic):
            out.append(Obligation(TITLE_SHARED, "races", "proved",
                                  "no generic-proxy write to shared memory: every shared write is an asynchronous "
                                  "copy, ordered as 'race-free: async' says", o.bound, [], None, 0.0,
                                  rests_on=TITLE_ASYNC))
        return out

    # ------------------------------------------------------------------ terms
    def tag_subst(self, tag):
        """Per-thread symbols of thread A renamed for the instance ``tag``."""
        if tag not in self.tags:
            subs = []
            for a in [a for a, _ in self.env.pairs] + self.private:
                nm = str(a)
                new = z3.Bool(f"{nm}@{tag}") if z3.is_bool(a) else z3.BitVec(f"{nm}@{tag}", a.size())
                subs.append((a, new))
            self.tags[tag] = (subs, {}, Substitution(subs))
        return self.tags[tag]

    def rename(self, term, tag):
        """``term`` with thread A's symbols renamed for instance ``tag``."""
        return self.tag_subst(tag)[2](term)

    def tag_constraints(self, tag, named):
        """Thread A's constraints renamed for instance ``tag``: those on the symbols ``named`` (the
        query's), and on the symbols those name, and so on (the others constrain nothing the
        query reads: leaving them out can only add solutions)."""
        _, done, fn = self.tag_subst(tag)
        if not hasattr(self, "_cons_syms"):
            self._cons_syms = [(c, self.chk.syms(c)) for c, _ in self.env.constraints_a]
        suffix = f"@{tag}"
        present = {n[:-len(suffix)] for n in named if n.endswith(suffix)} | {n for n in named if "@" not in n}
        picked, grew = set(), True
        while grew:
            grew = False
            for i, (c, ss) in enumerate(self._cons_syms):
                if i not in picked and ss & present:
                    picked.add(i)
                    present |= ss
                    grew = True
        for i in picked:
            if i not in done:
                c = self._cons_syms[i][0]
                done[i] = fn(c)
        return [done[i] for i in sorted(picked)]

    def at(self, term, loops, x, tag):
        """``term`` of a site in ``loops`` at iteration ``x`` of thread instance ``tag``: of one
        loop, its counter is ``x``. Of a ring's two loops, ``x`` is the ring count: a value is its
        closed form (``closed``: a function of the position of ``x`` in the ring and of the
        thread), a path condition its part that no iteration changes (implied by it)."""
        if len(loops) == 2:
            if z3.is_bool(term):
                term = self.fixed(term, loops)
            else:
                term = ring_select(self.closed(term, loops), self.position(x, self.clock(loops)[1].period)[1],
                                   term.size())
        elif len(loops) == 1:
            term = z3.substitute(term, (loops[0][1], x))
        return self.rename(term, tag)

    def rng(self, loops, x, tag):
        """Iteration ``x`` of ``loops`` exists for instance ``tag`` (as far as the argument
        needs: of a ring's two loops, any ring count; ``at`` gives its values there)."""
        if not loops:  # a site outside every loop: one instance per thread (iteration 0)
            return x == 0
        if len(loops) == 2:  # a ring count: below 2**31 iterations of each loop (ring.py)
            P = self.clock(loops)[1].period
            self.position(x, P)
            return self.positions[self._position_key(x, P)][2]
        lim = z3.ULT(x, z3.BitVecVal(1 << 31, 64))
        info = loops[0][0]
        if info.trip is None:
            return lim
        return mk_and(lim, z3.ULT(x, self.at(info.trip, loops, x, tag)))

    def state_at(self, term, loops, tag):
        """``term`` of a site in a ring's two loops with its loop-head registers replaced by the
        ring's forms, for instance ``tag`` (``state_rng`` ties it to a ring count)."""
        subst = self.clock(loops)[1].substitution
        term = z3.substitute(term, *subst) if subst else term
        return self.rename(term, tag)

    def state_rng(self, loops, x, tag):
        """Instance ``tag`` is one of the ring's threads in an iteration of both loops whose ring
        count is ``x``."""
        _, ring = self.clock(loops)
        cons = self.clocks[_key(loops)][2]
        return mk_and(z3.ULT(x, z3.BitVecVal(1 << 63, 64)),
                      self.state_at(mk_and(self.chk.ranges(loops), ring.role, cons), loops, tag),
                      self.state_at(ring.n, loops, tag) == x)

    def reached(self, fs, insts):
        """``sat`` of ``fs`` with each instance ``(site, x, tag)`` in a ring's loops tied to a state
        of its thread whose ring count is ``x`` (``state_rng``, and the site's path condition):
        a violation is reported at ring counts some thread reaches."""
        more = [mk_and(self.state_rng(e.loops, x, t), self.state_at(e.pc, e.loops, t))
                for e, x, t in insts if len(e.loops) == 2]
        return self.sat(list(fs) + more, [t for _, _, t in insts] + self.extra)

    def fixed(self, pc, loops):
        """The conjuncts of ``pc`` that no iteration of ``loops`` changes (memoized)."""
        key = ("fixed", pc.get_id(), _key(loops))
        if key not in self.chk.memo:
            self.chk.memo[key] = invariant_part(self.chk, pc, loops)
        return self.chk.memo[key]

    def closed(self, term, loops):
        """``term`` (a value computed in an iteration of a ring's two loops) at each ring position
        ``u``: terms of the thread and the launch only, read off an iteration past the loops'
        first (where the inner head holds the ring's forms) and proved for every iteration of
        every ring thread (``prove_closed``). Uncovered when it is not such a function."""
        key = ("closed", term.get_id(), _key(loops))
        memo = self.chk.memo
        if key not in memo:
            self.prove_closed([term], loops)
        if isinstance(memo[key], Uncovered):
            raise memo[key]
        return memo[key]

    def prove_closed(self, terms, loops):
        """``closed`` for ``terms`` at once: one query for all that are read off as functions of
        the ring position (each alone where that query does not prove them all)."""
        memo = self.chk.memo
        w, ring = self.clock(loops)
        P = ring.period
        variant = variant_names(self.chk, loops) | {str(p) for p in self.private}
        one = [(k, z3.BitVecVal(1, 64)) for _, k in loops]
        todo = {}
        for term in terms:
            key = ("closed", term.get_id(), _key(loops))
            if key in memo or key in todo:
                continue
            flat = z3.substitute(term, *ring.substitution) if ring.substitution else term
            vals = [z3.simplify(z3.substitute(flat, *one, *[(p, z3.BitVecVal(u, 8)) for p in self.private
                                                            if p.size() == 8])) for u in range(P)]
            if self.chk.syms(*vals) & variant:
                memo[key] = Uncovered(f"a value at {self.chk.loc(w.instr)}'s ring is not a function of the ring "
                                      "position and the thread")
            else:
                todo[key] = (term, vals)
        if not todo:
            return
        x = self.var("x")
        _, u = self.position(x, P)

        def differs(items):
            return mk_or(*[self.state_at(t, loops, "c") != self.rename(ring_select(vals, u, t.size()), "c")
                           for t, vals in items])

        base = self.state_rng(loops, x, "c")
        r = self.sat([base, differs(todo.values())], ["c"])[0]
        for key, (term, vals) in todo.items():
            if r != "unsat" and len(todo) > 1:
                r1 = self.sat([base, differs([(term, vals)])], ["c"])[0]
            else:
                r1 = r
            memo[key] = vals if r1 == "unsat" else Uncovered(
                f"a value in the loops of the ring waited on at {self.chk.loc(w.instr)} is not shown to be a function "
                f"of the ring position" + (" (solver gave no answer)" if r1 == "unknown" else ""))

    def _ring_clocks(self):
        """The rings the parity obligation proved (``Facts.rings``) whose count is the iteration
        of the sites in their two loops (one ring per pair of loops). Their forms select by the
        ring position ``t mod P`` of a count ``t``: each such position is a variable ``u`` of the
        instance, with ``t == q * P + u`` -- linear, where a 64-bit remainder costs z3 a divider."""
        self.clocks, self.tags = {}, {}
        for w, ring in self.chk.rings:
            if len(w.loops) != 2 or _key(w.loops) in self.clocks:
                continue
            if ring.hoisted:  # its count also advances outside the inner loop, where no site is counted by it
                self.unclocked.setdefault(_key(w.loops), (
                    f"the ring waited on at {self.chk.loc(w.instr)} is also waited on before its inner loop "
                    f"({self.chk.loc(ring.hoisted[0].instr)}): its count is not the step of its inner loop's sites"))
                continue
            i, P = len(self.clocks), ring.period
            found, seen = {}, set()

            def walk(e):  # the positions ``Extract(7, 0, t mod P)`` the forms select by (ring.py)
                if e.get_id() in seen or z3.is_const(e):
                    return
                seen.add(e.get_id())
                if (z3.is_app_of(e, z3.Z3_OP_EXTRACT) and e.params() == [7, 0]
                        and e.arg(0).decl().kind() in (z3.Z3_OP_BUREM, z3.Z3_OP_BUREM_I)
                        and z3.is_bv_value(e.arg(0).arg(1)) and e.arg(0).arg(1).as_long() == P):
                    found[e.get_id()] = e
                    return
                for c in e.children():
                    walk(c)

            for _, f in ring.substitution:
                walk(f)
            pos, cons = [], []
            for j, e in enumerate(found.values()):
                u, q = z3.BitVec(f"ring{i}.u{j}", 8), z3.BitVec(f"ring{i}.q{j}", 64)
                pos.append((e, u))
                cons += [e.arg(0).arg(0) == q * P + z3.ZeroExt(56, u), z3.ULT(u, P),
                         z3.ULT(q, z3.BitVecVal((1 << 63) // P, 64))]
                self.private += [u, q]
            subst = [(h, z3.substitute(f, *pos) if pos else f) for h, f in ring.substitution]
            self.clocks[_key(w.loops)] = (w, replace(ring, substitution=subst), mk_and(*cons))

    @staticmethod
    def _position_key(x, P):
        return (str(x), P)

    def position(self, x, P):
        """``(q, u)`` with ``x == q * P + u``, ``u < P`` (so ``x < 2**63``: a ring count, at most
        ``2**31`` iterations of each of two loops): variables the queries naming ``x`` (a variable
        of the argument) define so."""
        key = self._position_key(x, P)
        if key not in self.positions:
            q, u = z3.BitVec(f"{x}.q", 64), z3.BitVec(f"{x}.u", 8)
            self.positions[key] = (q, u, mk_and(x == q * P + z3.ZeroExt(56, u), z3.ULT(u, P),
                                                z3.ULT(q, z3.BitVecVal((1 << 63) // P, 64))))
        return self.positions[key][:2]

    def clock(self, loops):
        """``(wait, Ring)``: the ring whose count is the iteration of sites in ``loops`` (two)."""
        c = self.clocks.get(_key(loops))
        if c is None and _key(loops) in self.unclocked:
            raise Uncovered(self.unclocked[_key(loops)])
        if c is None:
            raise Uncovered(f"sites in nested loops ({', '.join(i.name for i, _ in loops)}) with no ring of waits "
                            "proved over both (uses are counted by one loop's iteration or one ring's count)")
        return c[:2]

    def clocked(self, e) -> bool:
        """``e`` has an iteration the argument counts: it is in one loop, or in a ring's two loops
        and run only by the ring's waiting threads (the forms hold for them)."""
        if len(e.loops) <= 1:
            return True
        if len(e.loops) != 2 or _key(e.loops) not in self.clocks:
            return False
        key = ("clocked", id(e.instr), e.seq)
        if key not in self.chk.memo:
            w, ring = self.clock(e.loops)
            self.chk.memo[key] = self.chk.prove(mk_and(self.chk.ranges(e.loops), e.pc), ring.role)[0] == "proved"
        return self.chk.memo[key]

    def var(self, what):
        self.fresh_n += 1
        return z3.BitVec(f"{what}~{self.fresh_n}", 64)

    def sat(self, fs, tags):
        """sat / unsat / unknown of ``fs`` with the constraints of the thread instances ``tags``."""
        cons = []
        # every instance is a thread of one CTA (shared memory and mbarriers are per CTA)
        first = self.tag_subst(tags[0])[0]
        for t in tags[1:]:
            cons += [p == q for (o, p), (_, q) in zip(first, self.tag_subst(t)[0]) if str(o).startswith("ctaid.")]
        named = self.chk.syms(*fs)
        if self.positions:
            cons += [c for (x, _), (q, u, c) in self.positions.items() if {x, str(q), str(u)} & named]
        named = named | self.chk.syms(*cons) if cons else named
        for t in tags:
            cons += self.tag_constraints(t, named)
        r, m = self.chk.budget.solve(*fs, *cons, *[c for c, _ in self.env.shared_constraints])
        if r == z3.sat:
            return "sat", m
        return ("unsat", None) if r == z3.unsat else ("unknown", None)

    # ------------------------------------------------------------------ barrier sites
    def _barrier_sites(self):
        """Reuse distance and use counting of every barrier site (module docstring)."""
        chk = self.chk
        self.d, self.off = {}, {}
        per_thread = {str(a) for a, _ in self.env.pairs}
        for s in self.counted():
            if s.kind == "other" or s.addr is None:
                raise Uncovered(f"{chk.loc(s.instr)}: {s.instr.opcode} (barrier address not understood)")
            if s.note:
                raise Uncovered(f"{chk.loc(s.instr)}: {s.note}")
            if len(s.loops) == 2:
                self.d[id(s)] = self._ring_reuse(s)
            elif not s.loops:
                self.d[id(s)] = None
                self.luse[id(s)] = self._straight_use(s)
            elif len(s.loops) != 1:
                raise Uncovered(f"{chk.loc(s.instr)}: a barrier site in nested loops"
                                " (uses are counted by the iteration of one loop)")
            else:
                self.d[id(s)] = self._loop_reuse(s, per_thread)
            if s.kind == "wait":
                if not s.instr.blocking:
                    raise Uncovered(f"{chk.loc(s.instr)}: the wait is not a recognized blocking retry loop")
                off, why = chk.role(s)
                if off is None:
                    raise Uncovered(f"{chk.loc(s.instr)}: {why}")
                self.off[id(s)] = off
        self._inits_visible()
        # the signals of one barrier come from one loop (their uses count the phases)
        sig = [s for s in chk.sites if s.kind in ("arrive", "copy", "expect_tx")]
        for s in sig:
            for t in sig:
                if s is not t and _key(s.loops) != _key(t.loops) and self.may_meet(s, t):
                    raise Uncovered(f"{chk.loc(s.instr)} and {chk.loc(t.instr)} signal one barrier from different "
                                    "loops (phases are counted per loop)")
        self.waits = [s for s in self.counted() if s.kind == "wait"]
        self.arrives = [s for s in chk.sites if s.kind == "arrive"]
        self.mbar_of = {(id(s.instr), chk.seq(s)): s for s in chk.sites if s.kind == "copy"}  # per calling context

    def _straight_use(self, s):
        """The use of its barrier that a site outside every loop makes: the number of waits on that
        barrier, outside every loop, its threads ran before it (a thread signals the next phase
        after waiting for the one before: the premises' grouping of arrivals). Each such earlier
        wait must be run by every thread that runs ``s`` and name the same barrier; the loops name
        none of these barriers (``_sites_counted``)."""
        chk = self.chk
        n = 0
        for w in self.counted():
            if w.kind != "wait" or w.loops or chk.seq(w) >= chk.seq(s) or not chk.may_share_thread(s, w):
                continue
            if not chk.may_alias(s, w):
                continue
            if chk.prove(s.pc, w.pc)[0] != "proved" or chk.prove(s.pc, s.addr == w.addr)[0] != "proved":
                raise Uncovered(f"{chk.loc(s.instr)}: cannot count the wait at {chk.loc(w.instr)} as a use of its "
                                "barrier by the same threads (outside every loop, uses are counted in program order)")
            n += 1
        return n

    def counted(self):
        """The barrier sites whose uses the argument counts: all but the inits and a wait outside
        every loop that comes after every wait in a loop of the same threads that may name its
        barrier (CUTLASS's producer tail): it orders only what follows it outside every loop --
        accesses the argument does not order against the loops' copies (``_pair``) -- and shifts
        no use of a wait it counts. (A wait before a loop on that loop's barriers would: it stays,
        and is not covered.) A wait outside every loop on a barrier no loop site names is a
        straight-line use: counted (``_straight_use``)."""
        if self._counted is None:
            chk = self.chk
            looped = [s for s in chk.sites if s.loops and s.kind == "wait"]
            in_loops = [s for s in chk.sites if s.loops and s.kind not in ("init", "inval")]
            self._counted = [s for s in chk.sites if s.kind not in ("init", "inval") and (
                s.loops or s.kind != "wait"
                or any(chk.seq(t) > chk.seq(s) and chk.may_share_thread(s, t) and chk.may_alias(s, t)
                       for t in looped)
                or not any(chk.may_alias(s, t) for t in in_loops))]  # a straight-line use of its barrier
        return self._counted

    def _sites_counted(self):
        """Before any query: every barrier site is in one loop, with an address of that loop's
        iteration, or in two loops (then of a ring: ``clock``); ``_barrier_sites`` proves the
        rest."""
        chk = self.chk
        for s in self.counted():
            if s.kind == "other" or s.addr is None:
                raise Uncovered(f"{chk.loc(s.instr)}: {s.instr.opcode} (barrier address not understood)")
            if s.note:
                raise Uncovered(f"{chk.loc(s.instr)}: {s.note}")
            if len(s.loops) == 2:
                continue
            elif not s.loops:
                looped = next((t for t in self.counted() if t.loops and chk.may_alias(s, t)), None)
                if looped is not None:
                    raise Uncovered(f"{chk.loc(s.instr)}: a barrier site outside any loop may name a barrier the site "
                                    f"at {chk.loc(looped.instr)} in a loop uses (uses are counted in program order "
                                    "outside the loops, by the iteration of one loop or the count of a ring inside)")
                continue
            elif len(s.loops) != 1:
                raise Uncovered(f"{chk.loc(s.instr)}: a barrier site in nested loops"
                                " (uses are counted by the iteration of one loop or the count of a ring)")
            elif chk.syms(s.addr) & chk.ex.loop_syms.get(id(s.loops[0][0]), set()):
                nested = next((v for v in self.counted() if v.kind == "wait" and len(v.loops) == 2
                               and v.loops[0][0] is s.loops[0][0]), None)
                raise Uncovered(f"{chk.loc(s.instr)}: the barrier address depends on a value the loop summary does not "
                                "track" + (f" (in the outer loop of the wait at {chk.loc(nested.instr)}: a ring's site "
                                           "outside its inner loop is not counted by the ring's count)"
                                           if nested is not None else ""))

    def _ring_reuse(self, s):
        """The reuse distance of a barrier site in a ring's two loops, counted by the ring count:
        the site runs at every ring step of its threads (whenever the ring's wait runs, by a
        condition no iteration changes), and its barrier is a table of the ring position, the
        same for all the ring's threads (``bar`` then selects from it): ``d`` is the table's
        period."""
        chk = self.chk
        w, ring = self.clock(s.loops)
        P = ring.period
        hyp = mk_and(chk.ranges(s.loops), s.pc)
        variant = variant_names(chk, s.loops) - {str(k) for _, k in s.loops}
        if s is not w:
            (pc2, wpc2), rng2 = chk.renamed(s, s.pc, w.pc)
            if (chk.syms(s.pc) & variant or chk.prove(hyp, w.pc)[0] != "proved"
                    or chk.prove(mk_and(hyp, rng2, wpc2), pc2)[0] != "proved"):
                raise Uncovered(f"{chk.loc(s.instr)}: the site may skip a step of the ring waited on at "
                                f"{chk.loc(w.instr)}")
        vals = self.closed(s.addr, s.loops)
        if not all(z3.is_bv_value(v) for v in vals):
            raise Uncovered(f"{chk.loc(s.instr)}: the barrier address depends on the thread")
        table = self.tables[id(s)] = [v.as_long() for v in vals]
        return next(d for d in range(1, P + 1) if P % d == 0 and all(table[i] == table[(i + d) % P] for i in range(P)))

    def _loop_reuse(self, s, per_thread):
        """The reuse distance of a barrier site in one loop (module docstring)."""
        chk = self.chk
        info, k = s.loops[0]
        if (chk.syms(s.addr) & per_thread) - {str(k)}:
            raise Uncovered(f"{chk.loc(s.instr)}: the barrier address depends on the thread")
        variant = chk.ex.loop_syms.get(id(info), set())
        if chk.syms(s.addr) & variant:
            raise Uncovered(f"{chk.loc(s.instr)}: the barrier address depends on a value the loop summary "
                            "does not track")
        j = z3.BitVec(f"{k}~earlier", 64)
        earlier = mk_and(chk.in_range(info, k, k), z3.ULT(j, k), s.pc)
        if chk.syms(s.pc) & variant or (str(k) in chk.syms(s.pc)
                                         and chk.prove(earlier, z3.substitute(s.pc, (k, j)))[0] != "proved"):
            raise Uncovered(f"{chk.loc(s.instr)}: the site may skip an iteration of loop {info.name}")
        d = None
        for dd in range(1, MAX_REUSE + 1):
            hyp = mk_and(chk.in_range(info, k, k), chk.in_range(info, k, k + dd), s.pc)
            if chk.prove(hyp, chk.shift(s.addr, k, dd) == s.addr)[0] == "proved":
                d = dd
                break
        if d is None:
            raise Uncovered(f"{chk.loc(s.instr)}: no reuse distance of the barrier address within {MAX_REUSE}")
        for d2 in range(1, d):
            hyp = mk_and(chk.in_range(info, k, k), chk.in_range(info, k, k + d2))
            if chk.prove(hyp, chk.shift(s.addr, k, d2) != s.addr)[0] != "proved":
                raise Uncovered(f"{chk.loc(s.instr)}: the barrier address repeats every {d} iterations but "
                                "not only then")
        return d

    def _inits_visible(self):
        """The barriers are initialized before every use: the inits (outside loops) are followed by
        fence.mbarrier_init and a CTA barrier that every thread executes before its first use
        (§9.7.13.15.9 init, §9.7.13.4 fence.mbarrier_init)."""
        from kverify.semantics.ir.visit import instructions

        chk = self.chk
        inits = [s for s in chk.sites if s.kind == "init"]
        uses = [chk.seq(s) for s in chk.sites if s.kind != "init"]
        if inits and uses:
            last, first = max(chk.seq(s) for s in inits), min(uses)
            if any(s.loops for s in inits):
                raise Uncovered(f"{chk.loc(inits[0].instr)}: an mbarrier.init inside a loop")
            bars = [y for y in chk.ex.syncs if y.kind == "barrier" and y.scope == "cta" and not y.loops
                    and last < y.seq < first and chk.prove(TRUE, y.pc)[0] == "proved"]
            fences = [i for i in instructions(self.kernel.body) if sync_of(i) == "fence.mbarrier_init"
                      and last < chk.ex.seq[id(i)] < (bars[0].seq if bars else -1)]
            if not bars or not fences:
                raise Uncovered(f"{chk.loc(inits[0].instr)}: the mbarrier.init is not followed by "
                                f"{'fence.mbarrier_init and ' if not fences else ''}a CTA barrier of every thread "
                                "before the first use of a barrier (initialization visibility is the interpreter's)")

    def may_meet(self, s, t):
        """Barrier sites ``s`` and ``t`` may name the same barrier (in some iterations)."""
        ts, tt = self.tables.get(id(s)), self.tables.get(id(t))
        if ts is not None and tt is not None:
            return bool(set(ts) & set(tt))
        if ts is None and tt is None:
            return self.chk.may_alias(s, t)
        x, y = self.var("x"), self.var("y")
        return self.sat([self.rng(s.loops, x, "a"), self.at(s.pc, s.loops, x, "a"), self.rng(t.loops, y, "b"),
                         self.at(t.pc, t.loops, y, "b"), self.bar(s, x, "a") == self.bar(t, y, "b")],
                        ["a", "b"])[0] != "unsat"

    def bar(self, s, x, tag):
        """The barrier site ``s`` names at iteration ``x`` (a variable) of instance ``tag``; at a
        ring step, its table at the position of ``x``."""
        return self.at(s.addr, s.loops, x, tag)

    def use(self, s, x):
        """The use of its barrier that site ``s`` makes at iteration ``x`` (a variable): ``x div d``;
        at a ring step, from the position of ``x`` in the ring (``d`` divides its period)."""
        if not s.loops:
            return z3.BitVecVal(self.luse[id(s)], 64)
        d = self.d[id(s)]
        if len(s.loops) == 2:
            P = self.clock(s.loops)[1].period
            if P % d == 0:
                q, u = self.position(x, P)
                return q * (P // d) + z3.ZeroExt(56, z3.UDiv(u, z3.BitVecVal(d, 8)))
        return z3.UDiv(x, z3.BitVecVal(d, 64))

    def waits_before(self, e):
        """The blocking waits before ``e`` in its iteration, executed whenever ``e`` is."""
        key = ("pre", id(e.instr), e.seq)
        if key in self.chk.memo:
            return self.chk.memo[key]
        out = []
        for w in self.waits:  # (outside every loop: the waits outside every loop before it)
            if _key(w.loops) != _key(e.loops) or not self.chk.seq(w) < e.seq:
                continue
            if self.chk.prove(mk_and(self.chk.ranges(e.loops), e.pc), w.pc)[0] == "proved":
                out.append(w)
        self.chk.memo[key] = out
        return out

    def after_wait(self, sig_bar, sig_use, e, y, tag):
        """``e`` at iteration ``y`` of thread ``tag`` follows a wait for a phase at or after
        ``sig_use`` of barrier ``sig_bar``."""
        alts = []
        for w in self.waits_before(e):
            off = z3.BitVecVal(self.off[id(w)], 64)
            alts.append(mk_and(self.bar(w, y, tag) == sig_bar, z3.UGE(self.use(w, y), sig_use + off)))
        return mk_or(*alts) if alts else z3.BoolVal(False)

    def phase_follows(self, sig_bar, sig_use, e, y, tag, fresh):
        """Every arrival of the phase the waits before ``e`` name follows a wait for phase
        ``sig_use`` (or later) of ``sig_bar`` (write-after-write through the consumers). Returns
        the formula of its negation's witnesses, so the caller can negate existentially:
        (``ok``) such that ``Not(ok)`` has only existential variables."""
        alts = []
        for w in self.waits_before(e):
            off = self.off[id(w)]
            wb, wu = self.bar(w, y, tag), self.use(w, y)
            bad = [z3.ULT(wu, z3.BitVecVal(off, 64))]  # the wait names the phase before phase 0
            for k, a in enumerate(self.arrives):
                if not self.may_meet(w, a):
                    continue
                z, t = self.var("z"), f"{fresh}{len(alts)}_{k}"
                self.extra.append(t)
                inphase = mk_and(self.rng(a.loops, z, t), self.at(a.pc, a.loops, z, t), self.bar(a, z, t) == wb,
                                 self.use(a, z) + off == wu)
                ev = Ev("arrive", a.instr, self.chk.seq(a), a.pc, a.loops)
                bad.append(mk_and(inphase, mk_not(self.after_wait(sig_bar, sig_use, ev, z, t))))
            alts.append(mk_not(mk_or(*bad)))
        return mk_or(*alts) if alts else z3.BoolVal(False)

    # ------------------------------------------------------------------ releases
    def releases(self, e, fence_needed):
        """The arrive sites that release access ``e`` (module docstring), or [] with a reason."""
        key = ("rel", id(e.instr), e.seq, e.lo is None or e.lo.get_id(), fence_needed)
        memo = self.chk.memo
        if key in memo:
            return memo[key]
        chk = self.chk
        hyp = mk_and(chk.ranges(e.loops), e.pc)
        same_iter = lambda s_loops: _key(s_loops) == _key(e.loops)
        runs = lambda pc: chk.prove(hyp, pc)[0] == "proved"
        retire = e.seq
        if e.kind in ("wgmma", "bulkread"):
            retire = self._retire(e)
            if retire is None:
                done = "a wgmma.wait_group" if e.kind == "wgmma" else "its thread's wait for the bulk group"
                memo[key] = ([], (f"the {'wgmma' if e.kind == 'wgmma' else 'bulk store'} at line {e.line} is not "
                                  f"retired by {done} in its iteration (before any release)"))
                return memo[key]
        fences = [g for g in self.group if g.kind == "fence" and same_iter(g.loops) and g.seq > retire and runs(g.pc)]
        syncs = [y for y in chk.ex.syncs if y.kind == "barrier" and y.instr is not None and same_iter(y.loops)
                 and y.seq > retire and runs(y.pc)]
        out, why = [], ""
        for a in self.arrives:
            if not same_iter(a.loops) or chk.seq(a) <= retire:
                continue
            sa = chk.seq(a)
            own = runs(a.pc)
            if own:
                via = retire
            else:
                via = None
                if e.kind == "wgmma":
                    via = retire  # wgmma.wait_group is warp-collective (.sync.aligned)
                else:
                    cand = [y.seq for y in syncs if y.seq < sa]
                    via = min(cand) if cand else None
                if via is None:
                    why = why or (f"the arrive at line {a.instr.loc.line} is by other threads than the access at line "
                                  f"{e.line}, with no warp or CTA barrier between them")
                    continue
                if not self.warp_covers(e, a):
                    why = why or (f"not every warp executing line {e.line} has a thread arriving at line "
                                  f"{a.instr.loc.line}")
                    continue
            if fence_needed and not any(retire < f.seq < (sa if own else via + 1) for f in fences):
                why = why or (f"no fence.proxy.async between the generic access at line {e.line} and its release "
                              f"(line {a.instr.loc.line})")
                continue
            out.append(a)
        if not out and not why:
            early = [a for a in self.arrives if same_iter(a.loops) and e.seq < chk.seq(a) <= retire]
            if e.kind == "wgmma" and early:
                why = (f"the arrive at line {early[0].instr.loc.line} comes before the wgmma.wait_group that retires "
                       f"the wgmma at line {e.line}")
        memo[key] = (out, why)
        return memo[key]

    def warp_covers(self, e, a):
        """Every warp with a thread executing ``e`` (some iteration) has a thread executing the
        arrive ``a`` in the same iteration whenever one of them executes ``e``."""
        chk, env = self.chk, self.env
        bx, by, bz = env.block
        tid = env.tid
        for w0 in range(0, bx * by * bz, 32):
            def pc_of(pc, t):
                x, y, zz = t % bx, (t // bx) % by, t // (bx * by)
                return z3.substitute(pc, (tid[0], z3.BitVecVal(x, 32)), (tid[1], z3.BitVecVal(y, 32)),
                                     (tid[2], z3.BitVecVal(zz, 32)))
            ts = range(w0, min(w0 + 32, bx * by * bz))
            any_e = mk_or(*[pc_of(e.pc, t) for t in ts])
            rng = chk.ranges(e.loops)
            if chk.solve([rng, any_e])[0] == "unsat":
                continue
            ok = False
            for t in ts:
                if chk.prove(mk_and(rng, any_e), pc_of(a.pc, t))[0] == "proved":
                    ok = True
                    break
            if not ok:
                return False
        return True

    def released_before(self, e, x, tag_e, f, y, tag_f, fence_needed):
        """Access ``e`` (iteration ``x``) is released by an arrive that the waits before ``f``
        (iteration ``y``) wait for."""
        rel, _ = self.releases(e, fence_needed)
        alts = []
        for a in rel:
            ab, au = self.bar(a, x, tag_e), self.use(a, x)
            for w in self.waits_before(f):
                off = z3.BitVecVal(self.off[id(w)], 64)
                alts.append(mk_and(self.bar(w, y, tag_f) == ab, z3.UGE(self.use(w, y), au + off)))
        return mk_or(*alts) if alts else z3.BoolVal(False)

    # ------------------------------------------------------------------ the checks
    def _early_signals(self):
        """Every signal of use n >= 1 follows the completion of phase n - 1 of its barrier."""
        for s in [s for s in self.chk.sites if s.kind in ("arrive", "copy", "expect_tx")]:
            self.extra = []
            x = self.var("x")
            sb, su = self.bar(s, x, "s"), self.use(s, x)
            prev = su - 1
            ev = Ev(s.kind, s.instr, self.chk.seq(s), s.pc, s.loops)
            ok = mk_or(self.after_wait(sb, prev, ev, x, "s"), self.phase_follows(sb, prev, ev, x, "s", "e"))
            base = mk_and(self.rng(s.loops, x, "s"), self.at(s.pc, s.loops, x, "s"), z3.UGE(su, 1))
            r, m = self.sat([base, mk_not(ok)], ["s"] + self.extra)
            if r == "sat":
                r2, m2 = self.sat([base, mk_not(ok), z3.ULT(x, z3.BitVecVal(64, 64))], ["s"] + self.extra)
                m = m2 if r2 == "sat" else m
            if r != "unsat":
                it = m.eval(x, model_completion=True).as_long() if m is not None else None
                raise Uncovered(f"{self.chk.loc(s.instr)}: the signal {_when(s, it)} is not shown to follow the "
                                f"completion of its barrier's previous phase" if r == "sat" else
                                f"{self.chk.loc(s.instr)}: solver gave no answer on the ordering of its signals")

    def _ordered(self, p, x, tp, q, y, tq, fence):
        """p (iteration x, thread tp) happens before q (iteration y, thread tq)."""
        if p.kind == "copy":
            s = self.mbar_of.get((id(p.instr), p.seq))
            if s is None:
                return z3.BoolVal(False)
            sb, su = self.bar(s, x, tp), self.use(s, x)
            return mk_or(self.after_wait(sb, su, q, y, tq), self.phase_follows(sb, su, q, y, tq, f"c{tq}"))
        if self.cta_barrier_between(p, q, fence):
            return z3.BoolVal(True)
        return self.released_before(p, x, tp, q, y, tq, fence)

    def cta_barrier_between(self, p, q, fence) -> bool:
        """Generic access ``p`` and ``q`` (a copy or a wgmma issued after it) are ordered by a CTA
        barrier outside every loop between them in program order (every instance of ``p`` before
        it, every instance of ``q`` after it) that every thread of the CTA runs, as do the CTA
        barriers before it (instances matched in order, §9.7.13.1 bar.sync) -- towards the async
        proxy (``fence``) only with a ``fence.proxy.async`` of ``p``'s thread, outside every loop,
        between ``p`` and the barrier (§8.6 proxies)."""
        if p.kind not in ("read", "write"):
            return False
        chk = self.chk
        key = ("ctabar", id(p.instr), p.seq, id(q.instr), q.seq, fence)
        if key in chk.memo:
            return chk.memo[key]
        bars = [y for y in chk.ex.syncs if y.kind == "barrier" and y.scope == "cta" and y.instr is not None]
        ok = False
        for b in sorted(bars, key=lambda y: y.seq):
            if b.seq >= q.seq:
                break
            if b.loops or chk.prove(TRUE, b.pc)[0] != "proved":
                break  # a barrier not every thread runs once: the instances after it may be matched otherwise
            if b.seq <= p.seq:
                continue
            ok = not fence or any(g.kind == "fence" and not g.loops and p.seq < g.seq < b.seq
                                  and chk.prove(p.pc, g.pc)[0] == "proved" for g in self.group)
            if ok:
                break
        chk.memo[key] = ok
        return ok

    def _pair(self, a, b):
        self.extra = []
        chk = self.chk
        x, y = self.var("kx"), self.var("ky")
        if bool(a.loops) != bool(b.loops) or not self.clocked(a) or not self.clocked(b):
            # a stage access outside the pipeline loop: covered only if it never overlaps
            base = self._overlap(a, x, "a", b, y, "b")
            r, _ = self.sat([base], ["a", "b"])
            if r == "unsat":
                return None
            if bool(a.loops) != bool(b.loops):
                where = b
                msg = (f"the access at {chk.loc(b.instr)} ({'in a loop' if b.loops else 'outside every loop'}) may touch "
                       f"the bytes of the copy at {chk.loc(a.instr)} ({'in a loop' if a.loops else 'outside every loop'})")
            else:
                where = a if not self.clocked(a) else b
                msg = (f"the access at {chk.loc(where.instr)} (in nested loops, not counted by a ring) may touch the "
                       f"bytes of the copy at {chk.loc(a.instr)}")
            return Obligation(TITLE_ASYNC, "races", "unknown",
                              f"pipeline argument: {msg}; only accesses in the copy's loop (or ring), or both outside "
                              "every loop, are ordered", None, [chk.loc(a.instr), chk.loc(where.instr)], None, 0.0)
        base = self._overlap(a, x, "a", b, y, "b")
        if a is b:
            same = mk_and(x == y, *[p == q for (o, p), (_, q) in zip(self.tag_subst("a")[0], self.tag_subst("b")[0])
                                    if str(o).startswith("tid.")])
            base = mk_and(base, mk_not(same))
        fence = b.generic  # a generic access released towards an async-proxy write
        ab = self._ordered(a, x, "a", b, y, "b", False)
        ba = self._ordered(b, y, "b", a, x, "a", fence)
        r, m = self.sat([base, mk_not(ab), mk_not(ba)], ["a", "b"] + self.extra)
        if r == "unsat":
            return None
        if r == "sat":
            m = self._small(m, [base, mk_not(ab), mk_not(ba)], x, y, ["a", "b"] + self.extra)
        locs = [chk.loc(a.instr), chk.loc(b.instr)]
        if r == "unknown":
            return Obligation(TITLE_ASYNC, "races", "unknown",
                              f"pipeline argument: solver gave no answer for the copy at {locs[0]} and the access at "
                              f"{locs[1]} (budget {chk.budget.seconds:g} solver seconds)", None, locs, None, 0.0)
        kx, ky = (m.eval(v, model_completion=True).as_long() for v in (x, y))
        what = {"copy": "asynchronous copy", "wgmma": "wgmma operand read", "read": "generic read",
                "write": "generic write"}

        def describe(kx, ky):
            return (f"the {what[a.kind]} at {locs[0]} {_when(a, kx)} and the {what[b.kind]} at {locs[1]} "
                    f"{_when(b, ky)} touch the same shared bytes")
        desc = describe(kx, ky)
        if fence:
            ba0 = self._ordered(b, y, "b", a, x, "a", False)
            r0, m0 = self.sat([base, mk_not(ab), mk_not(ba0)], ["a", "b"] + self.extra)
            approx = chk.syms(base) & self.env.approx
            if r0 == "unsat" and not approx and len(a.loops) + len(b.loops) > 2:  # ring counts some threads reach
                fs, insts = [base, mk_not(ab), mk_not(ba)], [(a, x, "a"), (b, y, "b")]
                r1, m1 = self.reached(fs + [x == kx, y == ky], insts)
                if r1 != "sat":
                    r1, m1 = self.reached(fs, insts)
                    if r1 == "sat":
                        kx, ky = (m1.eval(v, model_completion=True).as_long() for v in (x, y))
                        desc = describe(kx, ky)
                approx = approx or r1 != "sat"
            if r0 == "unsat" and not approx:
                if self.cta_barrier_between(b, a, False):
                    order, why = "a CTA barrier orders them", (f"no fence.proxy.async of its thread between the generic "
                                                               f"access at line {b.line} and the barrier")
                else:
                    order, (_, why) = "the mbarrier ring orders them", self.releases(b, True)
                cex = {"rule": RACE_ASYNC_PROXY.id, "iterations": [kx, ky], "locations": [str(l) for l in locs]}
                return Obligation(TITLE_ASYNC, "races", "violated",
                                  f"{desc}; {order} in the generic proxy only: {why} "
                                  "(an async-proxy write after a generic access needs fence.proxy.async after the "
                                  "access, §8.6 proxies)", None, locs[::-1], cex, 0.0, RACE_ASYNC_PROXY.id)
        _, why = self.releases(b, fence) if b.kind != "copy" else ([], "")
        return Obligation(TITLE_ASYNC, "races", "unknown",
                          f"pipeline argument: {desc} and may be unordered: no mbarrier phase orders them"
                          + (f" ({why})" if why else ""), None, locs,
                          {"rule": RACE_ASYNC_PENDING.id, "iterations": [kx, ky], "locations": [str(l) for l in locs]},
                          0.0)

    def _staged_pair(self, r, g):
        """An asynchronous read ``r`` of shared memory (a wgmma operand, a bulk store's source) and
        a generic write ``g`` of its bytes (what the threads stage): ordered by a CTA barrier
        (``barrier_order``) -- the write before the read with ``fence.proxy.async`` of its thread
        before the barrier (ordered only without it: ``violated``, ``race.async-proxy``), the read
        before the write once the wait that retires it (``_retire``) comes before the barrier.
        None when ordered or disjoint, else ``unknown`` naming both lines."""
        self.extra = []
        chk = self.chk
        x, y = self.var("kx"), self.var("ky")
        overlap = self._overlap(r, x, "a", g, y, "b")
        what = "wgmma" if r.kind == "wgmma" else "bulk store"
        locs = [chk.loc(g.instr), chk.loc(r.instr)]
        retire = self._retire(r)
        # the read retired (in its iteration, by its threads' wait), then a barrier before the write
        rw = (self.barrier_order(replace(r, kind="read", seq=retire), x, g, y, False)
              if retire is not None else z3.BoolVal(False))
        wr = self.barrier_order(g, y, r, x, True)
        res, m = self.sat([overlap, mk_not(wr), mk_not(rw)], ["a", "b"])
        if res == "unsat":
            return None
        if res == "sat":
            wr0 = self.barrier_order(g, y, r, x, False)
            r0, _ = self.sat([overlap, mk_not(wr0), mk_not(rw)], ["a", "b"])
            if r0 == "unsat" and not chk.syms(overlap) & self.env.approx:
                return Obligation(TITLE_ASYNC, "races", "violated",
                                  f"the {what} at {locs[1]} reads shared bytes that the generic write at {locs[0]} "
                                  f"writes before a CTA barrier, with no fence.proxy.async of the writing thread between "
                                  "the write and the barrier: the async proxy may read stale data (§8.6 proxies)",
                                  None, locs, {"rule": RACE_ASYNC_PROXY.id, "iterations": [],
                                               "locations": [str(l) for l in locs]}, 0.0, RACE_ASYNC_PROXY.id)
        if res == "unknown":
            why = f"solver gave no answer (budget {chk.budget.seconds:g} solver seconds)"
        elif retire is None:
            why = f"the {what} is not retired by a wait in its iteration, and no CTA barrier orders the write before it"
        elif not r.loops and not g.loops and retire > g.seq:
            w = next(e for e in self.group if e.seq == retire)
            why = f"the {what} is retired only after the write (the wait at line {w.line})"
        else:
            m = self._small(m, [overlap, mk_not(wr), mk_not(rw)], x, y, ["a", "b"])
            kx, ky = (m.eval(v, model_completion=True).as_long() for v in (x, y))
            why = (f"no CTA barrier orders them ({what} {_when(r, kx)}, write {_when(g, ky)}; the barriers counted are "
                   "those every thread runs outside every loop, or in every iteration of a loop all threads run alike)")
        return Obligation(TITLE_ASYNC, "races", "unknown",
                          f"pipeline argument: the generic write at {locs[0]} and the {what} at {locs[1]} may touch the "
                          f"same shared bytes unordered: {why}", None, locs,
                          {"rule": RACE_ASYNC_PENDING.id, "iterations": [], "locations": [str(l) for l in locs]}, 0.0)

    def barrier_order(self, p, x, q, y, fence):
        """Generic access ``p`` at iteration ``x`` before ``q`` at ``y`` through a CTA barrier
        (a formula): a barrier outside every loop between them (``cta_barrier_between``), or both
        in one loop whose barriers and iterations every thread runs alike (``_lockstep``), with
        a barrier ``B`` of that loop after ``p`` in its iteration (then every later iteration,
        and ``q`` after ``B`` in the same one) or before ``q`` in a later iteration than ``p``'s --
        with ``fence``, a ``fence.proxy.async`` of ``p``'s thread between ``p`` and ``B``."""
        if self.cta_barrier_between(p, q, fence):
            return z3.BoolVal(True)
        if len(p.loops) != 1 or _key(p.loops) != _key(q.loops) or not self._lockstep(p.loops[0][0]):
            return z3.BoolVal(False)
        chk = self.chk
        bars = [b for b in chk.ex.syncs if b.kind == "barrier" and b.scope == "cta" and b.instr is not None
                and _key(b.loops) == _key(p.loops)]
        alts = []
        for b in bars:
            if b.seq > p.seq:
                if fence and not any(g.kind == "fence" and _key(g.loops) == _key(p.loops) and p.seq < g.seq < b.seq
                                     and chk.prove(mk_and(chk.ranges(p.loops), p.pc), g.pc)[0] == "proved"
                                     for g in self.group):
                    continue
                alts.append(z3.ULT(x, y))
                if b.seq < q.seq:
                    alts.append(x == y)
            elif b.seq < q.seq and not fence:
                alts.append(z3.ULT(x, y))
        return mk_or(*alts) if alts else z3.BoolVal(False)

    def _lockstep(self, info) -> bool:
        """Every thread runs the same iterations of loop ``info`` (the conditions to reach an
        iteration and to go on name no thread and no value the encoding approximates), and every
        CTA barrier before or in it is run by every thread in every iteration that reaches it
        (instances matched in order)."""
        chk = self.chk
        key = ("lockstep", id(info))
        if key in chk.memo:
            return chk.memo[key]
        tids = {str(t) for t in self.env.tid}
        # whether a thread enters the loop, and whether it goes on: the same for every thread
        ok = info.cont_pc is not None and info.head_pc is not None and not (
            chk.syms(info.cont_pc, info.head_pc) & (tids | self.env.approx))
        loop_seqs = [b.seq for b in chk.ex.syncs if b.kind == "barrier" and b.loops and b.loops[0][0] is info]
        last = max(loop_seqs, default=-1)
        for b in chk.ex.syncs:
            if not ok or b.kind != "barrier" or b.instr is None or b.seq > last:
                continue
            if b.loops and (len(b.loops) != 1 or b.loops[0][0] is not info):
                ok = False  # a barrier of another loop before it: its instances may be matched otherwise
            elif chk.prove(mk_and(chk.ranges(b.loops), info.head_pc if b.loops else TRUE), b.pc)[0] != "proved":
                ok = False  # (in the loop: whenever its iteration runs)
        chk.memo[key] = ok
        return ok

    def _retire(self, e):
        """The seq of the wait that retires the asynchronous read ``e`` in its iteration, or None:
        for a wgmma, its warpgroup's ``wgmma.wait_group`` (warp-collective); for a bulk store,
        its thread's ``cp.async.bulk.wait_group[.read]`` -- at least ``N`` commits after the
        read's own before a ``wait_group N`` (§9.7.15.7, §9.7.9.25.3 bulk async-groups)."""
        chk = self.chk
        commit, wait = ("commit", "wgwait") if e.kind == "wgmma" else ("bcommit", "bwait")
        hyp = mk_and(chk.ranges(e.loops), e.pc)
        same = lambda g: _key(g.loops) == _key(e.loops) and g.seq > e.seq and chk.prove(hyp, g.pc)[0] == "proved"
        commits = [g for g in self.group if g.kind == commit and same(g)]
        if not commits:
            return None
        own = min(c.seq for c in commits)
        for g in sorted([g for g in self.group if g.kind == wait and same(g)], key=lambda g: g.seq):
            if g.seq > own and 0 <= g.n <= sum(1 for c in commits if own < c.seq < g.seq):
                return g.seq
        return None

    def _small(self, m, fs, x, y, tags):
        """A model of ``fs`` with iterations ``x`` and ``y`` below 4, else below 64, else ``m``:
        small iterations in the report."""
        for bound in (4, 64):
            small = z3.BitVecVal(bound, 64)
            r2, m2 = self.sat(list(fs) + [z3.ULT(x, small), z3.ULT(y, small)], tags)
            if r2 == "sat":
                return m2
        return m

    def _overlap(self, a, x, ta, b, y, tb):
        lo1, hi1 = (z3.ZeroExt(32, self.at(t, a.loops, x, ta)) for t in (a.lo, a.hi))
        lo2, hi2 = (z3.ZeroExt(32, self.at(t, b.loops, y, tb)) for t in (b.lo, b.hi))
        return mk_and(self.rng(a.loops, x, ta), self.rng(b.loops, y, tb), self.at(a.pc, a.loops, x, ta),
                      self.at(b.pc, b.loops, y, tb), z3.ULT(lo1, hi2), z3.ULT(lo2, hi1))

    def _proxy_program_order(self, generic, reads, rings=False):
        """A generic write followed in program order (same iteration) by a wgmma or a bulk store
        reading its bytes with no fence.proxy.async between them: violated ``race.async-proxy``."""
        chk = self.chk
        for w in [g for g in generic if g.writes]:
            for r in reads:
                if _key(w.loops) != _key(r.loops) or (w.loops and not (self.clocked(w) and self.clocked(r))):
                    continue
                if rings != (len(w.loops) == 2):  # (one loop or none: before the rings are known)
                    continue
                if not w.seq < r.seq:
                    continue
                if any(w.seq < f.seq < r.seq for f in self.group if f.kind == "fence"):
                    continue
                x = self.var("k")
                loops = w.loops
                f = mk_and(self._overlap(w, x, "a", replace(r, loops=loops), x, "b"))
                res, m = self.sat([f], ["a", "b"])
                if res == "sat" and rings:  # a ring count some thread reaches
                    res, m = self.reached([f], [(w, x, "a"), (r, x, "b")])
                if res == "sat" and not (chk.syms(f) & self.env.approx):
                    locs = [chk.loc(w.instr), chk.loc(r.instr)]
                    it = m.eval(x, model_completion=True).as_long() if loops else None
                    cex = {"rule": RACE_ASYNC_PROXY.id, "iterations": [it, it] if loops else [],
                           "locations": [str(l) for l in locs]}
                    return Obligation(TITLE_ASYNC, "races", "violated",
                                      f"the {'wgmma' if r.kind == 'wgmma' else 'bulk store'} at {locs[1]} reads shared "
                                      f"bytes that the generic write at {locs[0]} "
                                      f"writes before it{f' ({_when(w, it)})' if loops else ''}, with no "
                                      "fence.proxy.async between them: the async proxy may read stale data "
                                      "(§8.6 proxies)",
                                      None, locs, cex, 0.0, RACE_ASYNC_PROXY.id)
        return None

