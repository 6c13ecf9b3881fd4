"""The ``kverify capture`` subcommand (wired into ``kverify.verifier.cli`` by ``add_parser``;
also ``python -m kverify.capture``, which needs only the standard library)."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def add_parser(sub):
    s = sub.add_parser("capture", help="run a CUDA program and record every kernel launch as a launch spec",
                       description="Runs PROGRAM with an LD_PRELOAD shim that records every kernel launch "
                                   "(name, grid, block, cluster, dynamic shared memory, parameter bytes), the "
                                   "modules it comes from, device allocations and tensor maps, and writes one "
                                   "launch spec per launch plus index.json to DIR (docs/capture.md).")
    s.add_argument("-o", "--output", default="kverify-capture", metavar="DIR",
                   help="directory for the records, modules, specs and index.json (default kverify-capture)")
    s.add_argument("--no-gpu", action="store_true",
                   help="answer the program's driver calls without a GPU (kernels are recorded, not run)")
    s.add_argument("--rebuild", action="store_true", help="rebuild the shim even if the cache has it")
    s.add_argument("--limit", type=int, default=1000, help="write specs for at most N launches (default 1000)")
    s.add_argument("--contents-limit", default="256M", metavar="BYTES",
                   help="per launch, copy at most this many bytes of the memory it reaches (its allocations and "
                        "module variables; K, M, G suffixes; default 256M; 0: record no contents)")
    s.add_argument("--format", choices=["text", "json"], default="text")
    s.add_argument("--print-libdir", action="store_true",
                   help="build the shim, print the directory where it is libcuda.so (to link a program against "
                        "for --no-gpu) and exit")
    s.add_argument("command", nargs=argparse.REMAINDER, metavar="-- PROGRAM [ARGS...]")
    s.set_defaults(func=cmd_capture)
    return s


def cmd_capture(args) -> int:
    from .build import BuildError
    from .run import run
    from .specs import write_specs

    if args.print_libdir:
        from .build import nogpu_libdir, shim_path
        try:
            print(nogpu_libdir(shim_path(args.rebuild)))
        except BuildError as e:
            print(f"kverify capture: error: {e}", file=sys.stderr)
            return 2
        return 0
    argv = list(args.command)
    if argv and argv[0] == "--":
        argv = argv[1:]
    if not argv:
        print("kverify capture: error: no program given (kverify capture [-o DIR] -- ./app args...)", file=sys.stderr)
        return 2
    out = Path(args.output)
    contents_limit = _size(args.contents_limit)
    for bad, what in ((out.exists() and not out.is_dir(), f"-o {out}: not a directory"),
                      (args.limit < 0, f"--limit {args.limit}: not a count of launches"),
                      (contents_limit is None, f"--contents-limit {args.contents_limit}: not a byte count")):
        if bad:
            print(f"<command line>:1:1: {what}", file=sys.stderr)
            return 2
    try:
        rc = run(argv, out, nogpu=args.no_gpu, rebuild=args.rebuild, contents_limit=contents_limit,
                 contents_launches=args.limit)
    except (BuildError, FileNotFoundError) as e:
        print(f"kverify capture: error: {e}", file=sys.stderr)
        return 2
    index = write_specs(out, argv, limit=args.limit)
    index["program_exit_status"] = rc
    (out / "index.json").write_text(json.dumps(index, indent=1) + "\n")
    if args.format == "json":
        print(json.dumps(index, indent=1))
    else:
        n = len(index["launches"])
        print(f"kverify capture: {' '.join(argv)}: exit status {rc}; {n} launch(es), {len(index['modules'])} "
              f"module(s), {index['allocations']} allocation(s), {index['tensormaps']} tensor map(s) -> {out}/index.json")
        for l in index["launches"][:50]:
            dims = "x".join(map(str, l["grid"])) + " / " + "x".join(map(str, l["block"]))
            if l["cluster"] != [1, 1, 1]:
                dims += " cluster " + "x".join(map(str, l["cluster"]))
            print(f"  {l['spec']}: {l['kernel']} {dims}, smem {l['dynamic_smem']}, {len(l['params'])} param(s)"
                  f" [{', '.join(p.get('kind', '?') for p in l['params'])}]")
            print(f"    {l['check']}" if l.get("check") else f"    no PTX: {l['ptx_note']}")
            for note in l["notes"]:
                print(f"    note: {note}")
        if n > 50:
            print(f"  ... {n - 50} more in {out}/index.json")
        for note in index["notes"]:  # (the --limit note was never printed)
            print(f"  note: {note}")
    return 0 if index["launches"] else 3


def _size(text: str) -> int | None:
    """``N``, ``NK``, ``NM`` or ``NG`` (binary units) as bytes; None when it is not one."""
    text = str(text).strip().upper()
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
    digits = text[:-1] if scale > 1 else text
    return int(digits) * scale if digits.isdigit() else None
