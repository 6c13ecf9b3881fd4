"""``str()`` of IR nodes is the IR text printer: an instruction prints as PTX reads, a kernel
and a module print as ``kverify show`` does, and the module text parses back to the same IR."""
from pathlib import Path

from kverify.semantics.ir import load_module, parse_ir
from kverify.semantics.ir.nodes import Instr, Loop
from kverify.semantics.ir.visit import walk

ZOO = Path(__file__).resolve().parent / "zoo"


def test_str_of_an_instruction_is_its_ptx_text():
    m = load_module(str(ZOO / "vadd" / "vadd.ptx"))
    first = m.kernels[0].body[0]
    assert isinstance(first, Instr) and str(first) == "ld.param.u64 %rd1, [vadd_param_0];"


def test_str_of_a_loop_prints_its_body_and_the_module_round_trips():
    m = load_module(str(ZOO / "gemm_tiled" / "gemm_tiled.ptx"))
    k = m.kernels[0]
    loop = next(s for s, _ in walk(k.body) if isinstance(s, Loop))
    text = str(loop)
    assert text.startswith(f"loop {loop.label}") and text.rstrip().endswith("}")
    assert str(k).startswith(".visible .entry gemm_tiled(")
    again = parse_ir(str(m))
    assert str(again) == str(m)
