"""Choose the QA extractor's decoding settings by end-to-end pair F1 on the validation split.

    python scripts/tune_extract.py                       # the default grid
    python scripts/tune_extract.py --grid '[{"extract.qa.max_causes": 3}]'

Runs the real ``kg extract`` stage (``bench.bench_quality.run``) over the Causal News Corpus
sentences of ``snapshots/qa-training/val.jsonl`` (gold causal sentences with their relations;
the QA model selects its checkpoints on the same split, never on ``test.jsonl``) once per
setting of the grid, each on top of ``causalkg/core/defaults.toml``, and prints pair precision,
recall, F1 and strict F1. It only ever reads the validation split: the test split is what
``python -m bench quality`` reports, so nothing may be chosen on it.

How the defaults were chosen (``docs/extraction.md``, "End-to-end pair F1"): the best
validation F1 among the settings whose validation precision stays >= 0.85, since a KG should
say only what its evidence says.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
VAL = REPO / "snapshots" / "qa-training" / "val.jsonl"

_FIXED = {"extract.qa.null_threshold_from_model": False}
DEFAULT_GRID = [
    {"extract.qa.null_threshold_from_model": True, "extract.qa.max_causes": 1},  # the model's own threshold
    *({**_FIXED, "extract.qa.null_threshold": t, "extract.qa.max_causes": 1} for t in (1.0, 0.0, -1.0, -2.0, -4.0)),
    *({**_FIXED, "extract.qa.null_threshold": -2.0, "extract.qa.max_causes": c, "extract.qa.min_score": m}
      for c in (1, 2, 3) for m in (0.0, 0.01, 0.05)),
    {**_FIXED, "extract.qa.null_threshold": 0.0, "extract.qa.max_causes": 2, "extract.qa.min_score": 0.01},
    {**_FIXED, "extract.qa.null_threshold": -2.0, "extract.qa.max_causes": 2, "extract.qa.max_effects": 2,
     "extract.qa.min_score": 0.01},
]


def validation_records() -> list[dict]:
    sys.path.insert(0, str(REPO))
    from bench.bench_quality import gold_relations

    return gold_relations(VAL)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--grid", help="a JSON list of override dicts (default: the grid in this script)")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(REPO))
    from bench.bench_quality import ensure_models, run_each
    from causalkg.core.tables import render_table

    grid = json.loads(args.grid) if args.grid else DEFAULT_GRID
    if not isinstance(grid, list) or not all(isinstance(g, dict) for g in grid):
        ap.error("--grid takes a JSON list of objects")
    ensure_models()
    records = validation_records()
    rows = []
    for over, r in zip(grid, run_each(records, grid)):
        rows.append({"settings": ", ".join(f"{key.removeprefix('extract.')}={v}" for key, v in over.items()),
                     "pred": int(r["pred"]), "P": r["precision"], "R": r["recall"], "F1": r["f1"],
                     "strict F1": r["strict_f1"]})
        print(json.dumps(over), f"P {r['precision']:.3f} R {r['recall']:.3f} F1 {r['f1']:.3f}", flush=True)
    n_gold = sum(len(r["relations"]) for r in records)
    print(f"\n### Pair F1 on the validation split ({len(records)} CNC sentences, {n_gold} gold pairs)\n")
    print(render_table(rows, ["settings", "pred", "P", "R", "F1", "strict F1"], "md", floatfmt=".3g"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
