"""Agreement between annotators of causal graphs: Cohen's kappa (pairwise) and Fleiss' kappa.

As in the EmpiriGraph-Psy study, the two graphs of a unit are first aligned structurally
(``evaluation.graph.align``, typed view of the preprocessed graphs); then every pair of aligned nodes
gets one of five labels in each graph: none, hierarchy, directional, correlational, moderation
(when several edges join the pair: directional > correlational > moderation > hierarchy).
``agreement`` labels ordered pairs by default, as the issue defines it: (u, v) by the edges from
u to v only (correlational edges count both ways), so a reversed directional edge is a
disagreement; ``ordered=False`` reproduces the EmpiriGraph-Psy study's choice, unordered pairs
whose label looks at edges in both directions. Kappa is computed over the labels of all units pooled.

Cohen: kappa = (p_o - p_e) / (1 - p_e) with p_e from the two raters' label marginals. Fleiss:
with N items, m raters and n_ij raters putting item i in category j, P_i = (sum_j n_ij^2 - m) /
(m (m - 1)), p_j = sum_i n_ij / (N m), kappa = (mean P_i - sum p_j^2) / (1 - sum p_j^2). Both
are 1.0 when chance agreement is 1 and NaN with no items. For Fleiss, the first annotator is the
pivot: its nodes aligned in every other graph are used.

Maps: ``exact`` (the branch-and-bound optimum, then the nodes it leaves out mapped greedily, so
that every node with a counterpart is compared) or ``greedy`` (the study's: the best of the greedy
maps over the five node orders, every gold node mapped while predicted nodes remain).
Part of the evaluation stage; ``causalkg eval agreement`` wraps ``agreement``.
"""

from __future__ import annotations

import itertools
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from causalkg.core.config import Config
from causalkg.core.errors import ConfigError
from causalkg.core.jsonl import write_json
from causalkg.core.layout import Layout
from causalkg.core.manifest import build_manifest, write_manifest
from causalkg.evaluation.graph.agraph import ORDERS, AGraph, node_order, preprocess
from causalkg.evaluation.graph.alignsearch import _Problem, align_graphs, greedy_map
from causalkg.evaluation.graph.graphs import read_graphs

CATEGORIES = ("none", "hierarchy", "directional", "correlational", "moderation")
_PRIORITY = {"directional": 0, "correlational": 1, "moderation": 2, "hierarchy": 3}
MAPPINGS = ("exact", "greedy")


def cohen_kappa(a: Sequence[str], b: Sequence[str]) -> float:
    """Cohen's kappa of two equally long label sequences (NaN when empty)."""
    if len(a) != len(b):
        raise ValueError("the two raters label different numbers of items")
    n = len(a)
    if n == 0:
        return float("nan")
    cats = sorted(set(a) | set(b))
    po = sum(1 for x, y in zip(a, b) if x == y) / n
    pe = sum((sum(1 for x in a if x == c) / n) * (sum(1 for y in b if y == c) / n) for c in cats)
    if abs(1.0 - pe) < 1e-12:
        return 1.0
    return (po - pe) / (1.0 - pe)


def fleiss_kappa(raters: Sequence[Sequence[str]]) -> float:
    """Fleiss' kappa of m >= 2 raters' label sequences over the same N items (NaN otherwise)."""
    m = len(raters)
    n_items = len(raters[0]) if m else 0
    if m < 2 or n_items == 0:
        return float("nan")
    if any(len(r) != n_items for r in raters):
        raise ValueError("the raters label different numbers of items")
    cats = sorted({x for r in raters for x in r})
    idx = {c: j for j, c in enumerate(cats)}
    counts = [[0] * len(cats) for _ in range(n_items)]
    for r in raters:
        for i, x in enumerate(r):
            counts[i][idx[x]] += 1
    p_items = [(sum(c * c for c in row) - m) / (m * (m - 1)) for row in counts]
    p_bar = sum(p_items) / n_items
    pj = [sum(row[j] for row in counts) / (n_items * m) for j in range(len(cats))]
    pe = sum(p * p for p in pj)
    if abs(1.0 - pe) < 1e-12:
        return 1.0
    return (p_bar - pe) / (1.0 - pe)


def pair_label(g: AGraph, u: str, v: str, *, ordered: bool = False) -> str:
    """The five-class label of a node pair (see the module docstring)."""
    best, rank = "none", 99
    directions = [(u, v)] if ordered else [(u, v), (v, u)]
    for t in _PRIORITY:
        keys = [(a, b, t) for a, b in directions]
        if ordered and t == "correlational":
            keys.append((v, u, t))
        if any(k in g.edges for k in keys) and _PRIORITY[t] < rank:
            best, rank = t, _PRIORITY[t]
    return best


def extend_map(x: AGraph, y: AGraph, phi: dict[str, str]) -> dict[str, str]:
    """Map the nodes of ``x`` that ``phi`` leaves out, the way the study's greedy map does: in
    degree-descending order, each takes the free node of ``y`` with the most edges matched to
    the nodes mapped so far (the first of equal ones), while free nodes remain."""
    phi = dict(phi)
    free = [n for n in y.nodes if n not in set(phi.values())]
    lookup = set(y.edges) | {(v, u, t) for (u, v, t) in y.edges if t == "correlational"}
    edges = list(x.edges)
    for g in node_order(x, "degree_desc"):
        if g in phi or not free:
            continue

        def gain(p: str) -> int:
            c = 0
            for (u, v, t) in edges:
                if u == g and v in phi and (p, phi[v], t) in lookup:
                    c += 1
                elif v == g and u in phi and (phi[u], p, t) in lookup:
                    c += 1
            return c

        gains = [gain(p) for p in free]
        best = max(range(len(free)), key=lambda i: (gains[i], -i))
        phi[g] = free.pop(best)
    return phi


def node_map(x: AGraph, y: AGraph, mapping: str = "exact", *, timeout: float = 10.0,
             orders: Sequence[str] = ORDERS) -> dict[str, str]:
    """The node map from ``x`` to ``y`` used to compare their labels: ``exact`` is the optimal
    alignment extended by ``extend_map`` to the nodes it leaves out (so that every node with a
    counterpart is compared, as in the study); ``greedy`` is the study's map."""
    if mapping == "exact":
        return extend_map(x, y, align_graphs(x, y, orders=orders, timeout=timeout).phi)
    if mapping == "greedy":
        if not x.edges or not y.edges:
            return {}
        prob = _Problem(x, y, False)
        best_em, best_phi = -1, {}
        for strategy in orders:
            em, phi = greedy_map(prob, node_order(x, strategy))
            if em > best_em:
                best_em, best_phi = em, phi
        return best_phi
    raise ConfigError(f"unknown mapping {mapping!r}", hint="use exact or greedy")


def pair_labels(x: AGraph, y: AGraph, phi: dict[str, str], nodes: Sequence[str] | None = None,
                *, ordered: bool = False) -> tuple[list[str], list[str]]:
    """Labels in x and y of every pair of mapped x nodes (in x's node order)."""
    mapped = [n for n in (nodes if nodes is not None else x.nodes) if n in phi]
    pairs = itertools.permutations(mapped, 2) if ordered else itertools.combinations(mapped, 2)
    lx, ly = [], []
    for u, v in pairs:
        lx.append(pair_label(x, u, v, ordered=ordered))
        ly.append(pair_label(y, phi[u], phi[v], ordered=ordered))
    return lx, ly


@dataclass
class AgreementRun:
    rows: list[dict[str, Any]]
    counts: dict[str, Any]
    out_dir: Path | None = None


def agreement(
    files: Sequence[str | os.PathLike],
    *,
    names: Sequence[str] | None = None,
    mapping: str = "exact",
    ordered: bool = True,
    timeout: float | None = None,
    out_dir: str | os.PathLike | None = None,
    cfg: Config | None = None,
) -> AgreementRun:
    """Cohen's kappa for every pair of annotators and Fleiss' kappa (three or more) over the
    units all of them annotated (``causalkg eval agreement``). Writes ``agreement.json`` and
    ``manifest.json`` under ``out_dir`` (default ``<paths.data>/eval/agreement``; "" writes
    nothing). Raises ConfigError with fewer than two files or no common unit."""
    from causalkg.core.config import load_config

    cfg = cfg or load_config(search_cwd=False)
    if len(files) < 2:
        raise ConfigError("agreement needs at least two annotation files")
    names = list(names) if names else [Path(f).stem for f in files]
    if len(names) != len(files) or len(set(names)) != len(names):
        raise ConfigError("give one distinct name per file", hint="--names A,B,C")
    if mapping not in MAPPINGS:
        raise ConfigError(f"unknown mapping {mapping!r}", hint="use exact or greedy")
    timeout = float(cfg["eval"]["align"]["timeout"] if timeout is None else timeout)
    orders = list(cfg["eval"]["align"]["orders"])
    raw = [read_graphs(f) for f in files]
    common = [u for u in raw[0] if all(u in r for r in raw[1:])]
    if not common:
        raise ConfigError("the files share no unit id", hint="annotations of the same units must use the same ids")
    graphs = [{u: preprocess(r[u]) for u in common} for r in raw]
    rows: list[dict[str, Any]] = []
    for (i, a), (j, b) in itertools.combinations(enumerate(names), 2):
        lx: list[str] = []
        ly: list[str] = []
        for u in common:
            phi = node_map(graphs[i][u], graphs[j][u], mapping, timeout=timeout, orders=orders)
            x, y = pair_labels(graphs[i][u], graphs[j][u], phi, ordered=ordered)
            lx += x
            ly += y
        rows.append({"measure": "cohen", "raters": f"{a}-{b}", "kappa": cohen_kappa(lx, ly), "node_pairs": len(lx)})
    if len(names) >= 3:
        labels: list[list[str]] = [[] for _ in names]
        for u in common:
            pivot = graphs[0][u]
            maps = [node_map(pivot, graphs[k][u], mapping, timeout=timeout, orders=orders) for k in range(1, len(names))]
            shared = [n for n in pivot.nodes if all(n in phi for phi in maps)]
            pairs = itertools.permutations(shared, 2) if ordered else itertools.combinations(shared, 2)
            for s, t in pairs:
                labels[0].append(pair_label(pivot, s, t, ordered=ordered))
                for k, phi in enumerate(maps, 1):
                    labels[k].append(pair_label(graphs[k][u], phi[s], phi[t], ordered=ordered))
        rows.append({"measure": "fleiss", "raters": "-".join(names), "kappa": fleiss_kappa(labels),
                     "node_pairs": len(labels[0])})
    counts = {"annotators": len(names), "units": len(common)}
    run = AgreementRun(rows, counts)
    if out_dir is None:
        out_dir = Layout.from_config(cfg).eval_out("agreement")
    if out_dir:
        out = Path(out_dir)
        clean = [{k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in r.items()} for r in rows]
        write_json(out / "agreement.json", {"rows": clean, "counts": counts,
                                             "options": {"mapping": mapping, "ordered": ordered}})
        write_manifest(out, build_manifest("eval.agreement", cfg, inputs={n: f for n, f in zip(names, files)},
                                           outputs={"agreement": "agreement.json"}, counts=counts))
        run.out_dir = out
    return run
