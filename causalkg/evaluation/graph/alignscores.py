"""Scores of one alignment and of a set of them: P/R/F1 per edge type, node validation (the
F1-safe swap of labels and the cosine tiers of aligned labels), and the micro and macro summary
of a view. Used by ``evaluation.graph.align`` (``causalkg eval align``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from causalkg.evaluation.graph.agraph import TYPES, AGraph
from causalkg.evaluation.graph.alignsearch import Alignment, _p, _Problem, count_matched

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
