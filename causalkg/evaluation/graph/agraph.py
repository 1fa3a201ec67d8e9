"""The typed graphs structure-first alignment works on, and how they are prepared.

Before alignment each graph is preprocessed, in this order (``preprocess``):

1. order the endpoints of correlational edges canonically (by label, then id);
2. merge a higher-level node that has exactly one lower-level child (one hierarchy edge) with that
   child into one node labelled "higher (lower)" (chains merge into one node);
3. propagate every non-hierarchy edge of a lower-level node up to its higher-level node, until
   nothing changes (an edge that exists already is kept as it is; no self-loops are made, but
   ``mode="reference"`` keeps them as the authors' code does: an edge between two children of one
   parent becomes a self-loop on the parent, and counts as an edge of the graph);
4. drop non-hierarchy edges between two nodes joined by a hierarchy edge (either direction);
5. order correlational endpoints canonically again (merging changed labels);
6. drop a correlational edge when a directional edge joins the same two nodes;
7. keep one non-hierarchy edge per ordered node pair: directional > correlational > moderation,
   and validated > null > hypothesized within a type.

Wherever an edge would appear twice with the same (source, target, type), the better validation
is kept. An edge without a validation counts as hypothesized (as the reference's parser did).

Views (``view``): ``typed``; ``higher`` (lower-level nodes, i.e. hierarchy targets or nodes with
level "lower", and all hierarchy edges removed); ``agnostic`` (one relation type, one edge per
ordered pair); ``higher-agnostic``. Validation variants: ``ignore``; ``match`` (an edge matches
only when its validation agrees too); ``validated-only`` (non-validated non-hierarchy edges are
dropped after preprocessing).

Also the orders in which the search visits gold nodes (``node_order``). Used by
``evaluation.graph.alignsearch`` and ``evaluation.graph.align`` (``causalkg eval align``).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from causalkg.core.errors import ConfigError
from causalkg.evaluation.graph.graphs import Graph

TYPES = ("hierarchy", "directional", "correlational", "moderation")
VIEWS = ("typed", "higher", "agnostic", "higher-agnostic")
VALIDATION_MODES = ("ignore", "match", "validated-only")
ORDERS = ("degree_desc", "degree_asc", "label", "random_11", "random_29")
_VAL_RANK = {"validated": 0, "null": 1, "hypothesized": 2}
_TYPE_RANK = {"directional": 0, "correlational": 1, "moderation": 2}


# -- the graph the preprocessing works on ----------------------------------------------------


@dataclass
class AGraph:
    """A graph with at most one edge per (source, target, type): ``edges`` maps that key to the
    edge's validation (None for hierarchy edges). Node order and edge order are kept."""

    nodes: dict[str, tuple[str, str | None]] = field(default_factory=dict)  # id -> (label, level)
    edges: dict[tuple[str, str, str], str | None] = field(default_factory=dict)
    keep_first: bool = False  # the reference's rule: a repeated edge keeps its first validation

    def label(self, n: str) -> str:
        return self.nodes[n][0]

    def add(self, u: str, v: str, t: str, validation: str | None) -> None:
        """Add an edge; a repeated (u, v, t) keeps the better validation (the first one with
        ``keep_first``, as the reference code does)."""
        if t == "hierarchy":
            validation = None
        elif validation is None:
            validation = "hypothesized"
        key = (u, v, t)
        old = self.edges.get(key, "missing")
        if old == "missing" or (not self.keep_first and validation is not None and old is not None
                                and _VAL_RANK[validation] < _VAL_RANK[old]):
            self.edges[key] = validation

    def copy_nodes(self) -> "AGraph":
        return AGraph(dict(self.nodes), {}, self.keep_first)

    @classmethod
    def from_graph(cls, g: Graph, *, keep_first: bool = False) -> "AGraph":
        a = cls({n.id: (n.label, n.level) for n in g.nodes.values()}, {}, keep_first)
        for e in g.edges:
            a.add(e.source, e.target, e.type, e.validation)
        return a

    def n_edges(self) -> int:
        return len(self.edges)


def canonicalise_correlational(g: AGraph) -> AGraph:
    """Step 1/5: a correlational edge runs from the endpoint with the smaller (label, id)."""
    h = g.copy_nodes()
    for (u, v, t), val in g.edges.items():
        if t == "correlational" and (g.label(u), u) > (g.label(v), v):
            u, v = v, u
        h.add(u, v, t, val)
    return h


def merge_single_children(g: AGraph) -> AGraph:
    """Step 2: merge each higher-level node having exactly one hierarchy child with that child."""
    children: dict[str, list[str]] = {}
    for (u, v, t) in g.edges:
        if t == "hierarchy":
            children.setdefault(u, []).append(v)
    single = {hv: lvs[0] for hv, lvs in children.items() if len(lvs) == 1 and lvs[0] != hv}
    if not single:
        return _dedup(g)
    parent = {n: n for n in g.nodes}

    def find(x: str) -> str:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for hv, lv in single.items():
        a, b = find(hv), find(lv)
        if a != b:
            parent[b] = a  # the higher node's group represents the merged node
    # Label each merged group "top (child (grandchild))" along the single-child chain.
    def chain_label(n: str, seen: set[str]) -> str:
        lv = single.get(n)
        if lv is None or lv in seen or find(lv) != find(n):
            return g.label(n)
        seen.add(lv)
        return f"{g.label(n)} ({chain_label(lv, seen)})"

    h = AGraph({}, {}, g.keep_first)
    for n in g.nodes:
        r = find(n)
        if r not in h.nodes:
            h.nodes[r] = (chain_label(r, {r}), g.nodes[r][1]) if r in single else g.nodes[r]
    merged = {(hv, lv) for hv, lv in single.items()}
    for (u, v, t), val in g.edges.items():
        if t == "hierarchy" and (u, v) in merged:
            continue
        mu, mv = find(u), find(v)
        if mu == mv:
            continue
        h.add(mu, mv, t, val)
    return h


def _dedup(g: AGraph) -> AGraph:
    h = g.copy_nodes()
    for (u, v, t), val in g.edges.items():
        h.add(u, v, t, val)
    return h


def propagate_to_higher(g: AGraph, *, self_loops: bool = False) -> AGraph:
    """Step 3: copy every non-hierarchy edge of a lower-level node to its higher-level node(s),
    repeatedly, until no edge is added. Existing edges keep their validation; no self-loops,
    unless ``self_loops`` (the reference's step: an edge between two children of one parent is
    copied up to that parent at both ends, a self-loop that its counts include)."""
    h = _dedup(g)
    while True:
        added = 0
        hier = [(u, v) for (u, v, t) in h.edges if t == "hierarchy"]
        for upper, lower in hier:
            for (u, v, t), val in list(h.edges.items()):
                if t == "hierarchy":
                    continue
                if u == lower:
                    key = (upper, v, t)
                elif v == lower:
                    key = (u, upper, t)
                else:
                    continue
                if (key[0] == key[1] and not self_loops) or key in h.edges:
                    continue
                h.edges[key] = val
                added += 1
        if not added:
            return h


def drop_between_hierarchy_linked(g: AGraph) -> AGraph:
    """Step 4: two nodes joined by a hierarchy edge keep only hierarchy edges between them."""
    linked = {frozenset((u, v)) for (u, v, t) in g.edges if t == "hierarchy" and u != v}
    h = g.copy_nodes()
    for (u, v, t), val in g.edges.items():
        if t != "hierarchy" and frozenset((u, v)) in linked:
            continue
        h.add(u, v, t, val)
    return h


def drop_correlational_beside_directional(g: AGraph) -> AGraph:
    """Step 6: a correlational edge goes when a directional edge joins the same nodes."""
    directional = {(u, v) for (u, v, t) in g.edges if t == "directional"}
    h = g.copy_nodes()
    for (u, v, t), val in g.edges.items():
        if t == "correlational" and ((u, v) in directional or (v, u) in directional):
            continue
        h.add(u, v, t, val)
    return h


def keep_one_per_pair(g: AGraph) -> AGraph:
    """Step 7: one non-hierarchy edge per ordered pair, by type then validation priority."""
    h = g.copy_nodes()
    best: dict[tuple[str, str], tuple[tuple[int, int], str, str | None]] = {}
    for (u, v, t), val in g.edges.items():
        if t == "hierarchy":
            h.add(u, v, t, val)
            continue
        rank = (_TYPE_RANK.get(t, 9), _VAL_RANK.get(val or "hypothesized", 9))
        cur = best.get((u, v))
        if cur is None or rank < cur[0]:
            best[(u, v)] = (rank, t, val)
    for (u, v), (_, t, val) in best.items():
        h.add(u, v, t, val)
    return h


PREPROCESS_STEPS = (
    ("canonicalise correlational", canonicalise_correlational),
    ("merge single children", merge_single_children),
    ("propagate to higher level", propagate_to_higher),
    ("drop edges between hierarchy-linked nodes", drop_between_hierarchy_linked),
    ("canonicalise correlational again", canonicalise_correlational),
    ("drop correlational beside directional", drop_correlational_beside_directional),
    ("keep one edge per pair", keep_one_per_pair),
)


MODES = ("ours", "reference")


def preprocess(g: Graph | AGraph, mode: str = "ours") -> AGraph:
    """The seven preprocessing steps, in order (module docstring). ``mode="reference"`` runs
    them as the EmpiriGraph-Psy authors' code does: step 3 keeps the self-loops it makes, and a
    repeated edge keeps its first validation (which makes step 7's validation priority moot)."""
    if mode not in MODES:
        raise ConfigError(f"unknown alignment mode {mode!r}", hint="use ours or reference")
    a = AGraph.from_graph(g, keep_first=mode == "reference") if isinstance(g, Graph) else g
    for _, step in PREPROCESS_STEPS:
        a = step(a, self_loops=True) if (mode == "reference" and step is propagate_to_higher) else step(a)
    return a


def lower_nodes(g: AGraph) -> set[str]:
    return {v for (u, v, t) in g.edges if t == "hierarchy"} | {n for n, (_, lvl) in g.nodes.items() if lvl == "lower"}


def view(g: AGraph, name: str) -> AGraph:
    """One of the four views of a preprocessed graph."""
    if name not in VIEWS:
        raise ConfigError(f"unknown alignment view {name!r}", hint=f"choose from {', '.join(VIEWS)}")
    if name in ("higher", "higher-agnostic"):
        low = lower_nodes(g)
        h = AGraph({n: d for n, d in g.nodes.items() if n not in low}, {}, g.keep_first)
        for (u, v, t), val in g.edges.items():
            if t != "hierarchy" and u not in low and v not in low:
                h.add(u, v, t, val)
        g = h
    if name in ("agnostic", "higher-agnostic"):
        h = g.copy_nodes()
        for (u, v, t), val in g.edges.items():
            if (u, v, "relation") not in h.edges:
                h.edges[(u, v, "relation")] = None
        g = h
    return g


def validated_only(g: AGraph) -> AGraph:
    """Keep hierarchy edges and validated edges only."""
    h = g.copy_nodes()
    for (u, v, t), val in g.edges.items():
        if t == "hierarchy" or val == "validated":
            h.edges[(u, v, t)] = val
    return h


def node_order(g: AGraph, strategy: str) -> list[str]:
    """Gold nodes in the order the search assigns them (stable sorts over node order)."""
    nodes = list(g.nodes)
    if strategy in ("degree_desc", "degree_asc"):
        deg = {n: 0 for n in nodes}
        for (u, v, _) in g.edges:
            deg[u] += 1
            deg[v] += 1
        return sorted(nodes, key=lambda n: deg[n], reverse=strategy == "degree_desc")
    if strategy == "label":
        return sorted(nodes, key=lambda n: g.label(n))
    if strategy.startswith("random_"):
        try:
            seed = int(strategy.split("_", 1)[1])
        except ValueError:
            raise ConfigError(f"bad order {strategy!r}", hint="random_SEED, e.g. random_11") from None
        out = nodes[:]
        random.Random(seed).shuffle(out)
        return out
    raise ConfigError(f"unknown node order {strategy!r}", hint=f"choose from {', '.join(ORDERS)} or random_SEED")
