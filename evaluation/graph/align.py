"""Structure-first graph alignment (the EmpiriGraph-Psy evaluator), made fast.

Nodes are matched by the edges they take part in, not by their names: find the injective partial
map phi from gold nodes to predicted nodes that maximises the number of gold edges (u, v, t) for
which the predicted graph has (phi(u), phi(v), t) (correlational edges are undirected for this
lookup). Then P = matched / |predicted edges|, R = matched / |gold edges|, F1; both graphs empty
scores 1, one empty 0.

Before alignment each graph is preprocessed, in this order (``preprocess``):

1. order the endpoints of correlational edges canonically (by label, then id);
2. merge a higher-level node that has exactly one lower-level child (one hierarchy edge) with that
   child into one node labelled "higher (lower)" (chains merge into one node);
3. propagate every non-hierarchy edge of a lower-level node up to its higher-level node, until
   nothing changes (an edge that exists already is kept as it is; no self-loops are made);
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

The search: a greedy warm start, then depth-first branch and bound over the gold nodes in a fixed
order, trying every useful free predicted node (best immediate gain first) and "unmapped",
pruning when current + upper bound <= best. Gold and predicted nodes are indexed; predicted
adjacency is kept as boolean rows per edge kind, and for every undecided gold node a vector of
the gains it would get at each predicted node is updated incrementally as nodes are assigned.
The bound is the smaller of (a) the type-wise min(remaining gold edges, remaining predicted edges
with a free endpoint) and (b) the sum over undecided gold nodes of their best gain at a free
predicted node plus their edges to other undecided nodes. Orders: degree-descending,
degree-ascending, label, seeded random (11, 29); each has a time limit; the incumbent carries
over; once one order finishes, the optimum is proven (``exact``) and the rest are skipped unless
``all_orders``. A search stopped by its time limit reports a lower bound (``exact`` false).

Part of the evaluation stage; ``causalkg eval align`` wraps ``align``.
"""

from __future__ import annotations

import os
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from causalkg.config import Config
from causalkg.errors import ConfigError
from causalkg.jsonl import write_json, write_jsonl
from causalkg.layout import Layout
from causalkg.models import stage_device
from causalkg.manifest import build_manifest, write_manifest
from causalkg.progress import progress
from causalkg.evaluation.graph.graphs import Graph, read_graphs

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

    def label(self, n: str) -> str:
        return self.nodes[n][0]

    def add(self, u: str, v: str, t: str, validation: str | None) -> None:
        """Add an edge; a repeated (u, v, t) keeps the better validation."""
        if t == "hierarchy":
            validation = None
        elif validation is None:
            validation = "hypothesized"
        key = (u, v, t)
        old = self.edges.get(key, "missing")
        if old == "missing" or (validation is not None and old is not None and _VAL_RANK[validation] < _VAL_RANK[old]):
            self.edges[key] = validation

    def copy_nodes(self) -> "AGraph":
        return AGraph(dict(self.nodes), {})

    @classmethod
    def from_graph(cls, g: Graph) -> "AGraph":
        a = cls({n.id: (n.label, n.level) for n in g.nodes.values()}, {})
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

    h = AGraph({}, {})
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


def propagate_to_higher(g: AGraph) -> AGraph:
    """Step 3: copy every non-hierarchy edge of a lower-level node to its higher-level node(s),
    repeatedly, until no edge is added. Existing edges keep their validation; no self-loops."""
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
                if key[0] == key[1] or key in h.edges:
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


def preprocess(g: Graph | AGraph) -> AGraph:
    """The seven preprocessing steps, in order (module docstring)."""
    a = AGraph.from_graph(g) if isinstance(g, Graph) else g
    for _, step in PREPROCESS_STEPS:
        a = step(a)
    return a


def lower_nodes(g: AGraph) -> set[str]:
    return {v for (u, v, t) in g.edges if t == "hierarchy"} | {n for n, (_, lvl) in g.nodes.items() if lvl == "lower"}


def view(g: AGraph, name: str) -> AGraph:
    """One of the four views of a preprocessed graph."""
    if name not in VIEWS:
        raise ConfigError(f"unknown alignment view {name!r}", hint=f"choose from {', '.join(VIEWS)}")
    if name in ("higher", "higher-agnostic"):
        low = lower_nodes(g)
        h = AGraph({n: d for n, d in g.nodes.items() if n not in low}, {})
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


# -- the search -----------------------------------------------------------------------------


def _kind(t: str, val: str | None, match_validation: bool) -> tuple[str, str | None]:
    return (t, val if match_validation and t not in ("hierarchy", "relation") else None)


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


class _Timeout(Exception):
    pass


@dataclass
class Alignment:
    matched: int
    phi: dict[str, str]
    exact: bool
    gold_edges: int
    pred_edges: int
    order: str | None = None
    orders_run: list[str] = field(default_factory=list)
    nodes_explored: int = 0
    seconds: float = 0.0

    @property
    def precision(self) -> float:
        return _p(self.matched, self.gold_edges, self.pred_edges)

    @property
    def recall(self) -> float:
        return _p(self.matched, self.pred_edges, self.gold_edges)

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r > 0 else 0.0


def _p(matched: int, other: int, own: int) -> float:
    # matched / own, with both empty = 1 and one empty = 0.
    if own == 0:
        return 1.0 if other == 0 else 0.0
    return matched / own


class _Problem:
    """Indexed gold and predicted graphs for one alignment."""

    def __init__(self, gold: AGraph, pred: AGraph, match_validation: bool):
        self.gold, self.pred = gold, pred
        kinds: dict[tuple[str, str | None], int] = {}
        self.gold_edges: list[tuple[str, str, int]] = []
        for (u, v, t), val in gold.edges.items():
            k = kinds.setdefault(_kind(t, val, match_validation), len(kinds))
            self.gold_edges.append((u, v, k))
        pred_edges: list[tuple[str, str, int]] = []
        for (u, v, t), val in pred.edges.items():
            k = kinds.get(_kind(t, val, match_validation))
            if k is not None:  # a kind gold never has cannot match
                pred_edges.append((u, v, k))
        self.kinds = kinds
        self.undirected = np.array([kd[0] == "correlational" for kd in kinds], dtype=bool)
        # Predicted nodes that touch no usable edge can never add a match.
        useful = list(dict.fromkeys([u for u, _, _ in pred_edges] + [v for _, v, _ in pred_edges]))
        self.pred_nodes = useful
        self.pidx = {n: i for i, n in enumerate(useful)}
        m, K = len(useful), max(1, len(kinds))
        self.m = m
        # out_[k][p, q]: predicted edge p -> q of kind k (both ways for correlational kinds).
        self.out_ = np.zeros((K, m, m), dtype=np.int32)
        for u, v, k in pred_edges:
            self.out_[k, self.pidx[u], self.pidx[v]] = 1
            if self.undirected[k]:
                self.out_[k, self.pidx[v], self.pidx[u]] = 1
        self.in_ = np.ascontiguousarray(self.out_.transpose(0, 2, 1))
        # Distinct predicted edges per kind (a correlational pair once), for the type-wise bound.
        self.pred_edge_list = []
        seen = set()
        for u, v, k in pred_edges:
            a, b = self.pidx[u], self.pidx[v]
            key = (min(a, b), max(a, b), k) if self.undirected[k] else (a, b, k)
            if key not in seen:
                seen.add(key)
                self.pred_edge_list.append((a, b, k))
        self.K = K
        # A gold graph that has both (u, v) and (v, u) for an undirected kind (never after
        # preprocessing) can match one predicted edge twice: the type-wise bound must not cap it.
        self.uncapped = np.zeros(K, dtype=bool)
        gold_pairs = {(u, v, k) for u, v, k in self.gold_edges}
        for u, v, k in self.gold_edges:
            if self.undirected[k] and u != v and (v, u, k) in gold_pairs:
                self.uncapped[k] = True


def greedy_map(prob: _Problem, order: Sequence[str]) -> tuple[int, dict[str, str]]:
    """The warm start: each gold node in turn takes the free predicted node with the largest gain
    (the first of equal ones), as the reference's greedy did; isolated nodes are mapped too."""
    phi: dict[str, int] = {}
    used = np.zeros(prob.m, dtype=bool)
    adj = _gold_adjacency(prob)
    total = 0
    for g in order:
        if used.all():
            break
        gain = np.zeros(prob.m, dtype=np.int64)
        for other, k, outgoing in adj.get(g, ()):
            q = phi.get(other)
            if other == g:
                continue
            if q is None:
                continue
            gain += prob.in_[k, q] if outgoing else prob.out_[k, q]
        for k in adj_self(prob, g):
            gain += np.diagonal(prob.out_[k])
        gain = np.where(used, -1, gain)
        p = int(np.argmax(gain))
        phi[g] = p
        used[p] = True
        total += int(gain[p])
    return total, {g: prob.pred_nodes[p] for g, p in phi.items()}


def adj_self(prob: _Problem, g: str) -> list[int]:
    return [k for u, v, k in prob.gold_edges if u == g and v == g]


def _gold_adjacency(prob: _Problem) -> dict[str, list[tuple[str, int, bool]]]:
    """gold node -> [(other node, kind, True if the edge leaves the node)] (self-loops excluded)."""
    adj: dict[str, list[tuple[str, int, bool]]] = {}
    for u, v, k in prob.gold_edges:
        if u == v:
            continue
        adj.setdefault(u, []).append((v, k, True))
        adj.setdefault(v, []).append((u, k, False))
    return adj


def count_matched(prob: _Problem, phi: dict[str, str]) -> int:
    """Gold edges matched under ``phi`` (a gold -> predicted node map)."""
    n = 0
    for u, v, k in prob.gold_edges:
        pu, pv = phi.get(u), phi.get(v)
        if pu is None or pv is None or pu not in prob.pidx or pv not in prob.pidx:
            continue
        if prob.out_[k, prob.pidx[pu], prob.pidx[pv]]:
            n += 1
    return n


def _search(prob: _Problem, order: list[str], best: list, deadline: float, counter: list[int]) -> None:
    """Depth-first branch and bound for one gold-node order; improves ``best`` in place
    (``best = [matched, {gold node: pred node}]``). Raises _Timeout past ``deadline``.

    Every gold edge is resolved by ("owned by") its endpoint that comes later in the order. For
    each undecided gold node the search keeps ``gain[i, p]``: the owned edges it would match at
    predicted node p, given the nodes assigned so far; ``open_[i, c]``: its owned edges whose
    other end is still undecided, by kind and side (code c = 2 kind + (0 source | 1 target));
    and for each free predicted node ``freedeg[c, p]``: its predicted edges of that kind and side
    whose other end is still free. Upper bound on what the undecided nodes can still add: the
    smaller of
      sum over undecided i of max over free p of (gain[i, p] + sum_c min(open_[i, c], freedeg[c, p]))
    and, per kind, min(gold edges not yet resolved or dead, predicted edges with a free end).
    """
    from scipy.optimize import linear_sum_assignment

    n, m, K = len(order), prob.m, prob.K
    pos = {g: i for i, g in enumerate(order)}
    # D[2k] = out_[k] (p -> q), D[2k + 1] = in_[k] (q -> p): one array for both sides.
    D = np.empty((2 * K, m, m), dtype=np.int64)
    D[0::2] = prob.out_
    D[1::2] = prob.in_
    later_j: list[list[int]] = [[] for _ in range(n)]
    later_code: list[list[int]] = [[] for _ in range(n)]   # the deciding node's side
    later_owner: list[list[int]] = [[] for _ in range(n)]  # the owner's side
    owned_j: list[list[int]] = [[] for _ in range(n)]
    owned_k: list[list[int]] = [[] for _ in range(n)]
    self_k: list[list[int]] = [[] for _ in range(n)]
    gold_rem = np.zeros(K, dtype=np.int64)
    open_ = np.zeros((n, 2 * K), dtype=np.int64)
    for u, v, k in prob.gold_edges:
        gold_rem[k] += 1
        iu, iv = pos[u], pos[v]
        if iu == iv:
            self_k[iu].append(k)
            continue
        first, owner = (iu, iv) if iu < iv else (iv, iu)
        first_is_src = first == iu
        later_j[first].append(owner)
        later_code[first].append(2 * k + (0 if first_is_src else 1))
        owner_code = 2 * k + (1 if first_is_src else 0)
        later_owner[first].append(owner_code)
        owned_j[owner].append(first)
        owned_k[owner].append(k)
        open_[owner, owner_code] += 1
    lj = [np.array(x, dtype=np.int64) for x in later_j]
    lc = [np.array(x, dtype=np.int64) for x in later_code]
    unique_j = [len(set(x)) == len(x) for x in later_j]
    gain = np.zeros((n, m), dtype=np.int64)
    for i in range(n):
        for k in self_k[i]:
            gain[i] += np.diagonal(prob.out_[k]).astype(np.int64)
    freedeg = D.sum(axis=2)  # every predicted node is free at the start
    diag = np.array([np.diagonal(prob.out_[k]) for k in range(K)], dtype=np.int64)  # K x m
    capped = ~prob.uncapped
    undirected = prob.undirected
    pred_avail = np.zeros(K, dtype=np.int64)
    for a_, b_, k in prob.pred_edge_list:
        pred_avail[k] += 1
    big = np.iinfo(np.int64).max // 4
    used = np.zeros(m, dtype=bool)
    used_i = np.zeros(m, dtype=np.int64)
    assign = [-1] * n  # pred index, -2 = unmapped, -1 = undecided
    has_later = [bool(x) for x in later_j]
    # Per predicted node p, contiguous: Dcol[p] = D[:, :, p] (freedeg falls by it when p is used);
    # W[p] @ used counts p's predicted edges to used nodes per kind (a correlational pair once;
    # a self-loop once, hence dfix).
    Dcol = np.ascontiguousarray(D.transpose(2, 0, 1))
    out64, in64 = prob.out_.astype(np.int64), prob.in_.astype(np.int64)
    W = np.ascontiguousarray((out64 + np.where(undirected[:, None, None], 0, in64)).transpose(1, 0, 2))
    dfix = np.ascontiguousarray(np.where(undirected[:, None], 0, diag).T)

    def pruned(depth: int, cur: int) -> bool:
        """True when the undecided nodes cannot lift ``cur`` above the incumbent (cheap tests
        first: type-wise counts, independent maxima, then the assignment bound)."""
        need = best[0] - cur  # they must add more than this
        if depth >= n:
            return need >= 0
        if need < 0:
            return False
        if int(np.minimum(gold_rem, np.where(capped, pred_avail, big)).sum()) <= need:
            return True
        free = ~used
        if not free.any():
            return True
        fd = freedeg[:, free]  # codes x free
        pot = gain[depth:, free] + np.minimum(open_[depth:, :, None], fd[None, :, :]).sum(axis=1)
        if int(pot.max(axis=1).sum()) <= need:
            return True
        if pot.shape[0] > 1:
            # No two undecided gold nodes can take the same predicted node: the best assignment
            # of undecided nodes to free nodes under these potentials bounds what they can add.
            r, c = linear_sum_assignment(pot, maximize=True)
            return int(pot[r, c].sum()) <= need
        return False

    def decide(i: int, p: int) -> int:
        """Assign node i to p (or leave it unmapped when p < 0). Returns the predicted edges that
        died (both ends used), per kind, packed for undo."""
        for j, k in zip(owned_j[i], owned_k[i]):
            if assign[j] >= 0:
                gold_rem[k] -= 1  # resolved now; edges to unmapped nodes died earlier
        for k in self_k[i]:
            gold_rem[k] -= 1
        js = lj[i]
        if js.size:
            for j, c in zip(later_j[i], later_owner[i]):
                open_[j, c] -= 1
            if p >= 0:
                if unique_j[i]:
                    gain[js] += D[lc[i], p]
                else:
                    np.add.at(gain, js, D[lc[i], p])
            else:
                for c in later_owner[i]:
                    gold_rem[c >> 1] -= 1
        if p >= 0:
            used[p] = True
            used_i[p] = 1
            np.subtract(freedeg, Dcol[p], out=freedeg)
            dead = W[p] @ used_i - dfix[p]
            np.subtract(pred_avail, dead, out=pred_avail)
            return dead
        return None

    def undecide(i: int, p: int, dead) -> None:
        if p >= 0:
            np.add(pred_avail, dead, out=pred_avail)
            np.add(freedeg, Dcol[p], out=freedeg)
            used[p] = False
            used_i[p] = 0
        js = lj[i]
        if js.size:
            for j, c in zip(later_j[i], later_owner[i]):
                open_[j, c] += 1
            if p >= 0:
                if unique_j[i]:
                    gain[js] -= D[lc[i], p]
                else:
                    np.subtract.at(gain, js, D[lc[i], p])
            else:
                for c in later_owner[i]:
                    gold_rem[c >> 1] += 1
        for k in self_k[i]:
            gold_rem[k] += 1
        for j, k in zip(owned_j[i], owned_k[i]):
            if assign[j] >= 0:
                gold_rem[k] += 1

    def dfs(depth: int, cur: int) -> None:
        counter[0] += 1
        if counter[0] & 255 == 0 and time.perf_counter() > deadline:
            raise _Timeout
        if pruned(depth, cur):
            return
        if depth == n:
            best[0] = cur
            best[1] = {order[i]: prob.pred_nodes[assign[i]] for i in range(n) if assign[i] >= 0}
            return
        row = gain[depth]
        candidates = np.flatnonzero(~used)
        if candidates.size:
            # Best immediate gain first; a zero-gain node is only worth trying when this gold
            # node has edges to later nodes (else "unmapped" is at least as good).
            gains = row[candidates]
            for idx in np.argsort(-gains, kind="stable"):
                p = int(candidates[idx])
                gp = int(gains[idx])
                if gp == 0 and not has_later[depth]:
                    break
                assign[depth] = p
                dead = decide(depth, p)
                before = best[0]
                dfs(depth + 1, cur + gp)
                undecide(depth, p, dead)
                assign[depth] = -1
                # The state is as it was on entry: only a better incumbent can prune now.
                if best[0] > before and pruned(depth, cur):
                    return
        assign[depth] = -2
        decide(depth, -1)
        dfs(depth + 1, cur)
        undecide(depth, -1, None)
        assign[depth] = -1

    dfs(0, 0)


def align_graphs(
    gold: AGraph,
    pred: AGraph,
    *,
    orders: Sequence[str] = ORDERS,
    timeout: float = 10.0,
    match_validation: bool = False,
    all_orders: bool = False,
) -> Alignment:
    """The maximum-matched-edges map from ``gold`` to ``pred`` (preprocessed graphs, one view).

    ``timeout`` is per order, in seconds. ``exact`` is True when some order's search finished,
    which proves the result optimal. Raises ConfigError on an unknown order.
    """
    start = time.perf_counter()
    g_edges, p_edges = gold.n_edges(), pred.n_edges()
    if g_edges == 0 or p_edges == 0:
        return Alignment(0, {}, True, g_edges, p_edges, None, [], 0, time.perf_counter() - start)
    prob = _Problem(gold, pred, match_validation)
    # Gold nodes that touch no edge never change the count: leave them out of the search.
    touched = set()
    for u, v, _ in prob.gold_edges:
        touched.update((u, v))
    best: list = [-1, {}]
    best_order = None
    exact = False
    run: list[str] = []
    counter = [0]
    for strategy in orders:
        order = [g for g in node_order(gold, strategy) if g in touched]
        if prob.m == 0:
            best = [0, {}]
            exact = True
            break
        run.append(strategy)
        em, phi = greedy_map(prob, order)
        if em > best[0]:
            best, best_order = [em, phi], strategy
        before = best[0]
        try:
            _search(prob, order, best, time.perf_counter() + timeout, counter)
            exact = True
        except _Timeout:
            pass
        if best[0] > before:
            best_order = strategy
        if exact and not all_orders:
            break
    matched = max(0, best[0])
    return Alignment(matched, dict(best[1]), exact, g_edges, p_edges, best_order, run, counter[0],
                     time.perf_counter() - start)


def per_type_scores(gold: AGraph, pred: AGraph, phi: dict[str, str], *, match_validation: bool = False) -> dict[str, Any]:
    """P/R/F1 per edge type under ``phi`` (correlational undirected); with ``match_validation``
    also per (type, validation). Zero denominators as in the alignment score."""
    pred_keys = set()
    for (u, v, t), val in pred.edges.items():
        pred_keys.add((u, v, t, val if match_validation else None))
        if t == "correlational":
            pred_keys.add((v, u, t, val if match_validation else None))
    groups: dict[str, list] = {}
    for (u, v, t), val in gold.edges.items():
        key = (u, v, t, val if match_validation else None)
        groups.setdefault(t, [[], 0])[0].append(key)
        if match_validation and val is not None:
            groups.setdefault(f"{t}:{val}", [[], 0])[0].append(key)
    for (u, v, t), val in pred.edges.items():
        groups.setdefault(t, [[], 0])[1] += 1
        if match_validation and val is not None:
            groups.setdefault(f"{t}:{val}", [[], 0])[1] += 1

    def type_order(x: str) -> tuple:
        base = x.split(":")[0]
        return (TYPES.index(base) if base in TYPES else 9, x)

    out: dict[str, Any] = {}
    for t in sorted(groups, key=type_order):
        gold_list, n_pred = groups[t]
        matched = sum(1 for u, v, tt, val in gold_list
                      if phi.get(u) is not None and phi.get(v) is not None and (phi[u], phi[v], tt, val) in pred_keys)
        n_gold = len(gold_list)
        p, r = _p(matched, n_gold, n_pred), _p(matched, n_pred, n_gold)
        out[t] = {"matched": matched, "gold": n_gold, "pred": n_pred, "precision": p, "recall": r,
                  "f1": 2 * p * r / (p + r) if p + r > 0 else 0.0}
    return out


# -- node validation ------------------------------------------------------------------------

COSINE_TIERS = ((0.9, ">=0.9 near-exact"), (0.7, "0.7-0.9 high"), (0.5, "0.5-0.7 moderate"),
                (0.3, "0.3-0.5 weak"), (float("-inf"), "<0.3 low"))


def f1_safe_swap(gold: AGraph, pred: AGraph, phi: dict[str, str], cosine: np.ndarray,
                 *, match_validation: bool = False) -> dict[str, str]:
    """Improve the label agreement of a map without changing its matched-edge count (the
    EmpiriGraph-Psy node-validation step). ``cosine[i, j]`` compares gold node i and predicted
    node j (in node order). Repeats, until nothing changes: swap the images of two gold nodes;
    move a gold node to an unused predicted node; map an unmapped gold node to its most similar
    unused predicted node (cosine > 0) -- each only when the cosine sum rises and the count holds.
    """
    prob = _Problem(gold, pred, match_validation)
    gi = {n: i for i, n in enumerate(gold.nodes)}
    pi = {n: j for j, n in enumerate(pred.nodes)}
    phi = dict(phi)
    target = count_matched(prob, phi)

    def cos(g: str, p: str | None) -> float:
        return float(cosine[gi[g], pi[p]]) if p is not None else 0.0

    changed = True
    while changed:
        changed = False
        assigned = [g for g in gold.nodes if g in phi]
        for a_i in range(len(assigned)):
            for b_i in range(a_i + 1, len(assigned)):
                a, b = assigned[a_i], assigned[b_i]
                if cos(a, phi[b]) + cos(b, phi[a]) <= cos(a, phi[a]) + cos(b, phi[b]) + 1e-9:
                    continue
                phi[a], phi[b] = phi[b], phi[a]
                if count_matched(prob, phi) == target:
                    changed = True
                else:
                    phi[a], phi[b] = phi[b], phi[a]
        free = [p for p in pred.nodes if p not in set(phi.values())]
        for a in assigned:
            for p in list(free):
                if cos(a, p) <= cos(a, phi[a]) + 1e-9:
                    continue
                old = phi[a]
                phi[a] = p
                if count_matched(prob, phi) == target:
                    free.remove(p)
                    free.append(old)
                    changed = True
                else:
                    phi[a] = old
        for a in [g for g in gold.nodes if g not in phi]:
            if not free:
                break
            p = max(free, key=lambda q: cos(a, q))
            if cos(a, p) <= 0:
                continue
            phi[a] = p
            if count_matched(prob, phi) == target:
                free.remove(p)
                changed = True
            else:
                del phi[a]
    return phi


def cosine_tiers(cosines: Sequence[float]) -> dict[str, Any]:
    """Counts and shares of aligned node pairs per cosine tier, with mean, median and SD."""
    arr = np.asarray(list(cosines), dtype=float)
    out: dict[str, Any] = {"pairs": int(arr.size)}
    if arr.size == 0:
        return out
    out.update(mean=float(arr.mean()), median=float(np.median(arr)), sd=float(arr.std(ddof=1)) if arr.size > 1 else 0.0)
    upper = float("inf")
    for low, name in COSINE_TIERS:
        n = int(((arr >= low) & (arr < upper)).sum())
        out[name] = {"pairs": n, "share": n / arr.size}
        upper = low
    return out


# -- a whole file pair -----------------------------------------------------------------------


@dataclass
class UnitAlignment:
    unit: str
    view: str
    alignment: Alignment
    per_type: dict[str, Any]
    node_pairs: list[dict[str, Any]] | None = None  # node validation: aligned labels and cosine

    @property
    def node_cosine(self) -> float | None:
        if not self.node_pairs:
            return None
        return float(np.mean([x["cosine"] for x in self.node_pairs]))

    def row(self) -> dict[str, Any]:
        a = self.alignment
        return {"unit": self.unit, "view": self.view, "matched": a.matched, "gold_edges": a.gold_edges,
                "pred_edges": a.pred_edges, "precision": a.precision, "recall": a.recall, "f1": a.f1,
                "exact": a.exact, "order": a.order, "orders_run": a.orders_run, "search_nodes": a.nodes_explored,
                "seconds": round(a.seconds, 4), "per_type": self.per_type, "phi": a.phi,
                **({"node_cosine": self.node_cosine, "node_pairs": self.node_pairs} if self.node_pairs else {})}


def summarise(units: Sequence[UnitAlignment]) -> dict[str, Any]:
    """Micro (pooled counts) and macro (mean over units) P/R/F1 of one view, the reference's
    macro over units with gold edges, per-type macros (units with gold edges of that type), and
    how many units were solved exactly."""
    if not units:
        return {}
    matched = sum(u.alignment.matched for u in units)
    g = sum(u.alignment.gold_edges for u in units)
    p = sum(u.alignment.pred_edges for u in units)
    mp, mr = _p(matched, g, p), _p(matched, p, g)
    with_gold = [u for u in units if u.alignment.gold_edges > 0]
    out: dict[str, Any] = {
        "view": units[0].view, "units": len(units), "exact_units": sum(u.alignment.exact for u in units),
        "matched": matched, "gold_edges": g, "pred_edges": p,
        "micro_p": mp, "micro_r": mr, "micro_f1": 2 * mp * mr / (mp + mr) if mp + mr > 0 else 0.0,
        "macro_p": float(np.mean([u.alignment.precision for u in units])),
        "macro_r": float(np.mean([u.alignment.recall for u in units])),
        "macro_f1": float(np.mean([u.alignment.f1 for u in units])),
        "macro_f1_gold_units": float(np.mean([u.alignment.f1 for u in with_gold])) if with_gold else 0.0,
    }
    types = sorted({t for u in units for t in u.per_type}, key=lambda x: (TYPES.index(x) if x in TYPES else 9, x))
    for t in types:
        has = [u.per_type[t] for u in units if t in u.per_type and u.per_type[t]["gold"] > 0]
        if has:
            out[f"{t}_f1"] = float(np.mean([x["f1"] for x in has]))
            out[f"{t}_units"] = len(has)
    cos = [u.node_cosine for u in units if u.node_cosine is not None]
    if cos:
        out["node_cosine"] = float(np.mean(cos))
    return out


def prepare_views(graph: Graph, views: Sequence[str], validation: str) -> dict[str, AGraph]:
    base = preprocess(graph)
    if validation == "validated-only":
        base = validated_only(base)
    return {v: view(base, v) for v in views}


@dataclass
class AlignRun:
    units: list[UnitAlignment]
    summaries: list[dict[str, Any]]
    counts: dict[str, Any]
    tiers: dict[str, Any] | None = None
    out_dir: Path | None = None


def align(
    gold: str | os.PathLike,
    pred: str | os.PathLike,
    *,
    views: Sequence[str] | None = None,
    orders: Sequence[str] | None = None,
    timeout: float | None = None,
    validation: str | None = None,
    node_encoder: str | None = None,
    all_orders: bool = False,
    lenient: bool = False,
    out_dir: str | os.PathLike | None = None,
    cfg: Config | None = None,
) -> AlignRun:
    """Align every unit of ``pred`` to ``gold`` in each view (``causalkg eval align``).

    Writes ``units.jsonl`` (per unit and view: counts, P/R/F1, exact flag, per-type scores, the
    map), ``summary.json`` and ``manifest.json`` under ``out_dir`` (default
    ``<paths.data>/eval/align``; "" writes nothing). ``node_encoder`` (``embedding:MODEL``) adds
    node validation: the cosine of aligned node labels, per unit and in tiers.
    """
    from causalkg.config import load_config
    from causalkg.evaluation.graph.soft import pair_units

    cfg = cfg or load_config(search_cwd=False)
    ev = cfg["eval"]
    views = list(views or ev["align"]["views"])
    for v in views:
        if v not in VIEWS:
            raise ConfigError(f"unknown alignment view {v!r}", hint=f"choose from {', '.join(VIEWS)}")
    orders = list(orders or ev["align"]["orders"])
    for o in orders:
        node_order(AGraph(), o)  # validates the name
    timeout = float(ev["align"]["timeout"] if timeout is None else timeout)
    validation = validation or ev["align"]["validation"]
    if validation not in VALIDATION_MODES:
        raise ConfigError(f"unknown validation mode {validation!r}", hint=f"choose from {', '.join(VALIDATION_MODES)}")
    node_encoder = ev["align"]["node_encoder"] if node_encoder is None else node_encoder
    gold_graphs, pred_graphs = read_graphs(gold, lenient=lenient), read_graphs(pred, lenient=lenient)
    pairs, counts = pair_units(gold_graphs, pred_graphs)
    match = validation == "match"
    results: list[UnitAlignment] = []
    validator = None
    if node_encoder:
        from causalkg.evaluation.graph.similarity import get_similarity

        validator = get_similarity(node_encoder, device=stage_device(cfg, "eval.soft.device"))
    for uid, g, p in progress(pairs, desc="aligning", unit="unit"):
        gv, pv = prepare_views(g, views, validation), prepare_views(p, views, validation)
        for v in views:
            a = align_graphs(gv[v], pv[v], orders=orders, timeout=timeout, match_validation=match, all_orders=all_orders)
            per_type = per_type_scores(gv[v], pv[v], a.phi, match_validation=match) if v in ("typed", "higher") else {}
            ua = UnitAlignment(uid, v, a, per_type)
            if validator is not None and a.phi:
                gl = [gv[v].label(n) for n in gv[v].nodes]
                pl = [pv[v].label(n) for n in pv[v].nodes]
                cos = validator.matrix(gl, pl)
                phi = f1_safe_swap(gv[v], pv[v], a.phi, cos, match_validation=match)
                gi = {n: i for i, n in enumerate(gv[v].nodes)}
                pi = {n: j for j, n in enumerate(pv[v].nodes)}
                ua.node_pairs = [{"gold": gv[v].label(g_), "pred": pv[v].label(p_), "cosine": float(cos[gi[g_], pi[p_]]),
                                  "exact": gv[v].label(g_).strip().lower() == pv[v].label(p_).strip().lower()}
                                 for g_, p_ in phi.items()]
            results.append(ua)
    summaries = [summarise([u for u in results if u.view == v]) for v in views]
    counts.update(units=len(pairs), exact_unit_views=sum(u.alignment.exact for u in results),
                  unit_views=len(results))
    run = AlignRun(results, summaries, counts)
    if validator is not None:
        run.tiers = {v: cosine_tiers([x["cosine"] for u in results if u.view == v for x in (u.node_pairs or [])])
                     for v in views}
    if out_dir is None:
        out_dir = Layout.from_config(cfg).eval_out("align")
    if out_dir:
        out = Path(out_dir)
        write_jsonl(out / "units.jsonl", (u.row() for u in results))
        write_json(out / "summary.json", {"views": summaries, "counts": counts, "tiers": run.tiers})
        write_manifest(out, build_manifest(
            "eval.align", cfg, inputs={"gold": gold, "pred": pred}, outputs={"units": "units.jsonl", "summary": "summary.json"},
            counts=counts, extra={"options": {"views": views, "orders": orders, "timeout": timeout,
                                              "validation": validation, "node_encoder": node_encoder}},
        ))
        run.out_dir = out
    return run
