#!/usr/bin/env python
"""Derive the gate training snapshot (causal vs not, one sentence a line) from the raw datasets.

Reads (once, by the maintainers; a fresh clone never needs to run this):
  <source>/causal-news-corpus/train_subtask1.csv   (CC0 1.0): every sentence, label 1 = causal
  <source>/semeval2010-task8/TRAIN_FILE.TXT        (CC BY 3.0): every sentence; causal when its
                                                   relation is Cause-Effect(e1,e2) or (e2,e1)
Writes:
  snapshots/gate-training/train.jsonl, val.jsonl, test.jsonl   {"id", "source", "group", "text",
      "causal", "label"}, split by document exactly as snapshots/qa-training (kg.qa_data.split_three)
  snapshots/gate-training/stats.json   counts and SHA-256 of the inputs and outputs

    python scripts/build_gate_training_set.py --source ../shared/data
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from causalkg.core.jsonl import write_json  # noqa: E402
from causalkg.core.manifest import file_sha256  # noqa: E402
from causalkg.kg import qa_data  # noqa: E402


def read_cnc_subtask1(path: Path) -> list[dict]:
    """Every CNC subtask 1 sentence, causal when labelled "1" (``kg.qa_data.read_cnc_subtask1``)."""
    return [{"id": r["id"], "source": "cnc", "group": r["group"], "text": r["text"], "causal": r["label"] == "1",
             "label": r["label"]} for r in qa_data.read_cnc_subtask1(path)]


def read_semeval_all(path: Path) -> list[dict]:
    """Every SemEval-2010 Task 8 sentence, causal when its relation is Cause-Effect either way
    (``kg.qa_data.read_semeval_sentences``)."""
    return [{"id": f"semeval:{r['sid']}", "source": "semeval", "group": f"semeval:{r['sid']}", "text": r["text"],
             "causal": r["label"].startswith("Cause-Effect"), "label": r["label"]}
            for r in qa_data.read_semeval_sentences(path)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--source", default=str(REPO.parent / "shared" / "data"), help="folder of the raw datasets")
    ap.add_argument("--out", default=str(REPO / "snapshots" / "gate-training"))
    ap.add_argument("--val-fraction", type=float, default=0.15)
    args = ap.parse_args(argv)

    src = Path(args.source)
    s1 = src / "causal-news-corpus" / "train_subtask1.csv"
    se = src / "semeval2010-task8" / "TRAIN_FILE.TXT"
    records = read_cnc_subtask1(s1) + read_semeval_all(se)
    records.sort(key=lambda r: r["id"])
    train, val, test = qa_data.split_three(records, args.val_fraction)

    def counts(recs):
        return {
            "sentences": len(recs),
            "causal": sum(r["causal"] for r in recs),
            "by_source": {s: {"sentences": sum(r["source"] == s for r in recs),
                              "causal": sum(r["source"] == s and r["causal"] for r in recs)}
                          for s in ("cnc", "semeval")},
        }

    stats = {
        "val_fraction": args.val_fraction,
        "test_share_of_val": 0.5,
        "inputs": {p.name: file_sha256(p) for p in (s1, se)},
        **qa_data.write_splits(args.out, {"train": train, "val": val, "test": test}, counts),
    }
    write_json(Path(args.out) / "stats.json", stats)
    print(json.dumps(stats, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
