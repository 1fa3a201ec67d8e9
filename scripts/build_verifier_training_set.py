#!/usr/bin/env python
"""Derive the pair-verifier training snapshot (a sentence, a cause span, an effect span, and
whether the sentence states that pair as written, reversed, or not at all) from the raw datasets.

Reads (once, by the maintainers; a fresh clone never needs to run this):
  <source>/causal-news-corpus/train_subtask1.csv   (CC0 1.0): the non-causal sentences (label 0)
  <source>/causal-news-corpus/train_subtask2.csv   (CC0 1.0): the cause/effect spans of causal sentences
  <source>/semeval2010-task8/TRAIN_FILE.TXT        (CC BY 3.0): every sentence with its two nominals
Writes:
  snapshots/verifier-training/train.jsonl, val.jsonl, test.jsonl   one pair a line:
      {"id", "source", "group", "text", "cause": {"text","start","end"}, "effect": {...},
       "label": "causal" | "reversed" | "not_causal", "kind"}
      split by document exactly as snapshots/qa-training (kg.qa_data.split_three), so the
      held-out news sentences of bench/bench_quality.py stay in test.jsonl
  snapshots/verifier-training/stats.json   counts and SHA-256 of the inputs and outputs

    python scripts/build_verifier_training_set.py --source ../shared/data
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import shutil
import sys
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from causalkg.core.jsonl import write_json  # noqa: E402
from causalkg.core.manifest import file_sha256  # noqa: E402
from causalkg.kg import qa_data  # noqa: E402

# Connectives that often carry a cause but here stand in sentences annotated as not causal:
# an extractor reading such a sentence proposes the words on either side as a pair. "Backward"
# ones put the cause on the right ("X after Y"), the others on the left ("X led Y").
BACKWARD = ("after", "since", "following", "because", "from", "by", "amid", "over", "as")
FORWARD = ("to", "led", "leading", "caused", "causing", "left", "sparked", "prompted", "forced", "triggered",
           "resulted", "and", "before", "during", "when", "while", "then", "with")
_WORD = re.compile(r"\S+")
_PUNCT = set(",;:.!?()\"“”‘’'")
SPAN_WORDS = 7  # at most this many words on each side of the connective


def _hash(s: str) -> int:
    return int.from_bytes(hashlib.sha256(s.encode()).digest()[:8], "big")


def _span(text: str, start: int, end: int) -> dict:
    return {"text": text[start:end], "start": start, "end": end}


def pseudo_pair(text: str, key: str) -> tuple[dict, dict, str] | None:
    """The (cause, effect, connective) an extractor would propose in a sentence that states no
    cause: the words of the clause on either side of a causal-looking connective (the first in
    the sentence), or of the middle word when there is none."""
    words = [(m.start(), m.end(), m.group()) for m in _WORD.finditer(text)]
    if len(words) < 5:
        return None
    idx, conn = None, "none"
    for i, (_, _, w) in enumerate(words[1:-1], start=1):
        lw = w.lower()
        if lw in BACKWARD or lw in FORWARD:
            idx, conn = i, lw
            break
    if idx is None:
        idx = len(words) // 2
    left = []
    for j in range(idx - 1, max(-1, idx - 1 - SPAN_WORDS), -1):
        if words[j][2] in _PUNCT:
            break
        left.insert(0, words[j])
    right = []
    for j in range(idx + 1, min(len(words), idx + 1 + SPAN_WORDS)):
        if words[j][2] in _PUNCT:
            break
        right.append(words[j])
    if not left or not right:
        return None
    lspan, rspan = _span(text, left[0][0], left[-1][1]), _span(text, right[0][0], right[-1][1])
    if conn in BACKWARD:
        return rspan, lspan, conn
    if conn == "none" and _hash(key) % 2:
        return rspan, lspan, conn
    return lspan, rspan, conn


def read_semeval_every_relation(path: Path) -> list[dict]:
    """Every SemEval-2010 Task 8 training sentence with its two nominals (as marked, untrimmed)
    and relation label (``kg.qa_data.read_semeval_sentences``)."""
    return [{"sid": r["sid"], "text": r["text"], "label": r["label"], "e1": _span(r["text"], *r["spans"]["e1"]),
             "e2": _span(r["text"], *r["spans"]["e2"])} for r in qa_data.read_semeval_sentences(path)]


def examples(src: Path) -> list[dict]:
    s1 = src / "causal-news-corpus" / "train_subtask1.csv"
    s2 = src / "causal-news-corpus" / "train_subtask2.csv"
    se = src / "semeval2010-task8" / "TRAIN_FILE.TXT"
    out: list[dict] = []

    def add(rid, source, group, text, cause, effect, label, kind):
        out.append({"id": rid, "source": source, "group": group, "text": text, "cause": cause, "effect": effect,
                    "label": label, "kind": kind})

    # CNC: each annotated relation as written, and swapped (the direction negative)
    for rec in qa_data.read_cnc(s1, s2):
        if rec["causal"]:
            for k, rel in enumerate(rec["relations"]):
                c, e = rel["cause"], rel["effect"]
                add(f"{rec['id']}:{k}", "cnc", rec["group"], rec["text"], c, e, "causal", "cnc-relation")
                add(f"{rec['id']}:{k}:swapped", "cnc", rec["group"], rec["text"], e, c, "reversed", "cnc-swapped")
        else:
            found = pseudo_pair(rec["text"], rec["id"])
            if found:
                c, e, conn = found
                add(f"{rec['id']}:pseudo", "cnc", rec["group"], rec["text"], c, e, "not_causal",
                    f"cnc-noncausal:{conn}")
    # SemEval: Cause-Effect by direction, both ways; the nine other relations and Other as hard negatives
    for r in read_semeval_every_relation(se):
        rid, group = f"semeval:{r['sid']}", f"semeval:{r['sid']}"
        e1, e2 = r["e1"], r["e2"]
        if r["label"].startswith("Cause-Effect"):
            c, e = (e1, e2) if r["label"] == "Cause-Effect(e1,e2)" else (e2, e1)
            add(rid, "semeval", group, r["text"], c, e, "causal", "semeval:Cause-Effect")
            add(f"{rid}:swapped", "semeval", group, r["text"], e, c, "reversed", "semeval:Cause-Effect-swapped")
        else:
            c, e = (e1, e2) if _hash(rid) % 2 == 0 else (e2, e1)
            add(rid, "semeval", group, r["text"], c, e, "not_causal", f"semeval:{r['label'].split('(')[0]}")
    out.sort(key=lambda r: r["id"])
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--source", default=str(REPO.parent / "shared" / "data"), help="folder of the raw datasets")
    ap.add_argument("--out", default=str(REPO / "snapshots" / "verifier-training"))
    ap.add_argument("--val-fraction", type=float, default=0.15)
    args = ap.parse_args(argv)

    src = Path(args.source)
    inputs = [src / "causal-news-corpus" / "train_subtask1.csv", src / "causal-news-corpus" / "train_subtask2.csv",
              src / "semeval2010-task8" / "TRAIN_FILE.TXT"]
    train, val, test = qa_data.split_three(examples(src), args.val_fraction)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for lic in ("LICENSE-CNC-CC0.txt", "LICENSE-SemEval2010-Task8.txt"):
        shutil.copyfile(REPO / "snapshots" / "qa-training" / lic, out / lic)

    def counts(recs):
        return {"pairs": len(recs), "sentences": len({r["id"].split(":swapped")[0].rsplit(":", 1)[0] if r["source"] == "cnc"
                                                       else r["group"] for r in recs}),
                "by_label": dict(sorted(Counter(r["label"] for r in recs).items())),
                "by_source_label": dict(sorted(Counter(f"{r['source']}:{r['label']}" for r in recs).items())),
                "by_kind": dict(sorted(Counter(r["kind"] for r in recs).items()))}

    stats = {
        "val_fraction": args.val_fraction,
        "test_share_of_val": 0.5,
        "inputs": {p.name: file_sha256(p) for p in inputs},
        **qa_data.write_splits(out, {"train": train, "val": val, "test": test}, counts),
    }
    write_json(out / "stats.json", stats)
    print(json.dumps({k: (v if not isinstance(v, dict) or "by_label" not in v else
                          {"pairs": v["pairs"], "by_label": v["by_label"]}) for k, v in stats.items()}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
