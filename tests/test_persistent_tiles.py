"""The symbolic engine on a persistent kernel in CUTLASS's tile-scheduler idiom
(tests/data/persistent/persistent_tiles.cu): tile coordinates carried across iterations and
recomputed from the linear tile index at the loop's end (``LoopSummaries._functional_forms``),
the iterations past the last tile kept out of every query (``LoopSummaries._reached``, also
where the 32-bit tile index wraps), and the warp index broadcast by ``shfl.sync.idx``
(``InstructionSemantics.shuffle``). With all three the race checker proves the kernel's global
stores race-free for the launch; its seeded twins are violated (one statically, one by the run),
never proved. A by-value struct read with a vector ``ld.param`` keeps its pointer fields."""
from __future__ import annotations

import z3

import kverify
from kverify.launch import resolve
from kverify.semantics.ir.load import load_module
from kverify.symbolic.budget import SolverBudget
from kverify.verifier.races.smt import _Checker, check_races

D = "tests/data/persistent"
LAUNCH = f"{D}/launch.json"


def _races(variant: str):
    f = f"{D}/persistent_tiles{variant}.ptx"
    m = load_module(f)
    k = m.kernel("persistent_tiles")
    return {o.title: o for o in check_races(m, k, resolve(LAUNCH, f, k.name).spec)}


def test_the_persistent_kernel_is_race_free_for_every_tile_it_takes():
    glob = _races("")["race-free: global"]
    assert glob.status == "proved", glob.message
    assert glob.message.startswith("no two distinct threads access the same global bytes in one barrier interval "
                                   "with a write (7 accesses, 28 pairs)")
    rep = kverify.check(f"{D}/persistent_tiles.ptx", launch=LAUNCH)
    assert rep.verdict == "verified"
    assert rep.obligation("race.global").status == "proved"


def test_a_step_that_meets_another_ctas_tile_is_a_race_between_ctas():
    glob = _races("__step_overlap")["race-free: global"]
    assert glob.status == "violated"
    assert "persistent_tiles.cu:33:7" in glob.message and "different CTAs (never ordered by bar.sync)" in glob.message


def test_a_next_tile_computed_another_way_is_not_proved_and_the_run_finds_the_race():
    glob = _races("__shifted_next")["race-free: global"]
    assert glob.status == "unknown"  # m no longer follows the tile index: it is over-approximated
    rep = kverify.check(f"{D}/persistent_tiles__shifted_next.ptx", launch=LAUNCH)
    assert rep.verdict == "violated"
    race = [f for f in rep.findings if f.rule == "race.global"][0]
    assert race.locations[0].line == 33 and "CTA (4,0,0)" in race.message and "CTA (0,0,0)" in race.message


def test_iterations_past_the_last_tile_are_not_reached():
    """12 CTAs over 32 tiles: CTA 0 takes tiles 0, 12 and 24, so no thread reaches iteration 3.
    ``tile += gridDim.x`` in 32 bits comes back below ``ntiles`` after 2^32 / 12 iterations; only
    the continue of every earlier iteration (the first ones at least) rules those out."""
    f = f"{D}/persistent_tiles.ptx"
    m = load_module(f)
    k = m.kernel("persistent_tiles")
    c = _Checker(m, k, resolve(LAUNCH, f, k.name).spec, 10.0, 0.0)
    c.execute()
    loop = next(i for i in c.ex.loops if i.loop.label == "$L__BB0_2")
    budget = SolverBudget(10.0)
    assert c.solve([z3.UGE(loop.k, 3)], budget, base=c.base())[0] == "unsat"
    assert c.solve([loop.k == 2], budget, base=c.base())[0] == "sat"
    assert c.solve([loop.k == 715827884], budget, base=c.base())[0] == "unsat"  # 11 + 12k wraps to 27 < 32


PACKED = """
.version 8.0
.target sm_90a
.address_size 64
.visible .entry packed(.param .align 8 .b8 packed_param_0[16])
{
  .reg .b32 %r<3>;
  .reg .b64 %rd<4>;
  mov.b64 %rd1, packed_param_0;
  ld.param.v2.u64 {%rd2, %rd3}, [%rd1];
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd1, %r1, 4;
  add.s64 %rd2, %rd2, %rd1;
  st.global.u32 [%rd2], %r1;
  ret;
}
"""


def test_a_vector_load_of_a_struct_keeps_its_pointer_field(tmp_path):
    """``ld.param.v2.u64 {%rd2, %rd3}, [p]`` of a struct whose first field is a pointer (CUTLASS
    reads its epilogue's pointer and stride this way): the store goes to that buffer."""
    ptx = tmp_path / "packed.ptx"
    ptx.write_text(PACKED)
    launch = tmp_path / "launch.json"
    launch.write_text('{"kernel": "packed", "grid": [2, 1, 1], "block": [64, 1, 1], '
                      '"args": {"0": {"struct": {"0": {"ptr": "out"}, "8": {"u64": 64}}}}, '
                      '"buffers": {"out": {"dtype": "uint32", "shape": [64]}}}')
    m = load_module(str(ptx))
    k = m.kernel("packed")
    got = {o.title: o for o in check_races(m, k, resolve(str(launch), str(ptx), k.name).spec)}
    # both CTAs store to out[tid]: a race between CTAs, on the buffer the struct's pointer names
    assert got["race-free: global"].status == "violated", got["race-free: global"].message
    assert "same bytes (out+" in got["race-free: global"].message
