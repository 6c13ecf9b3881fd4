"""Equivalence of a candidate kernel against a reference kernel (``kverify equiv``).

Owns: loading the two kernels and their launches (launch JSON, zoo manifest variant, or a
launch *template* whose grid/block/shape entries are expressions over the launch's
``args``, instantiated for every shape of ``--shapes``), running :mod:`engine` per shape,
and the obligations of the report (``kverify.report/2``, checker ``equivalence``, rule
``equivalence.mismatch``).

Pipeline: :mod:`symexec` runs every thread of each launch over the value algebra of the
chosen model (:mod:`algebra`; the ``real`` normal forms are in :mod:`realterm`), giving
one term per output element; :mod:`engine` compares them (identical normal forms, else
z3), turns a difference into concrete inputs replayed on the interpreter, and falls back
to bounded differential testing when no proof goes through.
"""
from __future__ import annotations

import itertools
import json
from dataclasses import dataclass
from pathlib import Path

from kverify.semantics.ir import KernelError, load_module

from .engine import MODELS, EquivResult, Side, check_pair

__all__ = ["MODELS", "EquivResult", "Side", "check_pair", "load_side", "parse_shapes", "instantiate",
           "equivalence_report", "EquivObligation"]


def parse_shapes(text: str | None) -> list[dict]:
    """``n=1,7,13;m=4,8`` -> the cross product as a list of arg overrides."""
    if not text:
        return [{}]
    names, values = [], []
    for part in text.replace(" ", "").split(";"):
        if not part:
            continue
        k, eq, vs = part.partition("=")
        if not eq or not vs:
            raise KernelError(f"--shapes expects NAME=V1,V2,...[;NAME=...], got {part!r}", "<command line>", 1, 1)
        try:
            values.append([int(v, 0) for v in vs.split(",")])
        except ValueError:
            raise KernelError(f"--shapes {k}: values must be integers, got {vs!r}", "<command line>", 1, 1) \
                from None
        names.append(k)
    return [dict(zip(names, combo)) for combo in itertools.product(*values)]


def _eval_expr(v, env, path):
    if isinstance(v, (int, float)) or v is None:
        return v
    if isinstance(v, str):
        try:
            return int(eval(v, {"__builtins__": {}}, {**env, "cdiv": lambda a, b: -(-a // b),
                                                      "max": max, "min": min}))
        except Exception as e:  # noqa: BLE001 - a user expression
            raise KernelError(f"launch template: cannot evaluate {v!r}: {e}", path, 1, 1) from None
    if isinstance(v, list):
        return [_eval_expr(x, env, path) for x in v]
    return v


def instantiate(d: dict, overrides: dict, path: str) -> dict:
    """A launch dict with ``overrides`` applied to ``args`` and every string expression
    in grid/block/buffer shapes evaluated over the args."""
    d = json.loads(json.dumps(d))
    args = dict(d.get("args") or {})
    for k, v in overrides.items():
        args[k] = v
    env = {k: v for k, v in args.items() if isinstance(v, int)}
    for k, v in args.items():  # args given as expressions over the others (a PTX-named copy of n)
        if isinstance(v, str):
            args[k] = env[k] = _eval_expr(v, env, path)
    d["args"] = args
    for key in ("grid", "block", "cluster"):
        if key in d:
            d[key] = _eval_expr(d[key], env, path)
    for b in (d.get("buffers") or {}).values():
        b["shape"] = _eval_expr(b["shape"], env, path)
    return d


def _launch_dict(file: str, launch):
    """(launch dict, path) from a launch dict, a launch JSON, a zoo manifest (the variant
    for ``file``) or the manifest next to ``file``."""
    if isinstance(launch, dict):
        return launch, "<launch>"
    if not launch and (Path(file).parent / "manifest.json").is_file():
        launch = str(Path(file).parent / "manifest.json")
    if not launch:
        raise KernelError("a launch spec is required (--launch / --ref-launch, or a zoo manifest.json next to "
                          "the kernel)", file, 0, 0)
    try:
        d = json.loads(Path(launch).read_text())
    except OSError as e:
        raise KernelError(f"cannot read launch spec: {e.strerror}", launch, 0, 0) from None
    except json.JSONDecodeError as e:
        raise KernelError(f"launch spec: {e.msg}", launch, e.lineno, e.colno) from None
    if isinstance(d, dict) and "variants" in d:
        stem = Path(file).stem
        match = [v for v in d["variants"] if Path(v["file"]).stem == stem]
        if not match:
            raise KernelError(f"manifest has no variant for {Path(file).name}", launch, 1, 1)
        d = match[0]["launch"]
    return d, launch


def load_side(file: str, launch: str | None, overrides: dict, kernel: str | None = None, module=None) -> Side:
    from kverify.semantics.interpreter import LaunchSpec

    m = module or load_module(file)
    d, lpath = _launch_dict(file, launch)
    d = instantiate(d, overrides, lpath)
    name = kernel or d.get("kernel")
    try:
        k = m.kernel(name) if name and any(x.name == name for x in m.kernels) else m.kernel(kernel)
    except KeyError as e:
        raise KernelError(e.args[0], file, 0, 0) from None
    d["kernel"] = k.name
    return Side(file, m, k, LaunchSpec.from_dict(d, lpath), lpath)


# ---------------------------------------------------------------------- report
from kverify.verifier.report import KernelReport, Location, Obligation  # noqa: E402


@dataclass
class EquivObligation(Obligation):
    """An obligation with the equivalence verdict, model and scope. ``status`` stays in the
    report lattice: proved -> proved (or bounded for a family of shapes), refuted ->
    violated, tested/unknown -> unknown (testing is never a proof)."""

    model: str = "real"
    equivalence: str = "unknown"
    scope: str = ""
    assumptions: list = None
    tested: dict | None = None
    correspondence: list = None
    shape: dict = None

    def to_json(self) -> dict:
        d = super().to_json()
        d.update({"model": self.model, "equivalence": self.equivalence, "scope": self.scope,
                  "shape": self.shape or {}, "assumptions": self.assumptions or [], "tested": self.tested,
                  "correspondence": self.correspondence or []})
        return d


STATUS = {"proved": "proved", "refuted": "violated", "tested": "unknown", "unknown": "unknown"}


def obligation_of(res: EquivResult, shape: dict, family: bool) -> EquivObligation:
    sid = ",".join(f"{k}={v}" for k, v in shape.items())
    locs = []
    cex = res.counterexample
    if cex:
        for key in ("candidate_line", "reference_line"):
            s = cex.get(key)
            if s and ":" in s and not s.startswith("ptx"):
                p, _, ln = s.rpartition(":")
                if ln.isdigit():
                    locs.append(Location(p, int(ln)))
    status = STATUS[res.verdict]
    bound = None
    if res.verdict == "proved" and family:
        status, bound = "bounded", "shapes " + sid
    return EquivObligation(
        title=f"equivalence[{sid}]" if sid else "equivalence", checker="equivalence", status=status,
        message=f"{res.verdict} under the {res.model} model: {res.message}", bound=bound or res.scope,
        locations=locs, counterexample=cex, time_s=res.time_s,
        rule="equivalence.mismatch" if res.verdict == "refuted" else None, model=res.model,
        equivalence=res.verdict, scope=res.scope, assumptions=res.assumptions, tested=res.tested,
        correspondence=res.correspondence, shape=shape)


def equivalence_report(cand_file, ref_file, launch=None, ref_launch=None, model="real", shapes=None,
                       timeout_s=60.0, kernel=None, ref_kernel=None, cex_dir=None, test_examples=8,
                       seed=0) -> tuple[KernelReport, list]:
    if model not in MODELS:
        raise KernelError(f"unknown --fp model {model!r} (real, bitexact, int)", "<command line>", 1, 1)
    shape_list = parse_shapes(shapes)
    cm = load_module(cand_file)
    rm = load_module(ref_file)
    rep = KernelReport(name="", path=cand_file)
    results = []
    for sh in shape_list:
        cand = load_side(cand_file, launch, sh, kernel, cm)
        ref = load_side(ref_file, ref_launch or (launch if not _is_manifest(launch) else None), sh, ref_kernel, rm)
        if cand_file == ref_file and cand.kernel.name == ref.kernel.name and launch == ref_launch:
            pass
        rep.name = f"{cand.kernel.name} vs {ref.kernel.name}"
        res = check_pair(cand, ref, model, timeout_s, cex_dir, test_examples, seed)
        results.append((sh, res))
        rep.obligations.append(obligation_of(res, sh, len(shape_list) > 1))
    return rep, results


def _is_manifest(p):
    if not p or isinstance(p, dict):
        return False
    try:
        return "variants" in json.loads(Path(p).read_text())
    except (OSError, json.JSONDecodeError, TypeError):
        return False
