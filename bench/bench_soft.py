"""Soft edge measures: throughput of ``evaluation.graph.soft`` against a loop written the way the
soft-measures study computes them, on the same real passages.

Input (no ../shared): the 53 passages of the soft-measures FCM corpus that two sources annotated
(tests/fixtures/soft-measures/double-annotated.csv, CC BY 4.0): one annotation is gold, the other
predicted. The baseline follows the study's ``ScoreCalculator``: per passage and measure it lists
every (predicted, gold) node pair, scores them one call at a time (a fresh ROUGE scorer per call
of the measure, as the study's ``Metrics.compute_rouge`` does), fills the matrices cell by cell,
and reuses the scores across thresholds for the same passage. Ours scores each distinct label
pair once per run, reuses matrices across thresholds, and vectorises the counting. Each row
starts from fresh measure objects, so nothing is cached between rows. Items are passage x
threshold scores.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np

from bench import ThroughputTable, timed
from causalkg.evaluation.graph.graphs import Graph, read_fcm_csv
from causalkg.evaluation.graph.similarity import get_similarity
from causalkg.evaluation.graph.soft import pair_units, score_units

FIXTURE = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "soft-measures" / "double-annotated.csv"
THETAS = (0.2, 0.5, 0.8)


def study_loop(units: list[tuple[str, Graph, Graph]], measure: str, thetas=THETAS) -> list[float]:
    """The study's per-row computation, reference semantics, pair by pair; returns macro F1 per theta."""
    from nltk.translate.bleu_score import sentence_bleu
    from rouge_score import rouge_scorer

    def scores(cands: list[str], refs: list[str]) -> list[float]:
        cand = [c for c in cands for _ in refs]
        ref = [r for _ in cands for r in refs]
        out = []
        if measure == "rouge1":
            scorer = rouge_scorer.RougeScorer(["rouge1"], use_stemmer=True)
            for c, r in zip(cand, ref):
                out.append(scorer.score(r, c)["rouge1"].fmeasure)
        elif measure == "ref-bleu":
            import warnings

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                for c, r in zip(cand, ref):
                    out.append(0.0 if not c.split() else sentence_bleu(r.split(), c))
        else:
            out = [float(c == r) for c, r in zip(cand, ref)]
        return out

    per_theta: dict[float, list[float]] = {t: [] for t in thetas}
    for _, gold, pred in units:
        pe = [(pred.label(e.source), (e.direction or "").strip(), pred.label(e.target)) for e in pred.edges]
        ge = [(gold.label(e.source), (e.direction or "").strip(), gold.label(e.target)) for e in gold.edges]
        ps, pt = list({s for s, _, _ in pe}), list({t for _, _, t in pe})
        gs, gt = list({s for s, _, _ in ge}), list({t for _, _, t in ge})
        src_scores, tgt_scores = scores(ps, gs), scores(pt, gt)
        for theta in thetas:
            ms = np.zeros((len(ps), len(gs)))
            for i in range(len(ps)):
                for j in range(len(gs)):
                    ms[i, j] = src_scores[i * len(gs) + j]
            mt = np.zeros((len(pt), len(gt)))
            for i in range(len(pt)):
                for j in range(len(gt)):
                    mt[i, j] = tgt_scores[i * len(gt) + j]
            mapping: dict[str, list[str]] = {}
            for nodes, golds, m in ((ps, gs, ms >= theta), (pt, gt, mt >= theta)):
                part: dict[str, list[str]] = {}
                for i, n in enumerate(nodes):
                    for j, g in enumerate(golds):
                        if m[i, j]:
                            part.setdefault(n, []).append(g)
                mapping = mapping | part
            matched: list = []
            for s, d, t in pe:
                if s in mapping and t in mapping:
                    for a in mapping[s]:
                        for b in mapping[t]:
                            if (a, d, b) in ge and (a, d, b) not in matched:
                                matched.append((a, d, b))
            tp = len(matched)
            fp, fn = len(pe) - tp, len(ge) - tp
            p = tp / (tp + fp) if tp + fp else 0
            r = tp / (tp + fn) if tp + fn else 0
            per_theta[theta].append(2 * p * r / (p + r) if p + r else 0)
    return [float(np.mean(per_theta[t])) for t in thetas]


def main() -> None:
    repeat = int(os.environ.get("BENCH_SOFT_REPEAT", "3"))
    by_source = read_fcm_csv(FIXTURE)
    pred = by_source.pop("SIFT_data_2024_03")
    gold = {u: g for graphs in by_source.values() for u, g in graphs.items()}
    units, _ = pair_units(gold, pred)
    items = len(units) * len(THETAS) * repeat
    for measure in ("rouge1", "ref-bleu", "verbatim"):
        table = ThroughputTable(f"soft measures, {measure}: {len(units)} real passages x {len(THETAS)} thresholds x {repeat}",
                                unit="scores")
        with timed() as t:
            for _ in range(repeat):
                base = study_loop(units, measure)
        table.add("study-style loop (reference semantics)", items, t.seconds, baseline=True,
                  macro_f1=" / ".join(f"{x:.3f}" for x in base))
        with timed() as t:
            for _ in range(repeat):
                res = score_units(units, get_similarity(measure), THETAS, mode="reference")
        ref = [r.macro()["f1"] for r in res]
        table.add("evaluation.graph.soft, reference mode", items, t.seconds, macro_f1=" / ".join(f"{x:.3f}" for x in ref))
        with timed() as t:
            for _ in range(repeat):
                res = score_units(units, get_similarity(measure), THETAS)
        table.add("evaluation.graph.soft, ours (TP/PP/FP/FN)", items, t.seconds,
                  macro_f1=" / ".join(f"{r.macro()['f1']:.3f}" for r in res))
        table.print()
        assert np.allclose(base, ref), (base, ref)  # the reference mode gives the study's numbers
    table = ThroughputTable(f"soft measures, embedding (offline MiniLM, CPU): {len(units)} passages x {len(THETAS)} thresholds",
                            unit="scores")
    with timed() as t:
        sim = get_similarity("embedding", device="cpu")
    load = t.seconds
    with timed() as t:
        res = score_units(units, sim, THETAS)
    table.add("evaluation.graph.soft, ours (labels embedded once)", len(units) * len(THETAS), t.seconds,
              macro_f1=" / ".join(f"{r.macro()['f1']:.3f}" for r in res), model_load_s=round(load, 2))
    table.print()
    print("(no peer: the study has no embedding measure)\n")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
