#!/usr/bin/env python
"""Derive the QA training snapshot and the CNC cue lexicon from the raw causal datasets.

Reads (once, by the maintainers; a fresh clone never needs to run this):
  <source>/causal-news-corpus/train_subtask1.csv, train_subtask2.csv   (CC0 1.0)
  <source>/semeval2010-task8/TRAIN_FILE.TXT                            (CC BY 3.0)
Writes:
  snapshots/qa-training/train.jsonl, val.jsonl, test.jsonl   gold sentences (kg.qa_data), split
      by document; test.jsonl is held out of every model's training and selection (bench only)
  snapshots/qa-training/stats.json               counts and SHA-256 of the inputs and outputs
  kg/lexicon/cues_cnc.tsv                        signal phrases of the CNC train split

    python scripts/build_qa_training_set.py --source ../shared/data
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
from causalkg.kg import cues, qa_data  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--source", default=str(REPO.parent / "shared" / "data"), help="folder of the raw datasets")
    ap.add_argument("--out", default=str(REPO / "snapshots" / "qa-training"))
    ap.add_argument("--cues", default=str(cues.CNC_CUES))
    ap.add_argument("--val-fraction", type=float, default=0.15)
    args = ap.parse_args(argv)

    src = Path(args.source)
    s1 = src / "causal-news-corpus" / "train_subtask1.csv"
    s2 = src / "causal-news-corpus" / "train_subtask2.csv"
    se = src / "semeval2010-task8" / "TRAIN_FILE.TXT"
    records = qa_data.read_cnc(s1, s2) + qa_data.read_semeval(se)
    records.sort(key=lambda r: r["id"])
    train, val, test = qa_data.split_three(records, args.val_fraction)
    out = Path(args.out)

    def counts(recs):
        return {
            "sentences": len(recs),
            "causal": sum(r["causal"] for r in recs),
            "relations": sum(len(r["relations"]) for r in recs),
            "by_source": {s: sum(r["source"] == s for r in recs) for s in ("cnc", "semeval")},
        }

    splits = qa_data.write_splits(out, {"train": train, "val": val, "test": test}, counts)

    import spacy

    nlp = spacy.blank("en")
    rows = qa_data_rows = cues.derive_cues(train, nlp)
    header = (
        "Causal cue phrases derived from the <SIG0> signal spans of the Causal News Corpus V2\n"
        "train split used by causalkg (train_subtask2.csv; https://github.com/tanfiona/CausalNewsCorpus,\n"
        "commit 84b5c7abe69a62668143d4a55ccc53cba1399728), licence CC0 1.0.\n"
        "count: times the phrase is a signal; sentences: CNC train-split sentences (subtask 1) containing it;\n"
        "precision: share of those labelled causal. Made by scripts/build_qa_training_set.py; the\n"
        f"validation documents ({args.val_fraction:.0%} of CNC, by document) are left out."
    )
    cues.write_derived(args.cues, rows, header)

    stats = {
        "val_fraction": args.val_fraction,
        "inputs": {p.name: file_sha256(p) for p in (s1, s2, se)},
        **splits,
        "cues_cnc": {"phrases": len(qa_data_rows), "sha256": file_sha256(args.cues)},
    }
    write_json(out / "stats.json", stats)
    print(json.dumps(stats, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
