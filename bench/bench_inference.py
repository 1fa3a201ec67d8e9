"""Model inference on CPU: PyTorch against ONNX Runtime, float32 against int8 (dynamic
quantization, one scale per weight matrix or per output channel), same model, same inputs,
same run; the baseline is PyTorch float32 (the
extractor's runtime before ``extract.backend``).

    python -m bench inference

Input: the validation split ``snapshots/qa-training/val.jsonl`` (CNC and SemEval sentences never
trained on), every sentence read (no candidate filter), asked the unanchored questions by the QA
extractor with the trained model in ``models/causal-qa`` (trained first when missing). Prints,
per format: features (questions and their overflow windows) per second, forward passes, CPU
seconds and their ratio to float32 PyTorch's (steadier than wall time on a shared machine), the
cause/effect macro F1 (exact and token-overlap) and its difference to float32, and how many
extracted pairs differ. The issue's bar is 3x the float32 questions/s at +-0.5 F1.
"""

from __future__ import annotations

import os
import time

from bench import timed
from bench.bench_extract import _cfg, ensure_model, score, val_documents
from causalkg.tables import render_table


def main() -> None:
    import torch

    from causalkg.kg.extract import make_segmenter
    from causalkg.kg.extractors.qa import QAExtractor

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    torch.set_num_threads(min(2, os.cpu_count() or 1))
    model_dir = ensure_model()
    items = val_documents(make_segmenter(_cfg()))
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, {os.cpu_count()} CPUs; "
          f"{len(items)} validation sentences, all read; load average {os.getloadavg()[0]:.2f}\n")
    rows, base, base_pairs = [], None, None
    for backend, dtype in (("torch", "float32"), ("torch", "int8"), ("torch", "int8-per-channel"),
                           ("onnxruntime", "float32"), ("onnxruntime", "int8"), ("onnxruntime", "int8-per-channel"),
                           ("torch", "bfloat16")):
        ext = QAExtractor(_cfg(qa_model=str(model_dir), candidates_only=False, dtype=dtype, backend=backend))
        ext.extract([items[0][0]])  # warm-up: first-call allocations are not the format's cost
        ext.qa.calls = ext.qa.features = 0
        cpu0 = time.process_time()
        with timed() as t:
            row, _ = score(ext, items)
        cpu = time.process_time() - cpu0
        feats, calls = ext.qa.features, ext.qa.calls  # of the timed pass only (the pass below adds to them)
        pairs = {(r["doc_id"], r["cause"]["text"], r["effect"]["text"]) for r in ext.extract([d for d, _, _ in items])}
        rate = feats / t.seconds if t.seconds else float("inf")
        if base is None:
            base, base_pairs, base_cpu = (rate, row), pairs, cpu
        rows.append({
            "backend": ext.qa.backend, "format": ext.qa.dtype, "features": feats, "forward passes": calls,
            "s": round(t.seconds, 1), "CPU s": round(cpu, 1), "features/s": round(rate, 1),
            "ratio": round(rate / base[0], 2), "CPU ratio": round(base_cpu / cpu, 2) if cpu else None,
            "macro F1 exact": row["macro F1 exact"], "macro F1 overlap": row["macro F1 overlap"],
            "d F1 overlap": round(row["macro F1 overlap"] - base[1]["macro F1 overlap"], 2),
            "pairs changed": len(pairs ^ base_pairs),
        })
    print(render_table(rows, None, "md", floatfmt=".1f"))
    # The machine may be shared: the load says how far wall times are to be trusted; the CPU
    # ratio (float32 PyTorch's CPU seconds over the format's) depends less on it.
    print(f"\nload average (1, 5, 15 min): {', '.join(f'{x:.2f}' for x in os.getloadavg())}\n")


if __name__ == "__main__":
    main()
