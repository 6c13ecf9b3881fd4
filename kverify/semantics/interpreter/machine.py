"""The interpreter: runs a structured kernel for one launch on the CPU.

Owns the execution of the core IR: warps as Python generators over the structured body,
vectorized across their 32 lanes with numpy (an ``If`` splits the lane mask, loops run
until no lane continues), registers per lane, the state spaces of ``memory``, the
synchronization protocols of ``kverify.semantics.memory_model.protocols`` (the only place their
rules live: the interpreter feeds them commands and reports their violations), and the
asynchronous units (bulk/TMA copies, cp.async, wgmma) as operations completed at a point
the scheduler chooses. Every memory access is checked against the happens-before shadow of
``hb``; findings carry the stable rule ids of DESIGN.md.

A warp yields to the scheduler at every synchronization instruction; it yields a ``Wait``
when it cannot proceed (barrier, mbarrier phase, group wait). CTAs of different clusters
run one cluster after another (they share only global memory, whose races do not depend
on that order under happens-before).

PTX ISA sections: §9.7 instruction semantics through ``kverify.semantics.values``; §9.7.13.1 bar;
§9.7.13.15 mbarrier; §9.7.9.25 cp.async / cp.async.bulk(.tensor); §9.7.15 wgmma;
§9.7.9.6-9 shfl/vote/elect (warp collectives, membermask rules); §8 memory model.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from kverify.launch import (LaunchSpec, arg_bits, dtypes, input_array, lookup, param_key, param_offsets, random_array,
                            spec_seed)
from kverify.launch.layout import TMAP_MAGIC, next_buffer
from kverify.semantics.ir import KernelError
from kverify.semantics.ir.errors import Unsupported  # noqa: F401  (re-exported)
from kverify.semantics.ir.nodes import (where, Addr, Block, Break, Continue, FImm, If, Imm, Instr, Loop, Neg, Reg, Sink,
                                Sym, operand_regs)
from kverify.semantics.ir.visit import RegisterWidths
from kverify.semantics.memory_model import async_units as AU
from kverify.semantics.memory_model.protocols import async_groups as AG
from kverify.semantics.memory_model.protocols import mbarrier as MB
from kverify.semantics.memory_model.protocols import named_barrier as NB
from kverify.semantics.values import ConcreteDomain

from .hb import ASYNC, GENERIC, hb_after, join, tick, vget
from .memory import (CTA_MASK, CTA_SHIFT, GLOBAL_BASE, LOCAL_WINDOW, PARAM_WINDOW, SHARED_WINDOW,
                     WINDOW_SIZE, Fault, Region, align_up)

D = ConcreteDomain()
ASYNC_GENERIC = 2  # written by an async operation that acts in the generic proxy (cp.async)
LANES = np.arange(32)
U64 = np.uint64


def _mask(bits: int) -> int:
    return (1 << bits) - 1


class StepBudget(Exception):
    pass


@dataclass
class RunFinding:
    rule: str
    message: str
    locs: list
    details: dict = field(default_factory=dict)
    count: int = 1


@dataclass
class Wait:
    """What a blocked warp waits for: ``ready()`` says whether it may resume."""

    kind: str
    ready: object
    describe: object
    instr: Instr | None = None


# --------------------------------------------------------------------------- async ops


class AsyncOp:
    """One operation of an asynchronous unit; its agent's single event is completion."""

    kind = "async"

    def __init__(self, m, warp, instr, agent):
        self.m, self.warp, self.instr, self.agent = m, warp, instr, agent
        self.vc = tick(warp.vc.copy(), agent)  # issue snapshot plus its own completion event
        self.loc = m.loc_id(instr.loc)
        m.ops_by_agent[agent] = self
        self.done = False

    def enabled(self) -> bool:
        return True

    def complete(self):
        raise NotImplementedError


class CopyOp(AsyncOp):
    """cp.async (per lane), cp.async.bulk and cp.async.bulk.tensor in either direction."""

    def __init__(self, m, warp, instr, agent, kind, writes, reads, action, mbar=None, group=None,
                 nbytes=0, proxy=ASYNC):
        super().__init__(m, warp, instr, agent)
        self.kind, self.writes, self.reads, self.action = kind, writes, reads, action
        self.mbar, self.group, self.nbytes, self.proxy = mbar, group, nbytes, proxy

    def complete(self):
        m = self.m
        self.action()
        for region, idx in self.reads:
            region.shadow.record_async_read(idx, self.agent, self.vc, self.loc)
        for region, idx in self.writes:
            sh = region.shadow
            mine = sh.pend_w[idx] == self.agent
            sh.pend_w[idx[mine]] = -1
            sh.record_write(idx, self.agent, 1, self.loc, None, self.proxy)
        self.done = True
        if self.mbar is not None:
            m.mbar_complete_tx(self, self.mbar, self.nbytes)
        if self.group is not None:
            kind, state_owner = self.group
            attr = {"cp.async": "cp_async", "bulk": "bulk"}[kind]
            st = getattr(state_owner, attr)
            out = (AG.cp_async_step if kind == "cp.async" else AG.bulk_group_step)(st, AG.Complete(self.agent))
            setattr(state_owner, attr, out.state)


class WgmmaOp(AsyncOp):
    """One warpgroup-wide wgmma.mma_async: enabled once all four warps issued it."""

    kind = "wgmma"

    def __init__(self, m, warp, instr, agent, key):
        super().__init__(m, warp, instr, agent)
        self.key = key
        self.parts = {}  # warp index in group -> (warp, d regs, a regs or None)
        self.reads = []
        self.earlier = [o for o in m.inflight if isinstance(o, WgmmaOp) and o.key[:2] == key[:2]]

    def enabled(self):
        # the tensor core runs a warpgroup's mma_async in issue order (each may use the
        # accumulator the previous one produced)
        return len(self.parts) == 4 and all(o.done for o in self.earlier)

    def complete(self):
        ins = self.instr
        shape = next(x for x in ins.mods if x.startswith("m64n"))
        n = int(shape[4:].split("k")[0])
        k = int(shape.split("k")[1])
        tys = ins.types()
        dty, aty, bty = tys[0], tys[1], tys[2]
        w0, dregs0, aregs0, desc_a, desc_b, scale_d, tn_a, tn_b, neg_a, neg_b, _ = self.parts[0]
        cta = w0.cta
        smem = cta.smem.data
        dt = {"f16": "float16", "bf16": "bfloat16", "tf32": "tf32", "f32": "float32", "e4m3": None,
              "s8": "int8", "u8": "uint8"}
        if aregs0 is None:
            a = AU.load_operand(smem, desc_a, 64, k, dt[aty], "MN" if tn_a else "K")
        else:
            layout = AU.a_register_fragment_layout(dt[aty])
            vals = np.zeros((128, layout.shape[1]), np.float32)
            for wi in range(4):
                w, _, aregs, *_ = self.parts[wi]
                per = layout.shape[1] // len(aregs)
                for r, regv in enumerate(aregs):
                    for h in range(per):
                        bits = (regv >> U64(16 * h)) & U64(0xFFFF)
                        vals[wi * 32:(wi + 1) * 32, r * per + h] = _half_to_f32(bits, aty)
            a = AU.fragment_to_matrix(vals, layout, (64, k))
        b = AU.load_operand(smem, desc_b, n, k, dt[bty], "MN" if tn_b else "K")
        layout = AU.accumulator_fragment_layout(n)
        for wi in range(4):  # the accumulator as it is now (an earlier mma_async may have written it)
            w, *_ , names = self.parts[wi]
            self.parts[wi] = (w, [w.regs.get(nm, np.zeros(32, U64)) for nm in names]) + tuple(self.parts[wi][2:])
        if dty == "f32":
            dvals = np.zeros((128, n // 2), np.float32)
            for wi in range(4):
                dregs = self.parts[wi][1]
                for r, regv in enumerate(dregs):
                    dvals[wi * 32:(wi + 1) * 32, r] = regv.astype(np.uint32).view(np.float32)
        else:
            dvals = np.zeros((128, n // 2), np.float32)
            for wi in range(4):
                dregs = self.parts[wi][1]
                for r, regv in enumerate(dregs):
                    for h in range(2):
                        dvals[wi * 32:(wi + 1) * 32, 2 * r + h] = _half_to_f32((regv >> U64(16 * h)) & U64(0xFFFF), dty)
        dmat = AU.fragment_to_matrix(dvals, layout, (64, n))
        out = AU.wgmma_mma(dmat, a, b, bool(scale_d), neg_a, neg_b)
        frag = AU.matrix_to_fragment(out, layout)  # (128, n/2)
        for wi in range(4):
            w, dregs, *_ = self.parts[wi]
            names = self.parts[wi][-1]
            if dty == "f32":
                for r, name in enumerate(names):
                    w.regs[name] = frag[wi * 32:(wi + 1) * 32, r].astype(np.float32).view(np.uint32).astype(U64)
            else:
                for r, name in enumerate(names):
                    lo = _f32_to_half(frag[wi * 32:(wi + 1) * 32, 2 * r], dty)
                    hi = _f32_to_half(frag[wi * 32:(wi + 1) * 32, 2 * r + 1], dty)
                    w.regs[name] = lo | (hi << U64(16))
        # the warpgroup's earlier mma_async complete first, and every wait that covers this
        # one covers them
        earlier = {o.agent for o in self.earlier}
        for region, idx in self.reads:
            region.shadow.record_async_read(idx, self.agent, self.vc, self.loc, earlier)
        self.done = True
        for wi in range(4):
            w = self.parts[wi][0]
            out = AG.wgmma_step(w.wgmma, AG.Complete(self.agent))
            w.wgmma = out.state


def _half_to_f32(bits, ty):
    bits = np.asarray(bits, np.uint64)
    if ty == "bf16":
        return (bits.astype(np.uint32) << np.uint32(16)).view(np.float32)
    return bits.astype(np.uint16).view(np.float16).astype(np.float32)


def _f32_to_half(vals, ty):
    vals = np.asarray(vals, np.float32)
    if ty == "bf16":
        u = vals.view(np.uint32).astype(np.uint64)
        rounded = (u + U64(0x7FFF) + ((u >> U64(16)) & U64(1))) >> U64(16)
        return rounded & U64(0xFFFF)
    return vals.astype(np.float16).view(np.uint16).astype(U64)


# --------------------------------------------------------------------------- barriers


class MbarInfo:
    """Interpreter-side companion of one mbarrier object: protocol state plus ordering."""

    def __init__(self, key, name):
        self.key, self.name = key, name
        self.state = MB.MbarrierState()
        self.phase_vc = np.zeros(0, np.int64)
        self.done_vc: dict[int, np.ndarray] = {}
        self.init = None  # (agent, clock, loc id, fence required)
        self.version = 0
        self.arrive_locs: dict = {}  # arrive-on instructions seen (ordered set)
        self.arrivers: set = set()  # warps that arrived (or issued copies signalling it)
        self.expect_loc = None  # last arrive.expect_tx / expect_tx
        self.copy_loc = None  # last copy signalling complete-tx
        # schedule robustness (Machine.mbar_order): per phase, the waits that observed it
        # (agent, clock), the waits and standalone expect-tx still to be ordered before an
        # arrival of that phase (agent, clock, loc)
        self.completed = 0  # phases completed over the barrier's lifetime (all its inits)
        self.observers: dict[int, list] = {}
        self.pending_waits: dict[int, list] = {}
        self.pending_expect: dict[int, list] = {}


class CTA:
    def __init__(self, m, ctaid, rank, cluster_ctas):
        self.m, self.ctaid, self.rank = m, ctaid, rank
        self.cluster_ctas = cluster_ctas
        self.named = NB.NamedBarrierState(m.threads_per_block)
        self.bar_vc: dict[int, np.ndarray] = {}
        self.bar_locs: dict[int, set] = {}
        self.bar_gen = [0] * 16
        self.mbars: dict[int, MbarInfo] = {}
        self.warps: list[Warp] = []
        self.exited_threads = 0
        self.bar_value: dict = {}
        self.bar_release: dict = {}

    def describe(self):
        return "CTA (%d,%d,%d)" % self.ctaid


class Warp:
    def __init__(self, m, cta, index, agent):
        self.m, self.cta, self.index, self.agent = m, cta, index, agent
        nthreads = m.threads_per_block
        t = index * 32 + LANES
        self.valid = t < nthreads
        self.live = self.valid.copy()
        bx, by, _ = m.spec.block
        self.tid = (t % bx, (t // bx) % by, t // (bx * by))
        self.linear_tid = t
        self.regs: dict[str, np.ndarray] = {}
        self.vc = np.zeros(0, np.int64)
        self.vc = tick(self.vc, agent)
        self.iters: list = []
        self.brk: dict = {}
        self.cont: dict = {}
        self.wait: Wait | None = None
        self.done = False
        self.cp_async = AG.CpAsyncState()
        self.bulk = AG.BulkGroupState()
        self.wgmma = AG.WgmmaState()
        self.wgmma_regs: dict = {}  # in-flight wgmma agent -> register names
        self.wgmma_seq = 0
        self.mbar_next: dict = {}
        self.last_group_wait = {}
        self.params: dict[str, np.ndarray] = {}  # call-site .param variables, per lane
        self.frames: list = []
        self.returned = np.zeros(32, bool)
        self.exited_reported = False
        self.gen = None

    def describe(self):
        lanes = np.flatnonzero(self.valid)
        lo, hi = self.index * 32 + lanes[0], self.index * 32 + lanes[-1]
        return f"warp {self.index} (threads {lo}-{hi}) of {self.cta.describe()}"

    def clock(self):
        return int(self.vc[self.agent])

    def release_tick(self):
        self.vc = tick(self.vc, self.agent)


# --------------------------------------------------------------------------- machine


class Machine:
    """One launch under one schedule."""

    def __init__(self, module, kernel, spec: LaunchSpec, inputs: dict, scheduler, max_steps=20_000_000,
                 check_races=True):
        self.module, self.kernel, self.spec = module, kernel, spec
        self.sched = scheduler
        self.max_steps = max_steps
        self.steps = 0
        self.thread_steps = 0
        self.check = check_races
        self.funcs = {k.name: k for k in module.kernels}
        self.threads_per_block = spec.threads_per_block
        self.locs = [None]
        self.loc_index = {}
        self.findings: dict = {}
        self.agents: list[str] = []
        self.fence_clk = np.zeros(0, np.int64)
        self.mbar_fence_clk = np.zeros(0, np.int64)
        self.inflight: list[AsyncOp] = []
        self.ops_by_agent: dict = {}
        self.status = "complete"
        self.reason = ""
        self.dependence: list[str] = []  # why another schedule might synchronize differently
        self.unread_atomics = None
        self.mbarriers: dict = {}  # mbarrier object (shared variable + offset) -> phases completed
        self.param_vars = {v.name for v in kernel.vars if v.space.startswith("param")}
        self.reg_width = RegisterWidths(module)
        self._setup_memory(inputs)

    # ------------------------------------------------------------------ bookkeeping
    def loc_id(self, loc) -> int:
        i = self.loc_index.get(loc)
        if i is None:
            i = self.loc_index[loc] = len(self.locs)
            self.locs.append(loc)
        return i

    def new_agent(self, desc: str) -> int:
        self.agents.append(desc)
        return len(self.agents) - 1

    def report(self, rule, message, locs, **details):
        locs = [l for l in locs if l is not None]
        key = (rule, tuple((l.file, l.line) if l.line else (None, -l.ptx_line) for l in locs))
        f = self.findings.get(key)
        if f:
            f.count += 1
            return
        self.findings[key] = RunFinding(rule, message, locs, details)

    def depend(self, reason: str):
        """Record why this run may not stand for every schedule (see ``mbar_order``)."""
        if reason not in self.dependence and len(self.dependence) < 8:
            self.dependence.append(reason)

    def where(self, warp):
        return {f"loop@{self.locs[self.loc_id(l)].line or l.ptx_line}": k for (l, k) in warp.iters} if warp.iters else {}

    # ------------------------------------------------------------------ memory set-up
    def _setup_memory(self, inputs):
        spec, kernel = self.spec, self.kernel
        allocs = []
        off = 0
        self.buffers = {}
        rng = np.random.default_rng(spec_seed(spec))
        for i, p in enumerate(kernel.params):
            b = lookup(spec.buffers, kernel, i)
            if b is None:
                continue
            name = param_key(kernel, i)
            arr = input_array(inputs, name, p, i, b, rng, kernel)
            allocs.append((name, off, arr))
            off = next_buffer(off, arr.nbytes)
        done = {a[0] for a in allocs}
        for name, b in spec.buffers.items():
            if str(name).isdigit() or name in done or any(p.name == name or p.source_name == name
                                                           for p in kernel.params):
                continue
            arr = inputs[name] if inputs and name in inputs else random_array(rng, b["dtype"], tuple(b["shape"]))
            allocs.append((name, off, np.ascontiguousarray(arr)))
            off = next_buffer(off, arr.nbytes)
        gvars = [v for v in self.module.vars if v.space == "global"]
        self.gvar_addr = {}
        for v in gvars:
            size = max(v.size, 1)
            arr = np.zeros(size, np.uint8)
            if v.init:
                esz = v.type.bits // 8
                for j, x in enumerate(v.init):
                    arr[j * esz:(j + 1) * esz] = np.frombuffer(int(x & _mask(8 * esz)).to_bytes(esz, "little"), np.uint8)
            allocs.append((v.name, off, arr))
            self.gvar_addr[v.name] = GLOBAL_BASE + off
            off = align_up(off + size, 256)
        self.gmem = Region("global", "global", off)
        for name, start, arr in allocs:
            raw = np.ascontiguousarray(arr).view(np.uint8).reshape(-1)
            self.gmem.data[start:start + raw.size] = raw
            self.gmem.allocs.append((name, start, raw.size))
            if name in [a for a in spec.buffers] or True:
                self.buffers[name] = (start, arr.dtype, arr.shape)
        # kernel parameters
        self.param_off, poff = param_offsets(kernel)
        self.param_mem = np.zeros(max(poff, 1), np.uint8)
        self.tensormaps = {}
        missing = []
        for i, p in enumerate(kernel.params):
            start, size = self.param_off[p.name]
            name = param_key(kernel, i)
            if p.array:
                t = lookup(spec.tensormaps, kernel, i)
                if t is None:
                    missing.append(name)
                    continue
                buf = t.get("buffer")
                if buf not in self.buffers:
                    raise KernelError(f"launch spec: tensor map {name!r} names buffer {buf!r}, which is not a "
                                      f"buffer of the launch", spec.path, 1, 1)
                bstart, bdtype, bshape = self.buffers[buf]
                t = dict(t)
                st = t.get("strides")
                if st is not None and len(st) == len(t.get("shape") or bshape) and st[-1] == 1:
                    esz = dtypes.itemsize(t["dtype"])
                    t["strides"] = [int(x) * esz for x in st[:-1]]  # element strides, innermost 1
                try:
                    tm = AU.TensorMap.from_spec(t, bshape)
                except (ValueError, KeyError) as e:
                    raise KernelError(f"launch spec: tensor map {name!r}: {e}", spec.path, 1, 1) from None
                self.tensormaps[start] = (tm, bstart, name)
                self.param_mem[start:start + 8] = np.frombuffer((TMAP_MAGIC | start).to_bytes(8, "little"), np.uint8)
                continue
            if name in self.buffers:
                value = GLOBAL_BASE + self.buffers[name][0]
            else:
                v = lookup(spec.args, kernel, i)
                if v is None:
                    missing.append(name)
                    continue
                value = arg_bits(v, p.type.name)
            self.param_mem[start:start + size] = np.frombuffer(int(value & _mask(8 * size)).to_bytes(size, "little"), np.uint8)
        if missing:
            raise KernelError(f"launch spec: no value for parameter(s) {', '.join(missing)} of {kernel.name} "
                              f"(give them in \"args\", \"buffers\" or \"tensormaps\")", spec.path, 1, 1)
        # shared memory layout (static variables, then dynamic shared memory)
        self.smem_vars = {}
        soff = 0
        dyn = []
        for v in list(self.module.vars) + list(kernel.vars):
            if v.space != "shared":
                continue
            if v.extern:
                dyn.append(v)
                continue
            soff = align_up(soff, v.align or max(v.type.bits // 8, 1))
            self.smem_vars[v.name] = (soff, v.size)
            soff += v.size
        if dyn:
            soff = align_up(soff, 1024)
            for v in dyn:
                self.smem_vars[v.name] = (soff, spec.dynamic_smem)
            soff += spec.dynamic_smem
        self.smem_size = soff
        self.local_vars = {}
        loff = 0
        for v in kernel.vars:
            if v.space == "local":
                loff = align_up(loff, v.align or 8)
                self.local_vars[v.name] = (loff, v.size)
                loff += v.size
        self.local_size = loff
        self.const_vars = {}
        cdata = []
        coff = 0
        for v in self.module.vars:
            if v.space == "const":
                coff = align_up(coff, v.align or 8)
                self.const_vars[v.name] = coff
                b = np.zeros(v.size, np.uint8)
                if v.init:
                    esz = v.type.bits // 8
                    for j, x in enumerate(v.init):
                        b[j * esz:(j + 1) * esz] = np.frombuffer(int(x & _mask(8 * esz)).to_bytes(esz, "little"), np.uint8)
                cdata.append((coff, b))
                coff += v.size
        self.const_mem = np.zeros(max(coff, 1), np.uint8)
        for o, b in cdata:
            self.const_mem[o:o + b.size] = b

    def outputs(self) -> dict:
        out = {}
        for name, (start, dtype, shape) in self.buffers.items():
            n = int(np.prod(shape)) * np.dtype(dtype).itemsize
            out[name] = self.gmem.data[start:start + n].copy().view(dtype).reshape(shape)
        return out

    # ------------------------------------------------------------------ running
    def run(self):
        spec = self.spec
        gx, gy, gz = spec.grid
        cx, cy, cz = spec.cluster
        if gx % cx or gy % cy or gz % cz:
            raise KernelError(f"launch spec: grid {spec.grid} is not a multiple of cluster {spec.cluster}",
                              spec.path, 1, 1)
        nwarps = (self.threads_per_block + 31) // 32
        try:
            for z0 in range(0, gz, cz):
                for y0 in range(0, gy, cy):
                    for x0 in range(0, gx, cx):
                        ctas = []
                        for rank, (dz, dy, dx) in enumerate((a, b, c) for a in range(cz) for b in range(cy) for c in range(cx)):
                            ctas.append(CTA(self, (x0 + dx, y0 + dy, z0 + dz), rank, ctas))
                        for c in ctas:
                            agents = []
                            for w in range(nwarps):
                                a = self.new_agent(f"warp {w} of {c.describe()}")
                                agents.append(a)
                                c.warps.append(Warp(self, c, w, a))
                            c.smem = Region("shared", "shared", self.smem_size, np.array(agents))
                            c.smem.allocs = [(n, s, z) for n, (s, z) in self.smem_vars.items()]
                        self._run_cluster(ctas)
                        for c in ctas:  # the mbarriers the launch used: phases each completed
                            for info in c.mbars.values():
                                obj = info.name.split(" of CTA")[0]
                                self.mbarriers[obj] = max(self.mbarriers.get(obj, 0), info.completed)
                        if self.status != "complete":
                            return self
        except Unsupported as e:
            self.status = "unsupported"
            loc = e.instr.loc if e.instr is not None else None
            self.reason = f"{_fmt_loc(loc)}: {e}" if loc else str(e)
        except StepBudget:
            self.status = "incomplete"
            self.reason = f"step budget of {self.max_steps} warp-instructions exhausted"
        return self

    def _run_cluster(self, ctas):
        warps = [w for c in ctas for w in c.warps]
        for w in warps:
            w.gen = self._warp_main(w)
        current = None
        while True:
            runnable = [w for w in warps if not w.done and (w.wait is None or w.wait.ready())]
            ops = [op for op in self.inflight if op.enabled()]
            if not runnable and not ops:
                blocked = [w for w in warps if not w.done]
                if blocked:
                    self._deadlock(blocked)
                return
            choice = self.sched.choose(runnable, ops, current)
            if isinstance(choice, Warp):
                w = choice
                current = w
                w.wait = None
                try:
                    w.wait = next(w.gen)
                except StopIteration:
                    w.done = True
                    self._warp_exited(w)
            else:
                self.inflight.remove(choice)
                choice.complete()

    def _deadlock(self, blocked):
        lines = []
        locs = []
        for w in blocked:
            desc = w.wait.describe() if w.wait else "is not blocked"
            lines.append(f"{w.describe()} {desc}")
            if w.wait and w.wait.instr is not None and w.wait.instr.loc not in locs:
                locs.append(w.wait.instr.loc)
        for w in blocked:
            for info in getattr(w.wait, "mbars", ()):
                self._tx_at_deadlock(info)
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
                   for op in self.inflight]
        msg = "every live warp is blocked:\n  " + "\n  ".join(lines)
        if pending:
            msg += "\n  in flight: " + "; ".join(pending)
        msg += "\n  wait-for: " + self._wait_for(blocked)
        self.report("deadlock", msg, locs[:8], waits=lines)
        self.status = "deadlock"
        self.reason = f"{len(blocked)} warp(s) blocked forever"

    def _wait_for(self, blocked) -> str:
        """The wait-for graph (networkx): blocked warp -> the barrier it waits on -> the warps
        that arrive on that barrier. A cycle is a circular wait between roles; without one,
        the missing arrivals can only come from warps that exited (roles disagree on the
        number of rounds) or never arrive."""
        import networkx as nx

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

    def _warp_exited(self, w):
        w.live[:] = False
        self.warp_gone(w)

    def warp_gone(self, w):
        """A warp whose threads all exited: they count as arrived at CTA-wide barriers
        started from now on (§9.7.13.1)."""
        if w.exited_reported:
            return
        w.exited_reported = True
        cta = w.cta
        cta.exited_threads += int(w.valid.sum())
        from .ops import complete_with_exited

        for bar_id in range(16):
            complete_with_exited(self, cta, bar_id)

    # ------------------------------------------------------------------ warp body
    def _warp_main(self, w):
        m = w.valid.copy()
        yield from self.exec_stmts(w, self.kernel.body, m)
        w.live[:] = False

    def exec_stmts(self, w, stmts, mask):
        for s in stmts:
            if not mask.any():
                return mask
            t = type(s)
            if t is Instr:
                m = mask
                if s.guard is not None:
                    g = self.pred(w, s.guard.reg)
                    m = mask & (~g if s.guard.negated else g)
                self.steps += 1
                if s.op not in ("ret", "exit"):
                    w.last_loc = s.loc
                if self.steps > self.max_steps:
                    raise StepBudget()
                if w.wgmma_regs:
                    self._check_wgmma_regs(w, s)
                if not m.any():
                    if s.op in ("bar", "barrier") and not ({"arrive"} & set(s.mods)):
                        pass
                    continue
                h = HANDLERS.get(s.op)
                if h is None or not s.supported:
                    raise Unsupported(f"unsupported instruction {s.opcode}", s)
                self.thread_steps += int(np.count_nonzero(m))
                r = h(self, w, s, m)
                if r is not None:
                    yield from r
                mask = mask & w.live
            elif t is If:
                c = self.pred(w, s.cond)
                if s.negated:
                    c = ~c
                mt, me = mask & c, mask & ~c
                out = np.zeros(32, bool)
                if mt.any():
                    out |= yield from self.exec_stmts(w, s.then, mt)
                if me.any():
                    out |= (yield from self.exec_stmts(w, s.orelse, me)) if s.orelse else me
                mask = out & w.live
            elif t is Loop:
                out = np.zeros(32, bool)
                cur = mask
                w.iters.append([s.loc, 0])
                while cur.any():
                    w.cont[s.label] = np.zeros(32, bool)
                    w.brk[s.label] = np.zeros(32, bool)
                    fall = yield from self.exec_stmts(w, s.body, cur)
                    out |= fall | w.brk.pop(s.label)
                    cur = w.cont.pop(s.label) & w.live
                    w.iters[-1][1] += 1
                w.iters.pop()
                mask = out & w.live
            elif t is Block:
                w.brk[s.label] = np.zeros(32, bool)
                fall = yield from self.exec_stmts(w, s.body, mask)
                mask = (fall | w.brk.pop(s.label)) & w.live
            elif t is Break:
                w.brk[s.label] |= mask
                return np.zeros(32, bool)
            elif t is Continue:
                w.cont[s.label] |= mask
                return np.zeros(32, bool)
        return mask

    # ------------------------------------------------------------------ operands
    def reg(self, w, name):
        v = w.regs.get(name)
        if v is not None:
            return v
        base, _, comp = name.partition(".")
        if base in SPECIALS:
            if base in TIMING_SPECIALS:
                self.depend(f"{base} is read: its value depends on the schedule and the hardware")
            return SPECIALS[base](self, w, comp)
        v = np.zeros(32, bool if self.reg_width(name) == 1 else U64)
        return v

    def pred(self, w, r):
        v = self.reg(w, r.name)
        return v if v.dtype == np.bool_ else v != 0

    def val(self, w, op, bits=64):
        t = type(op)
        if t is Reg:
            return self.reg(w, op.name)
        if t is Imm:
            return U64(op.value & _mask(bits))
        if t is FImm:
            if bits == 64 and op.width == 32:
                return U64(np.float64(np.uint32(op.bits).view(np.float32)).view(np.uint64))
            if bits == 32 and op.width == 64:
                return U64(np.float32(np.uint64(op.bits).view(np.float64)).view(np.uint32))
            return U64(op.bits)
        if t is Neg:
            return ~self.pred(w, op.reg)
        if t is Sym:
            return U64(self.symbol_address(op.name, w) + op.offset)
        raise Unsupported(f"operand {op} is not a value")

    def symbol_address(self, name, w=None):
        if name in self.smem_vars:
            return self.smem_vars[name][0]
        if w is not None and (name in w.params or name in self.param_vars):
            from .ops import _ensure_param

            _ensure_param(self, w, name)
            return PARAM_WINDOW + w.params[name][0]
        if name in self.param_off:
            return PARAM_WINDOW + self.param_off[name][0]
        if name in self.gvar_addr:
            return self.gvar_addr[name]
        if name in self.const_vars:
            return self.const_vars[name]
        if name in self.local_vars:  # as for .shared: the address in the state space, not generic
            return self.local_vars[name][0]
        if w is not None and any(v.name == name and v.space.startswith("param") for v in self.kernel.vars):
            from .ops import _ensure_param

            _ensure_param(self, w, name)
            return PARAM_WINDOW + w.params[name][0]
        raise Unsupported(f"unknown symbol {name}")

    def write(self, w, dst, value, m):
        t = type(dst)
        if t is Sink:
            return
        if t is Reg:
            old = w.regs.get(dst.name)
            value = np.asarray(value)
            if value.dtype == np.bool_:
                if old is None:
                    old = np.zeros(32, bool)
                w.regs[dst.name] = np.where(m, value, old)
            else:
                bits = self.reg_width(dst.name)
                if bits < 64:
                    value = value.astype(U64) & U64(_mask(bits))
                if old is None:
                    old = np.zeros(32, U64)
                w.regs[dst.name] = np.where(m, value, old).astype(U64)
            return
        raise Unsupported(f"destination {dst} is not a register")

    # ------------------------------------------------------------------ addresses
    def addr_values(self, w, a: Addr):
        if a.base is None:
            return np.full(32, a.offset, np.int64)
        if isinstance(a.base, Sym):
            return np.full(32, self.symbol_address(a.base.name, w) + a.base.offset + a.offset, np.int64)
        return self.reg(w, a.base.name).astype(np.int64) + a.offset

    def resolve(self, w, space, addrs, lanes_mask, nbytes):
        """(region, byte offsets, per-lane) for accesses in ``space`` (``None``: generic)."""
        addrs = np.asarray(addrs, np.int64)
        if space in (None, "generic"):
            a0 = addrs[lanes_mask]
            if len(a0) == 0:
                return None, None
            kinds = np.where((a0 >= SHARED_WINDOW) & (a0 < SHARED_WINDOW + WINDOW_SIZE), 1,
                             np.where((a0 >= LOCAL_WINDOW) & (a0 < LOCAL_WINDOW + WINDOW_SIZE), 2,
                                      np.where((a0 >= PARAM_WINDOW) & (a0 < PARAM_WINDOW + WINDOW_SIZE), 3, 0)))
            if (kinds != kinds[0]).any():
                raise Unsupported("one generic access spans several state spaces across lanes")
            k = int(kinds[0])
            if k == 1:
                return self.resolve(w, "shared::cluster", addrs - SHARED_WINDOW, lanes_mask, nbytes)
            if k == 2:
                return self.resolve(w, "local", addrs - LOCAL_WINDOW, lanes_mask, nbytes)
            if k == 3:
                return "param", addrs - PARAM_WINDOW
            return self.resolve(w, "global", addrs, lanes_mask, nbytes)
        if space == "global":
            offs = addrs - GLOBAL_BASE
            ok = self.gmem.in_bounds(offs, nbytes) | ~lanes_mask
            if not ok.all():
                lane = int(np.flatnonzero(~ok)[0])
                raise Fault(f"global access of {nbytes} bytes at {int(addrs[lane]):#x} is outside every "
                            f"allocation", lane, int(addrs[lane]))
            return self.gmem, offs
        if space in ("shared", "shared::cta", "shared::cluster"):
            rank = addrs >> CTA_SHIFT
            offs = addrs & CTA_MASK
            cl = w.cta.cluster_ctas
            r0 = rank[lanes_mask]
            if len(r0) and (r0 != r0[0]).any():
                raise Unsupported("one shared::cluster access spans several CTAs")
            r = int(r0[0]) if len(r0) else 0
            cta = w.cta if r == 0 else (cl[r - 1] if r - 1 < len(cl) else None)
            if cta is None:
                raise Fault(f"shared::cluster address {int(addrs[lanes_mask][0]):#x} names CTA rank {r - 1}, "
                            f"outside the cluster", int(np.flatnonzero(lanes_mask)[0]))
            ok = cta.smem.in_bounds(offs, nbytes) | ~lanes_mask
            if not ok.all():
                lane = int(np.flatnonzero(~ok)[0])
                raise Fault(f"shared access of {nbytes} bytes at offset {int(offs[lane]):#x} is outside the "
                            f"{self.smem_size}-byte shared memory", lane, int(addrs[lane]))
            return cta.smem, offs
        if space == "local":
            return "local", addrs
        if space in ("param", "param::entry", "param::func"):
            return "param", addrs - PARAM_WINDOW * (addrs >= PARAM_WINDOW)
        if space == "const":
            return "const", addrs
        raise Unsupported(f"state space {space}")

    # ------------------------------------------------------------------ shadow checks
    def access(self, w, ins, region, offs, nbytes, m, kind, proxy=GENERIC, agent=None, vc=None):
        if not self.check or not isinstance(region, Region):
            return
        lanes = np.flatnonzero(m)
        idx = (offs[lanes][:, None] + np.arange(nbytes)[None, :]).reshape(-1)
        lane_of = np.repeat(lanes, nbytes)
        agent = w.agent if agent is None else agent
        vc = w.vc if vc is None else vc
        sh = region.shadow
        if kind == "read":
            conf = sh.check_read(idx, agent, vc, self.fence_clk, lane_of, proxy)
            if sh.uninit is not None and sh.uninit[idx].any():
                i = int(np.flatnonzero(sh.uninit[idx])[0])
                self.report("uninitialized", f"read of uninitialized {region.space} memory "
                            f"{region.owner(int(idx[i]))} by {self._thread(w, lane_of[i])}", [ins.loc],
                            address=int(idx[i]))
        else:
            conf = sh.check_write(idx, agent, vc, self.fence_clk, lane_of, proxy)
        for c in conf:
            self._race(w, ins, region, c, kind)
        loc = self.loc_id(ins.loc)
        clk = int(vget(vc, np.array([agent]))[0])
        if kind == "read":
            if sh.dense:
                col = w.index if agent == w.agent and w.cta.smem is region else None
                sh.record_read(idx, agent, clk, loc, lane_of, col)
            else:
                sh.record_read(idx, agent, clk, loc, lane_of.astype(np.int8), vc=vc)
        else:
            if sh.lossy(idx):
                self.depend(f"{_fmt_loc(ins.loc)}: a write to {region.space} bytes whose earlier readers the "
                            f"race shadow could not all keep")
            sh.record_write(idx, agent, clk, loc, lane_of.astype(np.int8), proxy)

    def atomic_access(self, w, ins, region, offs, nbytes, m, op, ty):
        """An ``atom``/``red``: race-checked against plain and async accesses (atomics do
        not race with each other); the run stands for every order of the atomics only when
        they commute and no returned value is used."""
        lanes = np.flatnonzero(m)
        idx = (offs[lanes][:, None] + np.arange(nbytes)[None, :]).reshape(-1)
        sh = region.shadow
        if self.check:
            for c in sh.check_write(idx, w.agent, w.vc, self.fence_clk, np.repeat(lanes, nbytes), atomic=True):
                self._race(w, ins, region, c, "atomic")
        mixed = sh.record_atomic(idx, w.vc, self.loc_id(ins.loc), (op, ty))
        if self.unread_atomics is None:
            from kverify.semantics.ir.visit import unread_atomic_results

            self.unread_atomics = unread_atomic_results(self.module, self.kernel)
        used = ins.op == "atom" and not (isinstance(ins.operands[0], Sink) or
                                         getattr(ins.operands[0], "name", None) in self.unread_atomics)
        commutes = op in ("and", "or", "xor") or (op in ("add", "min", "max") and not ty.startswith("f"))
        if used or not commutes or mixed:
            why = ("its returned value is used" if used else f"{op}.{ty} atomics do not commute bit for bit"
                   if not commutes else "different atomic operations update one location")
            self.depend(f"{_fmt_loc(ins.loc)}: {ins.op}.{op}: {why}, so the order of atomics matters")

    def _thread(self, w, lane):
        t = w.index * 32 + int(lane)
        return f"thread {t} (warp {w.index}, lane {int(lane)}) of {w.cta.describe()}"

    def _race(self, w, ins, region, c, kind):
        other = self.agents[c.other_agent] if 0 <= c.other_agent < len(self.agents) else "?"
        if c.other_lane >= 0 and other.startswith("warp "):
            wi = int(other.split()[1])
            other = f"thread {wi * 32 + c.other_lane} ({other})"
        mine = self._thread(w, c.mine_lane) if c.mine_lane >= 0 else w.describe()
        other_loc = self.locs[c.other_loc] if c.other_loc else None
        at = "" if " at " in other else f" at {_fmt_loc(other_loc)}"
        msg = (f"{c.kind}: {kind} of {region.space} {region.owner(c.byte)} by {mine} at {_fmt_loc(ins.loc)} "
               f"and an access by {other}{at}")
        if w.iters:
            msg += f" (iterations {', '.join(str(k) for _, k in w.iters)})"
        details = {"address": c.byte, "space": region.space, "object": region.owner(c.byte), "this": mine,
                   "other": other, "iterations": [k for _, k in w.iters]}
        locs = [ins.loc, other_loc]
        if c.rule == "race.async-pending":
            op = self.ops_by_agent.get(c.other_agent)
            issuer = op.warp if op is not None else w
            kind = {"wgmma": "wgmma", "cp.async": "cp_async"}.get(op.kind if op else "", "bulk")
            l = issuer.last_group_wait.get(kind) or (w.last_group_wait.get("cp_async") if op is None else None)
            if l is not None:
                locs.append(l)
        self.report(c.rule, msg, locs, **details)

    def _check_wgmma_regs(self, w, ins):
        if ins.op.startswith("wgmma"):
            return
        names = {r.name for op in ins.operands for r in operand_regs(op)}
        for agent, regs in list(w.wgmma_regs.items()):
            clash = names & regs
            if clash:
                self.report("race.async-pending",
                            f"registers {', '.join(sorted(clash)[:4])} of an in-flight wgmma.mma_async accessed "
                            f"by {w.describe()} before a wgmma.wait_group covering it (§9.7.15.7)",
                            [ins.loc], registers=sorted(clash))
                return

    # ------------------------------------------------------------------ mbarriers
    def mbar_at(self, w, space, addr_value, ins):
        addrs = np.array([addr_value], np.int64)
        region, offs = self.resolve(w, space, addrs, np.array([True]), 8)
        if not isinstance(region, Region) or region.space != "shared":
            raise Unsupported("mbarrier outside shared memory", ins)
        cta = next(c for c in [w.cta] + list(w.cta.cluster_ctas) if c.smem is region)
        off = int(offs[0])
        info = cta.mbars.get(off)
        if info is None:
            info = cta.mbars[off] = MbarInfo((cta.rank, off), f"{region.owner(off)} of {cta.describe()}")
        return cta, info

    def mbar_step(self, info, cmd, ins, who):
        out = MB.step(info.state, cmd)
        if out.violation is not None:
            v = out.violation
            kind = dict(v.details).get("kind")
            locs = [ins.loc]
            rule, msg = v.rule, v.message
            if kind == "unobserved-phase":
                # the arrival lands in the next phase: more arrivals per phase than the count
                rule = "mbarrier.arrival-overflow"
                msg = (f"{v.message}: the arrival counts toward phase {info.state.phase}, so phase "
                       f"{info.state.phase - 1} received more arrivals than its expected count "
                       f"{info.state.expected} before anyone observed it")
                if info.init is not None:
                    locs.append(self.locs[info.init[2]])
            self.report(rule, f"{msg} on mbarrier {info.name} by {who} ({v.section})", locs,
                        mbarrier=info.name)
            if kind == "unobserved-phase":
                # continue as the hardware does: the arrival counts toward the current phase
                out2 = MB.step(replace(info.state, observed_prev=True), cmd)
                if out2.violation is None:
                    info.state = out2.state
                    info.version += 1
                    for e in out2.effects:
                        if e[0] == "phase-completed":
                            self.phase_completed(info, e[1])
                    return out2
            return out
        info.state = out.state
        info.version += 1
        for e in out.effects:
            if e[0] == "phase-completed":
                self.phase_completed(info, e[1])
        return out

    # Schedule robustness. One run stands for every schedule of the launch when the order in
    # which synchronization operations meet is fixed by happens-before, so that no schedule
    # can match them differently: every operation on an mbarrier phase k is ordered after all
    # operations of phase k-1; every wait that observes phase k is ordered after phase k-1
    # completed and before some arrival of phase k+1 (it cannot see an older or a newer
    # phase of the same parity); every arrival of phase k+1 is ordered after some wait that
    # observed phase k; a standalone expect-tx is ordered before an arrival of its phase (the
    # phase cannot complete without it). Named-barrier and cluster-barrier instances are
    # checked the same way in ops.py. A data race, an atomic, a non-blocking test whose
    # result steers control flow, or a race-shadow record that had to be dropped also leaves
    # the question open. ``depend`` records each reason.
    def mbar_order(self, info, kind, agent, vc, ins):
        """Robustness of one ``kind`` (arrive | expect | complete) operation on the current
        phase of ``info`` by ``agent`` with clock ``vc``."""
        k = info.state.phase
        where = _fmt_loc(ins.loc) if ins is not None else "?"
        prev = info.done_vc.get(k - 1) if k >= 1 else None
        if prev is not None and not hb_after(vc, prev):
            self.depend(f"{where}: {kind} on mbarrier {info.name} in phase {k} is not ordered after every "
                        f"operation of phase {k - 1}; in another schedule it may count toward phase {k - 1}")
        if kind == "arrive":
            for pend in (info.pending_waits, info.pending_expect):
                left = [e for e in pend.get(k, ()) if vget(vc, np.array([e[0]]))[0] < e[1]]
                if left:
                    pend[k] = left
                else:
                    pend.pop(k, None)
            obs = info.observers.get(k - 1)
            if k >= 1 and obs and not any(vget(vc, np.array([a]))[0] >= c for a, c in obs):
                self.depend(f"{where}: arrival on mbarrier {info.name} in phase {k} is not ordered after any "
                            f"wait that observed phase {k - 1}")
        elif kind == "expect":
            info.pending_expect.setdefault(k, []).append((agent, int(vget(vc, np.array([agent]))[0]), where))

    def mbar_observed(self, info, phase, agent, vc, ins):
        """A wait by ``agent`` issued with clock ``vc`` observed ``phase`` complete."""
        where = _fmt_loc(ins.loc)
        prev = info.done_vc.get(phase - 1) if phase >= 1 else None
        if phase >= 1 and (prev is None or not hb_after(vc, prev)):
            self.depend(f"{where}: the wait for phase {phase} of mbarrier {info.name} is not ordered after "
                        f"phase {phase - 1} completed; in another schedule it may see that phase's parity")
        clk = int(vget(vc, np.array([agent]))[0])
        info.observers.setdefault(phase, []).append((agent, clk))
        info.observers.pop(phase - 2, None)
        if phase + 1 in info.done_vc:
            self.depend(f"{where}: the wait for phase {phase} of mbarrier {info.name} ran after phase "
                        f"{phase + 1} completed")
        else:
            info.pending_waits.setdefault(phase + 1, []).append((agent, clk, where))

    def _mbar_order_completed(self, info, phase):
        for where in (w for _, _, w in info.pending_waits.pop(phase, ())):
            self.depend(f"{where}: the wait for phase {phase - 1} of mbarrier {info.name} is not ordered before "
                        f"the arrivals of phase {phase}; in another schedule it may see phase {phase} complete")
        for where in (w for _, _, w in info.pending_expect.pop(phase, ())):
            self.depend(f"{where}: expect-tx on mbarrier {info.name} in phase {phase} is not ordered before an "
                        f"arrival of that phase; in another schedule the phase may complete without it")

    def mbar_check_init(self, info, agent, vc, ins, who):
        if info.init is None:
            return
        ia, ic, iloc, _ = info.init
        if agent != ia and vget(vc, np.array([ia]))[0] < ic:
            self.report("mbarrier.init-visibility",
                        f"{who} uses mbarrier {info.name} with no happens-before edge from its mbarrier.init "
                        f"(a barrier / fence.mbarrier_init must make the init visible first; §9.7.13.15.3)",
                        [ins.loc, self.locs[iloc]], mbarrier=info.name)

    def _tx_at_deadlock(self, info):
        s = info.state
        if s.initialized and s.tx != 0 and not any((getattr(o, "mbar", None) or (None, None))[1] is info for o in self.inflight):
            how = ("more bytes completed than expected" if s.tx < 0 else "expected bytes never arrive")
            self.report("mbarrier.tx-mismatch",
                        f"mbarrier {info.name} is stuck in phase {s.phase} with tx-count {s.tx}: {how} (the "
                        f"expect-tx bytes do not match the copies that signal it; §9.7.13.15.5)",
                        [l for l in (info.expect_loc, info.copy_loc) if l is not None], mbarrier=info.name,
                        tx=s.tx)

    def phase_completed(self, info, phase):
        """A phase completed: copies still in flight that signal this barrier were counted
        into it by expect-tx but have not landed (tx mismatch)."""
        info.done_vc[phase] = info.phase_vc
        info.phase_vc = np.zeros(0, np.int64)
        info.completed += 1
        self._mbar_order_completed(info, phase)
        pending = [o for o in self.inflight if (getattr(o, "mbar", None) or (None, None))[1] is info and not o.done]
        if pending:
            self.report("mbarrier.tx-mismatch",
                        f"phase {phase} of mbarrier {info.name} completed while {len(pending)} copy(ies) signalling "
                        f"it were still in flight ({sum(o.nbytes for o in pending)} bytes): expect-tx announced "
                        f"fewer bytes than the copies deliver (§9.7.13.15.5)",
                        [l for l in (info.expect_loc, pending[0].instr.loc) if l is not None], mbarrier=info.name)

    def mbar_complete_tx(self, op, key, nbytes):
        cta, info = key
        if not info.state.initialized:
            self.report("mbarrier.uninitialized", f"complete-tx of {op.kind} on uninitialized mbarrier {info.name}",
                        [op.instr.loc], mbarrier=info.name)
            return
        self.mbar_check_init(info, op.agent, op.vc, op.instr, f"the {op.kind} issued at {_fmt_loc(op.instr.loc)}")
        self.mbar_order(info, "complete-tx", op.agent, op.vc, op.instr)
        if nbytes <= 0:
            self.depend(f"{_fmt_loc(op.instr.loc)}: a copy of {nbytes} bytes signals mbarrier {info.name}")
        info.copy_loc = op.instr.loc
        info.arrivers.add(op.warp)
        info.phase_vc = join(info.phase_vc, op.vc)
        out = MB.step(info.state, MB.CompleteTx(nbytes))
        if out.violation is not None:
            v = out.violation
            self.report(v.rule, f"{v.message} on mbarrier {info.name} ({v.section})", [op.instr.loc],
                        mbarrier=info.name)
            return
        info.state = out.state
        info.version += 1
        for e in out.effects:
            if e[0] == "phase-completed":
                self.phase_completed(info, e[1])


_fmt_loc = where


# --------------------------------------------------------------------------- special registers


def _dim(v, comp):
    return v[{"x": 0, "y": 1, "z": 2}.get(comp or "x", 0)]


def _sp_tid(m, w, comp):
    return w.tid[{"x": 0, "y": 1, "z": 2}.get(comp or "x", 0)].astype(U64)


SPECIALS = {
    "%tid": _sp_tid,
    "%ntid": lambda m, w, c: np.full(32, _dim(m.spec.block, c), U64),
    "%ctaid": lambda m, w, c: np.full(32, _dim(w.cta.ctaid, c), U64),
    "%nctaid": lambda m, w, c: np.full(32, _dim(m.spec.grid, c), U64),
    "%laneid": lambda m, w, c: LANES.astype(U64),
    "%warpid": lambda m, w, c: np.full(32, w.index, U64),
    "%nwarpid": lambda m, w, c: np.full(32, 64, U64),
    "%smid": lambda m, w, c: np.zeros(32, U64),
    "%nsmid": lambda m, w, c: np.full(32, 132, U64),
    "%gridid": lambda m, w, c: np.zeros(32, U64),
    "%lanemask_eq": lambda m, w, c: (U64(1) << LANES.astype(U64)),
    "%lanemask_lt": lambda m, w, c: (U64(1) << LANES.astype(U64)) - U64(1),
    "%lanemask_le": lambda m, w, c: ((U64(1) << (LANES.astype(U64) + U64(1))) - U64(1)) & U64(0xFFFFFFFF),
    "%lanemask_gt": lambda m, w, c: (~((U64(1) << (LANES.astype(U64) + U64(1))) - U64(1))) & U64(0xFFFFFFFF),
    "%lanemask_ge": lambda m, w, c: (~((U64(1) << LANES.astype(U64)) - U64(1))) & U64(0xFFFFFFFF),
    "%clock": lambda m, w, c: np.full(32, m.steps & 0xFFFFFFFF, U64),
    "%clock_hi": lambda m, w, c: np.zeros(32, U64),
    "%clock64": lambda m, w, c: np.full(32, m.steps, U64),
    "%globaltimer": lambda m, w, c: np.full(32, m.steps * 10, U64),
    "%cluster_ctarank": lambda m, w, c: np.full(32, w.cta.rank, U64),
    "%cluster_nctarank": lambda m, w, c: np.full(32, len(w.cta.cluster_ctas), U64),
    "%cluster_ctaid": lambda m, w, c: np.full(32, _dim(_cluster_ctaid(m, w), c), U64),
    "%cluster_nctaid": lambda m, w, c: np.full(32, _dim(m.spec.cluster, c), U64),
    "%clusterid": lambda m, w, c: np.full(32, _dim(tuple(a // b for a, b in zip(w.cta.ctaid, m.spec.cluster)), c), U64),
    "%nclusterid": lambda m, w, c: np.full(32, _dim(tuple(a // b for a, b in zip(m.spec.grid, m.spec.cluster)), c), U64),
    "%is_explicit_cluster": lambda m, w, c: np.full(32, m.spec.cluster != (1, 1, 1)),
    "%dynamic_smem_size": lambda m, w, c: np.full(32, m.spec.dynamic_smem, U64),
    "%total_smem_size": lambda m, w, c: np.full(32, m.smem_size, U64),
}


#: special registers whose value is not a function of the launch (PTX ISA §10: %warpid and
#: %smid are volatile, the clocks advance with time): a run that reads one does not stand
#: for every schedule
TIMING_SPECIALS = frozenset({"%clock", "%clock_hi", "%clock64", "%globaltimer", "%warpid", "%smid"})


def _cluster_ctaid(m, w):
    return tuple(a % b for a, b in zip(w.cta.ctaid, m.spec.cluster))


HANDLERS: dict = {}  # filled by semantics.interpreter.ops
