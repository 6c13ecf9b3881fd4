"""``python -m kverify.capture [-o DIR] [--no-gpu] -- PROGRAM ARGS...``"""
import argparse
import sys

from .cli import add_parser


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m kverify.capture")
    sub = p.add_subparsers(dest="cmd")
    add_parser(sub)
    args = p.parse_args(["capture", *(sys.argv[1:] if argv is None else argv)])
    return args.func(args)


if __name__ == "__main__":
    raise SystemExit(main())
