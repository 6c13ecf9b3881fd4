"""``python -m kverify.capture [-o DIR] [--no-gpu] -- PROGRAM ARGS...``"""
import argparse
import sys

from .cli import add_parser


def main(argv=None) -> int:
    s = add_parser(argparse.ArgumentParser().add_subparsers())
    s.prog = "python -m kverify.capture"
    args = s.parse_args(sys.argv[1:] if argv is None else argv)
    return args.func(args)


if __name__ == "__main__":
    raise SystemExit(main())
