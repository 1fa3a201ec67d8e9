"""The search of structure-first alignment: the map from gold to predicted nodes that matches
the most gold edges.

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

The graphs are ``AGraph``s (``evaluation.graph.agraph``), already preprocessed and cut to one view.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from causalkg.evaluation.graph.agraph import ORDERS, AGraph, node_order

# -- the search -----------------------------------------------------------------------------


def _kind(t: str, val: str | None, match_validation: bool) -> tuple[str, str | None]:
    return (t, val if match_validation and t not in ("hierarchy", "relation") else None)


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


class _BranchAndBound:
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

    The state is arrays changed in place by ``decide`` and restored by ``undecide``.
    """

    def __init__(self, prob: _Problem, order: list[str], best: list, deadline: float, counter: list[int]):
        from scipy.optimize import linear_sum_assignment  # imported when a search runs, not with the module

        self.linear_sum_assignment = linear_sum_assignment
        self.prob, self.order, self.best, self.deadline, self.counter = prob, order, best, deadline, counter
        self.n, self.m, self.K = len(order), prob.m, prob.K
        self._index_gold_edges()
        self._start_state()

    def _index_gold_edges(self) -> None:
        """Who owns which gold edge, and what deciding a node changes for the later ones."""
        prob, n, K = self.prob, self.n, self.K
        pos = {g: i for i, g in enumerate(self.order)}
        self.later_j: list[list[int]] = [[] for _ in range(n)]
        self.later_code: list[list[int]] = [[] for _ in range(n)]   # the deciding node's side
        self.later_owner: list[list[int]] = [[] for _ in range(n)]  # the owner's side
        self.owned_j: list[list[int]] = [[] for _ in range(n)]
        self.owned_k: list[list[int]] = [[] for _ in range(n)]
        self.self_k: list[list[int]] = [[] for _ in range(n)]
        self.gold_rem = np.zeros(K, dtype=np.int64)
        self.open_ = np.zeros((n, 2 * K), dtype=np.int64)
        for u, v, k in prob.gold_edges:
            self.gold_rem[k] += 1
            iu, iv = pos[u], pos[v]
            if iu == iv:
                self.self_k[iu].append(k)
                continue
            first, owner = (iu, iv) if iu < iv else (iv, iu)
            first_is_src = first == iu
            self.later_j[first].append(owner)
            self.later_code[first].append(2 * k + (0 if first_is_src else 1))
            owner_code = 2 * k + (1 if first_is_src else 0)
            self.later_owner[first].append(owner_code)
            self.owned_j[owner].append(first)
            self.owned_k[owner].append(k)
            self.open_[owner, owner_code] += 1
        self.lj = [np.array(x, dtype=np.int64) for x in self.later_j]
        self.lc = [np.array(x, dtype=np.int64) for x in self.later_code]
        self.unique_j = [len(set(x)) == len(x) for x in self.later_j]
        self.has_later = [bool(x) for x in self.later_j]

    def _start_state(self) -> None:
        """Gains, free degrees and available predicted edges with every predicted node free."""
        prob, n, m, K = self.prob, self.n, self.m, self.K
        # D[2k] = out_[k] (p -> q), D[2k + 1] = in_[k] (q -> p): one array for both sides.
        D = np.empty((2 * K, m, m), dtype=np.int64)
        D[0::2] = prob.out_
        D[1::2] = prob.in_
        self.D = D
        self.gain = np.zeros((n, m), dtype=np.int64)
        for i in range(n):
            for k in self.self_k[i]:
                self.gain[i] += np.diagonal(prob.out_[k]).astype(np.int64)
        self.freedeg = D.sum(axis=2)  # every predicted node is free at the start
        diag = np.array([np.diagonal(prob.out_[k]) for k in range(K)], dtype=np.int64)  # K x m
        self.capped = ~prob.uncapped
        undirected = prob.undirected
        self.pred_avail = np.zeros(K, dtype=np.int64)
        for _a, _b, k in prob.pred_edge_list:
            self.pred_avail[k] += 1
        self.big = np.iinfo(np.int64).max // 4
        self.used = np.zeros(m, dtype=bool)
        self.used_i = np.zeros(m, dtype=np.int64)
        self.assign = [-1] * n  # pred index, -2 = unmapped, -1 = undecided
        # Per predicted node p, contiguous: Dcol[p] = D[:, :, p] (freedeg falls by it when p is used);
        # W[p] @ used counts p's predicted edges to used nodes per kind (a correlational pair once;
        # a self-loop once, hence dfix).
        self.Dcol = np.ascontiguousarray(D.transpose(2, 0, 1))
        out64, in64 = prob.out_.astype(np.int64), prob.in_.astype(np.int64)
        self.W = np.ascontiguousarray((out64 + np.where(undirected[:, None, None], 0, in64)).transpose(1, 0, 2))
        self.dfix = np.ascontiguousarray(np.where(undirected[:, None], 0, diag).T)

    def pruned(self, depth: int, cur: int) -> bool:
        """True when the undecided nodes cannot lift ``cur`` above the incumbent (cheap tests
        first: type-wise counts, independent maxima, then the assignment bound)."""
        need = self.best[0] - cur  # they must add more than this
        if depth >= self.n:
            return need >= 0
        if need < 0:
            return False
        if int(np.minimum(self.gold_rem, np.where(self.capped, self.pred_avail, self.big)).sum()) <= need:
            return True
        free = ~self.used
        if not free.any():
            return True
        fd = self.freedeg[:, free]  # codes x free
        pot = self.gain[depth:, free] + np.minimum(self.open_[depth:, :, None], fd[None, :, :]).sum(axis=1)
        if int(pot.max(axis=1).sum()) <= need:
            return True
        if pot.shape[0] > 1:
            # No two undecided gold nodes can take the same predicted node: the best assignment
            # of undecided nodes to free nodes under these potentials bounds what they can add.
            r, c = self.linear_sum_assignment(pot, maximize=True)
            return int(pot[r, c].sum()) <= need
        return False

    def decide(self, i: int, p: int):
        """Assign node i to p (or leave it unmapped when p < 0). Returns the predicted edges that
        died (both ends used), per kind, packed for undo."""
        gold_rem, open_, gain, assign = self.gold_rem, self.open_, self.gain, self.assign
        for j, k in zip(self.owned_j[i], self.owned_k[i]):
            if assign[j] >= 0:
                gold_rem[k] -= 1  # resolved now; edges to unmapped nodes died earlier
        for k in self.self_k[i]:
            gold_rem[k] -= 1
        js = self.lj[i]
        if js.size:
            for j, c in zip(self.later_j[i], self.later_owner[i]):
                open_[j, c] -= 1
            if p >= 0:
                if self.unique_j[i]:
                    gain[js] += self.D[self.lc[i], p]
                else:
                    np.add.at(gain, js, self.D[self.lc[i], p])
            else:
                for c in self.later_owner[i]:
                    gold_rem[c >> 1] -= 1
        if p >= 0:
            self.used[p] = True
            self.used_i[p] = 1
            np.subtract(self.freedeg, self.Dcol[p], out=self.freedeg)
            dead = self.W[p] @ self.used_i - self.dfix[p]
            np.subtract(self.pred_avail, dead, out=self.pred_avail)
            return dead
        return None

    def undecide(self, i: int, p: int, dead) -> None:
        gold_rem, open_, gain, assign = self.gold_rem, self.open_, self.gain, self.assign
        if p >= 0:
            np.add(self.pred_avail, dead, out=self.pred_avail)
            np.add(self.freedeg, self.Dcol[p], out=self.freedeg)
            self.used[p] = False
            self.used_i[p] = 0
        js = self.lj[i]
        if js.size:
            for j, c in zip(self.later_j[i], self.later_owner[i]):
                open_[j, c] += 1
            if p >= 0:
                if self.unique_j[i]:
                    gain[js] -= self.D[self.lc[i], p]
                else:
                    np.subtract.at(gain, js, self.D[self.lc[i], p])
            else:
                for c in self.later_owner[i]:
                    gold_rem[c >> 1] += 1
        for k in self.self_k[i]:
            gold_rem[k] += 1
        for j, k in zip(self.owned_j[i], self.owned_k[i]):
            if assign[j] >= 0:
                gold_rem[k] += 1

    def dfs(self, depth: int, cur: int) -> None:
        counter, best, assign = self.counter, self.best, self.assign
        counter[0] += 1
        if counter[0] & 255 == 0 and time.perf_counter() > self.deadline:
            raise _Timeout
        if self.pruned(depth, cur):
            return
        if depth == self.n:
            best[0] = cur
            best[1] = {self.order[i]: self.prob.pred_nodes[assign[i]] for i in range(self.n) if assign[i] >= 0}
            return
        row = self.gain[depth]
        candidates = np.flatnonzero(~self.used)
        if candidates.size:
            # Best immediate gain first; a zero-gain node is only worth trying when this gold
            # node has edges to later nodes (else "unmapped" is at least as good).
            gains = row[candidates]
            for idx in np.argsort(-gains, kind="stable"):
                p = int(candidates[idx])
                gp = int(gains[idx])
                if gp == 0 and not self.has_later[depth]:
                    break
                assign[depth] = p
                dead = self.decide(depth, p)
                before = best[0]
                self.dfs(depth + 1, cur + gp)
                self.undecide(depth, p, dead)
                assign[depth] = -1
                # The state is as it was on entry: only a better incumbent can prune now.
                if best[0] > before and self.pruned(depth, cur):
                    return
        assign[depth] = -2
        self.decide(depth, -1)
        self.dfs(depth + 1, cur)
        self.undecide(depth, -1, None)
        assign[depth] = -1


def _search(prob: _Problem, order: list[str], best: list, deadline: float, counter: list[int]) -> None:
    """Run the branch and bound (``_BranchAndBound``) for one gold-node order."""
    _BranchAndBound(prob, order, best, deadline, counter).dfs(0, 0)


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
