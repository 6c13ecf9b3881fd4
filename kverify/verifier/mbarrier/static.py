"""Static mbarrier conformance by SMT, for all loop iterations and trip counts.

Owns the obligations "mbarrier conformance: parity (initial phase and alternation)",
"... tx bytes (per phase)" and "... arrivals (per phase)" (checker ``mbarrier``). One symbolic
thread runs the kernel body (:mod:`kverify.verifier.mbarrier.sites`, built on
:mod:`kverify.symbolic`) with loop iteration counters ``k``; every mbarrier instruction and
every copy signalling an mbarrier is a site with its barrier address ``a(k)`` and its terms.
Then, with z3:

* parity (rule ``mbarrier.parity``, §9.7.13.15.4 phase, §9.7.13.15.16 test_wait/try_wait):
  the n-th use of a barrier by a wait site names phase ``n - offset``, the offset given by
  the waiting role (0: its round completes the phase -- copies / expect-tx on it, or the
  waiting threads arrive on it first, or another role releases it to a reader; 1: the
  producer's pass-through on a fresh barrier, its threads filling a partner barrier after the
  wait). Straight-line waits count the earlier ones; in a loop, with the reuse distance
  ``d`` (smallest ``d`` in 1..64 with ``a(k+d) == a(k)`` and ``a(k+d') != a(k)`` for
  ``d' < d``), iterations ``0 .. d-1`` name parity ``offset`` and ``p(k+d) != p(k)``;
* tx bytes (rule ``mbarrier.tx-mismatch``, §9.7.13.15.11 expect-tx / complete-tx,
  §9.7.9.25.4.1, §9.7.9.27): per phase of a barrier (one iteration, no wait on it between
  the sites) the bytes the copies deliver -- size times the issuing threads -- equal the
  announced bytes times the announcing threads;
* arrivals (rule ``mbarrier.arrival-overflow``, §9.7.13.15.13 arrive-on, §9.7.13.15.9 init):
  per phase the arrive sites bring (one per warp under ``elect.sync``, one under a
  lane/thread guard, whole warps otherwise; counted over the launch's block) as many
  arrivals as the init count of their barrier, and every barrier waited on can be arrived on.

Verdicts follow DESIGN.md decision 6: proved only for what was checked, violated with a
counterexample (iterations, barrier address, source line), unknown with the reason.
docs/mbarrier.md describes the encoding and what is not modelled.
"""
from __future__ import annotations

import time

import z3

from kverify.semantics.memory_model.protocols import mbarrier as MB

from kverify.symbolic.budget import SolverBudget
from kverify.symbolic import MBARRIER, TRUE, Env, Unsupported, mk_and, sync_of
from kverify.verifier.report import Location, Obligation

from .sites import MbarExecutor

MAX_REUSE = 64
#: obligation -> what its title says it proves (``mbarrier conformance: <that>``)
TITLES = {"parity": "parity (initial phase and alternation)", "tx bytes": "tx bytes (per phase)",
          "arrivals": "arrivals (per phase)"}


def _ob(what, status, msg, t0, locs=(), cex=None, rule=None):
    return Obligation(f"mbarrier conformance: {TITLES[what]}", "mbarrier", status, msg, None, list(locs), cex,
                      time.perf_counter() - t0, rule if status == "violated" else None)


def check_mbarrier(module, kernel=None, launch=None, timeout_s: float = 10.0) -> list:
    """Static mbarrier obligations of ``kernel`` (see the module docstring); ``[]`` when the
    kernel uses no mbarrier. ``timeout_s`` bounds the solver time of the symbolic execution
    and of each obligation."""
    t0 = time.perf_counter()
    if kernel is None or isinstance(kernel, str):
        kernel = module.kernel(kernel)
    from kverify.semantics.ir.visit import instructions

    if not any(sync_of(i) in MBARRIER or "mbarrier::complete_tx::bytes" in i.mods
               for i in instructions(kernel.body)):
        return []
    try:
        return _Checker(module, kernel, launch, timeout_s, t0).run()
    except Unsupported as e:
        why = str(e)
    except z3.Z3Exception as e:
        why = f"solver error: {e}"
    except Exception as e:  # noqa: BLE001 - fail closed
        why = f"internal error in the static mbarrier checker ({type(e).__name__}: {e})"
    return [_ob(w, "unknown", why, t0) for w in TITLES]


class _Checker:
    def __init__(self, module, kernel, launch, timeout_s, t0):
        self.module, self.kernel, self.launch = module, kernel, launch
        self.timeout_s, self.t0 = timeout_s, t0
        self.budget = SolverBudget(timeout_s)  # solver work, not wall-clock time (symbolic/budget.py)
        self.memo = {}

    # ------------------------------------------------------------------ solver
    def solve(self, fs):
        if self.budget.exhausted():
            return "unknown", None
        s = z3.Solver()
        s.add(*fs)
        # only the constraints on symbols the query mentions (transitively): the others are
        # satisfiable on their own
        names = self.syms(*fs)
        base = list(self.env.shared_constraints) + list(self.env.constraints_a)
        keep, changed = [False] * len(base), True
        while changed:
            changed = False
            for j, (c, keys) in enumerate(base):
                if not keep[j] and keys & names:
                    keep[j] = changed = True
                    names |= self.syms(c)
        s.add(*[c for (c, _), kp in zip(base, keep) if kp])
        r = self.budget.check(s)
        if r == z3.sat:
            return "sat", s.model()
        return ("unsat", None) if r == z3.unsat else ("unknown", None)

    def prove(self, hyp, goal):
        """'proved' | ('cex', model) | 'unknown'."""
        r, m = self.solve([hyp, z3.Not(goal)])
        if r == "unsat":
            return "proved", None
        return ("cex", m) if r == "sat" else ("unknown", None)

    def syms(self, *es):
        out = set()
        todo = [e for e in es if e is not None]
        seen = set()
        while todo:
            x = todo.pop()
            if x.get_id() in seen:
                continue
            seen.add(x.get_id())
            if z3.is_const(x) and x.decl().kind() == z3.Z3_OP_UNINTERPRETED:
                out.add(str(x))
            elif z3.is_app(x):
                todo.extend(x.children())
        return out

    def loc(self, ins):
        return Location.of(ins.loc, self.module.path)

    # ------------------------------------------------------------------ main
    def run(self):
        env = self.env = Env(self.module, self.kernel, self.launch)

        def check_a(f):
            r, m = self.solve([f])
            return r, m

        ex = self.ex = MbarExecutor(env, check_a, self.launch)
        ex.run()
        self.sites = ex.sites
        out = []
        for what, fn in (("parity", self.parity), ("tx bytes", self.tx), ("arrivals", self.arrivals)):
            t = time.perf_counter()
            self.budget.restart()  # each obligation has its own solver budget
            ob = fn()
            ob.time_s = time.perf_counter() - t
            out.append(ob)
        out[0].time_s += (time.perf_counter() - self.t0) - sum(o.time_s for o in out)
        return out

    def shift(self, e, k, d):
        return z3.substitute(e, (k, k + d))

    def in_range(self, info, k, kk):
        """iteration kk of the loop exists (as far as the summary says)."""
        lim = z3.ULT(kk, z3.BitVecVal(1 << 31, 64))
        if info.trip is not None:
            return mk_and(lim, kk < info.trip)
        return lim

    # ------------------------------------------------------------------ site relations
    def seq(self, s):
        return self.ex.seq.get(id(s.instr), -1)

    @staticmethod
    def same_iteration(s, t):
        return tuple(str(k) for _, k in s.loops) == tuple(str(k) for _, k in t.loops)

    def ranges(self, loops):
        return mk_and(*[self.in_range(i, k, k) for i, k in loops])

    def renamed(self, s, *terms):
        """``terms`` of site ``s`` with its loop counters renamed (another iteration), and the
        range condition of the renamed counters."""
        subs = [(k, z3.BitVec(f"{k}~other", 64)) for _, k in s.loops]
        rng = mk_and(*[self.in_range(i, k, kk) for (i, k), (_, kk) in zip(s.loops, subs)])
        return [z3.substitute(t, *subs) if subs else t for t in terms], rng

    def may_alias(self, w, s):
        """Site ``s`` may name the barrier of ``w`` in some iteration of each."""
        if s.addr is None:
            return True
        key = ("alias", id(w), id(s))
        if key not in self.memo:
            (a,), rng = self.renamed(s, s.addr)
            self.memo[key] = self.solve([self.ranges(w.loops), rng, w.addr == a])[0] != "unsat"
        return self.memo[key]

    def may_share_thread(self, w, s):
        """Some thread may execute both ``w`` and ``s`` (in any iterations)."""
        key = ("share", id(w), id(s))
        if key not in self.memo:
            (pc,), rng = self.renamed(s, s.pc)
            self.memo[key] = self.solve([self.ranges(w.loops), rng, w.pc, pc])[0] != "unsat"
        return self.memo[key]

    def every_waiter_runs(self, w, s):
        """Every thread executing ``w`` executes ``s`` in the same iteration."""
        r, _ = self.prove(mk_and(self.ranges(w.loops), w.pc), s.pc)
        return r == "proved"

    def role(self, w):
        """(phase offset, why) of the parity wait ``w``: its n-th use (0-based) of a barrier must
        wait for the completion of phase ``n - offset`` -- offset 0 when the phase it waits for is
        completed by its own round (the consumer of a fill), 1 for the producer's pass-through
        (its first wait names the phase before phase 0, which a fresh barrier counts as
        complete); (None, reason) when the role is not recognized."""
        L = self.loc
        signals = [s for s in self.sites if s is not w and s.kind in ("arrive", "expect_tx", "copy")]
        tx = next((s for s in signals if (s.kind == "copy" or s.tx is not None) and self.may_alias(w, s)), None)
        if tx is not None:
            return 0, (f"consumer of the fill: the barrier's phases complete with the bytes of its round's "
                       f"copies / expect-tx ({L(tx.instr)})")
        arrs = [s for s in signals if s.kind == "arrive" and self.may_alias(w, s)]
        if not arrs:
            return None, "no arrive or copy can complete a phase of the barrier it waits on"
        own = [s for s in arrs if self.same_iteration(s, w) and self.seq(s) < self.seq(w)
               and self.solve([self.ranges(w.loops), w.pc, s.pc])[0] != "unsat"]
        if own:
            return 0, (f"the waiting threads take part in the phase: they arrive on the barrier at "
                       f"{L(own[0].instr)} before the wait")
        mixed = [s for s in arrs if self.may_share_thread(w, s)]
        if mixed:
            return None, (f"the waiting threads may also arrive on the barrier at {L(mixed[0].instr)} (neither "
                          "an own arrival before the wait nor another role's)")
        after = [s for s in signals if self.same_iteration(s, w) and self.seq(s) > self.seq(w)
                 and not self.may_alias(w, s) and self.every_waiter_runs(w, s)]
        fill = [s for s in after if s.kind == "copy" or s.tx is not None]
        if fill:
            return 1, (f"producer's pass-through: the waiting thread fills the partner barrier at "
                       f"{L(fill[0].instr)} after the wait, and the phases it waits for are released by "
                       f"another role ({L(arrs[0].instr)})")
        rel = [s for s in after if s.kind == "arrive"]
        if rel:
            first = min(self.seq(s) for s in rel)
            ks = tuple(str(k) for _, k in w.loops)
            writes = [a for a in self.ex.accesses if a.space == "shared" and a.writes
                      and tuple(str(k) for _, k in a.loops) == ks and self.seq(w) < a.seq < first
                      and self.prove(mk_and(self.ranges(w.loops), w.pc), a.pc)[0] == "proved"]
            if writes:
                return 1, (f"producer's pass-through: the waiting threads write shared memory at "
                           f"{L(writes[0].instr)} and then arrive on the partner barrier at {L(rel[0].instr)}, "
                           f"and the phases they wait for are released by another role ({L(arrs[0].instr)})")
            return 0, (f"consumer: the waiting threads write no shared memory before they arrive on the partner "
                       f"barrier at {L(rel[0].instr)}; the phases they wait for come from another role "
                       f"({L(arrs[0].instr)})")
        return 0, (f"consumer: the phases it waits for come from another role ({L(arrs[0].instr)}) and the "
                   "waiting threads release nothing after the wait")

    def earlier_uses(self, w):
        """(number of uses of ``w``'s barrier by its threads before ``w``, None) or (None, reason)."""
        n = 0
        for v in self.sites:
            if v is w or v.kind != "wait" or not self.may_alias(w, v) or not self.may_share_thread(w, v):
                continue
            shared_loop = {str(k) for _, k in v.loops} & {str(k) for _, k in w.loops}
            if self.seq(v) > self.seq(w) and not shared_loop:
                continue  # after every use of w
            if w.loops or v.loops:
                return None, (f"the same threads also wait on that barrier at {self.loc(v.instr)}: uses are "
                              "counted per wait site only")
            same = self.prove(TRUE, v.addr == w.addr)[0] == "proved" if v.addr is not None else False
            if not same or not self.every_waiter_runs(w, v):
                return None, (f"cannot count the earlier wait at {self.loc(v.instr)} as a use of the same barrier "
                              "by the same threads")
            n += 1
        return n, None

    # ------------------------------------------------------------------ parity
    def parity(self):
        """Each wait names the phase its use of the barrier must wait for: the first use the
        phase given by the waiting role (see ``role``), and every later use of the barrier the
        next phase (the parity flips between uses ``d`` iterations apart)."""
        t0 = time.perf_counter()
        waits = [s for s in self.sites if s.kind == "wait"]
        proved, unknown = [], []
        for w in waits:
            if not w.instr.blocking:
                unknown.append((w, "the wait is not a recognized blocking retry loop"))
                continue
            if w.parity is None or w.addr is None:
                unknown.append((w, f"{w.note}: the phase it names is not checked statically" if w.note
                                else "barrier address or parity not understood"))
                continue
            if len(w.loops) > 1:
                unknown.append((w, "the wait is inside nested loops: the phase a barrier is in when an outer "
                                "iteration starts is not tracked"))
                continue
            off, case = self.role(w)
            if off is None:
                unknown.append((w, f"cannot tell which phase its first use waits for: {case}"))
                continue
            uses, why = self.earlier_uses(w)
            if uses is None:
                unknown.append((w, why))
                continue
            res = self.parity_straight(w, off, case, uses) if not w.loops else self.parity_loop(w, off, case)
            if res[0] == "violated":
                return _ob("parity", "violated", res[1], t0, [self.loc(w.instr)], res[2], MB.PARITY.id)
            (proved if res[0] == "proved" else unknown).append((w, res[1]))
        if unknown:
            w, why = unknown[0]
            return _ob("parity", "unknown", f"{self.loc(w.instr)}: {why}", t0, [self.loc(w.instr)])
        if not proved:
            return _ob("parity", "proved", "no parity wait", t0)
        desc = "; ".join(f"{self.loc(w.instr)}: {d}" for w, d in proved)
        return _ob("parity", "proved", "each wait names the phase its use of the barrier waits for (first use and "
                   f"every later one): {desc}", t0, [self.loc(w.instr) for w, _ in proved])

    def parity_straight(self, w, off, case, uses):
        want = (uses + off) & 1
        p = w.parity
        r, m = self.prove(w.pc, (p & 1) == want)
        if r == "proved":
            return "proved", f"use {uses} waits on parity {want} ({case})"
        if r == "unknown":
            return "unknown", f"solver gave no answer within its budget ({self.budget.seconds:g} solver seconds)"
        if self.syms(w.pc, p) & self.env.approx:
            return "unknown", "the parity may differ from the phase it must name, but only for approximated values"
        addr = m.eval(w.addr, model_completion=True).as_long()
        cex = {"rule": MB.PARITY.id, "use": uses, "parity": 1 - want, "expected_parity": want,
               "barrier_address": addr, "location": str(self.loc(w.instr)), "role": case}
        return "violated", (f"mbarrier.try_wait.parity at {self.loc(w.instr)} is use {uses} of the barrier at shared "
                            f"address {addr:#x} and names parity {1 - want}, but it must wait on parity {want} "
                            f"({case})" + self.consequence(1 - want, off, uses)), cex

    @staticmethod
    def consequence(p, off, use):
        if off == 0 and use == 0 and p == 1:
            return ": on a fresh barrier (phase 0 in progress) parity 1 returns at once, before the phase completes"
        if off == 0:
            return ": the wait returns before the phase it must wait for completes"
        return ": the wait waits for a phase one ahead of the one released for it (a hang)"

    def parity_loop(self, w, off, case):
        info, k = w.loops[-1]
        variant = self.ex.loop_syms.get(id(info), set())
        used = self.syms(w.addr, w.parity)
        if used & variant:
            return "unknown", ("the barrier address or parity depends on a value the loop summary does not track ("
                               + ", ".join(sorted(used & variant))[:120] + ")")
        j = z3.BitVec(f"{k}~earlier", 64)
        earlier = mk_and(self.in_range(info, k, k), z3.ULT(j, k), w.pc)  # ran in every iteration before
        if self.syms(w.pc) & variant or (str(k) in self.syms(w.pc)
                                         and self.prove(earlier, z3.substitute(w.pc, (k, j)))[0] != "proved"):
            return "unknown", (f"the wait may skip an iteration of loop {info.name} before one it runs in: its "
                               "uses of a barrier are not counted by the iteration")
        a, p = w.addr, w.parity
        d_found = None
        for d in range(1, MAX_REUSE + 1):
            hyp = mk_and(self.in_range(info, k, k), self.in_range(info, k, k + d), w.pc)
            r, _ = self.prove(hyp, self.shift(a, k, d) == a)
            if r == "proved":
                d_found = d
                break
        if d_found is None:
            return "unknown", f"no reuse distance of the barrier address within {MAX_REUSE} iterations was proved"
        d = d_found
        for d2 in range(1, d):
            hyp = mk_and(self.in_range(info, k, k), self.in_range(info, k, k + d2))
            r, _ = self.prove(hyp, self.shift(a, k, d2) != a)
            if r != "proved":
                return "unknown", f"the barrier address repeats every {d} iterations but not only then"
        # the first use of each barrier: iterations 0 .. d-1
        hyp = mk_and(self.in_range(info, k, k), z3.ULT(k, z3.BitVecVal(d, 64)), w.pc)
        r, m = self.prove(hyp, (p & 1) == off)
        if r == "unknown":
            return "unknown", f"solver gave no answer within its budget ({self.budget.seconds:g} solver seconds)"
        if r == "cex":
            k0 = m.eval(k, model_completion=True).as_long()
            approx = (self.syms(hyp, p) & self.env.approx) - {str(k)}
            if approx or not (info.exact or self.reached(info, k, w, 0, k0)):
                why = ("values the encoding approximates" if approx else
                       f"iteration {k0} of loop {info.name} is not known to be reached")
                return "unknown", (f"the first use (iteration {k0}) may name parity {1 - off}, but the "
                                   f"counterexample involves {why}")
            addr = m.eval(a, model_completion=True).as_long()
            cex = {"rule": MB.PARITY.id, "loop": info.name, "reuse_distance": d, "iterations": [k0],
                   "use": 0, "barrier_address": addr, "parity": [1 - off], "expected_parity": off,
                   "location": str(self.loc(w.instr)), "role": case}
            return "violated", (f"mbarrier.try_wait.parity at {self.loc(w.instr)} in iteration {k0} of loop "
                                f"{info.name} is the first use of the barrier at shared address {addr:#x} (reuse "
                                f"distance {d}) and names parity {1 - off}, but it must wait on parity {off} "
                                f"({case})" + self.consequence(1 - off, off, 0)), cex
        hyp = mk_and(self.in_range(info, k, k), self.in_range(info, k, k + d), w.pc, self.shift(w.pc, k, d))
        goal = (self.shift(p, k, d) & 1) != (p & 1)
        r, m = self.prove(hyp, goal)
        if r == "proved":
            return "proved", (f"first use parity {off} ({case}), flipping every {d} iterations of loop "
                              f"{info.name}")
        if r == "unknown":
            return "unknown", f"solver gave no answer within its budget ({self.budget.seconds:g} solver seconds)"
        k0 = m.eval(k, model_completion=True).as_long()
        approx = (self.syms(hyp, goal) & self.env.approx) - {str(k)}
        reached = info.exact or self.reached(info, k, w, k0, d)
        cex = {"rule": MB.PARITY.id, "loop": info.name, "reuse_distance": d,
               "iterations": [k0, k0 + d],
               "barrier_address": m.eval(a, model_completion=True).as_long(),
               "parity": [m.eval(p & 1, model_completion=True).as_long(),
                          m.eval(self.shift(p, k, d) & 1, model_completion=True).as_long()],
               "location": str(self.loc(w.instr)), "role": case}
        if approx or not reached:
            why = ("values the encoding approximates" if approx else
                   f"iteration {k0 + d} of loop {info.name} is not known to be reached")
            return "unknown", (f"parity may not flip (iterations {k0} and {k0 + d}), but the counterexample "
                               f"involves {why}")
        return "violated", (f"mbarrier.try_wait.parity at {self.loc(w.instr)} waits on the barrier at shared address "
                            f"{cex['barrier_address']:#x} in iterations {k0} and {k0 + d} of loop {info.name} (reuse "
                            f"distance {d}) with the same parity {cex['parity'][0]}: the second wait names an "
                            "already completed phase (or two phases ahead)"), cex

    def reached(self, info, k, w, k0, d):
        """Iterations k0..k0+d of ``info`` run whenever iteration k0's site runs."""
        if info.cont_pc is None:
            return False
        variant = self.ex.loop_syms.get(id(info), set())
        if self.syms(info.cont_pc) & variant:
            return False
        k0v = z3.BitVecVal(k0, 64)
        goal = mk_and(*[z3.substitute(info.cont_pc, (k, z3.BitVecVal(k0 + j, 64))) for j in range(d)])
        r, _ = self.prove(z3.substitute(w.pc, (k, k0v)), goal)
        if r != "proved":
            return False
        r, _ = self.solve([z3.substitute(w.pc, (k, k0v))])
        return r == "sat"

    # ------------------------------------------------------------------ thread counting
    def count_threads(self, pc):
        """(number of threads of a CTA executing an instance, residue condition) or
        (None, reason)."""
        env = self.env
        if env.block is None:
            return None, "block size unknown"
        bx, by, bz = env.block
        n = bx * by * bz
        if n > 1024:
            return None, "block too large"
        elects = []
        todo, seen = [pc], set()
        while todo:
            x = todo.pop()
            if x.get_id() in seen:
                continue
            seen.add(x.get_id())
            if z3.is_app(x) and x.num_args() > 0 and x.decl().kind() == z3.Z3_OP_UNINTERPRETED \
                    and x.decl().name().startswith("elect"):
                elects.append(x)
                continue
            if z3.is_app(x):
                todo.extend(x.children())
        tid = env.tid
        residue, per = None, []
        for t in range(n):
            x, y, zz = t % bx, (t // bx) % by, t // (bx * by)
            lane = t & 31
            subs = [(tid[0], z3.BitVecVal(x, 32)), (tid[1], z3.BitVecVal(y, 32)), (tid[2], z3.BitVecVal(zz, 32))]
            lead = [(e, z3.BitVecVal(lane, 32)) for e in elects]
            v = z3.simplify(z3.substitute(pc, *(subs + lead)))
            if elects:
                nl = [(e, z3.BitVecVal((lane + 1) & 31, 32)) for e in elects]
                v2 = z3.simplify(z3.substitute(pc, *(subs + nl)))
                if not z3.is_false(v2):
                    return None, "an elect.sync guard combined with a lane-dependent condition"
            if z3.is_false(v):
                per.append(False)
                continue
            if residue is None:
                residue = v
            elif not residue.eq(v):
                return None, "the threads executing it are not determined by the thread index alone"
            per.append(True)
        if elects:
            cnt = 0
            for w0 in range(0, n, 32):
                lanes = per[w0:w0 + 32]
                if all(lanes):
                    cnt += 1
                elif any(lanes):
                    return None, "an elect.sync guard on part of a warp"
            return cnt, residue
        return sum(per), residue

    def matches(self, a, b, hyp):
        """'same' / 'different' / None for two barrier addresses (terms of one iteration)."""
        r, _ = self.prove(hyp, a == b)
        if r == "proved":
            return "same"
        r, _ = self.prove(hyp, a != b)
        return "different" if r == "proved" else None

    # ------------------------------------------------------------------ phases
    def separated(self, s, t, hyp):
        """True when a wait on the barrier of ``s`` lies between ``s`` and ``t`` (same iteration,
        same barrier) in the program order of the threads executing the later one -- the two
        then belong to different phases; None when that cannot be decided."""
        first, last = sorted((s, t), key=self.seq)
        for v in self.sites:
            if v.kind != "wait" or not self.same_iteration(v, s) or not self.seq(first) < self.seq(v) < self.seq(last):
                continue
            m = self.matches(v.addr, s.addr, hyp) if v.addr is not None else None
            if m == "different":
                continue
            if m is None:
                return None
            r, _ = self.prove(mk_and(hyp, last.pc), v.pc)
            if r == "proved":
                return True
            if self.solve([hyp, last.pc, v.pc])[0] != "unsat":
                return None
        return False

    def phase_mates(self, e, cands, hyp):
        """The sites of ``cands`` that signal the same barrier as ``e`` in the same phase (same
        iteration, no wait on it between them), or (None, site) for one that cannot be decided."""
        mine = []
        for c in cands:
            if not self.same_iteration(c, e):
                continue
            if c.addr is None:
                return None, c
            m = self.matches(c.addr, e.addr, hyp)
            if m is None:
                return None, c
            if m == "different":
                continue
            sep = self.separated(e, c, hyp) if c is not e else False
            if sep is None:
                return None, c
            if not sep:
                mine.append(c)
        return mine, None

    # ------------------------------------------------------------------ tx bytes
    def tx(self):
        """Per phase: the expect-tx bytes posted on a barrier equal the bytes its copies of the
        same phase deliver (same iteration, no wait on the barrier between them)."""
        t0 = time.perf_counter()
        L = self.loc
        exps = [s for s in self.sites if s.tx is not None and s.kind in ("arrive", "expect_tx")]
        copies = [s for s in self.sites if s.kind == "copy"]
        if not exps and not copies:
            return _ob("tx bytes", "proved", "no expect-tx and no copy signalling an mbarrier", t0)
        used, done = set(), set()
        proved = []
        for e in exps:
            if id(e) in done:
                continue
            if e.addr is None:
                return _ob("tx bytes", "unknown", f"{L(e.instr)}: barrier address not understood", t0, [L(e.instr)])
            hyp = self.ranges(e.loops)
            group, bad = self.phase_mates(e, exps, hyp)
            mine, bad2 = self.phase_mates(e, copies, hyp) if group is not None else (None, bad)
            if group is None or mine is None:
                c = bad or bad2
                return _ob("tx bytes", "unknown", f"cannot decide whether {L(c.instr)} signals the barrier of "
                           f"{L(e.instr)} in the same phase", t0, [L(c.instr), L(e.instr)])
            done.update(id(x) for x in group)
            want, re_ = z3.BitVecVal(0, 32), None
            for x in group:
                ne, rx = self.count_threads(x.pc)
                if ne is None:
                    return _ob("tx bytes", "unknown", f"{L(x.instr)}: cannot count the threads posting "
                               f"expect-tx ({rx})", t0, [L(x.instr)])
                if ne and re_ is not None and self.prove(hyp, rx == re_)[0] != "proved":
                    return _ob("tx bytes", "unknown", f"{L(x.instr)} and {L(e.instr)} may run in different "
                               "iterations or paths", t0, [L(x.instr), L(e.instr)])
                re_ = rx if ne and re_ is None else re_
                want = want + x.tx * ne
            total = z3.BitVecVal(0, 32)
            for c in mine:
                used.add(id(c))
                if c.size is None:
                    return _ob("tx bytes", "unknown", f"{L(c.instr)}: copy size unknown "
                               f"({c.size_reason or 'size operand not understood'})", t0, [L(c.instr)])
                nc, rc = self.count_threads(c.pc)
                if nc is None:
                    return _ob("tx bytes", "unknown", f"{L(c.instr)}: cannot count the issuing threads "
                               f"({rc})", t0, [L(c.instr)])
                if nc and re_ is not None:
                    r, _ = self.prove(hyp, rc == re_)
                    if r != "proved":
                        return _ob("tx bytes", "unknown", f"{L(c.instr)} and {L(e.instr)} may run "
                                   "in different iterations or paths", t0, [L(c.instr), L(e.instr)])
                total = total + c.size * nc
            hyp2 = mk_and(hyp, re_ if re_ is not None else z3.BoolVal(True))
            r, m = self.prove(hyp2, want == total)
            if r == "proved":
                proved.append(group)
                continue
            if r == "unknown":
                return _ob("tx bytes", "unknown", f"{L(e.instr)}: solver gave no answer", t0, [L(e.instr)])
            approx = self.syms(want, total, hyp2) & self.env.approx
            exp_v = m.eval(want, model_completion=True).as_long()
            got_v = m.eval(total, model_completion=True).as_long()
            if approx:
                return _ob("tx bytes", "unknown", f"{L(e.instr)}: expected bytes may differ from the copied "
                           "bytes, but only for approximated values", t0, [L(e.instr)])
            its = {info.name: m.eval(k, model_completion=True).as_long() for info, k in e.loops}
            cex = {"rule": MB.TX_MISMATCH.id, "expected_bytes": exp_v, "copied_bytes": got_v,
                   "iterations": its, "barrier_address": m.eval(e.addr, model_completion=True).as_long(),
                   "copies": [str(L(c.instr)) for c in mine], "location": str(L(e.instr))}
            msg = (f"{', '.join(str(L(x.instr)) for x in group)} announce{'s' if len(group) == 1 else ''} {exp_v} "
                   f"tx bytes on the barrier at shared address {cex['barrier_address']:#x} but the copies "
                   f"signalling it in the same phase deliver {got_v} ({', '.join(cex['copies']) or 'none'})"
                   + (f"; iterations {its}" if its else ""))
            return _ob("tx bytes", "violated", msg, t0, [L(x.instr) for x in group] + [L(c.instr) for c in mine],
                       cex, MB.TX_MISMATCH.id)
        left = [c for c in copies if id(c) not in used]
        if left:
            c = left[0]
            return _ob("tx bytes", "unknown", f"{L(c.instr)}: no expect-tx on its barrier in the same phase "
                       "(expect-tx in another iteration or role is not modelled)", t0, [L(c.instr)])
        return _ob("tx bytes", "proved", "in each phase the expected tx bytes equal the bytes of that phase's copies, "
                   "for all iterations: " + "; ".join(" + ".join(str(L(x.instr)) for x in g) for g in proved), t0,
                   [L(x.instr) for g in proved for x in g])

    # ------------------------------------------------------------------ arrivals
    def arrivals(self):
        t0 = time.perf_counter()
        inits = [s for s in self.sites if s.kind == "init"]
        arrs = [s for s in self.sites if s.kind == "arrive"]
        others = [s for s in self.sites if s.kind == "other"]
        if others:
            s = others[0]
            return _ob("arrivals", "unknown", f"{self.loc(s.instr)}: {s.instr.opcode} is not modelled", t0,
                       [self.loc(s.instr)])
        if not arrs:
            return _ob("arrivals", "proved", "no arrive instruction", t0)
        if any(a.drop for a in arrs):
            a = next(a for a in arrs if a.drop)
            return _ob("arrivals", "unknown", f"{self.loc(a.instr)}: arrive_drop changes the expected count of later "
                       "phases (not modelled statically)", t0, [self.loc(a.instr)])
        for i in inits:
            if i.addr is None or i.count is None or i.loops:
                return _ob("arrivals", "unknown", f"{self.loc(i.instr)}: init address/count not understood or "
                           "init inside a loop", t0, [self.loc(i.instr)])
        done, grouped = [], set()
        counted = {}
        for a in arrs:
            if a.note:
                return _ob("arrivals", "unknown", f"{self.loc(a.instr)}: {a.note} (other CTAs' arrivals are "
                           "not counted)", t0, [self.loc(a.instr)])
            if a.addr is None:
                return _ob("arrivals", "unknown", f"{self.loc(a.instr)}: barrier address not understood", t0,
                           [self.loc(a.instr)])
            n, res = self.count_threads(a.pc)
            if n is None:
                return _ob("arrivals", "unknown", f"{self.loc(a.instr)}: cannot count the arriving threads ({res})",
                           t0, [self.loc(a.instr)])
            if n == 0:
                continue
            counted[id(a)] = n
        for a in arrs:
            if id(a) not in counted or id(a) in grouped:
                continue
            n = counted[id(a)]
            _, res = self.count_threads(a.pc)
            hyp = mk_and(*[self.in_range(i, k, k) for i, k in a.loops], res)
            mates, b = self.phase_mates(a, [b for b in arrs if b is not a and id(b) in counted], self.ranges(a.loops))
            if mates is None:
                return _ob("arrivals", "unknown", f"cannot decide whether {self.loc(b.instr)} and "
                           f"{self.loc(a.instr)} arrive on the same barrier in the same phase", t0,
                           [self.loc(a.instr), self.loc(b.instr)])
            if mates:
                group = [a] + mates
                grouped.update(id(x) for x in group)
                got = sum((x.count * counted[id(x)] for x in group[1:]), a.count * n)
                init_count = self.init_count(a, inits)
                if init_count is None:
                    return _ob("arrivals", "unknown", f"{self.loc(a.instr)}: no mbarrier.init found for its barrier",
                               t0, [self.loc(a.instr)])
                r, _ = self.prove(self.ranges(a.loops), got == init_count)
                where = ", ".join(str(self.loc(x.instr)) for x in group)
                if r != "proved":
                    return _ob("arrivals", "unknown", f"arrive sites {where} all arrive on one barrier in the same "
                               "phase (same iteration, no wait on it between them) and their arrivals together are "
                               "not proved to be its init count: more than one phase per wait is not modelled", t0,
                               [self.loc(x.instr) for x in group])
                done.append((a, f"{'+'.join(str(counted[id(x)]) for x in group)} (sites {where})"))
                continue
            cands = []
            for i in inits:
                r, _ = self.solve([hyp, a.addr == i.addr])
                if r != "unsat":
                    cands.append(i)
            if not cands:
                return _ob("arrivals", "unknown", f"{self.loc(a.instr)}: no mbarrier.init found for its barrier", t0,
                           [self.loc(a.instr)])
            init_count = self.init_count(a, cands)
            got = a.count * n
            r, m = self.prove(hyp, got == init_count)
            if r == "proved":
                done.append((a, n))
                continue
            if r == "unknown":
                return _ob("arrivals", "unknown", f"{self.loc(a.instr)}: solver gave no answer", t0,
                           [self.loc(a.instr)])
            if self.syms(got, init_count, hyp) & self.env.approx:
                return _ob("arrivals", "unknown", f"{self.loc(a.instr)}: arrivals may differ from the init count "
                           "only for approximated values", t0, [self.loc(a.instr)])
            want = m.eval(init_count, model_completion=True).as_long()
            gotv = m.eval(got, model_completion=True).as_long()
            addr = m.eval(a.addr, model_completion=True).as_long()
            init_site = next((i for i in cands if m.eval(a.addr == i.addr, model_completion=True)), cands[-1])
            its = {info.name: m.eval(k, model_completion=True).as_long() for info, k in a.loops}
            rule = MB.ARRIVAL_OVERFLOW.id if gotv > want else "deadlock"
            cex = {"rule": rule, "arrivals": gotv, "init_count": want, "barrier_address": addr,
                   "iterations": its, "location": str(self.loc(a.instr)), "init": str(self.loc(init_site.instr))}
            msg = (f"{gotv} threads execute {self.loc(a.instr)} per instance, arriving on the barrier at shared "
                   f"address {addr:#x} initialized with count {want} at {self.loc(init_site.instr)}: "
                   + ("the surplus arrivals count toward the next phase" if gotv > want else
                      "the phase cannot complete from these arrivals"))
            locs = [self.loc(init_site.instr), self.loc(a.instr)]
            return _ob("arrivals", "violated", msg, t0, locs, cex, rule)
        for w in (s for s in self.sites if s.kind == "wait" and s.addr is not None):
            if not any(self.may_alias(w, x) for x in self.sites if x.kind in ("arrive", "copy", "other")):
                return _ob("arrivals", "unknown", f"{self.loc(w.instr)} waits on a barrier no arrive instruction or "
                           "copy of the kernel can complete a phase of (its waits pass only a fresh barrier's "
                           "phase before phase 0)", t0, [self.loc(w.instr)])
        return _ob("arrivals", "proved", "in each phase the arrivals on a barrier equal its init count (the arrive "
                   "sites of one iteration with no wait on the barrier between them form one phase): "
                   + ", ".join(f"{self.loc(a.instr)} x{n}" for a, n in done),
                   t0, [self.loc(a.instr) for a, _ in done])

    def init_count(self, a, inits):
        """The init count of the barrier ``a.addr`` names, among the barriers of ``inits``
        (the last candidate when no other matches); None without one."""
        hyp = self.ranges(a.loops)
        cands = [i for i in inits if self.solve([hyp, a.addr == i.addr])[0] != "unsat"]
        if not cands:
            return None
        count = cands[-1].count
        for i in reversed(cands[:-1]):
            count = z3.If(a.addr == i.addr, i.count, count)
        return count
