"""Equivalence of a candidate kernel against a reference kernel (``kverify equiv``).

Owns: loading the two kernels and their launches (through ``kverify.launch``: launch JSON,
zoo manifest variant, or a launch *template* whose grid/block/shape entries are
expressions over the launch's ``args``, instantiated for every shape of ``--shapes``),
running :mod:`engine` per shape, and the obligations of the report (``kverify.report/2``,
checker ``equivalence``, rule ``equivalence.mismatch``).

Pipeline: :mod:`symexec` runs every thread of each launch over the value algebra of the
chosen model (:mod:`algebra`; the ``real`` normal forms are in :mod:`realterm`), giving
one term per output element; :mod:`engine` compares them (identical normal forms, else
z3), turns a difference into concrete inputs replayed on the interpreter, and falls back
to bounded differential testing when no proof goes through. :mod:`allsizes` proves a pair
for every value of the launch template's sizes (``--all-sizes``), or finds failing sizes.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass

from kverify.launch import LaunchSpec, instantiate, load
from kverify.launch.resolve import is_manifest
from kverify.semantics.ir import KernelError, load_module

from .engine import MODELS, EquivResult, Side, check_pair

__all__ = ["MODELS", "EquivResult", "Side", "check_pair", "load_side", "parse_shapes", "instantiate",
           "equivalence_report", "EquivObligation"]

REQUIRED = "a launch spec is required (--launch / --ref-launch, or a zoo manifest.json next to the kernel)"


def parse_shapes(text: str | None) -> list[dict]:
    """``n=1,7,13;m=4,8`` -> the cross product as a list of arg overrides."""
    if not text:
        return [{}]
    names, values = [], []
    for part in text.replace(" ", "").split(";"):
        if not part:
            continue
        k, eq, vs = part.partition("=")
        if not k or not eq or not vs:
            raise KernelError(f"--shapes expects NAME=V1,V2,...[;NAME=...], got {part!r}", "<command line>", 1, 1)
        if k in names:
            raise KernelError(f"--shapes {k}: given twice (give each name once: {k}=V1,V2,...)", "<command line>",
                              1, 1)
        try:
            values.append([int(v, 0) for v in vs.split(",")])
        except ValueError:
            raise KernelError(f"--shapes {k}: values must be integers, got {vs!r}", "<command line>", 1, 1) \
                from None
        names.append(k)
    return [dict(zip(names, combo)) for combo in itertools.product(*values)]


def load_side(file: str, launch: str | None, overrides: dict, kernel: str | None = None, module=None) -> Side:
    """One side of the comparison: ``launch`` (see ``kverify.launch.load``; default the zoo
    manifest next to ``file``) instantiated with the ``--shapes`` values ``overrides``, each
    of which must name an arg or symbol of the launch."""
    m = module or load_module(file)
    src = load(launch, file, kernel, required=REQUIRED)
    lpath = src.path
    if isinstance(src.data, dict):  # (the schema rejects any other)
        known = [k for key in ("args", "symbols") if isinstance(src.data.get(key), dict) for k in src.data[key]]
        for name in overrides:
            if name not in known:
                raise KernelError(f"--shapes {name}: the launch{' ' + lpath if lpath else ''} has no arg or symbol "
                                  f"{name} (it has {', '.join(known) or 'none'})", "<command line>", 1, 1)
    d = instantiate(src.data, overrides, lpath)
    name = kernel or d.get("kernel")
    try:
        k = m.kernel(name) if name and any(x.name == name for x in m.kernels) else m.kernel(kernel)
    except KeyError as e:
        raise KernelError(e.args[0], file, 1, 1) from None
    d["kernel"] = k.name
    return Side(file, m, k, LaunchSpec.from_dict(d, lpath), lpath)


# ---------------------------------------------------------------------- report
from kverify.rules import Rule
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
    outputs: list = None
    values: list = None  # symexec.terms.correspondence (only when asked for: kverify audit --ref)

    def to_json(self, strict: bool = False) -> dict:
        d = super().to_json(strict)
        d.update({"model": self.model, "equivalence": self.equivalence, "scope": self.scope,
                  "shape": self.shape or {}, "assumptions": self.assumptions or [], "tested": self.tested,
                  "correspondence": self.correspondence or [], "outputs": self.outputs or []})
        if self.values is not None:
            d["values"] = self.values
        return d


MISMATCH = Rule("equivalence.mismatch", "docs/equivalence.md (the floating-point model of the verdict)", "",
                "the candidate's outputs differ from the reference's for some input under the stated model")

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
        rule=MISMATCH.id if res.verdict == "refuted" else None, model=res.model,
        equivalence=res.verdict, scope=res.scope, assumptions=res.assumptions, tested=res.tested,
        correspondence=res.correspondence, shape=shape, outputs=res.outputs, values=res.values)


def equivalence_report(cand_file, ref_file, launch=None, ref_launch=None, model="real", shapes=None,
                       timeout_s=60.0, kernel=None, ref_kernel=None, cex_dir=None, test_examples=8,
                       seed=0, bind=None, progress=None, witnesses=True,
                       all_sizes: str | None = None, value_terms: bool = False) -> tuple[KernelReport, list]:
    """``ref_file`` is a kernel file, or a torch reference: ``torch:MODULE:FN`` or a callable
    (see :mod:`torchref`; ``bind`` maps its parameters to the candidate's). ``progress``: a
    :class:`~.progress.Progress` (phases on stderr), default none; ``witnesses=False`` skips the
    concrete witnesses before the solver (to measure them). ``all_sizes``: ``None`` (no all-sizes
    obligation), ``""`` (the default precondition: every size a multiple of the candidate's
    blockDim.x) or a precondition such as ``"M % 16 == 0; N % 16 == 0; K % 16 == 0"``. With it
    and no ``shapes``, only the all-sizes obligation is reported; with ``shapes`` it comes after
    the bounded family. ``value_terms``: match the values of the candidate's source lines to the
    reference's (``check_pair``)."""
    if model not in MODELS:
        raise KernelError(f"unknown --fp model {model!r} (real, bitexact, int)", "<command line>", 1, 1)
    shape_list = parse_shapes(shapes) if (shapes or all_sizes is None) else []
    from .torchref import is_torch_ref

    if is_torch_ref(ref_file):
        if all_sizes is not None:
            raise KernelError("--all-sizes applies to a kernel reference, not a torch reference", "<command line>",
                              1, 1)
        return _torch_report(cand_file, ref_file, launch, ref_launch, model, shape_list, timeout_s, kernel, cex_dir,
                             test_examples, seed, bind)
    if bind:
        raise KernelError("--bind applies to a torch reference (--ref torch:MODULE:FN)", "<command line>", 1, 1)
    cm = load_module(cand_file)
    rm = load_module(ref_file)
    rep = KernelReport(name="", path=cand_file)
    results = []
    for sh in shape_list:
        cand = load_side(cand_file, launch, sh, kernel, cm)
        ref = load_side(ref_file, ref_launch or (launch if not is_manifest(launch) else None), sh, ref_kernel, rm)
        if cand_file == ref_file and cand.kernel.name == ref.kernel.name and launch == ref_launch:
            pass
        rep.name = f"{cand.kernel.name} vs {ref.kernel.name}"
        if progress is not None:
            progress.restart(",".join(f"{k}={v}" for k, v in sh.items()))
        res = check_pair(cand, ref, model, timeout_s, cex_dir, test_examples, seed, progress=progress,
                         witnesses=witnesses, value_terms=value_terms)
        results.append((sh, res))
        rep.obligations.append(obligation_of(res, sh, len(shape_list) > 1))
    if all_sizes is not None:
        from .allsizes import check_all_sizes

        res = check_all_sizes(cand_file, ref_file, launch, ref_launch, kernel, ref_kernel, all_sizes or None, model,
                              min(timeout_s, 20.0), cex_dir, test_examples, seed, cm, rm)
        rep.name = rep.name or f"{cand_file} vs {ref_file}"
        if not shape_list:
            rep.name = f"{load_side(cand_file, launch, {}, kernel, cm).kernel.name} vs " \
                       f"{load_side(ref_file, ref_launch or (launch if not is_manifest(launch) else None), {}, ref_kernel, rm).kernel.name}"
        results.append(({}, res))
        ob = obligation_of(res, (res.counterexample or {}).get("shape") or {}, False)
        ob.title = "equivalence[all sizes]"
        ob.bound = res.scope
        rep.obligations.append(ob)
    return rep, results



def _torch_report(cand_file, ref, launch, ref_launch, model, shape_list, timeout_s, kernel, cex_dir, test_examples,
                  seed, bind):
    from .torchref import fix_counterexample, load_function, parse_bind, TorchReference, PREFIX

    if ref_launch is not None:
        raise KernelError("--ref-launch has no meaning for a torch reference: it runs on the candidate's buffers",
                          "<command line>", 1, 1)
    bind = parse_bind(bind)
    fn, text = (ref, None) if callable(ref) else (load_function(ref), ref)
    cm = load_module(cand_file)
    rep = KernelReport(name="", path=cand_file)
    results = []
    for sh in shape_list:
        cand = load_side(cand_file, launch, sh, kernel, cm)
        tref = TorchReference(fn, cand, bind, text)
        rep.name = f"{cand.kernel.name} vs {tref.text if tref.text.startswith(PREFIX) else tref.name}"
        res = fix_counterexample(check_pair(cand, tref, model, timeout_s, cex_dir, test_examples, seed), tref)
        results.append((sh, res))
        rep.obligations.append(obligation_of(res, sh, len(shape_list) > 1))
    return rep, results
