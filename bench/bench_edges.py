"""Edge quality of the current default KG, from the hand-judged fixture.

    python -m bench edges            # figures of data/kg beside the baseline KG's, the curve
    python -m bench edges --fit      # also refit kg/confidence.py's WEIGHTS on the judged edges
    python bench/bench_edges.py --kg data/other/causal_kg_pairs.jsonl   # another KG

Inputs: ``data/kg/causal_kg_pairs.jsonl`` (the KG of ``make kg``), the judgements
``tests/fixtures/judged/judgements.jsonl`` (keyed by cause QID, effect QID, sentence; rubric in
``kg/judged.py``), the baseline KG's edges ``tests/fixtures/judged/baseline_edges.jsonl`` (the
edges of the default KG before issue 13's filters, judged the same way) and the WikiCausal Base
KG v1 (``snapshots/wikicausal/base-kg-v1.jsonl``) for "confirmed" edges.

Reports, for the baseline and the current KG: edges, judged edges, % supported by their
evidence, % plausible, # supported, # confirmed by the Base KG (and of those, supported); the
precision / size curve over ``kg.min_confidence``; the calibration of the confidence on the
judged edges; and lists the evidence items not judged yet (written to
``data/kg/judge_todo.jsonl`` as templates).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from causalkg.core.tables import render_table

REPO = Path(__file__).resolve().parents[1]
JUDGED = REPO / "tests" / "fixtures" / "judged" / "judgements.jsonl"
BASELINE = REPO / "tests" / "fixtures" / "judged" / "baseline_edges.jsonl"
BASE_KG = REPO / "snapshots" / "wikicausal" / "base-kg-v1.jsonl"


def _edges(path: Path) -> list:
    from causalkg.core.contracts import KGEdge
    from causalkg.core.jsonl import read_jsonl

    return list(read_jsonl(path, KGEdge))


def figures(name, edges, judgements, base):
    from causalkg.kg.judged import report

    r = report(edges, judgements, base)
    return r, {"kg": name, "edges": r.edges, "judged": r.judged_edges,
               "supported %": round(100 * r.supported_share, 1), "plausible %": round(100 * r.plausible_share, 1),
               "supported": r.supported, "confirmed": r.confirmed, "confirmed+supported": r.confirmed_supported}


def curve(edges, rep) -> list[dict]:
    from causalkg.kg.confidence import score_edges

    score_edges(edges)
    rows = []
    for t in (0.0, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9):
        kept = [e for e in edges if (e.confidence or 0) >= t and rep.per_edge[e.edge_id].get("judged")]
        n = len([e for e in edges if (e.confidence or 0) >= t])
        sup = sum(rep.per_edge[e.edge_id]["supported"] for e in kept)
        pl = sum(rep.per_edge[e.edge_id]["plausible"] for e in kept)
        rows.append({"min_confidence": t, "edges": n, "judged": len(kept), "supported": sup,
                     "precision (supported %)": round(100 * sup / len(kept), 1) if kept else None,
                     "plausible %": round(100 * pl / len(kept), 1) if kept else None})
    return rows


def judged_rows(path: Path, judgements, base=None) -> dict[str, tuple[dict[str, float], int, int]]:
    """(confidence features, supported, plausible) of every judged edge of the KG at ``path``,
    by edge id."""
    from causalkg.kg.confidence import features
    from causalkg.kg.judged import report

    edges = _edges(path)
    rep = report(edges, judgements, base)
    by_id = {e.edge_id: e for e in edges}
    return {e.edge_id: (features(e, by_id), int(rep.per_edge[e.edge_id]["supported"]),
                        int(rep.per_edge[e.edge_id]["plausible"]))
            for e in edges if rep.per_edge[e.edge_id].get("judged")}


def judged_pool(kg_path: Path) -> list[tuple[dict[str, float], int, int]]:
    """(features, supported, plausible) of every judged edge of the KG at ``kg_path`` and of the baseline
    KG, once per edge id (the current KG's first): what ``--fit`` fits on."""
    from causalkg.kg.judged import base_kg_pairs, load

    judgements = load(JUDGED)
    base = base_kg_pairs(BASE_KG)
    pool: dict[str, tuple[dict[str, float], int, int]] = {}
    for path in (kg_path, BASELINE):
        if path.is_file():
            for eid, row in judged_rows(path, judgements, base).items():
                pool.setdefault(eid, row)
    return list(pool.values())


def main(argv: list[str] | None = None) -> None:
    from causalkg.kg.confidence import FEATURES, calibration, fit
    from causalkg.kg.judged import base_kg_pairs, load, todo_records

    argv = sys.argv[1:] if argv is None else argv
    kg_path = REPO / "data" / "kg" / "causal_kg_pairs.jsonl"
    if "--kg" in argv:
        kg_path = Path(argv[argv.index("--kg") + 1])
    judgements = load(JUDGED)
    base = base_kg_pairs(BASE_KG)
    rows = []
    if BASELINE.is_file():
        _, row = figures("baseline: same mentions, settings before issue 13", _edges(BASELINE), judgements, base)
        rows.append(row)
    if not kg_path.is_file():
        print(f"no KG at {kg_path}: run make kg first\n")
        print(render_table(rows, list(rows[0]) if rows else ["kg"], "md", floatfmt=".4g"))
        return
    edges = _edges(kg_path)
    rep, row = figures("current data/kg", edges, judgements, base)
    rows.append(row)
    print(f"{len(judgements)} judged evidence items in {JUDGED.relative_to(REPO)}\n")
    print("### Edges supported by their evidence (targets: >= 80% supported, >= 90% plausible, >= 40 supported, >= 10 confirmed)\n")
    print(render_table(rows, list(rows[0]), "md", floatfmt=".4g"))
    print("\n### Precision / size over kg.min_confidence (current KG, judged edges)\n")
    cv = curve(edges, rep)
    print(render_table(cv, list(cv[0]), "md", floatfmt=".4g"))
    if BASELINE.is_file():
        from causalkg.kg.judged import report as _report

        bl = _edges(BASELINE)
        cvb = curve(bl, _report(bl, judgements, base))
        print("\nThe same curve for the baseline KG (confidence alone, without the assertion and sense checks):\n")
        print(render_table(cvb, list(cvb[0]), "md", floatfmt=".4g"))
    judged = [e for e in edges if rep.per_edge[e.edge_id].get("judged")]
    by_id = {e.edge_id: e for e in edges}
    if judged:
        probs = [e.confidence for e in judged]
        labels = [int(rep.per_edge[e.edge_id]["supported"]) for e in judged]
        cal = [{"confidence bin": f"{lo:.1f}-{hi:.1f}", "mean confidence": round(m, 3), "supported rate": round(o, 3),
                "edges": n} for lo, hi, m, o, n in calibration(probs, labels)]
        print("\n### Calibration of the confidence on the judged edges\n")
        print(render_table(cal, list(cal[0]), "md", floatfmt=".4g"))
        if "--fit" in argv:
            pool = judged_pool(kg_path)
            w = fit([f for f, _, _ in pool], [s for _, s, _ in pool], l2=5.0)
            print(f"\nrefitted on {len(pool)} judged edges (features {', '.join(FEATURES)}):\nWEIGHTS = {w}\n")
    if rep.unjudged:
        # beside the KG's documented paths, never inside a published generation (data/kg/current)
        folder = kg_path.resolve().parent
        if folder.parent.name == "generations" or kg_path.parent.name == "current":
            folder = kg_path.parent.parent
        todo = folder / "judge_todo.jsonl"
        todo.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in todo_records(rep.unjudged)),
                        encoding="utf-8")
        print(f"\n{len(rep.unjudged)} evidence items not judged yet (templates in {todo}):")
        for it in rep.unjudged[:40]:
            print(f"- {it.cause_label} -> {it.effect_label}: [{it.cause_text}] -> [{it.effect_text}] in: {it.sentence[:160]}")
    else:
        print("\nevery evidence item of the current KG is judged")


if __name__ == "__main__":
    main()
