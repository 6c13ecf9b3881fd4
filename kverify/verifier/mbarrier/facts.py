"""The facts the static mbarrier obligations (:mod:`.parity`, :mod:`.tx`, :mod:`.arrivals`)
are built from: the symbolic run's sites (:mod:`.sites`), a budgeted solver, and the relations
between sites -- aliasing, iterations, the waiting role, earlier uses of a barrier, how many
threads reach a site, which sites share a phase."""
from __future__ import annotations

import re
import time

import z3

from kverify.symbolic import TRUE, Env, Symbols, mk_and
from kverify.symbolic.budget import SolverBudget
from kverify.verifier.report import Location, Obligation

from .sites import MbarExecutor

MAX_REUSE = 64
#: solver units one may-alias query of two barrier sites may spend (``Facts.alias``): decided
#: ones take ~150k on CUTLASS's GEMMs; an undecided one would otherwise eat the obligation's budget
ALIAS_UNITS = 2_000_000
#: the bound below which a may-alias witness takes every value of its query (loop counters, the
#: registers loop heads over-approximate) before the query over all of them: a ring of up to this
#: many stages, entered at any position (``Facts._first_iterations_witness``)
WITNESS_ITERATIONS = 16
#: obligation -> what its title says it proves (``mbarrier conformance: <that>``)
TITLES = {"parity": "parity (initial phase and alternation)", "tx bytes": "tx bytes (per phase)",
          "arrivals": "arrivals (per phase)"}


#: the assumption under which ``count_threads`` counts an elect.sync leader combined with a
#: lane-0 condition (CUTLASS's elect_one_sync() && warp-group-thread-0 idiom)
ELECT_LANE_0 = ("elect.sync with the full membermask elects lane 0 (current hardware elects the lowest active "
                "lane; the PTX ISA, §9.7.13.9, says only that the election is deterministic)")


#: what a proof over peers' copies or arrivals inside loops rests on (tx bytes, arrivals)
IN_STEP = ("the CTAs of a cluster run their loop iterations in step (a peer's multicast copy or remote arrival "
           "of iteration k signals the phase of this CTA's iteration k: the peers' ring state is not related by "
           "the encoding)")
#: ... and one over those whose barrier is a ring's stage (the ring's forms, ring.py)
RING_IN_STEP = ("the CTAs of a cluster take their ring steps in step (a peer's multicast copy or remote arrival "
                "at its n-th ring step signals this CTA's barrier of its n-th ring step, as a cluster-wide tile "
                "schedule gives: the ring registers are proved to be functions of n alone)")


def _loop_key(s) -> tuple:
    """The loops of site ``s`` as its terms name them (their counters and summaries)."""
    return tuple((id(info), k.get_id()) for info, k in s.loops)


def ob(what, status, msg, t0, locs=(), cex=None, rule=None):
    return Obligation(f"mbarrier conformance: {TITLES[what]}", "mbarrier", status, msg, None, list(locs), cex,
                      time.perf_counter() - t0, rule if status == "violated" else None)


def unseparated(chk, what, t0):
    """``what`` (tx bytes, arrivals) ``unknown`` when a wait is not a recognized blocking retry
    loop: the obligations tell a barrier's phases apart by the waits between its signals (in an
    iteration, and from one iteration to the next through the ring's waits), and a wait that may
    return before its phase completed separates nothing (None when every wait blocks)."""
    w = next((s for s in chk.sites if s.kind == "wait" and not s.instr.blocking), None)
    if w is None:
        return None
    return ob(what, "unknown", f"{chk.loc(w.instr)}: the wait is not a recognized blocking retry loop: it may return "
              "before its phase completed, and the phases of the barriers are told apart by waits that block", t0,
              [chk.loc(w.instr)])


def _bv_constants(fs):
    """The bit-vector constants the formulas ``fs`` are made of."""
    seen, out, todo = set(), [], list(fs)
    while todo:
        e = todo.pop()
        if e.get_id() in seen:
            continue
        seen.add(e.get_id())
        if z3.is_const(e) and e.decl().kind() == z3.Z3_OP_UNINTERPRETED:
            if z3.is_bv(e):
                out.append(e)
        else:
            todo.extend(e.children())
    return sorted(out, key=str)


class Facts:
    """One kernel's mbarrier sites (from a symbolic run of one thread) and the relations
    the obligations ask about; every solver query goes through ``solve`` and its budget."""

    def __init__(self, module, kernel, launch, timeout_s, t0):
        self.module, self.kernel, self.launch = module, kernel, launch
        self.timeout_s, self.t0 = timeout_s, t0
        self.budget = SolverBudget(timeout_s, label="mbarrier")  # solver work, not wall-clock time (symbolic/budget.py)
        self.assumptions: set = set()  # what a proof of the obligation being checked rests on (static._run)
        self.memo = {}
        # definite answers by the whole query (the same query comes from several obligations'
        # rules; an unknown is not kept: another obligation's budget may answer it). Apart from
        # ``memo``, whose answers are about sites: a strengthened copy (parity) starts a new memo
        # but keeps these, true whatever the sites are
        self._answers: dict = {}
        self.guessed_roles: set = set()  # ids of waits whose role rests on approximated barrier addresses
        self._symbols = Symbols()
        self._thread_counts: dict = {}  # pc id -> (pc, count_threads' answer, the assumptions it added)
        self.rings: list = []  # (wait site, Ring) of every ring the parity obligation proved (ring.py)

    # ------------------------------------------------------------------ solver
    def solve(self, fs):
        if self.budget.exhausted():
            return "unknown", None
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
        query = (*fs, *[c for (c, _), kp in zip(base, keep) if kp])
        key = tuple(f.get_id() for f in query)
        known = self._answers.get(key)
        if known is not None:
            return known[0]
        r, m = self.budget.solve(*query)
        if r == z3.unknown:
            return "unknown", None
        answer = ("sat", m) if r == z3.sat else ("unsat", None)
        self._answers[key] = (answer, query)  # (the terms kept alive: their ids stay theirs)
        return answer

    def prove(self, hyp, goal):
        """'proved' | ('cex', model) | 'unknown'."""
        r, m = self.solve([hyp, z3.Not(goal)])
        if r == "unsat":
            return "proved", None
        return ("cex", m) if r == "sat" else ("unknown", None)

    def syms(self, *es):
        """Names of the uninterpreted constants (and functions) in ``es``."""
        return self._symbols.of(*es)

    def site_of(self, s):
        """``s`` as this view of the facts holds it (a strengthened copy may rewrite sites)."""
        return getattr(self, "originals", {}).get(id(s), s)

    def loc(self, ins):
        return Location.of(ins.loc, self.module.path)

    #: the symbolic executor ``prepare`` runs (a subclass of :class:`MbarExecutor`)
    executor = MbarExecutor

    def prepare(self):
        """Run the kernel body symbolically: every mbarrier site with its terms."""
        env = self.env = Env(self.module, self.kernel, self.launch)
        ex = self.ex = self.executor(env, lambda f: self.solve([f]), self.launch)
        ex.query_cap = self.query_cap
        self._run(ex)
        self.sites = ex.sites
        return self

    def _run(self, ex):
        ex.run()

    def query_cap(self):
        """The executor's cap for a query it can retry piecewise: a 32nd of the budget left."""
        return self.budget.capped(self.budget.left // 32)

    def with_params(self, msg: str, cex: dict, model):
        """``msg`` and ``cex`` of a counterexample with the values ``model`` gives the parameters
        the launch left symbolic (``Env.symbolic_param_values``), in the text and as ``params``."""
        vals = self.env.symbolic_param_values(model, self.ex.address_params)
        if not vals:
            return msg, cex
        return (msg + "; with " + ", ".join(f"{k}={self.env.show_value(v)}" for k, v in vals.items()),
                {**cex, "params": vals})

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
        return s.seq

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

    def alias(self, w, s):
        """'sat' when site ``s`` names the barrier of ``w`` in some iteration of each, 'unsat' when
        in none, 'unknown' when the solver gives no answer within ``ALIAS_UNITS``."""
        if s.addr is None or w.addr is None:
            return "unknown"
        # by the terms the query is made of: the copies and the expect-tx of one round name their
        # barrier through one register, so they share one query
        key = ("alias", w.addr.get_id(), _loop_key(w), s.addr.get_id(), _loop_key(s))
        if key not in self.memo:
            (a,), rng = self.renamed(s, s.addr)
            q = [self.ranges(w.loops), rng, w.addr == a]
            self.memo[key] = self._first_iterations_witness(q, w.loops, s.loops) or self._capped_solve(q)
        return self.memo[key]

    def _first_iterations_witness(self, q, loops, other_loops):
        """'sat' when query ``q`` (over the counters of ``loops`` and the renamed ones of
        ``other_loops``, as :meth:`renamed` names them) holds with every loop of both in its first
        iteration, or else with every bit-vector value the query is made of (loop counters, the
        registers loop heads over-approximate) below ``WITNESS_ITERATIONS``, each try within a
        tenth of ``ALIAS_UNITS``; else None. A barrier a fill and a wait share is most
        often shared from the start, or a few ring positions on (a consumer whose first wait of
        a tile is hoisted out of its k loop); these witnesses are small queries, where one over
        all iterations of two nested rings can take most of ``ALIAS_UNITS``, and how much of it
        depends on the numbering of the terms (what the process solved before). Either witness
        is a model of ``q`` itself: a 'sat' from one is a 'sat' of ``q``."""
        ks = [k for _, k in loops] + [z3.BitVec(f"{k}~other", 64) for _, k in other_loops]
        if not ks:
            return None
        small = [z3.ULT(v, WITNESS_ITERATIONS) for v in _bv_constants(q) if v.size() > 4]
        for bound in ([k == 0 for k in ks], small):
            with self.budget.capped(ALIAS_UNITS // 10):
                if self.solve(q + bound)[0] == "sat":
                    return "sat"
        return None

    def _capped_solve(self, q):
        with self.budget.capped(ALIAS_UNITS):
            return self.solve(q)[0]

    def first_fill_aliases(self, w, s) -> bool:
        """Site ``s`` names the barrier of ``w`` in the first iteration of each of its loops, where
        its loop-carried registers hold their entry values (no over-approximated value left)."""
        a = self.first_iterations(s.loops, s.addr)[0] if s.loops else s.addr
        if any(_approx_value(n) for n in self.syms(a) & self.env.approx):
            return False
        q = [self.ranges(w.loops), w.addr == a]
        return (self._first_iterations_witness(q, w.loops, ()) or self._capped_solve(q)) == "sat"

    def may_alias(self, w, s):
        """Site ``s`` may name the barrier of ``w`` in some iteration of each (``unknown`` counts)."""
        return self.alias(w, s) != "unsat"

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

    def role(self, w, base=False):
        """(phase offset, why) of the parity wait ``w``: its n-th use (0-based) of a barrier must
        wait for the completion of phase ``n - offset`` -- offset 0 when the phase it waits for is
        completed by its own round (the consumer of a fill), 1 for the producer's pass-through
        (its first wait names the phase before phase 0, which a fresh barrier counts as
        complete); (None, reason) when the role is not recognized. A barrier whose phases another
        role's arrivals complete takes its role from the ring (``_released_role``); ``base``:
        only the roles its own barrier gives (a fill, or the waiting threads' own arrivals)."""
        L = self.loc
        signals = [s for s in self.sites if s is not w and s.kind in ("arrive", "expect_tx", "copy")]
        tx = None
        for s in signals:
            if s.kind == "copy" or s.tx is not None:
                a = self.alias(w, s)
                if a == "unknown":
                    return None, (f"cannot tell whether the fill at {L(s.instr)} names the barrier it waits on "
                                  f"(no solver answer within {ALIAS_UNITS:,} units)")
                if a == "sat":
                    tx = s
                    break
        if tx is not None:
            if any(_approx_value(n) for n in self.syms(w.addr, tx.addr) & self.env.approx) \
                    and not self.first_fill_aliases(w, tx):
                # the fill's barrier meets this one only for values the encoding over-approximates (a
                # ring index it does not bound): the role is a guess, and no violation may rest on it
                self.guessed_roles.add(id(w))
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
        if not base:
            return self._released_role(w, arrs)
        return None, "its barrier's phases are released by another role"

    def _released_role(self, w, arrs):
        """``role`` of a wait ``w`` whose barrier's phases only another role's arrivals (``arrs``)
        complete, from the protocol: each releasing site is either gated -- its threads first
        wait, in the same iteration, on a barrier that the waiting threads signal after ``w``
        (the partner barrier of a full/empty ring) -- or free. Free releasers complete phase 0
        without this role's round: ``w`` waits for it (offset 0). Gated ones wait for this role:
        the two waits of the cycle cannot both wait for a phase 0 (neither round could start)
        nor both pass through (both would start on one stage), so ``w`` passes through (offset 1)
        exactly when the partner wait ``v`` waits for phase 0 -- known when ``v``'s own barrier is
        filled (copies / expect-tx) or arrived on by its own threads first (``role(v, base=True)``);
        when ``v``'s barrier too is released by arrivals alone, the role that writes shared memory
        the other reads goes first (the data each round hands over); else the role is unknown."""
        L = self.loc
        signals = [s for s in self.sites if s.kind in ("arrive", "expect_tx", "copy") and self.same_iteration(s, w)
                   and self.seq(s) > self.seq(w) and not self.may_alias(w, s)
                   and self.prove(mk_and(self.ranges(w.loops), s.pc), w.pc)[0] == "proved"]
        gates = []
        for a in arrs:
            vs = [v for v in self.sites if v.kind == "wait" and v is not w and self.same_iteration(v, a)
                  and self.seq(v) < self.seq(a) and any(self.may_alias(v, s) for s in signals)
                  and self.prove(mk_and(self.ranges(a.loops), a.pc), v.pc)[0] == "proved"]
            gates.append(vs[-1] if vs else None)
        if not any(gates):
            return 0, (f"consumer: the phases it waits for are released by another role ({L(arrs[0].instr)}) "
                       "whose arrivals wait for no signal of the waiting threads")
        if not all(gates):
            a = arrs[gates.index(None)]
            return None, (f"the barrier is released both by a role that waits for the waiting threads' signals and "
                          f"by one that does not ({L(a.instr)})")
        v = gates[0]
        s = next(s for s in signals if self.may_alias(v, s))
        based = {id(g): (g, self.role(g, base=True)) for g in gates}
        if all(off == 0 for _, (off, _) in based.values()):
            if any(id(g) in self.guessed_roles for g, _ in based.values()):
                self.guessed_roles.add(id(w))
            return 1, (f"producer's pass-through: its releasers ({L(arrs[0].instr)}) first wait at {L(v.instr)} for the "
                       f"phase the waiting threads' signal at {L(s.instr)} completes, a wait for phase 0 "
                       f"({based[id(v)][1][1]}), so this role goes first")
        if len(based) > 1:
            return None, (f"its releasers wait at {L(v.instr)} and at {L(next(g for g in gates if g is not v).instr)} "
                          "before they release it, not all of them for a filled barrier")
        mine, theirs = self._hands_over(w, s, v, arrs[0]), self._hands_over(v, arrs[0], w, s)
        if mine and not theirs:
            return 1, (f"producer's pass-through: the waiting threads write shared memory at {L(mine.instr)} before "
                       f"their signal at {L(s.instr)}, which the releasing role reads after its wait at {L(v.instr)} "
                       f"(and it writes none that they read): this role goes first")
        if theirs and not mine:
            return 0, (f"consumer: it reads shared memory the releasing role writes at {L(theirs.instr)} after its wait "
                       f"at {L(v.instr)} (and it writes none that role reads): that role goes first")
        return None, (f"its releasers ({L(arrs[0].instr)}) wait at {L(v.instr)} for the waiting threads' signal at "
                      f"{L(s.instr)}, that barrier too is released by arrivals alone, and "
                      + ("each role writes shared memory the other reads" if mine else
                         "neither writes shared memory the other reads")
                      + ": which of the two waits passes first is not determined")

    def _hands_over(self, w, s, v, a):
        """The first shared-memory write of ``w``'s threads after the wait ``w`` and before their
        signal ``s`` (same iteration) to a variable that the threads of ``v`` read after their wait
        ``v`` and before their release ``a``; None without one. Variables are compared by name
        (``Access.region``): an access whose region is not a named variable meets every one."""
        def between(x, lo, hi, mode):
            ks = tuple(str(k) for _, k in lo.loops)
            return [acc for acc in self.ex.accesses if acc.space == "shared" and mode(acc)
                    and tuple(str(k) for _, k in acc.loops) == ks and self.seq(lo) < acc.seq < self.seq(hi)
                    and self.solve([self.ranges(lo.loops), x.pc, acc.pc])[0] != "unsat"]

        def meets(p, q):
            named = [r for r in (p.region, q.region) if r and r.startswith("var:")]
            return len(named) < 2 or named[0] == named[1]

        reads = between(a, v, a, lambda acc: acc.mode != "write")
        return next((x for x in between(s, w, s, lambda acc: acc.writes) if any(meets(x, r) for r in reads)), None)

    def earlier_uses(self, w, counted=()):
        """(number of uses of ``w``'s barrier by its threads before ``w``, None) or (None, reason);
        the waits ``counted`` (ids) are left out: a ring proved over several wait sites counts them."""
        n = 0
        for v in self.sites:
            if v is w or v.kind != "wait" or id(v) in counted:
                continue
            shared_loop = {str(k) for _, k in v.loops} & {str(k) for _, k in w.loops}
            if self.seq(v) > self.seq(w) and not shared_loop:
                continue  # after every use of w
            # (the thread query is cheap, the address query over two iterations may not be)
            if not self.may_share_thread(w, v) or not self.may_alias(w, v):
                continue
            if w.loops or v.loops:
                return None, (f"the same threads also wait on that barrier at {self.loc(v.instr)}: uses are "
                              "counted per wait site only")
            same = self.prove(TRUE, v.addr == w.addr)[0] == "proved" if v.addr is not None else False
            if not same or not self.every_waiter_runs(w, v):
                return None, (f"cannot count the earlier wait at {self.loc(v.instr)} as a use of the same barrier "
                              "by the same threads")
            n += 1
        return n, None

    # ------------------------------------------------------------------ clusters
    def cluster_positions(self):
        """Every position (x, y, z) in a cluster of the launch (one, (0, 0, 0), without clusters)."""
        cx, cy, cz = tuple(getattr(self.launch, "cluster", None) or (1, 1, 1))
        return [(x, y, z) for z in range(cz) for y in range(cy) for x in range(cx)]

    def at_peer(self, pos, *terms, same=frozenset()):
        """``terms`` as the thread with the same index in the CTA at cluster position ``pos`` of
        this CTA's cluster computes them, or None when they hold values of this CTA's own run
        (loads, loop-carried registers, approximations) that substitution cannot carry over:
        only the thread and CTA indices, loop counters, launch constants (parameters, grid),
        the leader of a full-mask ``elect.sync`` and the symbols ``same`` (values the caller
        takes to be the peer's as well, under an assumption it states) may occur. The leader is
        one function of the CTA and warp indices (``Executor.elect``): applied to the peer's
        indices it is the peer's leader (CUTLASS's ``elect_one_sync()`` before a multicast copy)."""
        env = self.env
        launch_wide = ({p for p in env.params} | {f"{n}.{d}" for n in ("nctaid", "ntid") for d in "xyz"}
                       | env.elect_full_mask | set(same))

        def carried(ts):
            for x in self.syms(*ts):
                if x.endswith("!A") and x not in launch_wide:
                    if not (x.startswith(("tid.", "ctaid.")) or re.match(r"k\d+\.", x)):
                        return False
                elif not x.endswith("!A") and x not in launch_wide:
                    return False
            return True

        if not carried(terms):
            # a merged path condition may name a value only on both sides of a test of it
            # (CUTLASS's epilogue scalars, loaded or not): simplified, it may not name it at all
            terms = [z3.simplify(t) if t is not None else None for t in terms]
            if not carried(terms):
                return None
        subs = [(a, a - z3.URem(a, z3.BitVecVal(n, 32)) + p)
                for a, n, p in zip(env.ctaid, self.launch.cluster, pos)]
        return [z3.substitute(t, *subs) if t is not None else None for t in terms]

    @staticmethod
    def first_iterations(loops, *terms):
        """``terms`` in the first iteration of each of ``loops`` (every counter 0: the loop's entry,
        reached whenever the site is), simplified: the loop-head registers take their entry values,
        so a havocked value or an over-approximated counter drops out where only it varied."""
        zero = [(k, z3.BitVecVal(0, k.size())) for _, k in loops]
        return [z3.simplify(z3.substitute(t, *zero)) if t is not None else None for t in terms]

    def first_counterexample(self, loops, lhs, rhs, hyp, *more):
        """``(model, [lhs, rhs, hyp, *more])`` with every term in the first iteration of ``loops``
        (``first_iterations``) when ``lhs == rhs`` fails there under ``hyp`` and no approximated
        value is left in the three: a counterexample the obligation can report although later
        iterations are over-approximated; None otherwise."""
        if not loops:
            return None
        f = self.first_iterations(loops, lhs, rhs, hyp, *more)
        r, m = self.prove(f[2], f[0] == f[1])
        if r == "cex" and not self.syms(*f[:3]) & self.env.approx:
            return m, f
        return None

    def peer_terms(self, sites, terms, hyp, more=()):
        """``(terms, more, same, assumption)``: the terms of ``sites`` (a copy or remote arrival, and
        the expect-tx of its phase) to take at a peer CTA (``at_peer``). When ``terms`` hold values
        of this CTA's own run inside loops, the forms of a ring the sites run in (``ring_view``,
        applied to ``more`` too), with the count's symbols the peer holds as well, under
        ``RING_IN_STEP``; else as they are, under ``IN_STEP``."""
        if self.at_peer((0, 0, 0), *terms) is None and sites[0].loops:
            view = self.ring_view(sites, hyp)
            if view is not None:
                subst, same = view

                def sub(ts):
                    return tuple(z3.substitute(t, *subst) if t is not None else None for t in ts)
                return sub(terms), sub(more), same, RING_IN_STEP
        return tuple(terms), tuple(more), frozenset(), IN_STEP

    def ring_view(self, sites, hyp):
        """``(substitution, shared symbols)`` for ``sites`` (a peer's multicast copy, remote
        arrival, and the expect-tx of their phase) in the two loops of a ring the parity
        obligation proved (:mod:`.ring`), or in its outer loop alone (before or after the inner
        loop: the outer head's forms), all executed only by the ring's waiting threads: their
        loop-head registers replaced by the ring's forms, functions of the ring count ``n`` alone
        (from constants at the first execution), so that a peer CTA at the same ring step holds
        the same values (``at_peer``'s ``same``: the count's symbols); None without such a ring."""
        def inside(s, w):  # the ring's two loops, or its outer loop alone (its outer forms)
            ks, kw = [str(k) for _, k in s.loops], [str(k) for _, k in w.loops]
            return ks == kw or ks == kw[:1]

        for w, ring in self.rings:
            if len(w.loops) != 2 or not all(inside(s, w) for s in sites):
                continue
            if any(self.prove(hyp, z3.Implies(s.pc, ring.role))[0] != "proved" for s in sites):
                continue
            heads = {str(h) for h, _ in ring.substitution}
            forms = [f for _, f in ring.substitution]
            return ring.substitution, (frozenset(self.syms(*forms) - heads) if forms else frozenset())
        return None

    # ------------------------------------------------------------------ thread counting
    def count_at_peer(self, pc, pos, same=frozenset()):
        """``count_threads`` of ``pc`` (a condition ``at_peer`` takes) as the CTA at cluster
        position ``pos`` evaluates it: counted once on this CTA's terms (cached), the residue then
        taken at the peer -- the CTA index enters the residue only, so every thread false here is
        false there, and the others share the residue (0 threads where it is false there)."""
        return self.residue_at_peer(*self.count_threads(pc), pos, same)

    def residue_at_peer(self, n, res, pos, same=frozenset()):
        """``(n, res)`` -- ``n`` threads of this CTA under the residue ``res`` -- at the CTA at cluster
        position ``pos``: the residue taken there, no thread where it is false."""
        if not n:
            return n, res
        t = self.at_peer(pos, res, same=same)
        if t is None:
            return None, "the executing threads' condition holds values of the CTA's own run"
        r = z3.simplify(t[0])
        return (0, r) if z3.is_false(r) else (n, r)

    def count_by_rank(self, pc, rank):
        """``{r: (count, residue)}``: the threads of a CTA meeting ``pc`` grouped by the value of
        ``rank`` (a remote arrive's target), when each one's rank is a constant of its thread
        index and each group shares one residue (``count_threads`` per group); None otherwise
        (no ``elect.sync`` leader in ``pc``: those go through ``count_threads``)."""
        env = self.env
        if env.block is None or any(x.startswith("elect") for x in self.syms(pc)):
            return None
        bx, by, bz = env.block
        if bx * by * bz > 1024:
            return None
        tid, out = env.tid, {}
        for t in range(bx * by * bz):
            subs = [(tid[0], z3.BitVecVal(t % bx, 32)), (tid[1], z3.BitVecVal((t // bx) % by, 32)),
                    (tid[2], z3.BitVecVal(t // (bx * by), 32))]
            v = z3.simplify(z3.substitute(pc, *subs))
            if z3.is_false(v):
                continue
            r = z3.simplify(z3.substitute(rank, *subs))
            if not z3.is_bv_value(r):
                return None
            n, res = out.get(r.as_long(), (0, v))
            if not res.eq(v):
                return None
            out[r.as_long()] = (n + 1, v)
        return out

    def count_threads(self, pc):
        """(number of threads of a CTA executing an instance, residue condition) or
        (None, reason); one evaluation per path condition (sites under one condition share it)."""
        hit = self._thread_counts.get(pc.get_id())
        if hit is None:
            before = set(self.assumptions)
            answer = self._count_threads(pc)
            hit = self._thread_counts[pc.get_id()] = (pc, answer, self.assumptions - before)
        self.assumptions |= hit[2]
        return hit[1]

    def _count_threads(self, pc):
        env = self.env
        if env.block is None:
            return None, "block size unknown"
        bx, by, bz = env.block
        n = bx * by * bz
        if n > 1024:
            return None, "block too large"
        elects = _elects(pc)
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
                    part = [i for i, b in enumerate(lanes) if b]
                    if part == [0] and all(e.decl().name() in env.elect_full_mask for e in elects):
                        # CUTLASS's elect_one_sync() && thread-0 guard: one thread if the full-mask
                        # election picks lane 0, as current hardware does (the ISA says only that it
                        # is deterministic): counted so, and the obligation says so (ELECT_LANE_0)
                        self.assumptions.add(ELECT_LANE_0)
                        cnt += 1
                        continue
                    return None, (f"an elect.sync guard combined with a condition that only lane(s) "
                                  f"{part[0] if len(part) == 1 else part} of warp {w0 // 32} meet (CUTLASS's "
                                  "elect_one_sync() && warp-group-thread-0 idiom): whether the elected lane "
                                  "is among them depends on which lane elect.sync picks, which the PTX ISA "
                                  "leaves unspecified (current hardware elects the lowest active lane); not "
                                  "counted under that assumption")
            return cnt, residue
        return sum(per), residue

    def count_site(self, s):
        """``count_threads`` of site ``s`` in an iteration of its loops: its condition within their
        range, and (None, why) where its threads may leave a loop after different iterations."""
        why = self.iterations_uniform(s)
        return (None, why) if why else self.count_threads(mk_and(s.pc, self.ranges(s.loops)))

    def residue_varies(self, s, res) -> str:
        """Why the residue ``res`` of site ``s``'s thread count (``count_threads``: what remains of
        its condition once the thread index is fixed) may hold in some iterations of the site's
        loops and not in others ("" when it holds in all of them or in none). A count taken under
        its residue holds only in the iterations where the residue does: ``if (lane == 0 && it != 3)
        arrive(&empty[s])`` counts 1 arrival per warp, but iteration 3's phase gets none, so an
        obligation about every phase cannot assume it."""
        if not s.loops or res is None or z3.is_true(z3.simplify(res)):
            return ""
        (other,), rng = self.renamed(s, res)
        r, m = self.prove(mk_and(self.ranges(s.loops), rng, res), other)
        if r == "proved":
            return ""
        if r == "unknown":
            return "the solver cannot show that its threads run it in every iteration alike"

        def its(f):
            vs = [str(m.eval(z3.BitVec(f(k), 64), model_completion=True).as_long()) for _, k in s.loops]
            return vs[0] if len(vs) == 1 else f"({', '.join(vs)})"
        loops = ", ".join(info.name for info, _ in s.loops)
        return (f"its threads run it in iteration {its(str)} and not in iteration {its(lambda k: f'{k}~other')} "
                f"of loop{'s' if len(s.loops) > 1 else ''} {loops}")

    def iterations_uniform(self, s) -> str:
        """Why the threads running site ``s`` may run different iterations of a loop of ``s``
        whose trip count the summary does not know ("" when they cannot): the site's count of
        threads (``count_threads`` of its condition) holds for every iteration only if the
        loop's continue decision is the same for all of them (``for (it = 0; it < (warp == 3 ?
        n - 4 : n); ++it)``: warp 3 leaves early and its arrivals are missing from the last
        phases)."""
        env = self.env
        if env.block is None or not any(info.trip is None for info, _ in s.loops):
            return ""
        key = ("uniform", s.pc.get_id(), tuple(id(info) for info, _ in s.loops))
        if key not in self.memo:
            self.memo[key] = self._iterations_uniform(s)
        return self.memo[key]

    def _iterations_uniform(self, s) -> str:
        env = self.env
        bx, by, bz = env.block
        tid = env.tid
        for info, _ in s.loops:
            if info.trip is not None or info.cont_pc is None:
                continue
            elects = _elects(mk_and(s.pc, info.cont_pc))  # each lane its own leader, as ``_count_threads``
            seen = None
            for t in range(bx * by * bz):
                subs = [(tid[0], z3.BitVecVal(t % bx, 32)), (tid[1], z3.BitVecVal((t // bx) % by, 32)),
                        (tid[2], z3.BitVecVal(t // (bx * by), 32))] + [(e, z3.BitVecVal(t & 31, 32)) for e in elects]
                if z3.is_false(z3.simplify(z3.substitute(s.pc, *subs))):
                    continue
                v = z3.simplify(z3.substitute(info.cont_pc, *subs))
                if seen is None:
                    seen = v
                elif not seen.eq(v):
                    return (f"the threads running it may leave loop {info.name} after different iterations "
                            "(its trip count depends on the thread)")
        return ""

    def matches(self, a, b, hyp):
        """'same' / 'different' / None for two barrier addresses (terms of one iteration)."""
        if a.eq(b):
            return "same"
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


def _elects(pc) -> list:
    """The ``elect.sync`` leader terms (uninterpreted ``elect*`` applications) in ``pc``."""
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
    return elects


def _approx_value(name: str) -> bool:
    """An over-approximated value (a havocked register, a loaded value), not a loop counter whose
    iterations may not all be reached, nor a wait's use count (its ring form is proved apart)."""
    return re.fullmatch(r"kx?\d+\..*![AB]", name) is None and "%mbar_uses" not in name
