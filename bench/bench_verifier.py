"""The learned pair verifier (``kg.verifier``) beside the hand rules of ``kg.polarity``.

    python -m bench verifier

Three measurements, each with the rules as the peer in the same run:

1. **Its own held-out test split** (``snapshots/verifier-training/test.jsonl``: CNC pairs as
   written and swapped, CNC non-causal sentences read around a connective, SemEval-2010 Task 8
   pairs; never trained or selected on): accuracy, macro F1 and per-class F1 of the verifier at
   its validation-tuned threshold, of its argmax, and of the hand rules read as a classifier
   (``reversed`` flag -> reversed, any other flag of ``kg.drop`` -> not causal, else causal).
2. **Pair F1 on the held-out news sentences** (the CNC sentences of
   ``snapshots/qa-training/test.jsonl``, as ``bench/bench_quality.py``): the pairs ``kg extract``
   gives, kept as they are, after the rules (``kg.drop``), after the verifier (not causal
   dropped, reversed flipped, or dropped), after both, and after the verifier with each rule
   left out in turn. Rows for every extractor whose models are there: ``patterns`` (no model)
   always; the span tagger behind the cue gate when ``models/causal-tagger`` exists; the default
   QA extractor with the learned gate when ``models/causal-qa`` and ``models/causal-gate`` exist
   (``make kg`` trains them).
3. **The judged evidence of the snapshot KG** (``tests/fixtures/judged/judgements.jsonl``: the
   prose evidence items of the default and the permissive snapshot KGs, each read by hand with the
   rubric of ``kg.judged``): which items each filter keeps, the share of them supported, and
   the edges (distinct cause -> effect pairs) with a kept and with a supported kept item. A
   reversed verdict with ``flip`` moves the item to the opposite edge, which was not judged: it
   is counted apart.

The verifier is ``models/causal-verifier`` (``causalkg kg train-verifier``), trained now when
missing; it runs on ONNX Runtime (``kg.verifier.backend`` auto).
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from bench import timed
from causalkg.core.config import load_config
from causalkg.core.tables import render_table

REPO = Path(__file__).resolve().parents[1]
TEST = REPO / "snapshots" / "verifier-training" / "test.jsonl"
NEWS = REPO / "snapshots" / "qa-training" / "test.jsonl"
JUDGED = REPO / "tests" / "fixtures" / "judged" / "judgements.jsonl"


def rule_label(flags: Sequence[str], drop: Sequence[str]) -> int:
    """The hand rules as a three-class decision (indices of ``kg.verifier.LABELS``)."""
    chosen = [f for f in flags if f in drop]
    if "reversed" in chosen:
        return 1
    return 2 if chosen else 0


def flags_of(text: str, cause: tuple[int, int], effect: tuple[int, int]) -> list[str]:
    from causalkg.kg.polarity import assess

    return assess(text, cause, effect).flags()


def split_figures(verifier: Any, drop: Sequence[str]) -> list[dict[str, Any]]:
    from causalkg.kg.verifier import LABELS, decide, evaluate

    recs = [json.loads(x) for x in TEST.read_text(encoding="utf-8").splitlines()]
    texts = [r["text"] for r in recs]
    causes = [(r["cause"]["start"], r["cause"]["end"]) for r in recs]
    effects = [(r["effect"]["start"], r["effect"]["end"]) for r in recs]
    gold = np.asarray([LABELS.index(r["label"]) for r in recs])
    with timed() as t:
        probs = verifier.probabilities(texts, causes, effects)
    rules = np.asarray([rule_label(flags_of(*a), drop) for a in zip(texts, causes, effects)])
    rows = []
    for name, pred, secs in (
        (f"verifier, threshold {verifier.threshold:.2f} (validation)", decide(probs, verifier.threshold), t.seconds),
        ("verifier, argmax", probs.argmax(axis=1), t.seconds),
        ("hand rules (kg.polarity, kg.drop)", rules, None),
        ("always causal", np.zeros_like(gold), None),
    ):
        for source in ("all", "cnc", "semeval"):
            keep = np.asarray([source == "all" or r["source"] == source for r in recs])
            m = evaluate(pred[keep], gold[keep])
            rows.append({"classifier": name, "pairs": f"{source} {m['pairs']}", "accuracy": m["accuracy"],
                         "macro F1": m["macro_f1"], **{f"F1 {n}": m["per_class"][n]["f1"] for n in LABELS},
                         "pairs/s": (len(recs) / secs) if secs and source == "all" else ""})
    return rows


# --- pair F1 on the held-out news sentences ---------------------------------------------------


def news_records() -> list[dict]:
    out = []
    for line in NEWS.read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        if rec["source"] == "cnc" and rec["causal"] and rec["relations"]:
            out.append(rec)
    return out


def extract_pairs(records: list[dict], workdir: Path, name: str, overrides: dict) -> list[dict]:
    from causalkg.kg.extract import extract

    cfg = load_config(search_cwd=False, overrides={"paths.data": str(workdir / "data"), **overrides})
    from bench.bench_quality import write_sentences

    inp = workdir / "sentences.jsonl"
    if not inp.exists():
        write_sentences(records, workdir)
    out = workdir / f"{name}.jsonl"
    extract(cfg, input=inp, output=out, force=True)
    return [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines() if x.strip()]


def _rel(x: dict) -> tuple[str, tuple[int, int], tuple[int, int]]:
    s0 = x["sentence"]["start"]
    return (x["sentence"]["text"], (x["cause"]["start"] - s0, x["cause"]["end"] - s0),
            (x["effect"]["start"] - s0, x["effect"]["end"] - s0))


def filtered(pairs: list[dict], verdicts: list[str] | None, flags: list[list[str]], drop: Sequence[str],
             reversed_mode: str = "flip") -> dict[str, list[tuple[str, str]]]:
    """The (cause text, effect text) pairs of each sentence left by the rules in ``drop`` and the
    verifier's verdicts (None: no verifier)."""
    by_id: dict[str, list[tuple[str, str]]] = {}
    for i, x in enumerate(pairs):
        if any(f in drop for f in flags[i]):
            continue
        c, e = x["cause"]["text"], x["effect"]["text"]
        if verdicts is not None:
            v = verdicts[i]
            if v == "not_causal" or (v == "reversed" and reversed_mode == "drop"):
                continue
            if v == "reversed" and reversed_mode == "flip":
                c, e = e, c
        by_id.setdefault(x["doc_id"], []).append((c, e))
    return by_id


def pair_rows(label: str, records: list[dict], pairs: list[dict], verifier: Any, drop: Sequence[str]) -> list[dict]:
    from causalkg.kg.span_metrics import PairMatch

    rels = [_rel(x) for x in pairs]
    flags = [flags_of(*r) for r in rels]
    verdicts = [v["verdict"] for v in verifier.judge(*zip(*rels))] if rels else []
    configs: list[tuple[str, list | None, Sequence[str], str]] = [
        ("as extracted", None, [], "flip"),
        ("hand rules (kg.drop)", None, drop, "flip"),
        ("verifier (reversed flipped)", verdicts, [], "flip"),
        ("verifier (reversed dropped)", verdicts, [], "drop"),
        ("verifier (reversed kept: not causal dropped only)", verdicts, [], "keep"),
        ("verifier + hand rules", verdicts, drop, "flip"),
        ("verifier (reversed kept) + hand rules", verdicts, drop, "keep"),
    ]
    configs += [(f"verifier + hand rules without {f}", verdicts, [d for d in drop if d != f], "flip") for f in drop]
    rows = []
    for name, vd, dr, mode in configs:
        by_id = filtered(pairs, vd, flags, dr, mode)
        m = PairMatch()
        for rec in records:
            m.add(by_id.get(rec["id"], []), [(g["cause"]["text"], g["effect"]["text"]) for g in rec["relations"]])
        d = m.as_dict()
        rows.append({"extractor": label, "filter": name, "pred": int(d["pred"]), "matched": int(d["matched"]),
                     "P": d["precision"], "R": d["recall"], "F1": d["f1"]})
    return rows


# --- the judged evidence of the snapshot KG ---------------------------------------------------


def judged_items() -> list[dict]:
    """The prose judgements whose two span texts are found in their sentence, with offsets."""
    from causalkg.kg.judged import load

    out = []
    for j in load(JUDGED).values():
        if j.source != "sentence" or not j.cause_text or not j.effect_text:
            continue
        cs, es = j.sentence.find(j.cause_text), j.sentence.find(j.effect_text)
        if cs < 0 or es < 0:
            continue
        out.append({"edge": (j.cause, j.effect), "text": j.sentence, "cause": (cs, cs + len(j.cause_text)),
                    "effect": (es, es + len(j.effect_text)), "supported": j.supported,
                    "stated_asserted": j.stated and j.asserted})
    return out


def judged_rows(verifier: Any, drop: Sequence[str]) -> list[dict]:
    items = judged_items()
    flags = [flags_of(it["text"], it["cause"], it["effect"]) for it in items]
    verdicts = [v["verdict"] for v in verifier.judge([i["text"] for i in items], [i["cause"] for i in items],
                                                      [i["effect"] for i in items])]
    configs: list[tuple[str, str | None, Sequence[str]]] = [
        ("no filter", None, []), ("hand rules (kg.drop)", None, drop), ("verifier (reversed flipped)", "flip", []),
        ("verifier (reversed kept)", "keep", []), ("verifier + hand rules", "flip", drop),
        ("verifier (reversed kept) + hand rules", "keep", drop)]
    configs += [(f"verifier + hand rules without {f}", "flip", [d for d in drop if d != f]) for f in drop]
    rows = []
    for name, mode, dr in configs:
        kept, moved, moved_sup = [], 0, 0
        for it, fl, v in zip(items, flags, verdicts):
            if any(f in dr for f in fl):
                continue
            if mode and v == "not_causal":
                continue
            if mode == "flip" and v == "reversed":
                moved += 1  # flipped to the opposite edge, which nobody judged
                moved_sup += it["supported"]
                continue
            kept.append(it)
        sup = [it for it in kept if it["supported"]]
        edges = {it["edge"] for it in kept}
        sup_edges = {it["edge"] for it in sup}
        rows.append({"filter": name, "items kept": f"{len(kept)}/{len(items)}", "supported": len(sup),
                     "supported share": len(sup) / len(kept) if kept else 0.0,
                     "stated+asserted share": (sum(it["stated_asserted"] for it in kept) / len(kept)) if kept else 0.0,
                     "edges": len(edges), "supported edges": len(sup_edges),
                     "flipped (unjudged)": moved, "flipped, supported as extracted": moved_sup})
    return rows


def ensure_verifier(cfg: Any) -> None:
    from causalkg.kg.verifier import train_verifier

    with timed() as t:
        res = train_verifier(cfg, if_missing=True)
    if not res.skipped:
        print(f"(trained the pair verifier in {t.seconds:.0f} s)\n")


def main() -> None:
    import torch

    from causalkg.kg.verifier import LABELS, PairVerifier

    cfg = load_config(search_cwd=False)
    ensure_verifier(cfg)
    verifier = PairVerifier.from_config(cfg)
    drop = list(cfg["kg"]["drop"])
    print(f"### The verifier on its held-out test split ({TEST.relative_to(REPO)}; torch threads "
          f"{torch.get_num_threads()}, {os.cpu_count()} CPUs, backend {verifier.describe()['encoder_backend']})\n")
    print(render_table(split_figures(verifier, drop), ["classifier", "pairs", "accuracy", "macro F1",
                                                       *[f"F1 {n}" for n in LABELS], "pairs/s"], "md", floatfmt=".3g"))
    records = news_records()
    runs = [("patterns, cue gate", {"extract.extractor": "patterns", "extract.gate.kind": "cues"})]
    if cfg.path("extract.tagger.model").is_dir():
        runs.insert(0, ("tagger, cue gate", {"extract.extractor": "tagger", "extract.gate.kind": "cues"}))
    if cfg.path("extract.qa.model").is_dir() and cfg.path("extract.gate.model").is_dir():
        runs.insert(0, ("qa, learned gate (default)", {}))
    else:
        print(f"\n(no {cfg.path('extract.qa.model')} or {cfg.path('extract.gate.model')}: the default extractor's "
              "rows need `make kg`'s models)")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for k, (label, over) in enumerate(runs):
            rows += pair_rows(label, records, extract_pairs(records, Path(tmp), f"run{k}", over), verifier, drop)
    n_gold = sum(len(r["relations"]) for r in records)
    print(f"\n### Pair F1 on the held-out news sentences ({len(records)} sentences, {n_gold} gold pairs)\n")
    print(render_table(rows, ["extractor", "filter", "pred", "matched", "P", "R", "F1"], "md", floatfmt=".3g"))
    print(f"\n### The judged prose evidence of the snapshot KG ({JUDGED.relative_to(REPO)})\n")
    print(render_table(judged_rows(verifier, drop), ["filter", "items kept", "supported", "supported share",
                                                     "stated+asserted share", "edges", "supported edges",
                                                     "flipped (unjudged)", "flipped, supported as extracted"], "md",
                       floatfmt=".3g"))


if __name__ == "__main__":
    main()
