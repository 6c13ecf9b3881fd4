"""Loop summaries of the symbolic per-thread engine: a ``Loop`` is executed once with a
symbolic iteration counter ``k``. Its induction variables (``Loop.ivs``) take the value
``init + k*step`` and registers with a validated closed form take ``f(k)``; every other
register the loop writes is havocked; the barrier count is ``epoch_at_entry + c*k`` with
``c`` the barriers per iteration. Induction variables, closed forms and trip counts are
re-validated by SMT (induction: at every ``continue`` the register is ``f(k + 1)`` and
``k + 1 < trip``); what fails validation is havocked instead, so a wrong summary never
makes a proof. ``LoopInfo`` records each summary: its counter, trip count, whether every
``k`` below the trip count is reached (``exact``), barriers per iteration.

PTX ISA (9.0): §9.7.12 bra (the loops the front end structured); §9.7.13.1 barriers
counted per iteration.
"""
from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass

import z3

from kverify.semantics.ir.errors import Unsupported
from kverify.semantics.ir.nodes import Imm, Instr, Loop
from kverify.semantics.ir.symint import SymInt
from kverify.semantics.ir.visit import walk

from .provenance import LOCAL
from .records import State, SyncSite
from .terms import Symbols, fit, is_false, keys, mk_and, mk_ite, mk_not, mk_or

K_LIMIT = 1 << 31  # iteration counters of loops without a validated trip count
MAX_BOUND = 64  # the largest immediate taken as a candidate upper bound of a loop register
MAX_BOUND_CANDIDATES = 16  # candidate bounds per loop (two queries each per round at most)
REACH_PREFIX = 16  # iterations j whose continue is required of every later one (``_reached``)


@dataclass
class LoopInfo:
    """One loop of the kernel as the executor summarized it."""

    loop: Loop
    k: object  # thread A's iteration counter (BV64)
    trip: object | None  # validated trip count (BV64) or None
    exact: bool  # every k in [0, trip) is reached (k is not an over-approximation)
    barriers_per_iteration: int = 0
    dropped_ivs: tuple = ()
    cont_pc: object = None  # thread A: iteration k goes on to iteration k + 1
    # the summary's transition, for invariants over loop-carried registers (mbarrier rings):
    head_pc: object = None  # iteration k's head is reached
    havocs: dict = None  # register -> its havocked value at the head of iteration k > 0
    head_regs: dict = None  # register -> (value, region) at the head of iteration k
    conts: tuple = ()  # (pc, regs) at each continue of iteration k (regs over the head values)
    end: tuple = None  # (pc, regs) where iteration k falls off the body's end
    kx: object = None  # the iteration the loop is left in (``trip - 1`` or a fresh counter)

    @property
    def name(self) -> str:
        ln = self.loop.back_loc.line or self.loop.loc.line or self.loop.loc.ptx_line
        return f"{self.loop.label} (line {ln})" if ln else self.loop.label


class LoopSummaries:
    """Mixin of :class:`kverify.symbolic.executor.Executor`: loops (see the module
    docstring)."""

    def loop(self, lp: Loop, st: State) -> State:
        written = set()
        for s, _ in walk(lp.body):
            if isinstance(s, Instr):
                written.update(self.dests(s))
        ivs = {iv.reg.name: iv for iv in lp.ivs if iv.reg.name in written}
        # extension point: closed forms of further loop-carried registers (validated like
        # induction variables below); none by default
        forms = dict(self.loop_closed_forms(lp, st, written, ivs) or {})
        forms.update({r: f for r, f in self._functional_forms(st.regs, ivs, written).items() if r not in forms})
        self._closed_forms[id(lp)] = forms
        trip_modes = ["sext", "zext", None] if lp.trip_count is not None else [None]
        dropped: list = []
        region_unknown: set = set()
        while True:
            mode = trip_modes[0]
            res = self._loop_attempt(lp, st, ivs, mode, written, region_unknown)
            if res[0] == "ok":
                info, out = res[1], res[2]
                info.dropped_ivs = tuple(dropped)
                return out
            _, bad_ivs, bad_trip, bad_regions = res
            region_unknown |= set(bad_regions)
            for r in bad_ivs:
                ivs.pop(r, None)
                forms.pop(r, None)
                dropped.append(r)
            if bad_trip:
                trip_modes.pop(0)

    def _trip_term(self, lp: Loop, regs0: dict, mode):
        if mode is None or lp.trip_count is None:
            return None
        try:
            return self.symint(lp.trip_count, 64, regs0, signed=(mode == "sext"))
        except Unsupported:
            return None

    def symint(self, s: SymInt, width: int, regs0: dict, signed: bool = True):
        """A ``SymInt`` (over parameters, special registers and registers at loop entry)
        as a ``width``-bit term."""
        env = self.env

        def ext(t):
            if z3.is_bool(t):
                t = z3.If(t, z3.BitVecVal(1, 1), z3.BitVecVal(0, 1))
            w = t.size()
            if w == width:
                return t
            if w > width:
                return z3.Extract(width - 1, 0, t)
            return (z3.SignExt if signed else z3.ZeroExt)(width - w, t)

        def atom(a):
            if isinstance(a, str):
                # a parameter of the kernel (a called function's are not: its registers at loop
                # entry are in regs0)
                if a in env.params and not self.frames:
                    return ext(env.params[a][0])
                for p in self.kernel.params if not self.frames else ():
                    if p.source_name == a and p.name in env.params:
                        return ext(env.params[p.name][0])
                if a.startswith("%"):
                    if a in regs0:
                        return ext(regs0[a][0])
                    v = env.special(a)
                    if v is not None:
                        return z3.ZeroExt(width - 32, v) if width > 32 else fit(v, width)
                raise Unsupported(f"symbol {a} in a loop summary")
            args = [self.symint(x, width, regs0, signed) for x in a.args]
            x, y = args
            if a.op == "floordiv":
                q = x / y
                return z3.If(z3.And(x % y != 0, (x < 0) != (y < 0)), q - 1, q)
            if a.op == "mod":
                q = x / y
                q = z3.If(z3.And(x % y != 0, (x < 0) != (y < 0)), q - 1, q)
                return x - q * y
            if a.op == "min":
                return z3.If(x < y, x, y)
            if a.op == "max":
                return z3.If(x > y, x, y)
            raise Unsupported(f"{a.op} in a loop summary")

        out = z3.BitVecVal(0, width)
        for mono, c in s.terms:
            t = z3.BitVecVal(c & ((1 << width) - 1), width)
            for a in mono:
                t = t * atom(a)
            out = out + t
        return z3.simplify(out)

    def _failed_checks(self, checks, capped: bool = False):
        """The induction checks (kind, register, formula: satisfiable when the check fails)
        not proved. One query for all of them first; a disjunction can be far harder for the
        solver than each of its parts, so when that query has no answer within part of the
        budget (``query_cap``), one query for each. ``capped``: those queries all within one such
        part of the budget too (checks whose failure costs only precision: one the part left no
        units for fails)."""
        def cap(on=True):
            return self.query_cap() if self.query_cap is not None and on else nullcontext()

        with cap(len(checks) > 1 or capped):
            res, model = self.check(mk_or(*[c[2] for c in checks]))
        if res == "unsat":
            return []
        if res == "sat":
            return [c for c in checks if z3.is_true(model.eval(c[2], model_completion=True))]
        if self.query_cap is None or len(checks) == 1:
            return list(checks)
        with cap(capped):
            return [c for c in checks if self.check(c[2])[0] != "unsat"]

    def _loop_attempt(self, lp: Loop, st: State, ivs: dict, mode, written, region_unknown):
        n = len(self.loops)
        k = self.env.fresh(f"k{n}.{lp.label}", 64)
        pmark = len(self.env.pairs)  # symbols made from here on stand for one iteration's values
        regs0 = st.regs
        trip = self._trip_term(lp, regs0, mode)
        if mode is not None and trip is None:
            return ("retry", [], True, [])
        # --- loop head at iteration k
        if trip is not None:
            rng = mk_and(z3.ULT(k, z3.BitVecVal(K_LIMIT, 64)), k < trip)
        else:
            rng = z3.ULT(k, z3.BitVecVal(K_LIMIT, 64))
        head_pc = mk_and(st.pc, rng)
        # .param variables the body stores into (a call's arguments and results): like the registers
        # it writes, their values at the head of iteration k are not the entry values
        stored = self.params_stored(lp)
        # so are the thread's local stores it remembers (``provenance``), when the body may store
        # to local memory
        forget = self.may_store_local(lp)
        regs = {r: v for r, v in regs0.items() if not self.is_param_piece(r, stored)
                and not (forget and r.startswith(LOCAL))}
        steps = {}
        havocs = {}
        first = k == 0
        forms = self._closed_forms.get(id(lp), {})
        for r in sorted(written):
            old = regs0.get(r)
            if r in forms and r not in ivs and old is not None and not z3.is_bool(old[0]):
                regs[r] = (forms[r](k), old[1])
                continue
            if r in ivs and old is not None and not z3.is_bool(old[0]):
                w = old[0].size()
                try:
                    step = self.symint(ivs[r].step, w, regs0)
                except Unsupported:
                    step = None
                if step is not None:
                    steps[r] = step
                    kw = fit(k, w)
                    regs[r] = (z3.simplify(old[0] + kw * step), old[1])
                    continue
            w = self.widths.get(r, 32)
            h = self.approx(f"h{n}.{r}", w)
            region = "?" if r in region_unknown else (old[1] if old is not None else None)
            havocs[r] = h
            if old is not None and (z3.is_bool(old[0]) == (w == 1)):
                regs[r] = (mk_ite(first, fit(old[0], w), h), region)
            else:
                regs[r] = (h, region)
        eh = z3.BitVec(f"E{n}.{lp.label}", 64)
        info = LoopInfo(lp, k, trip, False)
        self.loops.append(info)
        marks = {key: len(v) for key, v in self.pending.items()}
        amark, smark = len(self.accesses), len(self.syncs)
        cmark = len(self.env.constraints_a)
        bc_before, cta_before = self.barrier_count, self.cta_barrier_count
        self.loop_stack.append((info, k))
        head = State(head_pc, dict(regs), eh, st.exited)
        end = self.stmts(lp.body, head, (id(lp), "body"))
        self.loop_stack.pop()
        conts = self.pending.get(("cont", lp.label), [])[marks.get(("cont", lp.label), 0):]
        info.head_pc, info.havocs, info.head_regs = head_pc, havocs, dict(regs)
        info.conts = tuple((c.pc, dict(c.regs)) for c in conts)
        info.end = (end.pc, dict(end.regs))
        # restore pending lists for this label; collect breaks that leave the loop
        leaving = []
        for key, lst in self.pending.items():
            m = marks.get(key, 0)
            if key == ("cont", lp.label):
                del lst[m:]
            elif len(lst) > m:
                leaving.append((key, m))
        # --- validation (induction): IVs and the trip count
        checks = []
        for c in conts:
            for r, step in steps.items():
                now = c.regs.get(r)
                if now is None or z3.is_bool(now[0]):
                    checks.append(("iv", r, c.pc))
                else:
                    w = now[0].size()
                    checks.append(("iv", r, mk_and(c.pc, now[0] != fit(regs[r][0], w) + fit(step, w))))
            for r, f in forms.items():
                if r in ivs or r not in regs or r in steps:
                    continue
                now = c.regs.get(r)
                want = f(k + 1)
                if now is None or z3.is_bool(now[0]) or now[0].size() != want.size():
                    checks.append(("iv", r, c.pc))
                else:
                    checks.append(("iv", r, mk_and(c.pc, now[0] != want)))
            if trip is not None:
                checks.append(("trip", None, mk_and(c.pc, mk_not(k + 1 < trip))))
        if trip is not None:
            checks.append(("trip", None, mk_and(st.pc, mk_not(z3.BitVecVal(0, 64) < trip))))
        bad_ivs, bad_trip = [], False
        # pointer provenance assumed for the registers at the loop head must be kept
        bad_regions = sorted({r for c in conts for r in written
                              if r in regs and r in c.regs and c.regs[r][1] != regs[r][1]
                              and regs[r][1] != "?"})
        checks = [c for c in checks if not is_false(c[2])]
        if checks:
            failed = self._failed_checks(checks)
            bad_ivs = [r for kind, r, _ in failed if kind == "iv"]
            bad_trip = any(kind == "trip" for kind, _, _ in failed)
        if bad_ivs or bad_trip or bad_regions:
            # undo this attempt
            del self.accesses[amark:]
            del self.syncs[smark:]
            del self.loops[n:]
            del self.env.constraints_a[cmark:]
            for key, lst in self.pending.items():
                del lst[marks.get(key, 0):]
            self.barrier_count, self.cta_barrier_count = bc_before, cta_before
            return ("retry", sorted(set(bad_ivs)), bad_trip, bad_regions)
        self._bounds(lp, regs0, havocs, conts)
        # --- barriers per iteration
        c_vals = set()
        for c in conts:
            d = z3.simplify(c.epoch - eh)
            c_vals.add(d.as_long() if z3.is_bv_value(d) else None)
        if not conts:
            cper = 0
            # the body never starts another iteration: only k = 0 runs
            for a in self.accesses[amark:]:
                a.pc = mk_and(a.pc, k == 0)
            end = State(mk_and(end.pc, k == 0), end.regs, end.epoch, end.exited)
        elif len(c_vals) == 1 and None not in c_vals:
            cper = c_vals.pop()
        else:
            cper = 0
            self.epochs_unsummarized(f"the number of barriers per iteration of loop {info.name} is not constant; "
                                     "barrier intervals in it are not summarized")
        info.barriers_per_iteration = cper
        info.cont_pc = mk_or(*[c.pc for c in conts])
        if conts:
            self._reached(k, info.cont_pc, pmark)
        head_epoch = z3.simplify(st.epoch + z3.BitVecVal(cper, 64) * k)
        sub = [(eh, head_epoch)]
        for a in self.accesses[amark:]:
            a.epoch = z3.simplify(z3.substitute(a.epoch, *sub))
        if self.barrier_count != bc_before:
            # loop decisions must be uniform for the barrier intervals inside to line up
            # (across the warp when the loop holds warp barriers only)
            scope = "cta" if self.cta_barrier_count != cta_before else "warp"
            for c in conts:
                self.syncs.append(SyncSite("loop-continue", None, lp.loc, c.pc, c.exited, head_pc,
                                           tuple(self.loop_stack) + ((info, k),), scope))
            for key, m in leaving:
                for s in self.pending[key][m:]:
                    self.syncs.append(SyncSite("loop-exit", None, lp.loc, s.pc, s.exited, head_pc,
                                               tuple(self.loop_stack) + ((info, k),), scope))
            self.syncs.append(SyncSite("loop-exit", None, lp.loc, end.pc, end.exited, head_pc,
                                       tuple(self.loop_stack) + ((info, k),), scope))
        for key, m in leaving:
            lst = self.pending[key]
            for i in range(m, len(lst)):
                s = lst[i]
                lst[i] = State(s.pc, s.regs, z3.simplify(z3.substitute(s.epoch, *sub)), s.exited)
        out = State(end.pc, end.regs, z3.simplify(z3.substitute(end.epoch, *sub)), end.exited)
        # --- exactness of k: every iteration below the trip count is reached
        if trip is not None:
            exits = [end.pc] + [s.pc for key, m in leaving for s in self.pending[key][m:]]
            body_exit = mk_and(mk_or(*exits, mk_and(out.exited, mk_not(st.exited))), k + 1 < trip)
            if is_false(body_exit):
                info.exact = True
            else:
                res, _ = self.check(body_exit)
                info.exact = res == "unsat"
        if not info.exact:
            self.env.approx.add(str(k))
            for a, b in self.env.pairs:
                if a.eq(k):
                    self.env.approx.add(str(b))
        # --- the state after the loop: the iteration it left in is a separate counter kx
        only_falloff = not leaving and out.exited.eq(st.exited)
        if only_falloff and info.exact:
            # every iteration below the trip count runs and only the last one falls off
            kx = z3.simplify(trip - 1)
        else:
            kx = self.env.fresh(f"kx{n}.{lp.label}", 64, approx=not info.exact)
            if conts:  # the iteration it leaves in was reached like any other
                self._reached(k, info.cont_pc, pmark, at=kx)
        info.kx = kx
        xs = [(k, kx)]
        regs_x = dict(out.regs)
        written = set(written) | {r for r in regs_x if self.is_param_piece(r, stored) or r.startswith(LOCAL)} \
            | {r for key, m in leaving for st_ in self.pending[key][m:] for r in st_.regs
               if self.is_param_piece(r, stored) or r.startswith(LOCAL)}
        for r in written:
            if r in regs_x:
                t, rg = regs_x[r]
                regs_x[r] = (z3.substitute(t, *xs), rg)
        epoch_x = z3.simplify(z3.substitute(out.epoch, *xs))
        for key, m in leaving:
            lst = self.pending[key]
            for i in range(m, len(lst)):
                s = lst[i]
                lst[i] = State(z3.substitute(s.pc, *xs),
                               {r: ((z3.substitute(t, *xs), rg) if r in written else (t, rg))
                                for r, (t, rg) in s.regs.items()},
                               z3.substitute(s.epoch, *xs), z3.substitute(s.exited, *xs))
        if only_falloff and info.exact:
            out = State(st.pc, regs_x, epoch_x, st.exited)
        elif only_falloff:
            # only falling off the end leaves the loop: a thread that enters it leaves it
            # (loops are assumed to terminate) in the iteration kx where the exit is taken
            axiom = z3.Implies(st.pc, z3.substitute(end.pc, *xs))
            self.env.constraints_a.append((axiom, keys(kx)))
            out = State(st.pc, regs_x, epoch_x, st.exited)
        else:
            out = State(z3.substitute(out.pc, *xs), regs_x, epoch_x, z3.substitute(out.exited, *xs))
        return ("ok", info, out)

    def _reached(self, k, cont, pmark: int, at=None) -> None:
        """Iteration ``at`` (default ``k``) starts only when every iteration before it continued:
        the continue condition (a term of ``k``) at ``at - 1`` and at each of the first
        ``REACH_PREFIX`` iterations below ``at``, added to the constraints when it reads nothing
        the body makes per iteration (a havocked register or a loaded value is one symbol for
        every iteration, and must not be read at another). It keeps a loop's unreachable
        iterations (a persistent kernel's tiles past the last one) out of every query, and pins
        the iteration a loop leaves in (``kx``) where the launch decides it."""
        inner = {a.decl().name() for a, _ in self.env.pairs[pmark:]}
        if Symbols()(cont) & inner:
            return
        at = k if at is None else at
        prev = z3.substitute(cont, (k, at - 1))
        self.env.constraints_a.append((z3.Implies(z3.UGE(at, 1), prev), keys(at)))
        # every iteration j < at continued too: the first ones, for loops whose counters wrap
        # (``tile += gridDim.x`` in 32 bits meets ``tile < ntiles`` again after 2^32 / gridDim.x)
        for j in range(REACH_PREFIX):
            now = z3.simplify(z3.substitute(cont, (k, z3.BitVecVal(j, 64))))
            if not z3.is_true(now):
                self.env.constraints_a.append((z3.Implies(z3.UGT(at, j), now), keys(at)))
            if z3.is_false(now):
                break

    def _functional_forms(self, regs0: dict, ivs: dict, written) -> dict:
        """Closed forms ``r(k) = F(x(k))`` of loop-carried registers that the loop recomputes from
        an induction variable ``x`` the way they were computed before it: ``F`` is ``r``'s entry
        value with ``x``'s entry value abstracted (a persistent kernel's tile coordinates, divided
        out of the linear tile index that steps by the grid size). Validated by induction like
        every closed form (at each ``continue``, ``r == F(x(k + 1))``)."""
        out = {}
        steps = []
        for x, iv in sorted(ivs.items()):
            old = regs0.get(x)
            if old is None or z3.is_bool(old[0]) or z3.is_bv_value(z3.simplify(old[0])):
                continue
            try:
                step = self.symint(iv.step, old[0].size(), regs0)
            except Unsupported:
                continue
            steps.append((x, old[0], step))
        if not steps:
            return out
        for r in sorted(written):
            old = regs0.get(r)
            if r in ivs or old is None or z3.is_bool(old[0]) or z3.is_bv_value(old[0]):
                continue
            for x, x0, step in steps:
                if not _contains(old[0], x0):
                    continue
                v = z3.FreshConst(x0.sort(), "iv")
                body = z3.substitute(old[0], (x0, v))
                out[r] = (lambda k, body=body, v=v, x0=x0, step=step:
                          z3.simplify(z3.substitute(body, (v, x0 + fit(k, x0.size()) * step))))
                break
        return out

    def _bounds(self, lp: Loop, regs0: dict, havocs: dict, conts) -> None:
        """Upper bounds ``h <u U`` of the loop's havocked registers, proved together by induction
        and added to the constraints: a register entering with a constant below ``U`` that every
        continue leaves below ``U`` while the others keep theirs (Houdini's fixpoint over the
        candidates). ``U`` is drawn from the immediates the body compares with (``setp.eq r, 3``
        of a ring index wrapping at 3: ``U`` and ``U + 1``), so a ring's stage index is known to
        stay in the ring, which tells its barriers apart from another ring's."""
        if not conts or not havocs:
            return
        compares = [x for x, _ in walk(lp.body) if isinstance(x, Instr) and x.row is not None
                    and x.row.semantics == "setp"]  # the op table's comparison family
        imms = {o.value for x in compares for o in x.operands
                if isinstance(o, Imm) and isinstance(o.value, int) and 0 < o.value <= MAX_BOUND}
        cands = []
        syms = Symbols()
        for r, h in sorted(havocs.items()):
            old = regs0.get(r)
            if old is None or z3.is_bool(h) or h.size() > 64 or z3.is_bool(old[0]):
                continue
            # loop-carried state only (a value the next iteration computes from this one's), not
            # the temporaries every iteration recomputes
            name = h.decl().name()
            if not any(r in c.regs and not z3.is_bool(c.regs[r][0]) and name in syms(c.regs[r][0]) for c in conts):
                continue
            e = z3.simplify(fit(old[0], h.size()))
            if not z3.is_bv_value(e):
                continue
            ups = sorted({u for c in imms for u in (c, c + 1) if e.as_long() < u})
            cands += [(r, h, z3.BitVecVal(u, h.size())) for u in ups]
        cands = cands[:MAX_BOUND_CANDIDATES]
        while cands:
            hyp = mk_and(*[z3.ULT(h, u) for _, h, u in cands])
            bad, checks = set(), []
            for i, (r, h, u) in enumerate(cands):
                for c in conts:
                    now = c.regs.get(r)
                    if now is None or z3.is_bool(now[0]) or now[0].size() != h.size():
                        bad.add(i)
                        break
                    checks.append((i, r, mk_and(c.pc, hyp, mk_not(z3.ULT(now[0], u)))))
            checks = [c for c in checks if c[0] not in bad]
            if checks:  # a candidate without an answer is dropped: a bound less, never a wrong one
                bad |= {i for i, _, _ in self._failed_checks(checks, capped=True)}
            if not bad:
                break
            cands = [c for i, c in enumerate(cands) if i not in bad]
        for _, h, u in cands:
            self.env.constraints_a.append((z3.ULT(h, u), keys(h)))

    def loop_closed_forms(self, lp: Loop, st: State, written, ivs) -> dict:
        """Extension point: ``{register: f}`` with ``f(k)`` the register's value at the
        head of iteration ``k``, for loop-carried registers that are not induction
        variables. Each form is validated by induction like an induction variable (and
        dropped when it fails); the race checker proposes none."""
        return {}


def _contains(t, sub, limit: int = 20000) -> bool:
    """Whether ``sub`` is a subterm of ``t`` (up to ``limit`` distinct nodes visited)."""
    seen, todo = set(), [t]
    while todo and len(seen) < limit:
        e = todo.pop()
        if e.get_id() in seen:
            continue
        seen.add(e.get_id())
        if e.eq(sub):
            return True
        todo.extend(e.children())
    return False
