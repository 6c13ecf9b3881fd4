"""The ``kverify`` command line: ``show`` and ``parse`` (front ends), later ``check``,
``run`` and ``equiv``. Bad input prints ``file:line:col: message`` and exits 2; no command
ever shows a Python traceback for a user error.

Exit codes (DESIGN.md decision 8): 0 verified / ok, 1 violated, 2 bad input or usage,
3 inconclusive.
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import sys

from kverify.launch.resolve import gpuverify_defines
from kverify.semantics.ir import KernelError, load_module, print_kernel, print_module, source_lines
from kverify.semantics.ir.visit import instructions
from kverify.semantics.ir.nodes import where

from .text import diagnostic

EXIT_OK, EXIT_VIOLATED, EXIT_USAGE, EXIT_INCONCLUSIVE = 0, 1, 2, 3


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        self.print_usage(sys.stderr)
        print(f"kverify: error: {message}", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)


#: ``--max-memory``: GiB a command may map beyond what the process holds at its start
DEFAULT_MAX_MEMORY_GIB = 8.0

def _add_input(p):
    p.add_argument("file", help="a .ptx, .cu or .kvir file")
    p.add_argument("--kernel", help="kernel name (default: the only .entry)")
    p.add_argument("--arch", default="sm_90a", help="target for .cu input (default sm_90a)")
    p.add_argument("-D", dest="defines", action="append", default=[], metavar="NAME[=VALUE]",
                   help="preprocessor definition for .cu input")


def _load(args):
    defines = {}
    header = gpuverify_defines(args.file) if args.file.endswith((".cu", ".cuh")) else []
    for d in header + list(args.defines):  # the command line's own -D last: it wins
        k, _, v = d.partition("=")
        defines[k] = v or None
    opts = {"arch": args.arch, "defines": defines} if args.file.endswith((".cu", ".cuh")) else {}
    return load_module(args.file, **opts)


def _positive(kind, zero=False):
    """An argparse type: a positive ``kind`` (or 0, with ``zero``): a budget or a timeout of -5 is
    a usage error, exit 2."""
    def parse(text):
        try:
            v = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
        if not (v >= 0 if zero else v > 0):
            raise argparse.ArgumentTypeError(f"must be {'0 or more' if zero else 'positive'}, got {text}")
        return v
    parse.__name__ = kind.__name__
    return parse


def _kernel(m, name, file):
    """The kernel ``name`` of module ``m`` (its PTX name, or its C++ name or the C++ name's
    base when that picks one), or the only entry when ``name`` is None; a missing or
    ambiguous name is bad input at ``file:1:1`` listing the kernels."""
    from kverify.names import demangle

    entries = [k for k in m.kernels if k.is_entry]
    listed = ", ".join(k.name for k in entries) or "none"
    if name is None:
        if len(entries) == 1:
            return entries[0]
        raise KernelError(f"the module has {len(entries)} kernels ({listed}); name one with --kernel", file, 1, 1)
    for k in m.kernels:
        if k.name == name:
            return k
    hits = [k for k in entries if name in (demangle(k.name), demangle(k.name).split("(")[0])]
    if len(hits) == 1:
        return hits[0]
    raise KernelError(f"no kernel {name!r} in this module (kernels: {listed})", file, 1, 1)








def _names_of_spec(m, spec, k, f):
    """A launch spec names things that exist: its kernel (when it names one) is in the module, and
    every ``outputs`` entry is a buffer (a name that matches nothing was ignored, and the check ran
    on something else). (Its ``args`` may define names its expressions use; its ``buffers`` may be
    a tensor map's or a struct field's.)"""
    from kverify.launch import schema

    path = spec.path or f
    if spec.kernel:
        try:
            _kernel(m, spec.kernel, f)
        except KernelError as e:
            raise KernelError(f"launch spec: {e.message}", path, *schema.locate(path, ["kernel"])) from None
    for o in spec.outputs or ():
        if o not in (spec.buffers or {}) and o not in (getattr(spec, "tensormaps", None) or {}):
            raise KernelError(f"launch spec: outputs names {o!r}, not a buffer of the launch", path,
                              *schema.locate(path, ["outputs"]))


def cmd_show(args) -> int:
    m = _load(args)
    src = source_lines(m) if not args.no_source else None
    if args.kernel:
        k = _kernel(m, args.kernel, args.file)
        text = print_kernel(m, k, with_locs=not args.no_loc, source_lines=src)
    else:
        text = print_module(m, with_locs=not args.no_loc, source_lines=src)
    for k in m.kernels:
        named = [f"{p.source_name}={p.name}" for p in k.params if p.source_name]
        if named and (not args.kernel or k.name == args.kernel):
            sys.stdout.write(f"// {k.name} parameters: {', '.join(named)}\n")
    sys.stdout.write(text)
    return EXIT_OK


def cmd_parse(args) -> int:
    status = EXIT_OK
    for f in args.files:
        ns = argparse.Namespace(file=f, arch=args.arch, defines=args.defines)
        try:
            m = _load(ns)
        except KernelError as e:
            print(e, file=sys.stderr)
            status = EXIT_USAGE
            continue
        n = unsupported = 0
        for k in m.kernels:
            for i in instructions(k.body):
                n += 1
                if not i.supported:
                    unsupported += 1
                    loc = i.loc
                    print(f"{m.path}:{loc.ptx_line}:1: warning: unsupported instruction {i.opcode} "
                          f"(kept as an opaque op; analyses report unknown)", file=sys.stderr)
        kinds = ", ".join(f"{'entry' if k.is_entry else 'func'} {k.name}" for k in m.kernels)
        print(f"{f}: ok: {len(m.kernels)} function(s) ({kinds}), {n} instructions, "
              f"{unsupported} unsupported")
    return status


def _launch_for(args, kernel_name):
    """The launch spec (and the manifest's reference, if any) for ``args.launch``: a launch
    JSON, inline launch JSON, or a zoo manifest whose variant for this file is taken (by
    default the manifest next to the file, which ``args.launch`` then names)."""
    from kverify.launch import resolve

    r = resolve(args.launch, args.file, kernel_name)
    if not args.launch:
        args.launch = r.path
    return r.spec, r.reference


def cmd_run(args) -> int:
    import json

    from kverify.semantics.interpreter import call_reference, compare_outputs, load_reference, run_kernel
    from kverify.semantics.interpreter.scheduler import parse_replay

    from kverify.names import demangle

    from .report import Namer

    m = _load(args)
    k = _kernel(m, args.kernel, args.file)
    spec, manifest_ref = _launch_for(args, k.name)
    ref = args.ref or manifest_ref
    inputs = _npz_inputs(args.inputs) if getattr(args, "inputs", None) else None
    expected = {n[len("expected__"):]: v for n, v in (inputs or {}).items() if n.startswith("expected__")}
    inputs = {n: v for n, v in inputs.items() if not n.startswith("expected__")} if inputs else None
    r = run_kernel(m, k, spec, inputs=inputs, schedule=args.schedule, seed=args.seed, budget=args.budget,
                   replay=parse_replay(args.replay) if args.replay else None)
    mismatches = None
    if expected:  # expected__<buffer> arrays of an --inputs file (an equivalence counterexample)
        ref = f"expected outputs in {args.inputs}"
        mismatches = compare_outputs(r.outputs, expected, rtol=args.rtol, atol=args.atol)
    elif ref and not args.no_ref:
        fn = load_reference(ref, args.file)
        try:
            expected = call_reference(fn, r.inputs, spec)
        except Exception as e:  # the reference is user code
            raise KernelError(f"reference {ref} failed: {type(e).__name__}: {e}", args.file, 0, 0) from None
        if not expected:  # (an empty result printed "outputs match ()")
            raise KernelError(f"reference {ref} returned no output to compare", args.file, 0, 0)
        mismatches = compare_outputs(r.outputs, expected, rtol=args.rtol, atol=args.atol, required=spec.outputs or ())
    if r.classes is not None:
        explored = (f"{r.schedules_run} schedules: {r.classes} classes of schedules that differ only in the order "
                    f"of independent steps ({'every class' if r.por_complete else 'budget exhausted, more remain'})")
    else:
        explored = (f"{r.schedules_run} of {r.schedules_total} schedules" if r.schedules_total
                    else f"{r.schedules_run} schedule(s)")
    namer = Namer(m, {v.partition("+")[0]: 8 for v in r.mbarriers or ()})
    from kverify.rules import severity

    named = [namer.message(f.message, f.locs, f.details) for f in r.findings]
    if args.format == "json":
        out = {"schema": "kverify.run/1", "file": args.file, "kernel": k.name, "display_name": demangle(k.name),
               "status": r.status,
               "reason": r.reason, "schedule": r.schedule, "schedules_run": r.schedules_run,
               "schedules_total": r.schedules_total, "classes": r.classes, "every_class": r.por_complete,
               "robust": r.robust, "dependence": r.dependence,
               "steps": r.steps, "time_s": round(r.time_s, 4),
               "findings": [{"rule": f.rule, "severity": severity(f.rule), "message": text, "count": f.count,
                             "locations": [{"path": l.file, "line": l.line, "column": l.col,
                                            "ptx_line": l.ptx_line} for l in f.locs],
                             "objects": objects,
                             "details": {k2: v for k2, v in f.details.items() if _jsonable(v)}}
                            for f, (text, objects) in zip(r.findings, named)],
               "reference": ref, "mismatches": mismatches}
        print(json.dumps(out, indent=2))
    else:
        g, b = spec.grid, spec.block
        for f, (text, _) in zip(r.findings, named):
            for line in diagnostic(f.rule, text, f.locs[0] if f.locs else None, args.file):
                print(line)
        print(f"kverify run {args.file}: kernel {demangle(k.name)}, grid {g[0]}x{g[1]}x{g[2]}, block {b[0]}x{b[1]}x{b[2]}, "
              f"schedule {r.schedule}")
        print(f"status: {r.status}{' (' + r.reason + ')' if r.reason else ''}; {explored}, "
              f"{r.steps} warp-instructions, {r.time_s:.2f} s")
        if args.schedule == "exhaustive" and r.robust:
            print("every schedule: the run's happens-before fixes how each barrier, mbarrier phase and atomic "
                  "is matched")
        elif args.schedule == "exhaustive" and r.dependence:
            print("schedule-dependent, so its classes of schedules were explored:")
            for d in r.dependence:
                print(f"    {d}")
            if r.crossing:
                print("    (only schedules that run the clusters one after another: a race between clusters)")
            for c in r.caveats:
                print(f"    not every schedule: {c}")
        if not r.findings:
            print("findings: none")
        for f, (text, _) in zip(r.findings, named):
            locs = ", ".join(where(l, detail=True) for l in f.locs)
            print(f"{f.rule}: {locs}")
            for line in text.splitlines():
                print(f"    {line}")
            sch = f.details.get("schedule", "")
            if sch.startswith("replay "):
                print(f"    replay: kverify run {args.file} --launch {args.launch} --schedule replay "
                      f"--replay {sch.split()[1]}")
        if mismatches is not None:
            if mismatches:
                for mm in mismatches:
                    if "message" in mm:
                        print(f"reference {ref}: {mm['buffer']}: {mm['message']}")
                        continue
                    print(f"reference {ref}: {mm['buffer']} differs at flat index {mm.get('index')}: got "
                          f"{mm.get('got')}, expected {mm.get('expected')} ({mm.get('mismatches')} of "
                          f"{mm.get('of')} elements differ)")
            else:
                print(f"reference {ref}: outputs match ({', '.join(sorted(set(r.outputs) & set(expected)))})")
    if r.status in ("unsupported", "incomplete"):
        return EXIT_INCONCLUSIVE
    # the exit follows error-tier findings only (warnings are printed with their tier)
    if any(severity(f.rule) == "error" for f in r.findings) or r.status == "deadlock" or mismatches:
        return EXIT_VIOLATED
    return EXIT_OK


def _exporting(directory, prefix):
    """``export_smt`` into ``directory`` (``check --export-smt``), or nothing."""
    import contextlib

    from kverify.symbolic.budget import export_smt

    return export_smt(directory, prefix) if directory else contextlib.nullcontext()


def _recheck(rep, directory, prefix, solver) -> None:
    """``check --recheck cvc5``: re-prove the exported queries; an obligation one of whose
    queries the second solver answers differently becomes ``unknown`` with the reason."""
    from kverify.symbolic.recheck import recheck

    if not directory:
        raise KernelError("--recheck needs --export-smt DIR", "<command line>", 0, 0)
    try:
        bad = recheck(directory, prefix, solver)
    except RuntimeError as e:
        bad = [("*", "", "", str(e))]
    for name, label, z3a, other in bad:
        for o in rep.obligations:
            if o.status in ("proved", "violated") and (label == "" or o.id == label or o.id.startswith(label + ".")):
                o.status = "unknown"
                o.message = (f"re-check with {solver} disagrees on {name}: z3 {z3a}, {solver} {other}" if label
                             else f"re-check with {solver} impossible: {other}")


def cmd_check(args) -> int:
    """Each file and kernel is checked on its own: a bad file (or launch, or kernel name) is
    that entry's ``error`` and the others are still reported; the exit code is the worst.
    Text output: the linter lines of every report first (``report_diagnostics``), then one
    table per kernel, one row per obligation."""
    import json
    import os

    from kverify.launch import from_flags

    from .check import check_kernel, check_pair
    from .report import KernelReport, Location, exit_code, report_json

    from kverify.symbolic.extern import parse as parse_extern

    parse_extern(args.extern_summary)  # bad syntax: exit 2 before any file is checked
    if args.launch and (args.grid or args.block or args.arg or args.cluster):  # one would silently win
        raise KernelError("give either --launch or --grid/--block/--cluster/--arg, not both", "<command line>", 1, 1)
    reports = []
    inputs = _npz_inputs(args.inputs) if args.inputs else None
    if args.triton:  # FILE.py:KERNEL call sites (kverify/triton_cli.py)
        from kverify.triton_cli import check_triton

        reports, args.files = check_triton(args), []
    for f in args.files:
        ns = argparse.Namespace(file=f, arch=args.arch, defines=args.defines, launch=args.launch,
                                kernel=args.kernel)
        try:
            m = _load(ns)
            kernels = [_kernel(m, args.kernel, f)] if args.kernel else [k for k in m.kernels if k.is_entry]
            if not kernels:
                raise KernelError("no kernel in this file: nothing to check (no __global__ function, no PTX .entry)",
                                  f, 1, 1)
        except KernelError as e:
            reports.append(KernelReport(args.kernel or "", f, error=e.message,
                                        error_location=Location(e.file, e.line, e.col)))
            continue
        paired = set()  # dependent grids of PDL pairs: checked with their primary
        for k in kernels:
            if k.name in paired:
                continue
            try:
                spec = None if args.launch else from_flags(k, f, args.grid, args.block, args.arg, args.cluster,
                                                          args.dynamic_smem)
                if spec is None:
                    spec, _ = _launch_for(ns, k.name)
                    _names_of_spec(m, spec, k, f)
                if spec.dependent is not None and spec.kernel and _kernel(m, spec.kernel, f).name != k.name:
                    continue  # a pair's launch names its primary: this kernel is checked as its part or not at all
                if args.cooperative is not None:
                    spec = dataclasses.replace(spec, cooperative=args.cooperative)
                prefix = f"{os.path.basename(f)}.{k.name}"
                kw = dict(budget=args.budget, timeout_s=args.timeout, smt=not args.no_smt, path=f, inputs=inputs,
                          assume=args.assume, strict=args.strict, time_budget=args.time_budget,
                          extern=args.extern_summary)
                if spec.dependent is not None:  # a PDL pair: the primary's report, then the dependent's
                    dk = _kernel(m, spec.dependent["kernel"], f)
                    paired.add(dk.name)
                    with _exporting(args.export_smt, prefix):
                        reports.extend(check_pair(m, k, spec, dk, **kw))
                    continue
                with _exporting(args.export_smt, prefix):
                    reports.append(check_kernel(m, k, spec, **kw))
                if args.recheck:
                    _recheck(reports[-1], args.export_smt, prefix, args.recheck)
            except KernelError as e:
                reports.append(KernelReport(k.name, f, error=e.message,
                                            error_location=Location(e.file, e.line, e.col)))
            except (KeyboardInterrupt, RecursionError):
                raise
            except Exception as e:  # a bug in kverify: this kernel has no verdict, the others do
                if os.environ.get("KVERIFY_DEBUG"):
                    raise
                reports.append(KernelReport(k.name, f, error=f"internal error: {type(e).__name__}: {e} (no verdict; "
                                            "KVERIFY_DEBUG=1 shows the traceback)", internal=True))
    for r in reports:  # --strict also for the Triton call sites' reports
        r.strict = args.strict
        if args.inputs:  # a replay runs on the same buffer contents
            from .report import replay_with_inputs_file

            replay_with_inputs_file(r, args.inputs)
    if args.format == "json":
        print(json.dumps(report_json(reports, "check"), indent=2))
    else:
        from .text import check_text

        sys.stdout.write(check_text(reports))
    return exit_code(reports)


def _jsonable(v):
    import json

    try:
        json.dumps(v)
        return True
    except (TypeError, ValueError):
        return False


# --------------------------------------------------------------------------- equiv (and run --inputs)


def _npz_inputs(path):
    import numpy as np

    try:
        with np.load(path) as z:
            return {k: z[k] for k in z.files}
    except (OSError, ValueError) as e:
        raise KernelError(f"cannot read inputs: {e}", path, 0, 0) from None


def cmd_equiv(args) -> int:
    import json

    from .equivalence import equivalence_report
    from .equivalence.progress import Progress
    from .report import exit_code, report_json

    if args.reference and args.ref:
        raise KernelError("give the reference once: REFERENCE or --ref", "<command line>", 1, 1)
    reference = args.reference or args.ref
    if not reference:
        raise KernelError("a reference is required: REFERENCE (a kernel) or --ref torch:MODULE:FN",
                          "<command line>", 1, 1)
    # phases on stderr for anything over 2 s: on a terminal, or when asked for (never on stdout)
    show = args.progress if args.progress is not None else sys.stderr.isatty()
    progress = Progress(enabled=show)
    try:
        rep, results = equivalence_report(args.candidate, reference, launch=args.launch,
                                          ref_launch=args.ref_launch, model=args.fp, shapes=args.shapes,
                                          timeout_s=args.timeout, kernel=args.kernel, ref_kernel=args.ref_kernel,
                                          cex_dir=args.cex_dir, test_examples=args.tests, seed=args.seed,
                                          bind=args.bind, progress=progress, all_sizes=args.all_sizes)
    finally:
        progress.clear()
    if args.format == "json":
        print(json.dumps(report_json([rep], "equiv"), indent=2, default=str))
        return exit_code([rep])
    print(f"kverify equiv {args.candidate} {reference}: {rep.name}: {rep.verdict.upper()} "
          f"(model {args.fp})")
    for o, (shape, r) in zip(rep.obligations, results):
        count = "every output element" if o.title == "equivalence[all sizes]" and r.verdict == "proved" \
            else f"{r.elements} output elements" + (f" ({', '.join(r.outputs)})" if r.outputs else "")
        print(f"  {r.verdict:8} {o.title:28} {r.time_s:6.2f}s  {count}")
        print(f"           {r.message}")
        print(f"           scope: {r.scope}")
        if o.title == "equivalence[all sizes]" and r.verdict == "proved":
            print(f"           assumes also: {r.assumptions[-1]}")
        if r.counterexample:
            c = r.counterexample
            print(f"           counterexample: {c['buffer']}[{', '.join(map(str, c['index_nd']))}] (flat "
                  f"{c['index']}): candidate {c['candidate_value']}, reference {c['reference_value']} "
                  f"({c['mismatches']} of {c['of']} elements differ)")
            if c.get("candidate_line") or c.get("reference_line"):
                print(f"           lines: candidate {c.get('candidate_line')}, reference {c.get('reference_line')}")
            elif not c.get("lines_known", True):
                print("           lines: not known (symbolic execution did not finish and the interpreter run did not tell)")
            if c.get("found_by"):
                print(f"           found by: {c['found_by']}")
            for name, d in c.get("inputs", {}).items():
                what = "output" if d.get("role", "input") != "input" else "input"
                extra = ", initial contents" if what == "output" else ""
                cnt = d.get("nonzero_count", len(d["nonzero"]))
                rest = "all other elements 0" if cnt <= len(d["nonzero"]) else \
                    f"the first {len(d['nonzero'])} of {cnt} nonzero elements; all of them are in the inputs file"
                print(f"           {what} {name}{extra}: nonzero {d['nonzero']} ({rest})")
            print(f"           replay: {c['replay']}")
            if str(reference).startswith("torch:") and c.get("replay_reference"):
                print(f"           reference: {c['replay_reference']}")
        if r.tested:
            t = r.tested
            print(f"           tested: {t.get('examples', 0)} inputs ({t.get('strategy', '')}), poisoned outputs, "
                  f"input mutation{'; problems: ' + '; '.join(t['problems']) if t.get('problems') else ''}")
    print(f"  assumes: {'; '.join(results[0][1].assumptions) if results else ''}")
    return exit_code([rep])


def _add_equiv(sub):
    s = sub.add_parser("equiv", help="prove a candidate kernel equivalent to a reference kernel, or refute it "
                                     "with a replayable counterexample")
    s.add_argument("candidate", help="candidate kernel (.ptx, .cu, .kvir)")
    s.add_argument("reference", nargs="?", help="reference kernel (.ptx, .cu, .kvir), or torch:MODULE:FN")
    s.add_argument("--ref", help="the reference instead of REFERENCE: a kernel, or torch:MODULE:FN (a PyTorch "
                                 "function; MODULE a .py file or a dotted module; see docs/equivalence.md)")
    s.add_argument("--bind", help="torch reference: NAME=PARAM[,NAME=PARAM...] binds a function parameter to a "
                                  "kernel parameter (CUDA name, PTX name or position); default: by name")
    s.add_argument("--launch", help="candidate launch spec (JSON, zoo manifest, or a template whose grid/block/"
                                    "shape entries are expressions over args); default: the zoo manifest")
    s.add_argument("--ref-launch", help="reference launch spec (default: its zoo manifest, else --launch)")
    s.add_argument("--fp", choices=["real", "bitexact", "int"], default="real",
                   help="floating-point model of the comparison (default real)")
    s.add_argument("--shapes", help="arg values to instantiate both launches with: NAME=V1,V2[;NAME=...]")
    s.add_argument("--all-sizes", nargs="?", const="", default=None, metavar="PRECONDITION",
                   help="also prove equivalence for every value of the launch template's integer args (real model): "
                        "'proved for all ...' only when the whole argument holds, else the smallest failing sizes are "
                        "run concretely (refuted with a counterexample) or the verdict is unknown with the failed step. "
                        "PRECONDITION: 'M %% 16 == 0; N %% 16 == 0; ...' (default: every size a multiple of the "
                        "candidate's blockDim.x)")
    s.add_argument("--timeout", type=_positive(float), default=60.0, help="solver budget per shape in solver seconds (z3 resource units, S x 5,000,000)")
    s.add_argument("--kernel", help="candidate kernel name")
    s.add_argument("--ref-kernel", help="reference kernel name")
    s.add_argument("--tests", type=_positive(int, zero=True), default=8, help="hypothesis examples when no proof goes through")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--cex-dir", default="kverify-cex", help="where counterexample inputs and launches are written")
    s.add_argument("--format", choices=["text", "json"], default="text")
    s.add_argument("--progress", action="store_true", default=None,
                   help="show the phase on stderr for anything over 2 s (default: only when stderr is a terminal)")
    s.add_argument("--no-progress", dest="progress", action="store_false", help="never show progress")
    s.set_defaults(func=cmd_equiv)


def cmd_audit(args) -> int:
    """``kverify audit``: per source line obligations, evidence, reference lines (kverify/verifier/audit)."""
    import json

    from kverify.launch import from_flags

    from .audit import build
    from .audit.render import markdown, page
    from .check import check_kernel
    from .report import exit_code

    if args.output and (os.path.isdir(args.output) or not os.path.isdir(os.path.dirname(args.output) or ".")):
        # (the whole check ran, then the write failed: "internal error", exit 3)
        raise KernelError("-o: " + ("is a directory" if os.path.isdir(args.output) else "no such directory"),
                          args.output, 0, 0)
    m = _load(args)
    k = _kernel(m, args.kernel, args.file)
    spec = None if args.launch else from_flags(k, args.file, args.grid, args.block, args.arg)
    if spec is None:
        spec, _ = _launch_for(args, k.name)
    rep = check_kernel(m, k, spec, budget=args.budget, timeout_s=args.timeout, path=args.file)
    eq = None
    if args.ref:
        from .equivalence import equivalence_report

        eq, _ = equivalence_report(args.file, args.ref, launch=args.launch, ref_launch=args.ref_launch, model=args.fp,
                                   timeout_s=args.timeout, kernel=k.name, cex_dir=args.cex_dir, value_terms=True)
    doc = build(m, k, spec, args.file, rep, eq, args.ref)
    text = {"json": lambda: json.dumps(doc, indent=2, default=str), "md": lambda: markdown(doc),
            "html": lambda: page(doc)}[args.format]()
    if args.output:
        with open(args.output, "w") as f:
            f.write(text)
        print(f"{args.output}: {doc['summary']['verdict']} ({len(doc['rows'])} lines, "
              f"{len(doc['timeline']['events'])} timeline events)")
    else:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return exit_code([rep] + ([eq] if eq else []))


def _p_show(sub):
    s = sub.add_parser("show", help="print the structured IR of a kernel with its source lines")
    _add_input(s)
    s.add_argument("--no-loc", action="store_true", help="omit !loc positions")
    s.add_argument("--no-source", action="store_true", help="omit source-line comments")
    s.set_defaults(func=cmd_show)


def _p_parse(sub):
    s = sub.add_parser("parse", help="validate input files (exit 2 on the first error of each)")
    s.add_argument("files", nargs="+")
    s.add_argument("--arch", default="sm_90a")
    s.add_argument("-D", dest="defines", action="append", default=[])
    s.set_defaults(func=cmd_parse)


def _p_run(sub):
    s = sub.add_parser("run", help="run a kernel on the CPU interpreter: findings and outputs vs a reference")
    _add_input(s)
    s.add_argument("--launch", help="launch spec JSON (or a zoo manifest.json: the variant for FILE)")
    s.add_argument("--max-memory", type=float, default=DEFAULT_MAX_MEMORY_GIB, metavar="GIB",
                   help=f"memory the run may take beyond what the process holds at start (default "
                   f"{DEFAULT_MAX_MEMORY_GIB:g} GiB; 0: no limit)")
    s.add_argument("--ref", help="reference module:function(inputs, args) -> {buffer: array}")
    s.add_argument("--no-ref", action="store_true", help="do not compare against the manifest's reference")
    s.add_argument("--schedule", default="deterministic",
                   choices=["deterministic", "random", "exhaustive", "replay"])
    s.add_argument("--seed", type=int, default=0, help="seed of inputs and of the random schedule")
    s.add_argument("--budget", type=_positive(int), default=None, help="runs of --schedule exhaustive: classes of schedules "
                   "explored by dynamic partial-order reduction when one run does not stand for every schedule "
                   "(default 256)")
    s.add_argument("--replay", help="deviations POINT:ALT[,...] for --schedule replay")
    s.add_argument("--rtol", type=float, default=1e-5)
    s.add_argument("--atol", type=float, default=1e-6)
    s.add_argument("--inputs", metavar="FILE.npz", help="initial buffer contents (arrays keyed by buffer name; "
                   "buffers not in the file get seeded random contents); arrays named expected__<buffer> are "
                   "compared with the outputs instead of the reference")
    s.add_argument("--format", choices=["text", "json"], default="text")
    s.set_defaults(func=cmd_run)


def _p_check(sub):
    s = sub.add_parser("check", help="check races, barrier protocols and deadlock: one verdict per obligation")
    s.add_argument("files", nargs="+")
    s.add_argument("--kernel")
    s.add_argument("--launch", help="launch spec JSON (or a zoo manifest.json: the variant for each FILE)")
    s.add_argument("--grid", help="grid X[,Y,Z] (without --launch; parameters stay symbolic)")
    s.add_argument("--block", help="block X[,Y,Z] (default: .reqntid / __launch_bounds__)")
    s.add_argument("--cluster", help="cluster X[,Y,Z] (without --launch; default: .reqnctapercluster)")
    s.add_argument("--dynamic-smem", type=int, metavar="BYTES", help="dynamic shared memory of the launch")
    s.add_argument("--cooperative", action=argparse.BooleanOptionalAction, default=None,
                   help="a cooperative launch (cudaLaunchCooperativeKernel: every CTA co-resident, the grid "
                        "workspace of cooperative groups' grid.sync() given); default: assumed when the kernel "
                        "reads that workspace")
    s.add_argument("--arg", action="append", metavar="NAME=VALUE",
                   help="a parameter: NAME=NUMBER (a scalar), NAME=SHAPE:DTYPE (a buffer: 64x48:f32), "
                   "NAME=SHAPE:DTYPE:box=BOX[:swizzle=128B] (a tensor map: 64x64:f32:box=32x32); pointers "
                   "given none are sized from the kernel's accesses")
    s.add_argument("--assume", action="append", default=[], metavar="EXPR",
                   help="a precondition over the scalar parameters for the symbolic checkers (repeatable): "
                   "'n > 0', 'stride %% 2 == 0' (integers, names, + - * // %%, comparisons, and/or/not)")
    s.add_argument("--extern-summary", action="append", default=[], metavar="NAME=pure",
                   help="summarize a body-less function the kernel calls (repeatable; NAME as in the source, its "
                   "C++ signature or PTX name, or * for every one): pure = reads and writes no memory, does not "
                   "synchronize, returns an arbitrary value per call and thread (GPUVerify's assumption); every "
                   "proof that rests on it says so")
    s.add_argument("--budget", type=_positive(int), default=None, help="runs of the interpreter when one run does not stand "
                   "for every schedule: classes of schedules explored by dynamic partial-order reduction (default 256)")
    s.add_argument("--timeout", type=_positive(float), default=10.0, help="solver budget per obligation in solver seconds (z3 resource units, "
                   "S x 5,000,000: the same verdict on a loaded machine as on an idle one)")
    s.add_argument("--no-smt", action="store_true", help="skip the static SMT race checker")
    s.add_argument("--export-smt", metavar="DIR", help="write every SMT query the race and mbarrier checkers "
                   "discharge to DIR as SMT-LIB2, one file per query named FILE.KERNEL.OBLIGATION.N.RESULT.smt2")
    s.add_argument("--recheck", choices=["cvc5"], help="re-prove the --export-smt queries with cvc5 (the recheck "
                   "extra); an obligation whose query cvc5 answers differently is unknown, with the reason")
    s.add_argument("--strict", action="store_true",
                   help="report warning-tier findings (kverify rules) as errors: they make the kernel violated, exit 1")
    s.add_argument("--time-budget", type=_positive(float), default=None, metavar="S",
                   help="wall-clock limit of the interpreter's runs in seconds (default 300): past it the "
                   "obligations it bounds are unknown (budget); the one limit that depends on the machine's load")
    s.add_argument("--max-memory", type=float, default=DEFAULT_MAX_MEMORY_GIB, metavar="GIB",
                   help=f"memory the checks may take beyond what the process holds at start (default "
                   f"{DEFAULT_MAX_MEMORY_GIB:g} GiB; 0: no limit): a checker over it is unknown, not a crash")
    s.add_argument("--inputs", metavar="FILE.npz", help="initial buffer contents for the interpreter (arrays "
                   "keyed by buffer or parameter name; others get seeded random contents)")
    s.add_argument("--triton", action="store_true", help="FILE is FILE.py:KERNEL, a @triton.jit function compiled "
                   "for sm_90a; --arg NAME=VALUE or NAME=SHAPE:DTYPE gives each parameter, constexpr and option")
    s.add_argument("--arch", default="sm_90a")
    s.add_argument("-D", dest="defines", action="append", default=[])
    s.add_argument("--format", choices=["text", "json"], default="text")
    s.set_defaults(func=cmd_check)


def _p_audit(sub):
    s = sub.add_parser("audit", help="per source line: obligations, ordering evidence, reference lines, "
                       "counterexamples; Markdown, JSON or one self-contained HTML file")
    _add_input(s)
    s.add_argument("--ref", help="reference kernel: adds the equivalence verdict and which reference line computes "
                   "each output store")
    s.add_argument("--launch", help="launch spec JSON or zoo manifest (default: the manifest next to FILE)")
    s.add_argument("--ref-launch", help="reference launch spec (as kverify equiv)")
    s.add_argument("--grid")
    s.add_argument("--block")
    s.add_argument("--arg", action="append", metavar="NAME=VALUE")
    s.add_argument("--fp", choices=["real", "bitexact", "int"], default="real")
    s.add_argument("--budget", type=_positive(int), default=None)
    s.add_argument("--timeout", type=_positive(float), default=10.0)
    s.add_argument("--cex-dir", default="kverify-cex")
    s.add_argument("--format", choices=["md", "html", "json"], default="md")
    s.add_argument("-o", dest="output", help="write to FILE instead of stdout")
    s.set_defaults(func=cmd_audit)


def _p_rules(sub):
    s = sub.add_parser("rules", help="list every rule id kverify reports: severity, ISA section, summary")
    s.add_argument("--format", choices=["md", "json"], default="md")
    s.set_defaults(func=cmd_rules)


def _p_validate(sub):
    from .validate.cli import add_parser  # kverify validate: GPU runs vs a reference

    add_parser(sub)


def _p_capture(sub):
    from kverify.capture.cli import add_parser  # kverify capture: record a program's launches

    add_parser(sub)


def _p_gate(sub):
    from .gate import add_parser  # kverify gate: the CI gate over a TOML policy

    add_parser(sub)


def _p_serve(sub):
    s = sub.add_parser("serve", help="keep the checkers loaded: with KVERIFY_SERVER=SOCKET, kverify commands run "
                       "in a fork of this process (no start-up)")
    s.add_argument("--socket", help="the Unix socket (default: $KVERIFY_SERVER, else "
                   "$XDG_RUNTIME_DIR/kverify-UID.sock or /tmp/kverify-UID.sock)")
    g = s.add_mutually_exclusive_group()
    g.add_argument("--stop", action="store_true", help="stop the server listening on the socket")
    g.add_argument("--detach", action="store_true", help="start the server in the background; once it listens, "
                   "print `export KVERIFY_SERVER=SOCKET` (for eval) and exit")
    s.set_defaults(func=cmd_serve)


def cmd_serve(args) -> int:
    from .server import default_socket, serve

    return serve(args.socket or os.environ.get("KVERIFY_SERVER") or default_socket(), main, stop=args.stop,
                 detach=args.detach)


#: each command and what adds its subparser, in ``kverify --help``'s order
COMMANDS = {"show": _p_show, "parse": _p_parse, "run": _p_run, "check": _p_check, "audit": _p_audit,
            "rules": _p_rules, "validate": _p_validate, "capture": _p_capture, "equiv": _add_equiv, "gate": _p_gate,
            "serve": _p_serve}


def build_parser(argv=None) -> argparse.ArgumentParser:
    """The command line's parser. When ``argv`` names a command first, only that command's
    subparser is built (building and importing them all took about 20 ms, a sixth of the startup);
    otherwise (``--help``, ``--version``, a mistyped command) every one is."""
    from kverify import __version__

    p = _Parser(prog="kverify", description="Formal semantics and verification for GPU kernels.")
    p.add_argument("--version", action="version", version=f"kverify {__version__}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    first = argv[0] if argv else None
    for name, add in COMMANDS.items():
        if first not in COMMANDS or name == first:
            add(sub)
    return p


def cmd_rules(args) -> int:
    import json

    from kverify.rules import RULES, table

    load_rules()
    if args.format == "json":
        print(json.dumps([{"id": r.id, "severity": r.severity, "section": r.section, "url": r.url,
                           "summary": r.summary} for r in sorted(RULES.values(), key=lambda r: r.id)], indent=2))
    else:
        sys.stdout.write(table())
    return EXIT_OK


def load_rules() -> None:
    """Import every module that defines rules, so ``kverify.rules.RULES`` holds them all."""
    import kverify.semantics.memory_model.execution  # noqa: F401
    import kverify.semantics.memory_model.protocols  # noqa: F401
    import kverify.verifier.assertions  # noqa: F401
    import kverify.verifier.equivalence  # noqa: F401
    import kverify.verifier.validate.rules  # noqa: F401


def limit_memory(gib: float) -> None:
    """Caps this process's address space at what it maps now plus ``gib`` GiB (RLIMIT_AS, soft
    limit, never above the hard one): an allocation past it is a ``MemoryError``, which a checker
    reports as ``unknown`` (``check.check_kernel``), never an exhausted machine."""
    try:
        import resource

        with open("/proc/self/statm") as f:
            now = int(f.read().split()[0]) * resource.getpagesize()
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        want = now + int(gib * 2 ** 30)
        if hard != resource.RLIM_INFINITY:
            want = min(want, hard)
        if soft == resource.RLIM_INFINITY or want < soft:
            resource.setrlimit(resource.RLIMIT_AS, (want, hard))
    except (ImportError, OSError, ValueError):  # not Linux: no cap
        pass


class _Unless:
    """The command line's stdout: nothing is written once ``stopped()`` (a Ctrl-C that a destructor
    swallowed lets the command run on to its end; what it would print then is a verdict on a
    check it did not finish). ``KeyboardInterrupt`` instead, so the command ends as interrupted."""

    def __init__(self, stream, stopped):
        self._stream, self._stopped = stream, stopped

    def write(self, s):
        if self._stopped():
            raise KeyboardInterrupt
        return self._stream.write(s)

    def __getattr__(self, name):
        return getattr(self._stream, name)


def main(argv=None) -> int:
    args = build_parser(sys.argv[1:] if argv is None else argv).parse_args(argv)
    if argv is None and (getattr(args, "max_memory", 0) or 0) > 0:  # the command line, not an in-process caller
        limit_memory(args.max_memory)
    stopped = None
    if argv is None:  # the command line, cold or in a check server's child: one starting state
        from kverify.symbolic.budget import interrupted, watch_interrupts

        from .server import fresh_heap

        fresh_heap(sys.argv[1] if len(sys.argv) > 1 else None)  # (capture's args.command is its program)
        watch_interrupts()
        stopped = interrupted
        sys.stdout = _Unless(sys.stdout, stopped)
    try:
        rc = args.func(args)
        if stopped is not None and stopped():  # a Ctrl-C a destructor swallowed: the result may lack
            raise KeyboardInterrupt             # what it stopped
        return rc
    except KernelError as e:
        print(e, file=sys.stderr)
        return EXIT_USAGE
    except RecursionError:
        print(f"{getattr(args, 'file', '<input>')}:0:0: input nests too deeply", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:
        return EXIT_OK
    except MemoryError:
        where = getattr(args, "file", None) or ",".join(getattr(args, "files", []) or []) or "<input>"
        print(f"{where}:0:0: unknown: memory budget exhausted (--max-memory {getattr(args, 'max_memory', 0):g} GiB); "
              f"no verdict", file=sys.stderr)
        return EXIT_INCONCLUSIVE
    except KeyboardInterrupt:  # Ctrl-C: no verdict, no traceback
        print("kverify: interrupted (no verdict)", file=sys.stderr)
        return 130
    except SystemExit:
        raise
    except Exception as e:  # a bug in kverify: say so in one line, never a traceback
        import os

        if os.environ.get("KVERIFY_DEBUG"):
            raise
        where = getattr(args, "file", None) or ",".join(getattr(args, "files", []) or []) or "<input>"
        print(f"{where}:0:0: internal error: {type(e).__name__}: {e} (no verdict; KVERIFY_DEBUG=1 shows the "
              f"traceback)", file=sys.stderr)
        return EXIT_INCONCLUSIVE


if __name__ == "__main__":
    sys.exit(main())
