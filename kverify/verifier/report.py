"""Verdicts, obligations, findings and the versioned JSON report (``kverify.report/2``).

One obligation per property and resource, each with a stable dotted id (``race.shared``,
``mbarrier.protocol[full[0..2]]``, ``deadlock``; the table ``OBLIGATIONS`` below) next to
its human title ("race-free: shared"), and a status from the verdict lattice of DESIGN.md
decision 6: ``vacuous`` (nothing to check: the kernel has no such operations) and ``proved``
< ``bounded`` < ``unknown`` < ``violated`` (worst wins when a kernel's verdict is formed). A
kernel is ``verified`` when every obligation is vacuous, proved or bounded, ``violated`` when
one is violated, ``inconclusive`` otherwise, and ``error`` when it could not be analysed at
all. Exit codes follow the verdict: 0 / 1 / 3, and 2 for bad input.

Schema history: ``/1`` had the title in ``id`` and no ``vacuous``; ``/2`` adds ``title`` and
makes ``id`` the dotted id.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

from kverify.rules import rule as registered
from kverify.semantics.ir.nodes import Loc, where

SCHEMA = "kverify.report/2"
STATUSES = ("vacuous", "proved", "bounded", "unknown", "violated")

#: Every obligation kverify reports: human title -> stable dotted id. Titles of the form
#: ``<prefix>: <resource>`` / ``<prefix>[<shape>]`` take their id from ``PARAMETRIC``.
OBLIGATIONS = {
    "race-free: shared": "race.shared",
    "race-free: global": "race.global",
    "race-free: async": "race.async",
    "mbarrier conformance": "mbarrier.protocol",
    "mbarrier conformance: parity (initial phase and alternation)": "mbarrier.parity",
    "mbarrier conformance: tx bytes (per phase)": "mbarrier.tx-bytes",
    "mbarrier conformance: arrivals (per phase)": "mbarrier.arrivals",
    "named-barrier conformance": "barrier.named",
    "deadlock-free": "deadlock",
    "memory safety": "memory",
    "equivalence": "equivalence",
    "terminates": "validate.terminates",
    "matches-reference": "validate.matches-reference",
    "deterministic": "validate.deterministic",
    "inputs-unmodified": "validate.inputs-unmodified",
    "in-bounds-writes": "validate.in-bounds-writes",
    "launch-abi": "validate.launch-abi",
    "no-extern-calls": "validate.no-extern-calls",
    "no-fast-math": "validate.no-fast-math",
    "no-precision-downgrade": "validate.no-precision-downgrade",
    "store-dtypes": "validate.store-dtypes",
}
PARAMETRIC = (("mbarrier conformance: ", "mbarrier.protocol[{}]"), ("equivalence[", "equivalence[{}"))


def obligation_id(title: str) -> str:
    """The dotted id of an obligation title (``KeyError`` for a title nobody registered)."""
    if title in OBLIGATIONS:
        return OBLIGATIONS[title]
    for prefix, form in PARAMETRIC:
        if title.startswith(prefix):
            return form.format(title[len(prefix):])
    raise KeyError(f"obligation {title!r} is not in report.OBLIGATIONS")
VERDICTS = ("verified", "violated", "inconclusive", "error")
EXIT_CODES = {"verified": 0, "violated": 1, "error": 2, "inconclusive": 3}


@dataclass(frozen=True)
class Location:
    path: str | None
    line: int
    column: int = 0
    ptx_line: int = 0

    @staticmethod
    def of(loc, ptx_path: str | None = None) -> "Location":
        """From an IR ``Loc``: the kernel source position when known, else the PTX line."""
        if loc.line:
            return Location(loc.file, loc.line, loc.col, loc.ptx_line)
        return Location(ptx_path, loc.ptx_line, 0, loc.ptx_line)

    def __str__(self) -> str:
        return where(Loc(self.path, self.line, self.column, self.ptx_line), detail=True)


@dataclass
class Finding:
    rule: str
    message: str
    locations: list = field(default_factory=list)
    details: dict = field(default_factory=dict)

    def __post_init__(self):
        registered(self.rule)

    def to_json(self) -> dict:
        d = {"rule": self.rule, "message": self.message,
             "locations": [asdict(l) for l in self.locations]}
        if self.details:
            d["details"] = self.details
        return d


@dataclass
class Obligation:
    title: str
    checker: str
    status: str
    message: str = ""
    bound: str | None = None
    locations: list = field(default_factory=list)
    counterexample: dict | None = None
    time_s: float = 0.0
    rule: str | None = None

    def __post_init__(self):
        assert self.status in STATUSES, self.status
        if self.rule is not None:
            registered(self.rule)

    @property
    def id(self) -> str:
        return obligation_id(self.title)

    def to_json(self) -> dict:
        return {"id": self.id, "title": self.title, "checker": self.checker, "status": self.status,
                "bound": self.bound, "message": self.message, "rule": self.rule,
                "locations": [asdict(l) for l in self.locations],
                "counterexample": self.counterexample, "time_s": round(self.time_s, 4)}


def kernel_verdict(obligations) -> str:
    statuses = {o.status for o in obligations}
    if "violated" in statuses:
        return "violated"
    if "unknown" in statuses or not obligations:
        return "inconclusive"
    return "verified"


@dataclass
class KernelReport:
    name: str
    path: str
    obligations: list = field(default_factory=list)
    findings: list = field(default_factory=list)
    error: str | None = None

    @property
    def verdict(self) -> str:
        return "error" if self.error else kernel_verdict(self.obligations)

    def to_json(self) -> dict:
        d = {"name": self.name, "path": self.path, "verdict": self.verdict,
             "obligations": [o.to_json() for o in self.obligations],
             "findings": [f.to_json() for f in self.findings]}
        if self.error:
            d["error"] = self.error
        return d


def report_json(kernels, command: str) -> dict:
    from importlib.metadata import PackageNotFoundError, version

    try:
        v = version("kverify")
    except PackageNotFoundError:
        v = "0+unknown"
    verdicts = [k.verdict for k in kernels]
    overall = ("error" if "error" in verdicts else "violated" if "violated" in verdicts
               else "inconclusive" if "inconclusive" in verdicts or not kernels else "verified")
    return {"schema": SCHEMA, "tool": {"name": "kverify", "version": v}, "command": command,
            "verdict": overall, "kernels": [k.to_json() for k in kernels]}


def exit_code(kernels) -> int:
    verdicts = [k.verdict for k in kernels]
    for v in ("error", "violated", "inconclusive"):
        if v in verdicts:
            return EXIT_CODES[v]
    return 0 if kernels else EXIT_CODES["inconclusive"]
