"""Mutation fuzzing of the command line: every input gets a verdict or a clear error.

    python bench/fuzz.py [--ptx N] [--check N] [--specs N] [--seed S] [--jobs J] [--budget SECONDS]
                         [--max-memory GIB] [--out bench/results/fuzz.json]

Inputs are mutants of the zoo's PTX (``tests/zoo/**/*.ptx``) — a literal made huge or negative,
an identifier made very long, a line deleted, duplicated or swapped, an opcode or a type replaced
by another, the file cut short, bytes that are not UTF-8 — and mutants of the zoo's launch specs
(wrong types, huge or negative dimensions, garbage where an object belongs). Each runs in a
worker process through ``kverify.verifier.cli.main``: PTX mutants through ``show`` (``--ptx``) and a
share of them through ``check --no-smt`` with the family's launch (``--check``), spec mutants
through ``check --no-smt`` of the kernel they belong to (``--specs``). A worker has a wall-clock
budget per input (``--budget``, enforced with SIGALRM and, past it, by killing the worker) and an
address-space limit (``--max-memory``, RLIMIT_AS).

Counted per input: the exit code; an internal error (``internal error`` in the output, or an
exception out of ``main``); a hang (over the budget); a memory kill (the worker died, or
MemoryError); an exit 2 whose message has no ``file:line:col:``. The table and
``bench/results/fuzz.json`` give the counts, the machine, and every failing input's signature
with a reproducer (the mutated text is kept under ``--keep DIR`` when given).
"""
from __future__ import annotations

import argparse
import contextlib
import copy
import io
import json
import multiprocessing as mp
import os
import platform
import random
import re
import resource
import signal
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
ZOO = ROOT / "tests" / "zoo"

LOCATED = re.compile(r"^(?:[^\s:][^:]*|<[^>]+>):\d+:\d+: ", re.M)  # file:line:col: at a line start
OPCODE = re.compile(r"^(\s*(?:@!?%\w+\s+)?)([a-z][a-z0-9_]*(?:\.[a-z0-9_:]+)*)(\s)", re.M)
TYPES = (".f32", ".f16", ".bf16", ".tf32", ".f64", ".b8", ".b16", ".b32", ".b64", ".b128", ".u8", ".u16", ".u32",
         ".u64", ".s8", ".s32", ".s64", ".pred", ".e4m3", ".v4", ".v8")


# --------------------------------------------------------------------------- mutators


def _lines(text):
    return text.split("\n")


def m_huge_literal(rng, text):
    nums = list(re.finditer(r"(?<![\w%.$])\d+(?![\w.])", text))
    if not nums:
        return text
    m = rng.choice(nums)
    rep = rng.choice(["9" * rng.choice([20, 400, 5000]), str(2 ** 64), str(2 ** 31), "-1", "0", "-2147483649",
                      "0x" + "f" * rng.choice([17, 300]), "1e400"])
    return text[:m.start()] + rep + text[m.end():]


def m_long_identifier(rng, text):
    ids = list(re.finditer(r"(?<![\w%$])[A-Za-z_$][\w$]{2,}", text))
    if not ids:
        return text
    m = rng.choice(ids)
    return text.replace(m.group(0), m.group(0) + "x" * rng.choice([300, 5000, 70000]))


def m_delete_line(rng, text):
    ls = _lines(text)
    del ls[rng.randrange(len(ls))]
    return "\n".join(ls)


def m_duplicate_line(rng, text):
    ls = _lines(text)
    i = rng.randrange(len(ls))
    ls.insert(rng.randrange(len(ls)), ls[i])
    return "\n".join(ls)


def m_swap_lines(rng, text):
    ls = _lines(text)
    i, j = rng.randrange(len(ls)), rng.randrange(len(ls))
    ls[i], ls[j] = ls[j], ls[i]
    return "\n".join(ls)


def m_swap_opcode(rng, text):
    ops = list(OPCODE.finditer(text))
    if len(ops) < 2:
        return text
    a, b = rng.choice(ops), rng.choice(ops)
    return text[:a.start(2)] + b.group(2) + text[a.end(2):]


def m_swap_type(rng, text):
    ts = [m for t in TYPES for m in re.finditer(re.escape(t) + r"\b", text)]
    if not ts:
        return text
    m = rng.choice(ts)
    return text[:m.start()] + rng.choice(TYPES) + text[m.end():]


def m_truncate(rng, text):
    return text[:rng.randrange(len(text) + 1)]


def m_bytes(rng, text):
    i = rng.randrange(len(text) + 1)
    junk = rng.choice(["\x00", "\udcff", "\ufeff", "{{{{", "}", "[", "%", ";;", "\\", "\"", "\t" * 50, "// \n.entry"])
    return text[:i] + junk + text[i:]


def m_operand(rng, text):
    regs = list(re.finditer(r"%[a-z]+\d+", text))
    if not regs:
        return text
    m = rng.choice(regs)
    rep = rng.choice(["%r999999", "%rd0", "%p1", "%f1", "[%r1]", "42", "%tid.w", "%nosuch", "_"])
    return text[:m.start()] + rep + text[m.end():]


PTX_MUTATORS = (m_huge_literal, m_long_identifier, m_delete_line, m_duplicate_line, m_swap_lines, m_swap_opcode,
                m_swap_type, m_truncate, m_bytes, m_operand)


def mutate_ptx(rng, text):
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        text = rng.choice(PTX_MUTATORS)(rng, text)
    return text


GARBAGE = (None, True, -1, 0, 2 ** 31, 2 ** 64, 10 ** 30, 1.5, float("nan"), "abc", "", "1e400", [], [1], [0, 0, 0],
           [-1, 1, 1], [65536, 65536, 65536], [2 ** 31, 1, 1], {}, {"x": 1}, {"dtype": "float32"},
           {"dtype": "nosuch", "shape": [4]}, {"dtype": "float32", "shape": [2 ** 40]}, {"dtype": "float32", "shape": [-4]},
           {"struct": {"0": {"u32": 1}, "2": {"u64": 5}}}, {"bytes": "zz"}, "x" * 5000)


def mutate_spec(rng, spec):
    """A launch spec with one to three values replaced (or keys added/removed) at random paths."""
    spec = json.loads(json.dumps(spec))

    def paths(o, pre=()):
        yield pre
        if isinstance(o, dict):
            for k, v in o.items():
                yield from paths(v, pre + (k,))
        elif isinstance(o, list):
            for i, v in enumerate(o):
                yield from paths(v, pre + (i,))

    for _ in range(rng.choice([1, 1, 2, 3])):
        ps = [p for p in paths(spec) if p]
        if not ps:
            break
        p = rng.choice(ps)
        parent = spec
        for k in p[:-1]:
            parent = parent[k]
        action = rng.random()
        if action < 0.75:
            parent[p[-1]] = copy.deepcopy(rng.choice(GARBAGE))
        elif action < 0.9 and isinstance(parent, dict):
            del parent[p[-1]]
        elif isinstance(parent, dict):
            parent["junk" + str(rng.randrange(99))] = copy.deepcopy(rng.choice(GARBAGE))
    return spec


# --------------------------------------------------------------------------- corpus


def seeds():
    """(ptx path, its launch spec or None) for every zoo PTX."""
    out = []
    for m in sorted(ZOO.glob("*/manifest.json")):
        variants = json.loads(m.read_text())["variants"]
        for v in variants:
            ptx = m.parent / (Path(v["file"]).stem + ".ptx")
            if ptx.exists():
                out.append((ptx, v.get("launch")))
    return out


# --------------------------------------------------------------------------- the worker


def _limit(max_memory_gib):
    if max_memory_gib:
        n = int(max_memory_gib * 2 ** 30)
        resource.setrlimit(resource.RLIMIT_AS, (n, n))


class _Alarm(BaseException):  # not Exception: a checker's fail-closed handler must not swallow it
    pass


def _on_alarm(*_):
    raise _Alarm()


def run_one(job, budget):
    """One input in this (worker) process: ``{"exit", "internal", "hang", "memory", "unlocated"}``."""
    from kverify.verifier.cli import main

    out, err = io.StringIO(), io.StringIO()
    signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, budget)
    t0 = time.perf_counter()
    res = {"kind": job["kind"], "seed_file": job["seed_file"], "mutant": job["id"]}
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = main(job["argv"])
    except _Alarm:
        rc, res["hang"] = None, True
    except MemoryError:
        rc, res["memory"] = None, True
    except SystemExit as e:  # argparse usage errors
        rc = e.code if isinstance(e.code, int) else 2
    except BaseException as e:  # noqa: BLE001 - an exception out of main is an internal error
        rc, res["internal"] = None, f"{type(e).__name__}: {str(e)[:300]}"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    res["s"] = round(time.perf_counter() - t0, 3)
    res["exit"] = rc
    text = out.getvalue() + err.getvalue()
    m = re.search(r"internal error[^\n]*", text)
    if m:
        res["internal"] = m.group(0)[:300]
    if rc == 2 and not LOCATED.search(text):
        res["unlocated"] = text.strip().splitlines()[0][:300] if text.strip() else "(no message)"
    if rc not in (0, 1, 2, 3, None):
        res["bad_exit"] = rc
    return res


def worker(conn, budget, max_memory):
    _limit(max_memory)
    import kverify.verifier.cli  # noqa: F401 - import once, before the first budget starts

    conn.send("ready")
    while True:
        job = conn.recv()
        if job is None:
            return
        conn.send(run_one(job, budget))


class Pool:
    """Workers that each run one input at a time; a worker that dies or outlives the budget by
    far is replaced, and its input counted (memory kill / hang)."""

    def __init__(self, n, budget, max_memory):
        self.budget, self.max_memory = budget, max_memory
        self.ctx = mp.get_context("fork")
        self.slots = [self._start() for _ in range(n)]

    def _start(self):
        a, b = self.ctx.Pipe()
        p = self.ctx.Process(target=worker, args=(b, self.budget, self.max_memory), daemon=True)
        p.start()
        a.recv()
        return {"proc": p, "conn": a, "job": None, "t0": 0.0}

    def run(self, jobs, progress=None):
        jobs = list(jobs)
        results, i, done = [], 0, 0
        while done < len(jobs):
            for s in self.slots:
                if s["job"] is None and i < len(jobs):
                    s["job"], s["t0"] = jobs[i], time.perf_counter()
                    s["conn"].send(jobs[i])
                    i += 1
            for s in self.slots:
                if s["job"] is None:
                    continue
                if s["conn"].poll(0.01):
                    try:
                        results.append(s["conn"].recv())
                    except EOFError:
                        results.append(self._dead(s, "memory"))
                    s["job"] = None
                    done += 1
                elif not s["proc"].is_alive():
                    results.append(self._dead(s, "memory"))
                    done += 1
                elif time.perf_counter() - s["t0"] > self.budget + 30:  # SIGALRM could not interrupt it
                    s["proc"].kill()
                    results.append(self._dead(s, "hang"))
                    done += 1
            if progress and done and done % 500 == 0:
                progress(done, len(jobs))
        return results

    def _dead(self, s, what):
        job = s["job"]
        s["proc"].join(timeout=5)
        s.update(self._start())
        s["job"] = None
        return {"kind": job["kind"], "seed_file": job["seed_file"], "mutant": job["id"], "exit": None, what: True,
                "s": round(time.perf_counter() - s["t0"], 3)}

    def close(self):
        for s in self.slots:
            try:
                s["conn"].send(None)
            except (BrokenPipeError, OSError):
                pass
            s["proc"].join(timeout=5)


# --------------------------------------------------------------------------- the campaign


def make_jobs(args, tmp: Path):
    rng = random.Random(args.seed)
    corpus = seeds()
    texts = {p: p.read_text() for p, _ in corpus}
    jobs = []

    def write(name, data, family=None):
        d = tmp
        if family is not None:  # beside copies of the family's sources: .file names and parameter names resolve
            d = tmp / family.name
            if not d.exists():
                d.mkdir()
                for src in family.iterdir():
                    if src.suffix in (".cu", ".cuh", ".py", ".json"):
                        (d / src.name).write_bytes(src.read_bytes())
        f = d / name
        f.write_text(data, errors="surrogateescape") if isinstance(data, str) else f.write_bytes(data)
        return f

    for n in range(args.ptx + args.check):
        ptx, launch = rng.choice(corpus)
        text = mutate_ptx(rng, texts[ptx])
        f = write(f"m{n}.ptx", text, ptx.parent)
        if n < args.ptx:
            argv = ["show", str(f)]
            kind = "show"
        else:
            if launch is None:
                continue
            spec = write(f"m{n}.json", json.dumps(launch))
            argv = ["check", str(f), "--no-smt", "--launch", str(spec), "--budget", "2", "--time-budget", "8"]
            kind = "check"
        jobs.append({"id": n, "kind": kind, "seed_file": str(ptx.relative_to(ROOT)), "argv": argv})
    with_launch = [(p, l) for p, l in corpus if l]
    for n in range(args.specs):
        ptx, launch = rng.choice(with_launch)
        spec = mutate_spec(rng, launch)
        f = write(f"s{n}.json", json.dumps(spec))
        jobs.append({"id": f"s{n}", "kind": "spec", "seed_file": str(ptx.relative_to(ROOT)),
                     "argv": ["check", str(ptx), "--no-smt", "--launch", str(f), "--budget", "2", "--time-budget", "8"]})
    return jobs


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ptx", type=int, default=10000, help="PTX mutants through show")
    ap.add_argument("--check", type=int, default=300, help="PTX mutants through check --no-smt")
    ap.add_argument("--specs", type=int, default=600, help="launch-spec mutants through check --no-smt")
    ap.add_argument("--seed", type=int, default=20261204)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--budget", type=float, default=20.0, help="seconds per input")
    ap.add_argument("--max-memory", type=float, default=4.0, help="GiB of address space per worker")
    ap.add_argument("--keep", help="write the failing mutants here")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "fuzz.json"))
    a = ap.parse_args(argv)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="kverify-fuzz-") as tmp:
        jobs = make_jobs(a, Path(tmp))
        pool = Pool(a.jobs, a.budget, a.max_memory)
        try:
            res = pool.run(jobs, progress=lambda d, n: print(f"  {d} of {n}", flush=True))
        finally:
            pool.close()
        failing = [r for r in res if r.get("internal") or r.get("hang") or r.get("memory") or r.get("unlocated")
                   or r.get("bad_exit")]
        if a.keep and failing:
            keep = Path(a.keep)
            keep.mkdir(parents=True, exist_ok=True)
            by_id = {j["id"]: j for j in jobs}
            for r in failing:
                for x in by_id[r["mutant"]]["argv"]:
                    if x.startswith(tmp):
                        Path(keep / Path(x).name).write_bytes(Path(x).read_bytes())
    rows = []
    print(f"{'inputs':10} {'n':>6} {'exit 0':>7} {'exit 1':>7} {'exit 2':>7} {'exit 3':>7} {'internal':>9} {'hangs':>6} "
          f"{'memory':>7} {'unlocated':>10} {'median s':>9}")
    for kind in ("show", "check", "spec"):
        rs = [r for r in res if r["kind"] == kind]
        if not rs:
            continue
        ex = Counter(r["exit"] for r in rs)
        s = sorted(r["s"] for r in rs)
        row = {"inputs": kind, "n": len(rs), "exit": {str(k): v for k, v in sorted(ex.items(), key=str)},
               "internal_errors": sum(bool(r.get("internal")) for r in rs), "hangs": sum(bool(r.get("hang")) for r in rs),
               "memory_kills": sum(bool(r.get("memory")) for r in rs),
               "exit2_without_location": sum(bool(r.get("unlocated")) for r in rs),
               "median_s": s[len(s) // 2], "max_s": s[-1]}
        rows.append(row)
        print(f"{kind:10} {row['n']:6} {ex.get(0, 0):7} {ex.get(1, 0):7} {ex.get(2, 0):7} {ex.get(3, 0):7} "
              f"{row['internal_errors']:9} {row['hangs']:6} {row['memory_kills']:7} {row['exit2_without_location']:10} "
              f"{row['median_s']:9.3f}")
    sig = Counter()
    for r in failing:
        what = r.get("internal") or ("hang" if r.get("hang") else "memory" if r.get("memory") else
                                     f"unlocated: {r.get('unlocated')}" if r.get("unlocated") else f"exit {r.get('bad_exit')}")
        sig[re.sub(r"\d+", "N", re.sub(r"/tmp/\S+", "<file>", what))[:160]] += 1
    for s_, n in sig.most_common(40):
        print(f"  {n:5}  {s_}")
    doc = {"machine": {"host": platform.node(), "cpus": os.cpu_count(), "python": platform.python_version(),
                       "what": "2-core x86 VM, Python 3.11, no GPU" if os.cpu_count() == 2 else platform.platform()},
           "seed": a.seed, "budget_s": a.budget, "max_memory_gib": a.max_memory, "jobs": a.jobs,
           "wall_s": round(time.perf_counter() - t0, 1), "rows": rows,
           "failures": [{k: v for k, v in r.items()} for r in failing[:200]],
           "signatures": dict(sig.most_common())}
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(doc, indent=1) + "\n")
    print(f"{len(res)} inputs in {doc['wall_s']} s; {len(failing)} failing -> {a.out}")
    return 0 if not failing else 1


if __name__ == "__main__":
    sys.exit(main())
