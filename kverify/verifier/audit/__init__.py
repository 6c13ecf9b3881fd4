"""``kverify audit``: one row per source line of a kernel — its PTX, the obligations touching it
and their status, the run's ordering evidence for its memory accesses, its findings and, with a
reference, the reference lines that compute the same values — plus a summary and an event
timeline of the interpreter run. Rendered as Markdown, JSON (``kverify.audit/2``) or one
self-contained HTML file (``render.py``).

The evidence of a row (``evidence``, a list of items with a ``kind``), for every shared/global
access line and every asynchronous copy or wgmma line, from the deterministic run with the
interpreter's happens-before trace on (``kverify.semantics.interpreter.hbtrace``):

  ``synchronization`` / ``program-order``  an earlier conflicting access (``other``: its line,
        warp, proxy and instruction; ``conflict``: read-after-write, write-after-read or
        write-after-write) the run ordered this line's access after, and how (``via``: the chain
        of edges, each with ``role`` release / acquire / fence / issuer-fence / issue, the
        instruction, its line and warp, and the barrier or mbarrier and its phase or instance):
        e.g. in tests/zoo/bulk_pipeline the consumers' ld.shared of line 124 after the bulk
        copy's write of line 113: its complete_tx on mbarrier full[0] phase 0, acquired by the
        try_wait.parity of line 120. One item per distinct chain (the
        first instance, with the number of ordered pairs resolved that way); ``more`` counts the
        chains past the bound.
  ``proxy-unordered``  a generic-proxy access ordered before an async-proxy one by
        happens-before only, with no fence.proxy.async between them (the race.async-proxy finding).
  ``no-conflict`` / ``not-executed``  the run ordered no earlier conflicting access before the
        line (a race there is a finding, not evidence), or never executed it.
  ``issued-after``  for a line with findings: the synchronization each warp issued before its
        first execution of the line (what it did wait for).
  ``checker``  the race checker's own message for the line (barrier intervals of the SMT proof,
        or the unordered pair).

The reference correspondence (``reference``, with ``--ref``) matches values, not text: the
equivalence engine's symbolic runs note per line the values of loads and copies, mma/wgmma
accumulations, reductions, arithmetic and stores (``symexec/terms.py``); a candidate line is
matched to the reference lines that produced identical normal forms, for ``all`` of its
distinct values or for ``some`` (k of n). Where the symbolic runs did not complete, only the
engine's output-store correspondence is given (the summary says which).
"""
from __future__ import annotations

import os
from pathlib import Path

from kverify.rules import is_rule, rule
from kverify.semantics.interpreter.hbtrace import RESOLVE_PER_AGENTS, SITE_PAIRS
from kverify.semantics.ir.optable import SPACES, memory_access, space_of, sync_of
from kverify.semantics.ir.visit import reachable_instructions

SCHEMA = "kverify.audit/2"
#: evidence items that name an ordered pair of conflicting accesses (``hbtrace``)
PAIR_KINDS = ("synchronization", "program-order", "proxy-unordered", "more")
RANK = {"violated": 5, "unknown": 4, "warning": 3, "bounded": 2, "proved": 1}


EVIDENCE_NOTE = ("per access line, the earlier conflicting accesses (other line, warp, proxy) the deterministic run "
                 "ordered it after and the edge that ordered them: the release and the acquire (barrier instance, "
                 "mbarrier phase, group wait, cluster barrier, release/acquire pattern), the fence.proxy.async of "
                 "a generic access before an async-proxy one, the issue of an async operation, or program order; "
                 "one example per distinct chain of edges, at most "
                 f"{SITE_PAIRS} chains per line, {RESOLVE_PER_AGENTS} resolved pairs per pair of lines and warps")


VALUES_NOTE = ("loads, mma/wgmma accumulations, reductions (redux.sync, float atomic adds), arithmetic results "
               "and stores whose values have identical normal forms in the two kernels' symbolic runs (the "
               "equivalence engine's model, at its launch): a candidate line is matched to a reference line for "
               "'all' of its values when every distinct value it produced was produced there too, else for "
               "'some' (k of n); identical normal forms imply equal values, but equal values need not have "
               "identical normal forms, so an unmatched line is not a mismatch; values of integer atomics are "
               "not matched")
STORES_NOTE = ("output stores only: the equivalence engine's candidate->reference store correspondence (the "
               "symbolic runs did not complete, so no intermediate value was matched)")


def _status(o) -> str:
    """An obligation's status, a violation at the warning tier as ``warning``."""
    return "warning" if o["status"] == "violated" and o.get("severity") == "warning" else o["status"]


class LineKeys:
    """The row keys of a kernel's lines: ``file:line``, the file named by the shortest trailing
    part of its path that no other source file of the kernel ends with (``util.h:3``; ``a/util.h:3``
    and ``b/util.h:3`` for two headers of one name, which keying by the base name merged into one
    row), and ``ptx N`` for a line with no source position (a report locates it in the PTX file
    itself: ``k.ptx:N``)."""

    def __init__(self, module):
        self.ptx = os.path.abspath(module.path) if module.path else None
        paths = {f: Path(os.path.normpath(f)).parts for _, f in module.files}
        self.names = {}
        for f, parts in paths.items():
            n = 1
            while n < len(parts) and any(g != f and other[-n:] == parts[-n:] for g, other in paths.items()):
                n += 1
            self.names[f] = "/".join(parts[-n:])

    def name(self, path) -> str:
        """The name rows give ``path`` (a path of the ``.file`` table; another path by its base name)."""
        return self.names.get(path) or os.path.basename(path or "")

    def of(self, loc) -> str:
        """The key of an IR ``Loc``."""
        return f"{self.name(loc.file)}:{loc.line}" if loc.file else f"ptx {loc.ptx_line}"

    def location(self, L: dict) -> str:
        """The key of a report location (``report_json``: ``file`` the path its ``Loc`` names, or
        the PTX file's own path for a line with no source position)."""
        if L["file"] and os.path.abspath(L["file"]) == self.ptx:
            return f"ptx {L['ptx_line']}"
        return f"{self.name(L['file'])}:{L['line']}"

    def where(self, s: str) -> str:
        """The key of a ``where`` string (``path/file.cu:12``, ``ptx line 83``)."""
        if s.startswith("ptx line "):
            return "ptx " + s[len("ptx line "):]
        if ":" in s and not s.startswith("ptx"):
            path, line = s.rsplit(":", 1)
            return f"{self.name(path)}:{line}"
        return s


def _space_obligation(i) -> str | None:
    sp = space_of(i) or ""
    proxy = getattr(i.row, "proxy", None)
    if proxy == "async":
        return "race.async"
    if sp.startswith("shared"):
        return "race.shared"
    if sp.startswith("global") or sp == "generic":
        return "race.global"
    return None


def _accesses(i) -> list:
    """How an instruction accesses memory: ``load shared::cta``, ``store global``, ... for a
    generic-proxy memory instruction; ``async store shared::cluster``, ``async load global``, ... for
    an asynchronous copy or wgmma (its operand slots' access, the spaces its modifiers name in
    order, else the row's space)."""
    acc = memory_access(i)
    if acc in ("load", "store", "update"):
        return [f"{acc} {space_of(i)}"]
    row = i.row
    if row is None or row.effect != "async":
        return []
    slots = [o.access for o in row.operands if o.access in ("load", "store")]
    spaces = [x for x in i.mods if x in SPACES] or [space_of(i) or "generic"] * len(slots)
    return [f"async {a} {sp}" for a, sp in zip(slots, spaces + spaces[-1:] * len(slots))]


# the obligations a synchronization instruction bears on, by the family of its op-table sync column
SYNC_OBLIGATIONS = {"mbarrier": ("mbarrier.protocol", "mbarrier.parity", "mbarrier.tx-bytes", "mbarrier.arrivals",
                                 "deadlock"),
                    "bar": ("barrier.named", "deadlock")}


def _obligation_family(i) -> list:
    return list(SYNC_OBLIGATIONS.get((sync_of(i) or "").split(".")[0], ()))


def run_spec(module, kernel, spec, timeout_s: float = 10.0):
    """The launch the check's interpreter ran (``check._interpreter``): ``spec`` with a buffer,
    sized to the kernel's accesses, for each pointer parameter (and pointer field of a by-value
    struct) it gives none (``--grid``/``--block`` without ``--arg``: the run had no values and
    every row lost its evidence)."""
    from kverify.verifier.check import _sized_buffers, _struct_pointers

    spec = _struct_pointers(module, kernel, spec.for_kernel(kernel), timeout_s)
    return _sized_buffers(module, kernel, spec, timeout_s)[0]


def run_events(module, kernel, spec, inputs=None, max_steps=500_000, evidence=False):
    """``(events, status, evidence, ran)`` of the deterministic run with the interpreter's event log
    on; with ``evidence``, the happens-before trace too (``hbtrace``: {Loc: evidence items}), else
    None; ``ran``: the row keys (``LineKeys``) of the lines some thread executed (a guard true for
    some lane)."""
    from kverify.semantics.interpreter.hbtrace import HBTrace
    from kverify.semantics.interpreter.machine import Machine
    from kverify.semantics.interpreter.scheduler import Deterministic
    from kverify.launch import initial_inputs

    m = Machine(module, kernel, spec, initial_inputs(kernel, spec, inputs, 0), Deterministic(), max_steps, True)
    m.events = []
    if evidence:
        m.trace = HBTrace(m)
    m.ran = set()
    m.run()
    keys = LineKeys(module)
    out = []
    for turn, cta, warp, kind, what, loc in m.events:
        out.append({"turn": turn, "cta": list(cta) if cta is not None else None, "warp": warp, "kind": kind,
                    "op": what, "line": keys.of(loc) if loc is not None else None})
    trace = None
    if evidence:
        trace = {"items": m.trace.evidence(), "unresolved": m.trace.unresolved}
    ran = {f"{keys.name(f)}:{line}" if f else f"ptx {ptx}" for f, line, ptx in m.ran}
    return out, m.status, trace, ran


def build(module, kernel, spec, path, check_report, equiv_report=None, ref_path=None, inputs=None) -> dict:
    """The ``kverify.audit/1`` document of ``kernel`` from its check report (and equivalence report)."""
    from kverify.verifier.report import report_json

    from kverify.semantics.ir.load import source_lines

    doc = report_json([check_report] + ([equiv_report] if equiv_report else []), "audit")
    obligations = [o for kr in doc["kernels"] for o in kr["obligations"]]
    findings = [f for kr in doc["kernels"] for f in kr["findings"]]
    # every report's obligations (the equivalence report's too: its violation was in no row)
    by_id = {}
    for o in obligations:
        if RANK.get(_status(o), 0) >= RANK.get(_status(by_id[o["id"]]), 0) if o["id"] in by_id else True:
            by_id[o["id"]] = o
    keys = LineKeys(module)
    sources = source_lines(module)
    try:
        ptx_text = open(module.path, errors="replace").read().splitlines() if module.path else []
    except OSError:
        ptx_text = []
    try:
        events, run_status, trace, ran = run_events(module, kernel, run_spec(module, kernel, spec), inputs,
                                                    evidence=True)
        timeline_note = f"deterministic schedule, run {run_status}, {len(events)} events"
    except Exception as e:  # the timeline is evidence, not a verdict: say why it is missing
        events, run_status, trace, ran = [], "error", None, None
        timeline_note = f"no timeline: {type(e).__name__}: {e}"

    rows: dict = {}
    for i in reachable_instructions(module, kernel):
        loc = i.loc
        k = keys.of(loc)
        r = rows.get(k)
        if r is None:
            src = sources.get(loc.file)
            text = src[loc.line - 1] if src and 0 < loc.line <= len(src) else ""
            r = rows[k] = {"line": k, "file": keys.name(loc.file or module.path), "lineno": loc.line,
                           "source": text.rstrip(), "ptx": [], "obligations": set(), "findings": [], "evidence": [],
                           "reference": [], "accesses": set(), "status": "none"}
        r["ptx"].append({"ptx_line": loc.ptx_line, "text": str(i)})
        accs = _accesses(i)
        if accs:
            ob = _space_obligation(i)
            if ob:
                r["obligations"].add(ob)
                r["accesses"].update(accs)
        r["obligations"].update(_obligation_family(i))
    for o in obligations:
        for L in o.get("locations") or []:
            k = keys.location(L)
            if k in rows:
                rows[k]["obligations"].add(o["id"])
    for f in findings:
        sev = rule(f["rule"]).severity if f.get("rule") and is_rule(f["rule"]) else "error"
        for L in f.get("locations") or []:
            k = keys.location(L)
            if k in rows:
                rows[k]["findings"].append({"rule": f["rule"], "severity": sev, "message": f["message"]})
    # evidence 1: the ordered pairs of the run (hbtrace): the earlier conflicting access and the edge
    executed = set()
    for loc, items in ((trace or {}).get("items") or {}).items():
        k = keys.of(loc)
        if k in rows:
            executed.add(k)
            for x in items:  # lines as the rows name them
                if "other" in x:
                    x["other"]["line"] = keys.where(x["other"]["line"])
                for st in x.get("via", ()):
                    if st.get("line"):
                        st["line"] = keys.where(st["line"])
            rows[k]["evidence"] += items
    # evidence 2, for a line with findings and no ordered pair (or with no trace): the
    # synchronization each warp issued before its first execution of the line
    history: dict = {}
    first_seen = set()
    for e in events:
        if e["kind"] in ("phase", "complete") or e["warp"] is None:
            continue
        w = (tuple(e["cta"]), e["warp"])
        if e["kind"] in ("issue", "access") and e["line"] in rows and rows[e["line"]]["accesses"] and \
                (w, e["line"]) not in first_seen:
            first_seen.add((w, e["line"]))
            r = rows[e["line"]]
            before = [h for h in history.get(w, []) if h["line"] != e["line"]][-3:]
            if (trace is None or r["findings"]) and not any(x["kind"] in PAIR_KINDS for x in r["evidence"]) and \
                    sum(x["kind"] == "issued-after" for x in r["evidence"]) < 4:
                r["evidence"].append({"kind": "issued-after", "warp": e["warp"], "cta": e["cta"], "turn": e["turn"],
                                      "after": [{"op": h["op"], "line": h["line"], "turn": h["turn"]}
                                                for h in before]})
        if e["kind"] == "issue":  # a synchronization instruction (barrier, mbarrier, fence, async issue/wait)
            history.setdefault(w, []).append(e)
    for k, r in rows.items():
        if not r["accesses"]:
            continue
        if trace is not None and k not in executed:
            r["evidence"].insert(0, {"kind": "not-executed", "note": "the deterministic run did not execute it"})
        elif trace is not None and not any(x["kind"] in PAIR_KINDS for x in r["evidence"]):
            r["evidence"].insert(0, {"kind": "no-conflict", "note": "no earlier conflicting access of the same "
                                     "bytes was ordered before it in the run" +
                                     (" (the run found a race here: see the findings)"
                                      if any(f["rule"].startswith("race.") for f in r["findings"]) else "")})
    for r in rows.values():
        for ob in sorted(r["obligations"]):
            o = by_id.get(ob)
            if o and o["checker"] == "races" and r["accesses"]:
                r["evidence"].append({"kind": "checker", "obligation": ob, "status": o["status"],
                                      "message": o["message"]})
    # reference correspondence: the values each line produced (symexec.terms), else the output stores
    value_matched = False
    if equiv_report is not None:
        for o in equiv_report.obligations:
            if getattr(o, "values", None) is not None:
                value_matched = True
            for c in getattr(o, "values", None) or []:
                k = keys.where(c["candidate"])
                if k in rows:
                    rows[k]["reference"].append({"kind": c["kind"], "values": c["values"], "capped": c["capped"],
                                                 "lines": [{**x, "line": keys.where(x["line"])}
                                                           for x in c["reference"]]})
            for c in getattr(o, "correspondence", None) or []:
                k = keys.where(c["candidate"])
                if k in rows and not any(x["kind"] == "store" for x in rows[k]["reference"]):
                    rows[k]["reference"].append({"kind": "output store", "values": None, "capped": False,
                                                 "lines": [{"line": keys.where(x), "kinds": ["store"], "matched": None,
                                                            "all": True} for x in c["reference"]]})
    out_rows = []
    for k, r in rows.items():
        obs = sorted(r["obligations"])
        sts = [_status(by_id[o]) for o in obs if o in by_id]
        st = max(sts, key=lambda s: RANK.get(s, 0)) if sts else "none"
        if r["findings"]:
            st = "violated" if any(f["severity"] == "error" for f in r["findings"]) else max(
                st, "warning", key=lambda s: RANK.get(s, 0))
        if st in ("bounded", "none") and ran is not None and k not in ran and run_status not in ("error",):
            # a bound is the run's: a line it never executed is not covered by it (a proof is)
            st = "not executed"
        r["status"] = st
        r["obligations"] = [{"id": o, "status": by_id[o]["status"]} for o in obs if o in by_id]
        r["accesses"] = sorted(r["accesses"])
        out_rows.append(r)
    out_rows.sort(key=lambda r: (r["file"], r["lineno"]))
    counts: dict = {}
    for o in obligations:
        counts.setdefault(o["checker"], {}).setdefault(_status(o), 0)
        counts[o["checker"]][_status(o)] += 1
    cexs = [{"obligation": o["id"], "rule": o.get("rule"), "message": o["counterexample"].get("message", o["message"]),
             "schedule": o["counterexample"].get("schedule"), "replay": o["counterexample"].get("replay")}
            for o in obligations if o.get("counterexample")]
    return {
        "schema": SCHEMA, "candidate": path, "reference": ref_path, "kernel": kernel.name,
        "summary": {
            "verdict": doc["verdict"], "counts": counts,
            "bounds": [{"obligation": o["id"], "status": o["status"], "bound": o["bound"]}
                       for o in obligations if o.get("bound") and o["status"] in ("bounded", "proved", "violated")],
            "not_checked": [{"obligation": o["id"], "reason": o["message"]} for o in obligations
                            if o["status"] == "unknown"],
            "reference_matched": (VALUES_NOTE if value_matched else STORES_NOTE) if equiv_report is not None else None,
            "evidence": EVIDENCE_NOTE + (f"; {trace['unresolved']} ordered pair(s) whose edge was not recorded"
                                         if trace and trace["unresolved"] else "")
            if trace is not None else f"no happens-before trace ({timeline_note})",
        },
        "obligations": obligations, "counterexamples": cexs, "rows": out_rows,
        "timeline": {"note": timeline_note, "events": events},
    }
