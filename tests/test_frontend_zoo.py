"""Every PTX file of the zoo (ours and Triton's) parses, structures and round-trips."""
import json

import pytest

from conftest import ROOT, ZOO, zoo_manifests, zoo_ptx_files, zoo_variants
from kverify.semantics.ir import instructions, load_ptx, parse_ir, print_module
from kverify.semantics.ir.nodes import Loop

PTX = zoo_ptx_files()
TESTS = ROOT / "tests"
#: Every PTX file the tests read: the zoo, the conformance kernels, tests/data.
ALL_PTX = sorted(set(PTX) | set((TESTS / "conformance").rglob("*.ptx")) | set((TESTS / "data").glob("*.ptx")))
#: Files that are bad input on purpose, with the error they must give.
BAD_ON_PURPOSE = {"irreducible.ptx": "irreducible control flow"}


@pytest.mark.parametrize("path", ALL_PTX, ids=lambda p: str(p.relative_to(TESTS)))
def test_every_ptx_file_of_the_tests_parses_under_the_op_table_forms(path):
    from kverify.semantics.ir import KernelError
    if path.name in BAD_ON_PURPOSE:
        with pytest.raises(KernelError, match=BAD_ON_PURPOSE[path.name]):
            load_ptx(path)
        return
    assert load_ptx(path).kernels


def test_zoo_has_the_required_kernels():
    fams = {m.parent.name for m in zoo_manifests()}
    assert len(fams) >= 20
    for f in ("vadd", "reduce_smem", "gemm_tiled", "transpose", "softmax", "cp_async_gemm",
              "bulk_pipeline", "named_barrier", "tma_store", "wgmma_tile", "cluster_arrive", "triton"):
        assert f in fams
    triton = json.loads((ZOO / "triton" / "manifest.json").read_text())
    files = {v["file"] for v in triton["variants"]}
    assert {"add.ptx", "matmul.ptx", "tma_matmul.ptx"} <= files


@pytest.mark.parametrize("family, variant", zoo_variants(), ids=lambda x: getattr(x, "name", None) or x.get("file", "?"))
def test_manifest_entries_point_at_real_kernels(family, variant):
    f = family / variant["file"]
    ptx = f.with_suffix(".ptx") if f.suffix == ".cu" else f
    assert ptx.is_file()
    m = load_ptx(ptx)
    assert variant["kernel"] in {k.name for k in m.kernels}
    if variant.get("bug"):
        assert variant["correct"] is False and variant["bug"]["rule"]


@pytest.mark.parametrize("path", PTX, ids=lambda p: str(p.relative_to(ZOO)))
def test_zoo_ptx_parses_structures_and_round_trips(path):
    m = load_ptx(path)
    assert m.kernels
    for k in m.kernels:
        ins = list(instructions(k.body))
        assert ins, k.name
        assert all(i.supported for i in ins), [i.opcode for i in ins if not i.supported]
        assert not any(i.op == "bra" for i in ins), "branches must be structured away"
    text = print_module(m)
    m2 = parse_ir(text, str(path) + ".kvir")
    assert print_module(m2) == text
    assert m2.kernels == m.kernels


def test_every_try_wait_loop_in_the_zoo_becomes_a_blocking_wait():
    for path in PTX:
        if path.name in ("peek_pipeline__missing_wait.ptx", "bulk_pipeline__wait_flips_parity.ptx"):
            continue  # their seeded bugs: a lone non-blocking probe; a retry loop that does not block
        m = load_ptx(path)
        for k in m.kernels:
            for i in instructions(k.body):
                if i.op == "mbarrier.try_wait":
                    assert i.blocking, f"{path}:{i.loc.ptx_line}"


def test_pipeline_loops_have_induction_variables():
    m = load_ptx(ZOO / "bulk_pipeline" / "bulk_pipeline.ptx")
    loops = [s for s in _walk_loops(m.kernels[0].body)]
    assert len(loops) == 2
    assert all(lp.kind == "for" and lp.trip_count is not None for lp in loops)


def _walk_loops(stmts):
    from kverify.semantics.ir.visit import walk

    for s, _ in walk(stmts):
        if isinstance(s, Loop):
            yield s
