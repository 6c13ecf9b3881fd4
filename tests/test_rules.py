"""Every rule id is a ``Rule`` defined once and registered in ``kverify.rules``: the table
docs/rules.md is what ``kverify rules`` prints, every rule the zoo's seeded bugs name is
registered, and reporting an unregistered rule is a bug that fails loudly."""
import json
from pathlib import Path

import pytest

from kverify.rules import RULES, Rule, rule, table
from kverify.verifier.cli import load_rules, main
from kverify.verifier.report import Finding

ROOT = Path(__file__).resolve().parent.parent


def test_docs_rules_is_the_printed_table(capsys):
    load_rules()
    assert main(["rules"]) == 0
    out = capsys.readouterr().out
    assert out == table()
    assert out in (ROOT / "docs" / "rules.md").read_text()


def test_every_rule_a_seeded_zoo_bug_names_is_registered():
    load_rules()
    named = set()
    for mf in (ROOT / "tests" / "zoo").glob("*/manifest.json"):
        for v in json.loads(mf.read_text())["variants"]:
            if v.get("bug"):
                named.add(v["bug"]["rule"])
    assert named and named <= set(RULES), sorted(named - set(RULES))


def test_rule_ids_are_dotted_family_first_with_a_known_severity():
    load_rules()
    families = {r.family for r in RULES.values()}
    assert {"race", "mbarrier", "barrier", "async-group", "wgmma", "cluster-barrier", "validate",
            "equivalence"} <= families
    assert rule("mbarrier.parity").section.startswith("§9.7.13.15")
    assert all(r.severity in ("error", "warning", "note") for r in RULES.values())


def test_a_rule_cannot_be_defined_twice_differently_and_unknown_ids_fail():
    with pytest.raises(ValueError, match="defined twice"):
        Rule("race.shared", "elsewhere", "", "another meaning")
    with pytest.raises(KeyError, match="not defined"):
        Finding("race.sharde", "typo in a rule id")
