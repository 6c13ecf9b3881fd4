"""``python -m kverify`` and the ``kverify`` command."""
import os
import sys


def run():
    if sys.argv[1:] == ["--version"]:  # what the parser prints, without loading the checkers
        from kverify import __version__

        print(f"kverify {__version__}")
        sys.exit(0)
    server = os.environ.get("KVERIFY_SERVER")
    if server and sys.argv[1:2] != ["serve"]:  # a check server (kverify serve) runs the command
        from kverify.verifier.server import client

        rc = client(server, sys.argv[1:])
        if rc is not None:
            sys.exit(rc)
    # One hash seed for every run. The order Python iterates a set in is the order the checkers
    # make terms in, z3 numbers terms in that order, and how much work a query takes (so whether
    # a budgeted one ends unknown) depends on the numbering: a verdict must not change from run
    # to run of the same command.
    if os.environ.get("PYTHONHASHSEED") != "0" and sys.executable:
        os.execve(sys.executable, [sys.executable, "-m", "kverify", *sys.argv[1:]],
                  {**os.environ, "PYTHONHASHSEED": "0"})
    from kverify import z3_release
    from kverify.verifier.cli import main

    z3_release()

    sys.exit(main())


if __name__ == "__main__":
    run()
