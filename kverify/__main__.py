"""``python -m kverify``: the ``kverify`` command."""
import sys

from kverify.verifier.cli import main

sys.exit(main())
