"""Structure-first graph alignment (the EmpiriGraph-Psy evaluator), made fast.

Nodes are matched by the edges they take part in, not by their names: find the injective partial
map phi from gold nodes to predicted nodes that maximises the number of gold edges (u, v, t) for
which the predicted graph has (phi(u), phi(v), t) (correlational edges are undirected for this
lookup). Then P = matched / |predicted edges|, R = matched / |gold edges|, F1; both graphs empty
scores 1, one empty 0.

The pieces: ``evaluation.graph.agraph`` (the graphs, the seven preprocessing steps, the views,
node orders), ``evaluation.graph.alignsearch`` (the search) and ``evaluation.graph.alignscores``
(per-type scores, node validation, summaries). This module runs them over two graph files.

Part of the evaluation stage; ``causalkg eval align`` wraps ``align``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence


from causalkg.core.config import Config
from causalkg.core.errors import ConfigError
from causalkg.core.jsonl import write_json, write_jsonl
from causalkg.core.layout import Layout
from causalkg.core.models import stage_device
from causalkg.core.manifest import build_manifest, write_manifest
from causalkg.core.progress import progress
from causalkg.registry import versioned_spec
from causalkg.evaluation.graph.agraph import (  # noqa: F401 - re-exported: the alignment API in one place
    MODES, ORDERS, TYPES, VALIDATION_MODES, VIEWS, AGraph, canonicalise_correlational, drop_between_hierarchy_linked,
    drop_correlational_beside_directional, keep_one_per_pair, lower_nodes, merge_single_children, node_order,
    preprocess, propagate_to_higher, validated_only, view)
from causalkg.evaluation.graph.alignscores import (  # noqa: F401
    COSINE_TIERS, UnitAlignment, cosine_tiers, f1_safe_swap, per_type_scores, summarise)
from causalkg.evaluation.graph.alignsearch import (  # noqa: F401
    Alignment, _Problem, align_graphs, count_matched, greedy_map)
from causalkg.evaluation.graph.graphs import Graph, read_graphs

def prepare_views(graph: Graph, views: Sequence[str], validation: str, mode: str = "ours") -> dict[str, AGraph]:
    base = preprocess(graph, mode)
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
    mode: str | None = None,
) -> AlignRun:
    """Align every unit of ``pred`` to ``gold`` in each view (``causalkg eval align``).

    Writes ``units.jsonl`` (per unit and view: counts, P/R/F1, exact flag, per-type scores, the
    map), ``summary.json`` and ``manifest.json`` under ``out_dir`` (default
    ``<paths.data>/eval/align``; "" writes nothing). ``node_encoder`` (``embedding:MODEL``) adds
    node validation: the cosine of aligned node labels, per unit and in tiers. ``mode``
    (default ``eval.align.mode``): ``ours``, or ``reference`` to reproduce the EmpiriGraph-Psy
    authors' evaluation with its quirk (step 3 of the preprocessing keeps the self-loops it
    makes on a parent of two linked children, and they count as edges).
    """
    from causalkg.core.config import load_config
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
    mode = mode or ev["align"].get("mode", "ours")
    if mode not in MODES:
        raise ConfigError(f"unknown alignment mode {mode!r}", hint="use ours or reference")
    gold_graphs, pred_graphs = read_graphs(gold, lenient=lenient), read_graphs(pred, lenient=lenient)
    pairs, counts = pair_units(gold_graphs, pred_graphs)
    match = validation == "match"
    results: list[UnitAlignment] = []
    validator = None
    if node_encoder:
        from causalkg.evaluation.graph.similarity import get_similarity

        validator = get_similarity(node_encoder, device=stage_device(cfg, "eval.soft.device"))
    for uid, g, p in progress(pairs, desc="aligning", unit="unit"):
        gv, pv = prepare_views(g, views, validation, mode), prepare_views(p, views, validation, mode)
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
                                              "validation": validation, "mode": mode,
                                              "node_encoder": versioned_spec("similarity", node_encoder) if node_encoder
                                              else node_encoder}},
        ))
        run.out_dir = out
    return run
