"""The op table: rows, lookup by longest dotted prefix, check functions, opaque ops."""
import pytest

from kverify.semantics.ir import parse_ptx
from kverify.semantics.ir.nodes import Instr
from kverify.semantics.ir.optable import OPS, check_instr, space_of, split_opcode

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
