"""ldmatrix / stmatrix in the symbolic engine: each lane whose address operand names a row (lanes
0..8n-1 of ``.x1``/``.x2``/``.x4``) accesses that row's 16 bytes, so the classic race check proves
race freedom of kernels that stage tiles for mma.sync through them (tests/data/matrix_rows, our
own sm_80-style GEMM), finds the races of its seeded twins with both lines, and -- since which
lane a collective moves a row's bytes for is not modelled -- never proves, nor reports as a
violation, a conflict that only two lanes of one warp may have."""
import json
from pathlib import Path

import pytest

from kverify.launch import LaunchSpec
from kverify.semantics.ir import load_module
from kverify.verifier.check import check_kernel
from kverify.verifier.races.smt import check_races

DATA = Path(__file__).resolve().parent / "data" / "matrix_rows"


def _spec(name="launch.json"):
    return LaunchSpec.from_dict(json.loads((DATA / name).read_text()))


def _shared(file, kernel, spec):
    m = load_module(str(DATA / file))
    return {o.title: o for o in check_races(m, kernel, spec, 10.0)}["race-free: shared"]


def _lines(o):
    return [(Path(l.path).name, l.line, l.ptx_line) for l in o.locations]


@pytest.mark.parametrize("file,kernel,launch", [("ldsm_gemm.ptx", "ldsm_gemm", "launch.json"),
                                                ("ldsm_gemm.ptx", "ldsm_gemm", None),
                                                ("ldsm_warp.ptx", "ldsm_warp", "launch_warp.json")])
def test_the_staged_mma_gemm_is_race_free_in_shared_memory(file, kernel, launch):
    o = _shared(file, kernel, _spec(launch) if launch else None)
    assert o.status == "proved", o.message
    assert o.message.startswith("no two distinct threads of one CTA access the same shared bytes in one barrier "
                                "interval with a write (")


@pytest.mark.parametrize("twin,write,read", [
    ("no_sync_before_ldmatrix", ("ldsm_gemm__no_sync_before_ldmatrix.cu", 24, 198),
     ("ldsm_gemm__no_sync_before_ldmatrix.cu", 31, 468)),
    ("no_sync_after_mma", ("ldsm_gemm__no_sync_after_mma.cu", 24, 198), ("ldsm_gemm__no_sync_after_mma.cu", 31, 470)),
    ("no_sync_before_store_out", ("ldsm_gemm__no_sync_before_store_out.cu", 51, 555),
     ("ldsm_gemm__no_sync_before_store_out.cu", 54, 634)),
])
def test_each_missing_barrier_is_a_violation_with_both_lines(twin, write, read):
    o = _shared(f"ldsm_gemm__{twin}.ptx", "ldsm_gemm", _spec())
    assert o.status == "violated" and o.rule == "race.shared", o.message
    got = _lines(o)
    assert [x[:2] for x in got] == [write[:2], read[:2]]
    # the PTX lines of one source line: the store-out loop is unrolled, and any of its reads races
    ptx = (DATA / f"ldsm_gemm__{twin}.ptx").read_text().splitlines()
    for (_, _, want), (_, _, line) in zip((write, read), got):
        assert line == want or ptx[line - 1].split()[0] == ptx[want - 1].split()[0], (line, want)
    assert "same bytes" in o.message and "same barrier interval" in o.message


def test_a_conflict_only_lanes_of_one_warp_may_have_is_unknown_not_proved():
    """ldsm_warp without its __syncwarp: each lane reads 16 bytes of its warp's quarter that the
    warp's stmatrix filled from other lanes' registers. Thread A names a row with stmatrix and
    reads it back itself, which the search of two distinct threads does not ask; the run, which
    gives each 2-byte piece to the lane whose register holds it, finds the race."""
    o = _shared("ldsm_warp__no_syncwarp.ptx", "ldsm_warp", _spec("launch_warp.json"))
    assert o.status == "unknown"
    assert o.message.startswith("write at ldsm_warp__no_syncwarp.cu:53:23 (ptx 556) and read at "
                                "ldsm_warp__no_syncwarp.cu:56:3 (ptx 578) may touch the same bytes from lanes of one "
                                "warp with no warp or CTA barrier between them: which lane a warp-collective matrix "
                                "access (ldmatrix/stmatrix) moves a row's bytes for is not modelled")
    m = load_module(str(DATA / "ldsm_warp__no_syncwarp.ptx"))
    rep = check_kernel(m, m.kernel("ldsm_warp"), _spec("launch_warp.json"))
    run = {o.title: o for o in rep.obligations}["race-free: shared"]
    assert run.status == "violated" and run.rule == "race.shared"
    assert [l.line for l in run.locations] == [56, 53]


@pytest.mark.slow
@pytest.mark.parametrize("file,kernel,launch,status", [
    ("ldsm_gemm.ptx", "ldsm_gemm", "launch.json", "proved"),
    ("ldsm_warp.ptx", "ldsm_warp", "launch_warp.json", "proved"),
    ("ldsm_gemm__no_sync_before_ldmatrix.ptx", "ldsm_gemm", "launch.json", "violated"),
    ("ldsm_gemm__no_sync_after_mma.ptx", "ldsm_gemm", "launch.json", "violated"),
    ("ldsm_gemm__no_sync_before_store_out.ptx", "ldsm_gemm", "launch.json", "violated"),
])
def test_the_check_agrees_with_its_run(file, kernel, launch, status):
    m = load_module(str(DATA / file))
    rep = check_kernel(m, m.kernel(kernel), _spec(launch))
    o = {o.title: o for o in rep.obligations}["race-free: shared"]
    assert o.status == status, o.message
    assert rep.verdict == ("verified" if status == "proved" else "violated")


def test_only_the_lanes_that_name_rows_access_them():
    """lane_rows.ptx: warp 0 loads with ldmatrix from rows+16*lane while warp 1 writes rows+128
    and up; ``.x1`` reads only the rows lanes 0..7 name (below 128): no race; ``.x4`` reads the
    rows of all 32 lanes: lane 16's row is warp 1's write."""
    m = load_module(str(DATA / "lane_rows.ptx"))
    x1 = {o.title: o for o in check_races(m, "lane_rows_x1", None, 10.0)}["race-free: shared"]
    assert x1.status == "proved", x1.message
    x4 = {o.title: o for o in check_races(m, "lane_rows_x4", None, 10.0)}["race-free: shared"]
    assert x4.status == "violated" and x4.rule == "race.shared"
    assert [l.line for l in x4.locations] == [47, 48]
    assert "same bytes (rows+" in x4.message
