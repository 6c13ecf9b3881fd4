"""kverify check and NVIDIA compute-sanitizer on the same zoo kernels, in one run, on a GPU machine.

    python bench/sanitizer_side_by_side.py [--out FILE] [--only X.ptx ...] [--part K/N] [--no-served]
    python bench/sanitizer_side_by_side.py --merge PART.json ... [--out FILE]
    python bench/sanitizer_side_by_side.py --data [--out FILE]

(``--data``: the bug classes of tests/data instead of the zoo -- distributed shared memory
lifetime, bulk/tensor reductions and their proxy fences and .read waits, a grid barrier replaced by a
CTA barrier, st.async into a peer CTA's shared memory (expect-tx missing or short, no wait, no cluster
barrier before the first remote access), cp.async tracked by cp.async.mbarrier.arrive (not tracked,
.noinc beside the threads' own arrivals) --, each correct kernel with its seeded-bug twins, into
bench/results/sanitizer_data.json; the sanitizer tools run on the plan ``validate`` builds, whose
reference, ``unchanged``, is a placeholder: only the tools' reports count.)

(``--part K/N`` runs every N-th variant from the K-th, so that the zoo fits in several calls of a
time-limited machine; ``--merge`` joins the parts' rows and recomputes the summary.)

Per zoo variant (correct kernels and their seeded-bug twins, the PTX as shipped, the manifest's
launch): ``kverify check`` (a subprocess, the whole command: parse, SMT, interpreter) timed on this
machine's CPU, and the kernel run once on the GPU (``kverify validate``'s harness builds the run
plan) under each of compute-sanitizer's four tools — memcheck, racecheck, synccheck, initcheck —
timed end to end (each tool is a process that starts the program, as a user runs it). The same
``kverify check`` command runs a second time through a check server (``kverify serve``, started once,
untimed, before the first row): the command's process hands its arguments to a fork of a process that
has the checkers loaded, as an agent that checks kernel after kernel would run it; the served report
must give the cold one's verdict and rules (``served_differs`` counts the rows where it does not). A bug counts
as found by kverify when ``check`` exits 1, by compute-sanitizer when any tool reports an error;
on a correct kernel either one reporting is a false alarm. A kernel that does not finish on the GPU
(the harness kills it after 10 s) is a row marked ``hang``, with no sanitizer tool run on it. The summary: the median seconds of each
side, their ratio (cold and served), and the found / false-alarm counts. Both sides' Python processes run with the
bytecode of what they import in place, as an installed environment has it (one untimed row of each
side comes first). Needs a GPU, compute-sanitizer and the
harness's runtime (torch or cuda-python).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from reduce_launch import tensor_reduce_launch  # noqa: E402  (tests/reduce_launch.py)

TOOLS = ("memcheck", "racecheck", "synccheck", "initcheck")


def variants():
    for m in sorted((ROOT / "tests" / "zoo").glob("*/manifest.json")):
        for v in json.loads(m.read_text())["variants"]:
            ptx = m.parent / (Path(v["file"]).stem + ".ptx")
            if ptx.exists() and v.get("launch"):
                yield m, v, ptx


#: (ptx under tests/data, kernel, launch, seeded bug rule or None) of ``--data``
_DS = {"grid": [4, 1, 1], "block": [64, 1, 1], "outputs": ["out"], "buffers": {"out": {"dtype": "int32", "shape": [256]}}}
_BR = {"grid": [2, 1, 1], "block": [128, 1, 1], "outputs": ["out"],
       "buffers": {n: {"dtype": "float32", "shape": [2, 128]} for n in ("in", "out")}}
_CA = {"grid": [2, 1, 1], "block": [64, 1, 1], "outputs": ["out"],
       "buffers": {"in": {"dtype": "float32", "shape": [512]}, "out": {"dtype": "float32", "shape": [512]}}}
_GS = {"grid": [4, 1, 1], "block": [128, 1, 1], "args": {"n": 500}, "outputs": ["tmp", "out"],
       "buffers": {n: {"dtype": "float32", "shape": [500]} for n in ("in", "tmp", "out")}}
DATA = [("dsmem/dsmem.ptx", k, _DS, rule) for k, rule in (
    ("exchange", None), ("exchange__no_start_sync", "dsmem.before-start"), ("exchange__late_write", "dsmem.after-exit"),
    ("exchange__late_read", "dsmem.after-exit"), ("tail", None), ("tail__no_wait", "dsmem.after-exit"),
    ("push", None), ("push__no_wait", "dsmem.after-exit"))] + [
    ("bulk_reduce/tensor_reduce.ptx", k, tensor_reduce_launch(k), rule) for k, rule in (
        ("tensor_add_f32", None), ("tensor_add_f32__no_global_fence", "race.async-proxy"),
        ("tensor_add_f32__read_early", "race.async-pending"))] + [
    ("bulk_reduce/bulk_reduce.ptx", k, _BR, rule) for k, rule in (
        ("bulk_reduce", None), ("bulk_reduce__no_fence", "race.async-proxy"),
        ("bulk_reduce__global_fence", "race.async-proxy"), ("bulk_reduce__overwrite", "race.async-pending"))] + [
    ("grid_sync/two_phase.ptx", "two_phase", _GS, None),
    ("grid_sync/two_phase__no_grid_sync.ptx", "two_phase", _GS, "race.global")] + [
    ("dsmem/st_async.ptx", k, _DS, rule) for k, rule in (
        ("send", None), ("send__no_expect_tx", "race.async-pending"), ("send__short_tx", "mbarrier.tx-mismatch"),
        ("send__no_wait", "race.shared"), ("send__no_cluster_sync", "mbarrier.init-visibility"),
        ("accumulate", None))] + [
    ("cp_async_arrive/copy_arrive.ptx", k, _CA, rule) for k, rule in (
        ("noinc", None), ("inc", None), ("noinc__no_track", "race.async-pending"),
        ("inc__noinc", "race.async-pending"))]


def unchanged(inputs, args):
    """The placeholder reference of ``--data`` (the kernels' outputs are not compared)."""
    return {k: v for k, v in inputs.items()}


def data_variants():
    for rel, kernel, launch, rule in DATA:
        yield ({**launch, "kernel": kernel}, {"correct": rule is None, "bug": {"rule": rule} if rule else None,
                                              "kernel": kernel, "reference": "sanitizer_side_by_side:unchanged"},
               ROOT / "tests" / "data" / rel)


def _env() -> dict:
    """The environment of a kverify process here: this checkout's kverify first, no check server."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(x for x in (str(ROOT), os.environ.get("PYTHONPATH")) if x))
    env.pop("KVERIFY_SERVER", None)
    return env


def kverify_check(ptx: Path, manifest, kernel: str | None = None, server: str | None = None) -> dict:
    """One ``kverify check`` command, cold (its own process from the start) or, with ``server``, run
    by the check server (``kverify serve``): the command's process hands the check to a fork of a
    process that has the checkers loaded."""
    t0 = time.perf_counter()
    launch = json.dumps(manifest) if isinstance(manifest, dict) else str(manifest.relative_to(ROOT))
    env = _env()
    if server:
        env["KVERIFY_SERVER"] = server
    r = subprocess.run([sys.executable, "-m", "kverify", "check", str(ptx.relative_to(ROOT)), "--launch",
                        launch, *(["--kernel", kernel] if kernel else []), "--format", "json"], cwd=ROOT,
                       capture_output=True, text=True, timeout=600, env=env)
    s = time.perf_counter() - t0
    try:
        rep = json.loads(r.stdout)
        rules = sorted({o["rule"] for k in rep["kernels"] for o in k["obligations"]
                        if o["status"] == "violated" and o["rule"]})
        verdict = rep["verdict"]
    except (json.JSONDecodeError, KeyError):
        rules, verdict = [], f"no report (exit {r.returncode}): {r.stderr.strip()[-200:]}"
    return {"exit": r.returncode, "verdict": verdict, "rules": rules, "s": round(s, 3)}


def start_server():
    """``(process, socket)`` of a check server (``kverify serve``) for the served rows, started
    with this checkout's kverify; ``(None, why)`` when it did not start."""
    sock = os.path.join(tempfile.mkdtemp(), "kv.sock")
    server = subprocess.Popen([sys.executable, "-m", "kverify", "serve", "--socket", sock], cwd=ROOT, env=_env(),
                              stderr=subprocess.PIPE, text=True)
    while not os.path.exists(sock):
        if server.poll() is not None:
            return None, server.stderr.read()[-500:]
        time.sleep(0.05)
    return server, sock


def sanitizer(ptx: Path, manifest, ref: str | None, san: str, kernel: str | None = None) -> dict:
    from kverify.verifier.validate import validate
    from kverify.verifier.validate.sanitize import run_tool

    t0 = time.perf_counter()
    launch = json.dumps(manifest) if isinstance(manifest, dict) else str(manifest.relative_to(ROOT))
    v = validate(str(ptx.relative_to(ROOT)), launch=launch, ref=ref, trials=1, timeout=10.0, kernel_name=kernel)
    term = next((o for o in v.report.obligations if o.id.endswith("terminates")), None)
    if term is not None and term.status not in ("proved", "bounded"):
        # the kernel did not finish on the GPU (a hang the harness killed, a trap): the sanitizer
        # tools would only wait for their timeouts; the row says what the plain run saw
        return {"tools": {}, "s": round(time.perf_counter() - t0, 3), "found": False, "hang": True,
                "terminates": f"{term.status}: {term.message[:200]}", "device": (v.details.get("device") or {}).get("name")}
    plan_path = Path(v.details["workdir"]) / "plan.json"
    plan = json.loads(plan_path.read_text())
    plan["runs"] = plan["runs"][:1]
    one = plan_path.with_name("plan_one.json")
    one.write_text(json.dumps(plan))
    harness_s = time.perf_counter() - t0
    tools, total = {}, 0.0
    for tool in TOOLS:
        t1 = time.perf_counter()
        r = run_tool(tool, str(one), 60.0, san)
        dt = time.perf_counter() - t1
        total += dt
        tools[tool] = {"status": r["status"], "errors": r["errors"], "first": (r["messages"] or [""])[0][:200],
                       "s": round(dt, 3)}
    return {"tools": tools, "s": round(total, 3), "found": any(t["status"] == "findings" for t in tools.values()),
            "harness_s": round(harness_s, 3), "device": (v.details.get("device") or {}).get("name")}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "sanitizer_side_by_side.json"))
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--part", default="0/1")
    ap.add_argument("--merge", nargs="*")
    ap.add_argument("--data", action="store_true", help="the bug classes of tests/data instead of the zoo")
    ap.add_argument("--no-served", action="store_true", help="time only the cold check (no check server): the "
                    "served rows add about 0.5 s a variant on the GPU machine")
    a = ap.parse_args(argv)
    if a.data and a.out == ap.get_default("out"):
        a.out = str(ROOT / "bench" / "results" / "sanitizer_data.json")
    if a.merge:
        parts = [json.loads(Path(p).read_text()) for p in a.merge]
        return write(a.out, parts[0]["machine"], [r for p in parts for r in p["kernels"]])
    from kverify.verifier.validate.sanitize import find_sanitizer

    san = find_sanitizer()
    if san is None:
        print("compute-sanitizer not found: this benchmark runs on a GPU machine")
        return 2
    # Both sides run as installed software runs: pip compiles modules to bytecode at install time.
    # A checkout, or a machine whose Python packages ship without bytecode, run under
    # PYTHONDONTWRITEBYTECODE compiles every module it imports in every process (numpy alone:
    # 0.3 s a process on the GPU machine). So bytecode may be written, kverify is compiled, and one
    # untimed row of each side (below) leaves the bytecode of what both import in place.
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "kverify")], capture_output=True)
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "kverify", "--version"], cwd=ROOT, capture_output=True,
                   env=dict(os.environ, PYTHONPATH=str(ROOT)))
    startup_s = round(time.perf_counter() - t0, 3)
    first = next(data_variants() if a.data else variants())
    kverify_check(first[2], first[0], first[1]["kernel"] if a.data else None)  # untimed: bytecode
    server, sock = (None, None) if a.no_served else start_server()
    if server is None and not a.no_served:
        print(f"the check server did not start: {sock}")
        return 2
    try:
        sanitizer(first[2], first[0], first[1].get("reference"), san, first[1]["kernel"] if a.data else None)
    except Exception:  # noqa: BLE001 - its own row says what failed
        pass
    rows = []
    print(f"{'kernel':56} {'bug':5} {'kverify':>9} {'s':>6} {'served':>6}  {'sanitizer':>10} {'s':>6}")
    k_part, n_parts = map(int, a.part.split("/"))
    for i, (m, v, ptx) in enumerate(data_variants() if a.data else variants()):
        if a.only and ptx.name not in a.only or i % n_parts != k_part:
            continue
        row = {"kernel": str(ptx.relative_to(ROOT)) + (f":{v['kernel']}" if a.data else ""), "correct": v["correct"],
               "bug": v.get("bug")}
        row["kverify"] = kverify_check(ptx, m, v["kernel"] if a.data else None)
        if server is not None:
            row["kverify_served"] = kverify_check(ptx, m, v["kernel"] if a.data else None, sock)
            if server.poll() is not None:  # a served row would have been a cold one
                print(f"the check server stopped: {server.stderr.read()[-500:]}")
                return 2
        try:
            row["sanitizer"] = sanitizer(ptx, m, v.get("reference"), san, v["kernel"] if a.data else None)
        except Exception as e:  # a kernel the harness cannot run is a row, not the end of the benchmark
            row["sanitizer"] = {"error": f"{type(e).__name__}: {str(e)[:300]}"}
        rows.append(row)
        write(a.out, {"partial": True}, rows, quiet=True)  # what a killed run leaves is still a result
        k, sz = row["kverify"], row["sanitizer"]
        print(f"{row['kernel'][-56:]:56} {'' if v['correct'] else 'bug':5} {k['verdict'][:9]:>9} {k['s']:6.2f} "
              f"{row.get('kverify_served', {}).get('s', float('nan')):6.2f}  "
              f"{('hang' if sz.get('hang') else 'found' if sz.get('found') else 'clean') if 'tools' in sz else 'error':>10} "
              f"{sz.get('s', float('nan')):6.2f}", flush=True)
    if server is not None:
        server.terminate()
        server.wait()
    machine = {"host": platform.node(), "cpu_count": os.cpu_count(), "python": platform.python_version(),
               "gpu": next((r["sanitizer"].get("device") for r in rows if r["sanitizer"].get("device")), None),
               "sanitizer": san, "tools": list(TOOLS), "kverify_startup_s": startup_s,
               "cpu": _cpu_model(), "part": a.part}
    return write(a.out, machine, rows)


def _cpu_model() -> str | None:
    try:
        return next(line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                    if line.startswith("model name"))
    except (OSError, StopIteration):
        return None


def write(out, machine, rows, quiet: bool = False) -> int:
    ran = [r for r in rows if "tools" in r["sanitizer"]]
    timed = [r for r in ran if not r["sanitizer"].get("hang")]  # the medians: kernels both sides ran
    kv = statistics.median(r["kverify"]["s"] for r in timed) if timed else None
    served = [r["kverify_served"]["s"] for r in timed if "kverify_served" in r]
    kvs = statistics.median(served) if served and len(served) == len(timed) else None
    sz = statistics.median(r["sanitizer"]["s"] for r in timed) if timed else None
    bugs = [r for r in ran if not r["correct"]]
    good = [r for r in ran if r["correct"]]
    summary = {
        "kernels": len(rows), "ran_on_gpu": len(ran),
        "kverify_median_s": kv, "sanitizer_median_s": sz, "ratio_of_medians": round(sz / kv, 2) if kv else None,
        "kverify_served_median_s": kvs, "ratio_of_medians_served": round(sz / kvs, 2) if kvs else None,
        # the served check's verdict and rules must be the cold check's
        "served_differs": sum(r["kverify_served"]["verdict"] != r["kverify"]["verdict"]
                              or r["kverify_served"]["rules"] != r["kverify"]["rules"]
                              for r in rows if "kverify_served" in r),
        "bugs": len(bugs), "bugs_found_kverify": sum(r["kverify"]["exit"] == 1 for r in bugs),
        "bugs_found_sanitizer": sum(r["sanitizer"]["found"] for r in bugs),
        "correct": len(good), "false_alarms_kverify": sum(r["kverify"]["exit"] == 1 for r in good),
        "false_alarms_sanitizer": sum(r["sanitizer"]["found"] for r in good),
        "inconclusive_kverify": sum(r["kverify"]["exit"] == 3 for r in ran),
        "hangs_on_gpu": sum(bool(r["sanitizer"].get("hang")) for r in ran),
    }
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text(json.dumps({"machine": machine, "summary": summary, "kernels": rows}, indent=1) + "\n")
    if not quiet:
        print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
