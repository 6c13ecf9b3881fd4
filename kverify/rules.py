"""The one table of rule ids. Every finding and every violated obligation kverify reports
names a ``Rule``: a stable dotted id (family first), its severity (DESIGN.md decision 9:
``error`` — wrong results or a hang on some legal schedule or input; ``warning`` — undefined
by the PTX ISA's letter, known to work on current hardware; ``note``), the PTX ISA section it
follows, and a one-line summary. A rule is defined once, in the module that decides it (a
protocol, the interpreter's memory model, a checker); defining it registers it here, and
``kverify rules`` prints the table (docs/rules.md).

This module imports nothing of kverify: every layer may use it.
"""
from __future__ import annotations

from dataclasses import dataclass

SEVERITIES = ("error", "warning", "note")
ANCHOR_BASE = "https://docs.nvidia.com/cuda/parallel-thread-execution/index.html#"

#: id -> Rule, in definition order
RULES: dict = {}


@dataclass(frozen=True)
class Rule:
    """One stable rule: dotted id, the ISA section (or other source) it follows, the anchor
    of that section on the PTX ISA page (without ``#``; empty when it has none), a summary."""

    id: str
    section: str
    anchor: str
    summary: str
    severity: str = "error"

    def __post_init__(self):
        if self.severity not in SEVERITIES:
            raise ValueError(f"rule {self.id}: severity {self.severity!r} is not one of {SEVERITIES}")
        old = RULES.get(self.id)
        if old is not None and (old.section, old.anchor, old.summary, old.severity) != (
                self.section, self.anchor, self.summary, self.severity):
            raise ValueError(f"rule {self.id} is defined twice, differently")
        RULES.setdefault(self.id, self)

    @property
    def url(self) -> str:
        return ANCHOR_BASE + self.anchor if self.anchor else ""

    @property
    def family(self) -> str:
        return self.id.split(".")[0]


def rule(rule_id: str) -> Rule:
    """The registered rule ``rule_id`` (``KeyError`` names it when nobody defined it)."""
    try:
        return RULES[rule_id]
    except KeyError:
        raise KeyError(f"rule {rule_id!r} is not defined (kverify.rules.RULES)") from None


def is_rule(rule_id) -> bool:
    return rule_id in RULES


def severity(rule_id, strict: bool = False) -> str:
    """The tier a finding of ``rule_id`` is reported at: the rule's severity, ``error`` for an
    id nobody registered, and ``error`` for a ``warning`` under ``strict`` (``--strict``).
    Notes stay notes."""
    sev = RULES[rule_id].severity if rule_id in RULES else "error"
    return "error" if strict and sev == "warning" else sev


def table() -> str:
    """The rule table as Markdown: id, severity, section, summary, sorted by id."""
    out = ["| rule | severity | follows | what it reports |", "|---|---|---|---|"]
    for r in sorted(RULES.values(), key=lambda r: r.id):
        out.append(f"| `{r.id}` | {r.severity} | {r.section} | {r.summary} |")
    return "\n".join(out) + "\n"
