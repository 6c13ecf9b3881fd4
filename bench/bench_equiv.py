"""Benchmark of ``kverify equiv``: proof (or refutation) time for every pair of
tests/zoo/equivalence.json at its default launch, and how the proof time grows with the
problem size (each pair's ``sizes``). Everything is measured in this one run, on this
machine; the growth is reported as ratios to the smallest size of the same pair.

    python bench/bench_equiv.py [--quick] [--only NAME_PART] [--pairs NAME,...] [--out bench/results/equivalence.json]
    python bench/bench_equiv.py --only torch --out bench/results/equivalence_torch.json   # the torch-reference pairs

Prints a table and saves the JSON.
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


def run(p, shapes=None, cex_dir=None):
    t = time.perf_counter()
    torch_ref = p["reference"].startswith("torch:")  # torch:MODULE:FN, MODULE relative to the zoo
    ref = "torch:" + str(ZOO / p["reference"][6:]) if torch_ref else str(ZOO / p["reference"])
    rep, results = equivalence_report(str(ZOO / p["candidate"]), ref, launch=p["launch"],
                                      ref_launch=None if torch_ref else p.get("ref_launch", p["launch"]),
                                      model=p["model"], shapes=shapes, cex_dir=cex_dir, test_examples=2,
                                      bind=p.get("bind"))
    wall = time.perf_counter() - t
    r = results[0][1]
    return {"verdict": r.verdict, "elements": r.elements, "time_s": round(wall, 3),
            "symbolic_s": round(r.sym_time_s, 3), "compare_s": round(r.solve_time_s, 3),
            "by_normal_form": r.structural, "by_solver": r.solver}


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="default launches only, no size sweep")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "equivalence.json"))
    ap.add_argument("--only", help="only the pairs whose name contains this (e.g. 'torch')")
    ap.add_argument("--pairs", default="", help="comma-separated pair names (default: all)")
    args = ap.parse_args(argv)
    pairs = [p for p in json.loads((ZOO / "equivalence.json").read_text())["pairs"]
             if not args.only or args.only in p["name"]]
    if args.pairs:
        pairs = [p for p in pairs if p["name"] in args.pairs.split(",")]
    if any(p["reference"].startswith("torch:") for p in pairs):
        run(next(p for p in pairs if p["reference"].startswith("torch:")))  # warm-up: import torch, first make_fx
    out = {"machine": {"platform": platform.platform(), "python": platform.python_version(),
                       "cpus": os.cpu_count()},
           "note": "one run; wall-clock seconds of kverify equiv on the CPU (symbolic execution of both kernels, "
                   "comparison, and for refutations the interpreter replay)", "pairs": []}
    with tempfile.TemporaryDirectory() as cex:
        print(f"{'pair':30} {'model':8} {'verdict':8} {'expect':8} {'elements':>8} {'time s':>8}")
        for p in pairs:
            r = run(p, cex_dir=cex)
            row = {"name": p["name"], "model": p["model"], "expect": p["expect"], **r}
            print(f"{p['name']:30} {p['model']:8} {r['verdict']:8} {p['expect']:8} {r['elements']:8} "
                  f"{r['time_s']:8.2f}", flush=True)
            if not args.quick and p.get("sizes"):
                growth = []
                for sh in p["sizes"]:
                    g = run(p, shapes=sh, cex_dir=cex)
                    growth.append({"shape": sh, **g})
                base = growth[0]["time_s"] or 1e-9
                for g in growth:
                    g["ratio_to_smallest"] = round(g["time_s"] / base, 2)
                    print(f"    {g['shape']:28} {g['verdict']:8} {g['elements']:8} elements {g['time_s']:8.2f} s "
                          f"(x{g['ratio_to_smallest']})", flush=True)
                row["growth"] = growth
            out["pairs"].append(row)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=1) + "\n")
    print(f"saved {args.out}")


if __name__ == "__main__":
    main()
