"""``kverify check`` on GPUVerify's CUDA test suite: does kverify give each kernel the verdict its
label gives?

The suite is not part of this repository; take it from a GPUVerify checkout:

    git clone https://github.com/mc-imperial/gpuverify
    python bench/gpuverify_suite.py --suite gpuverify/testsuite/CUDA [--jobs 2] [--timeout 120]

Every ``kernel.cu`` under ``--suite`` is checked by its own ``python -m kverify check FILE --format
json --extern-summary '*=pure'`` process (this checkout's kverify), at most ``--jobs`` at a time, each
killed after ``--timeout`` wall seconds. ``--extern-summary '*=pure'`` is GPUVerify's own assumption
about a function the test declares and never defines (``__device__ int nondet(void);``): Bugle
declares it as a Boogie procedure without body and without modifies clause, so it has no memory
effects and returns an arbitrary value. kverify models such a call the same way (a fresh value per
call and per thread) and every verdict that rests on it says so in its scope and in the report's
``assumptions``. The first line of a test is its label: ``//pass`` expects
``verified`` (exit 0), ``//xfail:REASON`` expects ``violated`` (exit 1); the second line holds
GPUVerify's options (``--blockDim``/``--gridDim``, ``-D``), which kverify reads itself. Each kernel
gets one class:

    agree         the exit code the label expects
    false alarm   a //pass kernel reported violated (exit 1)
    missed        an //xfail kernel reported verified (exit 0)
    inconclusive  exit 3 (an obligation unknown)
    error         exit 2 (bad input: the compiler, the launch, a construct kverify refuses)
    timeout       killed after --timeout seconds

and a reason: the violated rule ids (exit 1), the first unknown obligation's reason (exit 3), the
``file:line: message`` of the error (exit 2), the warnings printed (exit 0). Prints the counts per
class, the median and worst time and the machine, and writes ``--out`` (default
bench/results/gpuverify.json): one row per kernel (path relative to --suite, label, exit, verdict,
class, reason, rules, seconds), the summary, the machine, kverify's commit and GPUVerify's (``git
rev-parse HEAD`` in the suite's checkout, or ``--gpuverify-commit``). Nothing else is written.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "results" / "gpuverify.json"
#: GPUVerify's assumption about body-less functions (module docstring)
EXTERN = ["--extern-summary", "*=pure"]
CLASSES = ("agree", "false alarm", "missed", "inconclusive", "error", "timeout")


def label_of(path: Path) -> str:
    """Line 1 of the test without its ``//`` (``pass``, ``xfail:NOT_ALL_VERIFIED``)."""
    with open(path, errors="replace") as f:
        return f.readline().strip().lstrip("/").strip()


def expects(label: str) -> int | None:
    """The exit code the label asks for: 0 for ``pass``, 1 for ``xfail``, None for anything else."""
    low = label.lower()
    if low.startswith("pass"):
        return 0
    if low.startswith("xfail"):
        return 1
    return None


def reason_of(rc: int, report: dict | None, stderr: str) -> tuple[str, list]:
    """``(reason, rule ids)`` of one check (see the module docstring)."""
    if report is None:
        lines = [ln for ln in stderr.strip().splitlines() if ln.strip()]
        return (lines[-1][:400] if lines else "no output"), []
    kernels = report.get("kernels") or []
    rules, unknown, error, warnings = [], None, None, []
    for k in kernels:
        if k.get("error") and error is None:
            loc = k.get("error_location") or {}
            error = f"line {loc.get('line')}: {k['error']}" if loc.get("line") else k["error"]
        for o in k.get("obligations") or []:
            if o.get("status") == "violated":
                if o.get("severity") == "error":
                    rules.append(o.get("rule") or o.get("id"))
                else:
                    warnings.append(o.get("rule") or o.get("id"))
            elif o.get("status") == "unknown" and unknown is None:
                unknown = f"{o.get('id')}: {o.get('message', '')}"
        for f in k.get("findings") or []:
            if f.get("severity") == "error":
                rules.append(f.get("rule"))
            elif f.get("severity") == "warning":
                warnings.append(f.get("rule"))
    rules = sorted(set(r for r in rules if r))
    if rc == 1:
        return ", ".join(rules), rules
    if rc == 3:
        return (unknown or "inconclusive")[:400], rules
    if rc == 2:
        lines = [ln for ln in stderr.strip().splitlines() if ln.strip()]
        return (error or (lines[-1] if lines else "error"))[:400], rules
    if rc == 0:
        return ("verified" + (f" (warnings: {', '.join(sorted(set(warnings)))})" if warnings else "")), rules
    return f"exit {rc}", rules


def classify(expected: int | None, rc: int | None) -> str:
    if rc is None:
        return "timeout"
    if expected is not None and rc == expected:
        return "agree"
    return {1: "false alarm", 0: "missed", 3: "inconclusive"}.get(rc, "error")


def check_one(path: Path, suite: Path, timeout: float, extra: list) -> dict:
    rel = str(path.relative_to(suite))
    label = label_of(path)
    cmd = [sys.executable, "-m", "kverify", "check", str(path), "--format", "json", *EXTERN, *extra]
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
        rc, out, err = p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired:
        rc, out, err = None, "", ""
    dt = time.perf_counter() - t0
    try:
        report = json.loads(out) if out.strip() else None
    except json.JSONDecodeError:
        report = None
    if rc is None:
        reason, rules = f"killed after {timeout:g} s", []
    else:
        reason, rules = reason_of(rc, report, err)
    return {"path": rel, "label": label, "exit": rc, "verdict": (report or {}).get("verdict"),
            "class": classify(expects(label), rc), "reason": reason, "rules": rules, "time_s": round(dt, 2)}


def machine() -> dict:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), cpu)
    except OSError:
        pass
    try:
        text = subprocess.run(["nvcc", "--version"], capture_output=True, text=True).stdout
        nvcc = next((ln.strip() for ln in text.splitlines() if "release" in ln), None)
    except OSError:
        nvcc = None
    return {"cpu": cpu, "cores": os.cpu_count(), "python": platform.python_version(), "system": platform.platform(),
            "nvcc": nvcc}


def git_head(where: Path) -> str | None:
    try:
        r = subprocess.run(["git", "-C", str(where), "rev-parse", "HEAD"], capture_output=True, text=True)
    except OSError:
        return None
    return r.stdout.strip() or None if r.returncode == 0 else None


def summary(rows: list) -> dict:
    by = collections.Counter(r["class"] for r in rows)
    times = [r["time_s"] for r in rows]
    per_label = {}
    for r in rows:
        key = "pass" if expects(r["label"]) == 0 else "xfail" if expects(r["label"]) == 1 else "other"
        per_label.setdefault(key, collections.Counter())[r["class"]] += 1
    return {"total": len(rows), "agree": by["agree"], "classes": {c: by[c] for c in CLASSES},
            "by_label": {k: dict(v) for k, v in sorted(per_label.items())},
            "median_s": round(statistics.median(times), 2) if times else None,
            "max_s": round(max(times), 2) if times else None}


def table(rows: list, summ: dict, mach: dict, wall: float) -> str:
    out = [f"{summ['agree']} of {summ['total']} kernels agree with their label",
           f"{'class':<14}{'kernels':>8}   pass / xfail"]
    for c in CLASSES:
        p = summ["by_label"].get("pass", {}).get(c, 0)
        x = summ["by_label"].get("xfail", {}).get(c, 0)
        out.append(f"{c:<14}{summ['classes'][c]:>8}   {p:>4} / {x}")
    out.append(f"time per kernel: median {summ['median_s']} s, max {summ['max_s']} s "
               f"({max(rows, key=lambda r: r['time_s'])['path'] if rows else '-'}); {wall:.0f} s in all")
    out.append(f"machine: {mach['cpu']}, {mach['cores']} cores, Python {mach['python']}, {mach['nvcc']}")
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--suite", required=True, type=Path, help="testsuite/CUDA of a GPUVerify checkout")
    ap.add_argument("--jobs", type=int, default=2, help="checks at a time (default 2)")
    ap.add_argument("--timeout", type=float, default=120.0, help="wall seconds per kernel (default 120)")
    ap.add_argument("--only", help="check only the kernels whose relative path contains this")
    ap.add_argument("--gpuverify-commit", help="GPUVerify's commit, when --suite is not inside a git checkout")
    ap.add_argument("--out", type=Path, default=OUT, help=f"results JSON (default {OUT.relative_to(ROOT)})")
    ap.add_argument("--quiet", action="store_true", help="no line per kernel")
    ap.add_argument("check_args", nargs="*", help="after --: more options for kverify check")
    a = ap.parse_args(argv)
    suite = a.suite.resolve()
    if not suite.is_dir():
        print(f"{a.suite}: not a directory (the testsuite/CUDA folder of a GPUVerify checkout)", file=sys.stderr)
        return 2
    files = sorted(suite.rglob("kernel.cu"))
    if a.only:
        files = [f for f in files if a.only in str(f.relative_to(suite))]
    if not files:
        print(f"{a.suite}: no kernel.cu below it", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    rows = []
    with ThreadPoolExecutor(max_workers=max(1, a.jobs)) as pool:
        futs = [pool.submit(check_one, f, suite, a.timeout, a.check_args) for f in files]
        for i, fut in enumerate(futs):
            r = fut.result()
            rows.append(r)
            if not a.quiet:
                print(f"[{i + 1}/{len(files)}] {r['path']}: {r['label'][:24]} -> exit {r['exit']} "
                      f"{r['class']} ({r['time_s']} s) {r['reason'][:120]}", flush=True)
    wall = time.perf_counter() - t0
    mach = machine()
    summ = summary(rows)
    print(table(rows, summ, mach, wall))
    result = {"suite": str(a.suite), "gpuverify_commit": a.gpuverify_commit or git_head(suite),
              "kverify_commit": git_head(ROOT), "command": " ".join(["python", "bench/gpuverify_suite.py", *(argv or sys.argv[1:])]),
              "jobs": a.jobs, "timeout_s": a.timeout, "wall_s": round(wall, 1), "machine": mach,
              "summary": summ, "rows": rows}
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"-> {a.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
