"""The values atomics return, for the two-thread race check: what an ``atom.add``'s result can
be when the result indexes memory (``j = atomicAdd(c, k); A[j] = ...``).

The symbolic executor gives an atomic's result a fresh approximate symbol per thread
(``AtomicResult``): sound, but a race that rests on it is only ever ``unknown``. Two facts refine
it, each for an ``atom.add`` *site* that is the only instruction of the kernel writing its
address (every other write of the buffer is shown by z3 not to overlap it for any two threads,
and no write goes to a buffer the encoding cannot name), outside any loop (one execution per
thread), on global memory:

- **Ticket counter (for proofs).** With the same nonzero constant increment ``k`` for every
  thread and a launch of N threads (at most N executions on one address, N-1 < 2^w / |k| for
  a w-bit integer counter, ``.u32``/``.s32``/``.u64``/``.s64``: a floating-point add is none),
  the executions on one address return ``init + p*k`` for distinct positions ``p`` in 0..N-1:
  two distinct threads' results on one address differ by a nonzero multiple
  ``d*k`` of the increment with ``|d| <= N-1`` (``ticket_constraints``). The proof's text states
  this assumption (``Ticket.note``). An increment of 0, one that differs per thread (``k =
  tid``), another write of the counter, an ``atom.exch`` / ``atom.cas``: not a ticket counter.
- **Atomic order (for violations).** Any execution may schedule thread A's and thread B's
  executions of the site first and second on their address (the site's barrier interval is
  the same for every thread, so no barrier orders another thread's execution before theirs):
  the first returns the address's initial contents (an input, any value), the second that
  plus the first's increment (``witness``). A race the over-approximated results leave open is
  a violation when it holds for every value of the remaining approximated symbols under one
  such order; the counterexample names the order and the values returned.

PTX ISA (9.0): §9.7.13.5 atom (the operation is performed atomically on the addressed location:
each execution reads the value the previous one left); §8 memory consistency model.
"""
from __future__ import annotations

from dataclasses import dataclass

import z3

from kverify.symbolic import mk_and, mk_or

MAX_PAIRS = 64  # other writes of a counter's buffer compared with it


@dataclass
class Site:
    """An ``atom.add`` site the refinements apply to: ``result`` (thread A's symbol) and
    ``result_b`` (B's), the access, the increment terms of both threads, its line."""

    index: int
    result: object
    result_b: object
    access: object
    operand: object
    operand_b: object
    line: str
    ticket: bool = False
    increment: int | None = None  # the constant increment, signed (tickets)
    executions: int | None = None  # at most this many executions on one address (tickets)

    def note(self) -> str:
        bits, k, n = self.result.size(), self.increment, self.executions
        return (f"atom.add at {self.line} is a ticket counter: the only write of its address, increment {k} for "
                f"every thread, at most {n} executions on one address (the launch's {n} threads x 1 per thread; "
                f"{n - 1} x {abs(k)} < 2^{bits}), so two threads' results on one address differ by a nonzero "
                f"multiple of {abs(k)}")


def prepare(c) -> list:
    """The ``Site`` of each eligible ``atom.add`` of the checker's run (module docstring)."""
    ex, env = c.ex, c.env
    out = []
    if ex.unknown_region_write:
        return out
    for i, r in enumerate(ex.atomic_results):
        acc = r.access
        if r.op != "add" or r.operand is None or acc.loops or acc.space != "global" or acc.region is None:
            continue
        if not any(m in ("u32", "s32", "u64", "s64") for m in acc.instr.mods):
            continue  # a floating-point add is no counter: 1.0f + 1.0f repeats at 2**24, a subnormal flushes to zero
        if not z3.is_bv_value(z3.simplify(acc.epoch)):
            continue  # executions in different barrier intervals: one may be ordered before another
        if not _sole_writer(c, acc):
            continue
        line = f"line {acc.instr.loc.line}" if acc.instr.loc.line else f"ptx line {acc.instr.loc.ptx_line}"
        s = Site(i, r.result, c.b(r.result), acc, r.operand, c.b(r.operand), line)
        k = r.operand
        bits = k.size()
        n = _threads(env)
        if z3.is_bv_value(k) and n is not None:
            kv = k.as_long()
            ks = kv - (1 << bits) if kv >> (bits - 1) else kv
            if ks != 0 and (n - 1) * abs(ks) < (1 << bits):
                s.ticket, s.increment, s.executions = True, ks, n
        out.append(s)
    return out


def _threads(env):
    if env.grid is None or env.block is None:
        return None
    n = 1
    for x in tuple(env.grid) + tuple(env.block):
        n *= int(x)
    return n


def _sole_writer(c, acc) -> bool:
    """Whether no other write of the kernel (by any thread, thread A's own included) may touch
    the bytes ``acc`` updates: same buffer, z3 shows the byte ranges apart."""
    others = [a for a in c.ex.accesses if a is not acc and a.writes and a.space == acc.space
              and (a.region is None or a.region == acc.region)]
    if any(a.region is None for a in others) or len(others) > MAX_PAIRS:
        return False
    if not others:
        return True
    base = c.base()
    b_addr, b_pc = c.b(acc.addr), c.b(acc.pc)
    w = acc.addr.size()
    for a in others:
        x, y = a.addr, b_addr
        overlap = mk_or(z3.ULT(y - x, z3.BitVecVal(a.width, w)), z3.ULT(x - y, z3.BitVecVal(acc.width, w)))
        # B executes the counter's atomic, A the other write; B may be A itself
        r, _ = c.solve([a.pc, b_pc, overlap], c.setup_budget, want_model=False, base=base)
        if r != "unsat":
            return False
    return True


def ticket_constraints(c, sites) -> list:
    """``(constraint, keys)`` per ticket site: for two distinct threads that both execute it on
    one address, ``r_A - r_B == d*k`` with ``d`` nonzero in ``[-(N-1), N-1]`` (``d`` an
    approximate symbol)."""
    env = c.env
    out = []
    for s in sites:
        if not s.ticket:
            continue
        bits = s.result.size()
        d = z3.BitVec(f"ticket{s.index}.d", 64)
        env.approx.add(str(d))
        n1 = s.executions - 1
        step = z3.Extract(bits - 1, 0, d * z3.BitVecVal(s.increment & ((1 << 64) - 1), 64))
        both = mk_and(mk_or(c.tid_ne, c.cta_ne), s.access.pc, c.b(s.access.pc), s.access.addr == c.b(s.access.addr))
        f = z3.Implies(both, z3.And(d != 0, d >= -n1, d <= n1, s.result - s.result_b == step))
        out.append((f, frozenset({str(s.result), str(s.result_b)})))
    return out


def witness(c, sites, formulas) -> tuple:
    """``(equations, orders, small)``: for each site whose results ``formulas`` mention, thread A's
    and B's results under the order in which their executions are the first two on their address
    (``orders``: ``(site, order symbol, initial-value term, same-address condition)``, for the
    counterexample); ``small`` asks for initial values 0 (tried first: a readable counterexample)."""
    names = set()
    for f in formulas:
        names |= c.symbols(f)
    eqs, orders, small = [], [], []
    for s in sites:
        if str(s.result) not in names and str(s.result_b) not in names:
            continue
        bits = s.result.size()
        init = z3.Function(f"atominit{s.index}", z3.BitVecSort(s.access.addr.size()), z3.BitVecSort(bits))
        first_a = z3.Bool(f"atomorder{s.index}")  # thread A's execution first
        xa, xb = s.access.addr, c.b(s.access.addr)
        both = mk_and(xa == xb, s.access.pc, c.b(s.access.pc))
        wa = z3.If(both, z3.If(first_a, init(xa), init(xa) + s.operand_b), init(xa))
        wb = z3.If(both, z3.If(first_a, init(xb) + s.operand, init(xb)), init(xb))
        eqs += [s.result == wa, s.result_b == wb]
        orders.append((s, first_a, init(xa), both))
        small += [init(xa) == 0, init(xb) == 0]
    return eqs, orders, small


def describe(c, orders, model) -> tuple[str, list]:
    """The text and the counterexample entries of a witness's atomic results under ``model``."""
    def val(e):
        v = model.eval(e, model_completion=True)
        return z3.is_true(v) if z3.is_bool(v) else v.as_long()

    env = c.env

    def who(sub):
        t, b = [val(sub(x)) for x in env.tid], [val(sub(x)) for x in env.ctaid]
        return f"tid=({t[0]},{t[1]},{t[2]}) ctaid=({b[0]},{b[1]},{b[2]})"

    ta, tb = who(lambda e: e), who(c.b)
    parts, ce = [], []
    for s, first_a, init, both in orders:
        ra, rb = val(s.result), val(s.result_b)
        if val(both):
            first, second = (ta, tb) if val(first_a) else (tb, ta)
            parts.append(f"atom.add at {s.line} returned {ra} to {ta} and {rb} to {tb} (the address's initial "
                         f"value {val(init)}; {first}'s atomic first, then {second}'s)")
            order = "A" if val(first_a) else "B"
        else:
            parts.append(f"atom.add at {s.line} returned {ra} to {ta} and {rb} to {tb} (different addresses)")
            order = None
        ce.append({"location": s.line, "returned": {"A": ra, "B": rb}, "first": order})
    return "; ".join(parts), ce
