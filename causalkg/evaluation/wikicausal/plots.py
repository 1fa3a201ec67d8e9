"""Plots for the recall and precision reports (PNG, matplotlib's Agg backend: no display needed).

Stage 4 (evaluation): ``plot_recall_by_class`` draws the per-seed-class recall that
``evaluation.wikicausal.recall.score_kg`` computes; ``plot_precision`` the per-view precision with its
confidence interval from ``evaluation.wikicausal.precision``. The report (``eval report``) embeds both.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Sequence


def _pyplot():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _save(fig: Any, path: str | os.PathLike) -> Path:
    """Save atomically: render to a temporary name in the same folder, then rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp.png")
    fig.savefig(tmp, dpi=110, bbox_inches="tight")
    os.replace(tmp, path)
    return path


def plot_recall_by_class(results: Sequence[Any], path: str | os.PathLike, *, measure: str = "full_recall") -> Path:
    """Horizontal grouped bars: recall per Base KG event class (rows), one bar per KG.

    ``results``: ``RecallResult`` objects scored against the same Base KG (their ``by_class``
    rows are in the Base KG's class order). Writes a PNG and returns its path.
    """
    plt = _pyplot()
    results = list(results)
    classes: list[tuple[str, str]] = []
    if results:
        classes = [(r["class_id"], r["class_label"] or r["class_id"]) for r in results[0].by_class]
    n = max(1, len(classes))
    k = max(1, len(results))
    fig, ax = plt.subplots(figsize=(8, 1.5 + 0.22 * n * max(1, k / 2)))
    height = 0.8 / k
    for j, res in enumerate(results):
        values = {r["class_id"]: r[measure] for r in res.by_class}
        ys = [i + j * height for i in range(len(classes))]
        ax.barh(ys, [values.get(c, 0.0) for c, _ in classes], height=height,
                label=os.path.basename(res.kg))
    ax.set_yticks([i + 0.4 - height / 2 for i in range(len(classes))])
    ax.set_yticklabels([f"{label} ({cid})" for cid, label in classes], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    base = os.path.basename(results[0].base_kg) if results else "(no Base KG)"
    ax.set_xlabel(f"recall per class ({measure.replace('_', ' ')}: class and instance pairs)")
    ax.set_title(f"Recall per seed class against {base}")
    if results:
        ax.legend(fontsize=7, loc="lower right")
    ax.grid(axis="x", alpha=0.3)
    try:
        return _save(fig, path)
    finally:
        plt.close(fig)


def plot_precision(rows: Sequence[dict[str, Any]], path: str | os.PathLike) -> Path:
    """Bars of precision per (KG, view) with their 95% Wilson intervals. Writes a PNG."""
    plt = _pyplot()
    rows = [r for r in rows if r.get("judged")]
    fig, ax = plt.subplots(figsize=(8, 1.5 + 0.35 * max(1, len(rows))))
    labels = [f"{r['input_kg_file_name']} / {r['view']}" for r in rows]
    values = [r["precision"] for r in rows]
    lo = [r["precision"] - r["ci_low"] for r in rows]
    hi = [r["ci_high"] - r["precision"] for r in rows]
    ax.barh(range(len(rows)), values, xerr=[lo, hi], capsize=3, color="#4c72b0")
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels(labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_xlabel("LLM-judged precision (95% Wilson interval)")
    ax.grid(axis="x", alpha=0.3)
    try:
        return _save(fig, path)
    finally:
        plt.close(fig)
