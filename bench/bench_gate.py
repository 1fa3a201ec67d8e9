"""The learned sentence gate against the cue gate: recall of held-out causal sentences, share of
the snapshot corpus read, and speed.

    python -m bench gate

Inputs (no ``../shared``): ``snapshots/gate-training/test.jsonl`` (782 sentences of the Causal
News Corpus and SemEval-2010 Task 8 train files whose documents no model trains or selects on;
174 causal), the corpus ``make kg`` builds (``data/corpus/corpus.jsonl``; the Wikipedia fixture
of the tests when it is missing) and the gate ``make kg`` trains (``models/causal-gate``,
trained now when missing).

1. The curve: for thresholds from 0.02 to 0.9, the share of the held-out causal sentences kept
   (all, CNC, SemEval) and the share of the corpus's sentences read; the tuned threshold (chosen
   on the validation split, never on test) is marked. Beside it, the cue gate (a causal cue, or a
   mention of the document concept).
   Beside it, the tuned gate behind its first pass (``extract.gate.first_pass``: the encoder
   scores only sentences whose word logit reaches a threshold chosen on validation), with the
   share of the corpus the encoder then reads.
2. Speed: sentences/s of the learned gate (MiniLM embeddings + the regression) on the corpus
   sentences, on the CPU threads torch has, with the encoder backend ``extract.backend`` gives,
   without and with the first pass.
3. The encoder's backends: sentences/s (wall and CPU seconds) of MiniLM on PyTorch (the
   baseline), on ONNX Runtime and, on a CPU with native bfloat16 (AMX, AVX512-BF16), on PyTorch
   in bfloat16 (what ``extract.dtype = "bfloat16"`` runs) over the same corpus sentences (every k-th, at most
   ``BENCH_GATE_ENCODER_SENTENCES``, default 2000), the largest difference of their vectors,
   and how many gate decisions differ. Each backend is warmed on all the sentences first, then
   ``BENCH_INFERENCE_ROUNDS`` interleaved rounds (default 3) time them in turn: the median.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from bench import inference_rounds, interleaved_medians, timed
from causalkg.core.config import load_config
from causalkg.core.tables import render_table

REPO = Path(__file__).resolve().parents[1]
TEST = REPO / "snapshots" / "gate-training" / "test.jsonl"
CORPUS = REPO / "data" / "corpus" / "corpus.jsonl"
FALLBACK = REPO / "tests" / "fixtures" / "extract" / "wiki_docs.jsonl"


def main() -> None:
    import torch

    from causalkg.kg.extract import make_segmenter, prepare
    from causalkg.kg.gate import SentenceGate, cue_hits, encoder_backend, load_first_pass, train_gate
    from causalkg.core.models import stage_device

    cfg = load_config(search_cwd=False)
    with timed() as t:
        res = train_gate(cfg, if_missing=True)
    if not res.skipped:
        print(f"(trained the gate in {t.seconds:.0f} s)\n")
    gate = SentenceGate(cfg.path("extract.gate.model"), device=stage_device(cfg, "extract.device"),
                        batch_size=int(cfg["extract"]["gate"]["batch_size"]), **encoder_backend(cfg))
    seg = make_segmenter(cfg)

    test = [json.loads(line) for line in TEST.read_text(encoding="utf-8").splitlines()]
    texts = [r["text"] for r in test]
    y = np.array([r["causal"] for r in test])
    src = np.array([r["source"] for r in test])
    cues = cue_hits(texts, seg)
    test_scores = gate.scores(texts, cues)
    # The first pass (extract.gate.first_pass): its threshold on the word logit, chosen on
    # validation (the manifest's, or computed from the validation file), never on test.
    first_pass, _ = load_first_pass(gate, keep=float(cfg["extract"]["gate"]["first_pass_keep"]),
                                    validation=cfg.input_path("extract.gate.train.data") / "val.jsonl", segmenter=seg,
                                    cache_dir=cfg.path("paths.cache") / "gate-first-pass")
    test_read = gate.word_logits(texts, cues) >= first_pass

    corpus = CORPUS if CORPUS.is_file() else FALLBACK
    sentences = []
    with open(corpus, encoding="utf-8") as fh:
        for line in fh:
            sentences += prepare(json.loads(line), seg).sentences
    cue_read = float(np.mean([s.is_candidate for s in sentences])) if sentences else 0.0
    with timed() as tg:
        gate.mark(sentences)
    corpus_scores = np.array([s.gate_score for s in sentences])
    fast = SentenceGate(gate.folder, encoder=gate.encoder, batch_size=gate.batch_size, first_pass=first_pass)
    with timed() as tf:
        fast.mark(sentences)
    corpus_read = np.array([s.gate_reason == "gate" for s in sentences])

    def row(name, keep_test, keep_corpus, threshold=None, encoded=1.0):
        out = {"gate": name, "threshold": threshold}
        for label, mask in (("recall (all)", y), ("recall CNC", y & (src == "cnc")), ("recall SemEval", y & (src == "semeval"))):
            out[label] = float(keep_test[mask].mean()) if mask.any() else None
        out["test kept"] = float(keep_test.mean())
        out["corpus read"] = keep_corpus
        out["corpus encoded"] = encoded
        return out

    rows = [row("cue gate (previous default; baseline)", cues > 0, cue_read, encoded=0.0)]
    tuned = gate.threshold
    rows.append(row("learned, tuned on validation", test_scores >= tuned, float((corpus_scores >= tuned).mean()), tuned))
    rows.append(row(f"the same behind the first pass (word logit >= {first_pass:.4f})", (test_scores >= tuned) & test_read,
                    float(((corpus_scores >= tuned) & corpus_read).mean()), tuned, float(corpus_read.mean())))
    for th in [round(x, 2) for x in np.arange(0.02, 0.92, 0.04)]:
        rows.append(row("learned", test_scores >= th, float((corpus_scores >= th).mean()), th))
    print(f"### Sentence gate: held-out recall ({int(y.sum())} causal of {len(y)} test sentences) and share of "
          f"{corpus.relative_to(REPO)} read ({len(sentences)} sentences)\n")
    print(render_table(rows, ["gate", "threshold", "recall (all)", "recall CNC", "recall SemEval", "test kept",
                              "corpus read", "corpus encoded"], "md", floatfmt=".3f"))
    lost = int(((corpus_scores >= tuned) & ~corpus_read).sum())
    print(f"\nThe first pass stops {int((~corpus_read).sum())} of {len(sentences)} corpus sentences before the encoder; "
          f"{lost} of the {int((corpus_scores >= tuned).sum())} the whole gate passes are among them.")
    print("\nTarget: recall >= 0.95 of held-out causal sentences while reading <= 0.40 of the corpus.\n")
    print(f"### Gate speed (torch threads {torch.get_num_threads()})\n")
    speed = [{"gate": f"learned (MiniLM on {gate.encoder.backend} + logistic regression; baseline)",
              "sentences": len(sentences), "seconds": tg.seconds},
             {"gate": "the same behind the first pass", "sentences": len(sentences), "seconds": tf.seconds}]
    for r in speed:
        r["sentences/s"] = len(sentences) / r["seconds"] if r["seconds"] > 0 else float("inf")
        r["ratio"] = tg.seconds / r["seconds"] if r["seconds"] > 0 else float("inf")
    print(render_table(speed, ["gate", "sentences", "seconds", "sentences/s", "ratio"], "md", floatfmt=".3g"))
    print("\nThe cue gate runs inside sentence splitting (spaCy Matcher) and adds no model time.\n")
    encoder_backends(cfg, gate, sentences)


def encoder_backends(cfg, gate, sentences) -> None:
    """Table 3: the gate's encoder on PyTorch and on ONNX Runtime, same sentences, same run."""
    import torch

    from causalkg.kg.gate import SentenceGate, encoder_backend
    from causalkg.linking.encoder import Encoder, encoder_dtype

    limit = int(os.environ.get("BENCH_GATE_ENCODER_SENTENCES", "2000"))
    step = max(1, -(-len(sentences) // limit))
    sample = sentences[::step][:limit]
    texts = [s.text for s in sample]
    cues = np.asarray([1.0 if s.cues else 0.0 for s in sample], dtype=np.float32)
    cache = encoder_backend(cfg)["cache_dir"]
    runs = [("torch", "float32"), ("onnxruntime", "float32")]
    if encoder_dtype("bfloat16", "cpu") == "bfloat16":  # a CPU that multiplies bfloat16 natively
        runs.append(("torch", "bfloat16"))
    rounds = inference_rounds()
    encoders, first = [], []
    for backend, dtype in runs:
        enc = Encoder(gate.encoder_name, device="cpu", batch_size=gate.batch_size, backend=backend, cache_dir=cache,
                      dtype=dtype)
        # warm-up on every text: first-call allocations and each shape's kernels are not the
        # backend's cost; its vectors and decisions are compared below
        vectors = enc.encode(texts)
        keep = SentenceGate(gate.folder, encoder=enc, batch_size=gate.batch_size).scores(texts, cues) >= gate.threshold
        encoders.append(enc)
        first.append((vectors, keep))
    times = interleaved_medians([lambda enc=enc: enc.encode(texts) for enc in encoders], rounds)
    rows = []
    for i, (enc, (wall, cpu)) in enumerate(zip(encoders, times)):
        rate = len(texts) / wall if wall else float("inf")
        vectors, keep = first[i]
        rows.append({"encoder backend": f"{enc.backend} {enc.dtype}" + ("" if i else " (baseline)"),
                     "sentences": len(texts), "s": wall, "CPU s": cpu, "sentences/s": rate,
                     "ratio": rate / (len(texts) / times[0][0]), "CPU ratio": times[0][1] / cpu if cpu else None,
                     "max abs diff": float(np.abs(vectors - first[0][0]).max()),
                     "gate decisions changed": int((keep != first[0][1]).sum())})
    print(f"### Gate encoder: PyTorch vs ONNX Runtime vs bfloat16 (every {step}th corpus sentence; torch threads "
          f"{torch.get_num_threads()}, {os.cpu_count()} CPUs; median of {rounds} interleaved rounds)\n")
    print(render_table(rows, None, "md", floatfmt=".3g"))
    if len(runs) == 2:
        print("\n(no bfloat16 row: this CPU has no native bfloat16, where extract.dtype = bfloat16 runs float32)")
    print()


if __name__ == "__main__":
    main()
