"""Equivalence of a candidate kernel against a reference kernel for one launch each.

Owns: the pairing of buffers (by name when both kernels use the same names, else by
position among the buffer parameters), the comparison of the output terms under the
chosen model, and the verdict; counterexamples (inputs from the z3 model or from the
real normal forms, replayed on the interpreter) live in ``counterexample.py``, the bounded
differential-testing fallback in ``testing.py``.

Verdicts (``EquivResult.verdict``):
  ``proved``   every output element is equal for all input values, at this launch
  ``refuted``  an input on which the outputs differ, confirmed by the interpreter
  ``tested``   the proof did not go through; hypothesis-chosen inputs found no difference
  ``unknown``  neither (unsupported construct, data-dependent control flow, timeout)
Every verdict names the model and assumes the kernels are free of data races.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import z3

from kverify.symbolic.budget import SolverBudget

from kverify.launch import lookup, param_key
from kverify.semantics.ir.errors import Unsupported

from . import realterm as R
from .counterexample import _bv, _bv_cex, _probe, _real_cex, _replay, _side_inputs, _unflat, output_names
from . import folds as F
from .algebra import DataDependent, ModelUnsupported, make_algebra
from .symexec import Budget, Executor
from .symexec.terms import TermLog, correspondence
from .testing import _fallback_test
from .witness import STYLES

MODELS = ("real", "bitexact", "int")


@dataclass
class Side:
    """One kernel of the pair."""

    path: str
    module: object
    kernel: object
    spec: object
    launch_path: str | None = None

    @property
    def name(self):
        return self.kernel.name


@dataclass
class EquivResult:
    verdict: str  # proved | refuted | tested | unknown
    model: str
    message: str
    elements: int = 0
    time_s: float = 0.0
    sym_time_s: float = 0.0
    solve_time_s: float = 0.0
    counterexample: dict | None = None
    tested: dict | None = None
    correspondence: list = field(default_factory=list)
    assumptions: list = field(default_factory=list)
    scope: str = ""
    structural: int = 0
    solver: int = 0
    witness_time_s: float = 0.0
    outputs: list = field(default_factory=list)  # the output buffers compared (shared names)
    # (value_terms) the candidate lines whose values a reference line also produced (symexec/terms.py)
    values: list | None = None


def buffer_names(cand: Side, ref: Side) -> tuple[dict, dict]:
    """(candidate key -> shared name, reference key -> shared name)."""
    def keys(side):
        out = []
        for i, p in enumerate(side.kernel.params):
            if lookup(side.spec.buffers, side.kernel, i) is not None:
                out.append(param_key(side.kernel, i))
        return out

    ck, rk = keys(cand), keys(ref)
    rmap = {k: k for k in rk}
    if set(ck) == set(rk):
        return {k: k for k in ck}, rmap
    if len(ck) != len(rk):
        raise ValueError(f"the kernels have different numbers of buffers ({len(ck)} vs {len(rk)}); "
                         f"cannot pair them by position")
    return dict(zip(ck, rk)), rmap


def symbolic_run(side: Side, alg, names, tag, max_steps, progress=None, which="candidate", terms=False):
    """The symbolic run of one side (``terms``: with a ``TermLog`` of the values per line)."""
    if hasattr(side, "symbolic_run"):  # a reference that is not a kernel (torchref.TorchReference)
        return side.symbolic_run(alg, names, tag, max_steps)
    ex = Executor(side.module, side.kernel, side.spec, alg, names, tag, max_steps=max_steps)
    if terms:
        ex.terms = TermLog()
    if progress is not None and progress.enabled:
        ex.on_cta = lambda k, n: progress.update(f"symbolic execution of the {which} ({side.name})", f"CTA {k}/{n}")
    ex.run()
    return ex


def output_count(side: Side, names: dict, outs: list) -> int:
    """Elements of the output buffers ``outs`` (shared names) in one kernel's launch."""
    n = 0
    for i, _p in enumerate(side.kernel.params):
        b = lookup(side.spec.buffers, side.kernel, i)
        if b is not None and names.get(param_key(side.kernel, i)) in outs:
            c = 1
            for d in b["shape"]:
                c *= int(d)
            n += c
    return n


def check_pair(cand: Side, ref: Side, model: str = "real", timeout_s: float = 60.0, cex_dir: str | None = None,
               test_examples: int = 8, seed: int = 0, max_steps: int = 5_000_000, test_on_unknown: bool = True,
               progress=None, witnesses: bool = True, value_terms: bool = False) -> EquivResult:
    """``witnesses``: under ``bitexact``/``int``, run both kernels on the designed inputs of
    :mod:`witness` before symbolic execution and the solver (off only to measure what it saves).
    ``value_terms``: record the values each source line produces and match the candidate's lines
    to the reference's (``EquivResult.values``, :mod:`symexec.terms`; ``kverify audit --ref``)."""
    from .progress import QUIET

    progress = progress or QUIET
    t0 = time.perf_counter()
    assumptions = ["both kernels are free of data races (kverify check establishes this); threads run "
                   "barrier interval by barrier interval and asynchronous copies complete when issued"]
    if model == "real":
        assumptions.append("real model: floats are reals; rounding, .ftz and the error of approximate "
                           "instructions are abstracted (ex2/rcp/lg2 .approx read as exact); narrowing conversions "
                           "stay visible; inputs are finite")
    elif model == "bitexact":
        assumptions.append("bitexact model: IEEE-754 with each instruction's rounding mode; approximate "
                           "instructions are uninterpreted functions of their arguments")
    else:
        assumptions.append("int model: bit-vector semantics")
    scope = _scope(cand, ref)
    try:
        cnames, rnames = buffer_names(cand, ref)
    except ValueError as e:
        return EquivResult("unknown", model, str(e), time_s=time.perf_counter() - t0, assumptions=assumptions,
                           scope=scope)
    alg = make_algebra(model)
    if model != "real" and witnesses:
        # cheap concrete witnesses first: a bitwise difference on designed inputs refutes
        # without symbolic execution or the solver
        tw = time.perf_counter()
        res = _witness(cand, ref, cnames, rnames, model, seed, cex_dir, progress, t0, assumptions, scope,
                       STYLES[:1], "before symbolic execution")
        witness_s = time.perf_counter() - tw
        if res is not None:
            return res
    else:
        witness_s = 0.0
    try:
        ex_c = symbolic_run(cand, alg, cnames, "cand", max_steps, progress, "candidate", value_terms)
        ex_r = symbolic_run(ref, alg, rnames, "ref", max_steps, progress, "reference", value_terms)
    except (Unsupported, DataDependent, ModelUnsupported, R.RealUnsupported, Budget, F.FoldBudget) as e:
        kind = ("control flow or an address depends on input data" if isinstance(e, DataDependent)
                else f"not expressible in the {model} model" if isinstance(e, (ModelUnsupported, R.RealUnsupported))
                else "budget" if isinstance(e, (Budget, F.FoldBudget)) else "unsupported")
        loc = getattr(e, "instr", None)
        where = f" at {_loc(loc)}" if loc is not None and getattr(loc, "loc", None) else ""
        msg = f"symbolic execution stopped ({kind}): {e}{where}"
        res = EquivResult("unknown", model, msg, time_s=time.perf_counter() - t0, assumptions=assumptions,
                          scope=scope, witness_time_s=witness_s)
        res.sym_time_s = res.time_s - witness_s
        outs = None
        if test_on_unknown and not getattr(e, "no_fallback", False):  # (tensor-core sums under bitexact)
            _fallback_test(res, cand, ref, cnames, rnames, model, test_examples, seed, cex_dir, progress=progress)
            outs = (res.tested or {}).get("outputs")
        res.outputs = list(outs if outs is not None else output_names(cand, ref, cnames, rnames))
        res.elements = output_count(ref, rnames, res.outputs)
        res.time_s = time.perf_counter() - t0
        return res
    t1 = time.perf_counter()
    assumptions.extend(_used_assumptions(alg, ex_c, ex_r))
    oc, orf = ex_c.output_terms(), ex_r.output_terms()
    res = EquivResult("proved", model, "", assumptions=assumptions, scope=scope, witness_time_s=witness_s)
    res.sym_time_s = t1 - t0 - witness_s
    if value_terms and getattr(ex_c, "terms", None) is not None and getattr(ex_r, "terms", None) is not None:
        res.values = correspondence(ex_c.terms, ex_r.terms)
    out_names = output_names(cand, ref, cnames, rnames, ex_c.written_buffers() | ex_r.written_buffers())
    res.elements = sum(len(orf.get(n, ())) for n in out_names)
    res.outputs = list(out_names)

    def lines(name, i):
        """(candidate store loc, reference store loc) of output element ``name[i]``."""
        return oc[name][i][1], orf[name][i][1]

    if not out_names:
        res.verdict = "unknown"
        res.message = ("neither kernel stores to any buffer and the launch specs name no outputs: "
                       "nothing to compare")
        res.time_s = time.perf_counter() - t0
        return res
    clobbered = sorted(ex_c.written_buffers() - ex_r.written_buffers() - set(out_names))
    if clobbered:  # (only the outputs were compared: a candidate zeroing its input was proved)
        res.verdict = "unknown"
        res.message = (f"the candidate stores to {', '.join(clobbered)}, which the reference does not write and "
                       f"the launch does not name as an output: its contents after the launch are not compared")
        res.time_s = time.perf_counter() - t0
        return res
    for name in out_names:
        if name not in oc:
            res.verdict = "unknown"
            res.message = f"the candidate has no output buffer paired with {name!r}"
            res.time_s = time.perf_counter() - t0
            return res
        if len(oc[name]) != len(orf[name]):
            res.verdict = "unknown"
            res.message = (f"output {name!r} has {len(oc[name])} elements in the candidate and "
                           f"{len(orf[name])} in the reference")
            res.time_s = time.perf_counter() - t0
            return res
    dtypes = {b.name: b.dtype for b in ex_r.buffers}
    first = None
    pending = []
    corr = {}
    solver = z3.Solver()
    budget = SolverBudget(max(timeout_s, 0.1))  # solver work, not wall-clock time
    timed_out = False
    stop = None
    n_el = res.elements
    # 1. identical terms (normal forms) prove an element at once; the others are collected
    differing = []
    k = 0
    for name in out_names:
        for i, ((cv, cl), (rv, rl)) in enumerate(zip(oc[name], orf[name])):
            k += 1
            if k % 256 == 0:
                progress.update("comparing output elements", f"element {k}/{n_el}")
            cv, rv = alg.as_output(cv, dtypes[name]), alg.as_output(rv, dtypes[name])
            if isinstance(cv, F.Lazy) or isinstance(rv, F.Lazy):  # atomic folds (folds.py)
                st, got = F.compare(cv, rv, seed)
                if st == "equal":
                    res.structural += 1
                    if cl is not None and rl is not None:
                        corr.setdefault(_loc_key(cl), set()).add(_loc_key(rl))
                    continue
                if st == "differ":
                    first = (name, i, cv, rv, cl, rl, got)
                    break
                if st == "budget":
                    timed_out, stop = True, f"{got} (output element {name}[{i}])"
                    break
                cv, rv = got
            if _structurally_equal(cv, rv):
                res.structural += 1
                if cl is not None and rl is not None:
                    corr.setdefault(_loc_key(cl), set()).add(_loc_key(rl))
                continue
            differing.append((name, i, cv, rv, cl, rl))
            if model == "real":
                break  # the first difference is searched for a counterexample (below)
        if (differing and model == "real") or first is not None or timed_out:
            break
    # 2. bitexact/int: the other concrete witness input sets, before the solver
    if first is not None or timed_out:
        differing = []  # a fold comparison decided (or ran out of budget)
    if differing and model != "real" and witnesses:
        tw = time.perf_counter()
        wres = _witness(cand, ref, cnames, rnames, model, seed, cex_dir, progress, t0, assumptions, scope,
                        STYLES[1:], "before the solver", outs=out_names)
        res.witness_time_s += time.perf_counter() - tw
        if wres is not None:
            wres.sym_time_s, wres.structural, wres.values = res.sym_time_s, res.structural, res.values
            wres.witness_time_s = res.witness_time_s
            return wres
    # 3. the solver, element by element, a cheap random probe first
    how = None
    nd = len(differing)
    for j, (name, i, cv, rv, cl, rl) in enumerate(differing):
        if model == "real":
            first = (name, i, cv, rv, cl, rl)
            break
        if budget.exhausted():
            timed_out = True
            pending.append((name, i))
            break
        progress.update("solver", f"element {name}[{i}] ({j + 1}/{nd} whose terms differ)")
        probe = _probe(cv, rv, seed)
        if probe is not None:
            first = (name, i, cv, rv, cl, rl, probe)
            how = "a random probe of the element's terms"
            break
        res.solver += 1
        solver.push()
        solver.add(_bv(cv, rv)[0] != _bv(cv, rv)[1])
        st = budget.check(solver)
        if st == z3.unsat:
            solver.pop()
            if cl is not None and rl is not None:
                corr.setdefault(_loc_key(cl), set()).add(_loc_key(rl))
            continue
        if st == z3.sat:
            model_ = budget.model
            solver.pop()
            assign = {d.name(): model_[d].as_long() for d in model_.decls()
                      if z3.is_bv_value(model_[d])}
            first = (name, i, cv, rv, cl, rl, assign)
            how = "the solver's model"
            break
        solver.pop()
        timed_out = True
        pending.append((name, i))
        break
    progress.clear()
    res.correspondence = [{"candidate": k, "reference": sorted(v)} for k, v in sorted(corr.items())]
    t2 = time.perf_counter()
    res.solve_time_s = t2 - t1
    if first is None and not timed_out:
        res.verdict = "proved"
        res.message = (f"all {n_el} output elements equal for all inputs ({res.structural} by identical "
                       f"normal forms, {res.solver} by the solver)")
        res.time_s = time.perf_counter() - t0
        return res
    if timed_out:
        el = f"{pending[0][0]}[{_unflat(pending[0][1], ex_r, pending[0][0])}]" if pending else "?"
        res.verdict = "unknown"
        res.message = stop or (f"solver budget ({timeout_s:g} solver seconds) spent on output element {el} "
                               f"({res.structural} of {n_el} elements proved by identical normal forms, "
                               f"{res.solver - 1} by the solver; no concrete witness)")
        _fallback_test(res, cand, ref, cnames, rnames, model, test_examples, seed, cex_dir, outs=out_names,
                       lines=lines, progress=progress)
        progress.clear()
        res.time_s = time.perf_counter() - t0
        return res
    # a difference: build inputs, replay on the interpreter
    name, idx = first[0], first[1]
    if model == "real":
        inputs = _real_cex(alg, first[2], first[3], ex_r, seed)
    else:
        inputs = _bv_cex(first[6], ex_r)
    cex = _replay(cand, ref, cnames, rnames, ex_r, inputs, name, idx, model, cex_dir, first[4], first[5],
                  lines=lines, outs=out_names)
    if cex is not None and cex.get("confirmed"):
        cex["found_by"] = "random small integers on the normal forms" if model == "real" else how
    if cex is not None and cex.get("confirmed"):
        res.verdict = "refuted"
        res.counterexample = cex
        res.message = (f"{cex['buffer']}[{_unflat(cex['index'], ex_r, cex['buffer'])}] differs: candidate "
                       f"{cex['candidate_value']}, reference {cex['reference_value']}")
    else:
        detail = ""
        if model == "real":
            detail = (f"; normal forms differ at {name}[{idx}]: candidate {R.show(first[2], alg.A, 3)} vs "
                      f"reference {R.show(first[3], alg.A, 3)}")
        res.verdict = "unknown"
        res.message = "the outputs' terms differ but no input confirmed the difference on the interpreter" + detail
        _fallback_test(res, cand, ref, cnames, rnames, model, test_examples, seed, cex_dir, outs=out_names,
                       lines=lines, progress=progress)
        progress.clear()
    res.time_s = time.perf_counter() - t0
    return res


def _witness(cand, ref, cnames, rnames, model, seed, cex_dir, progress, t0, assumptions, scope, styles, when,
             outs=None):
    """The concrete witnesses of :mod:`witness` (bitexact/int) for the input sets ``styles``;
    a ``refuted`` result when one is confirmed, else None (and the proof attempt goes on).
    ``outs``: the output buffers when known (else from the launch specs or a run)."""
    from .testing import _Bufs, _shrink, changed_buffers
    from .witness import find_witness, shadow_lines

    tw = time.perf_counter()
    buffers = _Bufs(ref, rnames).buffers
    try:
        if outs is None:
            outs = output_names(cand, ref, cnames, rnames, None if (ref.spec.outputs or cand.spec.outputs)
                                else changed_buffers(cand, ref, cnames, rnames, seed))
    except Exception:  # noqa: BLE001 - the interpreter cannot run them: no cheap witness
        return None
    found = find_witness(cand, ref, cnames, rnames, buffers, outs, model, seed, progress=progress, styles=styles)
    if found is None:
        return None
    name, idx, inputs, style = found
    progress.update("concrete witness found", f"{name}[{idx}]: shrinking the inputs")
    small = _shrink(cand, ref, cnames, rnames, inputs, name, idx, model)
    ex_like = _Bufs(ref, rnames)

    # the confirming runs keep the race shadow, which knows the last store to every byte
    runs, lines = shadow_lines(cand, ref, cnames, rnames, small)
    cex = _replay(cand, ref, cnames, rnames, ex_like, small, name, idx, model, cex_dir, None, None,
                  lines=lines, outs=outs, runs=runs)
    progress.clear()
    if not cex or not cex.get("confirmed"):
        return None
    cex["found_by"] = f"concrete witness {when} (input set {style!r})"
    res = EquivResult("refuted", model, "", assumptions=assumptions, scope=scope, counterexample=cex,
                      outputs=list(outs), elements=output_count(ref, rnames, outs))
    res.witness_time_s = time.perf_counter() - tw
    res.message = (f"{cex['buffer']}[{_unflat(cex['index'], ex_like, cex['buffer'])}] differs: candidate "
                   f"{cex['candidate_value']}, reference {cex['reference_value']}")
    res.time_s = time.perf_counter() - t0
    return res


# ---------------------------------------------------------------------- helpers
def _used_assumptions(alg, ex_c, ex_r) -> list:
    """The side conditions the normal forms used in this comparison (see realterm)."""
    out = []
    A = getattr(alg, "A", None)
    if A is not None and A.nonzero:
        shown = [R.show(p, A, 3) for p in list(A.nonzero)[:3]]
        more = f" and {len(A.nonzero) - 3} more" if len(A.nonzero) > 3 else ""
        out.append(f"real model: nonzero denominators: inv(d)*d = 1 was used for d = {'; '.join(shown)}{more}")
    if A is not None and A.log2e_read:
        out.append("real model: inside an exponent, a float rounding of log2(e) is read as log2(e) ("
                   + ", ".join(sorted(A.log2e_read)) + ")")
    for ex, who in ((ex_c, "candidate"), (ex_r, "reference")):
        if getattr(ex, "gvars_read", None):
            out.append(f"{who}: module-scope .global variables {', '.join(sorted(ex.gvars_read))} hold their "
                       f"initializers (no store to them was executed)")
    return out


def _scope(cand, ref):
    def one(s):
        if hasattr(s, "scope_text"):
            return s.scope_text()
        g, b = s.spec.grid, s.spec.block
        args = ", ".join(f"{k}={v}" for k, v in s.spec.args.items())
        return f"{s.name} grid {g[0]}x{g[1]}x{g[2]} block {b[0]}x{b[1]}x{b[2]}" + (f" ({args})" if args else "")
    return f"concrete launch: {one(cand)}; {one(ref)}"


from kverify.semantics.ir.nodes import where as _loc  # noqa: E402


def _loc_key(loc):
    return _loc(loc)


def _structurally_equal(a, b):
    if type(a) is int or type(b) is int:
        return type(a) is type(b) and a == b
    if isinstance(a, z3.ExprRef) or isinstance(b, z3.ExprRef):
        return isinstance(a, z3.ExprRef) and isinstance(b, z3.ExprRef) and a.eq(b)
    return a == b if type(a) is type(b) else (a is b)

