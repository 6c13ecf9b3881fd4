"""The text ``kverify check`` and ``kverify run`` print for people: linter lines
(``path:line:col: severity[rule]: message``) for bad inputs, violated obligations and findings;
then for ``check`` per kernel a verdict line, then one line per obligation (status, title, time, first location), the rule and message of every violated or
unknown obligation, each bound once for consecutive obligations that share it, and the replay
command of a counterexample. ``kverify.Report.__str__`` prints the same text."""
from __future__ import annotations


def display_path(path, ptx_path=None) -> str:
    """A location's path as a user can open it: relative to the working directory when it
    resolves to a file under it (relative to the PTX file's directory, where nvcc's ``.file``
    names point, or by its base name in that directory, else as given), absolute when it
    resolves elsewhere, as given when it resolves to no file."""
    import os

    if not path:
        return ptx_path or "<input>"
    tries = [path]
    if ptx_path:  # next to the PTX first: as named there, or by its base name (a PTX file moved with its
        # source); then as given (``source_lines``' order)
        here = os.path.dirname(ptx_path)
        tries = ([] if os.path.isabs(path) else [os.path.join(here, path)]) + [
            os.path.join(here, os.path.basename(path))] + tries
    for t in tries:
        if os.path.isfile(t):
            full = os.path.abspath(t)
            rel = os.path.relpath(full)
            return full if rel.startswith(os.pardir) else rel
    return path


def _shown(loc, ptx_path) -> str:
    """A ``report.Location`` as the obligation table shows it: ``file:line:col (ptx N)`` with the
    file as ``display_path`` gives it (as the linter lines do)."""
    from kverify.semantics.ir.nodes import Loc, where

    return where(Loc(display_path(loc.path, ptx_path) if loc.path else None, loc.line, loc.column, loc.ptx_line),
                 detail=True)


def diagnostic(rule, message, loc, ptx_path, strict: bool = False) -> list[str]:
    """A finding as linter lines: ``path:line:col: SEVERITY[rule]: message (ptx N)`` (the
    severity from the rule registry, ``error`` for a warning under ``strict``), the message's
    further lines indented below."""
    from kverify.rules import severity

    sev = severity(rule, strict)
    first, *rest = (message or "").splitlines() or [""]
    if loc is None:
        head = f"{ptx_path}:1:1"
        ptx = ""
    else:
        path = display_path(loc.path if hasattr(loc, "path") else loc.file, ptx_path)
        col = getattr(loc, "column", None) or getattr(loc, "col", 0)
        head = f"{path}:{loc.line or loc.ptx_line or 1}:{col or 1}"
        ptx = f" (ptx {loc.ptx_line})" if loc.ptx_line and not (loc.line == loc.ptx_line and path.endswith(
            ".ptx")) and loc.line else ""
    return [f"{head}: {sev}[{rule}]: {first}{ptx}"] + [f"    {line}" for line in rest]


def report_diagnostics(rep) -> list[str]:
    """The linter lines of one kernel report: a bad input's ``file:line:col: error:
    message``; else one line per violated obligation (in the order of the obligation table)
    and one per finding no such line already says (the interpreter's further findings)."""
    if rep.error:
        loc = rep.error_location
        head = f"{display_path(loc.path) if loc else rep.path}:{(loc.line if loc else 0) or 1}:{(loc.column if loc else 0) or 1}"
        return [f"{head}: error: {rep.error}"]
    out, said = [], set()
    items = [(o.rule, o.message, o.locations) for o in rep.obligations if o.status == "violated" and o.rule]
    items += [(f.rule, f.message, f.locations) for f in rep.findings]
    for rule, message, locs in items:
        key = (rule, message)
        if key in said:
            continue
        said.add(key)
        out += diagnostic(rule, message, locs[0] if locs else None, rep.path, rep.strict)
    return out


def check_text(reports) -> str:
    """The text of ``kverify check`` for ``reports`` (``KernelReport``s), newline-terminated:
    first every report's linter lines (``report_diagnostics``), then per report its verdict
    line and obligation table."""
    out = [line for rep in reports for line in report_diagnostics(rep)]
    for rep in reports:
        if rep.error:
            out.append(f"{rep.path}: {'kernel ' + rep.display_name + ': ' if rep.name else ''}{rep.verdict.upper()}")
            continue
        out.append(f"{rep.path}: kernel {rep.display_name}: {rep.verdict.upper()}")
        for a in rep.assumptions:  # user-given summaries every proof below rests on
            out.append(f"  assumes: {a['function']} is {a['summary']} ({a['meaning']}; --extern-summary)")
        shown = None  # a bound is printed once for consecutive obligations that share it
        for o in rep.obligations:
            where = f"  {_shown(o.locations[0], rep.path)}" if o.locations else ""
            # a violation at tier warning/note shows its tier (the verdict does not follow it)
            status = o.status if o.status != "violated" else o.severity(rep.strict).replace("error", "violated")
            out.append(f"  {status:9} {o.title:34} {o.time_s:6.2f}s{where}")
            # a vacuous obligation with a bound is one a run made not applicable (memory safety
            # on buffers sized to the kernel's accesses): its reason is shown
            if o.status in ("violated", "unknown") or (o.status == "vacuous" and o.bound):
                first, *rest = o.message.splitlines() or [""]
                out.append(f"            {(o.rule + ': ') if o.rule else ''}{first}")
                out.extend(f"            {line}" for line in rest)
            if o.status in ("bounded", "proved") and o.bound and o.bound != shown:
                out.append(f"            {'bound' if o.status == 'bounded' else 'scope'}: {o.bound}")
            shown = o.bound if o.status == "bounded" else None
            if o.counterexample and o.counterexample.get("replay"):
                out.append(f"            replay: {o.counterexample['replay']}")
    return "".join(line + "\n" for line in out)
