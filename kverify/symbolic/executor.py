"""The symbolic per-thread engine: executes thread A over a kernel's structured body once, in
program order, over z3 bit-vector terms.

``If`` explores both arms under path conditions and merges registers with ``ite``; loops
are summarized with a symbolic iteration counter (:mod:`kverify.symbolic.loops`);
instructions act as :mod:`kverify.symbolic.instructions` says. Every access records the
instruction, space, mode, strength, byte address and width, path condition, *epoch*
(number of ``bar.sync 0`` executed before it, the barrier interval) and the enclosing
loops' iteration counters (:mod:`kverify.symbolic.records`).

Values the encoding cannot know exactly (floating-point results, values loaded from memory
the kernel also writes, havocked loop registers, results of collectives and unsupported
instructions) are fresh symbols marked *approximate*; a finding that depends on them is
``unknown``, never a violation. Per-thread symbols come in (A, B) pairs
(:mod:`kverify.symbolic.env`). A thread whose remaining path executes no barrier and no
shared or global access is as good as exited (``quiet`` tails: ``if (tid >= n) return;``
before a ``__syncthreads()``).

Checkers extend the executor: ``async_instr`` (asynchronous copies, mbarriers, wgmma) and
``loop_closed_forms`` are their extension points.

PTX ISA (9.0): §9.7.12 control flow; §9.7.13.1 bar/barrier; §10 special registers.
"""
from __future__ import annotations

import z3

from kverify.launch.layout import function_addresses
from kverify.semantics.ir.nodes import Block, Break, Continue, FImm, If, Imm, Instr, Loop, Neg, PairOp, Reg, Sym, VecOp

from .calls import Calls
from .env import Env
from .families import handler, is_async, is_private_memory, is_unmodelled_memory, row_of
from .instructions import Instructions
from .loops import LoopSummaries
from .provenance import LOCAL, Provenance
from .records import State
from .terms import FALSE, TRUE, Substitution, Symbols, fit, is_false, is_true, mk_and, mk_ite, mk_not, mk_or


class Executor(LoopSummaries, Calls, Instructions, Provenance):
    """Runs thread A over the kernel body; see the module docstring."""

    def __init__(self, env: Env, check):
        self.env = env
        self.check = check  # (formula) -> "sat" | "unsat" | "unknown" under thread-A constraints
        # () -> a context manager in which a query may spend only part of the solver budget
        # ``check`` draws on (``SolverBudget.capped``): a query whose ``unknown`` is then retried
        # piecewise (``LoopSummaries``); None: ``check`` has no budget shared across queries
        self.query_cap = None
        self.kernel = env.kernel
        self.accesses: list = []
        self.syncs: list = []
        self.loops: list = []
        self.traps: list = []  # path conditions under which a thread executes ``trap``
        self._syms = Symbols()  # names of the symbols in a term (memoized)
        self.reasons = {"shared": [], "global": []}
        self.notes: list = []
        # synchronization that may order accesses but is not counted: a race found while
        # it is present is reported as unknown, not as a violation
        self.unmodelled_sync: list = []
        self.local_sites: list = []  # (instr, path condition, address or None) of each local-memory access
        self.masks: list = []  # SyncSite("collective") of each warp collective, with its membermasks
        self.pending: dict = {}
        self.loop_stack: list = []  # (LoopInfo, k)
        self.loads: list = []  # (tag, value, region, width, seq) of global loads
        self.written_regions: set = set()
        self.address_params: set = set()  # parameters used as an address (pointers): note_address
        self.call_target_params: set = set()  # parameters called through (function pointers): ``Calls.indirect``
        self.unknown_region_write = False
        self.seq = {}
        self.widths = {}
        self.barrier_count = 0  # barriers of any kind seen so far (loops compare it)
        self.cta_barrier_count = 0  # bar.sync 0 only
        self.warp_barriers = False  # a full-mask bar.warp.sync was counted
        self.elect_sites = 0
        # GPUVerify annotations and CUDA assert() (``instructions.marker_call``)
        self.assertions: list = []  # AssertionSite
        self.preconditions: list = []  # PreconditionSite
        self.invalid_calls: list = []  # CallSite: indirect calls whose pointer may hold no function
        self.atomic_results: list = []  # AtomicResult: values atomics return (verifier/races/atomics.py)
        self.call_params: dict = {}  # .param name -> the term a call passes in it
        self.marker_rets: dict = {}  # .param name -> intrinsic whose result it receives
        self._closed_forms: dict = {}
        self._fn_tables = None  # tables of function pointers (``fn_tables``)
        self.init_reads: set = set()  # regions whose initial contents a load relied on
        # summaries of body-less functions (``symbolic.extern``): PTX name -> kind, and those a call used
        self.extern_summaries: dict = dict(getattr(env.launch, "extern", ()) or ())
        self.extern_used: dict = {}
        self.selections: dict = {}  # "?sel:<n>" -> ((condition, region), ...) (``provenance``)
        # loads out of by-value struct parameters the launch gives no bytes for: (PTX name, byte
        # offset or None, bytes), and the 8-byte slots among them used as an address
        self.struct_reads: list = []
        self.struct_addresses: set = set()
        self.func_addr = function_addresses(env.module)
        for d in self.kernel.regs:
            w = d.type.bits if hasattr(d.type, "bits") else 32
            if d.count is None:
                self.widths[d.name] = w
            else:
                for i in range(d.count):
                    self.widths[f"{d.name}{i}"] = w
        self.frames: list = []  # functions being executed (``calls.Frame``), innermost last
        self.ctx: tuple = ()  # the calling context of the code being executed (program order)
        self._params_stored: dict = {}  # id(Loop) -> .param variables its body stores into
        self.quiet: dict = {}
        self._annotate(self.kernel.body, ("kernel",), True, {})
        self.number_instructions()

    # ------------------------------------------------------------------ helpers
    def reason(self, msg: str, space: str | None = None, ordering: bool = False):
        """Something the encoding does not cover: the obligation (of ``space``, or both)
        cannot be proved. With ``ordering``, it may also order accesses (or changes the
        barrier count), so a race found elsewhere cannot be claimed either."""
        for sp in ((space,) if space else ("shared", "global")):
            if msg not in self.reasons[sp]:
                self.reasons[sp].append(msg)
        if ordering:
            self.unmodelled(msg)

    def epochs_unsummarized(self, msg: str):
        """A loop whose iterations pass different numbers of barriers: the barrier intervals from
        there on are not numbered, which the barrier-interval race argument rests on."""
        self.reason(msg, None, ordering=True)

    def approx(self, name: str, width: int):
        return self.env.fresh(name, width, approx=True)

    def read(self, st: State, op, width: int | None = None):
        """Value of an operand as (term, region)."""
        if isinstance(op, Reg):
            v = self._reg(st, op.name, width)
            if width is not None:
                return fit(v[0], width), v[1]
            return v
        if isinstance(op, Neg):
            t, _ = self._reg(st, op.reg.name, 1)
            return mk_not(fit(t, 1)), None
        if isinstance(op, Imm):
            w = width or 32
            if w == 1:
                return z3.BoolVal(bool(op.value)), None
            return z3.BitVecVal(op.value & ((1 << w) - 1), w), None
        if isinstance(op, FImm):
            w = width or op.width
            return fit(z3.BitVecVal(op.bits, op.width), w), None
        if isinstance(op, Sym):
            w = width or 64
            if op.name in self.env.shared_base:
                return z3.BitVecVal(self.env.shared_base[op.name] + op.offset, w), "shared"
            if op.name in self.env.params:
                return self.approx(f"paramaddr.{op.name}", w), None
            if op.name in self.env.struct_fields or op.name in self.unbound_structs():
                # the address of a by-value struct parameter
                return fit(z3.BitVec(f"paramaddr.{op.name}", 64) + op.offset, w), f"pstruct:{op.name}"
            if op.name in self.local_vars():  # the thread's local memory (``provenance``)
                return fit(self.local_base(op.name) + op.offset, w), f"local:{op.name}"
            if op.name in self.env.global_vars:
                base = z3.BitVec(f"gvar.{op.name}", 64)
                return fit(base + op.offset, w), f"var:{op.name}"
            if op.name in self.func_addr:  # a function pointer (``mov.u64 %rd, f;``)
                return z3.BitVecVal(self.func_addr[op.name] + op.offset, w), None
            return self.approx(f"sym.{op.name}", w), None
        if isinstance(op, VecOp):
            return None, None
        return self.approx("opnd", width or 32), None

    def unbound_structs(self) -> set:
        """PTX names of the kernel's by-value (``.b8`` array) parameters the launch gives no
        value for (neither bytes, fields nor a tensor map)."""
        got = getattr(self, "_unbound_structs", None)
        if got is None:
            launch = self.env.launch
            got = set()
            for i, p in enumerate(self.kernel.params):
                if not p.array or p.name in self.env.struct_fields:
                    continue
                if launch is not None and any(_given(m, p, i) for m in (launch.args or {}, launch.tensormaps or {})):
                    continue
                got.add(p.name)
            self._unbound_structs = got
        return got

    def _reg(self, st: State, name: str, width):
        base = name.split(".")[0]
        if base.startswith("%") and name not in st.regs and name not in self.widths:
            v = self.env.special(name)
            if v is not None:
                return v, None
        v = st.regs.get(name)
        if v is None:
            w = width or self.widths.get(name, 32)
            v = (self.approx(f"undef.{name}", w), None)
            st.regs[name] = v
        return v

    def write(self, st: State, reg: str, val, guard):
        term, region = val
        if not is_true(guard):
            old = st.regs.get(reg)
            if old is None:
                w = 1 if z3.is_bool(term) else term.size()
                old = (self.approx(f"undef.{reg}", w), None)
            if z3.is_bool(term) != z3.is_bool(old[0]):
                old = (fit(old[0], 1 if z3.is_bool(term) else term.size()), old[1])
            elif not z3.is_bool(term) and old[0].size() != term.size():
                old = (fit(old[0], term.size()), old[1])
            term = mk_ite(guard, term, old[0])
            if region != old[1]:
                # a predicated move of a pointer into another buffer: a selection (``provenance``)
                region = self.select_region(guard, region, old[1]) if not z3.is_bool(term) else "?"
        st.regs[reg] = (term, region)

    @staticmethod
    def dests(instr: Instr):
        """Registers the instruction writes: its op-table ``def`` slots (the first operand
        of an instruction the table does not know; the destination of ``bar.red``)."""
        row = row_of(instr)
        if row is None:
            slots = (0,)
        elif row.sync == "bar" and "red" in instr.mods:
            slots = (0,)
        else:
            slots = tuple(i for i, sl in enumerate(row.operands) if sl.access == "def")
        out = []
        for i in slots:
            d = instr.operands[i] if i < len(instr.operands) else None
            if isinstance(d, Reg):
                out.append(d.name)
            elif isinstance(d, VecOp):
                out.extend(e.name for e in d.elems if isinstance(e, Reg))
            elif isinstance(d, PairOp):
                out.extend(e.name for e in (d.first, d.second) if isinstance(e, Reg))
        return out

    def havoc_dests(self, st: State, instr: Instr, guard, tag="op"):
        for r in self.dests(instr):
            w = self.widths.get(r, 32)
            self.write(st, r, (self.approx(f"{tag}.{r}", w), None), guard)

    # ------------------------------------------------------------------ statements
    def initial_regs(self) -> dict:
        """Extension point: registers with a value at kernel entry (``{name: (term,
        region)}``); none by default."""
        return {}

    def run(self):
        st = State(TRUE, dict(self.initial_regs()), z3.BitVecVal(0, 64), FALSE)
        st = self.stmts(self.kernel.body, st, ("kernel",))
        self._resolve_loads()
        for region in sorted(self.init_reads):
            if region in self.written_regions or self.unknown_region_write:
                self.reason(f"a load relied on the initial contents of {region.split(':', 1)[1]}, which the kernel "
                            "may write", ordering=True)
        return st

    def _resolve_loads(self):
        """Global loads from a buffer the kernel never writes read an input: one value per
        address, shared by all threads (the tag becomes 0). Loads from a buffer it writes
        become fresh approximate values (the memory changes while the kernel runs)."""
        pairs = []
        for tag, app, region, w, seq in self.loads:
            if region in self.written_regions or self.unknown_region_write:
                pairs.append((app, self.approx(f"mem{seq}.{region}", w)))
            else:
                pairs.append((tag, z3.BitVecVal(0, 8)))
        if not pairs:
            return

        sub = Substitution(pairs)

        for a in self.accesses:
            a.addr, a.pc, a.epoch = sub(a.addr), sub(a.pc), sub(a.epoch)
        for y in self.syncs:
            y.pc, y.exited, y.head_pc = sub(y.pc), sub(y.exited), sub(y.head_pc)
        for info in self.loops:
            if info.cont_pc is not None:
                info.cont_pc = sub(info.cont_pc)
        for a in self.assertions:
            a.fails = sub(a.fails)
        for p in self.preconditions:
            p.pc, p.holds = sub(p.pc), sub(p.holds)
        for c in self.invalid_calls:
            c.bad, c.target = sub(c.bad), sub(c.target)
        for r in self.atomic_results:
            if r.operand is not None:
                r.operand = sub(r.operand)
        self.env.constraints_a[:] = [(sub(c), keys) for c, keys in self.env.constraints_a]

    # ------------------------------------------------------------------ quiet tails
    def _annotate(self, stmts, key, after, labels):
        """``self.quiet[key][i]``: from statement i of this list on, a thread executes no
        barrier and no shared or global access until it exits (``after``: the same for what
        follows the list; ``labels``: the same for the targets of break / continue). Such a
        thread can take part in no race and in no barrier: it is as good as exited, which
        is what lets ``if (tid >= n) return;`` precede a ``__syncthreads()``. In a called
        function's body ``labels["<ret>"]`` is false: its ``ret`` goes back to the caller."""
        n = len(stmts)
        q = [False] * (n + 1)
        q[n] = after
        for i in range(n - 1, -1, -1):
            s = stmts[i]
            nxt = q[i + 1]
            if isinstance(s, Instr):
                h = handler(s)
                if h == "ret" and "<ret>" in labels:
                    ok = labels["<ret>"]  # a called function's ret: back to the caller
                elif h in ("exit", "trap", "ret") and s.guard is None:
                    ok = True
                else:
                    ok = nxt and self._instr_quiet(s)
            elif isinstance(s, If):
                t = self._annotate(s.then, (id(s), "then"), nxt, labels)
                e = self._annotate(s.orelse, (id(s), "else"), nxt, labels)
                ok = t and e
            elif isinstance(s, Block):
                ok = self._annotate(s.body, (id(s), "body"), nxt, {**labels, s.label: nxt})
            elif isinstance(s, Loop):
                guess = True
                while True:  # the body start is quiet if it is, assuming so at `continue`
                    ok = self._annotate(s.body, (id(s), "body"), nxt, {**labels, s.label: guess})
                    if ok == guess:
                        break
                    guess = ok
            elif isinstance(s, (Break, Continue)):
                ok = labels.get(s.label, False)
            else:
                ok = False
            q[i] = ok
        self.quiet[key] = q
        return q[0]

    def _instr_quiet(self, ins: Instr) -> bool:
        row = row_of(ins)
        if handler(ins) == "call":  # a call of a function summarized as pure touches nothing
            if self.summary_of(ins) != "pure":
                return False
            target = next(o.name for o in ins.operands if isinstance(o, Sym))
            self.extern_used[target] = "pure"  # a verdict that skips the call rests on the summary too
            return True
        if row is None or row.sync in ("bar", "bar.warp.sync", "cluster.barrier"):
            return False
        if is_async(ins) or is_unmodelled_memory(ins):
            return False
        if row.effect == "memory":
            return is_private_memory(ins)
        return True

    @staticmethod
    def _quiet_exit(st: State) -> State:
        return State(FALSE, st.regs, st.epoch, mk_or(st.exited, st.pc))

    def stmts(self, stmts, st: State, key) -> State:
        q = self.quiet.get(key)
        for i, s in enumerate(stmts):
            if is_false(st.pc):
                # nothing below executes on this path (but nested loops' sites need no record)
                break
            if q is not None and q[i]:
                return self._quiet_exit(st)
            if isinstance(s, Instr):
                st = self.instr(s, st)
            elif isinstance(s, If):
                st = self.if_(s, st)
            elif isinstance(s, Loop):
                st = self.loop(s, st)
            elif isinstance(s, Block):
                key = ("break", s.label)
                mark = len(self.pending.get(key, []))
                end = self.stmts(s.body, st, (id(s), "body"))
                outs = self.pending.get(key, [])[mark:]
                if key in self.pending:
                    del self.pending[key][mark:]
                st = self.merge([end] + outs)
            elif isinstance(s, Break):
                self.pending.setdefault(("break", s.label), []).append(st)
                st = st.dead()
            elif isinstance(s, Continue):
                self.pending.setdefault(("cont", s.label), []).append(st)
                st = st.dead()
        if q is not None and q[len(stmts)] and not is_false(st.pc):
            return self._quiet_exit(st)
        return st

    def cond(self, st: State, reg: Reg, negated: bool):
        t, _ = self._reg(st, reg.name, 1)
        c = fit(t, 1)
        return mk_not(c) if negated else c

    def if_(self, s: If, st: State) -> State:
        c = self.cond(st, s.cond, s.negated)
        t0, e0 = mk_and(st.pc, c), mk_and(st.pc, mk_not(c))
        # a thread that takes an arm that is quiet until exit is as good as exited from the
        # moment it branches -- also as seen from the other arm (``if (tid >= n) return;``
        # before a barrier): the other arm's threads see it as exited
        tq = self.quiet[(id(s), "then")][0]
        eq = self.quiet[(id(s), "else")][0]
        t = State(t0, dict(st.regs), st.epoch, mk_or(st.exited, e0) if eq else st.exited)
        e = State(e0, dict(st.regs), st.epoch, mk_or(st.exited, t0) if tq else st.exited)
        t = self.stmts(s.then, t, (id(s), "then")) if not is_false(t.pc) else t
        e = self.stmts(s.orelse, e, (id(s), "else")) if not is_false(e.pc) else e
        if is_false(t.pc) or is_false(e.pc):
            return self.merge([t, e])
        # both arms fall through: registers are selected by the condition itself, and when
        # neither arm left early the path condition is the one before the branch
        pc = st.pc if (t.pc.eq(t0) and e.pc.eq(e0)) else mk_or(t.pc, e.pc)
        return self.merge([t, e], pc=pc, select=c)

    def merge(self, states, pc=None, select=None) -> State:
        """Join states; ``select`` (two states) is a condition true on the first one's
        paths and false on the second's, used instead of the path conditions."""
        exited = mk_or(*[s.exited for s in states])
        live = [s for s in states if not is_false(s.pc)]
        if not live:
            base = states[0]
            return State(FALSE, base.regs, base.epoch, exited)
        if len(live) == 1:
            s = live[0]
            return State(s.pc, s.regs, s.epoch, exited)
        if pc is None:
            pc = mk_or(*[s.pc for s in live])
        sel = [select] if select is not None and len(live) == 2 else [s.pc for s in live[:-1]]
        # the registers some path changed (most of a kernel's are the same object on every path)
        first = live[0].regs
        names, changed = set(first), set()
        for s in live[1:]:
            if s.regs is not first:
                names.update(s.regs)
                changed.update([n for n, v in s.regs.items() if first.get(n) is not v])
                changed.update(first.keys() - s.regs.keys())
        joined = {}
        for n in sorted(changed):  # (the order terms are made in is the order z3 numbers them)
            vals = [(p, s.regs.get(n)) for p, s in zip(sel + [TRUE], live)]
            have = [(p, v) for p, v in vals if v is not None]
            if n.startswith(LOCAL) and len(have) < len(vals):
                continue  # a local store remembered on some paths only: not known after the join
            term, region = have[-1][1]
            for p, v in reversed(have[:-1]):
                t2 = v[0]
                if z3.is_bool(t2) != z3.is_bool(term):
                    t2 = fit(t2, 1 if z3.is_bool(term) else term.size())
                elif not z3.is_bool(term) and t2.size() != term.size():
                    t2 = fit(t2, term.size())
                term = mk_ite(p, t2, term)
                if v[1] != region:
                    # two pointers into different buffers: a selection (``provenance``)
                    region = self.select_region(p, v[1], region) if len(have) == 2 and not z3.is_bool(term) \
                        else "?"
            joined[n] = (term, region)
        dropped = changed - joined.keys()  # (local stores known on some paths only)
        regs = {n: joined[n] if n in joined else first[n] for n in sorted(names - dropped)}
        epoch = live[-1].epoch
        for p, s in reversed(list(zip(sel, live[:-1]))):
            epoch = mk_ite(p, s.epoch, epoch)
        return State(pc, regs, epoch, exited)


def _given(mapping: dict, p, i: int) -> bool:
    return any(k is not None and k in mapping for k in (p.source_name, p.name, str(i), i))
