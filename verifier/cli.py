"""The ``kverify`` command line: ``show`` and ``parse`` (front ends), later ``check``,
``run`` and ``equiv``. Bad input prints ``file:line:col: message`` and exits 2; no command
ever shows a Python traceback for a user error.

Exit codes (DESIGN.md decision 8): 0 verified / ok, 1 violated, 2 bad input or usage,
3 inconclusive.
"""
from __future__ import annotations

import argparse
import sys

from semantics.ir import KernelError, load_module, print_kernel, print_module, source_lines
from semantics.ir.visit import instructions

EXIT_OK, EXIT_VIOLATED, EXIT_USAGE, EXIT_INCONCLUSIVE = 0, 1, 2, 3


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        self.print_usage(sys.stderr)
        print(f"kverify: error: {message}", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)


def _add_input(p):
    p.add_argument("file", help="a .ptx, .cu or .kvir file")
    p.add_argument("--kernel", help="kernel name (default: the only .entry)")
    p.add_argument("--arch", default="sm_90a", help="target for .cu input (default sm_90a)")
    p.add_argument("-D", dest="defines", action="append", default=[], metavar="NAME[=VALUE]",
                   help="preprocessor definition for .cu input")


def _load(args):
    defines = {}
    for d in args.defines:
        k, _, v = d.partition("=")
        defines[k] = v or None
    opts = {"arch": args.arch, "defines": defines} if args.file.endswith((".cu", ".cuh")) else {}
    return load_module(args.file, **opts)


def cmd_show(args) -> int:
    m = _load(args)
    src = source_lines(m) if not args.no_source else None
    if args.kernel:
        try:
            k = m.kernel(args.kernel)
        except KeyError as e:
            raise KernelError(e.args[0], args.file, 0, 0) from None
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


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="kverify", description="Formal semantics and verification for GPU kernels.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    s = sub.add_parser("show", help="print the structured IR of a kernel with its source lines")
    _add_input(s)
    s.add_argument("--no-loc", action="store_true", help="omit !loc positions")
    s.add_argument("--no-source", action="store_true", help="omit source-line comments")
    s.set_defaults(func=cmd_show)
    s = sub.add_parser("parse", help="validate input files (exit 2 on the first error of each)")
    s.add_argument("files", nargs="+")
    s.add_argument("--arch", default="sm_90a")
    s.add_argument("-D", dest="defines", action="append", default=[])
    s.set_defaults(func=cmd_parse)
    return p


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except KernelError as e:
        print(e, file=sys.stderr)
        return EXIT_USAGE
    except RecursionError:
        print(f"{getattr(args, 'file', '<input>')}:0:0: input nests too deeply", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:
        return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
