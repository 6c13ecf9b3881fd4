"""The tx-bytes obligation (rule ``mbarrier.tx-mismatch``): see :mod:`.static`."""
from __future__ import annotations

import time

import z3

from kverify.semantics.memory_model.protocols import mbarrier as MB
from kverify.symbolic import mk_and
from kverify.verifier.report import Obligation

from .facts import RING_IN_STEP, Facts, ob as _ob, unseparated


def check(chk: Facts) -> Obligation:
    """Per phase: the expect-tx bytes posted on a barrier equal the bytes its copies of the
    same phase deliver (same iteration, no wait on the barrier between them)."""
    t0 = time.perf_counter()
    L = chk.loc
    exps = [s for s in chk.sites if s.tx is not None and s.kind in ("arrive", "expect_tx")]
    copies = [s for s in chk.sites if s.kind == "copy"]
    mcast = [s for s in copies if s.mask is not None]
    local = [s for s in copies if s.mask is None]
    if not exps and not copies:
        return _ob("tx bytes", "proved", "no expect-tx and no copy signalling an mbarrier", t0)
    nb = unseparated(chk, "tx bytes", t0)
    if nb is not None:
        return nb
    used, done = set(), set()
    proved = []
    for e in exps:
        if id(e) in done:
            continue
        if e.addr is None:
            return _ob("tx bytes", "unknown", f"{L(e.instr)}: barrier address not understood", t0, [L(e.instr)])
        hyp = chk.ranges(e.loops)
        group, bad = chk.phase_mates(e, exps, hyp)
        mine, bad2 = chk.phase_mates(e, local, hyp) if group is not None else (None, bad)
        if group is None or mine is None:
            c = bad or bad2
            return _ob("tx bytes", "unknown", f"cannot decide whether {L(c.instr)} signals the barrier of "
                       f"{L(e.instr)} in the same phase", t0, [L(c.instr), L(e.instr)])
        done.update(id(x) for x in group)
        late = _unheld(chk, group, hyp)
        if late is not None:
            return _ob("tx bytes", "unknown", f"{L(late.instr)}: the expect-tx is not followed, in its threads, by their "
                       "arrival on the barrier in the same phase: the phase may complete before it (pending arrivals "
                       "and tx-count both zero), and its bytes would count in the next phase (§9.7.13.15, phase completion)", t0,
                       [L(late.instr)])
        want, re_ = z3.BitVecVal(0, 32), None
        for x in group:
            ne, rx = chk.count_site(x)
            if ne is None:
                return _ob("tx bytes", "unknown", f"{L(x.instr)}: cannot count the threads posting "
                           f"expect-tx ({rx})", t0, [L(x.instr)])
            if ne and re_ is not None and chk.prove(hyp, rx == re_)[0] != "proved":
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
            nc, rc = chk.count_site(c)
            if nc is None:
                return _ob("tx bytes", "unknown", f"{L(c.instr)}: cannot count the issuing threads "
                           f"({rc})", t0, [L(c.instr)])
            if nc and re_ is not None:
                r, _ = chk.prove(hyp, rc == re_)
                if r != "proved":
                    return _ob("tx bytes", "unknown", f"{L(c.instr)} and {L(e.instr)} may run "
                               "in different iterations or paths", t0, [L(c.instr), L(e.instr)])
            total = total + c.size * nc
        got = _multicast_bytes(chk, e, mcast, hyp, re_, used)
        if isinstance(got, Obligation):
            got.time_s = time.perf_counter() - t0
            return got
        got, e_addr = got
        total = total + got
        mine = mine + [c for c in mcast if id(c) in used and c not in mine]
        # under the group's residue only: every expect-tx and copy counted above runs under that one
        # condition (proved equal), so where it is false (``if (it != 3)`` around both) the phase
        # gets neither -- 0 bytes announced, 0 delivered -- and the equation holds there too (whether
        # such a phase still completes is the arrivals obligation's: ``Facts.residue_varies``)
        hyp2 = mk_and(hyp, re_ if re_ is not None else z3.BoolVal(True))
        r, m = chk.prove(hyp2, want == total)
        if r == "proved":
            proved.append(group)
            continue
        if r == "unknown":
            return _ob("tx bytes", "unknown", f"{L(e.instr)}: solver gave no answer", t0, [L(e.instr)])
        approx = chk.syms(want, total, hyp2) & chk.env.approx
        # the first iteration of every loop (each loop's entry, reached whenever the site is): a
        # mismatch there is a real one even where later iterations are over-approximated
        first = chk.first_counterexample(e.loops, want, total, hyp2, e_addr)
        if first is not None:
            m, (want, total, hyp2, e_addr) = first
            approx = set()
        exp_v = m.eval(want, model_completion=True).as_long()
        got_v = m.eval(total, model_completion=True).as_long()
        if approx:
            return _ob("tx bytes", "unknown", f"{L(e.instr)}: expected bytes may differ from the copied "
                       "bytes, but only for approximated values", t0, [L(e.instr)])
        its = {info.name: m.eval(k, model_completion=True).as_long() for info, k in e.loops}
        cex = {"rule": MB.TX_MISMATCH.id, "expected_bytes": exp_v, "copied_bytes": got_v,
               "iterations": its, "barrier_address": m.eval(e_addr, model_completion=True).as_long(),
               "copies": [str(L(c.instr)) for c in mine], "location": str(L(e.instr))}
        msg = (f"{', '.join(str(L(x.instr)) for x in group)} announce{'s' if len(group) == 1 else ''} {exp_v} "
               f"tx bytes on the barrier at shared address {cex['barrier_address']:#x} but the copies "
               f"signalling it in the same phase deliver {got_v} ({', '.join(cex['copies']) or 'none'})"
               + (f"; iterations {its}" if its else ""))
        if any(c.mask is not None for c in mine):  # name the receiving CTA of the counterexample
            cta = tuple(m.eval(a, model_completion=True).as_long() for a in chk.env.ctaid)
            rank = m.eval(chk.env.special("%cluster_ctarank"), model_completion=True).as_long()
            cex.update(cta=list(cta), cluster_rank=rank)
            msg += f"; in CTA ({cta[0]},{cta[1]},{cta[2]}), cluster rank {rank}"
        msg, cex = chk.with_params(msg, cex, m)
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


def _unheld(chk: Facts, group, hyp):
    """The first separate ``mbarrier.expect_tx`` of ``group`` (one phase's expect-tx sites) that no
    arrival of its own threads holds back: a phase completes once its pending arrivals and its
    tx-count are both zero, so an expect-tx counts in the phase its site is grouped with only if it
    comes before the arrival that may complete that phase. It does when every thread posting it
    also arrives on the same barrier in the same phase after it (program order, same iteration);
    ``mbarrier.arrive.expect_tx`` posts its expect-tx before its arrive-on (§9.7.13.15, phase completion,
    arrive-on)."""
    arrs = [s for s in chk.sites if s.kind == "arrive" and s.addr is not None]
    own = chk.env.special("%cluster_ctarank")

    def mine(a):  # a local arrive, or a remote one (mapa) on this CTA's own barrier
        return a.rank is None or own is not None and chk.prove(mk_and(hyp, a.pc), a.rank == own)[0] == "proved"

    for x in group:
        if x.kind != "expect_tx":
            continue
        mates, bad = chk.phase_mates(x, arrs, hyp)
        held = mates is not None and any(
            chk.seq(a) > chk.seq(x) and chk.matches(a.addr, x.addr, hyp) == "same"
            and chk.prove(mk_and(hyp, x.pc), a.pc)[0] == "proved" and mine(a) for a in mates)
        if not held:
            return x
    return None


def _multicast_bytes(chk: Facts, e, mcast, hyp, re_, used):
    """The bytes the multicast copies of ``e``'s phase deliver to this CTA's barrier (a BV32
    term) and ``e``'s barrier address as the copies were compared with it (in a ring's forms,
    ``Facts.ring_view``), summed over the CTAs of the cluster (§9.7.9.27 cp.async.bulk.tensor
    ``.multicast::cluster``: the CTA of rank r receives the data and the complete-tx on the
    barrier at the same offset when bit r of the issuer's ctaMask is set), or an unknown
    obligation. Each peer's copy is the site's terms with the peer's CTA index."""
    L = chk.loc
    total, e_addr = z3.BitVecVal(0, 32), e.addr
    rank = chk.env.special("%cluster_ctarank")
    for c in mcast:
        if not chk.same_iteration(c, e):
            continue
        sep = chk.separated(e, c, hyp)
        if sep is None:
            return _ob("tx bytes", "unknown", f"cannot decide whether {L(c.instr)} signals the barrier of "
                       f"{L(e.instr)} in the same phase", 0.0, [L(c.instr), L(e.instr)])
        if sep:
            continue
        if c.size is None:
            return _ob("tx bytes", "unknown", f"{L(c.instr)}: copy size unknown ({c.size_reason})", 0.0,
                       [L(c.instr)])
        if rank is None:
            return _ob("tx bytes", "unknown", f"{L(c.instr)}: a multicast copy and no launch gives the cluster shape",
                       0.0, [L(c.instr)])
        terms, (mine_addr,), same, assume = chk.peer_terms([c, e], (c.pc, c.addr, c.size, c.mask), hyp, (e.addr,))
        if assume == RING_IN_STEP:
            e_addr = mine_addr
        for pos in chk.cluster_positions():
            t = chk.at_peer(pos, *terms, same=same)
            if t is None or t[1] is None:
                return _ob("tx bytes", "unknown", f"{L(c.instr)}: the multicast copy's mask, size, barrier or "
                           "issuing threads depend on values of the issuing CTA's own run, which the encoding does "
                           "not carry over to the other CTAs of the cluster", 0.0, [L(c.instr)])
            pc_p, addr_p, size_p, mask_p = t
            m = chk.matches(addr_p, mine_addr, hyp)
            if m == "different":
                continue
            if m is None:
                return _ob("tx bytes", "unknown", f"cannot decide whether the multicast copy {L(c.instr)} of the CTA "
                           f"at cluster position {pos} signals the barrier of {L(e.instr)}", 0.0,
                           [L(c.instr), L(e.instr)])
            n, rc = chk.count_at_peer(terms[0], pos, same)
            if n is None:
                return _ob("tx bytes", "unknown", f"{L(c.instr)}: cannot count the issuing threads of the CTA at "
                           f"cluster position {pos} ({rc})", 0.0, [L(c.instr)])
            used.add(id(c))
            if not n:
                continue
            if re_ is not None and chk.prove(hyp, rc == re_)[0] != "proved":
                return _ob("tx bytes", "unknown", f"{L(c.instr)} of the CTA at cluster position {pos} and "
                           f"{L(e.instr)} may run in different iterations or paths", 0.0, [L(c.instr), L(e.instr)])
            if c.loops:
                chk.assumptions.add(assume)
            mine = z3.Extract(0, 0, z3.LShR(mask_p, rank)) == 1
            total = total + z3.If(mine, size_p * n, z3.BitVecVal(0, 32))
    return total, e_addr
