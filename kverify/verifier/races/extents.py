"""Buffer extents from the symbolic accesses: how many bytes past each pointer parameter
the threads of one launch can touch, so that a launch given only its grid, block and scalar
arguments (``kverify check --grid --block --arg``, GPUVerify headers with scalar values)
still gets buffers for the interpreter.

For every global access whose address is a pointer parameter plus an offset
(``Access.region == "param:<name>"``), z3 maximizes the end of the access over every
thread of the launch and every loop iteration (the encoding of one symbolic thread,
:mod:`kverify.symbolic`); a buffer is as long as the largest end, in the element type of its
accesses. An offset that can be negative, that depends on a value the encoding cannot know
(a loaded index) or on an unknown scalar, or that exceeds ``LIMIT`` leaves the buffer
unsized, with the reason. An iteration of a loop without a trip count (a grid-stride loop)
counts as reached only when every earlier one took the loop's continue condition.

Asynchronous copies that name their byte count (``cp.async``, ``cp.async.bulk``,
``cp.reduce.async.bulk``) count as accesses of that many bytes at their global operand.
Tensor maps (``.param .b8 x[128]``, and a pointer used as a tensor copy's tensor map) are
not sized: where a tensor lies and its shape are host-side data (``TENSOR_MAP``).
"""
from __future__ import annotations

import z3

from kverify.launch import dtypes, lookup, param_key
from kverify.semantics.ir.nodes import Addr, Sym, where
from kverify.semantics.ir.visit import names_of, reachable_instructions
from kverify.symbolic.budget import SolverBudget
from kverify.symbolic import (Access, Env, Executor, Substitution, Unsupported, fit, mk_and, operand,
                              outside_classic_model, row_of)
from kverify.symbolic.families import is_async

LIMIT = 1 << 28  # bytes per inferred buffer
#: Why a tensor-map parameter is not sized (``--grid/--block/--arg`` give no tensor maps).
TENSOR_MAP = ("a tensor map (its global address, shape, strides and box are host-side data the kernel "
              "does not show): give it under \"tensormaps\" in a launch spec")


class _CopyExecutor(Executor):
    """The symbolic executor, also recording the global side of asynchronous copies that name
    their byte count (``cp.async``, ``cp.async.bulk``, ``cp.reduce.async.bulk``: the row's
    ``size`` operand) as accesses of that many bytes (``sizes``); a global operand of any other
    asynchronous instruction (a tensor copy's tensor map) leaves its parameter unsized
    (``unsized``). Mbarrier operations, fences and waits only havoc their destinations:
    ordering does not matter to how far the addresses reach."""

    def __init__(self, env, check):
        super().__init__(env, check)
        self.sizes: dict = {}  # id(Access) -> byte count term (BV64)
        self.unsized: dict = {}  # param name -> reason

    def async_instr(self, ins, st, guard):
        row = row_of(ins)
        size_op = operand(ins, "size")
        for slot in row.operands if row is not None else ():
            if slot.name not in ("dst", "src"):
                continue
            op = operand(ins, slot.name)
            if not isinstance(op, Addr) or op.base is None:
                continue
            base, region = self.read(st, op.base, None)
            if base is None or z3.is_bool(base) or not region or not region.startswith("param:"):
                continue
            name = region.split(":", 1)[1]
            size = self.read(st, size_op, None)[0] if size_op is not None else None
            if size is None or z3.is_bool(size):
                self.unsized.setdefault(name, f"{ins.opcode} at {where(ins)} names no byte count: {TENSOR_MAP}"
                                        if size_op is None else f"byte count of {ins.opcode} at {where(ins)} "
                                        "not understood")
                continue
            mode = "read" if slot.name == "src" else "write"
            acc = Access(self.seq_of(ins), ins, "global", mode, False, False, region,
                         z3.simplify(fit(base, 64) + op.offset), 0, mk_and(st.pc, guard), st.epoch,
                         tuple(self.loop_stack))
            self.accesses.append(acc)
            self.sizes[id(acc)] = z3.ZeroExt(64 - fit(size, 32).size(), fit(size, 32))
        self.havoc_dests(st, ins, guard)
        return st



def _thread_a_check(env, timeout_s: float):
    """The executor's satisfiability query on thread A: ``f`` with the launch's and thread A's
    constraints, each query within its own budget of ``timeout_s`` solver seconds."""
    def check_a(f):
        r, m = SolverBudget(timeout_s).solve(f, *[c for c, _ in env.shared_constraints + env.constraints_a])
        if r == z3.sat:
            return "sat", m
        return ("unsat" if r == z3.unsat else "unknown"), None

    return check_a


def struct_slots(module, kernel, launch, timeout_s: float = 10.0) -> dict:
    """The 8-byte slots of by-value struct parameters that the kernel uses as global addresses,
    for the parameters ``launch`` gives no bytes for: ``{parameter index: {"pointers": [byte
    offsets], "other_bytes": bool}}`` (whether the kernel reads other bytes of it too, or bytes at
    an offset the walk cannot fix). Found by one run of the symbolic executor: a value loaded from
    the parameter at a fixed offset (``ld.param``, a generic load of a ``__grid_constant__``
    struct, or a copy the thread keeps in local memory) that reaches the address of a global or
    generic access (``Executor.struct_addresses``). A slot only compared, stored or computed
    with is not a pointer: it stays a scalar."""
    unbound = [i for i, p in enumerate(kernel.params)
               if p.array and lookup(launch.args, kernel, i) is None and lookup(launch.tensormaps or {}, kernel, i) is None
               and lookup(launch.buffers, kernel, i) is None]
    if not unbound:
        return {}
    mentioned = set(names_of([i.operands for i in reachable_instructions(module, kernel)], Sym))
    if not any(kernel.params[i].name in mentioned for i in unbound):
        return {}
    env = Env(module, kernel, launch)

    ex = Executor(env, _thread_a_check(env, timeout_s))
    try:
        ex.run()
    except Unsupported:
        return {}
    out = {}
    for i in unbound:
        pname = kernel.params[i].name
        ptrs = sorted(o for n, o in ex.struct_addresses if n == pname)
        if not ptrs:
            continue
        other = any(n == pname and (off is None or off not in ptrs or nbytes != 8) for n, off, nbytes in ex.struct_reads)
        out[i] = {"pointers": ptrs, "other_bytes": other}
    return out


def buffer_extents(module, kernel, launch, timeout_s: float = 10.0) -> tuple[dict, dict]:
    """``({param name: {"dtype", "shape"}}, {param name: reason not sized})`` for the pointer
    parameters ``launch`` gives no buffer for (``launch.buffers`` may be empty)."""
    wanted = {}
    for i, p in enumerate(kernel.params):
        if p.array or p.type.bits != 64 or lookup(launch.buffers, kernel, i) is not None:
            continue
        if lookup(launch.args, kernel, i) is not None:
            continue
        wanted[p.source_name or p.name] = param_key(kernel, i)
    # buffers of pointer fields kverify found in by-value structs (``struct_slots``)
    for info in (getattr(launch, "struct_pointers", None) or {}).values():
        for b in info["pointers"].values():
            if b not in launch.buffers:
                wanted[b] = b
    # tensor-map parameters (``.param .b8 x[N]``) the launch leaves out: nothing in the kernel
    # says what they describe
    maps = {param_key(kernel, i): TENSOR_MAP for i, p in enumerate(kernel.params)
            if p.array and lookup(launch.tensormaps or {}, kernel, i) is None
            and lookup(launch.args, kernel, i) is None and lookup(launch.buffers, kernel, i) is None}
    if not wanted:
        return {}, maps
    odd = next((i for i in reachable_instructions(module, kernel) if outside_classic_model(i) and not is_async(i)),
               None)
    if odd is not None:
        return {}, {**maps, **{k: f"{odd.opcode} at {where(odd)}: its memory effect is not modelled: give the "
                              "buffers in the launch spec" for k in wanted.values()}}
    env = Env(module, kernel, launch)

    ex = _CopyExecutor(env, _thread_a_check(env, timeout_s))
    try:
        ex.run()
    except Unsupported as e:
        return {}, {**maps, **{k: f"accesses not summarized ({e})" for k in wanted.values()}}
    base = [c for c, _ in env.shared_constraints + env.constraints_a]
    ends: dict = {}
    types: dict = {}
    why: dict = {n: r for n, r in ex.unsized.items() if n in wanted}
    for a in ex.accesses:
        if a.space != "global" or not a.region or not a.region.startswith("param:"):
            continue
        name = a.region.split(":", 1)[1]
        if name not in wanted or name in why:
            continue
        term = next((t for pn, (t, p) in env.params.items() if (p.source_name or p.name) == name), None)
        if term is None and name in env.struct_buffers:
            term = env.buffer_base(name)
        if term is None:
            continue
        off = a.addr - term
        # iteration k of a loop without a trip count is reached only if every earlier
        # iteration went on (the loop's continue condition)
        reach = []
        for info, k in a.loops:
            if info.cont_pc is not None and info.trip is None:
                j = z3.BitVec(f"{k}.earlier", k.size())
                reach.append(z3.ForAll([j], z3.Implies(z3.ULT(j, k), z3.substitute(info.cont_pc, (k, j)))))
        bad = _solve(base + reach + [a.pc, z3.Or(off < 0, z3.UGT(off, LIMIT))], timeout_s)
        if bad != "unsat":
            why[name] = (f"offsets of {a.instr.opcode} (line {a.instr.loc.line or a.instr.loc.ptx_line}) are not "
                         f"bounded to [0, {LIMIT}) by the launch" if bad == "sat" else "solver budget spent")
            continue
        width = ex.sizes.get(id(a), a.width)
        if not isinstance(width, int):  # an asynchronous copy's byte count: bounded like the offset
            if _solve(base + reach + [a.pc, z3.UGT(width, LIMIT)], timeout_s) != "unsat":
                why[name] = f"byte count of {a.instr.opcode} (line {a.instr.loc.line or a.instr.loc.ptx_line}) " \
                            f"not bounded to {LIMIT} by the launch"
                continue
        end = _maximize(base + reach + [a.pc], off + width, timeout_s, quantified=bool(reach))
        if end is None:
            why[name] = "solver budget spent"
            continue
        ends[name] = max(ends.get(name, 0), end)
        dt = next((d for d in map(dtypes.of_ptx, a.instr.types()) if d is not None), None) \
            if id(a) not in ex.sizes else None
        if dt is not None:
            types.setdefault(name, dt.name)
    mentioned = set(names_of([i.operands for i in reachable_instructions(module, kernel)], Sym))
    out = {}
    for name, key in wanted.items():
        if name in why:
            continue
        if name not in ends:
            if name in env.struct_buffers:
                why[name] = why.get(name, "no access through it could be summarized")
                continue
            ptx = next(p.name for p in kernel.params if (p.source_name or p.name) == name)
            if ptx not in mentioned:  # never read: any buffer will do
                out[key] = {"dtype": "uint8", "shape": [1]}
            elif name in ex.call_target_params and name not in ex.address_params:
                continue  # a function pointer the kernel calls through, no buffer: its value is the launch's
            else:
                why[name] = "no access through it could be summarized"
            continue
        dt = types.get(name, "uint8")
        esz = dtypes.itemsize(dt)
        out[key] = {"dtype": dt, "shape": [max(1, -(-ends[name] // esz))]}
    return out, {**maps, **{wanted[n]: r for n, r in why.items() if n in wanted}}


def _solve(fs, timeout_s):
    r, _ = SolverBudget(timeout_s).solve(*fs)
    return "sat" if r == z3.sat else "unsat" if r == z3.unsat else "unknown"


def _maximize(fs, term, timeout_s, quantified=False):
    """The largest unsigned value of ``term`` (at most ``LIMIT + 64``) under ``fs``; ``None``
    on a timeout. ``z3.Optimize`` does not take quantifiers: those are searched by halving."""
    if quantified:
        if _solve(fs, timeout_s) != "sat":
            return 0
        lo, hi = 0, LIMIT + 64
        while lo < hi:
            mid = (lo + hi + 1) // 2
            r = _solve(fs + [z3.UGE(term, mid)], timeout_s)
            if r == "unknown":
                return None
            lo, hi = (mid, hi) if r == "sat" else (lo, mid - 1)
        return lo
    o = z3.Optimize()
    o.add(*fs)
    h = o.maximize(term)
    r = SolverBudget(timeout_s).check(o)
    if r == z3.unsat:
        return 0
    if r != z3.sat:
        return None
    v = o.upper(h)
    return v.as_long() if z3.is_bv_value(v) else o.model().eval(term, model_completion=True).as_long()


#: What the representatives' bound says of the CTAs (or clusters) not interpreted, by whether
#: ``prove_in_bounds`` proved their accesses in bounds.
IN_BOUNDS = ("every global and shared access of the other {unit} in bounds (proved); their outputs are not "
             "checked by this run")
NOT_IN_BOUNDS = "memory safety and outputs of the other {unit} are not checked by this run"


def launch_tensor_map(spec, tm: dict):
    """The tensor map a launch spec's entry ``tm`` describes, read as the interpreter reads it
    (``kverify.launch.params.tensormap_spec``, then ``tma.map_from_spec`` with its buffer's shape);
    raises where the launch could not run it."""
    from kverify.launch import params as lparams
    from kverify.semantics.memory_model import tma

    name = tm["buffer"]
    b = spec.buffers[name]
    shape = tuple(int(x) for x in b["shape"])
    return tma.map_from_spec(lparams.tensormap_spec(tm, {name: (0, b["dtype"], shape)}, spec, ["tensormap"]).spec,
                             shape)


def prove_in_bounds(c, spec, timeout_s: float = 10.0) -> tuple[str, tuple | None]:
    """``("", None)`` when z3 proves, over one symbolic thread standing for every thread of the launch
    and every loop iteration it reaches, that each global access of the executor run ``c.ex``
    (a race checker's, ``smt._Checker``) lies inside the launch buffer its pointer comes from and
    each shared access inside one shared variable; and that every tensor map a tensor copy goes
    through describes no byte past its buffer (a copy reads or writes only elements inside the
    map's shape, §5.5.5). Otherwise ``(why not, ctaid)``: an access whose buffer or size is
    unknown, an asynchronous global access that names no tensor map, or an access the solver's
    model puts outside, with the ``%ctaid`` of the model's thread (the encoding
    over-approximates: a CTA to interpret, not a finding)."""
    ex, env, kernel = c.ex, c.env, c.kernel
    if ex.unknown_region_write or any(ex.reasons.values()):
        return "an access outside the encoding", None
    sizes = {}
    for name, b in (spec.buffers or {}).items():
        sizes[name] = _nbytes(b)
    for i, p in enumerate(kernel.params):  # a pointer parameter's buffer by the parameter's names
        b = lookup(spec.buffers or {}, kernel, i)
        if b is not None:
            sizes[p.source_name or p.name] = sizes[p.name] = _nbytes(b)
    copies = [ins for ins, _, _ in getattr(ex, "global_async", ())] + [
        s.instr for s in getattr(ex, "tensor_stores", ())]
    for ins in copies:
        tensor = any(isinstance(o, Addr) and o.coords for o in ins.operands)
        tm = ex.tensor_map(ins)[0] if tensor else None
        if tm is None:
            return f"the global operand of {ins.opcode} at {where(ins)} is not bounded by this check", None
        name = tm.get("buffer")
        if (spec.buffers or {}).get(name) is None:
            return f"the buffer of the tensor map {ins.opcode} at {where(ins)} goes through is unknown", None
        try:
            m = launch_tensor_map(spec, tm)
        except Exception as e:  # noqa: BLE001 - a map the launch cannot run is the interpreter's to report
            return f"the tensor map of {ins.opcode} at {where(ins)} is not understood ({e})", None
        if m.extent_bytes > sizes[name]:
            return (f"the tensor map of {ins.opcode} at {where(ins)} describes {m.extent_bytes} bytes, past the "
                    f"{sizes[name]} bytes of its buffer {name}"), None
    at_launch = Substitution(env.values_from(spec))
    vars_ = [(base, size) for _, base, size in env.shared_vars]
    bad = []  # (access, condition under which it is out of bounds)
    for a in ex.accesses:
        pc = z3.simplify(a.pc)
        if z3.is_false(pc):
            continue
        w = getattr(ex, "sizes", {}).get(id(a), a.width)  # an asynchronous copy's byte count (``_CopyExecutor``)
        if a.space == "global":
            name = a.region.split(":", 1)[1] if (a.region or "").startswith("param:") else None
            if name is None or name not in sizes:
                return f"the buffer of the global access at {where(a.instr)} is unknown", None
            off = a.addr - env.buffer_base(name)
            end = z3.ZeroExt(1, off) + w
            out = z3.Or(off < 0, z3.UGT(end, sizes[name]))
        elif a.space == "shared":
            if any(size is None for _, size in vars_):
                return "the launch gives no size of dynamic shared memory", None
            addr = z3.ZeroExt(1, fit(a.addr, 32))
            out = z3.Not(z3.Or(*[z3.And(z3.UGE(addr, base), z3.ULE(addr + w, base + size)) for base, size in vars_])) \
                if vars_ else z3.BoolVal(True)
        else:
            return f"the {a.space} access at {where(a.instr)} is not bounded by this check", None
        bad.append((a, at_launch(mk_and(pc, out))))
    if not bad:
        return "", None
    r, model = c.solve([z3.Or(*[f for _, f in bad])], SolverBudget(timeout_s, label="in-bounds"), base=c.base())
    if r == "unsat":
        return "", None
    if r != "sat":
        return "the solver did not decide whether every access is in bounds", None
    a = next((a for a, f in bad if z3.is_true(model.eval(f, model_completion=True))), bad[0][0])
    cta = tuple(model.eval(x, model_completion=True).as_long() for x in env.ctaid)
    return f"the {a.space} access at {where(a.instr)} is not shown in bounds (CTA {cta} of z3's model)", cta


def _nbytes(b: dict) -> int:
    n = dtypes.itemsize(b["dtype"])
    for d in b.get("shape") or ():
        n *= int(d)
    return n
