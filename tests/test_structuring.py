"""CFG structuring: loops, ifs, induction variables, trip counts, blocking waits."""
from pathlib import Path

import pytest

from kverify.semantics.ir import KernelError, SymInt, instructions, load_ptx, substitute_params
from kverify.semantics.ir.nodes import Block, Break, If, Instr, Loop
from kverify.semantics.ir.visit import walk

DATA = Path(__file__).parent / "data"


def test_irreducible_flow_is_a_clear_error_at_the_branch():
    with pytest.raises(KernelError) as e:
        load_ptx(DATA / "irreducible.ptx")
    err = e.value
    assert err.line == 19 and "irreducible control flow" in err.message
    assert str(err).startswith(f"{DATA / 'irreducible.ptx'}:19:1: ")


def _loops(k):
    return [s for s, _ in walk(k.body) if isinstance(s, Loop)]


def test_try_wait_retry_loops_become_blocking_waits_inside_the_for_loop():
    k = load_ptx(DATA / "loops.ptx").kernel()
    (loop,) = _loops(k)
    waits = [i for i in instructions(k.body) if i.op == "mbarrier.try_wait"]
    assert len(waits) == 2 and all(w.blocking for w in waits)
    assert waits[0] in loop.body and waits[1] in k.body
    # the two scoped `p` registers clash, so both were renamed apart
    assert waits[0].operands[0].name != waits[1].operands[0].name


def test_induction_variables_and_trip_count_are_symbolic_in_the_parameters():
    k = load_ptx(DATA / "loops.ptx").kernel()
    (loop,) = _loops(k)
    assert loop.kind == "for"
    ivs = {iv.reg.name: iv for iv in loop.ivs}
    assert ivs["%r2"].init == SymInt.sym("%tid.x") and ivs["%r2"].step == SymInt.const(128)
    n = SymInt.sym("loops_param_1")
    assert loop.trip_count == (n - SymInt.sym("%tid.x") + 127).floordiv(128).max(1)
    assert loop.trip_count.subs({"loops_param_1": 1024, "%tid.x": 5}).value == 8


def test_guarded_entry_check_becomes_an_if_around_the_loop():
    k = load_ptx(DATA / "loops.ptx").kernel()
    ifs = [s for s in k.body if isinstance(s, If)]
    assert len(ifs) == 1 and ifs[0].negated and isinstance(ifs[0].then[0], Loop)


def test_substituting_a_parameter_folds_the_trip_count():
    m = load_ptx(DATA / "loops.ptx")
    k = substitute_params(m, m.kernel(), {"loops_param_1": 1000})
    (loop,) = _loops(k)
    assert loop.trip_count.subs({"%tid.x": 0}).value == 8
    movs = [i for i in instructions(k.body) if i.op == "mov" and i.operands[0].name == "%r1"]
    assert len(movs) == 1 and movs[0].operands[1].value == 1000


def _parse(body):
    from kverify.semantics.ir import parse_ptx

    src = (".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry j(.param .u32 a)\n{\n"
           " .reg .pred %p<3>;\n .reg .b32 %r<4>;\n ld.param.u32 %r1, [a];\n" + body + "}\n")
    return parse_ptx(src, "j.ptx").kernel()


def test_two_branches_to_one_join_become_nested_ifs():
    k = _parse(""" setp.eq.s32 %p1, %r1, 0;
 @%p1 bra $L_join;
 setp.eq.s32 %p2, %r1, 1;
 @%p2 bra $L_join;
 add.s32 %r1, %r1, 5;
$L_join:
 add.s32 %r2, %r1, 1;
 ret;
""")
    outer = k.body[2]
    assert isinstance(outer, If) and outer.negated and outer.cond.name == "%p1"
    inner = outer.then[1]
    assert isinstance(inner, If) and inner.negated and inner.then[0].op == "add"
    assert [s.op for s in k.body[3:]] == ["add", "ret"]


def test_early_loop_exit_is_a_break_out_of_a_labelled_block():
    k = _parse(""" mov.u32 %r2, 0;
$L_loop:
 setp.eq.s32 %p1, %r2, %r1;
 @%p1 bra $L_found;
 add.s32 %r2, %r2, 1;
 setp.lt.s32 %p2, %r2, 100;
 @%p2 bra $L_loop;
 mov.u32 %r3, 0;
 ret;
$L_found:
 mov.u32 %r3, 1;
 ret;
""")
    block = k.body[2]
    assert isinstance(block, Block) and block.label == "$B3"  # the not-found exit, unlabelled in PTX
    loop, mov1, ret1 = block.body
    assert isinstance(loop, Loop) and loop.label == "$L_loop"
    guard = loop.body[1]
    assert isinstance(guard, If) and guard.negated
    assert guard.then[-1] == Break("$B3", guard.then[-1].loc)
    assert loop.trip_count is None  # two exits: no closed form
    assert [iv.reg.name for iv in loop.ivs] == ["%r2"]
    assert (mov1.operands[1].value, ret1.op) == (1, "ret")  # found: falls off the loop
    assert [s.op for s in k.body[3:]] == ["mov", "ret"]
    assert k.body[3].operands[1].value == 0


def test_simplified_exit_needs_no_block():
    k = _parse(""" mov.u32 %r2, 0;
$L_loop:
 setp.eq.s32 %p1, %r2, %r1;
 @%p1 bra $L_out;
 add.s32 %r2, %r2, 1;
 setp.lt.s32 %p2, %r2, 100;
 @%p2 bra $L_loop;
$L_out:
 ret;
""")
    loop = k.body[2]
    assert isinstance(loop, Loop)
    guard = loop.body[1]
    assert isinstance(guard, If) and guard.negated and guard.then[-1].then[0].label == "$L_loop"
    assert k.body[3].op == "ret"


@pytest.mark.parametrize("kernel", ["empty_block", "empty_block_two_labels"])
def test_a_branch_to_the_next_instruction_is_no_divergence(kernel, capsys):
    """``@!%p bra L; L: bar.sync 0`` (an empty conditional block): every thread reaches the same
    barrier; the structured body has no ``if`` and the barrier once."""
    import json

    from kverify.verifier.cli import main

    k = load_ptx(DATA / "empty_branch.ptx").kernel(kernel)
    assert not [s for s, _ in walk(k.body) if isinstance(s, If)]
    assert [i.loc.ptx_line for i in instructions(k.body) if i.op == "bar"] == [27 if kernel == "empty_block" else 55]
    rc = main(["check", str(DATA / "empty_branch.ptx"), "--kernel", kernel, "--grid", "1", "--block", "128",
               "--format", "json"])
    rep = json.loads(capsys.readouterr().out)
    assert rc == 0 and rep["verdict"] == "verified"


def test_a_barrier_inside_the_conditional_block_still_diverges(capsys):
    import json

    from kverify.verifier.cli import main

    rc = main(["check", str(DATA / "empty_branch.ptx"), "--kernel", "barrier_in_block", "--grid", "1", "--block",
               "128", "--format", "json"])
    k = json.loads(capsys.readouterr().out)["kernels"][0]
    (o,) = [o for o in k["obligations"] if o["status"] == "violated"]
    assert rc == 1 and o["rule"] == "barrier.divergence" and o["locations"][0]["line"] == 81


def test_a_cfg_mostly_unreachable_is_structured_through_networkx_like_the_plain_walk(tmp_path, monkeypatch):
    """Under half the blocks reachable: structuring takes the networkx graph (the plain-list walk
    would order nodes differently); the dead blocks go, the live code and its loop stay."""
    dead = "".join(f"$D{i}:\n\tadd.s32 %r1, %r1, {i};\n\tbra.uni $D{i + 1};\n" for i in range(6))
    (tmp_path / "dead.ptx").write_text(
        ".version 8.0\n.target sm_90a\n.address_size 64\n"
        ".visible .entry dead(.param .u64 out)\n{\n\t.reg .b32 %r<4>;\n\t.reg .pred %p<2>;\n"
        "\t.reg .b64 %rd<2>;\n\tmov.u32 %r1, 0;\n\tbra.uni $LOOP;\n" + dead + "$D6:\n\tbra.uni $D0;\n"
        "$LOOP:\n\tadd.s32 %r1, %r1, 1;\n\tsetp.lt.s32 %p1, %r1, 10;\n\t@%p1 bra $LOOP;\n"
        "\tld.param.u64 %rd1, [out];\n\tst.global.u32 [%rd1], %r1;\n\tret;\n}\n")
    from kverify.semantics.ir import structure

    walks = []
    monkeypatch.setattr(structure._ReachableGraph, "of",
                        staticmethod(lambda g, of=structure._ReachableGraph.of: walks.append(of(g)) or walks[-1]))
    k = load_ptx(tmp_path / "dead.ptx").kernel()
    assert walks == [None]  # the networkx path
    assert [i.op for i in instructions(k.body)] == ["mov", "add", "setp", "ld", "st", "ret"]
    (loop,) = _loops(k)
    assert [i.op for i in instructions(loop.body) if i.op == "add"] == ["add"]


@pytest.mark.parametrize("kernel,blocks", [
    ("plain", True), ("unsigned_flag", True), ("signed_flag", True), ("invariant_prefix", True),
    # each of these made a buggy pipeline "verified": the loop was taken for a blocking wait
    ("unsigned_never", False),  # -1 compared as .u32 (was compared as a Python int)
    ("and_flag", False),  # setp's combining predicate (was ignored)
    ("flip", False),  # a register the loop carries from one try to the next (was folded once)
])
def test_only_retry_loops_that_block_become_blocking_waits(kernel, blocks):
    k = load_ptx(DATA / "retry_loops.ptx").kernel(kernel)
    (w,) = [i for i in instructions(k.body) if i.op == "mbarrier.try_wait"]
    assert w.blocking is blocks
    assert bool(_loops(k)) is not blocks  # a wait that does not block stays a loop
