"""Cheaper gate encoders beside the shipped gate: the encoder cut to its first K transformer
layers (``extract.gate.train.encoder_layers``) and the shipped encoder quantized to int8 per channel
on ONNX Runtime, all measured in one run.

    python -m bench gate_layers

Variants: the gate of ``extract.gate.model`` (the baseline; six layers, float32), the same
with its encoder's ONNX export quantized dynamically with one scale per output channel and
7-bit weights (``kg.onnx_runtime.QUANTIZATIONS["int8-per-channel"]``, the gate's float32
threshold), and one gate per depth K of ``BENCH_GATE_LAYERS`` (default ``2,3``; ``BENCH_GATE_LAYERS_INT8=0`` leaves the int8 twin out), trained now
when missing into ``<paths.cache>/gate-layers/L<K>`` (``kg train-gate`` with
``extract.gate.train.encoder_layers = K``, the other settings the defaults: seeded, float32 on a CPU
without native bfloat16; a few minutes each on 2 cores). Tables (``BENCH_GATE_LAYERS_PARTS``,
default ``recall,speed,quality,split``):

1. ``recall``: held-out gate recall and precision at each gate's tuned threshold on
   ``snapshots/gate-training/test.jsonl`` (782 sentences, 174 causal; no model trains or
   selects on them), the share kept, the decisions that differ from the baseline's.
2. ``speed``: the encoder's CPU and wall seconds per 1,000 sentences (every k-th sentence of the
   sample documents, at most ``BENCH_GATE_ENCODER_SENTENCES``, default 1000; warmed first, then
   ``BENCH_INFERENCE_ROUNDS`` interleaved rounds, the median).
3. ``quality``: ``bench quality``'s default row (end-to-end pair F1 of ``kg extract`` on the
   held-out Causal News Corpus sentences) with each gate.
4. ``split``: an extraction of the sample documents (``BENCH_GATE_LAYERS_SAMPLE``, a corpus
   JSONL, default ``data/corpus/corpus.jsonl`` or the tests' Wikipedia fixture; its first
   ``BENCH_GATE_LAYERS_DOCS``, default 25) in the stage's loop (sentences, gate, QA, records;
   model load excluded; ten documents a batch), with and without ``extract.gate.first_pass``:
   CPU seconds of the whole loop, of the gate's encoder and of QA, per document, and the
   extractions beside the baseline's. The runs take turns (every variant without the first
   pass, then every variant with it) after one untimed warm-up document.

CPU seconds are the figures to compare on a shared machine (``time.process_time``: all of the
process's threads).
"""

from __future__ import annotations

import json
import os
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import numpy as np

from bench import inference_rounds, interleaved_medians, timed
from causalkg.core.config import load_config
from causalkg.core.tables import render_table

REPO = Path(__file__).resolve().parents[1]
TEST = REPO / "snapshots" / "gate-training" / "test.jsonl"
CORPUS = REPO / "data" / "corpus" / "corpus.jsonl"
FALLBACK = REPO / "tests" / "fixtures" / "extract" / "wiki_docs.jsonl"
INT8 = "int8-per-channel"


@contextmanager
def int8_encoder(folder: Path) -> Iterator[None]:
    """While open, an encoder loaded from ``folder`` on ONNX Runtime runs its export quantized
    to int8 per channel (the QA model's recipe), made once beside the float32 export."""
    from causalkg.core.onnxrt import cpu_session
    from causalkg.kg.onnx_runtime import QUANTIZATIONS
    from causalkg.linking.encoder import Encoder

    original = Encoder._onnx_session
    want = Path(folder).resolve()

    def session(self, cache_dir):
        sess = original(self, cache_dir)
        if Path(self.path).resolve() != want:
            return sess
        target = self.onnx_path.with_name(self.onnx_path.stem + f".{INT8}.onnx")
        if not target.is_file():
            from onnxruntime.quantization import QuantType, quantize_dynamic

            tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
            quantize_dynamic(str(self.onnx_path), str(tmp), weight_type=QuantType.QInt8, **QUANTIZATIONS[INT8])
            os.replace(tmp, target)
        self.onnx_path = target
        return cpu_session(target)

    Encoder._onnx_session = session
    try:
        yield
    finally:
        Encoder._onnx_session = original


def variants(cfg) -> list[dict]:
    """The baseline, its int8 twin and one trained gate per depth (trained now when missing)."""
    from causalkg.kg.gate import train_gate

    base = cfg.path("extract.gate.model")
    if not train_gate(cfg, if_missing=True).skipped:
        print("(trained the baseline gate)\n")
    out = [{"name": "6 layers, float32 (shipped; baseline)", "folder": base, "int8": False}]
    if os.environ.get("BENCH_GATE_LAYERS_INT8", "1") != "0":
        out.append({"name": f"6 layers, {INT8}", "folder": base, "int8": True})
    for k in [int(x) for x in os.environ.get("BENCH_GATE_LAYERS", "2,3").split(",") if x.strip()]:
        folder = cfg.path("paths.cache") / "gate-layers" / f"L{k}"
        over = load_config(search_cwd=False, overrides={"extract.gate.train.encoder_layers": k})
        with timed() as t:
            res = train_gate(over, output=folder, if_missing=True)
        if not res.skipped:
            print(f"(trained the {k}-layer gate in {t.seconds:.0f} s, {time.process_time():.0f} CPU s so far)\n")
        out.append({"name": f"{k} layers, float32", "folder": folder, "int8": False})
    return out


@contextmanager
def running(v: dict) -> Iterator[None]:
    if v["int8"]:
        with int8_encoder(v["folder"] / "encoder"):
            yield
    else:
        yield


def load_gate(cfg, v: dict):
    from causalkg.kg.gate import SentenceGate, encoder_backend

    with running(v):
        return SentenceGate(v["folder"], device="cpu", batch_size=int(cfg["extract"]["gate"]["batch_size"]),
                            **encoder_backend(cfg))


def sample_docs() -> list[dict]:
    path = Path(os.environ.get("BENCH_GATE_LAYERS_SAMPLE") or (CORPUS if CORPUS.is_file() else FALLBACK))
    n = int(os.environ.get("BENCH_GATE_LAYERS_DOCS", "25"))
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for _, line in zip(range(n), fh)], path


def recall_table(cfg, vs: list[dict], seg) -> None:
    from causalkg.kg.gate import cue_hits

    test = [json.loads(line) for line in TEST.read_text(encoding="utf-8").splitlines()]
    texts = [r["text"] for r in test]
    y = np.array([bool(r["causal"]) for r in test])
    cues = cue_hits(texts, seg)
    rows, first = [], None
    for v in vs:
        gate = load_gate(cfg, v)
        keep = gate.scores(texts, cues) >= gate.threshold
        first = keep if first is None else first
        at = gate.manifest["validation"]["at_threshold"]
        rows.append({"gate": v["name"], "threshold": gate.threshold, "validation recall": at["recall"] if not v["int8"] else None,
                     "recall": float(keep[y].mean()), "precision": float(y[keep].mean()) if keep.any() else 0.0,
                     "kept": float(keep.mean()), "decisions changed": int((keep != first).sum())})
    print(f"### Held-out gate recall and precision at the tuned threshold ({int(y.sum())} causal of {len(y)} "
          f"test sentences)\n")
    print(render_table(rows, None, "md", floatfmt=".4f"))
    print()


def speed_table(cfg, vs: list[dict], docs: list[dict], seg) -> None:
    import torch

    from causalkg.kg.extract import prepare

    sentences = [s for d in docs for s in prepare(d, seg).sentences]
    limit = int(os.environ.get("BENCH_GATE_ENCODER_SENTENCES", "1000"))
    step = max(1, -(-len(sentences) // limit))
    texts = [s.text for s in sentences[::step][:limit]]
    encoders = []
    for v in vs:
        enc = load_gate(cfg, v).encoder
        enc.encode(texts)  # warm-up: first-call allocations and each shape's kernels
        encoders.append(enc)
    rounds = inference_rounds()
    times = interleaved_medians([lambda enc=enc: enc.encode(texts) for enc in encoders], rounds)
    rows = []
    for v, (wall, cpu) in zip(vs, times):
        rows.append({"encoder": v["name"], "sentences": len(texts), "CPU s / 1,000": 1000 * cpu / len(texts),
                     "wall s / 1,000": 1000 * wall / len(texts), "CPU ratio": times[0][1] / cpu if cpu else None})
    print(f"### The gate's encoder: CPU seconds per 1,000 sentences (every {step}th sentence of the sample; torch "
          f"threads {torch.get_num_threads()}; median of {rounds} interleaved rounds)\n")
    print(render_table(rows, None, "md", floatfmt=".3g"))
    print()


def quality_table(cfg, vs: list[dict]) -> None:
    from bench.bench_quality import gold_relations, run_each

    records = gold_relations()
    settings = [{"extract.gate.model": str(v["folder"]), "paths.cache": str(cfg.path("paths.cache"))} for v in vs]
    rows = [{"gate": v["name"], "pred": int(r["pred"]), "matched": int(r["matched"]), "P": r["precision"],
             "R": r["recall"], "F1": r["f1"], "strict F1": r["strict_f1"], "read": f"{r['read']}/{r['sentences']}"}
            for v, r in zip(vs, run_each(records, settings, around=lambda k: running(vs[k])))]
    print(f"### Held-out news pair F1 (`bench quality`'s default row, {len(records)} sentences) per gate\n")
    print(render_table(rows, None, "md", floatfmt=".3f"))
    print()


def split_run(cfg, v: dict, first_pass: bool, docs: list[dict], ext, batch: int = 10) -> dict:
    """The stage's loop over ``docs`` with the gate ``v``: CPU seconds of the whole loop, the
    encoder and QA; counts; the (doc, cause, effect) triples it extracted."""
    from causalkg.core.contracts import Extraction
    from causalkg.kg.extract import make_segmenter, prepare
    from causalkg.kg.extractors import sort_records

    run_cfg = load_config(search_cwd=False, overrides={"extract.gate.model": str(v["folder"]),
                                                       "paths.cache": str(cfg.path("paths.cache")),
                                                       "extract.gate.first_pass": first_pass})
    with running(v):
        seg = make_segmenter(run_cfg, with_gate=True)
    gate = seg.gate
    enc_cpu = [0.0]
    encode = gate.encoder.encode

    def timed_encode(*a, **k):
        c0 = time.process_time()
        try:
            return encode(*a, **k)
        finally:
            enc_cpu[0] += time.process_time() - c0

    gate.encoder.encode = timed_encode
    qa_cpu, pairs, n_out = 0.0, set(), 0
    c_loop, t_loop = time.process_time(), time.perf_counter()
    for i in range(0, len(docs), batch):
        parts = [prepare(r, seg) for r in docs[i:i + batch]]
        gate.mark([s for d in parts for s in d.sentences])
        order = {d.id: j for j, d in enumerate(parts)}
        c0 = time.process_time()
        out = sort_records(ext.extract(parts), order)
        qa_cpu += time.process_time() - c0
        for rec in out:
            Extraction.model_validate(rec)
            json.dumps(rec, ensure_ascii=False, separators=(",", ":"))
            pairs.add((rec["doc_id"], rec["cause"]["text"], rec["effect"]["text"]))
        n_out += len(out)
    return {"loop_cpu": time.process_time() - c_loop, "loop_wall": time.perf_counter() - t_loop,
            "encoder_cpu": enc_cpu[0], "qa_cpu": qa_cpu, "sentences": gate.sentences, "encoded": gate.encoded,
            "kept": gate.kept, "extractions": n_out, "pairs": pairs}


def split_table(cfg, vs: list[dict], docs: list[dict], path: Path) -> None:
    from causalkg.kg.extractors import create_extractor

    ext = create_extractor("qa", cfg)  # one QA model for every run: it does not depend on the gate
    split_run(cfg, vs[0], False, docs[:1], ext)  # warm-up, untimed
    results = {}
    for first_pass in (False, True):
        for v in vs:
            r = split_run(cfg, v, first_pass, docs, ext)
            results[(v["name"], first_pass)] = r
            base_pairs = results[(vs[0]["name"], False)]["pairs"]
            print(f"({v['name']}, first pass {first_pass}: loop {r['loop_cpu']:.1f} CPU s, encoder "
                  f"{r['encoder_cpu']:.1f}, QA {r['qa_cpu']:.1f}, {r['loop_wall']:.1f} s wall; sentences "
                  f"{r['sentences']}, encoded {r['encoded']}, passed {r['kept']}, extractions {r['extractions']}, "
                  f"the baseline's kept {len(r['pairs'] & base_pairs)})", flush=True)
    base = results[(vs[0]["name"], False)]
    rows = []
    for (name, first_pass), r in results.items():
        rows.append({"gate": name, "first pass": "yes" if first_pass else "no",
                     "loop CPU s / doc": r["loop_cpu"] / len(docs), "encoder CPU s": r["encoder_cpu"],
                     "QA CPU s": r["qa_cpu"], "loop CPU s": r["loop_cpu"], "CPU ratio": r["loop_cpu"] / base["loop_cpu"],
                     "wall s": r["loop_wall"], "encoded": r["encoded"], "passed": r["kept"],
                     "extractions": r["extractions"], "distinct pairs": len(r["pairs"]),
                     "shared with the baseline": len(r["pairs"] & base["pairs"])})
    n_sent = base["sentences"]
    print(f"\n### Extraction of the first {len(docs)} documents of {path} ({n_sent} sentences): the stage's loop, "
          f"model load excluded; CPU ratio against the baseline without the first pass\n")
    print(render_table(rows, None, "md", floatfmt=".3g"))
    print()


def main() -> None:
    from causalkg.kg.extract import make_segmenter

    cfg = load_config(search_cwd=False)
    parts = set(os.environ.get("BENCH_GATE_LAYERS_PARTS", "recall,speed,quality,split").split(","))
    vs = variants(cfg)
    seg = make_segmenter(cfg)
    docs, path = sample_docs()
    if "recall" in parts:
        recall_table(cfg, vs, seg)
    if "speed" in parts:
        speed_table(cfg, vs, docs, seg)
    if "quality" in parts:
        quality_table(cfg, vs)
    if "split" in parts:
        split_table(cfg, vs, docs, path)


if __name__ == "__main__":
    main()
