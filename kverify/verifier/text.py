"""The text ``kverify check`` prints for people: per kernel a verdict line, then one line per
obligation (status, title, time, first location), the rule and message of every violated or
unknown obligation, each bound once for consecutive obligations that share it, and the replay
command of a counterexample. ``kverify.Report.__str__`` prints the same text."""
from __future__ import annotations


def check_text(reports) -> str:
    """The text of ``kverify check`` for ``reports`` (``KernelReport``s), newline-terminated."""
    out = []
    for rep in reports:
        out.append(f"{rep.path}: kernel {rep.name}: {rep.verdict.upper()}")
        shown = None  # a bound is printed once for consecutive obligations that share it
        for o in rep.obligations:
            where = f"  {o.locations[0]}" if o.locations else ""
            out.append(f"  {o.status:9} {o.title:34} {o.time_s:6.2f}s{where}")
            if o.status in ("violated", "unknown"):
                first, *rest = o.message.splitlines() or [""]
                out.append(f"            {(o.rule + ': ') if o.rule else ''}{first}")
                out.extend(f"            {line}" for line in rest)
            if o.status in ("bounded", "proved") and o.bound and o.bound != shown:
                out.append(f"            {'bound' if o.status == 'bounded' else 'scope'}: {o.bound}")
            shown = o.bound if o.status == "bounded" else None
            if o.counterexample and o.counterexample.get("replay"):
                out.append(f"            replay: {o.counterexample['replay']}")
    return "".join(line + "\n" for line in out)
