"""The op table: rows, lookup by longest dotted prefix, modifier forms, operand widths,
check functions, opaque ops; and no instruction-name tests outside the table."""
import re
from pathlib import Path

import pytest

from kverify.semantics.ir import parse_ptx
from kverify.semantics.ir.nodes import Instr
from kverify.semantics.ir.optable import (OPS, SYNC_EFFECTS, check_instr, form_error, operand_bits,
                                          space_of, split_opcode)

REQUIRED = ["mbarrier.init", "mbarrier.inval", "mbarrier.arrive", "mbarrier.arrive_drop",
            "mbarrier.expect_tx", "mbarrier.complete_tx", "mbarrier.try_wait", "mbarrier.test_wait",
            "cp.async", "cp.async.commit_group", "cp.async.wait_group", "cp.async.bulk",
            "cp.async.bulk.tensor", "cp.async.bulk.commit_group", "cp.async.bulk.wait_group",
            "fence.proxy.async", "fence.mbarrier_init", "membar", "fence", "bar", "barrier",
            "bar.warp.sync", "barrier.cluster", "shfl", "vote", "elect", "wgmma.fence",
            "wgmma.mma_async", "wgmma.commit_group", "wgmma.wait_group", "setmaxnreg", "mapa",
            "atom", "red", "ld", "st", "cvta", "cvt", "add", "mad", "fma", "setp", "selp", "bra",
            "ret", "exit"]


@pytest.mark.parametrize("m", REQUIRED)
def test_required_families_are_rows_with_an_isa_section(m):
    row = OPS[m]
    assert row.section.startswith("9.7.")
    assert row.mnemonic == m


def test_every_row_is_pure_data_with_known_accesses():
    for row in OPS.values():
        for s in row.operands:
            assert s.access in {"def", "use", "load", "store", "update", "addr", "target"}
        assert row.proxy in (None, "generic", "async")


@pytest.mark.parametrize("opcode, family, mods", [
    ("mbarrier.try_wait.parity.shared::cta.b64", "mbarrier.try_wait", ("parity", "shared::cta", "b64")),
    ("mbarrier.arrive.expect_tx.release.cta.shared::cta.b64", "mbarrier.arrive",
     ("expect_tx", "release", "cta", "shared::cta", "b64")),
    ("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes",
     "cp.async.bulk.tensor", ("2d", "shared::cluster", "global", "tile", "mbarrier::complete_tx::bytes")),
    ("cp.async.bulk.commit_group", "cp.async.bulk.commit_group", ()),
    ("cp.async.ca.shared.global", "cp.async", ("ca", "shared", "global")),
    ("barrier.cluster.arrive.release.aligned", "barrier.cluster", ("arrive", "release", "aligned")),
    ("bar.warp.sync", "bar.warp.sync", ()),
])
def test_longest_prefix_lookup(opcode, family, mods):
    assert split_opcode(opcode) == (family, mods, True)


def test_unknown_instruction_is_kept_as_an_opaque_unsupported_op():
    fam, mods, ok = split_opcode("tcgen05.mma.cta_group::1.kind::f16")
    assert (fam, ok) == ("tcgen05", False)
    src = (".version 8.0\n.target sm_90a\n.address_size 64\n.visible .entry k()\n{\n"
           " .reg .b32 %r<3>;\n frobnicate.sync.b32 %r1, %r2;\n ret;\n}\n")
    k = parse_ptx(src, "k.ptx").kernel()
    ins = k.body[0]
    assert (ins.op, ins.mods, ins.supported) == ("frobnicate", ("sync", "b32"), False)
    assert ins.opcode == "frobnicate.sync.b32"


def test_known_family_with_unknown_modifier_is_unsupported():
    assert split_opcode("ld.global.frob.f32")[2] is False


def test_check_functions_report_modifier_rules():
    i = Instr("setp", ("s32",), (None, None, None))
    assert "comparison operator" in check_instr(i)[0]
    i = Instr("ld", ("global", "shared", "f32"), (None, None))
    assert any("more than one state space" in m for m in check_instr(i))
    i = Instr("mbarrier.try_wait", ("parity", "shared::cluster", "b64"), (None, None, None))
    assert any("only operate on .shared::cta" in m for m in check_instr(i))
    i = Instr("cp.async.bulk", ("shared::cluster", "global"), (None, None, None))
    assert any("exactly one of" in m for m in check_instr(i))


def test_state_space_of_memory_ops():
    assert space_of(Instr("ld", ("global", "f32"))) == "global"
    assert space_of(Instr("st", ("shared", "f32"))) == "shared::cta"
    assert space_of(Instr("ld", ("f32",))) == "generic"
    assert space_of(Instr("add", ("s32",))) is None
    assert OPS["cp.async.bulk"].proxy == "async" and OPS["st"].proxy == "generic"


# --------------------------------------------------------------------------- classification
KVERIFY = Path(__file__).resolve().parent.parent / "kverify"
#: Files that may name instructions outside the op table: none.
EXEMPT = ()
#: The op table and the PTX front end are where instruction names belong.
OWNERS = re.compile(r"semantics/ir/(optable|ptx\w*)\.py$")
#: an instruction's family or opcode (``ins.op``, ``instr.opcode``; not a term's ``a.op``)
_INSTR = r"\b(ins|instr|inst|i|s|stmt|x)\.(op|opcode)"
_NAME_TESTS = [
    re.compile(_INSTR + r"\s*(==|!=)\s*[\"']"),
    re.compile(_INSTR + r"\s+(not\s+)?in\s+[(\[{]\s*[\"']"),
    re.compile(_INSTR + r"\.startswith\("),
    re.compile(r"startswith\(\(?\s*[\"'](mbarrier|cp\.async|cp\.|bar|barrier|fence|membar|wgmma|"
               r"tcgen05|ld|st|atom|red|call|bra|ret|exit)\b"),
    re.compile(r"(==|!=)\s*[\"'](bar\.\w+|mbarrier\.[\w:.]+|cp\.async[\w.:]*|wgmma\.[\w.]+|fence\.[\w.:]+)[\"']"),
]
_OP_COMPARE = re.compile(r"\b(opcode|mnemonic)\s*(==|!=|(?:not\s+)?in\s+[(\[{])\s*[\"']([\w.:]+)[\"']")
_STRING = re.compile(r"[\"']([a-z_0-9]+(?:\.[a-z_0-9:]+)+)[\"']")
# a comparison with a column's value (``sync_of(i) == "mbarrier.init"``) is not a name test
_COLUMN = re.compile(r"(sync_of\([^)]*\)|\bsync)\s*(==|!=|(?:not\s+)?in)\s*"
                     r"(\"[^\"]*\"|'[^']*'|\([^)]*\)|\{[^}]*\})")


def _name_tests(path: Path) -> list:
    hits = []
    depth = 0  # inside a ``@handler(...)`` decorator: the handler table is keyed by the row's mnemonic
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if depth or line.lstrip().startswith("@handler("):
            depth += line.count("(") - line.count(")")
            continue
        code = _COLUMN.sub("", line.split("#", 1)[0])
        if any(rx.search(code) for rx in _NAME_TESTS):
            hits.append(f"{n}: {line.strip()}")
            continue
        m = _OP_COMPARE.search(code)
        if m and m.group(3) in OPS:
            hits.append(f"{n}: {line.strip()}")
            continue
        if any(s in OPS and s not in SYNC_EFFECTS for s in _STRING.findall(code)):  # a dotted mnemonic
            hits.append(f"{n}: {line.strip()}")
    return hits


def test_no_instruction_name_tests_outside_the_table():
    found = {}
    for path in sorted(KVERIFY.rglob("*.py")):
        rel = path.relative_to(KVERIFY).as_posix()
        if OWNERS.search(rel) or any(rel.startswith(e) for e in EXEMPT):
            continue
        hits = _name_tests(path)
        if hits:
            found[rel] = hits
    assert not found, "instruction-name tests outside the op table:\n" + "\n".join(
        f"  {f}:{h}" for f, hs in found.items() for h in hs)


def test_the_name_test_grep_sees_the_patterns_it_forbids(tmp_path):
    src = tmp_path / "x.py"
    src.write_text('a = i.op == "ld"\nb = ins.opcode.startswith("mbarrier")\n'
                   'c = x.startswith(("cp.async", "bar"))\nd = op == "bar.sync"\n'
                   'WAIT = ("mbarrier.try_wait", "mbarrier.test_wait")\ne = ins.op in ("ld", "st")\n'
                   'ok = sp.startswith("shared") or cmp == "lt"\n')
    assert [h.split(":")[0] for h in _name_tests(src)] == ["1", "2", "3", "4", "5", "6"]


# --------------------------------------------------------------------------- modifier forms
@pytest.mark.parametrize("opcode, message", [
    ("add.rn.lo.u32", "add.rn.lo.u32: .lo does not apply to add"),
    ("add.lo.f32", "add.lo.f32: .lo does not apply to add"),
    ("add.rn.u32", "add.rn.u32: .rn and .u32 do not go together"),
    ("add.sat.cc.u32", "add.sat.cc.u32: .sat and .cc do not go together"),
    ("ld.global.shared.u32", "ld.global.shared.u32: more than one state space (.global, .shared)"),
    ("ld.global.v2.v4.f32", "ld.global.v2.v4.f32: more than one vector (.v2, .v4)"),
    ("mul.s32", "mul.s32: a mode modifier (.hi, .lo, .wide, ...) is required"),
    ("mul.lo.hi.s32", "mul.lo.hi.s32: more than one mode (.lo, .hi)"),
    ("fma.f32", "fma.f32: a rounding modifier (.rm, .rn, .rp, ...) is required"),
    ("setp.s32", "setp.s32: a comparison operator modifier (.eq, .equ, .ge, ...) is required"),
    ("atom.global.u32", "atom.global.u32: an operation modifier (.add, .and, .cas, ...) is required"),
    ("and.rn.b32", "and.rn.b32: .rn does not apply to and"),
])
def test_modifiers_that_fit_no_form_are_rejected_naming_the_conflict(opcode, message):
    fam, mods, ok = split_opcode(opcode)
    assert ok
    assert f"{opcode}: {form_error(fam, mods)}" == message


@pytest.mark.parametrize("opcode", [
    "add.s32", "add.sat.s32", "add.cc.u32", "add.rn.ftz.sat.f32", "add.rn.f64", "add.f32.bf16",
    "sub.rn.bf16", "mul.wide.u32", "mul.hi.s64", "mul.rn.ftz.f16x2", "mad.lo.cc.u32",
    "mad.hi.sat.s32", "mad.rp.ftz.f32", "mad.f32", "fma.rn.relu.bf16", "div.approx.ftz.f32",
    "div.full.f32", "div.s32", "min.NaN.f16", "max.ftz.NaN.f32", "min.xorsign.abs.bf16",
    "max.relu.s32", "abs.ftz.f32", "neg.s64", "setp.ltu.and.f32", "set.gt.f32.s32",
    "ld.global.nc.L1::no_allocate.v4.f32", "ld.relaxed.gpu.global.u32", "st.shared::cluster.f32",
    "atom.global.add.noftz.f16", "red.shared.xor.b32", "and.pred", "shr.s32", "mov.b64",
    "ld.mmio.relaxed.sys.global.u32", "st.mmio.relaxed.sys.global.u32",
    "atom.acq_rel.gpu.global.cas.b32", "ld.global.L1::evict_last.L2::cache_hint.v4.u32",
])
def test_valid_modifier_combinations_fit_a_form(opcode):
    fam, mods, ok = split_opcode(opcode)
    assert ok and form_error(fam, mods) is None


def test_an_unknown_word_keeps_an_instruction_opaque_rather_than_rejected():
    # a modifier the table has never heard of may be a newer PTX feature
    fam, mods, ok = split_opcode("add.rn.f32x2")
    assert (fam, ok) == ("add", False)


def test_a_rejected_combination_is_a_positioned_kernel_error():
    from kverify.semantics.ir import KernelError
    src = (".version 8.0\n.target sm_90a\n.address_size 64\n.visible .entry k()\n{\n"
           " .reg .b32 %r<3>;\n   add.rn.lo.u32 %r1, %r2, %r2;\n ret;\n}\n")
    with pytest.raises(KernelError) as e:
        parse_ptx(src, "k.ptx")
    assert str(e.value) == "k.ptx:7:4: add.rn.lo.u32: .lo does not apply to add"


@pytest.mark.parametrize("opcode, slot, bits", [
    ("add.s32", 0, 32), ("mul.wide.s32", 0, 64), ("mul.wide.s32", 1, 32), ("mad.wide.u16", 3, 32),
    ("setp.lt.f64", 0, 1), ("setp.lt.f64", 1, 64), ("set.gt.u32.f32", 0, 32), ("set.gt.u32.f32", 1, 32),
    ("shl.b64", 2, 32), ("ld.global.v4.f16", 0, 16), ("ld.global.u8", 1, None),
    ("mbarrier.arrive.shared::cta.b64", 0, 64), ("mbarrier.try_wait.parity.shared::cta.b64", 0, 1),
    ("vote.sync.ballot.b32", 1, 1), ("match.any.sync.b64", 1, 64), ("cvta.to.global.u64", 0, 64),
])
def test_operand_widths_come_from_the_row_and_the_type(opcode, slot, bits):
    fam, mods, ok = split_opcode(opcode)
    assert operand_bits(Instr(fam, mods, (None,) * 4, supported=ok), slot) == bits


def test_control_rows_name_their_flow_and_collectives_their_exchange():
    assert {m: r.flow for m, r in OPS.items() if r.flow} == {
        "bra": "branch", "brx.idx": "branch.indirect", "call": "call", "ret": "return",
        "exit": "exit", "trap": "trap"}
    assert all(r.effect == "control" for r in OPS.values() if r.flow)
    assert OPS["shfl"].collective == "shuffle" and OPS["mma"].collective == "mma"
