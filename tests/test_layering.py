"""The package's import structure: every module imports in a fresh interpreter, no module
imports itself back through others (no import circle), and layers import downward only:
``semantics.ir`` <- ``semantics.values`` / ``semantics.memory_model`` <- ``semantics.interpreter`` /
``symbolic`` <- ``verifier`` <- CLI; ``launch`` beside ``ir``; ``lowering`` on ``ir`` and
``launch`` only. Imports are read statically (ast), including those inside functions."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "kverify"


def _modules() -> dict[str, Path]:
    mods = {}
    for p in sorted(PKG.rglob("*.py")):
        rel = p.relative_to(ROOT).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts.pop()
        mods[".".join(parts)] = p
    return mods


MODULES = _modules()


def _resolve(name: str) -> str | None:
    """The package module ``name`` refers to (a module, or the package holding a name)."""
    while name:
        if name in MODULES:
            return name
        name = name.rpartition(".")[0]
    return None


def _imports(mod: str, path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    pkg = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg.split(".")
                base = base[:len(base) - node.level + 1]
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module or ""
            names = [f"{prefix}.{a.name}" for a in node.names] if prefix else []
        else:
            continue
        for n in names:
            if n.startswith("kverify"):
                r = _resolve(n)
                if r is not None and r != mod:
                    out.add(r)
    return out


def _graph() -> nx.DiGraph:
    g = nx.DiGraph()
    for mod, path in MODULES.items():
        g.add_node(mod)
        for dep in _imports(mod, path):
            # importing a package's submodule runs the package's __init__ first, but that is
            # not an edge of the dependency structure: only the named module is
            g.add_edge(mod, dep)
    return g


#: import circles outside the semantics layer that other parts of the redesign remove;
#: each entry is the sorted module set of one strongly connected component
KNOWN_CYCLES: set[frozenset] = set()


def test_every_module_imports_in_a_fresh_interpreter():
    names = [m for m in MODULES if not m.endswith("__main__")]
    code = "import importlib, sys\nfor n in sys.argv[1:]:\n    importlib.import_module(n)\n"
    r = subprocess.run([sys.executable, "-c", code, *names], cwd=ROOT, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]


def _package_edge(a: str, b: str) -> bool:
    """``a`` importing ``b`` where ``b`` is a package ``a`` lives in: Python runs the package's
    ``__init__`` before ``a`` anyway; it is no dependency of ``a`` on the package's siblings."""
    return a.startswith(b + ".")


def test_no_import_cycle():
    g = _graph()
    g.remove_edges_from([(a, b) for a, b in list(g.edges) if _package_edge(a, b)])
    cycles = [frozenset(c) for c in nx.strongly_connected_components(g) if len(c) > 1]
    unknown = [sorted(c) for c in cycles if c not in KNOWN_CYCLES]
    assert not unknown, "import circles:\n" + "\n".join(" <-> ".join(c) for c in unknown)


#: layer of each top-level part, low to high; a module may import its own layer and lower ones
LAYERS = [
    ("kverify.semantics.ir", 0), ("kverify.launch", 0), ("kverify.capture", 0),
    ("kverify.semantics.values", 1), ("kverify.semantics.memory_model", 1),
    ("kverify.semantics.interpreter", 2), ("kverify.symbolic", 2),
    ("kverify.lowering", 3),
    ("kverify.verifier", 4),
]


def _layer(mod: str):
    for prefix, level in LAYERS:
        if mod == prefix or mod.startswith(prefix + "."):
            return prefix, level
    return None, None


def test_layers_import_downward_only():
    bad = []
    for a, b in _graph().edges:
        pa, la = _layer(a)
        pb, lb = _layer(b)
        if la is None or lb is None or pa == pb:
            continue
        if pa == "kverify.lowering" and pb not in ("kverify.semantics.ir", "kverify.launch"):
            bad.append(f"{a} -> {b} (lowering depends on ir and launch only)")
        elif pa.startswith("kverify.semantics") and pb == "kverify.verifier":
            bad.append(f"{a} -> {b} (semantics imports the verifier)")
        elif lb > la or (lb == la and pa != pb and {pa, pb} != {"kverify.semantics.ir", "kverify.launch"}):
            bad.append(f"{a} -> {b}")
    assert not bad, "imports against the layering:\n" + "\n".join(bad)


@pytest.mark.parametrize("pair", [("kverify.semantics.interpreter.machine", "kverify.semantics.interpreter.handlers"),
                                  ("kverify.semantics.values.types", "kverify.semantics.values.softfloat")])
def test_the_former_circles_run_one_way(pair):
    g = _graph()
    a, b = pair
    assert not nx.has_path(g, b, a) or not nx.has_path(g, a, b)
