"""Verdicts, obligations, findings and the versioned JSON report (``kverify.report/2``).

One obligation per property and resource, each with a stable dotted id (``race.shared``,
``mbarrier.protocol[full[0..2]]``, ``deadlock``; the table ``OBLIGATIONS`` below) next to
its human title ("race-free: shared"), and a status from the verdict lattice of DESIGN.md
decision 6: ``vacuous`` (not applicable, with the reason: the kernel has no such operations,
or memory safety on buffers sized to the kernel's own accesses) and ``proved``
< ``bounded`` < ``unknown`` < ``violated`` (worst wins when a kernel's verdict is formed). A
kernel is ``verified`` when every obligation is vacuous, proved or bounded, ``violated`` when
one is violated, ``inconclusive`` otherwise, and ``error`` when it could not be analysed at
all. Exit codes follow the verdict: 0 / 1 / 3, and 2 for bad input.

Severity tiers (``kverify.rules``): every finding and every violated obligation carries the
tier of its rule (``severity`` in the JSON). Only ``error`` findings make a kernel
``violated``: an obligation violated by a ``warning``- or ``note``-tier rule keeps its status
``violated`` with that severity, and the kernel verdict is formed as if it held (so a kernel
whose only findings are warnings is ``verified``, exit 0, and prints them). ``strict`` (the
``--strict`` option) reports warnings as errors. docs/verdicts.md.

Schema history: ``/1`` had the title in ``id`` and no ``vacuous``; ``/2`` adds ``title`` and
makes ``id`` the dotted id.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

from kverify import names
from kverify.rules import rule as registered
from kverify.rules import severity as tier
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
    "assertions": "assert.holds",
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
    # ``kverify validate --sanitize``: one per compute-sanitizer tool (validate/rules.py SANITIZER)
    "sanitizer-memcheck": "validate.sanitizer-memcheck",
    "sanitizer-racecheck": "validate.sanitizer-racecheck",
    "sanitizer-synccheck": "validate.sanitizer-synccheck",
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
    objects: list = field(default_factory=list)  # names.rewrite: the objects the message names

    def __post_init__(self):
        registered(self.rule)

    def to_json(self, strict: bool = False) -> dict:
        d = {"rule": self.rule, "severity": tier(self.rule, strict), "message": self.message,
             "locations": [asdict(l) for l in self.locations], "objects": self.objects}
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
    objects: list = field(default_factory=list)  # names.rewrite: the objects the message names
    rests_on: str | None = None  # a proof derived from this checker's proof of that obligation (check.py)

    def __post_init__(self):
        assert self.status in STATUSES, self.status
        if self.rule is not None:
            registered(self.rule)

    @property
    def id(self) -> str:
        return obligation_id(self.title)

    def severity(self, strict: bool = False) -> str | None:
        """The tier of a violated obligation (its rule's, ``error`` without a rule); None
        for any other status."""
        if self.status != "violated":
            return None
        return tier(self.rule, strict) if self.rule else "error"

    def to_json(self, strict: bool = False) -> dict:
        return {"id": self.id, "title": self.title, "checker": self.checker, "status": self.status,
                "severity": self.severity(strict),
                "bound": self.bound, "message": self.message, "rule": self.rule,
                "locations": [asdict(l) for l in self.locations],
                "objects": self.objects, "counterexample": self.counterexample,
                "time_s": round(self.time_s, 4)}


def kernel_verdict(obligations, strict: bool = False) -> str:
    """``violated`` when an obligation is violated at tier ``error`` (warnings count under
    ``strict``), ``inconclusive`` when one is unknown (or there are none), else ``verified``."""
    if any(o.severity(strict) == "error" for o in obligations):
        return "violated"
    statuses = {o.status for o in obligations}
    if "unknown" in statuses or not obligations:
        return "inconclusive"
    return "verified"


@dataclass
class KernelReport:
    name: str
    path: str
    obligations: list = field(default_factory=list)
    findings: list = field(default_factory=list)
    error: str | None = None  # bad input (verdict error, exit 2)
    error_location: Location | None = None
    internal: bool = False  # ``error`` is a failure of kverify, not of the input: inconclusive
    strict: bool = False  # --strict: warning-tier findings are errors
    # what the user asserted and the proofs rest on (``--extern-summary``): {"function", "summary", "meaning"}
    assumptions: list = field(default_factory=list)

    @property
    def verdict(self) -> str:
        if self.error:
            return "inconclusive" if self.internal else "error"
        return kernel_verdict(self.obligations, self.strict)

    @property
    def display_name(self) -> str:
        """The kernel's C++ name (``stencil3(const float*, float*, int)``)."""
        return names.demangle(self.name) if self.name else ""

    def to_json(self) -> dict:
        d = {"name": self.name, "display_name": self.display_name, "path": self.path, "verdict": self.verdict,
             "obligations": [o.to_json(self.strict) for o in self.obligations],
             "findings": [f.to_json(self.strict) for f in self.findings]}
        for item in d["obligations"] + d["findings"]:
            item["locations"] = [self._located(l) for l in item["locations"]]
        if self.assumptions:
            d["assumptions"] = list(self.assumptions)
        if self.error:
            d["error"] = self.error
            d["error_location"] = asdict(self.error_location) if self.error_location else None
        return d


    def _located(self, loc: dict) -> dict:
        """A location as the text shows it: ``path`` resolved as ``text.display_path`` does
        (relative to the working directory when the file is found, next to the PTX file where
        nvcc's ``.file`` names point), the name the PTX's ``.file`` gives kept as ``file``."""
        from kverify.verifier.text import display_path

        return {**loc, "path": display_path(loc["path"], self.path), "file": loc["path"]}


class Namer:
    """How a module's objects and functions are shown in messages (``kverify.names``): its
    variables with their element sizes, and the access width of each instruction by PTX
    line (the element size of a ``.b8`` array an access is reported on). ``element_bytes``
    gives the element size of variables known otherwise (mbarrier arrays: 8 bytes)."""

    def __init__(self, module, element_bytes=None):
        from kverify.semantics.ir.types import SCALAR_BITS
        from kverify.semantics.ir.visit import instructions

        self.variables = {}
        for v in (*module.vars, *(v for k in module.kernels for v in k.vars)):
            bits = getattr(v.type, "bits", 0)
            opaque = getattr(v.type, "name", "b8") == "b8"  # nvcc declares every array .b8
            elem = (element_bytes or {}).get(v.name) or (None if opaque or not bits else bits // 8)
            self.variables[v.name] = (elem, bool(v.dims))
        self.width = {}
        for k in module.kernels:
            for i in instructions(k.body):
                t = i.types()
                if i.loc.ptx_line and t and t[0] in SCALAR_BITS and SCALAR_BITS[t[0]] >= 8:
                    self.width.setdefault(i.loc.ptx_line, SCALAR_BITS[t[0]] // 8)

    def message(self, text: str, locations=(), details=None) -> tuple[str, list]:
        """``text`` with its objects named (``names.rewrite``), and those objects. The object
        the finding's details name (``object``, ``mbarrier``), or else the one variable the
        message names, takes the width of the access at its first location as element size
        where its own type gives none."""
        access = {}
        ptx_line = locations[0].ptx_line if locations else 0
        if ptx_line in self.width:
            named = {str((details or {}).get(key, "")).split("+")[0].split(" ")[0] for key in ("object", "mbarrier")}
            if not named & set(self.variables):  # else: the one variable the message names
                mentioned = {o["symbol"] for o in names.rewrite(text, self.variables)[1]}
                named = mentioned if len(mentioned) == 1 else set()
            for sym in named & set(self.variables):
                access[sym] = self.width[ptx_line]
        return names.rewrite(text, self.variables, access)

    def name_report(self, rep: "KernelReport") -> "KernelReport":
        """Name the objects in every message of ``rep`` (in place)."""
        for f in rep.findings:
            f.message, f.objects = self.message(f.message, f.locations, f.details)
        for o in rep.obligations:
            details = (o.counterexample or {}).get("details")
            o.message, o.objects = self.message(o.message, o.locations, details)
            if o.counterexample and isinstance(o.counterexample.get("message"), str):
                o.counterexample = dict(o.counterexample, message=self.message(
                    o.counterexample["message"], o.locations, details)[0])
        return rep


def report_json(kernels, command: str) -> dict:
    from kverify import __version__ as v

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


def replay_with_inputs_file(rep, path):
    """``rep`` with ``--inputs PATH`` added to every replay command that has none, so that the
    replay runs on the buffer contents the check used."""
    for o in rep.obligations:
        cex = o.counterexample
        if cex and cex.get("replay") and "--inputs" not in cex["replay"]:
            cex["replay"] += f" --inputs {path}"
    return rep
