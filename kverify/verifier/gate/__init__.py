"""``kverify gate``: check the kernels a TOML policy names and fail the build on a ``violated``
obligation, or an ``unknown`` one the policy requires.

A policy (``kverify.toml``)::

    [defaults]
    require = ["race", "mbarrier", "barrier.named", "deadlock", "memory"]  # obligation id prefixes
    budget = 256         # interpreter runs exploring schedules (the default): see kverify check --budget
    timeout = 10.0       # solver seconds per obligation (z3 resource units)
    allow_skip = []      # ["gpu"]: a required GPU validation counts as skipped, not unknown
    strict = false       # true: warning-tier findings (kverify rules) fail a required obligation

    [[kernel]]
    path = "kernels/*.ptx"                  # a glob, relative to the policy file
    launch = "kernels/manifest.json"        # a launch spec or zoo manifest; or grid/block/args:
    # grid = [1]; block = [128]; args = {n = 3000, out = "3000:f32"}   (a buffer: "SHAPE:DTYPE", as --arg)
    require = ["race", "memory"]            # overrides the default

    [[kernel]]                              # equivalence against a reference kernel
    path = "kernels/softmax_online.ptx"
    launch = "kernels/softmax.launch.json"
    equiv = {ref = "kernels/softmax.ptx", model = "real"}   # also ref_launch = PATH, timeout = S
    require = ["race", "equivalence"]

    [[kernel]]                              # a Triton kernel, checked from its call
    path = "kernels/add.py"
    triton = "add_kernel"                   # the @triton.jit function in that file
    grid = [4]
    args = {x_ptr = "1000:fp32", y_ptr = "1000:fp32", out_ptr = "1000:fp32", n = 1000, BLOCK = 256}

Every entry gates the kernel it names (``kernel =``; a Triton entry: ``triton =``; neither: the
file's only kernel) in each file its glob matches: one job per file and kernel, the first entry
for a file and kernel taking it (a later entry for the same file and kernel, say a broader glob,
does not gate it again). Without PATHS an entry that gates nothing because earlier entries take
every file it matches is a bad policy, as is an entry whose kernel is not in its file or whose
file has several kernels and the entry names none. An obligation is
required when its id equals or starts with ``PREFIX.`` for a required prefix; a required prefix
that no obligation answers is ``unknown`` (not checked). ``gpu`` (GPU validation) cannot run
without a GPU: it is ``unknown`` unless ``allow_skip`` names it. Exit: 0 pass, 1 a required
obligation violated or unknown (obligations not required are reported, never fail), 2 bad input or policy
(``file:line:col: message``; also a kernel file or launch that does not load).
"""
from __future__ import annotations

import functools
import glob
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from kverify.semantics.ir import KernelError
from kverify.semantics.ir.cuda import dependencies

EXIT_PASS, EXIT_FAIL, EXIT_USAGE = 0, 1, 2
KNOWN_KEYS = {"path", "launch", "grid", "block", "args", "cluster", "require", "budget", "timeout", "allow_skip", "strict",
              "kernel", "equiv", "triton"}
EQUIV_KEYS = {"ref", "model", "ref_launch", "timeout"}
DEFAULTS = {"require": ["race", "mbarrier", "barrier.named", "deadlock", "memory"], "budget": None, "timeout": 10.0,
            "allow_skip": []}


def _line_of(text: str, needle: str) -> int:
    for i, line in enumerate(text.splitlines(), 1):
        if needle in line:
            return i
    return 1


def load_policy(path: str) -> dict:
    """The policy at ``path``: ``{"defaults": {...}, "kernels": [entry, ...], "root": dir}``;
    a ``KernelError`` (file:line:col) when it is not valid TOML or names an unknown key."""
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as e:
        raise KernelError(f"cannot read policy: {e.strerror}", path, 0, 0) from None
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        line, col = getattr(e, "lineno", 1) or 1, getattr(e, "colno", 1) or 1
        raise KernelError(f"invalid TOML: {str(e).split(' (at')[0]}", path, line, col) from None
    for key in doc:
        if key not in ("defaults", "kernel"):
            raise KernelError(f"unknown policy table {key!r} (have defaults, kernel)", path, _line_of(text, key), 1)
    defaults = {**DEFAULTS, **doc.get("defaults", {})}
    entries = doc.get("kernel", [])
    if not isinstance(entries, list):
        raise KernelError("'kernel' must be an array of tables ([[kernel]])", path, _line_of(text, "kernel"), 1)
    for i, e in enumerate([defaults] + entries):
        for key in e:
            if key not in KNOWN_KEYS:
                raise KernelError(f"unknown policy key {key!r}", path, _line_of(text, key), 1)
    for e in [defaults] + entries:  # the values' types (a string where a list goes split into characters)
        if "require" in e and not (isinstance(e["require"], list) and all(isinstance(r, str) for r in e["require"])):
            raise KernelError("require must be a list of obligation ids (require = [\"race\", ...])", path,
                              _line_of(text, "require"), 1)
        for key in ("budget", "timeout"):
            v = e.get(key)
            if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or v <= 0):
                raise KernelError(f"{key} must be a positive number, got {v!r}", path, _line_of(text, key), 1)
    for e in entries:
        if "path" not in e:
            raise KernelError("a [[kernel]] entry needs path = GLOB", path, _line_of(text, "[[kernel]]"), 1)
        if not isinstance(e.get("strict", False), bool):
            raise KernelError("strict must be true or false", path, _line_of(text, "strict"), 1)
        if "launch" in e and any(k in e for k in ("grid", "block", "args")):
            raise KernelError("give either launch or grid/block/args, not both", path, _line_of(text, e["path"]), 1)
        if "equiv" in e:
            q = e["equiv"]
            if not isinstance(q, dict) or "ref" not in q:
                raise KernelError("equiv must be a table with ref = PATH (and model, ref_launch, timeout)", path,
                                  _line_of(text, "equiv"), 1)
            for key in q:
                if key not in EQUIV_KEYS:
                    raise KernelError(f"unknown equiv key {key!r} (have {', '.join(sorted(EQUIV_KEYS))})", path,
                                      _line_of(text, "equiv"), 1)
            if q.get("model", "real") not in ("real", "bitexact", "int"):
                raise KernelError(f"equiv model must be real, bitexact or int, got {q['model']!r}", path,
                                  _line_of(text, "model"), 1)
        if "triton" in e:
            if not isinstance(e["triton"], str) or not e["triton"].isidentifier():
                raise KernelError("triton must be the name of the @triton.jit function", path, _line_of(text, "triton"), 1)
            if "grid" not in e or "launch" in e or "equiv" in e:
                raise KernelError("a triton entry needs grid and args (no launch, no equiv)", path,
                                  _line_of(text, "triton"), 1)
    heads = [i for i, line in enumerate(text.splitlines(), 1) if re.match(r"\s*\[\[\s*kernel\s*\]\]", line)]
    return {"defaults": defaults, "kernels": entries, "root": str(p.parent.resolve()), "path": str(p),
            "text": text, "heads": heads if len(heads) == len(entries) else None}


def _entry_error(policy: dict, index: int, message: str, key: str | None = None) -> KernelError:
    """``message`` at the ``[[kernel]]`` entry ``index`` of the policy: the line of its ``key``
    (else of its header); where the headers cannot be told apart (an inline array of tables), at
    line 1 naming the entry by its number."""
    heads = policy.get("heads")
    if not heads:
        return KernelError(f"[[kernel]] entry {index + 1}: {message}", policy["path"], 1, 1)
    lines = policy["text"].splitlines()
    end = heads[index + 1] - 1 if index + 1 < len(heads) else len(lines)
    line = next((i for i in range(heads[index], end + 1) if key and re.match(rf"\s*{key}\s*=", lines[i - 1])),
                heads[index])
    return KernelError(message, policy["path"], line, 1)


#: the kernel files a directory given on the command line contributes
KERNEL_SUFFIXES = (".ptx", ".cu", ".kvir")


def jobs_for(policy: dict, paths: list[str]) -> list[dict]:
    """One job per kernel file and kernel an entry names there (see the module docstring): the
    file, its policy entry (defaults merged, the launch's path resolved) and ``at``: where a
    kernel the entry does not pick is reported (``_unpicked``)."""
    root = Path(policy["root"])
    files = []
    if paths:
        for a in paths:
            ap = Path(a)
            files += sorted(str(f) for f in ap.rglob("*") if f.suffix in KERNEL_SUFFIXES) if ap.is_dir() else [a]
    else:
        for i, e in enumerate(policy["kernels"]):
            hits = sorted(glob.glob(os.path.join(root, e["path"]), recursive=True))
            if not hits and not glob.has_magic(e["path"]):  # a file the policy names that is not there
                raise _entry_error(policy, i, f"policy path {e['path']!r} names no file", "path")
            files += hits
    # the files each entry names, as glob finds them (fnmatch disagreed: "**/*.cu" matched no
    # top-level file, "*" crossed "/")
    named = [{os.path.abspath(h) for h in glob.glob(os.path.join(root, _pattern(e["path"], root)), recursive=True)}
             for e in policy["kernels"]]
    jobs, taken, used = [], set(), set()
    for f in dict.fromkeys(os.path.abspath(f) for f in files):
        for i, (entry, hits) in enumerate(zip(policy["kernels"], named)):
            # a file no entry names is not gated; a file and kernel an earlier entry took is not gated again
            which = ("triton", entry["triton"]) if "triton" in entry else ("kernel", entry.get("kernel"))
            if f not in hits or (f, which) in taken:
                continue
            taken.add((f, which))
            used.add(i)
            e = {**policy["defaults"], **entry}
            if "launch" in e:
                e["launch"] = str(root / e["launch"])
            if "equiv" in e:
                e["equiv"] = {**e["equiv"], "ref": str(root / e["equiv"]["ref"])}
                if "ref_launch" in e["equiv"]:
                    e["equiv"]["ref_launch"] = str(root / e["equiv"]["ref_launch"])
            display = os.path.relpath(f) + (f":{e['triton']}" if "triton" in e else
                                            f":{e['kernel']}" if e.get("kernel") else "")
            at = _entry_error(policy, i, "", "kernel")  # where a kernel the entry does not pick is reported
            jobs.append({"file": f, "display": display, "entry": e, "at": [at.file, at.line, at.col, at.message]})
    if not paths:
        for i, e in enumerate(policy["kernels"]):
            if i not in used and named[i]:  # (a glob that matches no file gates nothing, as before)
                raise _entry_error(policy, i, f"this entry gates nothing: every file its path {e['path']!r} "
                                   "matches is gated for the same kernel by an earlier entry", "path")
    return jobs


def _pattern(path: str, root: Path) -> str:
    """A policy path as the root-relative pattern files are matched against: ``./k/x.ptx`` and
    an absolute path name the same file as ``k/x.ptx`` (they matched nothing, and the file went
    ungated)."""
    if os.path.isabs(path):
        path = os.path.relpath(path, os.path.abspath(root))
    return os.path.normpath(path)


def _version() -> str:
    from kverify import __version__

    return __version__


@functools.lru_cache(maxsize=1)
def _code() -> str:
    """A hash of kverify's own files: a cached verdict of other code (a soundness fix since) is
    not reused (the version string alone kept it)."""
    import kverify

    root = Path(kverify.__file__).resolve().parent
    h = hashlib.sha256()
    for f in kverify.source_files():
        h.update(str(f).encode())
        h.update((root / f).read_bytes())
    return h.hexdigest()


def _imported(path: Path, seen=None) -> list:
    """``path`` and the Python files of its directory it imports, transitively (``import x``,
    ``from x import y``, ``from . import x``): what a Triton entry's kernel rests on (a constexpr
    or a @triton.jit helper kept in another module)."""
    import ast

    seen = [] if seen is None else seen
    if path in seen or not path.is_file():
        return seen
    seen.append(path)
    try:
        tree = ast.parse(path.read_text(errors="replace"))
    except SyntaxError:
        return seen
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            names += [base] + [f"{base}.{a.name}" if base else a.name for a in node.names]
    for n in names:
        if not n:
            continue
        parts = n.split(".")
        for cand in (path.parent.joinpath(*parts).with_suffix(".py"), path.parent.joinpath(*parts, "__init__.py")):
            _imported(cand.resolve(), seen)
    return seen


def _included(path: Path, seen=None) -> list:
    """``path`` and the files its ``#include "..."`` lines name, transitively (found beside the
    including file): what a cached verdict of a .cu kernel rests on where nvcc cannot say."""
    seen = [] if seen is None else seen
    if path in seen or not path.is_file():
        return seen
    seen.append(path)
    if path.suffix not in (".ptx", ".kvir", ".py"):  # any header, whatever its suffix (.hh, .tcc, ...)
        text = path.read_text(errors="replace")
        for name in re.findall(r'^\s*#\s*include\s*"([^"]+)"', text, re.M):
            _included((path.parent / name).resolve(), seen)
    return seen


def _dependencies(path: Path) -> list:
    """``path`` and the files a verdict of it rests on: for CUDA source, the files ``nvcc -MM``
    lists when nvcc is on PATH (``cuda.dependencies``: a computed ``#include NAME`` too), else the
    ``#include "..."`` lines (``_included``); for PTX and kvir, the file."""
    from kverify.semantics.ir.load import SUFFIXES

    if SUFFIXES.get(path.suffix) == "cuda" and shutil.which("nvcc"):
        found = dependencies(str(path))
        if found is not None:
            return found
    return _included(path)


@functools.lru_cache(maxsize=1)
def _compiler() -> str:
    """Which CUDA compiler turns a .cu kernel into the PTX that is checked: ``nvcc --version``
    when nvcc is on PATH (as ``compile_cuda`` chooses), else the NVRTC version."""
    if shutil.which("nvcc"):
        try:
            return subprocess.run(["nvcc", "--version"], capture_output=True, text=True, timeout=60).stdout
        except (OSError, subprocess.SubprocessError):
            return "nvcc: no version"
    try:
        from cuda.bindings import nvrtc

        return f"nvrtc {nvrtc.nvrtcVersion()[1:]}"
    except Exception:  # no NVRTC: such a check fails, and says why
        return "no CUDA compiler"


def cache_key(job: dict) -> str:
    """What a cached result rests on: the kernel and every file it includes (``_dependencies``; a
    Triton file: the modules it imports), the CUDA compiler when CUDA source is compiled, the
    launch, an equivalence reference and its includes, the policy entry and its place in the
    policy, kverify's own code, and the working directory (the result's paths are relative to
    it)."""
    from kverify.semantics.ir.load import SUFFIXES

    h = hashlib.sha256()
    files = _imported if "triton" in job["entry"] else _dependencies
    equiv = job["entry"].get("equiv", {})
    sources = files(Path(job["file"]).resolve()) + (_dependencies(Path(equiv["ref"]).resolve())
                                                    if equiv.get("ref") else [])
    for f in sources:  # the kernel, the headers it includes, the reference and its headers
        h.update(str(f).encode())
        h.update(f.read_bytes())
    if any(SUFFIXES.get(f.suffix) == "cuda" for f in sources):
        h.update(_compiler().encode())
    launch = job["entry"].get("launch")
    if launch and Path(launch).is_file():
        h.update(Path(launch).read_bytes())
    if equiv.get("ref_launch") and Path(equiv["ref_launch"]).is_file():
        h.update(Path(equiv["ref_launch"]).read_bytes())
    h.update(json.dumps([job["entry"], job.get("at")], sort_keys=True, default=str).encode())
    h.update(_version().encode())
    h.update(_code().encode())
    h.update(os.getcwd().encode())
    return h.hexdigest()


def cache_dir() -> Path:
    d = os.environ.get("KVERIFY_GATE_CACHE")
    return Path(d) if d else Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "kverify" / "gate"


def _required(oid: str, prefixes) -> bool:
    return any(oid == p or oid.startswith(p + ".") for p in prefixes)


def run_job(job: dict) -> dict:
    """Check one kernel and judge its obligations against the entry: a JSON-able result."""
    from kverify import api
    from kverify.verifier.text import display_path

    e = job["entry"]
    res = {"file": job["display"], "path": os.path.relpath(job["file"]), "obligations": [], "error": None}
    try:
        kw = {"budget": None if e["budget"] is None else int(e["budget"]), "timeout": float(e["timeout"])}
        if "triton" in e:
            rep = _check_triton(job["file"], e, kw)
        else:
            if "launch" in e:
                kw["launch"] = e["launch"]
            else:
                kw.update(grid=e.get("grid"), block=e.get("block"), args=_args(e), cluster=e.get("cluster"))
            if e.get("kernel"):  # which kernel of a file with several (a KNOWN_KEYS key the check ignored)
                kw["kernel_name"] = e["kernel"]
            if job.get("export_smt"):
                from kverify.symbolic.budget import export_smt

                with export_smt(job["export_smt"], Path(job["file"]).name):
                    rep = api.check(job["file"], **kw)
            else:
                rep = api.check(job["file"], **kw)
        res["sarif"] = rep.to_sarif()
        obs = rep.obligations
        if "equiv" in e:
            obs = obs + _equivalence(job["file"], e, kw)
    except KernelError as err:  # bad input (kernel, launch): exit 2
        res["error"], res["bad_input"] = str(_unpicked(job) or err), True
        obs = []
    except Exception as err:  # a bug: no verdict, never clean
        res["error"] = f"{job['display']}:0:0: internal error: {type(err).__name__}: {err}"
        obs = []
    answered = set()
    for o in obs:
        req = _required(o.id, e["require"])
        loc = o.locations[0] if o.locations else None  # its own file: a .cu line is no line of the .ptx
        res["obligations"].append({"id": o.id, "status": o.status, "required": req, "rule": o.rule,
                                   "severity": o.severity(bool(e.get("strict", False))),
                                   "path": display_path(loc.path or job["file"], job["file"]) if loc else None,
                                   "line": loc.line if loc else None, "message": o.message})
        answered.add(o.id)
    for p in e["require"]:
        if any(_required(i, [p]) for i in answered):
            continue
        if p == "gpu":
            skip = "gpu" in e.get("allow_skip", [])
            res["obligations"].append({"id": "gpu", "status": "skipped" if skip else "unknown", "required": not skip,
                                       "rule": None, "path": None,
                                       "line": None, "message": "GPU validation needs a GPU; none here" +
                                       (" (policy allows skipping it)" if skip else "")})
        else:
            reason = res["error"] or "no checker answered this obligation"
            res["obligations"].append({"id": p, "status": "unknown", "required": True, "rule": None, "path": None,
                                       "line": None, "message": reason})
    res["passed"] = not any(o["required"] and _failing(o) for o in res["obligations"]) and res["error"] is None
    return res


def _unpicked(job: dict) -> KernelError | None:
    """The error, at the policy entry, of an entry that picks no kernel of its file: it names one
    the file does not have, or none of several (the check said "give kernel_name=", at the
    kernel file's line 0); None when the entry picks one (the check failed for another reason)."""
    from kverify.semantics.ir import load_module

    e = job["entry"]
    if "triton" in e:
        return None
    try:
        m = load_module(job["file"])
        m.kernel(e.get("kernel"))
        return None
    except KernelError:
        return None
    except KeyError:
        names = [k.name for k in m.kernels if k.is_entry]
    path, line, col, prefix = job["at"]
    rel = os.path.relpath(job["file"])
    msg = (f"{rel} has no kernel {e['kernel']!r} (kernels: {', '.join(names) or 'none'})" if e.get("kernel") else
           f"{rel} has {len(names)} kernels" + (f" ({', '.join(names)}): name one with kernel = NAME in its "
                                                "[[kernel]] entry" if names else ""))
    return KernelError(prefix + msg, path, line, col)


def _args(e: dict) -> dict:
    """The entry's ``args`` by parameter name: numbers, and a ``"SHAPE:DTYPE"`` string
    (``"64:f32"``, ``"4x100:fp32"``: a buffer of that shape, as ``--arg`` reads it) as a
    ``kverify.Tensor``."""
    from kverify.triton_cli import _value

    return {k: (_value(k, v) if isinstance(v, str) else v) for k, v in (e.get("args") or {}).items()}


def _check_triton(path: str, e: dict, kw: dict):
    """``kverify.triton.check`` of the entry's ``@triton.jit`` function in ``path``, its
    parameters given by name in ``args`` (``_args``)."""
    import kverify.triton as kt
    from kverify.triton_cli import load_kernel

    fn = load_kernel(f"{path}:{e['triton']}")
    given = _args(e)
    missing = [p.name for p in fn.params if p.name not in given and not p.has_default]
    if missing:
        raise KernelError(f"{e['triton']}: the policy's args give no {', '.join(missing)}", path, 0, 0)
    grid = tuple(e["grid"]) if isinstance(e["grid"], list) else (e["grid"],)
    return kt.check(fn, grid, budget=kw["budget"], timeout=kw["timeout"], **given)


def _equivalence(path: str, e: dict, kw: dict) -> list:
    """The ``equivalence`` obligation of ``kverify equiv`` of the file against the entry's
    reference, at the entry's launch (or ``grid``/``block``/``args``)."""
    from kverify import api

    q = e["equiv"]
    launch = kw.get("launch")
    rep = api.equiv(path, q["ref"], grid=kw.get("grid"), block=kw.get("block"), args=kw.get("args") or (),
                    launch=launch, ref_launch=q.get("ref_launch"), fp=q.get("model", "real"),
                    timeout=float(q.get("timeout", 60.0)))
    return rep.obligations


def _failing(o: dict) -> bool:
    """A required obligation fails the gate when it is unknown, or violated at the error tier: a
    warning-tier violation (kverify rules; ``strict = true`` in the policy entry makes warnings
    errors) is reported and passes."""
    return o["status"] == "unknown" or o["status"] == "violated" and o.get("severity", "error") == "error"


def _cached_run(job: dict, use_cache: bool) -> dict:
    if not use_cache:
        return {**run_job(job), "cached": False}
    key = cache_key(job)
    f = cache_dir() / key[:2] / f"{key}.json"
    if f.is_file():
        try:
            return {**json.loads(f.read_text()), "file": job["display"], "cached": True}
        except (OSError, ValueError):
            pass
    res = run_job(job)
    if res["error"] is None or "internal error" not in res["error"]:
        f.parent.mkdir(parents=True, exist_ok=True)
        tmp = f.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(res))
        os.replace(tmp, f)
    return {**res, "cached": False}


def _progress(i: int, n: int, res: dict, out) -> None:
    mark = "pass" if res["passed"] else "FAIL"
    src = " (cached)" if res.get("cached") else ""
    if out.isatty():
        width = 30
        done = int(width * i / n)
        out.write(f"\r[{'#' * done}{'.' * (width - done)}] {i}/{n} {res['file']}: {mark}{src}\x1b[K")
        if i == n:
            out.write("\n")
    else:
        out.write(f"[{i}/{n}] {res['file']}: {mark}{src}\n")
    out.flush()


def run_gate(jobs: list[dict], n_jobs: int = 1, use_cache: bool = True, progress=None) -> list[dict]:
    results = [None] * len(jobs)
    if n_jobs > 1 and len(jobs) > 1:
        with ProcessPoolExecutor(max_workers=n_jobs) as ex:
            futs = {ex.submit(_cached_run, j, use_cache): i for i, j in enumerate(jobs)}
            from concurrent.futures import as_completed

            for k, fut in enumerate(as_completed(futs), 1):
                results[futs[fut]] = fut.result()
                if progress:
                    _progress(k, len(jobs), results[futs[fut]], progress)
    else:
        for i, j in enumerate(jobs):
            results[i] = _cached_run(j, use_cache)
            if progress:
                _progress(i + 1, len(jobs), results[i], progress)
    return results


def exit_code(results) -> int:
    if any(r.get("bad_input") for r in results):
        return EXIT_USAGE
    return EXIT_PASS if all(r["passed"] for r in results) else EXIT_FAIL


def to_json(results) -> dict:
    return {"format": "kverify.gate/1", "version": _version(), "passed": exit_code(results) == EXIT_PASS,
            "kernels": [{k: v for k, v in r.items() if k != "sarif"} for r in results]}


def to_sarif(results) -> dict:
    """One SARIF 2.1.0 log: the checks' own results (``Report.to_sarif``) merged into one run,
    plus a ``gate.unknown.<id>`` error for each required obligation the check left unknown, at
    the obligation's own location (the file of its line, a ``.cu`` for a ``.ptx`` compiled with
    line info; else the kernel file, line 1) (the checks' own results of obligations not required
    stay in the log at their own level)."""
    from kverify.verifier.sarif import SCHEMA_URI

    rules, seen, out = [], {}, []
    for r in results:
        run = (r.get("sarif") or {}).get("runs", [{}])[0]
        local = run.get("tool", {}).get("driver", {}).get("rules", [])
        for res in run.get("results", []):
            rid = res.get("ruleId")
            if rid is not None and rid not in seen:
                rule = next((x for x in local if x["id"] == rid), {"id": rid})
                seen[rid] = len(rules)
                rules.append(rule)
            res = dict(res)
            if rid is not None:
                res["ruleIndex"] = seen[rid]
            out.append(res)
        for o in r["obligations"]:
            if o["required"] and o["status"] == "unknown":
                rid = f"gate.unknown.{o['id']}"
                if rid not in seen:
                    seen[rid] = len(rules)
                    rules.append({"id": rid, "shortDescription": {"text": f"required obligation {o['id']} is unknown"},
                                  "defaultConfiguration": {"level": "error"}})
                out.append({"ruleId": rid, "ruleIndex": seen[rid], "level": "error",
                            "message": {"text": f"required obligation {o['id']} unknown: {o['message'] or 'no reason'}"},
                            "locations": [{"physicalLocation": {"artifactLocation": {"uri": o["path"] or r["path"]},
                                                                "region": {"startLine": max(int(o["line"] or 1), 1)}}}]})
    return {"$schema": SCHEMA_URI, "version": "2.1.0",
            "runs": [{"tool": {"driver": {"name": "kverify", "version": _version(), "rules": rules}},
                      "results": out}]}


def to_text(results) -> str:
    lines = []
    for r in results:
        lines.append(f"{r['file']}: {'pass' if r['passed'] else 'FAIL'}{' (cached)' if r.get('cached') else ''}")
        if r["error"]:
            lines.append(f"  error: {r['error']}")
        for o in r["obligations"]:
            if o["status"] in ("violated", "unknown", "skipped"):
                tag = ("required" if o["required"] else "not required") + \
                    (", warning" if o.get("severity") == "warning" else "")
                at = f" at {o['path']}:{o['line']}" if o["line"] else ""
                lines.append(f"  {o['id']}: {o['status']} ({tag}){at}" + (f" [{o['rule']}]" if o["rule"] else ""))
    n_pass = sum(r["passed"] for r in results)
    lines.append(f"gate: {n_pass}/{len(results)} kernels pass -> {'PASS' if n_pass == len(results) else 'FAIL'}")
    return "\n".join(lines) + "\n"


def to_markdown(results) -> str:
    n_pass = sum(r["passed"] for r in results)
    head = "✅ PASS" if n_pass == len(results) else "❌ FAIL"
    lines = [f"## kverify gate: {head} ({n_pass}/{len(results)} kernels)", "",
             "| kernel | result | failing obligations | not-required findings |", "|---|---|---|---|"]
    for r in results:
        bad = [f"`{o['id']}` {o['status']}" for o in r["obligations"] if o["required"] and _failing(o)]
        soft = [f"`{o['id']}` {o['status']}" + (" (warning)" if o.get("severity") == "warning" else "")
                for o in r["obligations"] if o["status"] in ("violated", "unknown", "skipped")
                and not (o["required"] and _failing(o))]
        if r["error"]:
            bad.append(f"error: {r['error']}")
        lines.append(f"| `{r['file']}` | {'pass' if r['passed'] else '**FAIL**'} | {', '.join(bad) or '-'} | "
                     f"{', '.join(soft) or '-'} |")
    return "\n".join(lines) + "\n"


def add_parser(sub) -> None:
    s = sub.add_parser("gate", help="CI gate: check the kernels a TOML policy names; exit 1 on a violated or a "
                       "required unknown obligation")
    s.add_argument("paths", nargs="*", help="kernel files or directories (default: every file the policy's globs match)")
    s.add_argument("--policy", default="kverify.toml")
    s.add_argument("--format", choices=["text", "json", "sarif", "md"], default="text")
    s.add_argument("--sarif", metavar="FILE", help="also write the SARIF 2.1.0 log to FILE")
    s.add_argument("--summary", metavar="FILE", help="also append the Markdown summary to FILE "
                   "(e.g. $GITHUB_STEP_SUMMARY)")
    s.add_argument("--jobs", type=int, default=1)
    s.add_argument("--no-cache", action="store_true")
    s.add_argument("--export-smt", metavar="DIR", help="write the SMT queries of the race and mbarrier checkers "
                   "to DIR (as check --export-smt); implies --no-cache")
    s.set_defaults(func=cmd_gate)


def cmd_gate(args) -> int:
    policy = load_policy(args.policy)
    for p in args.paths:
        if not os.path.exists(p):
            raise KernelError("no such file or directory", p, 0, 0)
    jobs = jobs_for(policy, args.paths)
    if not jobs:  # a gate that checked nothing must not pass
        raise KernelError("the policy gates no kernel file (no [[kernel]] path glob matches one)", policy["path"], 1, 1)
    for j in jobs:
        j["export_smt"] = args.export_smt
    results = run_gate(jobs, max(1, args.jobs), not (args.no_cache or args.export_smt), progress=sys.stderr)
    if args.sarif:
        Path(args.sarif).write_text(json.dumps(to_sarif(results), indent=2))
    if args.summary:
        with open(args.summary, "a") as fh:
            fh.write(to_markdown(results))
    out = {"text": to_text, "md": to_markdown}.get(args.format)
    if out:
        sys.stdout.write(out(results))
    else:
        print(json.dumps(to_json(results) if args.format == "json" else to_sarif(results), indent=2))
    return exit_code(results)
