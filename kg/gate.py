"""The learned sentence gate: which sentences are worth an extractor's time.

A causal-sentence classifier on the encoder the toolkit already has (all-MiniLM-L6-v2): each
sentence's mean-pooled, L2-normalised MiniLM embedding plus one feature, whether it carries a
cue of the causal lexicon (``kg.cues``), goes into a logistic regression. The encoder stays
frozen, so training is one pass of the encoder over the gold sentences and a few seconds of
L-BFGS; ``causalkg kg train-gate`` does it from ``snapshots/gate-training/`` (Causal News
Corpus subtask 1 and SemEval-2010 Task 8, causal vs not; see its SOURCE.md).

The decision threshold is chosen on the validation split: the highest score that keeps
``extract.gate_target_recall`` of its gold causal sentences. The test split is never read here
(``bench/bench_gate.py`` reports recall on it, and the share of the snapshot corpus read).

The model folder (``extract.gate_model``, default ``models/causal-gate``) holds ``gate.npz``
(weights, bias) and ``manifest.json`` (training fingerprint, threshold, validation curve).
Flow: kg.sentences (sentences, cue matches) -> here (gate score) -> candidates -> extractors.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from causalkg.models import stage_device, training_files
from causalkg.config import Config
from causalkg.errors import ConfigError, ModelError
from causalkg.manifest import build_manifest, describe_input, fingerprint, read_manifest, write_manifest

log = logging.getLogger(__name__)

STAGE = "kg.train-gate"
WEIGHTS = "gate.npz"
GATE_VERSION = 1  # bump when the features change


@dataclass
class GateTrainResult:
    output: Path
    skipped: bool = False
    reason: str = ""
    seconds: float = 0.0
    validation: dict[str, Any] = field(default_factory=dict)
    manifest: dict[str, Any] = field(default_factory=dict)


def cue_hits(texts: Sequence[str], segmenter: Any) -> np.ndarray:
    """1.0 where a text carries a cue of the segmenter's lexicon, else 0.0."""
    if segmenter.cue_matcher is None:
        return np.zeros(len(texts), dtype=np.float32)
    out = [1.0 if segmenter.cue_matcher.find(doc, 0) else 0.0 for doc in segmenter.nlp.pipe(texts)]
    return np.asarray(out, dtype=np.float32)


def features(encoder: Any, texts: Sequence[str], cues: np.ndarray, batch_size: int = 64) -> np.ndarray:
    """The gate's input: [MiniLM embedding | cue hit] per text."""
    emb = encoder.encode(list(texts), batch_size=batch_size)
    return np.hstack([emb, np.asarray(cues, dtype=np.float32).reshape(-1, 1)])


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-z))


def fit_logistic(x: np.ndarray, y: np.ndarray, l2: float, *, pos_weight: float = 1.0,
                 max_iter: int = 200) -> tuple[np.ndarray, float]:
    """L2-regularised logistic regression by L-BFGS (torch): (weights, bias). Deterministic."""
    import torch

    xt = torch.as_tensor(x, dtype=torch.float64)
    yt = torch.as_tensor(y, dtype=torch.float64)
    w = torch.zeros(x.shape[1], dtype=torch.float64, requires_grad=True)
    b = torch.zeros(1, dtype=torch.float64, requires_grad=True)
    weight = torch.where(yt > 0.5, torch.tensor(pos_weight, dtype=torch.float64), torch.tensor(1.0, dtype=torch.float64))
    opt = torch.optim.LBFGS([w, b], lr=1.0, max_iter=max_iter, line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        logits = xt @ w + b
        loss = torch.nn.functional.binary_cross_entropy_with_logits(logits, yt, weight=weight)
        loss = loss + l2 * (w * w).sum()
        loss.backward()
        return loss

    opt.step(closure)
    return w.detach().numpy().astype(np.float32), float(b.detach().item())


def threshold_for_recall(scores: np.ndarray, y: np.ndarray, recall: float) -> float:
    """The highest threshold t such that ``scores >= t`` keeps at least ``recall`` of the positives."""
    pos = np.sort(scores[y > 0.5])[::-1]
    if len(pos) == 0:
        return 0.5
    k = int(np.ceil(recall * len(pos)))
    k = min(max(k, 1), len(pos))
    return float(pos[k - 1])


def curve(scores: np.ndarray, y: np.ndarray, thresholds: Sequence[float]) -> list[dict[str, float]]:
    """Recall of the positives and share of all sentences kept, per threshold."""
    out = []
    n_pos = max(1, int((y > 0.5).sum()))
    for t in thresholds:
        keep = scores >= t
        out.append({"threshold": float(t), "recall": round(float((keep & (y > 0.5)).sum() / n_pos), 4),
                    "kept": round(float(keep.mean()) if len(keep) else 0.0, 4)})
    return out


def average_precision(scores: np.ndarray, y: np.ndarray) -> float:
    order = np.argsort(-scores, kind="stable")
    ys = (y[order] > 0.5).astype(np.float64)
    if ys.sum() == 0:
        return 0.0
    prec = np.cumsum(ys) / np.arange(1, len(ys) + 1)
    return float((prec * ys).sum() / ys.sum())


def encoder_backend(cfg: Config) -> dict[str, Any]:
    """The gate encoder's backend settings: ``extract.backend`` (ONNX Runtime on a CPU under
    ``auto``, the same vectors to about 1e-6) and the export's cache folder."""
    return {"backend": str(cfg["extract"]["backend"]), "cache_dir": cfg.path("paths.cache") / "onnx"}


# --- the model --------------------------------------------------------------------------------


class SentenceGate:
    """A trained gate: ``scores(texts, cues)``, ``mark(sentences)``.

    ``threshold``: None takes the one tuned on validation (the manifest's)."""

    def __init__(self, folder: str | os.PathLike, *, device: str = "auto", batch_size: int = 64,
                 threshold: float | None = None, encoder: Any | None = None, backend: str = "torch",
                 cache_dir: str | os.PathLike | None = None):
        self.folder = Path(folder)
        weights = self.folder / WEIGHTS
        manifest = read_manifest(self.folder)
        if not weights.is_file() or not manifest or manifest.get("stage") != STAGE:
            raise ModelError(f"no trained sentence gate in {self.folder}",
                             hint="train it with 'causalkg kg train-gate'")
        with np.load(weights) as z:
            self.w = z["w"].astype(np.float32)
            self.b = float(z["b"])
        self.manifest = manifest
        tuned = float(manifest["recommended"]["threshold"])
        self.threshold = tuned if threshold is None else float(threshold)
        self.threshold_source = "model manifest" if threshold is None else "config"
        self.encoder_name = manifest["training"]["encoder"]
        self.batch_size = batch_size
        if encoder is None:
            from causalkg.linking.encoder import Encoder

            encoder = Encoder(self.encoder_name, device=device, batch_size=batch_size, backend=backend, cache_dir=cache_dir)
        self.encoder = encoder
        self.sentences = 0
        self.kept = 0
        self.seconds = 0.0

    def scores(self, texts: Sequence[str], cues: np.ndarray) -> np.ndarray:
        if len(texts) == 0:
            return np.zeros(0, dtype=np.float32)
        x = features(self.encoder, texts, cues, self.batch_size)
        return _sigmoid(x @ self.w + self.b).astype(np.float32)

    def mark(self, sentences: Sequence[Any]) -> None:
        """Set ``gate_score`` and ``gate_pass`` of each ``kg.sentences.Sentence``."""
        t0 = time.perf_counter()
        cues = np.asarray([1.0 if s.cues else 0.0 for s in sentences], dtype=np.float32)
        scores = self.scores([s.text for s in sentences], cues)
        for s, p in zip(sentences, scores):
            s.gate_score = round(float(p), 4)
            s.gate_pass = bool(p >= self.threshold)
        self.sentences += len(sentences)
        self.kept += int(sum(1 for s in sentences if s.gate_pass))
        self.seconds += time.perf_counter() - t0

    def describe(self) -> dict[str, Any]:
        return {"gate": "learned", "model": str(self.folder), "model_sha256": describe_input(self.folder / WEIGHTS)["sha256"],
                "encoder": self.encoder_name, "encoder_backend": getattr(self.encoder, "backend", "torch"),
                "threshold": self.threshold, "threshold_source": self.threshold_source}


def gate_is_current(folder: Path, plan_fingerprint: str) -> tuple[bool, str]:
    if not (folder / WEIGHTS).is_file():
        return False, f"{folder} holds no trained gate"
    manifest = read_manifest(folder)
    if not manifest or manifest.get("stage") != STAGE:
        return False, f"{folder} holds no gate manifest"
    if manifest.get("training", {}).get("fingerprint") != plan_fingerprint:
        return False, f"{folder} was trained with other data or settings"
    return True, f"{folder} is current (training fingerprint {plan_fingerprint[:12]})"


def gate_plan(cfg: Config, data: str | os.PathLike | None = None) -> dict[str, Any]:
    from causalkg.kg.cues import BASE_CUES, CNC_CUES
    from causalkg.linking.encoder import model_fingerprint

    ex = cfg["extract"]
    files = training_files(cfg, "extract.gate_train_data", data, "gate")
    recall = float(ex["gate_target_recall"])
    if not 0 < recall <= 1:
        raise ConfigError("extract.gate_target_recall must be in (0, 1]")
    plan = {
        "version": GATE_VERSION,
        "train_sha256": describe_input(files["train"])["sha256"],
        "val_sha256": describe_input(files["val"])["sha256"],
        "encoder": ex["gate_encoder"],
        "encoder_fingerprint": model_fingerprint(ex["gate_encoder"]),
        "target_recall": recall,
        "l2": [float(v) for v in ex["gate_train_l2"]],
        "cue_lexicon": {"base": describe_input(BASE_CUES)["sha256"], "cnc": describe_input(CNC_CUES)["sha256"],
                        "min_count": int(ex["cue_min_count"]), "min_precision": float(ex["cue_min_precision"])},
    }
    plan["fingerprint"] = fingerprint(plan)
    plan["train_file"], plan["val_file"] = str(files["train"]), str(files["val"])
    return plan


def train_gate(cfg: Config, *, output: str | os.PathLike | None = None, data: str | os.PathLike | None = None,
               if_missing: bool = False, encoder: Any | None = None) -> GateTrainResult:
    """Train the gate on ``data`` (default ``extract.gate_train_data``) and save it to
    ``output`` (default ``extract.gate_model``). The L2 strength is chosen from
    ``extract.gate_train_l2`` by validation average precision, the threshold by
    ``extract.gate_target_recall`` on validation. ``if_missing``: nothing when current."""
    from causalkg.jsonl import read_jsonl
    from causalkg.kg.sentences import make_cue_segmenter

    plan = gate_plan(cfg, data)
    out = Path(output) if output is not None else cfg.path("extract.gate_model")
    if if_missing:
        current, reason = gate_is_current(out, plan["fingerprint"])
        if current:
            return GateTrainResult(out, skipped=True, reason=reason, manifest=read_manifest(out) or {})
    t0 = time.perf_counter()
    if encoder is None:
        from causalkg.linking.encoder import Encoder

        encoder = Encoder(plan["encoder"], device=stage_device(cfg, "extract.device"), **encoder_backend(cfg))
    segmenter = make_cue_segmenter(cfg["extract"])
    train = list(read_jsonl(plan["train_file"]))
    val = list(read_jsonl(plan["val_file"]))
    for recs in (train, val):
        if not recs or not any(r.get("causal") for r in recs) or all(r.get("causal") for r in recs):
            raise ConfigError("gate training data needs causal and non-causal sentences in train and val")

    def xy(recs):
        texts = [r["text"] for r in recs]
        return (features(encoder, texts, cue_hits(texts, segmenter)),
                np.asarray([1.0 if r["causal"] else 0.0 for r in recs], dtype=np.float32))

    x_train, y_train = xy(train)
    x_val, y_val = xy(val)
    encode_seconds = time.perf_counter() - t0
    best = None
    tried = []
    for l2 in plan["l2"]:
        w, b = fit_logistic(x_train, y_train, l2)
        ap = average_precision(_sigmoid(x_val @ w + b), y_val)
        tried.append({"l2": l2, "val_average_precision": round(ap, 4)})
        if best is None or ap > best[0]:
            best = (ap, l2, w, b)
    _, l2, w, b = best
    val_scores = _sigmoid(x_val @ w + b)
    # Not rounded: a threshold rounded up past the last kept score would lose that sentence.
    threshold = float(threshold_for_recall(val_scores, y_val, plan["target_recall"]))
    grid = sorted({round(float(t), 3) for t in np.linspace(0.02, 0.9, 45)})
    validation = {
        "sentences": len(val), "causal": int(y_val.sum()), "l2": l2, "tried": tried,
        "threshold": threshold, "at_threshold": curve(val_scores, y_val, [threshold])[0],
        "curve": curve(val_scores, y_val, grid),
    }
    seconds = time.perf_counter() - t0
    public = {k: v for k, v in plan.items() if k not in ("train_file", "val_file")}
    manifest = build_manifest(
        STAGE, cfg, inputs={"train": plan["train_file"], "val": plan["val_file"]},
        counts={"train_sentences": len(train), "train_causal": int(y_train.sum())},
        timings={"encode": encode_seconds, "total": seconds},
        models={"encoder": plan["encoder"], "encoder_backend": getattr(encoder, "backend", "torch")},
        extra={"training": public, "validation": validation, "recommended": {"threshold": threshold}},
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    np.savez(tmp / WEIGHTS, w=w, b=np.float32(b))
    write_manifest(tmp, manifest)
    if out.exists():
        shutil.rmtree(out)
    os.replace(tmp, out)
    return GateTrainResult(out, seconds=seconds, validation=validation, manifest=manifest)


def describe_training(result: GateTrainResult) -> str:
    if result.skipped:
        return f"nothing to do: {result.reason}"
    v = result.validation
    at = v["at_threshold"]
    return (f"trained the sentence gate in {result.seconds:.0f} s; saved to {result.output}\n"
            f"validation ({v['sentences']} sentences, {v['causal']} causal): threshold {v['threshold']:.4f} keeps "
            f"{100 * at['recall']:.1f}% of causal sentences and {100 * at['kept']:.1f}% of all (L2 {v['l2']})")


__all__ = ["SentenceGate", "train_gate", "gate_plan", "gate_is_current", "describe_training", "curve",
           "threshold_for_recall", "fit_logistic", "features", "cue_hits"]
_ = json  # kept for callers that dump the manifest
