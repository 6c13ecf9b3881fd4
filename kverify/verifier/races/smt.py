"""SMT race freedom with the two-thread reduction, for kernels ordered by ``bar.sync 0`` and
full-mask ``bar.warp.sync`` (``__syncwarp()``).

Owns: the race obligations "race-free: shared" and "race-free: global". Following
GPUVerify and Faial, two arbitrary *distinct* symbolic threads A and B run the same
symbolically executed body (:mod:`kverify.symbolic`; B's terms are A's with the
thread's symbols renamed). For every pair of accesses (a by A, b by B) of which at least
one writes, we ask z3 whether

    pc_a(A) and pc_b(B)                      both accesses execute
    and bytes[a] overlap bytes[b]            same memory (same buffer for global)
    and same barrier interval                epoch_a(A) == epoch_b(B) (same CTA; the CTA-barrier
                                             count for two warps, also the warp-barrier count
                                             for two lanes of one warp)
    and A != B                               shared: same CTA, different tid;
                                             global: any two threads of the grid, where
                                             threads of different CTAs are never ordered
    and not both morally strong              two atomics (or scoped strong ld/st) do not race

is satisfiable, with kernel parameters symbolic (or the launch's values), loop iteration
counters symbolic (iteration k of A against iteration k' of B) and the epoch being the
number of ``bar.sync 0`` executed before the access (``e0 + c*k + position`` inside a loop
with ``c`` barriers per iteration). A satisfiable query is a violation only when it holds
for *every* value of the approximated symbols (floating-point results, values loaded from
memory the kernel writes, havocked loop registers): otherwise the obligation is
``unknown``. Unsupported instructions, inexpressible addresses and loops that cannot be
summarized also give ``unknown`` -- never ``proved``.

Barrier intervals are only meaningful when every thread of the CTA executes the same
sequence of barriers. Each barrier (and each decision of a loop containing one) is
checked to be uniform with the same two-thread query (A executes it, B -- same CTA, same
iterations, not exited -- does not). When one may diverge, a race found with the barrier
count (the hardware's matching of arrivals) is still a violation; otherwise the search is
re-run with no barrier ordering at all, and a race found only then gives ``unknown`` (the
divergent barrier is undefined behaviour for ``bar.sync``, reported by
``barrier.divergence``) -- a divergent barrier is never taken as ordering for a proof.

Every proof states its scope in the obligation's ``bound`` (``_Checker.scope``): the block
and grid (the launch's, or every grid when none was given), the argument values it holds
for or "all values of" the free ones, and every schedule.

PTX ISA (9.0): §9.7.13.1 bar/barrier (barrier 0 is ``__syncthreads``; it orders memory
among the participating threads), §9.7.13.2 bar.warp.sync (among the lanes of the mask),
§8 memory consistency model (a data race is two conflicting accesses, not both morally
strong, unordered by happens-before), atom and red in §9.7.13. docs/races.md describes
the encoding and what it does not model.
"""
from __future__ import annotations

import time

import z3

from kverify.semantics.memory_model.execution import (RACE_GLOBAL, RACE_GLOBAL_SAME_VALUE, RACE_SHARED,
                                                     RACE_SHARED_SAME_VALUE)

from kverify.semantics.ir.optable import non_coherent
from kverify.verifier.report import Location, Obligation

from . import atomics

from kverify.symbolic.budget import SolverBudget
from kverify.symbolic import (TRUE, Env, Executor, Substitution, Symbols, Unsupported, is_atomic, is_false, is_true,
                              mk_and, mk_not, mk_or, outside_classic_model)

SPACES = ("shared", "global")
REACH_UNROLL = 64  # iterations unrolled to show that a counterexample's iteration is reached
REACH_SMALL = 8  # bound on iteration counters when looking for such a counterexample


def check_races(module, kernel=None, launch=None, timeout_s: float = 10.0, keep: list | None = None) -> list:
    """Race obligations for ``kernel`` (a ``Kernel``, a name, or ``None`` for the module's
    only kernel) of ``module``: one ``Obligation`` per memory space ("race-free: shared",
    "race-free: global"), each proved / violated (with a counterexample) / unknown (with
    the reason). ``launch`` is a ``LaunchSpec`` or ``None`` (block size from
    ``.reqntid``/``.maxntid``, grid and parameters symbolic). ``keep`` (a list) receives the
    checker, for CTA symmetry (``symmetry.representatives``) to reuse its execution."""
    t0 = time.perf_counter()
    if kernel is None or isinstance(kernel, str):
        kernel = module.kernel(kernel)
    try:
        c = _Checker(module, kernel, launch, timeout_s, t0)
        if keep is not None:
            keep.append(c)
        return c.run()
    except Unsupported as e:
        return [_unknown(sp, str(e), t0) for sp in SPACES]
    except z3.Z3Exception as e:
        return [_unknown(sp, f"solver error: {e}", t0) for sp in SPACES]
    except Exception as e:  # noqa: BLE001 - fail closed: never a verdict from a crash
        why = f"internal error in the race checker ({type(e).__name__}: {e})"
        return [_unknown(sp, why, t0) for sp in SPACES]


def executed_checker(module, kernel, spec, timeout_s: float, t0: float, prior=None):
    """``(checker, None)``: the race checker whose symbolic run another checker reads --
    ``prior`` when its executor ran to the end, else a run of its own -- or ``(None, (reason,
    locations))`` when the kernel is outside the classic model (nothing executed)."""
    if prior is not None and getattr(prior, "executed", False):
        return prior, None
    c = _Checker(module, kernel, spec, timeout_s, t0)
    early = c.execute()
    return (None, early) if early is not None else (c, None)


def _unknown(space, reason, t0, locations=()):
    return Obligation(f"race-free: {space}", "races", "unknown", reason,
                      locations=list(locations), time_s=time.perf_counter() - t0)


class _Checker:
    executor_class = Executor  # the symbolic engine thread A runs on (``verifier.uniform`` runs a stricter one)

    def __init__(self, module, kernel, launch, timeout_s, t0):
        self.module = module
        self.kernel = kernel
        self.launch = launch
        self.timeout_s = timeout_s
        self.t0 = t0
        self.queries = 0
        self.executed = False
        self._symbols = Symbols()

    # ------------------------------------------------------------------ solver
    def solve(self, constraints, budget, want_model=True, base=()):
        """Check ``constraints`` together with those of ``base`` that share a symbol with
        them (transitively): the rest are satisfiable on their own (ranges, loop-exit
        axioms of other loops) and only cost bit-blasting."""
        if budget.exhausted():
            return "unknown", None
        self.queries += 1
        r, m = budget.solve(*constraints, *(self.relevant(base, constraints) if base else ()))
        if r == z3.sat:
            return "sat", (m if want_model else None)
        if r == z3.unsat:
            return "unsat", None
        return "unknown", None

    # ------------------------------------------------------------------ main
    def execute(self):
        """Run the symbolic executor (thread A) and set up thread B's terms: the shared work of
        every query. Returns None, or ``(reason, locations)`` when the kernel is outside the
        classic model (nothing executed)."""
        kernel = self.kernel
        early = self.outside_scope()
        if early is not None:
            return early
        env = self.env = Env(self.module, kernel, self.launch)
        budget = self.setup_budget = SolverBudget(self.timeout_s * 2, label="race.setup")

        def check_a(f):
            return self.solve([f], budget, base=env.shared_constraints + env.constraints_a)

        ex = self.ex = self.make_executor(env, check_a)
        ex.run()
        self.sub = Substitution(env.pairs)
        self._b_memo = {}
        self.base_b = [(self.b(c), frozenset(_b_name(x) for x in keys)) for c, keys in env.constraints_a]
        self.loop_of_k, self.k_const = {}, {}
        for info in ex.loops:
            if info.cont_pc is not None:
                for k, who in ((info.k, "A"), (self.b(info.k), "B")):
                    self.loop_of_k[str(k)] = (info, who)
                    self.k_const[str(k)] = k
        self.cta_ne = mk_or(*[self.b(c) != c for c in env.ctaid])
        # different clusters, as the interpreter lays them out (cluster id = ctaid div cluster
        # shape); with no launch's cluster shape, any two CTAs may be in different clusters
        shape = getattr(env.launch, "cluster", None) if env.launch is not None else None
        self.cluster_ne = self.cta_ne if not shape else mk_or(*[
            z3.UDiv(self.b(c), z3.BitVecVal(n, c.size())) != z3.UDiv(c, z3.BitVecVal(n, c.size()))
            for c, n in zip(env.ctaid, shape)])
        self.tid_ne = mk_or(*[self.b(t) != t for t in env.tid])
        warp = z3.LShR(env.linear_tid(), 5)
        self.same_warp = self.b(warp) == warp  # with the same CTA: one warp
        # what atom.add results can be (ticket counters for proofs, the atomic order for violations)
        self.atomic_sites = atomics.prepare(self)
        self.ticket_base = atomics.ticket_constraints(self, self.atomic_sites)
        self.witnessed = {}  # (id(a), id(bb)) -> the atomic order a race's counterexample rests on
        self.executed = True  # the executor ran to the end (other checkers may reuse it)
        return None

    def outside_scope(self):
        """``(reason, locations)`` when the kernel is outside the classic model (an asynchronous
        copy, an mbarrier or wgmma), else None."""
        from kverify.semantics.ir.visit import reachable_instructions

        i = next((i for i in reachable_instructions(self.module, self.kernel) if outside_classic_model(i)), None)
        if i is None:
            return None
        why = (f"the kernel uses {i.opcode} ({_where(i, self.module)}): asynchronous copies, "
               "mbarriers and wgmma are outside the classic barrier-interval race check")
        return why, [Location.of(i.loc, self.module.path)]

    def make_executor(self, env, check_a):
        return self.executor_class(env, check_a)

    def preconditions_vacuous(self, budget) -> str | None:
        """The reason a race proof would be vacuous: the kernel's preconditions (GPUVerify
        ``__requires`` / ``__assume``) admit no thread, or no two distinct threads, of the
        launch; None when they do (or there are none)."""
        if not self.ex.preconditions:
            return None
        env = self.env
        sites = ", ".join(f"{p.what} at {_where(p.instr, self.module)}" for p in self.ex.preconditions[:3])
        one = [c for c, _ in env.shared_constraints + env.constraints_a]
        r, _ = self.solve(one, budget, want_model=False)
        if r == "unsat":
            return f"no thread of the launch meets the kernel's preconditions ({sites}): a proof would be vacuous"
        r, _ = self.solve(self.distinct_threads("global") + one + [c for c, _ in self.base_b], budget,
                          want_model=False)
        if r != "unsat":
            return None
        return (f"the kernel's preconditions ({sites}) admit no two distinct threads of the launch: "
                "a race proof would be vacuous")

    def run(self):
        early = self.execute()
        if early is not None:
            return [_unknown(sp, early[0], self.t0, early[1]) for sp in SPACES]
        budget = self.setup_budget
        vacuous = self.preconditions_vacuous(budget)
        if vacuous:
            return [_unknown(sp, vacuous, self.t0, [Location.of(p.instr.loc, self.module.path)
                                                   for p in self.ex.preconditions[:2]]) for sp in SPACES]
        # barrier uniformity
        divergent = self.divergent_sites(budget)
        out = []
        for space in SPACES:
            t = time.perf_counter()
            ob = self.check_space(space, divergent, SolverBudget(self.timeout_s, label=f"race.{space}"))
            ob.time_s = time.perf_counter() - t
            out.append(ob)
        if self.ex.extern_used:  # every verdict rests on the summaries (a proof without accesses too): say so
            said = "; ".join(self.extern_assumptions())
            for o in out:
                if o.bound is None:
                    o.bound = self.scope()
                if o.status == "violated":
                    o.message += f"; {said}"
        # the shared work (execution, uniformity) is charged to the first obligation
        out[0].time_s += (time.perf_counter() - self.t0) - sum(o.time_s for o in out)
        return out

    def symbols(self, e):
        """Names of the uninterpreted constants (and functions) in ``e``, memoized."""
        return self._symbols(e)

    def relevant(self, base, formulas):
        """The constraints of ``base`` (``(term, keys)`` pairs) whose keys the formulas
        mention, transitively. A constraint whose keys are not mentioned is satisfiable
        on its own: a range of a symbol the query does not use, or the loop-exit axiom of
        a loop the query's accesses do not come after (that axiom also presumes the loop
        terminates, which must not be assumed for accesses before or inside it)."""
        syms = set()
        for f in formulas:
            syms |= self.symbols(f)
        pool = list(base)
        out, changed = [], True
        while changed:
            changed = False
            rest = []
            for c, keys in pool:
                if keys & syms:
                    out.append(c)
                    cs = self.symbols(c)
                    if not cs <= syms:
                        syms |= cs
                        changed = True
                else:
                    rest.append((c, keys))
            pool = rest
        return out

    def b(self, e):
        """Thread B's version of a thread-A term."""
        key = e.get_id()
        r = self._b_memo.get(key)
        if r is None:
            r = self._b_memo[key] = (self.sub(e), e)
        return r[0]

    def same_cta(self):
        env = self.env
        return [self.b(c) == c for c in env.ctaid]

    def distinct_threads(self, space):
        if space == "shared":
            return self.same_cta() + [self.tid_ne]
        return [mk_or(self.tid_ne, self.cta_ne)]

    def base(self):
        env = self.env
        return env.shared_constraints + env.constraints_a + self.base_b + getattr(self, "ticket_base", [])

    # ------------------------------------------------------------------ uniformity
    def divergent_sites(self, budget):
        out = []
        for s in self.ex.syncs:
            if s.kind == "barrier" and is_true(s.pc):
                continue
            if is_false(s.pc):
                continue
            keq = [self.b(k) == k for _, k in s.loops]
            f = [s.pc, self.b(s.head_pc), mk_not(self.b(s.pc)), mk_not(self.b(s.exited))]
            group = [self.same_warp] if s.scope == "warp" else []  # a warp barrier: its lanes agree
            r, _ = self.solve(self.same_cta() + group + [self.tid_ne] + keq + f, budget,
                              want_model=False, base=self.base())
            if r != "unsat":
                out.append(s)
        return out

    # ------------------------------------------------------------------ pairs
    def check_space(self, space, divergent, budget):
        ex, env = self.ex, self.env
        accs = [a for a in ex.accesses if a.space == space and not is_false(a.pc)]
        accs.sort(key=lambda a: a.seq)
        reasons = list(ex.reasons[space])
        oid = f"race-free: {space}"
        if not accs:
            if reasons:
                return Obligation(oid, "races", "unknown", "; ".join(reasons))
            return Obligation(oid, "races", "proved", f"no {space} memory accesses")
        writes = [a for a in accs if a.writes]
        if not writes:
            msg = f"no {space} memory writes ({len(accs)} reads)"
            if reasons:
                return Obligation(oid, "races", "unknown", "; ".join(reasons) + f" ({msg})")
            return Obligation(oid, "races", "proved", msg)
        # ld.global.nc (the non-coherent path) of a buffer the kernel writes: stale for any order,
        # which barrier intervals do not see (race.global.non-coherent, decided by the run)
        written = {a.region for a in writes}
        nc = next((a for a in accs if not a.writes and non_coherent(a.instr)
                   and (a.region is None or None in written or a.region in written)), None)
        if nc is not None:
            reasons.append(f"ld.global.nc at {_where(nc.instr, self.module)} reads "
                           f"{nc.region.split(':', 1)[-1] if nc.region else 'a buffer'}, which the kernel may write: "
                           "a non-coherent load is not ordered by barriers (race.global.non-coherent is the run's)")
        bacc = {id(a): self._b_access(a) for a in accs}
        # 1. barrier intervals counted (the hardware's matching of the n-th barriers)
        found = self.search(space, accs, bacc, True, budget)
        pairs_checked, maybe, undecided = found["pairs"], found["maybe"], found["undecided"]
        if found["race"] is not None:
            a, bb, m1 = found["race"]
            if not ex.unmodelled_sync:
                return self.violation(space, a, bb, bacc[id(bb)], m1, divergent)
            maybe.insert(0, (a, bb, "sync"))
        elif any(a.collective for a in accs):
            maybe += self.collective_lanes(space, accs, bacc, budget)
        if found["race"] is None and divergent and not maybe and not undecided:
            # 2. a barrier may diverge: intervals are then undefined, so nothing may rest on
            # them -- any race without ordering leaves the question open
            loose = self.search(space, accs, bacc, False, budget, first=True)
            if loose["race"] is not None or loose["maybe"]:
                a, bb, _ = loose["race"] or loose["maybe"][0]
                maybe.append((a, bb, "divergent"))
            undecided += loose["undecided"]
        notes = list(ex.notes) + [x.note() for x in self.atomic_sites if x.ticket]
        if env.assumptions:
            notes = env.assumptions + notes
        same = found.get("same_value") or []
        if same and not (maybe or undecided or reasons):
            a, bb, m1 = same[0]
            ob = self.violation(space, a, bb, bacc[id(bb)], m1, divergent)
            ob.rule = (RACE_SHARED_SAME_VALUE if space == "shared" else RACE_GLOBAL_SAME_VALUE).id
            ob.message = ("same-value " + ob.message + f"; both always store the same value ({len(same)} such "
                          "pair(s), no other race)")
            return ob
        if same:
            maybe = maybe + [(a, bb, "same") for a, bb, _ in same]
        if maybe or undecided or reasons:
            why = list(reasons)
            for a, bb, kind in maybe[:3]:
                la, lb = _where(a.instr, self.module), _where(bb.instr, self.module)
                if kind == "sync":
                    gaps = [g for g in ex.unmodelled_sync if g not in why][:2]
                    why.append(f"{a.mode} at {la} and {bb.mode} at {lb} may race, but what may order "
                               "them is not modelled" + (f" ({'; '.join(gaps)})" if gaps else ""))
                elif kind == "divergent":
                    dl = ", ".join(_where(s.instr, self.module) if s.instr
                                   else f"loop at {_loc(s.loc, self.module)}" for s in divergent[:3])
                    why.append(f"{a.mode} at {la} and {bb.mode} at {lb} are ordered only by a barrier "
                               f"that may be divergent ({dl}); race freedom is not established")
                elif kind == "same":
                    why.append(f"write at {la} and write at {lb} race but always store the same value")
                elif kind == "lanes":
                    why.append(f"{a.mode} at {la} and {bb.mode} at {lb} may touch the same bytes from lanes of one "
                               "warp with no warp or CTA barrier between them: which lane a warp-collective "
                               "matrix access (ldmatrix/stmatrix) moves a row's bytes for is not modelled")
                elif kind == "approx-same":
                    why.append(f"write at {la} and write at {lb} may race (for values the encoding "
                               "over-approximates), and would always store the same value")
                else:
                    why.append(f"a race between {a.mode} at {la} and {bb.mode} at {lb} is possible for "
                               "values the encoding over-approximates (loaded data, floating point, "
                               "loop registers, an integer division by zero)")
            for a, bb in undecided[:3]:
                why.append(f"solver budget ({self.timeout_s:g} solver seconds) spent on {a.mode} at "
                           f"{_where(a.instr, self.module)} against "
                           f"{bb.mode} at {_where(bb.instr, self.module)}")
            locs = []
            for a, bb, _ in maybe[:1]:
                locs = [Location.of(x.instr.loc, self.module.path) for x in (a, bb)]
            return Obligation(oid, "races", "unknown", "; ".join(why), locations=locs)
        msg = (f"no two distinct threads{' of one CTA' if space == 'shared' else ''} access the same "
               f"{space} bytes in one barrier interval with a write ({len(accs)} accesses, "
               f"{pairs_checked} pairs)")
        if divergent:
            msg += "; holds without relying on any barrier (a barrier may be divergent)"
        if notes:
            msg += "; assuming " + "; ".join(notes)
        if space == "global":
            fields = sorted({x.region.split(":", 1)[1] for x in accs if x.region and x.region.startswith("param:")}
                            & self.env.struct_buffers)
            msg += ("; distinct pointer parameters are assumed not to alias" if not fields else
                    f"; distinct pointer parameters and struct pointer fields ({', '.join(fields)}: buffers of their "
                    f"own, the launch giving no bytes for their struct) are assumed not to alias")
        return Obligation(oid, "races", "proved", msg, self.scope())

    def scope(self) -> str:
        """What a proof covers: the launch's grid and block (or every one), the argument
        values given (only those) or all values of the others, and every schedule."""
        env = self.env
        buffers = {x.region for x in self.ex.accesses}
        given, free, pointers = [], [], []
        for term, p in env.params.values():
            key = p.source_name or p.name
            if key in env.param_values:
                given.append(f"{key}={env.param_values[key]}")
            elif f"param:{key}" in buffers:
                pointers.append(key)
            else:
                free.append(key)
        parts = list(env.scope)
        if getattr(self, "by_cluster", False):
            parts.append("cluster {}x{}x{} (the launch's)".format(*env.launch.cluster))
        if given:
            parts.append(f"for {', '.join(given)} only")
        if free:
            parts.append(f"all values of {', '.join(free)}")
        if env.preconditions:
            parts.append("assuming " + " and ".join(env.preconditions))
        if self.ex.preconditions:
            sites = list(dict.fromkeys(f"{p.what} at line {p.instr.loc.line or '?'}" for p in self.ex.preconditions))
            parts.append(f"under the kernel's preconditions ({', '.join(sites[:4])}{', ...' if len(sites) > 4 else ''})")
        pointers += sorted({b for b in (r.split(":", 1)[1] for r in buffers if r and r.startswith("param:"))
                            if b in env.struct_buffers})
        free_bytes = [p.source_name or p.name for p in self.kernel.params if p.name in env.free_struct_bytes]
        if free_bytes:
            parts.append(f"all values of the other bytes of {', '.join(free_bytes)}")
        if pointers:  # (the no-alias assumption was in the message only: in == out read as covered)
            parts.append(f"any addresses of {', '.join(pointers)}"
                         + (" that do not overlap one another" if len(pointers) > 1 else ""))
        parts += self.extern_assumptions()
        parts.append("every schedule (two arbitrary distinct threads)")
        return "; ".join(parts)

    def extern_assumptions(self) -> list:
        """``assuming nondet() is pure (...)`` for each user-given summary a call used
        (``kverify.symbolic.extern``): what every proof of this run rests on."""
        from kverify.symbolic.extern import describe

        return [describe(p, kind) for p, kind in sorted(self.ex.extern_used.items())]

    def search(self, space, accs, bacc, counted, budget, first=False):
        """All pairs (a, b) in program order: one query over every ``a`` first (``none_race``),
        then, unless it is unsat, one query per ``a`` over its candidates.
        Returns the first race that is real (``race``: a, b, model), the possible races
        that rest on approximated values (``maybe``), and the undecided pairs. With
        ``first``, stops at the first satisfiable pair without asking whether it is real."""
        ex, env = self.ex, self.env
        base = self.base()
        distinct = self.distinct_threads(space)
        single_cta = env.grid is not None and env.grid == (1, 1, 1)
        out = {"race": None, "maybe": [], "undecided": [], "pairs": 0, "same_value": []}
        todo = []
        for i, a in enumerate(accs):
            cands = []
            for bb in accs[i:]:
                if not (a.writes or bb.writes):
                    continue
                if space == "global" and (a.region is None or bb.region is None):
                    continue  # already an unknown reason
                if space == "global" and a.region != bb.region:
                    continue
                f = self.pair_formula(space, a, bb, bacc[id(bb)], counted, single_cta)
                if f is None:
                    continue
                cands.append((bb, f))
            if cands:
                todo.append((a, cands))
        if len(todo) > 1 and self.none_race(distinct, todo, budget, base):
            out["pairs"] = sum(len(c) for _, c in todo)
            return out
        for a, cands in todo:
            while cands:
                out["pairs"] += len(cands)
                cons = distinct + [a.pc]
                r, m = self.solve(cons + [mk_or(*[f for _, f in cands])], budget, base=base)
                if r == "unsat":
                    break
                if r == "unknown":
                    out["undecided"].append((a, cands[0][0]))
                    break
                hit = next((x for x in cands if z3.is_true(m.eval(x[1], model_completion=True))), cands[0])
                bb, f = hit
                if first:
                    out["race"] = (a, bb, m)
                    return out
                m1 = self.confirm(cons, f, m, budget, base)
                used = cons
                if m1 is None and self.atomic_sites:
                    # the atomic results it rests on, under an order of their executions
                    eqs, orders, small = atomics.witness(self, self.atomic_sites, cons + [f])
                    for extra in ((small, []) if eqs else ()):
                        r2, mw = self.solve(cons + eqs + extra + [f], budget, base=base)
                        m1 = self.confirm(cons + eqs, f, mw, budget, base) if r2 == "sat" else None
                        if m1 is not None:
                            used = cons + eqs
                            self.witnessed[(id(a), id(bb))] = orders
                            break
                if m1 is not None and (a.collective or bb.collective) and self.lanes_of_one_warp(m1):
                    # which lane a matrix row's bytes belong to is not modelled: a race between two
                    # lanes of one warp is no counterexample; one between two warps is
                    r2, m2 = self.solve(used + [f, mk_not(self.same_warp)], budget, base=base)
                    m1 = self.confirm(used, mk_and(f, mk_not(self.same_warp)), m2, budget, base) if r2 == "sat" else None
                    if m1 is None:
                        out["maybe"].append((a, bb, "lanes"))
                        cands = [x for x in cands if x is not hit]
                        continue
                same = self.same_value(a, bb, used, f, budget, base)
                if m1 is not None and same:
                    out["same_value"].append((a, bb, self.small_grid(used, f, m1, budget, base)))
                    cands = [x for x in cands if x is not hit]
                    continue
                if m1 is not None:
                    out["race"] = (a, bb, self.small_grid(used, f, m1, budget, base))
                    return out
                out["maybe"].append((a, bb, "approx-same" if same else "approx"))
                cands = [x for x in cands if x is not hit]
        return out

    def lanes_of_one_warp(self, model) -> bool:
        return z3.is_true(model.eval(mk_and(*self.same_cta(), self.same_warp), model_completion=True))

    def collective_lanes(self, space, accs, bacc, budget) -> list:
        """A warp-collective matrix access (ldmatrix/stmatrix: thread A's access is the row its
        address names, while the warp moves that row's bytes to or from other lanes' registers)
        and another access of the same bytes by the same thread in one interval (no barrier
        between them): two lanes of its warp may touch those bytes unordered, which the pair
        search of distinct threads does not ask. ``[(a, b, "lanes")]`` for the first such pair
        (the obligation is then not proved), else []."""
        same = self.same_cta() + [self.b(t) == t for t in self.env.tid]
        base = self.base()
        single_cta = self.env.grid is not None and self.env.grid == (1, 1, 1)
        for a in [a for a in accs if a.collective]:
            cands = []
            for bb in accs:
                if bb is a or not (a.writes or bb.writes):
                    continue
                f = self.pair_formula(space, a, bb, bacc[id(bb)], True, single_cta)
                if f is not None:
                    cands.append((bb, f))
            if not cands:
                continue
            r, m = self.solve(same + [a.pc, mk_or(*[f for _, f in cands])], budget, base=base)
            if r != "unsat":
                hit = next((x for x in cands if m is not None and z3.is_true(m.eval(x[1], model_completion=True))),
                           cands[0])
                return [(a, hit[0], "lanes")]
        return []

    def none_race(self, distinct, todo, budget, base) -> bool:
        """Whether no pair of ``todo`` (``(a, candidates)``) can race, asked in one query: the
        disjunction over ``a`` of a's query (its candidates' race conditions with the base
        constraints they mention, as a's own query asks them), so the address terms are
        bit-blasted once. A query that is not unsat within a share of the budget decides
        nothing: the pairs are then asked one ``a`` at a time."""
        common = None
        parts = []
        for a, cands in todo:
            cond = mk_and(a.pc, mk_or(*[f for _, f in cands]))
            rel = self.relevant(base, distinct + [cond])
            parts.append((cond, rel))
            ids = {c.get_id() for c in rel}
            common = ids if common is None else common & ids
        top = [c for c in parts[0][1] if c.get_id() in common]
        alts = [mk_and(cond, *[c for c in rel if c.get_id() not in common]) for cond, rel in parts]
        with budget.capped(budget.left // 4):
            r, _ = self.solve(distinct + top + [mk_or(*alts)], budget, want_model=False)
        return r == "unsat"

    def same_value(self, a, bb, cons, f, budget, base) -> bool:
        """Whether two racing plain stores always write the same bytes with the same value:
        no model of the race condition has different addresses or different values (an
        over-approximated value is a fresh symbol per thread, so it never counts as equal)."""
        if not (a.mode == bb.mode == "write") or a.value is None or bb.value is None or a.width != bb.width:
            return False
        b = self.b
        differ = mk_or(a.addr != b(bb.addr), a.value != b(bb.value))
        r, _ = self.solve(cons + [f, differ], budget, want_model=False, base=base)
        return r == "unsat"

    def _b_access(self, a):
        from dataclasses import replace

        return replace(a, addr=self.b(a.addr), pc=self.b(a.pc), epoch=self.b(a.epoch),
                       loops=tuple((info, self.b(k)) for info, k in a.loops))

    def pair_formula(self, space, a, bb, b, counted, single_cta):
        """The race condition for a by thread A and bb (B's copy b), without a.pc."""
        cta_ne = self.cta_ne
        extra = []
        if a.strong and bb.strong:  # morally strong when each scope contains the other's thread (§8.7)
            scopes = {_scope(a.instr), _scope(bb.instr)}
            if space == "shared" or scopes <= {"gpu", "sys"}:
                return None
            # a .cta scope: weak across CTAs; .cluster (and wider): weak across clusters
            if scopes <= {"cluster", "gpu", "sys"}:
                extra.append(self.cluster_ne)
                self.by_cluster = self.cluster_ne is not self.cta_ne  # the proof rests on the cluster shape
            else:
                extra.append(cta_ne)
        if is_false(b.pc):
            return None
        wa, wb = a.width, b.width
        x, y = a.addr, b.addr
        if z3.is_bv_value(x) and z3.is_bv_value(y):
            xv, yv = x.as_long(), y.as_long()
            if not (xv < yv + wb and yv < xv + wa):
                return None
        d1, d2 = y - x, x - y
        w = x.size()
        overlap = mk_or(z3.ULT(d1, z3.BitVecVal(wa, w)), z3.ULT(d2, z3.BitVecVal(wb, w)))
        conc = TRUE
        if counted:
            same = self.same_interval(a.epoch, b.epoch)
            if space == "shared" or single_cta:
                if is_false(same):
                    return None
                conc = same
            else:
                conc = mk_or(cta_ne, same)
        return mk_and(b.pc, overlap, conc, *extra)

    def same_interval(self, ea, eb):
        """Two accesses of one CTA in one barrier interval: the same number of CTA barriers
        before them (the epoch's low half) and, for two lanes of one warp when the kernel
        has warp barriers, the same number of warp barriers too (the whole epoch, see
        ``kverify.symbolic.records.CTA_BARRIER_STEP``)."""
        if z3.is_bv_value(ea) and z3.is_bv_value(eb):
            x, y = ea.as_long(), eb.as_long()
            same_all, same_cta = z3.BoolVal(x == y), z3.BoolVal((x - y) & 0xFFFFFFFF == 0)
        else:
            same_all = ea == eb
            same_cta = z3.Extract(31, 0, ea) == z3.Extract(31, 0, eb)
        if not self.ex.warp_barriers or is_false(same_cta) or is_true(same_all):
            return same_all  # (an equal epoch has an equal low half)
        return mk_or(same_all, mk_and(mk_not(self.same_warp), same_cta))

    # ------------------------------------------------------------------ exactness
    def confirm(self, constraints, f, model, budget, base):
        """A model of ``f`` that is a real race (see ``is_exact``), or None. When the first
        model is not, iteration counters of loops without an exact trip count are bounded
        so that the iterations can be shown to be reached."""
        syms = set()
        for c in list(constraints) + [f]:
            syms |= self.symbols(c)
        ks = [self.k_const[n] for n in sorted(syms) if n in self.loop_of_k]
        big = any(model.eval(k, model_completion=True).as_long() > REACH_SMALL for k in ks)
        if not big and self.is_exact(constraints, f, model, budget, base):
            return model
        if not ks:
            return None
        small = []
        for k in ks:
            info, thread = self.loop_of_k[str(k)]
            cont = info.cont_pc if thread == "A" else self.b(info.cont_pc)
            small.append(z3.ULE(k, REACH_SMALL))
            small += [z3.Implies(z3.ULT(j, k), z3.substitute(cont, (k, z3.BitVecVal(j, 64))))
                      for j in range(REACH_SMALL)]
        r, m2 = self.solve(list(constraints) + [f] + small, budget, base=base)
        if r == "sat" and self.is_exact(constraints, f, m2, budget, base):
            return m2
        # small iterations only make the counterexample easier to read
        if big and self.is_exact(constraints, f, model, budget, base):
            return model
        return None

    def small_grid(self, constraints, f, model, budget, base):
        """A real race's model with the fewest CTAs among a few bounds, where the grid is
        symbolic (a counterexample a person can launch), else ``model``."""
        grid = [n for n in self.env.nctaid if not z3.is_bv_value(n)]
        if not grid or all(model.eval(n, model_completion=True).as_long() <= 4 for n in grid):
            return model
        for bound in (2, 4, 16, 256):
            r, m = self.solve(list(constraints) + [f] + [z3.ULE(n, bound) for n in grid], budget, base=base)
            if r == "sat" and self.is_exact(constraints, f, m, budget, base):
                return m
        return model

    def is_exact(self, constraints, f, model, budget, base=()):
        """Does ``f`` hold for every value of the approximated symbols once the exact ones
        (threads, parameters, iteration counters, input data, elect choices) are fixed to
        the model's values?"""
        approx = self.env.approx
        constraints = list(constraints) + self.relevant(base, list(constraints) + [f])
        pins = []
        seen = set()
        todo = [f] + list(constraints)
        while todo:
            e = todo.pop()
            if e.get_id() in seen:
                continue
            seen.add(e.get_id())
            if z3.is_app(e) and e.decl().kind() == z3.Z3_OP_UNINTERPRETED:
                if e.num_args() == 0:
                    name = str(e)
                    if name not in approx:
                        pins.append(e == model.eval(e, model_completion=True))
                    elif name in self.loop_of_k:
                        # an iteration counter of a loop without an exact trip count: the
                        # iteration is real when every earlier one went on to the next
                        kv = model.eval(e, model_completion=True).as_long()
                        if kv <= REACH_UNROLL:
                            info, thread = self.loop_of_k[name]
                            cont = info.cont_pc if thread == "A" else self.b(info.cont_pc)
                            reach = [z3.substitute(cont, (e, z3.BitVecVal(j, 64))) for j in range(kv)]
                            pins.append(e == kv)
                            f = mk_and(f, *reach)
                            todo.extend(reach)
                    continue
                pins.append(e == model.eval(e, model_completion=True))
            if z3.is_app(e):
                todo.extend(e.children())
        constraints = constraints + self.relevant(base, pins + [f])
        r, _ = self.solve(list(constraints) + pins + [mk_not(f)], budget, want_model=False)
        return r == "unsat"

    # ------------------------------------------------------------------ counterexample
    def violation(self, space, a, bb, b, m, divergent):
        env, mod = self.env, self.module

        def val(e):
            return m.eval(e, model_completion=True).as_long()

        def thread(name, sub):
            return {"thread": name,
                    "tid": [val(sub(t)) for t in env.tid],
                    "ctaid": [val(sub(c)) for c in env.ctaid]}

        ident = (lambda e: e)
        threads = [thread("A", ident), thread("B", self.b)]

        def access(acc, who, terms):
            addr = val(terms.addr)
            d = {"thread": who, "instruction": acc.instr.opcode, "access": acc.mode,
                 "location": str(Location.of(acc.instr.loc, mod.path)),
                 "ptx_line": acc.instr.loc.ptx_line, "bytes": acc.width,
                 "iterations": {info.name: val(k) for info, k in terms.loops},
                 "barrier_interval": val(terms.epoch)}
            if self.ex.warp_barriers:
                d["barrier_interval"] &= 0xFFFFFFFF
                d["warp_barriers_before"] = val(terms.epoch) >> 32
            if space == "shared":
                var, off = env.shared_var_at(addr)
                d.update({"address": addr, "variable": var, "offset": off})
            else:
                name = acc.region.split(":", 1)[1]
                base = self._region_base(acc.region)
                off = (addr - val(base)) % (1 << 64) if base is not None else None
                if off is not None and off >= 1 << 63:
                    off -= 1 << 64
                d.update({"buffer": name, "offset": off, "address": addr})
            return d

        accesses = [access(a, "A", a), access(bb, "B", b)]
        params = {**env.param_values, **env.symbolic_param_values(m, self.ex.address_params)}
        kinds = {("write", "write"): "write-write", ("read", "write"): "read-write",
                 ("write", "read"): "write-read"}
        ka = "write" if a.writes else "read"
        kb = "write" if bb.writes else "read"
        ce = {"space": space, "kind": kinds.get((ka, kb), f"{a.mode}-{bb.mode}"),
              "threads": threads, "accesses": accesses, "params": params,
              "block": list(env.block) if env.block else [val(n) for n in env.ntid],
              "grid": list(env.grid) if env.grid else [val(n) for n in env.nctaid]}
        la, lb = Location.of(a.instr.loc, mod.path), Location.of(bb.instr.loc, mod.path)
        ta, tb = threads
        msg = (f"data race on {space} memory: {a.mode} at {la} by thread "
               f"{_tstr(ta)} and {bb.mode} at {lb} by thread {_tstr(tb)}, "
               f"same bytes ({accesses[0].get('variable') or accesses[0].get('buffer')}"
               f"+{accesses[0]['offset']}), ")
        if space == "global" and ta["ctaid"] != tb["ctaid"]:
            msg += "different CTAs (never ordered by bar.sync)"
        else:
            msg += f"same barrier interval {accesses[0]['barrier_interval']}"
            if self.ex.warp_barriers and z3.is_true(m.eval(self.same_warp, model_completion=True)):
                msg += (f", one warp with no __syncwarp between them "
                        f"({accesses[0]['warp_barriers_before']} before each)")
        g, bl = ce["grid"], ce["block"]
        msg += f"; grid {g[0]}x{g[1]}x{g[2]}, block {bl[0]}x{bl[1]}x{bl[2]}"
        if params:
            msg += ", " + ", ".join(f"{k}={env.show_value(v)}" for k, v in params.items())
        if divergent:
            msg += "; a barrier may also be divergent (barrier.divergence)"
        orders = self.witnessed.get((id(a), id(bb)))
        if orders:
            text, ce["atomics"] = atomics.describe(self, orders, m)
            msg += "; " + text
        return Obligation(f"race-free: {space}", "races", "violated", msg, locations=[la, lb],
                          counterexample=ce, rule=(RACE_SHARED if space == "shared" else RACE_GLOBAL).id)

    def _region_base(self, region):
        if region.startswith("param:"):
            return self.env.buffer_base(region.split(":", 1)[1])  # its parameter, or a struct's pointer
        if region.startswith("var:"):
            return z3.BitVec(f"gvar.{region.split(':', 1)[1]}", 64)
        return None


def _b_name(name: str) -> str:
    return name[:-2] + "!B" if name.endswith("!A") else name


def _scope(instr):
    mods = instr.mods
    if "volatile" in mods:
        return "sys"
    s = next((x for x in mods if x in ("cta", "cluster", "gpu", "sys")), None)
    if s is None and is_atomic(instr):
        return "gpu"
    return s


def _tstr(t):
    tid, cta = t["tid"], t["ctaid"]
    return f"tid=({tid[0]},{tid[1]},{tid[2]}) ctaid=({cta[0]},{cta[1]},{cta[2]})"


def _where(instr, module):
    return str(Location.of(instr.loc, module.path)) if instr is not None else "?"


def _loc(loc, module):
    return str(Location.of(loc, module.path))
