"""The learned pair verifier: does the sentence state this cause -> effect pair as written?

An extractor proposes a cause span and an effect span in a sentence. The verifier reads the
sentence with the two spans marked (the cause between ``<<`` and ``>>``, the effect between
``[[`` and ``]]``, :func:`mark_pair`) and gives the probability of three classes (:data:`LABELS`):

- ``causal``: the sentence says the cause span causes the effect span;
- ``reversed``: it says the effect span causes the cause span;
- ``not_causal``: it states no causal relation between them (a sequence in time, a
  co-occurrence, a purpose, a description, a part and its whole, a hypothesis, a negation).

The model is the toolkit's sentence encoder (all-MiniLM-L6-v2) fine-tuned as a three-class
classifier by the gate's trainer (``kg.gate.fine_tune_encoder`` with ``classes=3``). Its head
reads, as relation classifiers with entity markers do, the encoder's vectors at the two opening
marks (the first token of ``<<`` and of ``[[``, :func:`mark_pair_at`), each L2-normalised and
side by side, into one linear layer: the mean over the sentence loses which span is which (a
sentence and its swapped marking came out nearly alike). Always in float32 and seeded, saved as a
sentence-transformers folder so that it runs on ONNX Runtime like the gate's encoder
(``linking.encoder.Encoder``, ``kg.verifier.backend``). ``causalkg kg train-verifier`` trains it
from ``snapshots/verifier-training/`` (Causal News Corpus spans as written and swapped,
SemEval-2010 Task 8 by direction with its other relations as hard negatives, and non-causal news
sentences read around a causal-looking connective; see its SOURCE.md).

Each pair is read both ways (the spans as given, and swapped) and the two answers are averaged
with the swapped one's ``causal`` and ``reversed`` exchanged (:func:`both_ways`): the verdict on
"A causes B" and on "B causes A" then agree by construction, and on validation the direction
improved (macro F1 0.743 -> 0.759 with the same weights of the earlier sentence-mean head).
The decision (:func:`decide`):
``not_causal`` when P(not_causal) reaches the threshold, else the likelier of ``causal`` and
``reversed``. The threshold is the one of a grid that gives the best
macro F1 on the validation split; the test split is never read here (``python -m bench
verifier`` reports it).

The model folder (``kg.verifier.model``, default ``models/causal-verifier``) holds ``encoder/``,
``verifier.npz`` (the head: weights and biases of the three classes) and ``manifest.json``
(training fingerprint, threshold, validation figures).
Flow: kg.extract (pairs) -> here (a verdict per prose pair) -> kg.mentions (linking) -> aggregation.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from causalkg.core.config import Config
from causalkg.core.errors import ConfigError, ModelError
from causalkg.core.jsonl import replace_dir, temp_dir_beside
from causalkg.core.manifest import build_manifest, describe_input, fingerprint, read_manifest, write_manifest
from causalkg.core.models import resolve_device, stage_device, training_files

STAGE = "kg.train-verifier"
VERIFIER_VERSION = 3  # bump when the marking, the head or the decision changes (2: both orientations read;
#                       3: the head reads the vectors at the two opening marks, not the sentence mean)
LABELS = ("causal", "reversed", "not_causal")
HEAD = "verifier.npz"
ENCODER_DIR = "encoder"
REVERSED_MODES = ("flip", "drop", "keep")
CAUSE_MARKS = ("<<", ">>")
EFFECT_MARKS = ("[[", "]]")
CONTEXT_CHARS = 100  # characters of the sentence kept on each side of the two spans
THRESHOLD_GRID = tuple(round(float(t), 2) for t in np.arange(0.2, 0.96, 0.05))


@dataclass
class VerifierTrainResult:
    output: Path
    skipped: bool = False
    reason: str = ""
    seconds: float = 0.0
    validation: dict[str, Any] = field(default_factory=dict)
    manifest: dict[str, Any] = field(default_factory=dict)


def mark_pair(text: str, cause: tuple[int, int], effect: tuple[int, int], *, context: int = CONTEXT_CHARS) -> str:
    """``text`` with the cause span between ``<<``/``>>`` and the effect span between ``[[``/``]]``
    (offsets into ``text``), cut at word boundaries ``context`` characters before the first span
    and after the last. Overlapping spans are marked as they fall (the marks nest or cross)."""
    return mark_pair_at(text, cause, effect, context=context)[0]


# stand-ins of the marks' length while the text is cut and its spaces squeezed, so the marks'
# offsets can be found whatever the sentence holds; replaced by the marks at the end
_STAND_INS = ("\ue000\ue000", "\ue001\ue001", "\ue002\ue002", "\ue003\ue003")


def mark_pair_at(text: str, cause: tuple[int, int], effect: tuple[int, int], *,
                 context: int = CONTEXT_CHARS) -> tuple[str, tuple[int, int]]:
    """:func:`mark_pair`, and the character offsets in it of the opening cause mark ``<<`` and
    the opening effect mark ``[[`` (the tokens the classifier reads)."""
    text = text.translate({ord(c[0]): " " for c in _STAND_INS})
    marks = dict(zip((CAUSE_MARKS[0], CAUSE_MARKS[1], EFFECT_MARKS[0], EFFECT_MARKS[1]), _STAND_INS))
    n = len(text)
    cs, ce = max(0, min(cause[0], n)), max(0, min(cause[1], n))
    es, ee = max(0, min(effect[0], n)), max(0, min(effect[1], n))
    lo, hi = max(0, min(cs, es) - context), min(n, max(ce, ee) + context)
    while lo > 0 and not text[lo - 1].isspace():
        lo -= 1
    while hi < n and not text[hi].isspace():
        hi += 1
    # marks inserted from the right so earlier offsets stay valid; at one offset, closing marks
    # go before opening ones
    inserts = sorted([(ce, 0, f" {marks[CAUSE_MARKS[1]]} "), (ee, 0, f" {marks[EFFECT_MARKS[1]]} "),
                      (cs, 1, f" {marks[CAUSE_MARKS[0]]} "), (es, 1, f" {marks[EFFECT_MARKS[0]]} ")],
                     key=lambda t: (t[0], t[1]))
    out = text
    for pos, _, mark in reversed(inserts):
        out = out[:pos] + mark + out[pos:]
    shift_hi = sum(len(m) for pos, _, m in inserts if pos <= hi)
    shift_lo = sum(len(m) for pos, _, m in inserts if pos < lo)
    out = " ".join(out[lo + shift_lo: hi + shift_hi].split())
    starts = (out.index(marks[CAUSE_MARKS[0]]), out.index(marks[EFFECT_MARKS[0]]))
    for mark, stand_in in marks.items():
        out = out.replace(stand_in, mark)
    return out, starts


def decide(probs: np.ndarray, threshold: float) -> np.ndarray:
    """The class index of each row of ``probs`` (pairs x LABELS): ``not_causal`` when its
    probability reaches ``threshold``, else the likelier of ``causal`` and ``reversed``."""
    probs = np.asarray(probs, dtype=np.float64).reshape(-1, len(LABELS))
    out = np.where(probs[:, 1] > probs[:, 0], 1, 0)
    return np.where(probs[:, 2] >= threshold, 2, out).astype(np.int64)


def evaluate(pred: np.ndarray, gold: np.ndarray) -> dict[str, Any]:
    """Accuracy, per-class precision/recall/F1, macro F1 and the confusion matrix (gold rows,
    predicted columns, in LABELS order) of class indices."""
    pred, gold = np.asarray(pred), np.asarray(gold)
    conf = np.zeros((len(LABELS), len(LABELS)), dtype=np.int64)
    for g, p in zip(gold, pred):
        conf[int(g), int(p)] += 1
    per = {}
    for i, name in enumerate(LABELS):
        tp = conf[i, i]
        p = tp / conf[:, i].sum() if conf[:, i].sum() else 0.0
        r = tp / conf[i, :].sum() if conf[i, :].sum() else 0.0
        f = 2 * p * r / (p + r) if p + r else 0.0
        per[name] = {"precision": round(float(p), 4), "recall": round(float(r), 4), "f1": round(float(f), 4),
                     "support": int(conf[i, :].sum())}
    return {"pairs": int(len(gold)), "accuracy": round(float((pred == gold).mean()) if len(gold) else 0.0, 4),
            "macro_f1": round(float(np.mean([per[n]["f1"] for n in LABELS])), 4), "per_class": per,
            "confusion": conf.tolist()}


def tune_threshold(probs: np.ndarray, gold: np.ndarray, grid: Sequence[float] = THRESHOLD_GRID) -> tuple[float, list]:
    """The threshold of ``grid`` with the best macro F1 on (``probs``, ``gold``) (the lowest of
    equals), and the figures of every one tried."""
    tried = [{"threshold": float(t), **{k: v for k, v in evaluate(decide(probs, t), gold).items()
                                        if k in ("accuracy", "macro_f1")}} for t in grid]
    best = max(tried, key=lambda r: (r["macro_f1"], -r["threshold"]))
    return float(best["threshold"]), tried


def read_pairs(path: str | os.PathLike) -> list[dict[str, Any]]:
    """The records of a verifier-training file, checked: text, cause/effect offsets, a label of
    LABELS."""
    from causalkg.core.errors import SchemaError
    from causalkg.core.jsonl import read_jsonl

    out = []
    for i, rec in enumerate(read_jsonl(path), start=1):
        try:
            ok = (isinstance(rec["text"], str) and rec["label"] in LABELS
                  and all(isinstance(rec[k][o], int) for k in ("cause", "effect") for o in ("start", "end")))
        except (KeyError, TypeError):
            ok = False
        if not ok:
            raise SchemaError(f"{path}:{i}: a verifier pair needs text, cause and effect offsets and a label of "
                              f"{', '.join(LABELS)}")
        out.append(rec)
    return out


def marked_texts(records: Sequence[Mapping[str, Any]]) -> tuple[list[str], list[tuple[int, int]]]:
    """The marked texts of ``records`` and the offsets of their opening marks (:func:`mark_pair_at`)."""
    marked = [mark_pair_at(r["text"], (r["cause"]["start"], r["cause"]["end"]),
                           (r["effect"]["start"], r["effect"]["end"])) for r in records]
    return [m for m, _ in marked], [at for _, at in marked]


def both_ways(given: np.ndarray, swapped: np.ndarray) -> np.ndarray:
    """The probabilities of pairs read as given and read with the spans swapped, averaged (the
    swapped reading's ``causal`` is the given pair's ``reversed`` and the other way round)."""
    return (np.asarray(given) + np.asarray(swapped)[:, [1, 0, 2]]) / 2.0


def pair_probabilities(encoder: Any, texts: Sequence[str], causes: Sequence[tuple[int, int]],
                       effects: Sequence[tuple[int, int]], w: np.ndarray, b: np.ndarray,
                       batch_size: int | None = None) -> np.ndarray:
    """P(causal, reversed, not_causal) of each pair, read both ways (:func:`both_ways`) in one
    encoder call."""
    n = len(texts)
    if n == 0:
        return np.zeros((0, len(LABELS)), dtype=np.float64)
    marked = [mark_pair_at(t, c, e) for t, c, e in zip(texts, causes, effects)]
    marked += [mark_pair_at(t, e, c) for t, c, e in zip(texts, causes, effects)]
    emb = encoder.encode([m for m, _ in marked], batch_size=batch_size, at_chars=[at for _, at in marked])
    p = head_probabilities(emb, w, b)
    return both_ways(p[:n], p[n:])


def head_probabilities(emb: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Softmax of the head over the span-start vectors (pairs x LABELS)."""
    z = np.asarray(emb, dtype=np.float64) @ np.asarray(w, dtype=np.float64).T + np.asarray(b, dtype=np.float64)
    z -= z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


# --- training ---------------------------------------------------------------------------------


def verifier_plan(cfg: Config, data: str | os.PathLike | None = None) -> dict[str, Any]:
    from causalkg.linking.encoder import model_fingerprint

    v = cfg["kg"]["verifier"]
    files = training_files(cfg, "kg.verifier.train_data", data, "verifier")
    if int(v["train_steps"]) < 1 or int(v["train_batch_size"]) < 1 or float(v["train_learning_rate"]) <= 0:
        raise ConfigError("train-verifier needs kg.verifier.train_steps >= 1, train_batch_size >= 1 and a positive "
                          "train_learning_rate")
    if int(v["max_length"]) < 16:
        raise ConfigError(f"kg.verifier.max_length must be at least 16, got {v['max_length']}")
    plan = {
        "version": VERIFIER_VERSION,
        "train_sha256": describe_input(files["train"])["sha256"],
        "val_sha256": describe_input(files["val"])["sha256"],
        "encoder": v["encoder"],
        "encoder_fingerprint": model_fingerprint(v["encoder"]),
        "labels": list(LABELS),
        "marks": {"cause": list(CAUSE_MARKS), "effect": list(EFFECT_MARKS), "context_chars": CONTEXT_CHARS},
        "reads": "opening-mark tokens",
        "steps": int(v["train_steps"]),
        "batch_size": int(v["train_batch_size"]),
        "learning_rate": float(v["train_learning_rate"]),
        "warmup": float(v["train_warmup"]),
        "seed": int(v["train_seed"]),
        "max_length": int(v["max_length"]),
        "frozen_layers": int(v["train_frozen_layers"]),
        "dtype": "float32",
        "threshold_grid": list(THRESHOLD_GRID),
    }
    plan["fingerprint"] = fingerprint(plan)
    plan["train_file"], plan["val_file"] = str(files["train"]), str(files["val"])
    return plan


def verifier_is_current(folder: Path, plan_fingerprint: str) -> tuple[bool, str]:
    manifest = read_manifest(folder) if (folder / HEAD).is_file() else None
    if not manifest or manifest.get("stage") != STAGE:
        return False, f"{folder} holds no trained verifier"
    if manifest.get("training", {}).get("fingerprint") != plan_fingerprint:
        return False, f"{folder} was trained with other data or settings"
    return True, f"{folder} is current (training fingerprint {plan_fingerprint[:12]})"


def _backend(v: Mapping[str, Any], cfg: Config) -> dict[str, Any]:
    return {"backend": str(v["backend"]), "cache_dir": cfg.path("paths.cache") / "onnx"}


def train_verifier(cfg: Config, *, output: str | os.PathLike | None = None, data: str | os.PathLike | None = None,
                   if_missing: bool = False) -> VerifierTrainResult:
    """Fine-tune the pair verifier on ``data`` (default ``kg.verifier.train_data``: train.jsonl and
    val.jsonl of marked pairs) and save it to ``output`` (default ``kg.verifier.model``). The
    threshold on P(not_causal) is chosen by macro F1 on validation. ``if_missing``: nothing when
    the folder holds a verifier trained with the same data and settings. Raises ConfigError on
    missing or one-class data, SchemaError on a bad record."""
    from causalkg.kg.gate import fine_tune_encoder
    from causalkg.linking.encoder import Encoder

    v = cfg["kg"]["verifier"]
    plan = verifier_plan(cfg, data)
    out = Path(output) if output is not None else cfg.path("kg.verifier.model")
    if if_missing:
        current, reason = verifier_is_current(out, plan["fingerprint"])
        if current:
            return VerifierTrainResult(out, skipped=True, reason=reason, manifest=read_manifest(out) or {})
    t0 = time.perf_counter()
    train, val = read_pairs(plan["train_file"]), read_pairs(plan["val_file"])
    for name, recs in (("train", train), ("val", val)):
        if len({r["label"] for r in recs}) < 2:
            raise ConfigError(f"verifier training data needs pairs of at least two labels in {name}")
    y_train = np.asarray([LABELS.index(r["label"]) for r in train], dtype=np.int64)
    y_val = np.asarray([LABELS.index(r["label"]) for r in val], dtype=np.int64)
    tmp = temp_dir_beside(out)
    dev = resolve_device(stage_device(cfg, "kg.verifier.device"))
    train_texts, train_at = marked_texts(train)
    w, b = fine_tune_encoder(plan["encoder"], train_texts, y_train, tmp / ENCODER_DIR, steps=plan["steps"],
                             batch_size=plan["batch_size"], learning_rate=plan["learning_rate"], warmup=plan["warmup"],
                             seed=plan["seed"], dtype="float32", device=dev, max_length=plan["max_length"],
                             classes=len(LABELS), frozen_layers=plan["frozen_layers"], at_chars=train_at,
                             desc="fine-tuning the pair verifier")
    tune_seconds = time.perf_counter() - t0
    encoder = Encoder(str(tmp / ENCODER_DIR), device=dev, batch_size=int(v["batch_size"]), **_backend(v, cfg))
    probs = pair_probabilities(encoder, [r["text"] for r in val], [(r["cause"]["start"], r["cause"]["end"]) for r in val],
                               [(r["effect"]["start"], r["effect"]["end"]) for r in val], w, b)
    threshold, tried = tune_threshold(probs, y_val)
    validation = {"threshold": threshold, "tried": tried, "argmax": evaluate(probs.argmax(axis=1), y_val),
                  "at_threshold": evaluate(decide(probs, threshold), y_val)}
    seconds = time.perf_counter() - t0
    public = {k: val_ for k, val_ in plan.items() if k not in ("train_file", "val_file")}
    manifest = build_manifest(
        STAGE, cfg, inputs={"train": plan["train_file"], "val": plan["val_file"]},
        counts={"train_pairs": len(train), **{f"train_{n}": int((y_train == i).sum()) for i, n in enumerate(LABELS)},
                "val_pairs": len(val)},
        timings={"fine_tune": tune_seconds, "total": seconds},
        models={"encoder": plan["encoder"], "fine_tuned_encoder": ENCODER_DIR,
                "encoder_backend": getattr(encoder, "backend", "torch")},
        extra={"training": public, "validation": validation, "recommended": {"threshold": threshold}},
    )
    np.savez(tmp / HEAD, w=np.asarray(w, dtype=np.float64), b=np.asarray(b, dtype=np.float64))
    write_manifest(tmp, manifest)
    replace_dir(tmp, out)
    return VerifierTrainResult(out, seconds=seconds, validation=validation, manifest=manifest)


# --- the model --------------------------------------------------------------------------------


class PairVerifier:
    """A trained verifier: ``probabilities(texts, causes, effects)``, ``judge(...)``.

    ``threshold``: None (or negative) takes the one tuned on validation (the manifest's).
    ``reversed``: what ``kg.mentions`` does with a pair read as reversed (flip | drop | keep)."""

    def __init__(self, folder: str | os.PathLike, *, device: str = "auto", batch_size: int = 64,
                 threshold: float | None = None, backend: str = "torch", cache_dir: str | os.PathLike | None = None,
                 reversed: str = "keep", encoder: Any | None = None):
        self.folder = Path(folder)
        manifest = read_manifest(self.folder) if (self.folder / HEAD).is_file() else None
        if not manifest or manifest.get("stage") != STAGE:
            raise ModelError(f"no trained pair verifier in {self.folder}",
                             hint="install the shipped one with 'causalkg kg install-models' (make kg does), train one "
                                  "with 'causalkg kg train-verifier', or assemble without it: "
                                  "--set kg.verifier.enabled=false")
        if manifest.get("training", {}).get("version") != VERIFIER_VERSION or not (self.folder / ENCODER_DIR).is_dir():
            raise ModelError(f"the pair verifier in {self.folder} was trained by an older version",
                             hint="retrain it with 'causalkg kg train-verifier --force'")
        if reversed not in REVERSED_MODES:
            raise ConfigError(f"kg.verifier.reversed must be one of {', '.join(REVERSED_MODES)}, got {reversed!r}")
        with np.load(self.folder / HEAD) as z:
            self.w, self.b = z["w"].astype(np.float64), z["b"].astype(np.float64)
        self.manifest = manifest
        tuned = float(manifest["recommended"]["threshold"])
        self.threshold = tuned if threshold is None or threshold < 0 else float(threshold)
        self.threshold_source = "model manifest" if threshold is None or threshold < 0 else "config"
        self.reversed = reversed
        self.batch_size = batch_size
        if encoder is None:
            from causalkg.linking.encoder import Encoder

            encoder = Encoder(str(self.folder / ENCODER_DIR), device=device, batch_size=batch_size, backend=backend,
                              cache_dir=cache_dir)
        self.encoder = encoder

    @classmethod
    def from_config(cls, cfg: Config) -> "PairVerifier":
        v = cfg["kg"]["verifier"]
        return cls(cfg.path("kg.verifier.model"), device=stage_device(cfg, "kg.verifier.device"),
                   batch_size=int(v["batch_size"]), threshold=float(v["threshold"]), reversed=str(v["reversed"]),
                   **_backend(v, cfg))

    def probabilities(self, texts: Sequence[str], causes: Sequence[tuple[int, int]],
                      effects: Sequence[tuple[int, int]]) -> np.ndarray:
        """P(causal, reversed, not_causal) of each pair (offsets into its text), read both ways."""
        return pair_probabilities(self.encoder, texts, causes, effects, self.w, self.b, self.batch_size)

    def judge(self, texts: Sequence[str], causes: Sequence[tuple[int, int]],
              effects: Sequence[tuple[int, int]]) -> list[dict[str, Any]]:
        """One verdict per pair: ``{"verdict": a label, "score": its probability,
        "probabilities": {label: p}}``."""
        # decided on the probabilities as recorded (4 decimals), so the verdict follows from them
        probs = np.round(self.probabilities(texts, causes, effects), 4)
        out = []
        for p, k in zip(probs, decide(probs, self.threshold)):
            out.append({"verdict": LABELS[int(k)], "score": round(float(p[int(k)]), 4),
                        "probabilities": {n: round(float(x), 4) for n, x in zip(LABELS, p)}})
        return out

    def describe(self) -> dict[str, Any]:
        return {"model": str(self.folder), "head_sha256": describe_input(self.folder / HEAD)["sha256"],
                "threshold": self.threshold, "threshold_source": self.threshold_source, "reversed": self.reversed,
                "encoder_backend": getattr(self.encoder, "backend", "torch")}


__all__ = ["PairVerifier", "train_verifier", "verifier_plan", "verifier_is_current",
           "mark_pair", "mark_pair_at", "decide", "evaluate", "tune_threshold", "both_ways", "pair_probabilities",
           "LABELS",
           "VerifierTrainResult"]
