"""Extraction benchmark: quality of the extractors on our validation split, the candidate filter,
and speed on CPU.

    python -m bench extract

Inputs (no ``../shared``): ``snapshots/qa-training/val.jsonl`` (772 gold sentences from the
Causal News Corpus and SemEval-2010 Task 8 train files, never trained on; see its SOURCE.md),
``tests/fixtures/extract/wiki_docs.jsonl`` (three Wikipedia articles) and the QA model in
``models/causal-qa`` (trained first with ``causalkg kg train-qa --if-missing`` when missing).

1. Quality. Every validation sentence is a document of one sentence with no concept (so the QA
   extractor asks its unanchored questions, "What is the cause?" then "What did {cause} lead
   to?"). Cause and effect span P/R/F1, exact and token-overlap (``kg.span_metrics``), for
   ``qa`` with the trained model, ``qa`` with a randomly initialised span head on the same
   encoder (the floor), and ``patterns`` (the baseline); also ``qa`` behind the candidate filter.
   Non-causal sentences are in the set: whatever is extracted from them is a false positive.
2. Anchored questions with the gold cause (or effect) as the anchor: how well the model finds
   the other side when it is told one side, as it is on Wikipedia when a sentence mentions the
   document concept.
3. The candidate filter: share of sentences kept; gold causal sentences and relations lost.
4. Speed on CPU (``torch`` threads as set, 2 here): sentences/s per extractor and QA questions/s
   by batch size, on the validation sentences (all read) and on the Wikipedia articles
   (candidates only); the LLM extractor runs against a local scripted server with a fixed
   50 ms latency (which measures our client, not a model). ``requests``: questions asked (qa)
   or chat requests sent (llm).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from bench import ThroughputTable, timed
from causalkg.core.config import load_config
from causalkg.core.tables import render_table

REPO = Path(__file__).resolve().parents[1]
VAL = REPO / "snapshots" / "qa-training" / "val.jsonl"
WIKI = REPO / "tests" / "fixtures" / "extract" / "wiki_docs.jsonl"
UNICAUSAL_BERT_BASE = 52.4  # macro F1, cause-effect span detection, UniCausal (Tan et al., 2023)


def _cfg(**extract):
    """A Config with ``extract.KEY`` set for each KEY (dotted below [extract]: ``qa.model``)."""
    over = {f"extract.{k}": v for k, v in extract.items()}
    over.setdefault("extract.device", "cpu")
    return load_config(search_cwd=False, overrides=over)


def _model_dir() -> Path:
    return REPO / "models" / "causal-qa"


def ensure_model() -> Path:
    """The trained model, trained now when it is missing (the time is printed)."""
    from causalkg.kg.train_qa import train_qa

    cfg = load_config(search_cwd=False)
    cfg = cfg.with_overrides({"extract.qa.train.data": str(REPO / "snapshots" / "qa-training")})
    with timed() as t:
        res = train_qa(cfg, output=_model_dir(), if_missing=True)
    if not res.skipped:
        print(f"(trained {_model_dir()} in {t.seconds:.0f} s)\n")
    return _model_dir()


def random_head_qa(batch_size: int = 32):
    """The floor: the MiniLM encoder with a freshly initialised span head (seed 0)."""
    import torch
    from transformers import AutoModelForQuestionAnswering, AutoTokenizer
    from transformers.utils import logging as hf_logging

    from causalkg.kg.qa_decode import QAModel
    from causalkg.core.models import resolve_encoder_path

    path = resolve_encoder_path("all-MiniLM-L6-v2")
    hf_logging.set_verbosity_error()
    torch.manual_seed(0)
    model = AutoModelForQuestionAnswering.from_pretrained(path).eval()
    return QAModel("random-head", model=model, tokenizer=AutoTokenizer.from_pretrained(path), batch_size=batch_size)


def val_documents(segmenter):
    """(Document, gold pairs) per validation sentence: one sentence, its cue matches, no concept."""
    from causalkg.kg.extractors import Document
    from causalkg.kg.qa_data import read_gold
    from causalkg.kg.sentences import Sentence

    out = []
    for rec in read_gold(VAL):
        text = rec["text"]
        cues = segmenter.cue_matcher.find(segmenter.nlp.make_doc(text))
        sent = Sentence(text=text, start=0, end=len(text), cues=cues)
        gold = [(r["cause"]["text"], r["effect"]["text"]) for r in rec["relations"]]
        out.append((Document(rec["id"], text, [sent]), gold, rec))
    return out


def score(extractor, items) -> tuple[dict, float]:
    docs = [d for d, _, _ in items]
    with timed() as t:
        recs = extractor.extract(docs)
    return score_records(recs, items), t.seconds


def score_records(recs, items) -> dict:
    """The cause/effect span scores of extraction records against the items' gold pairs."""
    from causalkg.kg.span_metrics import PairScores

    by_doc: dict[str, list] = {}
    for r in recs:
        by_doc.setdefault(r["doc_id"], []).append((r["cause"]["text"], r["effect"]["text"]))
    s = PairScores()
    for doc, gold, _ in items:
        s.add(by_doc.get(doc.id, []), gold)
    return s.table_row()


def bench_quality(items, model_dir):
    from causalkg.kg.extractors import create_extractor
    from causalkg.kg.extractors.qa import QAExtractor

    rows = []
    trained = QAExtractor.from_config(_cfg(**{"qa.model": str(model_dir)}, candidates_only=False))
    row, secs = score(trained, items)
    rows.append({"extractor": "qa, trained (models/causal-qa)", **row, "s": round(secs, 1)})
    filt = QAExtractor.from_config(_cfg(**{"qa.model": str(model_dir)}, candidates_only=True), qa_model=trained.qa)
    row, secs = score(filt, items)
    rows.append({"extractor": "qa, trained, candidate filter on", **row, "s": round(secs, 1)})
    # The floor answers every question (no thresholds): what random spans score.
    floor = QAExtractor.from_config(_cfg(**{"qa.model": "random-head", "qa.min_score": 0.0, "qa.null_threshold": -1e9}, candidates_only=False),
                        qa_model=random_head_qa())
    row, secs = score(floor, items)
    rows.append({"extractor": "qa, random span head, no thresholds (floor)", **row, "s": round(secs, 1)})
    pat = create_extractor("patterns", _cfg(candidates_only=False))
    row, secs = score(pat, items)
    rows.append({"extractor": "patterns (baseline)", **row, "s": round(secs, 1)})
    n_gold = sum(len(g) for _, g, _ in items)
    print(f"### Cause and effect spans on the validation split ({len(items)} sentences, {n_gold} gold pairs)\n")
    cols = ["extractor", "pred", "gold", "cause P/R/F1 exact", "effect P/R/F1 exact", "cause P/R/F1 overlap",
            "effect P/R/F1 overlap", "macro F1 exact", "macro F1 overlap", "s"]
    print(render_table(rows, cols, "md", floatfmt=".1f"))
    print(f"\nReference point: BERT-base on cause-effect span detection in UniCausal (Tan et al., 2023): "
          f"{UNICAUSAL_BERT_BASE}% macro F1 (token-level, on its own test sets).\n")
    return trained, floor


def bench_anchored(items, trained, floor):
    """Given one gold side as the anchor, find the other (anchored templates, causal sentences)."""
    from causalkg.kg.span_metrics import exact, token_prf

    rows = []
    for name, ext in (("qa, trained", trained), ("qa, random span head", floor)):
        for tpl in ext.templates.anchored:
            qs, ctx, gold = [], [], []
            for doc, pairs, rec in items:
                for cause, effect in pairs:
                    anchor, answer = (effect, cause) if tpl.answer == "cause" else (cause, effect)
                    qs.append(tpl.ask(anchor))
                    ctx.append(doc.text)
                    gold.append(answer)
            answers = ext.qa.answer(qs, ctx)
            n = len(gold)
            kept = [(a, g) for a, g in zip(answers, gold) if ext._accept(a)]
            em = sum(exact(a.text, g) for a, g in kept)
            f1 = sum(token_prf(a.text, g)[2] for a, g in kept)
            p_em = em / len(kept) if kept else 0.0
            rows.append({"model": name, "question": tpl.template, "answers": tpl.answer, "asked": n,
                         "answered": len(kept), "exact P/R": f"{100 * p_em:.1f}/{100 * em / n:.1f}",
                         "overlap F1 of answered": round(100 * f1 / len(kept), 1) if kept else 0.0,
                         "overlap F1 of all": round(100 * f1 / n, 1)})
    print("### Anchored questions, the gold cause or effect as the anchor (causal validation sentences)\n")
    print(render_table(rows, None, "md", floatfmt=".1f"))
    print()


def bench_filter(items, segmenter):
    from causalkg.kg.extract import prepare

    n = len(items)
    kept = [(d, g, r) for d, g, r in items if d.sentences[0].is_candidate]
    causal = [x for x in items if x[1]]
    causal_kept = [x for x in kept if x[1]]
    rels = sum(len(g) for _, g, _ in items)
    rels_kept = sum(len(g) for _, g, _ in kept)
    rows = [{"input": "validation split (one sentence per record)", "sentences": n, "kept": len(kept),
             "kept %": round(100 * len(kept) / n, 1),
             "gold causal sentences lost": f"{len(causal) - len(causal_kept)} of {len(causal)} "
                                            f"({100 * (len(causal) - len(causal_kept)) / len(causal):.1f}%)",
             "gold pairs lost": f"{rels - rels_kept} of {rels} ({100 * (rels - rels_kept) / rels:.1f}%)"}]
    for src in ("cnc", "semeval"):
        sub = [x for x in items if x[2]["source"] == src]
        sub_c = [x for x in sub if x[1]]
        if not sub or not sub_c:
            continue
        lost = [x for x in sub_c if not x[0].sentences[0].is_candidate]
        rows.append({"input": f"  of which {src}", "sentences": len(sub),
                     "kept": sum(1 for x in sub if x[0].sentences[0].is_candidate),
                     "kept %": round(100 * sum(1 for x in sub if x[0].sentences[0].is_candidate) / len(sub), 1),
                     "gold causal sentences lost": f"{len(lost)} of {len(sub_c)} ({100 * len(lost) / len(sub_c):.1f}%)",
                     "gold pairs lost": ""})
    docs = [prepare(json.loads(l), segmenter) for l in WIKI.read_text(encoding="utf-8").splitlines()]
    ns = sum(len(d.sentences) for d in docs)
    nk = sum(1 for d in docs for s in d.sentences if s.is_candidate)
    ncue = sum(1 for d in docs for s in d.sentences if s.cues)
    rows.append({"input": "Wikipedia fixture (3 articles)", "sentences": ns, "kept": nk,
                 "kept %": round(100 * nk / ns, 1), "gold causal sentences lost": "(no gold)",
                 "gold pairs lost": f"cue: {ncue}, concept mention: {nk - ncue} more"})
    print("### The candidate filter (a causal cue, or a mention of the document concept)\n")
    print(render_table(rows, None, "md", floatfmt=".1f"))
    print()
    return docs


def bench_speed(items, docs, model_dir):
    """Speed of each extractor over the validation sentences (all read: no filter), and the QA
    batch size; then the three Wikipedia articles, candidate sentences only."""
    import torch

    from causalkg.core.llm import ChatClient
    from causalkg.testing.openai_server import OpenAIServer
    from causalkg.kg.extractors import create_extractor
    from causalkg.kg.extractors.llm import LLMExtractor
    from causalkg.kg.extractors.qa import QAExtractor

    val_docs = [d for d, _, _ in items]
    threads = torch.get_num_threads()
    for label, inputs, only in (("validation sentences, all read", val_docs, False),
                                ("candidate sentences of 3 Wikipedia articles", docs, True)):
        n = sum(1 for d in inputs for s in d.sentences if s.is_candidate or not only)
        sent_table = ThroughputTable(f"Speed on CPU ({threads} torch threads): {n} {label}", unit="sentences")
        q_table = ThroughputTable(f"QA questions per second by batch size: {label}", unit="questions")
        pat = create_extractor("patterns", _cfg(candidates_only=only))
        with timed() as t:
            pat.extract(inputs)
        sent_table.add("patterns", n, t.seconds, baseline=True, requests=0)
        qa_model = None
        for bs in (1, 8, 32, 64):
            ext = QAExtractor.from_config(_cfg(**{"qa.model": str(model_dir), "qa.batch_size": bs}, candidates_only=only), qa_model=qa_model)
            qa_model = ext.qa
            qa_model.batch_size = bs
            before = qa_model.features
            with timed() as t:
                ext.extract(inputs)
            st = ext.stats()
            sent_table.add(f"qa, batch {bs}", n, t.seconds, requests=st["questions"])
            q_table.add(f"batch {bs}", st["unique_questions"], t.seconds, baseline=(bs == 1),
                        features=qa_model.features - before, extractions=st["extractions"])
        with OpenAIServer(lambda body: '{"relations": []}', latency=0.05) as server:
            cfg = load_config(search_cwd=False, overrides={"llm.base_url": server.base_url,
                                                           "extract.candidates_only": only})
            llm = LLMExtractor.from_config(cfg, client=ChatClient("scripted", base_url=server.base_url, concurrency=8, cache=None))
            with timed() as t:
                llm.extract(inputs)
            sent_table.add("llm (local scripted server, 50 ms/answer, 8 in flight)", n, t.seconds,
                           requests=server.chat_requests)
        sent_table.print()
        q_table.print()


def main() -> None:
    import torch

    from causalkg.kg.extract import make_segmenter

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if not sys.stderr.isatty():
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")  # no "Loading weights" bars in logs
    torch.set_num_threads(min(2, os.cpu_count() or 1))
    model_dir = ensure_model()
    man = json.loads((model_dir / "manifest.json").read_text())
    v = man.get("validation", {})
    print(f"QA model: {model_dir} (trained {man['training']['steps']} steps in {man['timings_s'].get('train', 0):.0f} s; "
          f"validation SQuAD-2.0 F1 {v.get('at_tuned_threshold', {}).get('f1')} at no-answer threshold "
          f"{v.get('null_threshold')})\n")
    cfg = _cfg()
    segmenter = make_segmenter(cfg)
    items = val_documents(segmenter)
    trained, floor = bench_quality(items, model_dir)
    bench_anchored([x for x in items if x[1]], trained, floor)
    docs = bench_filter(items, segmenter)
    bench_speed(items, docs, model_dir)


if __name__ == "__main__":
    main()
