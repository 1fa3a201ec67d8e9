"""Shallower QA models beside the shipped one: the encoder cut to its first K transformer layers
(``extract.qa.train.encoder_layers``), measured in one run.

    python -m bench qa_layers

Variants: the QA model of ``extract.qa.model`` (the baseline; six layers) and one model per
depth K of ``BENCH_QA_LAYERS`` (default ``3``), trained now when missing into
``<paths.cache>/qa-layers/L<K>`` (``kg train-qa`` with ``extract.qa.train.encoder_layers = K``,
the other settings the defaults: seeded; bfloat16 autocast where the CPU has it). With
``BENCH_QA_DISTIL=1`` each depth also gets a model distilled from the baseline: its first K
layers and span head fine-tuned (``--base-model`` = ``extract.qa.model``) on the gold spans and the
baseline's span distributions (``extract.qa.train.teacher`` = ``extract.qa.model``), in
``<paths.cache>/qa-layers/L<K>-distilled``; ``BENCH_QA_PLAIN=0`` leaves out the truncated
models trained on the gold spans alone (only the distilled ones beside the baseline). Tables
(``BENCH_QA_LAYERS_PARTS``, default ``validation,quality,split``):

1. ``validation``: the SQuAD 2.0 scores each trainer recorded on its validation questions at its
   tuned no-answer threshold (the same questions for every variant; they chose the checkpoint
   and the threshold, so they are development figures).
2. ``quality``: ``bench quality``'s default row (end-to-end pair F1 of ``kg extract`` on the
   held-out Causal News Corpus sentences, which no QA model trains or selects on) with each model,
   the shipped gate in front.
3. ``split``: an extraction of the sample documents (``bench gate_layers``'s sample and loop:
   sentences, gate, QA, records; model load excluded) with each QA model behind the shipped gate:
   CPU seconds of the loop and of QA, per document, the extractions, and those shared with the
   baseline. The runs take turns after one untimed warm-up document.

CPU seconds are the figures to compare on a shared machine (``time.process_time``).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from bench import timed
from causalkg.core.config import load_config
from causalkg.core.manifest import read_manifest
from causalkg.core.tables import render_table


def variants(cfg) -> list[dict]:
    """The shipped QA model and one trained model per depth (trained now when missing)."""
    from causalkg.kg.train_qa import train_qa

    out = [{"name": "6 layers (shipped; baseline)", "folder": cfg.path("extract.qa.model")}]
    for k in [int(x) for x in os.environ.get("BENCH_QA_LAYERS", "3").split(",") if x.strip()]:
        if os.environ.get("BENCH_QA_PLAIN", "1") != "0":
            folder = cfg.path("paths.cache") / "qa-layers" / f"L{k}"
            over = load_config(search_cwd=False, overrides={"extract.qa.train.encoder_layers": k})
            with timed() as t:
                res = train_qa(over, output=folder, if_missing=True)
            if not res.skipped:
                print(f"(trained the {k}-layer QA model in {t.seconds:.0f} s, {time.process_time():.0f} CPU s so far)\n")
            out.append({"name": f"{k} layers", "folder": folder})
        if os.environ.get("BENCH_QA_DISTIL", "0") == "1":
            folder = cfg.path("paths.cache") / "qa-layers" / f"L{k}-distilled"
            over = load_config(search_cwd=False, overrides={"extract.qa.train.encoder_layers": k,
                                                            "extract.qa.train.teacher": str(cfg.path("extract.qa.model"))})
            with timed() as t:
                res = train_qa(over, output=folder, base_model=str(cfg.get("extract.qa.model")), if_missing=True)
            if not res.skipped:
                print(f"(trained the {k}-layer distilled QA model in {t.seconds:.0f} s)\n")
            out.append({"name": f"{k} layers, distilled from the baseline", "folder": folder})
    return out


def validation_table(vs: list[dict]) -> None:
    rows = []
    for v in vs:
        val = (read_manifest(v["folder"]) or {}).get("validation", {})
        at = val.get("at_tuned_threshold", {})
        rows.append({"QA model": v["name"], "null threshold": val.get("null_threshold"), "F1": at.get("f1"),
                     "exact": at.get("exact"), "has-answer F1": at.get("has_ans_f1"),
                     "no-answer acc": at.get("no_ans_acc"), "questions": int(at.get("questions") or 0)})
    print("### Validation questions (development: they chose each model's checkpoint and threshold)\n")
    print(render_table(rows, None, "md", floatfmt=".2f"))
    print()


def quality_table(cfg, vs: list[dict]) -> None:
    from bench.bench_quality import gold_relations, run_each

    records = gold_relations()
    settings = [{"extract.qa.model": str(v["folder"]), "paths.cache": str(cfg.path("paths.cache"))} for v in vs]
    rows = [{"QA model": v["name"], "pred": int(r["pred"]), "matched": int(r["matched"]), "P": r["precision"],
             "R": r["recall"], "F1": r["f1"], "strict F1": r["strict_f1"]} for v, r in zip(vs, run_each(records, settings))]
    print(f"### Held-out news pair F1 (`bench quality`'s default row, {len(records)} sentences) per QA model\n")
    print(render_table(rows, None, "md", floatfmt=".3f"))
    print()


def split_table(cfg, vs: list[dict]) -> None:
    from bench.bench_gate_layers import sample_docs, split_run
    from causalkg.kg.extractors import create_extractor

    docs, path = sample_docs()
    gate = {"name": "shipped gate", "folder": cfg.path("extract.gate.model"), "int8": False}
    exts = [create_extractor(f"qa:{v['folder']}", cfg) for v in vs]
    split_run(cfg, gate, False, docs[:1], exts[0])  # warm-up, untimed
    results = []
    for v, ext in zip(vs, exts):
        r = split_run(cfg, gate, False, docs, ext)
        results.append(r)
        print(f"({v['name']}: loop {r['loop_cpu']:.1f} CPU s, QA {r['qa_cpu']:.1f}; extractions {r['extractions']})",
              flush=True)
    base = results[0]
    rows = [{"QA model": v["name"], "loop CPU s / doc": r["loop_cpu"] / len(docs), "QA CPU s": r["qa_cpu"],
             "QA CPU ratio": r["qa_cpu"] / base["qa_cpu"], "loop CPU ratio": r["loop_cpu"] / base["loop_cpu"],
             "extractions": r["extractions"], "distinct pairs": len(r["pairs"]),
             "shared with the baseline": len(r["pairs"] & base["pairs"])} for v, r in zip(vs, results)]
    print(f"\n### Extraction of the first {len(docs)} documents of {path} ({base['sentences']} sentences, "
          f"{base['kept']} read by QA): the stage's loop, model load excluded\n")
    print(render_table(rows, None, "md", floatfmt=".3g"))
    print()


def main() -> None:
    cfg = load_config(search_cwd=False)
    parts = set(os.environ.get("BENCH_QA_LAYERS_PARTS", "validation,quality,split").split(","))
    vs = variants(cfg)
    if "validation" in parts:
        validation_table(vs)
    if "quality" in parts:
        quality_table(cfg, vs)
    if "split" in parts:
        split_table(cfg, vs)


if __name__ == "__main__":
    main()
