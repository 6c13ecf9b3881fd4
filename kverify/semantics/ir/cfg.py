"""Control-flow graph and structuring.

The flat instruction list of a function becomes a CFG of basic blocks (networkx), then a
structured body: dominator tree and natural loops decide where each block's code goes
(the construction of Ramsey, "Beyond Relooper", ICFP 2022, with loop exits placed after
their loop): a forward edge to a join point is ``Break``, a back edge is ``Continue``,
anything else is inlined. Irreducible control flow is rejected. Then loops get their
induction variables and trip counts, and the ``try_wait`` retry loop becomes one blocking
wait (``Instr.blocking``).
"""
from __future__ import annotations

from dataclasses import replace

import networkx as nx

from .errors import KernelError
from .nodes import (Block, Break, Continue, If, Imm, InductionVar, Instr, Kernel, Label, Loop,
                    PairOp, Reg, Sym, VecOp)
from .optable import OPS, flow_of, is_polling_wait, leaves_function, param_access, semantics_of
from .symint import SymInt

EXIT = -1


class BasicBlock:
    __slots__ = ("id", "label", "instrs", "term", "line")

    def __init__(self, id, label, line):
        self.id, self.label, self.instrs, self.term, self.line = id, label, [], None, line


def build_cfg(flat: list, path: str):
    """Split into basic blocks. ``term`` is ('jump', L) | ('cond', Instr, L) | ('ret', Instr)
    | None (fall through)."""
    blocks: list[BasicBlock] = []
    cur = None

    def new(label, line):
        nonlocal cur
        cur = BasicBlock(len(blocks), label, line)
        blocks.append(cur)
        return cur

    new(None, 0)
    for it in flat:
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
            raise KernelError("indirect branches (brx.idx) are not supported", path, it.loc.ptx_line, 1)
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
    return blocks, by_label, g.graph(len(blocks))


class _OrderedEdges:
    """Collects edges, then builds the graph with successors in program order (so depth-first
    search, and hence which edge of an irreducible cycle is reported, follows the text)."""

    def __init__(self):
        self.edges = set()

    def add_edge(self, u, v):
        self.edges.add((u, v))

    def graph(self, n):
        g = nx.DiGraph()
        g.add_node(EXIT)
        g.add_nodes_from(range(n))
        g.add_edges_from(sorted(self.edges, key=lambda e: (e[0], e[1] if e[1] != EXIT else n)))
        return g


def structure(kernel: Kernel, flat: list, path: str) -> Kernel:
    blocks, by_label, g = build_cfg(flat, path)
    body = _Structurer(blocks, by_label, g, path).run()
    body = _simplify(body, None)
    body = _recognize(body, _Defs(flat))
    return replace(kernel, body=tuple(body))


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


class _Structurer:
    def __init__(self, blocks, by_label, g, path):
        self.blocks, self.by_label, self.path = blocks, by_label, path
        fast = _ReachableGraph.of(g)
        if fast is not None:
            self.g = g = fast
            order = g.postorder()
            self.rpo = {n: i for i, n in enumerate(reversed(order))}
            self.idom = g.idom(order)
        else:
            reach = nx.descendants(g, 0) | {0}
            self.g = g.subgraph(reach | {EXIT}).copy()
            self.g.remove_node(EXIT)
            g = self.g
            order = list(nx.dfs_postorder_nodes(g, 0))
            self.rpo = {n: i for i, n in enumerate(reversed(order))}
            self.idom = nx.immediate_dominators(g, 0)
        self.back = set()
        for u, v in g.edges():
            if self.rpo[v] <= self.rpo[u]:
                if not self._dominates(v, u):
                    b = blocks[u]
                    t = b.term
                    line = t[1].loc.ptx_line if t and t[0] == "cond" else b.line
                    raise KernelError(
                        f"irreducible control flow: the branch to {blocks[v].label or 'block'} "
                        f"enters a loop other than through its header", path, line, 1)
                self.back.add((u, v))
        self.headers = {v for _, v in self.back}
        self.loop_nodes = {}
        for h in self.headers:
            body = {h}
            stack = [u for u, v in self.back if v == h]
            while stack:
                n = stack.pop()
                if n not in body:
                    body.add(n)
                    stack.extend(p for p in g.predecessors(n))
            self.loop_nodes[h] = body
        fwd_in = {n: sum(1 for p in g.predecessors(n) if (p, n) not in self.back) for n in g}
        self.merge = {n for n in g if fwd_in[n] >= 2}
        # placement: loop exits move up to the header of the outermost loop they leave
        self.parent = {}
        for n in g:
            if n == 0:
                continue
            p = self.idom[n]
            outer = [h for h in self.headers if p in self.loop_nodes[h] and n not in self.loop_nodes[h]]
            if outer:
                h = min(outer, key=lambda h: self.rpo[h])
                self.parent[n] = h
                self.merge.add(n)
            else:
                self.parent[n] = p
        self.children = {}
        for n, p in self.parent.items():
            self.children.setdefault(p, []).append(n)

    def _dominates(self, a, b):
        while True:
            if a == b:
                return True
            if b == 0:
                return False
            b = self.idom[b]

    def label(self, n):
        return self.blocks[n].label or f"$B{n}"

    def run(self):
        return self.do_tree(0)

    def do_tree(self, x):
        ys = sorted((c for c in self.children.get(x, ()) if c in self.merge),
                    key=lambda c: -self.rpo[c])
        if x in self.headers:
            inside = [y for y in ys if y in self.loop_nodes[x]]
            outside = [y for y in ys if y not in self.loop_nodes[x]]
            first = self.blocks[x].instrs[0].loc if self.blocks[x].instrs else None
            loop = Loop(self.label(x), tuple(self.node_within(x, inside)),
                        loc=first or replace(_noloc(), ptx_line=self.blocks[x].line))
            return self.wrap(outside, [loop])
        return self.node_within(x, ys)

    def wrap(self, ys, inner):
        code = inner
        for y in reversed(ys):  # ys[-1] has the lowest RPO: innermost block
            pass
        for y in sorted(ys, key=lambda c: self.rpo[c]):
            code = [Block(self.label(y), tuple(code))] + self.do_tree(y)
        return code

    def node_within(self, x, ys):
        if ys:
            y, rest = ys[0], ys[1:]
            return [Block(self.label(y), tuple(self.node_within(x, rest)))] + self.do_tree(y)
        b = self.blocks[x]
        code = list(b.instrs)
        succ = sorted(self.g.successors(x))
        t = b.term
        nxt = x + 1 if x + 1 < len(self.blocks) else EXIT
        if t is None:
            if nxt != EXIT:
                code += self.do_branch(x, nxt)
        elif t[0] == "jump":
            code += self.do_branch(x, self.by_label[t[1]])
        elif t[0] == "cond":
            ins = t[1]
            then = self.do_branch(x, self.by_label[t[2]])
            other = self.do_branch(x, nxt) if nxt != EXIT else []
            code.append(If(ins.guard.reg, ins.guard.negated, tuple(then), tuple(other), ins.loc))
        elif t[0] == "ret":
            ins = t[1]
            if ins.guard is None:
                code.append(ins)
            else:
                other = self.do_branch(x, nxt) if nxt != EXIT else []
                code.append(If(ins.guard.reg, ins.guard.negated, (replace(ins, guard=None),), tuple(other), ins.loc))
        del succ
        return code

    def do_branch(self, x, y):
        loc = _term_loc(self.blocks[x])
        if (x, y) in self.back:
            return [Continue(self.label(y), loc)]
        if y in self.merge:
            return [Break(self.label(y), loc)]
        return self.do_tree(y)


def _noloc():
    from .nodes import Loc

    return Loc()


def _term_loc(b):
    t = b.term
    if t and t[0] in ("cond", "ret"):
        return t[1].loc
    if b.instrs:
        return b.instrs[-1].loc
    return _noloc()


# --------------------------------------------------------------------------- simplification
def _jumps(stmts) -> bool:
    """Does control never fall off the end of ``stmts``?"""
    if not stmts:
        return False
    s = stmts[-1]
    if isinstance(s, (Break, Continue)):
        return True
    if isinstance(s, Instr):
        return leaves_function(s) and s.guard is None
    if isinstance(s, If):
        return _jumps(s.then) and _jumps(s.orelse)
    return False


def _breaks_to(stmts, label) -> bool:
    for s in stmts:
        if isinstance(s, Break) and s.label == label:
            return True
        if isinstance(s, If) and (_breaks_to(s.then, label) or _breaks_to(s.orelse, label)):
            return True
        if isinstance(s, (Block, Loop)) and _breaks_to(s.body, label):
            return True
    return False


def _simplify(stmts, fall):
    """``fall``: the Block label that falling off the end of ``stmts`` reaches (None when
    it reaches something else). Removes redundant trailing breaks, unused blocks, and
    hoists the else-branch of an if whose then-branch always jumps."""
    out = []
    n = len(stmts)
    for i, s in enumerate(stmts):
        last = i == n - 1
        f = fall if last else None
        if isinstance(s, Block):
            body = _simplify(list(s.body), s.label)
            if _breaks_to(body, s.label):
                out.append(replace(s, body=tuple(body)))
            else:
                out.extend(body)
        elif isinstance(s, Loop):
            out.append(replace(s, body=tuple(_simplify(list(s.body), f))))
        elif isinstance(s, If):
            then = _simplify(list(s.then), f)
            orelse = _simplify(list(s.orelse), f)
            cond, neg = s.cond, s.negated
            if not then and orelse:
                then, orelse, neg = orelse, [], not neg
            if then and orelse and _jumps(then):
                out.append(replace(s, then=tuple(then), orelse=(), negated=neg))
                rest = _simplify(orelse, f)
                out.extend(rest)
            elif then or orelse:
                out.append(replace(s, then=tuple(then), orelse=tuple(orelse), negated=neg))
        elif isinstance(s, Break) and last and s.label == fall:
            continue
        else:
            out.append(s)
    # the hoisting above can expose a trailing redundant break
    if out and isinstance(out[-1], Break) and out[-1].label == fall:
        out.pop()
    return out


# --------------------------------------------------------------------------- recognition
class _Defs:
    """Register definitions of a function, for symbolic values of single-def registers."""

    def __init__(self, flat):
        self._flat = flat
        self._defs = None  # built on first use: only functions with loops need it
        self._defs_of: dict[int, tuple] = {}  # id(instr) -> (instr, registers it defines)
        self._cache: dict[str, SymInt] = {}

    @property
    def defs(self) -> dict:
        if self._defs is None:
            self._defs = {}
            for it in self._flat:
                if isinstance(it, Instr):
                    for r in self.defs_of(it):
                        self._defs.setdefault(r, []).append(it)
        return self._defs

    def defs_of(self, ins: Instr) -> list:
        """``_defs_of(ins)``, remembered per instruction."""
        e = self._defs_of.get(id(ins))
        if e is not None and e[0] is ins:
            return e[1]
        r = _defs_of(ins)
        self._defs_of[id(ins)] = (ins, r)
        return r

    def value(self, op, depth=0) -> SymInt | None:
        if isinstance(op, Imm):
            return SymInt.const(op.value)
        if isinstance(op, Sym):
            return SymInt.sym(op.name) if not op.offset else SymInt.sym(op.name) + op.offset
        if not isinstance(op, Reg):
            return None
        n = op.name
        if op.is_special:
            return SymInt.sym(n)
        if n in self._cache:
            return self._cache[n]
        d = self.defs.get(n, [])
        if len(d) != 1 or depth > 40:
            return None
        v = self._eval(d[0], depth + 1)
        self._cache[n] = v
        return v

    def _eval(self, ins: Instr, depth) -> SymInt | None:
        if ins.guard is not None or not ins.supported:
            return None
        ops = ins.operands
        if param_access(ins) == "load" and ops[1].base is not None:
            b = ops[1].base
            return SymInt.sym(b.name if isinstance(b, Sym) else str(b))
        vals = [self.value(o, depth) for o in ops[1:]]
        if any(v is None for v in vals):
            return None
        sem, m = semantics_of(ins), set(ins.mods)
        if sem in ("mov", "cvt", "cvta") and len(vals) == 1:
            return vals[0]
        if sem == "add" and not (m & {"f32", "f64", "f16", "bf16", "cc"}):
            return vals[0] + vals[1]
        if sem == "sub" and not (m & {"f32", "f64", "f16", "bf16", "cc"}):
            return vals[0] - vals[1]
        if sem in ("mul", "mul24") and m & {"lo", "wide"}:
            return vals[0] * vals[1]
        if sem in ("mad", "mad24") and m & {"lo", "wide"}:
            return vals[0] * vals[1] + vals[2]
        if sem == "shl" and vals[1].is_const:
            return vals[0] * (1 << vals[1].value)
        if sem == "neg" and not (m & {"f32", "f64"}):
            return -vals[0]
        return None


def _defs_of(ins: Instr):
    r = OPS.get(ins.op)
    ops = ins.operands
    if r is None or not ops or not ins.supported:
        return [o.name for o in ops[:1] if isinstance(o, Reg)]
    slots = _DEF_SLOTS.get(ins.op)
    if slots is None or slots[0] is not r:
        slots = _DEF_SLOTS[ins.op] = (r, tuple((k, s.access == "update") for k, s in enumerate(r.operands)
                                               if s.access in ("def", "update")))
    out = []
    n = len(ops)
    for k, upd in slots[1]:
        if k >= n:
            break
        op = ops[k]
        t = type(op)
        if t is Reg:
            out.append(op.name)
        elif t is VecOp:
            out.extend([x.name for x in op.elems if isinstance(x, Reg)])
        elif upd:
            continue
        elif t is PairOp:
            out.extend([x.name for x in (op.first, op.second) if isinstance(x, Reg)])
        elif isinstance(op, Reg):
            out.append(op.name)
    return out


_DEF_SLOTS: dict = {}  # op -> (row, ((slot index, is update), ...))


def _instrs(stmts):
    for s in stmts:
        if isinstance(s, Instr):
            yield s
        elif isinstance(s, If):
            yield from _instrs(s.then)
            yield from _instrs(s.orelse)
        elif isinstance(s, (Loop, Block)):
            yield from _instrs(s.body)


#: Value semantics the retry loop of a polling wait may compute its exit condition with
#: (``_eval_pure`` folds them on constants).
_PURE = ("mov", "selp", "setp", "not", "and", "or", "xor", "cvt")


def _recognize(stmts, defs: _Defs):
    out = []
    for s in stmts:
        if isinstance(s, Loop):
            body = _recognize(list(s.body), defs)
            w = _blocking_wait(s.label, body)
            if w is not None:
                out.extend(w)
                continue
            s = replace(s, body=tuple(body))
            out.append(_induction(s, defs))
        elif isinstance(s, Block):
            body = tuple(_recognize(list(s.body), defs))
            out.append(s if _same_items(body, s.body)
                       else Block(s.label, body, s.loc))
        elif isinstance(s, If):
            then = tuple(_recognize(list(s.then), defs))
            orelse = tuple(_recognize(list(s.orelse), defs))
            out.append(s if _same_items(then, s.then) and _same_items(orelse, s.orelse)
                       else If(s.cond, s.negated, then, orelse, s.loc))
        else:
            out.append(s)
    return out


def _same_items(a: tuple, b: tuple) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b))


def _blocking_wait(label, body):
    """``L: try_wait p, ...; [pure ops on p]; @!q bra L`` -> one blocking wait."""
    if len(body) < 2 or not isinstance(body[-1], If):
        return None
    tail = body[-1]
    if tail.orelse or len(tail.then) != 1 or not isinstance(tail.then[0], Continue) \
            or tail.then[0].label != label:
        return None
    waits = [i for i, x in enumerate(body[:-1]) if isinstance(x, Instr) and is_polling_wait(x)]
    if len(waits) != 1 or waits[0] != 0 and not all(
            isinstance(x, Instr) and semantics_of(x) in _PURE for x in body[:waits[0]]):
        return None
    wi = waits[0]
    wait = body[wi]
    pure = body[wi + 1:-1]
    if wait.guard is not None or not all(isinstance(x, Instr) and semantics_of(x) in _PURE and x.guard is None
                                         for x in pure):
        return None
    if not wait.supported or not wait.operands or not all(x.supported and x.operands for x in pure):
        return None
    p = wait.operands[0]
    if not isinstance(p, Reg):
        return None
    # the loop must continue exactly when the wait returned False
    for val, want in ((0, True), (1, False)):
        env = {p.name: val}
        for x in pure:
            if not _eval_pure(x, env):
                return None
        c = env.get(tail.cond.name)
        if c is None:
            return None
        if bool(c) != (not tail.negated) == want and (bool(c) ^ tail.negated) != want:
            return None
        if (bool(c) ^ tail.negated) != want:
            return None
    return list(body[:wi]) + [replace(wait, blocking=True)] + list(pure)


def _eval_pure(x: Instr, env) -> bool:
    def v(o):
        if isinstance(o, Imm):
            return o.value
        if isinstance(o, Reg):
            return env.get(o.name)
        return None

    d = x.operands[0]
    args = [v(o) for o in x.operands[1:]]
    if not isinstance(d, Reg):
        return False
    sem = semantics_of(x)
    if sem == "selp" and None not in args:
        env[d.name] = args[0] if args[2] else args[1]
    elif sem == "mov" and None not in args:
        env[d.name] = args[0]
    elif sem == "not" and None not in args:
        env[d.name] = int(not args[0]) if "pred" in x.mods else ~args[0]
    elif sem == "setp" and None not in args[:2]:
        a, b = args[0], args[1]
        cmp = next(m for m in x.mods if m in ("eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs"))
        r = {"eq": a == b, "ne": a != b, "lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b,
             "lo": a < b, "ls": a <= b, "hi": a > b, "hs": a >= b}[cmp]
        env[d.name] = int(r)
    elif sem in ("and", "or", "xor") and None not in args:
        env[d.name] = {"and": args[0] & args[1], "or": args[0] | args[1], "xor": args[0] ^ args[1]}[sem]
    else:
        return False
    return True


def _induction(loop: Loop, defs: _Defs) -> Loop:
    """Registers updated exactly once per iteration by ``add r, r, c`` with ``c`` loop
    invariant, at the top level of the loop body."""
    inner = list(_instrs(loop.body))
    defined: dict[str, list] = {}
    for ins in inner:
        for r in defs.defs_of(ins):
            defined.setdefault(r, []).append(ins)
    every = None
    inner_ids = None
    ivs = []
    for name, ds in defined.items():
        if len(ds) != 1:
            continue
        if every is None:
            every = _EveryIteration(loop)
        if not every(ds[0]):
            continue
        ins = ds[0]
        sem = semantics_of(ins)
        if sem not in ("add", "sub") or ins.guard is not None or not ins.supported or len(ins.operands) != 3 or any(
                t in ins.mods for t in ("f32", "f64", "f16", "bf16", "cc")):
            continue
        a, b = ins.operands[1], ins.operands[2]
        if not (isinstance(a, Reg) and a.name == name):
            if sem == "add" and isinstance(b, Reg) and b.name == name:
                a, b = b, a
            else:
                continue
        if isinstance(b, Reg) and b.name in defined:
            continue
        step = defs.value(b)
        if step is None:
            step = SymInt.sym(b.name) if isinstance(b, Reg) else None
        if step is None:
            continue
        if sem == "sub":
            step = -step
        if inner_ids is None:
            inner_ids = _Members(inner)
        outside = [d for d in defs.defs.get(name, []) if d not in inner_ids]
        init = None
        if len(outside) == 1:
            init = defs._eval(outside[0], 1)
        if init is None:
            init = SymInt.sym(name)
        ivs.append(InductionVar(Reg(name), init, step))
    ivs.sort(key=lambda iv: iv.reg.name)
    return replace(loop, ivs=tuple(ivs), trip_count=_trip_count(loop, ivs, defs, inner))


class _Members:
    """``x in items`` for a list of instructions (identity, then equality), without
    comparing ``x`` with every item."""

    def __init__(self, items):
        self.ids = {id(i) for i in items}
        self.by_key: dict = {}
        for i in items:
            self.by_key.setdefault((i.op, i.loc.ptx_line), []).append(i)

    def __contains__(self, x):
        if id(x) in self.ids:
            return True
        return any(i == x for i in self.by_key.get((x.op, x.loc.ptx_line), ()))


class _EveryIteration:
    """``_on_every_iteration(loop, ins)`` for the instructions of one loop, from one walk
    over its body: ``ins`` runs on every iteration when it is not inside an inner loop
    and, for every ``continue`` of the loop, it is a statement of a list enclosing that
    ``continue``, placed before it."""

    def __init__(self, loop: Loop):
        self.pos: dict[int, tuple] = {}  # id(instr) -> (id(list), index, in inner loop)
        self.conts: list[dict] = []  # per continue: {id(enclosing list): index}
        self.label = loop.label
        self._walk(loop.body, {}, False)

    def _walk(self, stmts, anc, nested):
        lid = id(stmts)
        for k, s in enumerate(stmts):
            if isinstance(s, Instr):
                self.pos.setdefault(id(s), (lid, k, nested))
            elif isinstance(s, Continue):
                if s.label == self.label:
                    d = dict(anc)
                    d[lid] = k
                    self.conts.append(d)
            elif isinstance(s, If):
                a = dict(anc)
                a[lid] = k
                self._walk(s.then, a, nested)
                self._walk(s.orelse, a, nested)
            elif isinstance(s, Block):
                a = dict(anc)
                a[lid] = k
                self._walk(s.body, a, nested)
            elif isinstance(s, Loop):
                a = dict(anc)
                a[lid] = k
                self._walk(s.body, a, True)

    def __call__(self, ins: Instr) -> bool:
        p = self.pos.get(id(ins))
        if p is None:  # not in the loop
            return False
        lid, k, nested = p
        if nested:
            return False
        for c in self.conts:
            j = c.get(lid)
            if j is None or j <= k:
                return False
        return True


def _on_every_iteration(loop: Loop, ins: Instr) -> bool:
    """Does ``ins`` execute (outside any inner loop) before every ``continue`` of ``loop``?
    The plain definition, one walk per instruction; ``_EveryIteration`` answers the same
    for all instructions of a loop at once (tests compare the two)."""
    ok = True

    def visit(stmts, seen, depth_loops):
        nonlocal ok
        for s in stmts:
            if s is ins:
                if depth_loops:
                    ok = False
                seen = True
            elif isinstance(s, Continue) and s.label == loop.label and not seen:
                ok = False
            elif isinstance(s, If):
                visit(s.then, seen, depth_loops)
                visit(s.orelse, seen, depth_loops)
            elif isinstance(s, Block):
                visit(s.body, seen, depth_loops)
            elif isinstance(s, Loop):
                visit(s.body, seen, depth_loops + 1)
        return seen

    visit(loop.body, False, 0)
    return ok and ins in set(_instrs(loop.body))


def _trip_count(loop: Loop, ivs, defs: _Defs, inner):
    """A do-while loop whose last statement is ``if (setp.cmp iv, bound) continue``."""
    if not loop.body or not isinstance(loop.body[-1], If):
        return None
    tail = loop.body[-1]
    if tail.orelse or tail.then != (Continue(loop.label, tail.then[0].loc),) if tail.then else True:
        return None
    setps = [i for i in inner if semantics_of(i) == "setp" and i.supported and len(i.operands) >= 3
             and i.operands[0] == tail.cond]
    if len(setps) != 1 or tail.negated:
        return None
    st = setps[0]
    cmp = next((m for m in st.mods if m in ("eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs")), None)
    a, b = st.operands[1], st.operands[2]
    iv = next((v for v in ivs if v.reg == a), None)
    if iv is None or not iv.step.is_const or iv.step.value == 0:
        return None
    # the IV update must come before the compare in the body (value init + (k+1)*step)
    order = list(loop.body)
    upd = next((i for i, s in enumerate(order) if isinstance(s, Instr) and iv.reg.name in defs.defs_of(s)), None)
    cmp_i = next((i for i, s in enumerate(order) if s is st), None)
    if upd is None or cmp_i is None or upd > cmp_i:
        return None
    bound = defs.value(b)
    if bound is None or (isinstance(b, Reg) and b.name in {r for i in inner for r in defs.defs_of(i)}):
        return None
    s = iv.step.value
    span = bound - iv.init
    if cmp == "ne":
        return span.floordiv(s)
    if cmp in ("lt", "lo") and s > 0:
        return (span + (s - 1)).floordiv(s).max(1)
    if cmp in ("le", "ls") and s > 0:
        return (span + s).floordiv(s).max(1)
    if cmp in ("gt", "hi") and s < 0:
        return (-span + (-s - 1)).floordiv(-s).max(1)
    if cmp in ("ge", "hs") and s < 0:
        return (-span - s).floordiv(-s).max(1)
    return None
