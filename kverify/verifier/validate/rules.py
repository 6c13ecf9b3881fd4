"""The rules of GPU validation (``kverify validate``): what a run on the device, the static
audit of the PTX it runs, and the comparison against the reference can report. Each is a
``kverify.rules.Rule``; ``section`` names what it follows (the launch ABI of the CUDA
driver, the PTX ISA where an instruction is concerned, or the validation policy of
docs/validation.md)."""
from __future__ import annotations

from kverify.rules import Rule

POLICY = "docs/validation.md"


def _r(name, section, summary, anchor=""):
    return Rule(f"validate.{name}", section, anchor, summary)


ABI = _r("abi", "CUDA driver launch ABI (kernel parameter layout)",
         "a launch argument does not fit its parameter (size, alignment, missing value)")
BUILD_ERROR = _r("build-error", POLICY, "the kernel does not assemble (ptxas or nvcc rejected it)")
EXTERN_CALL = _r("extern-call", "§9.7.12.3 call", "a call leaves the module (an extern function the validator cannot see)",
                 "control-flow-instructions-call")
FAST_MATH = _r("fast-math", "§9.7.3 floating-point instructions (.approx, .ftz)",
               "an approximate or flush-to-zero instruction the reference does not allow",
               "floating-point-instructions")
INPUT_MUTATION = _r("input-mutation", POLICY, "the kernel modified an input buffer")
LAUNCH_ERROR = _r("launch-error", POLICY, "the launch failed on the device")
MISMATCH = _r("mismatch", POLICY, "an output differs from the reference beyond the tolerance")
NO_GPU = _r("no-gpu", POLICY, "no GPU was available: nothing ran")
NONDETERMINISTIC = _r("nondeterministic", POLICY, "two runs on the same inputs gave different outputs")
NOT_RUN = _r("not-run", POLICY, "no run completed, so the obligation was not checked")
OUT_OF_BOUNDS_WRITE = _r("out-of-bounds-write", POLICY, "a write landed in the poisoned margin around a buffer")
PRECISION_DOWNGRADE = _r("precision-downgrade", "§9.7.9.21 cvt", "a value is converted to a narrower type than the "
                         "reference computes in", "data-movement-and-conversion-instructions-cvt")
STORE_DTYPE = _r("store-dtype", "§9.7.9.9 st", "a global store's type does not match its buffer's dtype",
                 "data-movement-and-conversion-instructions-st")
TIMEOUT = _r("timeout", POLICY, "a run did not finish within its time limit")
UNWRITTEN = _r("unwritten", POLICY, "an output element the reference defines was never written")
WEAK_REFERENCE = _r("weak-reference", POLICY, "the comparison would pass a kernel that does nothing (the reference "
                    "output equals the poisoned or zero output)")

#: compute-sanitizer's findings under ``--sanitize`` (``sanitize.py``), one rule per tool
SANITIZER = {tool: Rule(f"sanitizer.{tool}", f"NVIDIA compute-sanitizer {tool}", "", summary) for tool, summary in (
    ("memcheck", "compute-sanitizer memcheck reported an error (an out-of-bounds or misaligned access, a device-side "
                 "error) on the first run"),
    ("racecheck", "compute-sanitizer racecheck reported a shared-memory hazard on the first run"),
    ("synccheck", "compute-sanitizer synccheck reported an invalid synchronization on the first run"))}
