"""Progress of ``kverify equiv`` on the terminal: the phase it is in (symbolic execution of
the candidate or the reference, CTA k/n; concrete witnesses; comparing element i/n; the
solver; testing), written to stderr and never to stdout, so ``--format json`` stays clean.

Nothing is shown for the first ``delay`` seconds (a quick answer prints no progress at all).
On a terminal the line is redrawn in place (at most 10 times a second) and erased at the
end; on anything else (``--progress`` with stderr redirected) a line is written when the
phase changes and at most once a second within a phase.
"""
from __future__ import annotations

import sys
import time

#: seconds before the first progress line (a quick answer shows none)
DELAY_S = 2.0


class Progress:
    """Reports phases; ``Progress(enabled=False)`` (or :data:`QUIET`) reports nothing."""

    def __init__(self, enabled: bool = True, stream=None, delay: float | None = None, prefix: str = "kverify equiv"):
        self.enabled = enabled
        self.stream = stream if stream is not None else sys.stderr
        self.delay = DELAY_S if delay is None else delay
        self.prefix = prefix
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.t0 = time.perf_counter()
        self._last = 0.0
        self._phase = None
        self._drawn = False
        self.lines = 0  # lines written (for tests)

    def restart(self, label: str = ""):
        """A new obligation (one shape): the delay counts from here."""
        self.clear()
        self.t0 = time.perf_counter()
        self._phase = None
        self.label = label

    def update(self, phase: str, detail: str = ""):
        """``phase`` names what runs (``symbolic execution of the candidate``), ``detail``
        where it is (``CTA 3/40``)."""
        if not self.enabled:
            return
        now = time.perf_counter()
        elapsed = now - self.t0
        if elapsed < self.delay:
            self._phase = phase
            return
        changed = phase != self._phase
        if not changed and now - self._last < (0.1 if self.tty else 1.0):
            return
        self._phase, self._last = phase, now
        label = getattr(self, "label", "")
        text = f"{self.prefix}{' [' + label + ']' if label else ''} {elapsed:5.1f}s: {phase}" + \
            (f": {detail}" if detail else "")
        try:
            if self.tty:
                self.stream.write("\r\x1b[K" + text[:200])
                self._drawn = True
            else:
                self.stream.write(text + "\n")
            self.stream.flush()
            self.lines += 1
        except (OSError, ValueError):
            self.enabled = False

    def clear(self):
        if self._drawn:
            try:
                self.stream.write("\r\x1b[K")
                self.stream.flush()
            except (OSError, ValueError):
                pass
            self._drawn = False


QUIET = Progress(enabled=False)
