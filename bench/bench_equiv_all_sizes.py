"""Benchmark of ``kverify equiv --all-sizes``: for every pair of tests/zoo/equivalence.json
that has an ``all_sizes`` entry, plus the wrong-stride GEMM, the all-sizes verdict and its
wall time (one process, one run, this machine), next to the bounded family of the pair's
``sizes`` (each size proved by its own concrete launch) for comparison.

    python bench/bench_equiv_all_sizes.py [--out bench/results/equivalence_all_sizes.json]

Wall times include z3 and, for refutations, the concrete check at the failing sizes and the
interpreter replay. CPU seconds (``cpu_s``, this process) are reported beside them because
the development machine is shared: wall time there depends on the load.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kverify.verifier.equivalence import equivalence_report  # noqa: E402

ZOO = ROOT / "tests" / "zoo"
EXTRA = ("gemm_naive_wrong_stride",)


def run(p, cex_dir, shapes=None, all_sizes=None):
    t, c = time.perf_counter(), time.process_time()
    _, results = equivalence_report(str(ZOO / p["candidate"]), str(ZOO / p["reference"]), launch=p["launch"],
                                    ref_launch=p.get("ref_launch", p["launch"]), model=p["model"], shapes=shapes,
                                    cex_dir=cex_dir, test_examples=2, all_sizes=all_sizes)
    return results, round(time.perf_counter() - t, 2), round(time.process_time() - c, 2)


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "equivalence_all_sizes.json"))
    args = ap.parse_args(argv)
    pairs = json.loads((ZOO / "equivalence.json").read_text())["pairs"]
    out = {"machine": {"platform": platform.platform(), "python": platform.python_version(),
                       "cpus": os.cpu_count(), "load_1min": os.getloadavg()[0]},
           "note": "one run; wall and CPU seconds of the all-sizes obligation, and of each size of the bounded family",
           "pairs": []}
    with tempfile.TemporaryDirectory() as cex:
        for p in pairs:
            if "all_sizes" not in p and p["name"] not in EXTRA:
                continue
            pre = (p.get("all_sizes") or {}).get("precondition", "")
            results, wall, cpu = run(p, cex, all_sizes=pre)
            r = results[-1][1]
            row = {"name": p["name"], "verdict": r.verdict, "scope": r.scope, "wall_s": wall, "cpu_s": cpu}
            print(f"{p['name']:32} all sizes: {r.verdict:8} {wall:7.2f} s wall {cpu:7.2f} s cpu  {r.scope}", flush=True)
            fam = (p.get("all_sizes") or {}).get("bounded")  # one family, else each of the pair's sizes
            for sh in [fam] if fam else p.get("sizes") or []:
                res, w, c = run(p, cex, shapes=sh)
                row.setdefault("bounded", []).append({"shapes": sh, "verdicts": [x.verdict for _, x in res],
                                                     "wall_s": w, "cpu_s": c})
                print(f"{'':32} shapes {sh}: {[x.verdict for _, x in res]} {w:7.2f} s wall {c:7.2f} s cpu",
                      flush=True)
            out["pairs"].append(row)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=1) + "\n")
    print(f"saved {args.out}")


if __name__ == "__main__":
    main()
