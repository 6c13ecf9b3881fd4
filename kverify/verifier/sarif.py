"""SARIF 2.1.0 for ``kverify check`` reports: one result per violated or unknown obligation and
per finding (a violated obligation that repeats a finding's rule and first location is not
repeated). A result's ``ruleId`` is the rule's dotted id (``kverify.rules``); an ``unknown``
obligation names no rule and gets ``unknown.<obligation id>`` at level ``note`` with its
reason. Locations are the kernel source position (or the PTX line) as a physical location."""
from __future__ import annotations

from kverify.rules import RULES, severity

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
LEVEL = {"error": "error", "warning": "warning", "note": "note"}


def _location(loc, ptx_path=None) -> dict:
    """A physical location; its URI is the path as the text shows it (``text.display_path``:
    relative to the working directory when the file is found)."""
    from kverify.verifier.text import display_path

    region = {"startLine": max(int(loc.line or 0), 1)}
    if loc.column:
        region["startColumn"] = int(loc.column)
    uri = display_path(loc.path, ptx_path) if loc.path else "<unknown>"
    return {"physicalLocation": {"artifactLocation": {"uri": uri}, "region": region}}


def sarif(reports, version: str = "0+unknown") -> dict:
    """The SARIF log (a dict) of ``reports`` (``KernelReport``s)."""
    results, used = [], {}

    def rule_index(rule_id, short, level):
        if rule_id not in used:
            r = RULES.get(rule_id)
            d = {"id": rule_id, "shortDescription": {"text": r.summary if r else short},
                 "defaultConfiguration": {"level": LEVEL.get(r.severity, "error") if r else level}}
            if r is not None and r.url:
                d["helpUri"] = r.url
            if r is not None:
                d["properties"] = {"section": r.section}
            used[rule_id] = (len(used), d)
        return used[rule_id][0]

    for rep in reports:
        seen = set()
        for f in rep.findings:
            key = (f.rule, (f.locations[0].path, f.locations[0].line) if f.locations else None)
            seen.add(key)
            r = RULES.get(f.rule)
            results.append({"ruleId": f.rule, "ruleIndex": rule_index(f.rule, f.message, "error"),
                            "level": LEVEL.get(severity(f.rule, rep.strict), "error"),
                            "message": {"text": f.message},
                            "locations": [_location(l, rep.path) for l in f.locations[:1]],
                            "relatedLocations": [_location(l, rep.path) for l in f.locations[1:]],
                            "properties": {"kernel": rep.name}})
        for o in rep.obligations:
            if o.status == "violated":
                key = (o.rule, (o.locations[0].path, o.locations[0].line) if o.locations else None)
                if o.rule and key in seen:
                    continue
                rid = o.rule or f"violated.{o.id}"
                r = RULES.get(rid)
                level = LEVEL.get(o.severity(rep.strict), "error")
            elif o.status == "unknown":
                rid, level = f"unknown.{o.id}", "note"
            else:
                continue
            results.append({"ruleId": rid, "ruleIndex": rule_index(rid, f"{o.title}: {o.status}", level),
                            "level": level, "message": {"text": f"{o.title}: {o.status}: {o.message}"},
                            "locations": [_location(l, rep.path) for l in o.locations[:1]],
                            "properties": {"kernel": rep.name, "obligation": o.id, "status": o.status}})
    rules = [d for _, d in sorted(used.values(), key=lambda x: x[0])]
    return {"$schema": SCHEMA_URI, "version": "2.1.0",
            "runs": [{"tool": {"driver": {"name": "kverify", "version": version,
                                          "rules": rules}},
                      "results": results}]}
