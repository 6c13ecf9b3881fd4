"""Property: print -> parse -> print is a fixed point, and parse(print(m)) == m, on
generated structured IR (hypothesis)."""
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kverify.semantics.ir import SymInt, parse_ir, print_module
from kverify.semantics.ir.nodes import (Addr, Block, Break, Continue, FImm, Guard, If, Imm, InductionVar,
                                Instr, Kernel, Loc, Loop, Module, PairOp, Param, Reg, RegDecl,
                                Sink, Sym, VarDecl, VecOp)
from kverify.semantics.ir.optable import split_opcode
from kverify.semantics.ir.types import Scalar

R = [Reg(f"%r{i}") for i in range(8)]
P = [Reg(f"%p{i}") for i in range(4)]
F = [Reg(f"%f{i}") for i in range(4)]
RD = [Reg(f"%rd{i}") for i in range(4)]

locs = st.builds(Loc, st.sampled_from([None, "k.cu"]), st.integers(0, 500), st.integers(0, 80),
                 st.integers(0, 5000))
r = st.sampled_from(R)
p = st.sampled_from(P)
f = st.sampled_from(F)
rd = st.sampled_from(RD)
imm = st.integers(-(2**31), 2**31 - 1).map(Imm)
fimm = st.integers(0, 2**32 - 1).map(lambda b: FImm(b, 32))
dimm = st.integers(0, 2**64 - 1).map(lambda b: FImm(b, 64))


def _ins(opcode, ops):
    fam, mods, ok = split_opcode(opcode)
    assert ok, opcode
    return st.tuples(*ops).map(lambda o: (fam, mods, tuple(o)))


shapes = st.one_of(
    _ins("add.s32", [r, r, st.one_of(r, imm)]),
    _ins("mad.lo.s32", [r, r, r, imm]),
    _ins("setp.lt.s32", [p, r, st.one_of(r, imm)]),
    _ins("setp.ne.and.s32", [p, r, r, p]),
    _ins("selp.b32", [r, r, imm, p]),
    _ins("mov.f32", [f, st.one_of(f, fimm)]),
    _ins("mov.f64", [st.just(Reg("%fd0")), dimm]),
    _ins("fma.rn.f32", [f, f, f, f]),
    _ins("ld.shared.f32", [f, st.builds(Addr, r, st.integers(-64, 64))]),
    _ins("st.global.f32", [st.builds(Addr, rd, st.integers(0, 64)), f]),
    _ins("ld.global.v2.f32", [st.tuples(f, st.one_of(f, st.just(Sink()))).map(VecOp), st.builds(Addr, rd)]),
    _ins("ld.param.u32", [r, st.builds(Addr, st.just(Sym("k_param_0")))]),
    _ins("mov.u32", [r, st.builds(Sym, st.just("smem"), st.integers(-16, 16))]),
    _ins("elect.sync", [st.builds(PairOp, r, p), st.just(Imm(-1))]),
    _ins("bar.sync", [st.just(Imm(0))]),
    _ins("mbarrier.try_wait.parity.shared::cta.b64", [p, st.builds(Addr, r), r]),
    _ins("mbarrier.arrive.expect_tx.shared::cta.b64", [st.just(Sink()), st.builds(Addr, r), imm]),
    _ins("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes",
         [st.builds(Addr, r), st.builds(Addr, rd, st.just(0), st.tuples(r, r)), st.builds(Addr, r)]),
    _ins("fence.proxy.async.shared::cta", []),
)


@st.composite
def instrs(draw):
    fam, mods, ops = draw(shapes)
    g = draw(st.one_of(st.none(), st.builds(Guard, p, st.booleans())))
    blocking = fam == "mbarrier.try_wait" and g is None and draw(st.booleans())
    return Instr(fam, mods, ops, g, draw(locs), blocking)


atoms = st.sampled_from(["n", "m", "%tid.x", "k_param_1"]).map(SymInt.sym)


@st.composite
def symints(draw, depth=0):
    terms = draw(st.lists(st.tuples(st.integers(-9, 9), st.lists(atoms, max_size=2)), max_size=3))
    out = SymInt.const(0)
    for c, xs in terms:
        t = SymInt.const(c)
        for x in xs:
            t = t * x
        out = out + t
    if depth == 0 and draw(st.booleans()):
        other = draw(symints(depth=1))
        out = getattr(out, draw(st.sampled_from(["floordiv", "mod", "max", "min"])))(
            other if not other.is_const or other.value != 0 else SymInt.const(3))
    return out


@st.composite
def stmts(draw, depth=0, labels=()):
    n = draw(st.integers(0, 4))
    out = []
    for _ in range(n):
        kind = draw(st.sampled_from(["i", "i", "i", "if", "loop", "block", "jump"] if depth < 3 else ["i"]))
        if kind == "i":
            out.append(draw(instrs()))
        elif kind == "if":
            out.append(If(draw(p), draw(st.booleans()), tuple(draw(stmts(depth + 1, labels))),
                          tuple(draw(stmts(depth + 1, labels))), draw(locs)))
        elif kind == "loop":
            lab = f"$L{depth}_{len(out)}"
            ivs = tuple(InductionVar(x, draw(symints()), draw(symints()))
                        for x in draw(st.lists(r, max_size=2, unique=True)))
            trip = draw(st.one_of(st.none(), symints()))
            out.append(Loop(lab, tuple(draw(stmts(depth + 1, labels + (("c", lab),)))), ivs, trip, draw(locs)))
        elif kind == "block":
            lab = f"$B{depth}_{len(out)}"
            out.append(Block(lab, tuple(draw(stmts(depth + 1, labels + (("b", lab),)))), draw(locs)))
        elif labels:
            k, lab = draw(st.sampled_from(labels))
            out.append((Continue if k == "c" else Break)(lab, draw(locs)))
    return out


@st.composite
def modules(draw):
    body = tuple(draw(stmts()))
    regs = (RegDecl(Scalar("b32"), "%r", 8), RegDecl(Scalar("pred"), "%p", 4),
            RegDecl(Scalar("f32"), "%f", 4), RegDecl(Scalar("b64"), "%rd", 4),
            RegDecl(Scalar("f64"), "%fd0"))
    params = (Param("k_param_0", Scalar("u32")), Param("k_param_1", Scalar("b8"), 64, 128))
    vars_ = (VarDecl("shared", Scalar("b8"), "smem", 16, (1024,)),)
    k = Kernel("k", params, body, regs, vars_, directives=(("reqntid", (128, 1, 1)),))
    return Module("9.0", ("sm_90a",), 64, (k,), (), ((1, "k.cu"),), "k.ptx")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(modules())
def test_print_parse_print_is_a_fixed_point(m):
    text = print_module(m)
    m2 = parse_ir(text, "gen.kvir")
    assert print_module(m2) == text
    assert m2.kernels == m.kernels
