"""The ``kverify validate`` subcommand (wired into ``kverify.verifier.cli`` by ``add_parser``)."""
from __future__ import annotations

import json
import sys


def add_parser(sub):
    s = sub.add_parser("validate", help="run a kernel on the GPU against a reference, hardened against the known "
                                        "ways random tests are fooled")
    s.add_argument("file", help="a .ptx or .cu kernel")
    s.add_argument("--kernel", help="kernel name (default: the only .entry)")
    s.add_argument("--launch", help="launch spec or template JSON (or a zoo manifest.json: the variant for FILE)")
    s.add_argument("--ref", help="reference module:function(inputs, args) -> {buffer: array}")
    s.add_argument("--trials", type=int, default=4, help="random-input trials at the given launch (default 4)")
    s.add_argument("--shapes", action="append", default=[], metavar="NAME=V1,V2,...",
                   help="shape values to fuzz (a template symbol, or an integer argument of a concrete launch)")
    s.add_argument("--seed", type=int, default=0, help="seed of inputs and poisons (replayable)")
    s.add_argument("--sanitize", action="store_true", help="also run compute-sanitizer memcheck/racecheck/synccheck")
    s.add_argument("--timeout", type=float, default=30.0, help="seconds one launch may take before it is a hang")
    s.add_argument("--lowered", action="store_true", help="run the kernel lowered to CUDA and rebuilt, not the PTX")
    s.add_argument("--interpreter", action="store_true",
                   help="run on kverify's CPU interpreter instead of a GPU (for machines without one)")
    s.add_argument("--rtol", type=float, help="relative tolerance (default: per output dtype)")
    s.add_argument("--atol", type=float, help="absolute tolerance (default: rtol times the reference's RMS)")
    s.add_argument("--allow-fast-math", action="store_true", help="accept approximate division/roots and .ftz")
    s.add_argument("--arch", default="sm_90a")
    s.add_argument("-D", dest="defines", action="append", default=[])
    s.add_argument("--format", choices=["text", "json"], default="text")
    s.set_defaults(func=cmd_validate)
    return s


def cmd_validate(args) -> int:
    from kverify.semantics.ir import KernelError
    from kverify.semantics.ir import load_module
    from kverify.verifier.report import exit_code

    from . import validate
    from .runner import InterpreterRunner
    from .shapes import parse_shapes

    defines = {}
    for d in args.defines:
        k, _, v = d.partition("=")
        defines[k] = v or None
    if not args.timeout > 0:  # (0 was accepted: every launch a hang)
        raise KernelError(f"--timeout must be positive seconds, got {args.timeout:g}", "<command line>", 1, 1)
    runner = None
    if args.interpreter:
        opts = {"arch": args.arch, "defines": defines} if args.file.endswith((".cu", ".cuh")) else {}
        m = load_module(args.file, **opts)
        runner = InterpreterRunner(m, m.kernel(args.kernel))
    v = validate(args.file, launch=args.launch, ref=args.ref, trials=args.trials, shapes=parse_shapes(args.shapes),
                 seed=args.seed, sanitize=args.sanitize, timeout=args.timeout, kernel_name=args.kernel,
                 lowered=args.lowered, rtol=args.rtol, atol=args.atol, runner=runner, arch=args.arch,
                 defines=defines, allow_fast_math=args.allow_fast_math)
    rep = v.report
    if args.interpreter:  # nothing was assembled or launched; the replay runs where this did
        v.details["image"] = "none (the interpreter runs the kernel's IR)"
        v.details["fp_flags"] = None
        v.details["replay"] += " --interpreter"
    if args.format == "json":
        print(json.dumps(v.to_json(), indent=2, default=str))
    else:
        d = v.details
        dev = d.get("device") or {}
        print(f"{rep.path}: kernel {rep.name}: {rep.verdict.upper()}")
        print(f"  device: {dev.get('name') or d.get('unavailable', '?')}; kernel: {d['kernel_source']}; "
              f"image: {d.get('image')}")
        print(f"  seed {d['seed']}, {d['trials']} trial(s); launches: {'; '.join(d['launches'])}")
        for o in rep.obligations:
            print(f"  {o.status:9} {o.title:24} {o.message}")
            if o.status == "bounded" and o.bound:
                print(f"            bound: {o.bound}")
        extra = [f for f in rep.findings if not any(f.message == o.message for o in rep.obligations)]
        for f in extra[:12]:
            print(f"  {f.rule}: {f.message}")
        print(f"  replay: {d['replay']}")
        if d.get("unavailable"):
            print(f"kverify validate: no GPU: {d['unavailable']}", file=sys.stderr)
    return exit_code([rep])
