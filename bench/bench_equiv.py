"""Benchmark of ``kverify equiv``: the time to decide every pair of
tests/zoo/equivalence.json (read at run time: pairs added to it are measured too) at its
default launch, on ONE CPU core, against the issue's targets: every pair decided within
30 s, and a pair's own ``target_s`` where it has one (the FMA-contraction stencil: refuted
within 5 s). A pair passes when its verdict is the expected one and it is within its target.
Optionally, how the time grows with the problem size (each pair's ``sizes``, as ratios to
the smallest size of the same pair), and what the concrete witnesses before the solver save
on the pairs that have a ``target_s`` (the same pair with them switched off).

    python bench/bench_equiv.py [--quick] [--core N] [--witness-baseline] [--only NAME,...] [--out FILE]
    python bench/bench_equiv.py --only triton_layernorm_vs_torch,vadd_vs_torch_add   # chosen pairs

One core: the process pins itself to CPU ``--core`` (default 0) with
``os.sched_setaffinity`` (Linux) and sets OMP/MKL/OpenBLAS threads to 1 before numpy and z3
are imported; the table says whether pinning worked. Prints a table and saves the JSON
(default bench/results/equivalence.json). Exit status 1 when any pair fails.
"""
from __future__ import annotations

import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ[_v] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

ZOO = ROOT / "tests" / "zoo"
TARGET_S = 30.0  # issue 17: every pair decided within 30 s on one core


def pin(core: int) -> str:
    """Pin this process to one core; a phrase for the table."""
    try:
        os.sched_setaffinity(0, {core})
        return f"pinned to CPU {core} (sched_setaffinity), 1 thread"
    except (AttributeError, OSError) as e:
        return f"NOT pinned ({e}); threads limited to 1"


def run(p, shapes=None, cex_dir=None, witnesses=True):
    from kverify.verifier.equivalence import equivalence_report

    t = time.perf_counter()
    torch_ref = p["reference"].startswith("torch:")  # torch:MODULE:FN, MODULE relative to the zoo
    ref = "torch:" + str(ZOO / p["reference"][6:]) if torch_ref else str(ZOO / p["reference"])
    rep, results = equivalence_report(str(ZOO / p["candidate"]), ref, launch=p["launch"],
                                      ref_launch=None if torch_ref else p.get("ref_launch", p["launch"]),
                                      model=p["model"], shapes=shapes, cex_dir=cex_dir, test_examples=2,
                                      bind=p.get("bind"), witnesses=witnesses)
    wall = time.perf_counter() - t
    r = results[0][1]
    out = {"verdict": r.verdict, "elements": r.elements, "time_s": round(wall, 3),
           "symbolic_s": round(r.sym_time_s, 3), "compare_s": round(r.solve_time_s, 3),
           "witness_s": round(r.witness_time_s, 3), "by_normal_form": r.structural, "by_solver": r.solver}
    if r.counterexample:
        c = r.counterexample
        out["counterexample"] = {"buffer": c["buffer"], "index": c["index"], "found_by": c.get("found_by")}
    return out


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="default launches only, no size sweep")
    ap.add_argument("--core", type=int, default=0, help="the CPU core to pin to (default 0)")
    ap.add_argument("--witness-baseline", action="store_true",
                    help="also time the pairs with a target_s without the concrete witnesses before the solver")
    ap.add_argument("--only", help="comma-separated pair names or parts of names, e.g. 'torch' (default: every pair)")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "equivalence.json"))
    args = ap.parse_args(argv)
    pinned = pin(args.core)
    pairs = json.loads((ZOO / "equivalence.json").read_text())["pairs"]
    if args.only:
        keep = set(args.only.split(","))
        pairs = [p for p in pairs if p["name"] in keep or any(k and k in p["name"] for k in keep)]
    if any(p["reference"].startswith("torch:") for p in pairs):
        run(next(p for p in pairs if p["reference"].startswith("torch:")))  # warm-up: import torch, first make_fx
    out = {"machine": {"platform": platform.platform(), "python": platform.python_version(),
                       "cpus": os.cpu_count(), "cores_used": 1, "pinning": pinned},
           "note": "one run; wall-clock seconds of kverify equiv on one CPU core (symbolic execution of both "
                   "kernels, comparison, and for refutations the interpreter replay); target: every pair within "
                   f"{TARGET_S:g} s, a pair's own target_s where it has one; a pair passes when its verdict is the "
                   "expected one and it is within its target", "pairs": []}
    fails = []
    print(f"kverify equiv on one core: {pinned}; target {TARGET_S:g} s per pair (a pair's own target where marked *)")
    print(f"{'pair':36} {'model':8} {'verdict':8} {'expect':8} {'elements':>8} {'time s':>8} {'target':>7}  result")
    with tempfile.TemporaryDirectory() as cex:
        for p in pairs:
            target = float(p.get("target_s", TARGET_S))
            try:
                r = run(p, cex_dir=cex)
            except Exception as e:  # noqa: BLE001 - a pair that crashes is a failure in the table
                r = {"verdict": f"error: {type(e).__name__}: {e}", "elements": 0, "time_s": float("nan")}
            ok_verdict = r["verdict"] == p["expect"]
            ok_time = r["time_s"] <= target
            result = "pass" if ok_verdict and ok_time else \
                "FAIL (" + ", ".join(x for x, bad in (("verdict", not ok_verdict), ("time", not ok_time)) if bad) + ")"
            if not result == "pass":
                fails.append(p["name"])
            row = {"name": p["name"], "model": p["model"], "expect": p["expect"], "target_s": target,
                   "within_target": ok_time, "verdict_as_expected": ok_verdict, "result": result, **r}
            mark = "*" if "target_s" in p else " "
            print(f"{p['name']:36} {p['model']:8} {str(r['verdict'])[:8]:8} {p['expect']:8} {r['elements']:8} "
                  f"{r['time_s']:8.2f} {target:6g}{mark}  {result}", flush=True)
            if args.witness_baseline and "target_s" in p:
                b = run(p, cex_dir=cex, witnesses=False)
                row["without_witnesses"] = b
                ratio = b["time_s"] / r["time_s"] if r["time_s"] else float("nan")
                row["without_witnesses"]["ratio_to_with"] = round(ratio, 1)
                print(f"    without the concrete witnesses: {b['verdict']} in {b['time_s']:.2f} s "
                      f"(x{ratio:.1f})", flush=True)
            if not args.quick and p.get("sizes"):
                growth = []
                for sh in p["sizes"]:
                    g = run(p, shapes=sh, cex_dir=cex)
                    growth.append({"shape": sh, **g})
                base = growth[0]["time_s"] or 1e-9
                for g in growth:
                    g["ratio_to_smallest"] = round(g["time_s"] / base, 2)
                    print(f"    {g['shape']:32} {g['verdict']:8} {g['elements']:8} elements {g['time_s']:8.2f} s "
                          f"(x{g['ratio_to_smallest']})", flush=True)
                row["growth"] = growth
            out["pairs"].append(row)
    out["summary"] = {"pairs": len(out["pairs"]), "passed": len(out["pairs"]) - len(fails), "failed": fails,
                      "slowest_s": max((r["time_s"] for r in out["pairs"]), default=0.0)}
    print(f"{len(out['pairs']) - len(fails)} of {len(out['pairs'])} pairs pass"
          + (f"; failed: {', '.join(fails)}" if fails else ""))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=1) + "\n")
    print(f"saved {args.out}")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
