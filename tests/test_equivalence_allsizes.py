"""kverify equiv --all-sizes: the tiled GEMM is proved equal to the naive one for every M, N, K
that are multiples of the tile; a twin that is right up to K = 128 is bounded (proved) at the
small sizes and refuted for all sizes at the first size where it is wrong, with a counterexample
the interpreter replays; what the argument cannot follow is unknown, never proved."""
import json

import pytest

from conftest import ZOO
from kverify.verifier.cli import main
from kverify.verifier.equivalence import equivalence_report

PAIRS = {p["name"]: p for p in json.loads((ZOO / "equivalence.json").read_text())["pairs"]}
SCOPE = "for all M, N, K >= 1 with M % 16 == 0, N % 16 == 0, K % 16 == 0"


def _all_sizes(p, tmp_path, precondition="", shapes=None, model=None):
    return equivalence_report(str(ZOO / p["candidate"]), str(ZOO / p["reference"]), launch=p["launch"],
                              ref_launch=p.get("ref_launch", p["launch"]), model=model or p["model"], shapes=shapes,
                              cex_dir=str(tmp_path), test_examples=2, all_sizes=precondition)


def test_tiled_gemm_is_proved_for_every_size_multiple_of_the_tile(tmp_path):
    p = PAIRS["gemm_tiled_vs_naive_all_sizes"]
    rep, results = _all_sizes(p, tmp_path)
    assert len(results) == 1  # no --shapes: the all-sizes obligation only
    r = results[0][1]
    assert r.verdict == "proved", r.message
    assert r.scope == SCOPE == p["all_sizes"]["scope"]
    assert r.message.startswith("proved " + SCOPE)
    o = rep.obligations[0].to_json()
    assert o["title"] == "equivalence[all sizes]" and o["status"] == "proved" and o["equivalence"] == "proved"
    assert o["model"] == "real" and o["scope"] == SCOPE
    assert any("race" in a for a in o["assumptions"]) and any("2^31" in a for a in o["assumptions"])
    assert rep.verdict == "verified"


def test_twin_right_up_to_k128_is_bounded_at_small_sizes_but_never_proved_for_all(tmp_path, capsys):
    """The soundness test: at K = 16, 64, 128 the twin computes the GEMM (bounded), so only an
    argument over every size can tell; it must find K = 144, where the twin is wrong."""
    p = PAIRS["gemm_tiled_wrap_k128"]
    a = p["all_sizes"]
    rep, results = _all_sizes(p, tmp_path, shapes=a["bounded"])
    assert [r.verdict for _, r in results[:3]] == ["proved"] * 3
    assert [o.status for o in rep.obligations[:3]] == ["bounded"] * 3
    assert rep.obligations[2].bound == "shapes M=16,N=16,K=128"
    r = results[3][1]
    o = rep.obligations[3]
    assert o.title == "equivalence[all sizes]"
    assert r.verdict == "refuted" and o.status == "violated" and o.rule == "equivalence.mismatch", r.message
    assert r.scope == "all sizes: refuted at K=144, M=16, N=16"
    c = r.counterexample
    assert c["shape"] == a["at"] and c["confirmed"] and c["buffer"] == a["cex_buffer"]
    assert c["candidate_line"] == a["candidate_line"] and c["reference_line"] == a["reference_line"]
    assert "gemm_tiled__wrap_k128.ptx:18" in r.message  # the load whose index wraps
    assert rep.verdict == "violated"
    capsys.readouterr()
    assert main(c["replay"].split()[1:]) == 1
    assert f"C differs at flat index {c['index']}:" in capsys.readouterr().out


def test_a_precondition_that_excludes_the_failing_sizes_is_proved_and_says_so(tmp_path):
    p = PAIRS["gemm_tiled_wrap_k128"]
    pre = "M % 16 == 0; N % 16 == 0; K % 16 == 0; K <= 128"
    rep, results = _all_sizes(p, tmp_path, precondition=pre)
    r = results[0][1]
    assert r.verdict == "proved", r.message
    assert r.scope == "for all M, N, K >= 1 with M % 16 == 0, N % 16 == 0, K % 16 == 0, K <= 128"


def test_wrong_stride_is_refuted_at_the_smallest_sizes_it_runs_in_bounds(tmp_path):
    p = PAIRS["gemm_naive_wrong_stride"]
    rep, results = _all_sizes(p, tmp_path)
    r = results[0][1]
    assert r.verdict == "refuted", r.message
    c = r.counterexample
    # N == K hides the bug; the first sizes tried (N > K) read A out of bounds and are inconclusive
    assert c["shape"] == {"K": 32, "M": 16, "N": 16} and c["buffer"] == "C" and c["confirmed"]
    assert c["candidate_line"] == "gemm_naive__wrong_stride.cu:15" and c["reference_line"] == "gemm_naive.cu:14"


@pytest.mark.parametrize("name,reason", [
    ("reduce_tree_vs_sequential", "reduce_smem.ptx:14: no store of an earlier barrier interval"),
    ("triton_add_vs_vadd", "the blocks differ ((128, 1, 1) against (256, 1, 1))"),
    ("cp_async_double_vs_single", "cp.async.ca.shared.global is outside what the all-sizes argument covers"),
    ("softmax_online_vs_two_pass", "a non-finite float immediate"),
])
def test_what_the_argument_cannot_follow_is_unknown_with_the_step(name, reason, tmp_path):
    p = PAIRS[name]
    rep, results = _all_sizes(p, tmp_path, model="real")
    r = results[0][1]
    assert r.verdict == "unknown" and r.scope == "all sizes: not proved", r.message
    assert reason in r.message
    assert rep.obligations[0].status == "unknown"


def test_all_sizes_under_another_model_is_unknown(tmp_path):
    p = PAIRS["gemm_tiled_vs_naive_all_sizes"]
    rep, results = equivalence_report(str(ZOO / p["candidate"]), str(ZOO / p["reference"]), launch=p["launch"],
                                      model="bitexact", cex_dir=str(tmp_path), all_sizes="")
    assert results[0][1].verdict == "unknown" and "real model only" in results[0][1].message


def test_bad_all_sizes_precondition_is_a_usage_error(capsys):
    p = PAIRS["gemm_tiled_vs_naive_all_sizes"]
    rc = main(["equiv", str(ZOO / p["candidate"]), str(ZOO / p["reference"]), "--launch", json.dumps(p["launch"]),
               "--all-sizes", "K %% 16"])
    assert rc == 2
    assert "<command line>:1:1: --all-sizes: 'K %% 16' is not a condition" in capsys.readouterr().err


def test_cli_all_sizes_text_and_json(capsys):
    p = PAIRS["gemm_tiled_vs_naive_all_sizes"]
    argv = ["equiv", str(ZOO / p["candidate"]), str(ZOO / p["reference"]), "--launch", json.dumps(p["launch"]),
            "--all-sizes"]
    assert main(argv + ["--format", "json"]) == 0
    o = json.loads(capsys.readouterr().out)["kernels"][0]["obligations"][0]
    assert o["title"] == "equivalence[all sizes]" and o["status"] == "proved" and o["scope"] == SCOPE


def test_a_missing_barrier_at_the_end_of_the_tile_loop_is_never_proved(tmp_path):
    """Without the second __syncthreads() the next tile's stores share a barrier interval with
    this tile's reads: the concrete engine finds a difference at K = 32, and the all-sizes
    argument must not prove what the bounded check refutes."""
    p = dict(PAIRS["gemm_tiled_vs_naive_all_sizes"], candidate="gemm_tiled/gemm_tiled__missing_sync_after_compute.ptx")
    rep, results = _all_sizes(p, tmp_path)
    r = results[0][1]
    assert r.verdict == "unknown" and r.scope == "all sizes: not proved", r.message
    msg = r.message.replace(str(ZOO.parent.parent) + "/", "")
    assert ("gemm_tiled__missing_sync_after_compute.ptx:21: the store at "
            "tests/zoo/gemm_tiled/gemm_tiled__missing_sync_after_compute.ptx:18" in msg)
    assert "same barrier interval" in r.message


def test_a_tail_bug_is_refuted_by_the_store_condition_step(tmp_path):
    """vadd__tail_off_by_one stores for i < n - 1: the threads that store differ from the
    reference's for every n, and the smallest n the precondition admits shows it."""
    p = PAIRS["vadd_tail_off_by_one"]
    rep, results = _all_sizes(p, tmp_path, model="real")
    r = results[0][1]
    assert r.verdict == "refuted", r.message
    assert "the threads that store differ" in r.message
    assert r.counterexample["shape"] == {"n": 256} and r.counterexample["index"] == 255
    assert rep.obligations[0].status == "violated"


def test_twin_that_skips_the_last_tile_beyond_k64_is_refuted_by_growing_a_size(tmp_path):
    """Its tile loop is bounded by K > 64 ? K - 16 : K, a trip count the argument does not
    summarize: no proof, and growing one size at a time finds K = 80 concretely."""
    p = PAIRS["gemm_tiled_skip_last_tile"]
    a = p["all_sizes"]
    rep, results = _all_sizes(p, tmp_path, shapes=a["bounded"])
    assert [r.verdict for _, r in results[:3]] == ["proved"] * 3
    assert [o.status for o in rep.obligations[:3]] == ["bounded"] * 3
    r = results[3][1]
    assert r.verdict == "refuted", r.message
    assert "no trip count" in r.message
    assert r.scope == "all sizes: refuted at K=80, M=16, N=16" and r.counterexample["shape"] == a["at"]
    assert r.counterexample["buffer"] == a["cex_buffer"] and r.counterexample["confirmed"]
    assert rep.obligations[3].status == "violated" and rep.verdict == "violated"


def test_every_query_is_bounded_by_solver_work_not_wall_time(monkeypatch):
    """The all-sizes prover's queries run within a ``SolverBudget`` of the prover's timeout (z3
    resource units), not a wall-clock timeout: a proof does not turn ``unknown`` on a loaded
    machine."""
    import z3

    from kverify.symbolic import budget as B
    from kverify.verifier.equivalence.allsizes import Solver

    seen = []
    real = B.SolverBudget.check

    def spy(self, s, *a):
        seen.append((self.seconds, self.units))
        return real(self, s, *a)

    monkeypatch.setattr(B.SolverBudget, "check", spy)
    x, y = z3.BitVecs("x y", 64)
    assert Solver(2500).check(x + 1 == y)[0] == z3.sat
    assert seen == [(2.5, int(2.5 * B.RLIMIT_PER_SECOND))]
    # a product of two 32-bit primes: factoring it takes z3 far more than 5,000 units, on any machine
    n = 4294967291 * 4294967279
    hard = [z3.ZeroExt(64, x) * z3.ZeroExt(64, y) == n, z3.UGT(x, 1), z3.UGT(y, 1)]
    assert Solver(1).check(*hard)[0] == z3.unknown
