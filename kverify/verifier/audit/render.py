"""Markdown and self-contained HTML renderings of a ``kverify.audit/2`` document (``build``).
The HTML has no external references: inline CSS, inline JS, inline SVG."""
from __future__ import annotations

import html
import json

COLOURS = {"violated": "#f4b6b6", "unknown": "#f7e3a1", "warning": "#fbd7b0", "bounded": "#cfe3f7", "proved": "#c8ecc8",
           "vacuous": "#e8e8e8", "not executed": "#e8e8e8", "none": "#ffffff"}
#: the summary table's columns: every obligation status (a violation at the warning tier as warning)
STATUSES = ("proved", "bounded", "violated", "warning", "unknown", "vacuous")


def _step(st) -> str:
    """One edge of an evidence chain (``hbtrace``) in words."""
    who = f"warp {st['warp']}" if st.get("warp") is not None else "?"
    if st.get("cta") is not None:
        who += f" of CTA {tuple(st['cta'])}"
    at = f" at {st['line']}" if st.get("line") else ""
    obj = ""
    if st.get("barrier") is not None:
        obj = f" {st['barrier']}" + (f" phase {st['phase']}" if st.get("phase") is not None else "")
    role = st["role"]
    if role == "release" and st.get("async_op"):
        return f"{st['op']}{' on' + obj if obj else ''}{at} ({st['async_op']} of {who}, {st.get('proxy', 'async')} proxy)"
    if role == "release":
        return f"{st['op']}{' on' + obj if obj else ''}{at} ({who})"
    if role == "acquire":
        return f"{st['op']}{at} ({who}) acquires{obj or ' it'}"
    if role == "issue":
        return f"issued by {who}{at}"
    if role == "fence":
        return f"{st['op']}{at} ({who})"
    if role == "issuer-fence":
        return f"{st['op']}{at} (the issuing {who}, not the accessing one)"
    return st.get("op", role)


def evidence_text(x) -> str:
    """One evidence item of an audit row in words."""
    k = x["kind"]
    if k in ("synchronization", "program-order", "proxy-unordered"):
        o = x["other"]
        who = f"warp {o['warp']}" if o.get("warp") is not None else "?"
        if o.get("cta") is not None:
            who += f" of CTA {tuple(o['cta'])}"
        if o.get("async_op"):
            who = f"{o['async_op']} of {who}"
        head = f"{x['conflict']}: after the {o['access']} at {o['line']} ({who}, {o['proxy']} proxy)"
        steps = " -> ".join(_step(st) for st in x["via"])
        if k == "program-order":
            steps = "same warp, program order" + (f": {steps}" if steps else "")
        if k == "proxy-unordered":
            steps = (f"{steps or 'same warp, program order'}, but no fence.proxy.async after the generic-proxy "
                     f"access: not ordered for the async proxy")
        return f"{head}: {steps} [{x['examples']} example{'s' if x['examples'] != 1 else ''}]"
    if k == "more":
        return f"and {x['examples']} ordered pair(s) explained otherwise (not listed)"
    if k == "issued-after":
        after = ", ".join(f"{h['op']} ({h['line']}, turn {h['turn']})" for h in x["after"]) or "nothing"
        return f"warp {x['warp']} of CTA {tuple(x['cta'])} (turn {x['turn']}) first executed it after {after}"
    if k == "checker":
        return f"{x['obligation']} {x['status']}: {x['message']}"
    return x.get("note", k)


def reference_text(x) -> str:
    """One reference correspondence of an audit row in words: its kind of value, and the
    reference lines that produced all (or some, k of n) of the line's values."""
    def one(r):
        if r.get("matched") is None:
            return r["line"]
        how = f"all {x['values']}" if r["all"] else f"some: {r['matched']} of {x['values']}"
        return f"{r['line']} ({'/'.join(r['kinds'])}, {how})"
    capped = " (values capped)" if x.get("capped") else ""
    return f"{x['kind']}{capped} -> " + ", ".join(one(r) for r in x["lines"])


def _md_cell(s) -> str:
    return str(s).replace("|", "\\|").replace("\n", " ")


def markdown(doc: dict) -> str:
    s = doc["summary"]
    out = [f"# kverify audit: {doc['kernel']} ({doc['candidate']}" +
           (f" vs {doc['reference']}" if doc.get("reference") else "") + ")", "",
           f"**Verdict: {s['verdict']}**", "", "| checker | " + " | ".join(STATUSES) + " |",
           "|---" * (len(STATUSES) + 1) + "|"]
    for c, n in sorted(s["counts"].items()):
        out.append(f"| {c} | " + " | ".join(str(n.get(k, 0)) for k in STATUSES) + " |")
    if s["bounds"]:
        out += ["", "Bounds of the claims:"] + [f"- `{b['obligation']}` ({b['status']}): {_md_cell(b['bound'])}"
                                               for b in s["bounds"]]
    if s["not_checked"]:
        out += ["", "Not checked (unknown):"] + [f"- `{b['obligation']}`: {_md_cell(b['reason'])}" for b in s["not_checked"]]
    if s.get("evidence"):
        out += ["", f"Evidence: {s['evidence']}."]
    if s.get("reference_matched"):
        out += ["", f"Reference correspondence: {s['reference_matched']}."]
    if doc["counterexamples"]:
        out += ["", "## Counterexamples"]
        for c in doc["counterexamples"]:
            out += [f"- `{c['obligation']}` ({c.get('rule')}, schedule {c.get('schedule')}): {_md_cell(c['message'])}",
                    f"  replay: `{c.get('replay')}`"]
    out += ["", "## Lines", "", "| line | source | status | obligations | evidence | reference | findings |",
            "|---|---|---|---|---|---|---|"]
    for r in doc["rows"]:
        obs = ", ".join(f"{o['id']}={o['status']}" for o in r["obligations"])
        fs = "; ".join(f"{f['severity']} {f['rule']}: {f['message']}" for f in r["findings"])
        out.append(f"| {r['line']} | `{_md_cell(r['source'].strip())}` | {r['status']} | {obs} | "
                   f"{_md_cell('; '.join(evidence_text(x) for x in r['evidence']))} | "
                   f"{_md_cell(', '.join(reference_text(x) for x in r['reference']))} | {_md_cell(fs)} |")
    out += ["", f"Timeline: {doc['timeline']['note']}.", ""]
    return "\n".join(out)


KIND_SHAPE = {"issue": "rect", "complete": "circle", "phase": "diamond"}


def timeline_svg(events: list, max_rows: int = 24) -> str:
    """Warp roles x scheduler turns: each synchronization issue (square), asynchronous completion
    (circle) and mbarrier phase completion (diamond, on the 'mbarriers' row), with a tooltip."""
    events = [e for e in events if e["kind"] != "access"]  # plain accesses: evidence rows, not drawn
    rows, order = {}, []
    for e in events:
        key = "mbarriers" if e["warp"] is None else f"CTA {tuple(e['cta'])} warp {e['warp']}"
        if key not in rows:
            if len(rows) >= max_rows:
                continue
            rows[key] = len(rows)
            order.append(key)
    if not events:
        return '<svg class="timeline" xmlns="http://www.w3.org/2000/svg" width="400" height="30"><text x="4" y="20">no events</text></svg>'
    t_max = max(e["turn"] for e in events) or 1
    left, width, rh = 170, 900, 18
    h = rh * len(order) + 30
    parts = [f'<svg class="timeline" xmlns="http://www.w3.org/2000/svg" width="{left + width + 20}" height="{h}">']
    for k, y in rows.items():
        parts.append(f'<text x="2" y="{y * rh + 13}" font-size="11">{html.escape(k)}</text>'
                     f'<line x1="{left}" x2="{left + width}" y1="{y * rh + 9}" y2="{y * rh + 9}" stroke="#ddd"/>')
    colour = {"issue": "#3060c0", "complete": "#20a040", "phase": "#c04020"}
    for e in events:
        key = "mbarriers" if e["warp"] is None else f"CTA {tuple(e['cta'])} warp {e['warp']}"
        if key not in rows:
            continue
        x = left + e["turn"] / t_max * width
        y = rows[key] * rh + 9
        tip = html.escape(f"turn {e['turn']}: {e['kind']} {e['op']} {e['line'] or ''}")
        c = colour[e["kind"]]
        if e["kind"] == "issue":
            shape = f'<rect x="{x - 3:.1f}" y="{y - 4}" width="6" height="8" fill="{c}"/>'
        elif e["kind"] == "complete":
            shape = f'<circle cx="{x:.1f}" cy="{y}" r="4" fill="{c}"/>'
        else:
            shape = f'<path d="M{x:.1f} {y - 6}l5 6l-5 6l-5 -6z" fill="{c}"/>'
        parts.append(f'<g class="ev ev-{e["kind"]}"><title>{tip}</title>{shape}</g>')
    parts.append(f'<text x="{left}" y="{h - 4}" font-size="10">scheduler turn 0 .. {t_max}; square: sync issue, '
                 f'circle: async completion, diamond: mbarrier phase completed</text></svg>')
    return "".join(parts)


CSS = """body{font-family:sans-serif;font-size:13px;margin:16px}table{border-collapse:collapse}
td,th{border:1px solid #ccc;padding:2px 6px;vertical-align:top}pre{margin:0}
tr.line{cursor:pointer}tr.ptx{display:none}tr.ptx.open{display:table-row}tr.ptx pre{color:#444;font-size:12px}
.timeline{border:1px solid #ccc;margin:4px 0}code{font-size:12px}
td.src pre{white-space:pre-wrap;max-width:440px}td.evidence{min-width:360px;max-width:560px;font-size:12px}
td.evidence div{margin:0 0 3px 0;padding-left:4px;border-left:3px solid #9ab}
td.evidence div.evi-checker{border-left-color:#ccc;color:#555}td.ref{max-width:300px;font-size:12px}
td.findings{max-width:360px;font-size:12px}"""

JS = """document.querySelectorAll('tr.line').forEach(function(r){r.addEventListener('click',function(){
var p=document.getElementById('ptx-'+r.dataset.i);if(p){p.classList.toggle('open');}});});"""


def _ev_html(x) -> str:
    """One evidence item as a block of the evidence cell (the chain's edges joined by arrows)."""
    return f"<div class='evi evi-{html.escape(x['kind'])}'>{html.escape(evidence_text(x)).replace(' -&gt; ', ' → ')}</div>"


def page(doc: dict) -> str:
    e = html.escape
    s = doc["summary"]
    out = ["<!DOCTYPE html><html><head><meta charset='utf-8'><title>kverify audit: " + e(doc["kernel"]) +
           "</title><style>" + CSS + "</style></head><body>",
           f"<h1>kverify audit: {e(doc['kernel'])}</h1><p>{e(doc['candidate'])}" +
           (f" vs reference {e(doc['reference'])}" if doc.get("reference") else "") +
           f"</p><h2 id='verdict'>Verdict: {e(s['verdict'])}</h2><table><tr><th>checker</th>"
           + "".join(f"<th>{k}</th>" for k in STATUSES) + "</tr>"]
    for c, n in sorted(s["counts"].items()):
        out.append(f"<tr><td>{e(c)}</td>" + "".join(f"<td>{n.get(k, 0)}</td>" for k in STATUSES) + "</tr>")
    out.append("</table>")
    if s["bounds"]:
        out.append("<h3>Bounds</h3><ul>" + "".join(f"<li><code>{e(b['obligation'])}</code>: {e(str(b['bound']))}</li>"
                                                   for b in s["bounds"]) + "</ul>")
    if s["not_checked"]:
        out.append("<h3>Not checked</h3><ul>" + "".join(f"<li><code>{e(b['obligation'])}</code>: {e(b['reason'])}</li>"
                                                        for b in s["not_checked"]) + "</ul>")
    if s.get("evidence"):
        out.append(f"<p>Evidence: {e(s['evidence'])}.</p>")
    if s.get("reference_matched"):
        out.append(f"<p>Reference correspondence: {e(s['reference_matched'])}.</p>")
    out.append("<h2>Obligations</h2><table id='obligations'><tr><th>id</th><th>checker</th><th>status</th><th>bound</th>"
               "<th>message</th></tr>")
    for o in doc["obligations"]:
        out.append(f"<tr style='background:{COLOURS.get(o['status'], '#fff')}'><td>{e(o['id'])}</td><td>{e(o['checker'])}"
                   f"</td><td>{e(o['status'])}</td><td>{e(str(o.get('bound') or ''))}</td><td>{e(o['message'])}</td></tr>")
    out.append("</table>")
    out.append(f"<h2>Timeline of the run</h2><p>{e(doc['timeline']['note'])}</p>" + timeline_svg(doc["timeline"]["events"]))
    if doc["counterexamples"]:
        out.append("<h2>Counterexamples</h2>")
        for c in doc["counterexamples"]:
            same = c.get("schedule") == "deterministic"
            out.append(f"<div class='cex'><p><b>{e(c['obligation'])}</b> ({e(str(c.get('rule')))}): {e(c['message'])}</p>"
                       f"<p>replay: <code>{e(str(c.get('replay')))}</code></p>" +
                       (timeline_svg(doc["timeline"]["events"]) if same else
                        f"<p>schedule {e(str(c.get('schedule')))}: its timeline is not drawn (only the deterministic run "
                        "is recorded)</p>") + "</div>")
    out.append("<h2>Source</h2><p>Click a line to show its PTX.</p><table id='source'><tr><th>line</th><th>source</th>"
               "<th>status</th><th>obligations</th><th>evidence</th><th>reference</th><th>findings</th></tr>")
    for n, r in enumerate(doc["rows"]):
        obs = "<br>".join(f"{e(o['id'])}={e(o['status'])}" for o in r["obligations"])
        fs = "<br>".join(e(f"{f['severity']} {f['rule']}: {f['message']}") for f in r["findings"])
        out.append(f"<tr class='line' data-i='{n}' style='background:{COLOURS.get(r['status'], '#fff')}'>"
                   f"<td>{e(r['line'])}</td><td class='src'><pre>{e(r['source'])}</pre></td><td>{e(r['status'])}</td><td>{obs}</td>"
                   f"<td class='evidence'>{''.join(_ev_html(x) for x in r['evidence'])}</td>"
                   f"<td class='ref'>{'<br>'.join(e(reference_text(x)) for x in r['reference'])}</td>"
                   f"<td class='findings'>{fs}</td></tr>")
        ptx = "\n".join(f"{p['ptx_line']:5}  {p['text']}" for p in r["ptx"])
        out.append(f"<tr class='ptx' id='ptx-{n}'><td></td><td colspan='6'><pre>{e(ptx)}</pre></td></tr>")
    out.append("</table><script type='application/json' id='audit-json'>" +
               json.dumps(doc["summary"]).replace("</", "<\\/") + "</script><script>" + JS + "</script></body></html>")
    return "".join(out)
