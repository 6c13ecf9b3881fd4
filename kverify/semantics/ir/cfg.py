"""Control-flow graph of a function.

The flat instruction list (labels and instructions, as the PTX front end flattens a body)
becomes basic blocks and a CFG over them (successor lists in program order; ``to_networkx``
for the rare graph the plain-list walk does not cover), with ``EXIT`` for leaving the
function; branch (``bra``, PTX ISA 9.7.12), indirect branch (``brx.idx`` over a
``.branchtargets`` list, §9.7.12.4, §11.6.1: one edge per listed label) and ``ret``/``exit``
end a block. Also owns the
reachable part of a CFG in plain lists, with its depth-first postorder and immediate
dominators (Cooper, Harvey and Kennedy), which ``structure`` uses for natural loops.
"""
from __future__ import annotations

from .errors import KernelError
from .nodes import Label
from .optable import flow_of, leaves_function

EXIT = -1


class BasicBlock:
    __slots__ = ("id", "label", "instrs", "term", "line")

    def __init__(self, id, label, line):
        self.id, self.label, self.instrs, self.term, self.line = id, label, [], None, line


def build_cfg(flat: list, path: str):
    """Split into basic blocks. ``term`` is ('jump', L) | ('cond', Instr, L) | ('ret', Instr)
    | ('switch', Instr, (L0, L1, ...)) (``brx.idx`` over its ``.branchtargets`` list) | None
    (fall through)."""
    blocks: list[BasicBlock] = []
    cur = None

    def new(label, line):
        nonlocal cur
        cur = BasicBlock(len(blocks), label, line)
        blocks.append(cur)
        return cur

    new(None, 0)
    tables = {it[1]: it[2] for it in flat if isinstance(it, tuple) and it[0] == "branchtargets"}
    for it in flat:
        if isinstance(it, tuple) and it[0] == "branchtargets":
            continue
        if isinstance(it, tuple):  # label
            if cur.instrs or cur.label is not None or cur.term is not None:
                new(it[1], it[2])
            else:
                cur.label, cur.line = it[1], it[2]
            continue
        if cur.term is not None:
            new(None, it.loc.ptx_line)
        flow = flow_of(it)
        if flow == "branch":
            if not it.operands or not isinstance(it.operands[0], Label):
                raise KernelError(f"branch target {it.operands[0] if it.operands else '(none)'} is not a label",
                                  path, it.loc.ptx_line, 1)
            cur.term = ("cond", it, it.operands[0].name) if it.guard else ("jump", it.operands[0].name, it)
        elif leaves_function(it):
            cur.term = ("ret", it)
        elif flow == "branch.indirect":
            t = it.operands[1] if len(it.operands) > 1 else None
            if not isinstance(t, Label) or t.name not in tables:
                raise KernelError(f"{it.opcode}: {t} is not a .branchtargets list of this function",
                                  path, it.loc.ptx_line, 1)
            cur.term = ("switch", it, tables[t.name])
        else:
            cur.instrs.append(it)
            if not cur.line:
                cur.line = it.loc.ptx_line
    by_label = {b.label: b.id for b in blocks if b.label is not None}
    for b in blocks:
        if b.term is not None and b.term[0] in ("jump", "cond"):
            name, it = (b.term[1], b.term[2]) if b.term[0] == "jump" else (b.term[2], b.term[1])
            if name not in by_label:
                raise KernelError(f"branch to undefined label {name}", path, it.loc.ptx_line, 1)
    for b in blocks:
        # a conditional branch to the instruction that follows it (an empty conditional block, as
        # a deleted statement leaves it): the threads that take it and those that do not go on at
        # the same instruction (§9.7.12.2), so it is no branch, and no point where a warp diverges
        if b.term is not None and b.term[0] == "cond":
            n = b.id + 1
            while n < len(blocks) and blocks[n].id != by_label[b.term[2]] and not blocks[n].instrs \
                    and blocks[n].term is None:
                n += 1  # empty blocks of labels in between
            if n < len(blocks) and blocks[n].id == by_label[b.term[2]]:
                b.term = None
    g = _OrderedEdges()
    for b in blocks:
        nxt = b.id + 1 if b.id + 1 < len(blocks) else EXIT
        t = b.term
        if t is None:
            g.add_edge(b.id, nxt)
        elif t[0] == "jump":
            g.add_edge(b.id, by_label[t[1]])
        elif t[0] == "cond":
            g.add_edge(b.id, by_label[t[2]])
            g.add_edge(b.id, nxt)
        elif t[0] == "ret":
            g.add_edge(b.id, EXIT)
            if t[1].guard is not None:
                g.add_edge(b.id, nxt)
        elif t[0] == "switch":
            for name in t[2]:
                g.add_edge(b.id, by_label[name])
            if t[1].guard is not None:
                g.add_edge(b.id, nxt)
    return blocks, by_label, g.graph(len(blocks))


class _OrderedEdges:
    """Collects edges, then builds the graph with successors in program order (so depth-first
    search, and hence which edge of an irreducible cycle is reported, follows the text)."""

    def __init__(self):
        self.edges = set()

    def add_edge(self, u, v):
        self.edges.add((u, v))

    def graph(self, n):
        g = Digraph()
        adj = g._succ = {EXIT: {}, **{i: {} for i in range(n)}}
        for u, v in sorted(self.edges, key=lambda e: (e[0], e[1] if e[1] != EXIT else n)):
            adj[u][v] = {}
        return g


class Digraph:
    """A CFG as ordered successor dicts (``_succ``, laid out as a networkx ``DiGraph`` lays out
    its own: nodes in insertion order, each node's successors in edge order). Importing
    networkx costs a tenth of a second, more than structuring most kernels, so it is imported
    only where a graph needs it."""

    __slots__ = ("_succ",)

    def to_networkx(self):
        import networkx as nx

        g = nx.DiGraph()
        g.add_nodes_from(self._succ)
        g.add_edges_from((u, v) for u, vs in self._succ.items() for v in vs)
        return g


class _ReachableGraph:
    """The part of a CFG reachable from block 0, without EXIT: what
    ``g.subgraph(reach | {EXIT}).copy()`` minus EXIT gives, with the same node, successor,
    predecessor and edge orders, in plain lists (networkx is slow for small graphs)."""

    __slots__ = ("nodes", "succ", "pred")

    @staticmethod
    def of(g):
        """None where networkx's subgraph would list its nodes in another order (it
        iterates the kept-node set itself when that is under half the graph)."""
        adj = g._succ
        seen = {0}
        stack = [0]
        while stack:
            for v in adj[stack.pop()]:
                if v not in seen and v != EXIT:
                    seen.add(v)
                    stack.append(v)
        if 2 * (len(seen) + 1) < len(adj):
            return None
        self = _ReachableGraph()
        self.nodes = [n for n in adj if n in seen]
        self.succ = {n: [v for v in adj[n] if v != EXIT] for n in self.nodes}
        self.pred = {n: [] for n in self.nodes}
        for u in self.nodes:
            for v in self.succ[u]:
                self.pred[v].append(u)
        return self

    def __iter__(self):
        return iter(self.nodes)

    def predecessors(self, n):
        return iter(self.pred[n])

    def successors(self, n):
        return iter(self.succ[n])

    def edges(self):
        return [(u, v) for u in self.nodes for v in self.succ[u]]

    def postorder(self) -> list:
        """``nx.dfs_postorder_nodes(g, 0)``."""
        succ = self.succ
        visited = {0}
        out = []
        stack = [(0, iter(succ[0]))]
        while stack:
            parent, children = stack[-1]
            for child in children:
                if child not in visited:
                    visited.add(child)
                    stack.append((child, iter(succ[child])))
                    break
            else:
                stack.pop()
                out.append(parent)
        return out

    def idom(self, postorder) -> dict:
        """Immediate dominators (Cooper, Harvey and Kennedy), as
        ``nx.immediate_dominators(g, 0)``: every node but 0."""
        dfn = {u: i for i, u in enumerate(postorder)}
        idom = {0: 0}
        order = postorder[-2::-1]
        pred = self.pred

        def intersect(u, v):
            while u != v:
                while dfn[u] < dfn[v]:
                    u = idom[u]
                while dfn[u] > dfn[v]:
                    v = idom[v]
            return u

        changed = True
        while changed:
            changed = False
            for u in order:
                new = None
                for v in pred[u]:
                    if v in idom:
                        new = v if new is None else intersect(v, new)
                if idom.get(u) != new:
                    idom[u] = new
                    changed = True
        del idom[0]
        return idom
