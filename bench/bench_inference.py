"""Model inference on CPU: PyTorch against ONNX Runtime, float32 against int8 (dynamic
quantization, one scale per weight matrix or per output channel) and bfloat16, same model, same
inputs, same run; the baseline is PyTorch float32 (the extractor's runtime before
``extract.backend``). The same for the span tagger (``extract.extractor = "tagger"``), whose
formats follow ``extract.dtype`` too.

    python -m bench inference

Input: the validation split ``snapshots/qa-training/val.jsonl`` (CNC and SemEval sentences never
trained on), every sentence read (no candidate filter): the QA extractor asks its unanchored
questions with the trained model in ``models/causal-qa``, the tagger tags with
``models/causal-tagger`` (each trained first when missing).

Every format is loaded and warmed on the whole input first (first-call allocations and each
shape's kernels are not a format's cost); then ``BENCH_INFERENCE_ROUNDS`` rounds (default 3)
time every format in turn, so a slow spell of a shared machine falls on all of them, and the
table gives the median round. Prints, per format: features (questions and their overflow
windows; tagger passes) per second, forward passes, CPU seconds and their ratio to float32
PyTorch's, the cause/effect macro F1 (exact and token-overlap) and its difference to float32,
and how many extracted pairs differ. The issue's bar is 3x the float32 rate at +-0.5 F1.
"""

from __future__ import annotations

import os

from bench import inference_rounds, interleaved_medians, timed
from bench.bench_extract import _cfg, ensure_model, score, score_records, val_documents
from causalkg.core.tables import render_table

QA_FORMATS = (("torch", "float32"), ("torch", "int8"), ("torch", "int8-per-channel"),
              ("onnxruntime", "float32"), ("onnxruntime", "int8"), ("onnxruntime", "int8-per-channel"),
              ("torch", "bfloat16"))
TAGGER_FORMATS = ("float32", "int8-per-channel", "bfloat16")


def _table(runs, items, rounds: int) -> list[dict]:
    """One row per (label, extractor, model): the median of ``rounds`` interleaved passes."""
    first = []
    for _, ext, model in runs:  # warm-up on the whole input, which gives the scores and the pairs
        model.calls = model.features = 0
        recs = ext.extract([d for d, _, _ in items])
        pairs = {(r["doc_id"], r["cause"]["text"], r["effect"]["text"]) for r in recs}
        first.append((score_records(recs, items), pairs, model.features, model.calls))
    times = interleaved_medians([lambda ext=ext: score(ext, items) for _, ext, _ in runs], rounds)
    rows = []
    base_rate = base_cpu = None
    for (label, _, model), (row, pairs, feats, calls), (wall, cpu) in zip(runs, first, times):
        rate = feats / wall if wall else float("inf")
        if base_rate is None:
            base_rate, base_cpu, base_row, base_pairs = rate, cpu, row, pairs
        rows.append({
            "model": label, "backend": getattr(model, "backend", "torch"), "format": model.dtype, "features": feats,
            "forward passes": calls, "s": round(wall, 2), "CPU s": round(cpu, 2), "features/s": round(rate, 1),
            "ratio": round(rate / base_rate, 2), "CPU ratio": round(base_cpu / cpu, 2) if cpu else None,
            "macro F1 exact": row["macro F1 exact"], "macro F1 overlap": row["macro F1 overlap"],
            "d F1 overlap": round(row["macro F1 overlap"] - base_row["macro F1 overlap"], 2),
            "pairs changed": len(pairs ^ base_pairs),
        })
    return rows


def main() -> None:
    import torch

    from causalkg.core.config import load_config
    from causalkg.kg.extract import make_segmenter
    from causalkg.kg.extractors.qa import QAExtractor
    from causalkg.kg.extractors.tagger import TaggerExtractor
    from causalkg.kg.tagger import train_tagger

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    torch.set_num_threads(min(2, os.cpu_count() or 1))
    rounds = inference_rounds()
    model_dir = ensure_model()
    with timed() as t:
        tagger = train_tagger(load_config(search_cwd=False), if_missing=True)
    if not tagger.skipped:
        print(f"(trained the span tagger in {t.seconds:.0f} s)\n")
    items = val_documents(make_segmenter(_cfg()))
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, {os.cpu_count()} CPUs; "
          f"{len(items)} validation sentences, all read; median of {rounds} interleaved rounds; "
          f"load average {os.getloadavg()[0]:.2f}\n")
    qa_runs = []
    for backend, dtype in QA_FORMATS:
        ext = QAExtractor.from_config(_cfg(**{"qa.model": str(model_dir)}, candidates_only=False, dtype=dtype, backend=backend))
        qa_runs.append(("qa", ext, ext.qa))
    print("### QA (features: questions and their overflow windows)\n")
    print(render_table(_table(qa_runs, items, rounds), None, "md", floatfmt=".1f"))
    del qa_runs
    tag_runs = []
    for dtype in TAGGER_FORMATS:
        ext = TaggerExtractor.from_config(_cfg(**{"tagger.model": str(tagger.output)}, candidates_only=False, dtype=dtype))
        tag_runs.append(("tagger", ext, ext.tagger))
    print("\n### Span tagger (features: tagging passes, one per sentence and relation)\n")
    print(render_table(_table(tag_runs, items, rounds), None, "md", floatfmt=".1f"))
    # The machine may be shared: the load says how far wall times are to be trusted; the CPU
    # ratio (float32 PyTorch's CPU seconds over the format's) depends less on it.
    print(f"\nload average (1, 5, 15 min): {', '.join(f'{x:.2f}' for x in os.getloadavg())}\n")


if __name__ == "__main__":
    main()
