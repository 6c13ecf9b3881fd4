"""The interpreter: runs a structured kernel for one launch on the CPU.

Owns the execution of the core IR: warps as Python generators over the structured body,
vectorized across their 32 lanes with numpy (an ``If`` splits the lane mask, loops run
until no lane continues), registers per lane, the state spaces of ``memory``, the
synchronization protocols of ``kverify.semantics.memory_model.protocols`` (the only place their
rules live: every synchronization object changes state only through ``Machine.step``, which
feeds its protocol a command and reports the violation), and the asynchronous units
(bulk/TMA copies, cp.async, wgmma; ``async_ops``) as operations completed at a point the
scheduler chooses. Instructions run through the handler table of ``handlers`` (one module
per instruction family), given to the machine. Every memory access is checked against the happens-before shadow of
``hb`` (``accesses.AccessMixin``); findings carry the stable rule ids of DESIGN.md.

A warp yields to the scheduler at every synchronization instruction, at every atomic whose
returned value is used (another warp could have been first), at every warp-collective
exchange (shuffle, vote, match, redux, elect), at a loop back-edge where it spins (the
iteration left its registers and live lanes exactly as they were: only another agent's
write can end the loop) and, for fairness, every ``FAIR_ITERATIONS`` iterations of one
loop. It yields a ``Wait`` when it cannot proceed (barrier, mbarrier phase, group wait; a
spin until another agent writes memory or steps a synchronization object). A run ends
after ``max_steps`` warp-instructions of one cluster (status ``incomplete``: a loop may spin
forever).
CTAs of different clusters run one cluster after another (they share only global memory,
whose races do not depend on that order under happens-before).

PTX ISA sections: §9.7 instruction semantics through ``kverify.semantics.values``; §9.7.13.1 bar;
§9.7.13.15 mbarrier; §9.7.9.25 cp.async / cp.async.bulk(.tensor); §9.7.15 wgmma;
§9.7.9.6-9 shfl/vote/elect (warp collectives, membermask rules); §8 memory model.
"""
from __future__ import annotations

import time

import numpy as np
from numpy import count_nonzero

from kverify.launch import LaunchSpec, input_array, lookup, param_key, random_array, spec_seed
from kverify.launch.layout import function_addresses, local_layout, next_buffer, shared_layout
from kverify.launch.params import param_bytes
from kverify.rules import rule as registered
from kverify.semantics.ir import KernelError
from kverify.semantics.ir.errors import Unsupported
from kverify.semantics.ir.nodes import Block, Break, Continue, FImm, GenericOf, If, Imm, Instr, Loop, Neg, Reg, Sink, Sym
from kverify.semantics.ir.nodes import where as _fmt_loc
from kverify.semantics.ir.nodes import Addr
from kverify.semantics.ir.types import Vector
from kverify.semantics.ir.visit import RegisterWidths
from kverify.semantics.memory_model import tma
from kverify.semantics.memory_model.execution import BOUNDS, DSMEM_AFTER_EXIT, DSMEM_BEFORE_START
from kverify.semantics.values.concrete import quiet

from .accesses import AccessMixin, _atomic_result_used
from .async_ops import AsyncOp
from .handlers import HANDLERS
from .deadlock import report_deadlock
from .definedness import Shadow
from .handlers.barriers import cluster_barrier_exit, complete_with_exited
from .handlers.control import warpgroup_divergence
from .hb import join, vget
from .mbarriers import MbarrierMixin
from .memory import (CONST_WINDOW, CTA_MASK, CTA_SHIFT, GLOBAL_BASE, LOCAL_WINDOW, PARAM_WINDOW, SHARED_WINDOW,
                     WINDOW_SIZE, Fault, Region, align_up)
from .provenance import SHARED, pointer_bases
from .scheduler import Deterministic, warp_key
from .specials import GRID_WORKSPACE, GRID_WORKSPACE_BYTES, SPECIALS, TIMING_SPECIALS, reads_grid_workspace
from .state import CTA, U64, RunFinding, StepBudget, Wait, Warp, low_mask


#: Warp-collective exchanges (op-table ``collective``) that are scheduling points.
WARP_EXCHANGES = ("shuffle", "vote", "match", "reduce", "elect")
#: Iterations of one loop after which a warp yields to the others (``Machine._fair``).
FAIR_ITERATIONS = 256
#: Op-table effects of synchronization instructions besides rows with a ``sync`` column.
SYNC_EFFECTS = ("sync", "async")


def _polled(stmts):
    """The first memory or synchronization instruction of a loop's body: what a spin polls."""
    for st in stmts:
        if type(st) is Instr and st.row.effect in ("memory",) + SYNC_EFFECTS:
            return st
        for sub in (getattr(st, "body", ()), getattr(st, "then", ()), getattr(st, "orelse", ())):
            found = _polled(sub or ())
            if found is not None:
                return found
    return None


def _progress(w, cur, out):
    """What a loop iteration could have changed for the warp: its registers and lane masks.
    Equal at two consecutive back-edges, the warp repeats itself until memory changes."""
    return (cur.tobytes(), out.tobytes(), w.returned.tobytes(),
            tuple((k, v.tobytes()) for k, v in w.regs.items()))


# --------------------------------------------------------------------------- machine


class Machine(AccessMixin, MbarrierMixin):
    """One launch under one schedule; ``handlers`` maps op-table mnemonics to handlers."""

    def __init__(self, module, kernel, spec: LaunchSpec, inputs: dict, scheduler, max_steps=500_000,
                 check_races=True, handlers=HANDLERS, only_ctas=None):
        self.handlers = handlers
        self.only_ctas = None if only_ctas is None else {tuple(c) for c in only_ctas}
        self.ctas_run = 0  # CTAs interpreted (all of the grid unless ``only_ctas`` names some)
        self.module, self.kernel, self.spec = module, kernel, spec
        self.sched = scheduler
        self.max_steps = max_steps
        self.step_limit = max_steps  # steps after which the running cluster stops (``_run_ctas``)
        self.deadline = None  # time.monotonic() past which the run stops (run_kernel's max_seconds)
        self.steps = 0
        self.thread_steps = 0
        # event log (kverify audit's timeline): None = off; a list collects, per synchronization
        # instruction issued and per asynchronous operation completed, (turn, CTA, warp, kind,
        # opcode, Loc) — one ``is not None`` test per synchronization step when off
        self.events = None
        self.ran: set = set()  # (file, line, ptx line) of the instructions run, while events are on
        # a PDL pair (``dependent``): the global footprint this grid records (its primary's run), and
        # the primary's footprint the lanes of this grid check before griddepcontrol.wait
        self.footprint = None
        self.pdl_prior = None
        # happens-before trace (kverify audit's evidence, ``hbtrace.HBTrace``): None = off
        self.trace = None
        self.check = check_races
        self.definedness = Shadow(self)
        self.funcs = {k.name: k for k in module.kernels}
        self.func_addr = function_addresses(module)
        self.func_at = {a: n for n, a in self.func_addr.items()}
        self.threads_per_block = spec.threads_per_block
        self.locs = [None]
        self.loc_index = {}
        self.findings: dict = {}
        self.agents: list[str] = []
        # per agent, its clock at its last fence.proxy.async covering global / shared memory
        # (a fence with a state space orders accesses of that space only, §9.7.13.4)
        self.fence_clks = {"global": np.zeros(0, np.int64), "shared": np.zeros(0, np.int64)}
        self.mbar_fence_clk = np.zeros(0, np.int64)
        self.init_fences: dict = {}  # agent -> its clocks at fence.mbarrier_init / fence.proxy.async (ascending)
        self.inflight: list[AsyncOp] = []
        self.ops_by_agent: dict = {}
        self.status = "complete"
        self.reason = ""
        self.dependence: list[str] = []  # why another schedule might synchronize differently
        self.shadow_dropped: list[str] = []  # writes the race shadow could not check against every reader
        self.strong_unordered: list[str] = []  # morally strong conflicting accesses no happens-before orders
        self.unread_atomics = None
        # GPUVerify annotations (``handlers.control``): preconditions and assertions the run could
        # not evaluate (they use an intrinsic kverify does not evaluate), as messages
        self.unevaluated_preconditions: list[str] = []
        self.unevaluated_assertions: list[str] = []
        self.assertions_run = 0  # assertion calls executed (lanes)
        self.yields: dict = {}  # id(Instr) -> whether it is a scheduling point (``_yields``)
        self.value_plans: dict = {}  # id(Instr) -> how its values are computed (handlers.values._plan)
        self.changes = 0  # memory writes and synchronization-object steps: a spinning warp resumes when this moves
        self.turns = 0  # scheduler choices so far: a warp that yielded for fairness resumes when this moves
        self.executed: dict = {}  # id(Instr) -> synchronization Instr a warp executed
        self.mbarriers: dict = {}  # mbarrier object (shared variable + offset) -> phases completed
        self.param_vars = {v.name for v in kernel.vars if v.space.startswith("param")}
        # cooperative launch (LaunchSpec.cooperative): given, or assumed when the kernel reads the
        # grid workspace registers; all CTAs then run side by side (co-resident)
        self.reads_workspace = reads_grid_workspace(module, kernel)
        self.cooperative = spec.cooperative if spec.cooperative is not None else self.reads_workspace
        self.reg_width = RegisterWidths(module)
        # dpor (``dpor.explore``): what the running step touches (a ``dpor.Footprint``; None: not
        # recorded), the operations it issued, and whether a timer was read (a value no order of
        # steps decides)
        self.fp = None
        self.fp_spawned: list = []
        # why no order of steps decides the run (a timer read; a loop scheduled fairly, which lets
        # the others run every few iterations, so a bounded retry never exhausts): what dpor's
        # every class of schedules does not cover
        self.unordered_by_steps: list[str] = []
        self.groups_run = 0  # CTA groups (clusters, or a cooperative grid) started so far
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
        registered(rule)  # every finding names a rule defined once (kverify.rules)
        locs = [l for l in locs if l is not None]
        key = (rule, tuple((l.file, l.line) if l.line else (None, -l.ptx_line) for l in locs))
        f = self.findings.get(key)
        if f:
            f.count += 1
            return
        self.findings[key] = RunFinding(rule, message, locs, details)

    def step(self, obj, cmd, ins=None, who=None, **details):
        """The one place a synchronization object changes state: its protocol's ``step``. A
        violation becomes a finding with the protocol's rule id, and the run goes on as the
        protocol's ``run_on`` says (the continued outcome is returned; else the violating one,
        with ``obj`` unchanged)."""
        if self.fp is not None:  # dpor: the object (a named barrier: its slot), and whether the command commutes
            key = (obj.title, getattr(cmd, "bar_id", None))
            (self.fp.commuting if getattr(cmd, "commutes", False) else self.fp.sync).add(key)
        out = obj.protocol.step(obj.state, cmd)
        if out.violation is not None:
            finding, cont = obj.protocol.run_on(obj.state, cmd, out.violation)
            by = f" by {who}" if who else ""
            self.report(finding.rule, f"{finding.message} on {obj.title}{by} ({finding.section})",
                        [ins.loc if ins is not None else None, *obj.related_locs(finding)], **details)
            if cont is None:
                return out
            out = cont
        obj.state = out.state
        obj.version += 1
        self.changes += 1
        return out

    def touch_memory(self, region, idx, write):
        """The running step accessed bytes ``idx`` of ``region`` through a morally strong access."""
        if self.fp is not None and len(idx):
            key = region.cta.ctaid if getattr(region, "cta", None) is not None else region.name
            self.fp.mem.append((key, int(idx.min()), int(idx.max()), write))

    def acquire(self, w, vc, ins, obj=None, phase=None, key=None, releases=None):
        """Warp ``w`` acquires the clock ``vc`` at ``ins`` (joins it into its own): the one place a
        warp's clock takes in another agent's. ``obj``/``phase`` name the synchronization object
        and its phase or instance; ``key`` the instance whose releases the trace recorded, or
        ``releases`` those releases (only read while ``trace`` is on)."""
        if self.trace is not None:
            self.trace.acquire(w, vc, ins, obj, phase,
                               self.trace.releases.get(key) if key is not None else releases)
        w.vc = join(w.vc, vc)

    def dropped_reader(self, reason: str):
        """A write to bytes whose earlier readers the race shadow could not all keep (``hb``):
        its race check is incomplete, so the run claims no race freedom for it."""
        if reason not in self.shadow_dropped and len(self.shadow_dropped) < 8:
            self.shadow_dropped.append(reason)
        self.depend(reason)

    def _not_by_steps(self, reason: str):
        if reason not in self.unordered_by_steps and len(self.unordered_by_steps) < 4:
            self.unordered_by_steps.append(reason)

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
        # the constant bank's layout, then the global variables' addresses, before any contents:
        # an initializer may name another variable (``.global .u64 p = generic(c);``)
        self.const_vars = {}
        coff = 0
        for v in self.module.vars:
            if v.space == "const":
                coff = align_up(coff, v.align or 8)
                self.const_vars[v.name] = coff
                coff += v.size
        const_size = coff
        gvars = []
        self.gvar_addr = {}
        for v in self.module.vars:
            if v.space == "global":
                gvars.append((v, off))
                self.gvar_addr[v.name] = GLOBAL_BASE + off
                off = next_buffer(off, max(v.size, 1))
        for v, o in gvars:
            allocs.append((v.name, o, self._var_bytes(v, max(v.size, 1), inputs)))
        # a cooperative launch: the zeroed grid workspace cooperative groups' grid.sync() counts
        # arrivals in, its address in %envreg1 (high half) / %envreg2 (low half)
        self.grid_workspace = 0
        if self.cooperative:
            allocs.append((GRID_WORKSPACE, off, np.zeros(GRID_WORKSPACE_BYTES, np.uint8)))
            self.grid_workspace = GLOBAL_BASE + off
            off = next_buffer(off, GRID_WORKSPACE_BYTES)
        self.gmem = Region("global", "global", off)
        for name, start, arr in allocs:
            raw = np.ascontiguousarray(arr).view(np.uint8).reshape(-1)
            self.gmem.data[start:start + raw.size] = raw
            self.gmem.allocs.append((name, start, raw.size))
            self.buffers[name] = (start, arr.dtype, arr.shape)
        # kernel parameters (kverify.launch.params builds the bytes; tensor maps become TensorMaps here)
        image = param_bytes(kernel, spec, self.buffers)
        self.param_off = dict(image.offsets)
        self.param_mem = image.data
        self.tensormaps = {}
        for off, slot in image.tensormaps.items():
            bstart, _, bshape = self.buffers[slot.buffer]
            try:
                tm = tma.map_from_spec(slot.spec, bshape)
            except (ValueError, KeyError, TypeError, OverflowError) as e:
                raise KernelError(f"launch spec: tensor map {slot.label}: {e}", spec.path, 1, 1) from None
            self.tensormaps[off] = (tm, bstart, slot.label)
        # shared memory layout (static variables with red zones, then dynamic shared memory)
        self.smem_vars, self.smem_size = shared_layout(self.module, kernel, spec.dynamic_smem)
        # the allocation each access's address is derived from (``provenance``), (name, start, size):
        # an overflow past a red zone into the next buffer or variable is out of bounds too
        spans = {name: (start, size) for name, start, size in self.gmem.allocs}
        spans.update({SHARED + n: sz for n, sz in self.smem_vars.items()})
        keys = {p.name: param_key(kernel, i) for i, p in enumerate(kernel.params)
                if not p.array and lookup(spec.buffers, kernel, i) is not None}
        keys.update({SHARED + n: SHARED + n for n in self.smem_vars})
        self.ptr_base = {iid: (keys[b].removeprefix(SHARED), *spans[keys[b]])
                         for iid, b in pointer_bases(kernel, list(self.smem_vars)).items() if keys.get(b) in spans}
        self.local_vars, loff = local_layout(kernel)
        self.local_size = loff
        self.const_mem = np.zeros(max(const_size, 1), np.uint8)
        for v in self.module.vars:
            if v.space == "const":
                o = self.const_vars[v.name]
                self.const_mem[o:o + v.size] = self._var_bytes(v, v.size, inputs)

    def _var_bytes(self, v, size: int, inputs) -> np.ndarray:
        """The initial bytes of module variable ``v``: the inputs' ``var:NAME`` array when given
        (a capture's snapshot of what the host wrote, ``cudaMemcpyToSymbol``), else its
        initializer's elements little-endian in the element's width (two's complement), an
        address for each function or variable it names (a constant variable's in the constant
        bank, ``generic(c)`` its generic address), zeros after them and without one."""
        given = (inputs or {}).get(f"var:{v.name}")
        if given is not None:
            raw = np.ascontiguousarray(given).view(np.uint8).reshape(-1)
            if raw.size != size:
                raise KernelError(f"input var:{v.name} has {raw.size} bytes, the variable {size}", "<inputs>", 1, 1)
            return raw.copy()
        arr = np.zeros(size, np.uint8)
        if not v.init:
            return arr
        esz = (v.type.elem if isinstance(v.type, Vector) else v.type).bits // 8
        mask = low_mask(8 * esz)
        vals = []
        for x in v.init:
            if isinstance(x, Sym):
                if x.name in self.func_addr:
                    base = self.func_addr[x.name]
                elif x.name in self.gvar_addr:
                    base = self.gvar_addr[x.name]
                elif x.name in self.const_vars:
                    base = self.const_vars[x.name] + (CONST_WINDOW if isinstance(x, GenericOf) else 0)
                else:
                    raise KernelError(f"the initializer of {v.name} names {x.name}, which is no function, "
                                      f"global or constant variable", v.loc.file, v.loc.line, v.loc.col)
                x = base + x.offset
            vals.append(int(x) & mask)
        data = np.frombuffer(b"".join(x.to_bytes(esz, "little") for x in vals), np.uint8)
        if data.size > size:
            raise KernelError(f"the initializer of {v.name} has {len(vals)} elements, more than it holds",
                              v.loc.file, v.loc.line, v.loc.col)
        arr[:data.size] = data
        return arr

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
        self._clusters = (gx // cx) * (gy // cy) * (gz // cz)
        together = []  # a cooperative launch: every cluster's CTAs, run side by side
        try:
            for z0 in range(0, gz, cz):
                for y0 in range(0, gy, cy):
                    for x0 in range(0, gx, cx):
                        if self.only_ctas is not None and (x0, y0, z0) not in self.only_ctas:
                            continue  # CTA symmetry (clusters of one CTA only): the caller proved it
                        ctas = []
                        for rank, (dz, dy, dx) in enumerate((a, b, c) for a in range(cz) for b in range(cy) for c in range(cx)):
                            ctas.append(CTA(self, (x0 + dx, y0 + dy, z0 + dz), rank, ctas))
                        for c in ctas:
                            agents = []
                            for w in range(nwarps):
                                a = self.new_agent(f"warp {w} of {c.describe()}")
                                agents.append(a)
                                c.warps.append(Warp(self, c, w, a))
                            # a cooperative launch runs every CTA at once: its shadows are paged
                            c.smem = Region("shared", "shared", self.smem_size, np.array(agents),
                                            whole=not self.cooperative)
                            c.smem.cta = c
                            c.smem.allocs = [(n, s, z) for n, (s, z) in self.smem_vars.items()]
                        self.ctas_run += len(ctas)
                        if self.cooperative:
                            together += ctas
                            continue
                        if not self._run_ctas(ctas):
                            return self
            if together:
                self._run_ctas(together)
        except Unsupported as e:
            self.status = "unsupported"
            loc = e.instr.loc if e.instr is not None else None
            self.reason = f"{_fmt_loc(loc)}: {e}" if loc else str(e)
        except StepBudget as e:
            self.status = "incomplete"
            self.reason = (f"budget: {self.max_steps} warp-instructions per CTA of a cluster, a loop may spin forever"
                           if not e.args else
                           f"budget: the run's wall-clock limit ({self.max_seconds:g} s, --time-budget) was reached "
                           f"after {self.steps} warp-instructions")
        return self

    def _run_ctas(self, ctas) -> bool:
        """Run ``ctas`` side by side (a cluster, or a cooperative launch's whole grid); False
        when the run stopped short of completing."""
        # the step budget is per CTA of the clusters run together: clusters run one after
        # another, and a loop that spins forever does so within one of them (a cooperative
        # launch runs all of them at once); a cluster of 8 CTAs does 8 CTAs' work
        self.step_limit = self.steps + self.max_steps * max(1, len(ctas))
        first_agent = len(self.agents)  # the operations this run issues get agents from here on
        self.groups_run += 1
        with quiet():  # lanes wrap, overflow and divide as PTX defines; entered once for the run
            self._run_cluster(ctas)
        for c in ctas:
            if c.maxnreg and self.status == "complete":
                warpgroup_divergence(self, c, len(c.warps))
        for c in ctas:  # the mbarriers the launch used: phases each completed
            for info in c.mbars.values():
                obj = info.name.split(" of CTA")[0]
                self.mbarriers[obj] = max(self.mbarriers.get(obj, 0), info.completed)
        if not self.inflight:
            self._release(ctas, first_agent)
            if self.only_ctas is not None and not self.cooperative:
                # the caller proved that no cluster reads or writes global bytes another one
                # writes (CTA / cluster symmetry): no later cluster can race with this one's
                # accesses, so their race records go too
                self.gmem.forget_races()
        return self.status == "complete"

    def _release(self, ctas, first_agent):
        """The storage of a cluster that ran to its end with no operation in flight: no later
        agent can reach its shared memory (clusters run one after another; distributed shared
        memory stays within a cluster), so its image and race shadow go, its warps' registers,
        and its finished asynchronous operations keep only what reports name (agent,
        instruction, warp). Global memory and its shadow, the findings and the vector clocks
        stay."""
        for c in ctas:
            c.smem.data = c.smem.shadow = None
            for w in c.warps:  # nothing reads a finished warp's registers
                w.regs = {}
        for agent in range(first_agent, len(self.agents)):
            op = self.ops_by_agent.get(agent)
            if op is not None and op.done:
                op.release()

    def _run_cluster(self, ctas):
        warps = [w for c in ctas for w in c.warps]
        for w in warps:
            w.gen = self._warp_main(w)
        current = None
        active = list(warps)  # the warps not done, in order
        # the deterministic schedule's choice needs no list of the options while a warp can run
        # (scheduler.Deterministic: the current warp, else the next runnable one in index order)
        quick = type(self.sched) is Deterministic
        while True:
            if quick:
                w = self._next_runnable(active, current)
                if w is not None:
                    self.turns += 1
                    current = w
                    self._resume(w, active)
                    continue
            runnable = [w for w in active if w.wait is None or w.wait.ready()]
            ops = [op for op in self.inflight if op.enabled()]
            if not runnable and not ops:  # a warp that yielded for fairness runs when none else can
                runnable = [w for w in active if w.wait is not None and w.wait.kind == "yield"]
            if not runnable and not ops:
                blocked = list(active)
                if blocked and self._clusters > 1 and all(w.wait is not None and w.wait.kind == "spin"
                                                          for w in blocked):
                    self.status = "incomplete"
                    self.reason = (f"{blocked[0].describe()} {blocked[0].wait.describe()}; only a CTA of another "
                                   f"cluster could still write it, and clusters run one after another here")
                elif blocked:
                    report_deadlock(self, blocked)
                return
            choice = self.sched.choose(runnable, ops, current)
            self.turns += 1
            if isinstance(choice, Warp):
                current = choice
                self._resume(choice, active)
            else:
                self.inflight.remove(choice)
                choice.complete()
                if self.events is not None:
                    self.events.append((self.turns, choice.warp.cta.ctaid, choice.warp.index, "complete",
                                        choice.instr.opcode, choice.instr.loc))

    @staticmethod
    def _next_runnable(active, current):
        """The deterministic schedule's warp (``scheduler._ordered``'s first option): ``current``
        while it can run, else the first runnable warp after it in index order, else the first
        runnable one; None when no warp can run."""
        if current is not None and not current.done and (current.wait is None or current.wait.ready()):
            return current
        at = warp_key(current) if current is not None else None
        first = None
        for w in active:
            if w.wait is None or w.wait.ready():
                if at is None or warp_key(w) > at:
                    return w
                if first is None:
                    first = w
        return first

    def _resume(self, w, active):
        """Run warp ``w`` to its next scheduling point."""
        w.wait = None
        try:
            w.wait = next(w.gen)
        except StopIteration:
            w.done = True
            active.remove(w)
            self._warp_exited(w)

    def _warp_exited(self, w):
        w.live[:] = False
        self.warp_gone(w)

    def warp_gone(self, w):
        """A warp whose threads all exited: they count as arrived at CTA-wide barriers
        started from now on (§9.7.13.1), and the cluster barrier no longer waits for them.
        When it is its CTA's last, the CTA's shared memory is gone: every access of another CTA
        to it must happen before (``remote_smem``)."""
        if w.exited_reported:
            return
        w.exited_reported = True
        cta = w.cta
        cta.exited_threads += int(w.valid.sum())
        cta.exit_vc = join(cta.exit_vc, w.vc)
        cta.warps_gone += 1
        if cta.warps_gone == len(cta.warps):
            cta.exited = True
            for agent, (clk, loc, who) in cta.remote.items():
                if vget(cta.exit_vc, np.array([agent]))[0] < clk:
                    self._dsmem_after_exit(cta, loc, who, w)
        for bar_id in range(16):
            complete_with_exited(self, cta, bar_id)
        cluster_barrier_exit(self, w)

    def remote_smem(self, w, cta, agent, clk, loc, who):
        """An access by ``agent`` (at its clock ``clk``: a warp, or an async operation's
        completion) to the shared memory of ``cta``, another CTA of the cluster, issued by warp
        ``w``. ``dsmem.before-start`` when nothing shows ``cta`` started (``w`` completed no
        cluster-barrier wait and observed none of ``cta``'s warps); ``dsmem.after-exit`` when
        ``cta`` already exited, or later, when it exits, unless its exit is ordered after the
        access (``warp_gone``)."""
        if not self.check:
            return
        if cta.exited:
            self._dsmem_after_exit(cta, loc, who, None)
            return
        if w.cluster_waits == 0 and not (vget(w.vc, np.array([x.agent for x in cta.warps])) > 0).any():
            self.report(DSMEM_BEFORE_START.id, f"access to the shared memory of {cta.describe()} by {who} at "
                        f"{_fmt_loc(loc)} before any cluster barrier wait or synchronization with {cta.describe()}: "
                        f"it may not have started ({DSMEM_BEFORE_START.section})", [loc])
        old = cta.remote.get(agent)
        if old is None or old[0] < clk:
            cta.remote[agent] = (clk, loc, who)

    def _dsmem_after_exit(self, cta, loc, who, last):
        when = (f"{cta.describe()} exited before it" if last is None else
                f"nothing orders the exit of {cta.describe()} (its last warp exited after "
                f"{_fmt_loc(getattr(last, 'last_loc', None))}) after it: no release cluster barrier after the "
                f"access, no mbarrier wait the access's arrive completes")
        self.report(DSMEM_AFTER_EXIT.id, f"access to the shared memory of {cta.describe()} by {who} at {_fmt_loc(loc)}: "
                    f"{when}; the CTA may have exited, its shared memory gone ({DSMEM_AFTER_EXIT.section})",
                    [loc, getattr(last, "last_loc", None) if last is not None else None])

    # ------------------------------------------------------------------ warp body
    def _warp_main(self, w):
        m = w.valid.copy()
        yield from self.exec_stmts(w, self.kernel.body, m)
        w.live[:] = False

    def exec_stmts(self, w, stmts, mask):
        for s in stmts:
            if not count_nonzero(mask):
                return mask
            t = type(s)
            if t is Instr:
                m = mask
                guarded = s.guard is not None
                if guarded:
                    g = self.pred(w, s.guard.reg)
                    m = mask & (~g if s.guard.negated else g)
                    if s.guard.reg.name in w.undef or s.guard.reg.name not in w.regs:
                        self.definedness.condition(w, s.guard.reg, mask, s, "guard")
                self.steps += 1
                row = s.row
                if row is None:  # an opcode the op table does not know: opaque, never guessed at
                    raise Unsupported(f"unsupported instruction {s.opcode[:80]}", s)
                if row.effect != "control":
                    w.last_loc = s.loc
                if self.steps > self.step_limit:
                    raise StepBudget()
                if not self.steps & 1023 and self.deadline is not None and time.monotonic() > self.deadline:
                    raise StepBudget(self.deadline)
                if w.wgmma_regs:
                    self._check_wgmma_regs(w, s)
                if guarded and not count_nonzero(m):  # unguarded: ``mask`` has a lane (checked above)
                    continue
                h = self.handlers.get(s.op)
                if h is None or not s.supported:
                    raise Unsupported(f"unsupported instruction {s.opcode}", s)
                if self.events is not None:  # (the audit: which lines ran)
                    self.ran.add((s.loc.file, s.loc.line, s.loc.ptx_line))
                self.thread_steps += int(np.count_nonzero(m))
                if row.sync is not None or row.effect in SYNC_EFFECTS:
                    self.executed[id(s)] = s
                    if self.events is not None:
                        self.events.append((self.turns, w.cta.ctaid, w.index, "issue", s.opcode, s.loc))
                elif self.events is not None and row.effect == "memory":
                    self.events.append((self.turns, w.cta.ctaid, w.index, "access", s.opcode, s.loc))
                # an access outside memory in a handler without its own check (mbarriers, ...) is the
                # same out-of-bounds finding as a load's; the instruction has no further effect
                try:
                    tok = self.definedness.before(w, s, m)
                    r = h(self, w, s, m)
                    if r is not None:
                        yield from r
                    elif self._yields(s):
                        yield None
                    if tok is not None:
                        self.definedness.after(w, s, m, tok)
                except Fault as f:
                    lane = f.lane if f.lane >= 0 else 0
                    self.report(BOUNDS.id, f"{f} ({self._thread(w, lane)} at {_fmt_loc(s.loc)})", [s.loc],
                                address=f.address, thread=self._thread(w, lane))
                mask = mask & w.live
            elif t is If:
                c = self.pred(w, s.cond)
                if s.cond.name in w.undef or s.cond.name not in w.regs:
                    self.definedness.condition(w, s.cond, mask, s, "condition")
                if s.negated:
                    c = ~c
                mt, me = mask & c, mask & ~c
                out = np.zeros(32, bool)
                if count_nonzero(mt):
                    out |= yield from self.exec_stmts(w, s.then, mt)
                if count_nonzero(me):
                    out |= (yield from self.exec_stmts(w, s.orelse, me)) if s.orelse else me
                mask = out & w.live
            elif t is Loop:
                out = np.zeros(32, bool)
                cur = mask
                w.iters.append([s.loc, 0])
                before = None
                while count_nonzero(cur):
                    w.cont[s.label] = np.zeros(32, bool)
                    w.brk[s.label] = np.zeros(32, bool)
                    fall = yield from self.exec_stmts(w, s.body, cur)
                    out |= fall | w.brk.pop(s.label)
                    cur = w.cont.pop(s.label) & w.live
                    w.iters[-1][1] += 1
                    if count_nonzero(cur):
                        now = _progress(w, cur, out)
                        if now == before:
                            yield self._spin(w, s)
                            now = None
                        elif w.iters[-1][1] % FAIR_ITERATIONS == 0:
                            yield self._fair(w, s)
                        before = now
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

    def _yields(self, ins) -> bool:
        """Whether ``ins`` is a scheduling point although its handler does not block: an
        atomic whose returned value is used, or a warp-collective exchange."""
        y = self.yields.get(id(ins))
        if y is None:
            row = ins.row
            y = row.collective in WARP_EXCHANGES or _atomic_result_used(self, ins)
            self.yields[id(ins)] = y
        return y

    def _fair(self, w, loop):
        """The ``Wait`` of a warp every ``FAIR_ITERATIONS`` iterations of one loop: it resumes
        once another warp or operation has had a turn (or at once when none can), so a loop
        that waits on another agent's write while changing its own registers (a counter, a
        backoff) cannot starve that agent. A loop that reads memory makes the run
        schedule-dependent: how many iterations it takes may depend on the other agents."""
        seen = self.turns
        line = _fmt_loc(loop.loc)
        self._not_by_steps(f"the loop at {line} lets the other agents run every {FAIR_ITERATIONS} iterations; "
                           f"schedules in which it runs longer alone are not run")
        polled = _polled(loop.body)
        if polled is not None and polled.row.effect == "memory":
            self.depend(f"{line}: a loop that reads memory ran {w.iters[-1][1]} iterations: another "
                        f"agent's writes may decide when it ends")
        return Wait("yield", lambda: self.turns != seen, lambda: f"yields in the loop at {line}", polled)

    def _spin(self, w, loop):
        """The ``Wait`` of a warp whose loop iteration changed nothing it can see: it resumes
        once another agent has written memory or stepped a synchronization object, so the
        write that ends the spin gets its chance; if none can come, the cluster deadlocks."""
        seen = self.changes
        line = _fmt_loc(loop.loc)
        self._not_by_steps(f"the loop at {line} spins until another agent writes; schedules in which it "
                           f"runs longer alone are not run")
        self.depend(f"{line}: a loop spins until another agent writes: how long it spins, and what it "
                    f"reads when it stops, depend on the schedule")
        return Wait("spin", lambda: self.changes != seen,
                    lambda: f"spins in the loop at {line}: no other agent writes what it polls", _polled(loop.body))

    def param_store(self, w, name):
        """Per-lane storage (lanes x bytes) and base offset of the call-site or function
        ``.param`` variable ``name`` of warp ``w``, created zeroed on first use."""
        if name not in w.params:
            size = 8
            # the declaration in the function now running (a called function's call sites
            # declare their own param0, param1, ... with their own widths), else the kernel's
            fn = self.funcs.get(w.frames[-1]) if w.frames else None
            decls = [v for v in (fn.vars if fn is not None else ()) if v.name == name] or \
                [v for v in self.kernel.vars if v.name == name]
            if decls:
                size = max(max(v.size for v in decls), 1)
            base = self.param_off.get(name, (None,))[0]
            if base is None:
                base = (1 << 29) + len(self.param_off) * (1 << 16)
                self.param_off[name] = (base, size)
            w.params[name] = (base, np.zeros((32, size), np.uint8))
        return w.params[name][1], w.params[name][0]

    # ------------------------------------------------------------------ operands
    def reg(self, w, name):
        v = w.regs.get(name)
        if v is not None:
            return v
        base, _, comp = name.partition(".")
        if base in SPECIALS:
            if base in TIMING_SPECIALS:
                self._not_by_steps(f"{base} is read, a value no order of steps decides")
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
            return U64(op.value & low_mask(bits))
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
            self.param_store(w, name)
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
            self.param_store(w, name)
            return PARAM_WINDOW + w.params[name][0]
        if name in self.func_addr:  # a function pointer
            return self.func_addr[name]
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
                if value.dtype != U64:
                    value = value.astype(U64)
                if bits < 64:
                    value = value & U64(low_mask(bits))
                if old is None:
                    old = np.zeros(32, U64)
                w.regs[dst.name] = np.where(m, value, old)
            return
        raise Unsupported(f"destination {dst} is not a register")

    # ------------------------------------------------------------------ addresses
    def addr_values(self, w, a: Addr):
        if a.base is None:
            return np.full(32, a.offset, np.int64)
        if isinstance(a.base, Sym):
            return np.full(32, self.symbol_address(a.base.name, w) + a.base.offset + a.offset, np.int64)
        v = self.reg(w, a.base.name).astype(np.int64) + a.offset
        if self.reg_width(a.base.name) == 32:  # a 32-bit address register: the sum wraps at 2**32 (§6.4.1)
            v &= 0xFFFFFFFF
        return v

    def _derived_bounds(self, ins, region, addrs, offs, lanes_mask, nbytes) -> None:
        """A ``Fault`` when an access of ``ins`` whose address is derived from one allocation
        (``ptr_base``) leaves it."""
        own = self.ptr_base.get(id(ins)) if ins is not None else None
        if own is None:
            return
        name, start, size = own
        ok = ((offs >= start) & (offs + nbytes <= start + size)) | ~lanes_mask
        if ok.all():
            return
        lane = int(np.flatnonzero(~ok)[0])
        o = int(offs[lane])
        if region.space == "shared":
            raise Fault(f"shared access of {nbytes} bytes at offset {o:#x} is outside {name}, the variable its "
                        f"address is derived from (it lands in {region.owner(o)})", lane, int(addrs[lane]))
        where = f"{o - start - size} bytes past its end" if o >= start else f"{start - o} bytes before it"
        raise Fault(f"global access of {nbytes} bytes at {int(addrs[lane]):#x} is outside {name}, the buffer its "
                    f"address is derived from ({where}; it lands in {region.owner(o)})", lane, int(addrs[lane]))

    def resolve(self, w, space, addrs, lanes_mask, nbytes, ins=None):
        """(region, byte offsets, per-lane) for accesses in ``space`` (``None``: generic) by
        ``ins`` (a global access whose address is derived from a pointer parameter must stay in
        that parameter's buffer)."""
        addrs = np.asarray(addrs, np.int64)
        if space in (None, "generic"):
            a0 = addrs[lanes_mask]
            if len(a0) == 0:
                return None, None
            kinds = np.where((a0 >= SHARED_WINDOW) & (a0 < SHARED_WINDOW + WINDOW_SIZE), 1,
                             np.where((a0 >= LOCAL_WINDOW) & (a0 < LOCAL_WINDOW + WINDOW_SIZE), 2,
                                      np.where((a0 >= PARAM_WINDOW) & (a0 < PARAM_WINDOW + WINDOW_SIZE), 3,
                                               np.where((a0 >= CONST_WINDOW) & (a0 < CONST_WINDOW + WINDOW_SIZE),
                                                        4, 0))))
            if (kinds != kinds[0]).any():
                raise Unsupported("one generic access spans several state spaces across lanes")
            k = int(kinds[0])
            if k == 1:
                return self.resolve(w, "shared::cluster", addrs - SHARED_WINDOW, lanes_mask, nbytes, ins)
            if k == 2:
                return self.resolve(w, "local", addrs - LOCAL_WINDOW, lanes_mask, nbytes)
            if k == 3:
                return "param", addrs - PARAM_WINDOW
            if k == 4:
                return self.resolve(w, "const", addrs - CONST_WINDOW, lanes_mask, nbytes)
            return self.resolve(w, "global", addrs, lanes_mask, nbytes, ins)
        if space == "global":
            offs = addrs - GLOBAL_BASE
            ok = self.gmem.in_bounds(offs, nbytes) | ~lanes_mask
            if not ok.all():
                lane = int(np.flatnonzero(~ok)[0])
                raise Fault(f"global access of {nbytes} bytes at {int(addrs[lane]):#x} is outside every "
                            f"allocation{self.gmem.nearest(int(offs[lane]))}", lane, int(addrs[lane]))
            self._derived_bounds(ins, self.gmem, addrs, offs, lanes_mask, nbytes)
            return self.gmem, offs
        if space in ("shared", "shared::cta", "shared::cluster"):
            rank = addrs >> CTA_SHIFT
            offs = addrs & CTA_MASK
            cl = w.cta.cluster_ctas
            r0 = rank[lanes_mask]
            if len(r0) and (r0 != r0[0]).any():
                raise Unsupported("one shared::cluster access spans several CTAs")
            r = int(r0[0]) if len(r0) else 0
            cta = w.cta if r == 0 else (cl[r - 1] if 0 <= r - 1 < len(cl) else None)
            if cta is None:
                raise Fault(f"shared::cluster address {int(addrs[lanes_mask][0]):#x} names CTA rank {r - 1}, "
                            f"outside the cluster", int(np.flatnonzero(lanes_mask)[0]))
            ok = cta.smem.in_bounds(offs, nbytes) | ~lanes_mask
            if not ok.all():
                lane = int(np.flatnonzero(~ok)[0])
                raise Fault(f"shared access of {nbytes} bytes at offset {int(offs[lane]):#x} is outside every "
                            f"shared variable{cta.smem.nearest(int(offs[lane]))}", lane, int(addrs[lane]))
            self._derived_bounds(ins, cta.smem, addrs, offs, lanes_mask, nbytes)
            if cta is not w.cta:
                self.remote_smem(w, cta, w.agent, w.clock(), w.last_loc, w.describe())
            return cta.smem, offs
        if space == "local":
            return "local", addrs
        if space in ("param", "param::entry", "param::func"):
            return "param", addrs - PARAM_WINDOW * (addrs >= PARAM_WINDOW)
        if space == "const":
            ok = ((addrs >= 0) & (addrs + nbytes <= len(self.const_mem))) | ~lanes_mask
            if not ok.all():
                lane = int(np.flatnonzero(~ok)[0])
                raise Fault(f"const access of {nbytes} bytes at offset {int(addrs[lane]):#x} is outside the "
                            f"{len(self.const_mem)}-byte constant bank", lane, int(addrs[lane]))
            return "const", addrs
        raise Unsupported(f"state space {space}")

    # ------------------------------------------------------------------ mbarriers


