"""The learned sentence gate: which sentences are worth an extractor's time.

A causal-sentence classifier made of two scores added in one linear function:

1. the encoder the toolkit already has (all-MiniLM-L6-v2), **fine-tuned** as a classifier
   (:func:`fine_tune_encoder`: its mean-pooled, L2-normalised embedding into one linear unit,
   ``extract.gate.train.steps`` steps, bfloat16 where the CPU has it) and saved in the gate's
   folder as a sentence-transformers model, so it runs on ONNX Runtime like the linker's;
2. a logistic regression over the sentence's words (TF-IDF of word unigrams and bigrams,
   :class:`WordFeatures`) and one feature saying whether it carries a cue of the causal lexicon
   (``kg.cues``): the connectives ("due to", "led to", "after") stay visible.

Each score is divided by its spread on validation and they are mixed in the share
(``extract.gate.train.mix``) that ranks validation best. The frozen encoder with the regression
read 51% of the snapshot corpus at 95% held-out recall (version 1), the words beside it 45%
(version 2); the fine-tuned encoder with the words reads well under 40%
(``python -m bench gate``). ``causalkg kg train-gate`` trains it from
``snapshots/gate-training/`` (Causal News Corpus subtask 1 and SemEval-2010 Task 8, causal vs
not; see its SOURCE.md).

**A shallower encoder** (``extract.gate.train.encoder_layers`` = N > 0): only the encoder's first N
transformer layers are kept, fine-tuned and saved, so the folder's ``encoder/config.json`` says
N and the gate runs N layers wherever it is loaded (the manifest records N; a folder whose
manifest and encoder disagree is refused). The encoder's cost per sentence falls about in
proportion (``python -m bench gate_layers``).

The decision threshold is chosen on the validation split: the highest score that keeps
``extract.gate.train.target_recall`` of its gold causal sentences. The test split is never read here
(``bench/bench_gate.py`` reports recall on it, and the share of the snapshot corpus read).

**The first pass** (``extract.gate.first_pass``): the word model's share of the gate's logit (the
n-grams and the cue, no encoder) costs microseconds a sentence, the encoder milliseconds. The
encoder scores only the sentences whose word score reaches the first-pass threshold: the highest
one that keeps ``extract.gate.first_pass_keep`` of the validation sentences the whole gate passes
(1.0: the lowest word score among them). Training stores it in the manifest (``first_pass``); for
a gate trained before (the shipped one) it is computed once from the validation file the
manifest names by checksum, in float32, and cached (``first_pass_threshold``). A sentence the
first pass stops has ``gate_pass`` False, no ``gate_score`` and ``gate_reason`` "first pass".

The model folder (``extract.gate.model``, default ``models/causal-gate``) holds ``encoder/``
(the fine-tuned sentence encoder), ``gate.npz`` (weights of the embedding and cue features,
weights and IDF of the words, bias), ``words.json`` (the word n-grams, in weight order) and
``manifest.json`` (training fingerprint, threshold, validation curve).
Flow: kg.sentences (sentences, cue matches) -> here (gate score) -> candidates -> extractors.
"""

from __future__ import annotations

import json
import logging
import math
import os
import random
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from causalkg.core.models import (bucketed_batches, fine_tune, resolve_device, resolve_encoder_path, stage_device, training_dtype,
                             training_files)
from causalkg.core.config import Config, block
from causalkg.core.errors import ConfigError, ModelError
from causalkg.core.jsonl import atomic_write, replace_dir, temp_dir_beside
from causalkg.core.manifest import build_manifest, describe_input, fingerprint, read_manifest, write_manifest
from causalkg.core.progress import progress
from causalkg.kg.settings import GateSettings, GateTrainSettings

log = logging.getLogger(__name__)

STAGE = "kg.train-gate"
WEIGHTS = "gate.npz"
WORDS = "words.json"
GATE_VERSION = 3  # bump when the features change (2: word n-grams; 3: the encoder fine-tuned as a classifier)
ENCODER_DIR = "encoder"  # the fine-tuned sentence encoder, a sentence-transformers folder inside the gate's
LOGIT_SCALE = 10.0  # the head reads an L2-normalised embedding; this scale lets its logits reach +-10
WORD_MIN_DF = 2  # an n-gram is a feature when at least this many training sentences carry it


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
    """The gate's dense input: [MiniLM embedding | cue hit] per text."""
    emb = encoder.encode(list(texts), batch_size=batch_size)
    return np.hstack([emb, np.asarray(cues, dtype=np.float32).reshape(-1, 1)])


_TOKEN = re.compile(r"(?u)\b\w\w+\b")


class WordFeatures:
    """TF-IDF of lower-cased word unigrams and bigrams (tokens of two or more word characters),
    with sublinear term frequency (1 + ln tf), smoothed IDF (ln((1 + n) / (1 + df)) + 1) and
    L2-normalised rows: the usual text-classification features, written out here so the gate's
    folder holds plain data (the n-grams and their IDF) and no pickled object."""

    def __init__(self, terms: Sequence[str], idf: np.ndarray):
        self.terms = list(terms)
        self.index = {t: i for i, t in enumerate(self.terms)}
        self.idf = np.asarray(idf, dtype=np.float64)

    @staticmethod
    def grams(text: str) -> list[str]:
        toks = _TOKEN.findall(text.lower())
        return toks + [f"{a} {b}" for a, b in zip(toks, toks[1:])]

    @classmethod
    def fit(cls, texts: Sequence[str], min_df: int = 2) -> "WordFeatures":
        df: dict[str, int] = {}
        for text in texts:
            for g in set(cls.grams(text)):
                df[g] = df.get(g, 0) + 1
        terms = sorted(g for g, c in df.items() if c >= min_df)
        n = len(texts)
        idf = np.array([math.log((1 + n) / (1 + df[t])) + 1.0 for t in terms], dtype=np.float64)
        return cls(terms, idf)

    def __len__(self) -> int:
        return len(self.terms)

    def transform(self, texts: Sequence[str]) -> Any:
        """A ``scipy.sparse.csr_matrix`` (texts x n-grams)."""
        from scipy import sparse

        indptr, indices, data = [0], [], []
        for text in texts:
            counts: dict[int, int] = {}
            for g in self.grams(text):
                j = self.index.get(g)
                if j is not None:
                    counts[j] = counts.get(j, 0) + 1
            cols = sorted(counts)
            vals = np.array([(1.0 + math.log(counts[j])) * self.idf[j] for j in cols], dtype=np.float64)
            norm = float(np.sqrt((vals * vals).sum()))
            indices += cols
            data += list(vals / norm) if norm > 0 else []
            indptr.append(len(indices))
        return sparse.csr_matrix((np.asarray(data, dtype=np.float64), np.asarray(indices, dtype=np.int64),
                                  np.asarray(indptr, dtype=np.int64)), shape=(len(texts), len(self.terms)))


def fit_sparse_logistic(words: Any, dense: np.ndarray, y: np.ndarray, c: float) -> tuple[np.ndarray, np.ndarray, float]:
    """L2-regularised logistic regression (scikit-learn, L-BFGS; deterministic) over
    [words | dense]: (word weights, dense weights, bias). ``c``: inverse regularisation strength."""
    from scipy import sparse
    from sklearn.linear_model import LogisticRegression

    x = sparse.hstack([words, sparse.csr_matrix(dense.astype(np.float64))]).tocsr()
    m = LogisticRegression(C=c, max_iter=5000).fit(x, y)
    coef = m.coef_[0]
    n = words.shape[1]
    return coef[:n].astype(np.float64), coef[n:].astype(np.float32), float(m.intercept_[0])


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-z))


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


def gate_dtype(cfg: Config) -> str:
    """The numeric format the gate's encoder runs in when extracting, from ``extract.dtype``
    (one setting for the extraction's models): bfloat16 with ``bfloat16``, float16 with
    ``float16`` and ``auto`` (on a GPU; both are float32 on a CPU, ``linking.encoder.encoder_dtype``),
    float32 with ``float32`` and the int8 formats (the gate's encoder is not quantized: per
    channel it moved 30 of 1,892 decisions, README). Training and the threshold's tuning always
    score in float32."""
    from causalkg.kg.qa_decode import check_dtype

    dtype = check_dtype(str(cfg["extract"]["dtype"]))
    return {"bfloat16": "bfloat16", "float16": "float16", "auto": "float16"}.get(dtype, "float32")


def fine_tune_encoder(base: str, texts: Sequence[str], y: np.ndarray, out_dir: Path, *, steps: int,
                      batch_size: int, learning_rate: float, warmup: float, seed: int, dtype: str,
                      device: str, max_length: int = 128, classes: int = 1,
                      frozen_layers: int = 0, keep_layers: int = 0,
                      at_chars: Sequence[Sequence[int]] | None = None,
                      desc: str = "fine-tuning the gate's encoder") -> tuple[np.ndarray, Any]:
    """Fine-tune the sentence encoder ``base`` as a classifier: its mean-pooled, L2-normalised
    embedding (what sentence-transformers computes) times ``LOGIT_SCALE`` into one linear unit
    (``classes`` 1: binary cross-entropy on ``y`` in {0, 1}, the causal-sentence gate) or into
    ``classes`` units (cross-entropy on ``y`` in 0..classes-1, the pair verifier), AdamW with
    linear warm-up and decay, the token embeddings frozen (and the lowest ``frozen_layers``
    transformer layers: a cheaper backward pass), bfloat16 autocast when ``dtype`` says so.
    ``keep_layers`` (> 0): only the first that many transformer layers are kept, fine-tuned and
    saved (the saved config says so, so the folder loads and runs that many); 0 keeps them all.
    Raises ConfigError when ``keep_layers`` exceeds the encoder's layers.
    ``at_chars`` (k character offsets per text): the head reads, instead of the mean, the k token
    vectors at those characters, each L2-normalised, side by side (k*dim inputs; what
    ``Encoder.encode(at_chars=...)`` computes: the pair verifier's span-start marks). Saves the
    encoder to ``out_dir`` as a sentence-transformers folder and returns the head
    over its embeddings: (weights, bias) of one unit, or (classes x dim weights, classes biases)."""
    import torch
    from sentence_transformers import SentenceTransformer

    torch.manual_seed(seed)
    st = SentenceTransformer(resolve_encoder_path(base), device=device)
    model, tok = st[0].auto_model, st.tokenizer
    if keep_layers:
        layers = len(model.encoder.layer)
        if keep_layers > layers:
            raise ConfigError(f"extract.gate.train.encoder_layers = {keep_layers}, but encoder {base!r} has {layers} layers",
                              hint=f"set it to 1-{layers}, or 0 for all")
        # The layers above the first keep_layers are dropped before fine-tuning: the head learns
        # on what the truncated encoder computes, and inference runs only those layers.
        model.encoder.layer = torch.nn.ModuleList(list(model.encoder.layer)[:keep_layers])
        model.config.num_hidden_layers = keep_layers
    for p in model.embeddings.parameters():
        p.requires_grad = False
    for layer in model.encoder.layer[:frozen_layers]:
        for p in layer.parameters():
            p.requires_grad = False
    k = len(at_chars[0]) if at_chars is not None else 1
    head = torch.nn.Linear(model.config.hidden_size * k, classes).to(device)
    params = [p for p in list(model.parameters()) + list(head.parameters()) if p.requires_grad]
    enc = tok(list(texts), truncation=True, max_length=max_length)
    labels = torch.as_tensor(np.asarray(y, dtype=np.float32 if classes == 1 else np.int64))
    if at_chars is not None:
        from causalkg.linking.encoder import char_tokens

        where = torch.as_tensor(char_tokens(enc, at_chars))

    def loss_of(idx: list[int]) -> Any:
        batch = tok.pad([{k: enc[k][i] for k in enc.keys()} for i in idx], return_tensors="pt")
        batch = {k: v.to(device) for k, v in batch.items()}
        with torch.autocast(device_type=device.split(":")[0], dtype=torch.bfloat16, enabled=dtype == "bfloat16"):
            hidden = model(**batch).last_hidden_state
        if at_chars is not None:
            rows = torch.arange(len(idx), device=device)[:, None]
            picked = torch.nn.functional.normalize(hidden.float()[rows, where[idx].to(device)], dim=-1)
            emb = picked.reshape(len(idx), -1)
        else:
            mask = batch["attention_mask"].unsqueeze(-1).float()
            emb = torch.nn.functional.normalize((hidden.float() * mask).sum(1) / mask.sum(1).clamp(min=1.0), dim=-1)
        if classes == 1:
            logits = LOGIT_SCALE * head(emb).squeeze(-1)
            return torch.nn.functional.binary_cross_entropy_with_logits(logits, labels[idx].to(device))
        return torch.nn.functional.cross_entropy(LOGIT_SCALE * head(emb), labels[idx].to(device))

    batches = bucketed_batches([len(ids) for ids in enc["input_ids"]], batch_size, steps, random.Random(seed),
                               ties_by_index=True)
    fine_tune(model, batches, loss_of, params=params, steps=steps, learning_rate=learning_rate, warmup=warmup,
              desc=desc)
    st.save(str(out_dir))
    w = head.weight.detach().cpu().numpy().astype(np.float64) * LOGIT_SCALE
    b = head.bias.detach().cpu().numpy().astype(np.float64) * LOGIT_SCALE
    if classes == 1:
        return w[0], float(b[0])
    return w, b


def encoder_layers(folder: str | os.PathLike) -> int | None:
    """The transformer layers of the sentence-transformers encoder saved in ``folder`` (its
    ``config.json``'s ``num_hidden_layers``; None when it names none)."""
    path = Path(folder) / "config.json"
    if not path.is_file():
        return None
    n = json.loads(path.read_text(encoding="utf-8")).get("num_hidden_layers")
    return int(n) if n is not None else None


FIRST_PASS = "first_pass"  # the manifest's block: {"keep": share, "threshold": word logit, ...}


def word_logit(words: Any, w_words: np.ndarray, cues: np.ndarray, w_cue: float) -> np.ndarray:
    """The word model's share of the gate's logit: the n-gram features ``words`` (rows of
    ``WordFeatures.transform``) times their weights, plus the cue feature times its weight (no
    encoder, no bias). What the first pass reads, in training and in ``SentenceGate``."""
    return np.asarray(words @ w_words, dtype=np.float64) + np.asarray(cues, dtype=np.float64) * float(w_cue)


def first_pass_threshold(word: np.ndarray, passed: np.ndarray, keep: float) -> float:
    """The first pass's threshold on the word logit: the highest t such that ``word >= t`` keeps
    at least ``keep`` of the sentences the whole gate passes (``passed``; validation's); with
    ``keep`` 1.0 the lowest word logit among them. -inf (stop nothing) when none passes."""
    if not np.any(passed):
        return float("-inf")
    return float(threshold_for_recall(np.asarray(word, dtype=np.float64), np.asarray(passed, dtype=np.float64), keep))


def first_pass_block(word: np.ndarray, passed: np.ndarray, keep: float) -> dict[str, Any]:
    """The manifest's ``first_pass`` block from validation's word logits and the whole gate's
    decisions: the threshold and what it keeps there."""
    t = first_pass_threshold(word, passed, keep)
    read = np.asarray(word) >= t
    passed = np.asarray(passed, dtype=bool)
    return {"keep": float(keep), "threshold": t, "sentences": int(len(word)), "gate_passes": int(passed.sum()),
            "gate_passes_kept": int((read & passed).sum()), "encoder_reads": round(float(read.mean()) if len(read) else 0.0, 4)}


# --- the model --------------------------------------------------------------------------------


class SentenceGate:
    """A trained gate: ``scores(texts, cues)``, ``mark(sentences)``.

    ``threshold``: None takes the one tuned on validation (the manifest's). ``first_pass``: the
    word-logit threshold below which ``mark`` stops a sentence before the encoder (None: every
    sentence is encoded; ``first_pass_threshold`` / ``load_first_pass`` give it)."""

    def __init__(self, folder: str | os.PathLike, *, device: str = "auto", batch_size: int = 64,
                 threshold: float | None = None, encoder: Any | None = None, backend: str = "torch",
                 cache_dir: str | os.PathLike | None = None, dtype: str = "float32",
                 first_pass: float | None = None):
        self.folder = Path(folder)
        weights = self.folder / WEIGHTS
        manifest = read_manifest(self.folder)
        if not weights.is_file() or not manifest or manifest.get("stage") != STAGE:
            raise ModelError(f"no trained sentence gate in {self.folder}",
                             hint="train it with 'causalkg kg train-gate'")
        if (manifest.get("training", {}).get("version") != GATE_VERSION or not (self.folder / WORDS).is_file()
                or not (self.folder / ENCODER_DIR).is_dir()):
            raise ModelError(f"the sentence gate in {self.folder} was trained by an older version",
                             hint="retrain it with 'causalkg kg train-gate --force'")
        with np.load(weights) as z:
            self.w = z["w"].astype(np.float32)
            self.w_words = z["w_words"].astype(np.float64)
            idf = z["idf"]
            self.b = float(z["b"])
        self.words = WordFeatures(json.loads((self.folder / WORDS).read_text(encoding="utf-8")), idf)
        self.manifest = manifest
        tuned = float(manifest["recommended"]["threshold"])
        self.threshold = tuned if threshold is None else float(threshold)
        self.threshold_source = "model manifest" if threshold is None else "config"
        self.encoder_name = str(self.folder / ENCODER_DIR)
        # the transformer layers the saved encoder runs (its config; fewer than the base
        # encoder's when trained with extract.gate.train.encoder_layers)
        self.encoder_layers = encoder_layers(self.folder / ENCODER_DIR)
        trained = manifest.get("training", {}).get("encoder_layers")
        if trained and trained != self.encoder_layers:
            raise ModelError(f"the sentence gate in {self.folder} was trained with {trained} encoder layers, but its "
                             f"encoder/ holds {self.encoder_layers}", hint="retrain it with 'causalkg kg train-gate --force'")
        self.batch_size = batch_size
        if encoder is None:
            from causalkg.linking.encoder import Encoder

            encoder = Encoder(self.encoder_name, device=device, batch_size=batch_size, backend=backend, cache_dir=cache_dir,
                              dtype=dtype)
        self.encoder = encoder
        self.backend, self.cache_dir = backend, cache_dir
        self.first_pass = None if first_pass is None else float(first_pass)
        self.first_pass_source = ""
        self.sentences = 0
        self.kept = 0
        self.encoded = 0  # sentences the encoder scored (the rest stopped by the first pass)
        self.seconds = 0.0

    def word_logits(self, texts: Sequence[str], cues: np.ndarray, words: Any = None) -> np.ndarray:
        """The word model's share of each text's logit: its n-grams and its cue feature (no
        encoder, no bias). What the first pass reads. ``words``: ``self.words.transform(texts)``."""
        if len(texts) == 0:
            return np.zeros(0, dtype=np.float64)
        words = self.words.transform(texts) if words is None else words
        return word_logit(words, self.w_words, cues, self.w[-1])

    def scores(self, texts: Sequence[str], cues: np.ndarray, words: Any = None) -> np.ndarray:
        """The whole gate's probability per text (``words``: ``self.words.transform(texts)``)."""
        if len(texts) == 0:
            return np.zeros(0, dtype=np.float32)
        x = features(self.encoder, texts, cues, self.batch_size)
        words = self.words.transform(texts) if words is None else words
        z = x.astype(np.float64) @ self.w.astype(np.float64) + words @ self.w_words + self.b
        return _sigmoid(z).astype(np.float32)

    def mark(self, sentences: Sequence[Any]) -> None:
        """Set ``gate_score``, ``gate_pass`` and ``gate_reason`` of each ``kg.sentences.Sentence``:
        with a first pass, the encoder scores only the sentences whose word logit reaches it;
        the others are stopped there (no score; reason "first pass")."""
        t0 = time.perf_counter()
        cues = np.asarray([1.0 if s.cues else 0.0 for s in sentences], dtype=np.float32)
        texts = [s.text for s in sentences]
        words = self.words.transform(texts) if texts else None
        if self.first_pass is None or not texts:
            idx = np.arange(len(texts))
        else:
            idx = np.flatnonzero(self.word_logits(texts, cues, words) >= self.first_pass)
        scores = self.scores([texts[i] for i in idx], cues[idx], words[idx] if len(idx) else None)
        for s in sentences:
            s.gate_score, s.gate_pass, s.gate_reason = None, False, "first pass"
        for i, p in zip(idx, scores):
            s = sentences[i]
            s.gate_score = round(float(p), 4)
            s.gate_pass = bool(p >= self.threshold)
            s.gate_reason = "gate"
        self.sentences += len(sentences)
        self.encoded += len(idx)
        self.kept += int(sum(1 for s in sentences if s.gate_pass))
        self.seconds += time.perf_counter() - t0

    def describe(self) -> dict[str, Any]:
        return {"gate": "learned", "model": str(self.folder), "model_sha256": describe_input(self.folder / WEIGHTS)["sha256"],
                "encoder": self.encoder_name, "encoder_layers": self.encoder_layers,
                "encoder_backend": getattr(self.encoder, "backend", "torch"),
                "encoder_dtype": getattr(self.encoder, "dtype", "float32"),
                "threshold": self.threshold, "threshold_source": self.threshold_source,
                "first_pass": self.first_pass, **({"first_pass_source": self.first_pass_source} if self.first_pass_source else {})}


def load_first_pass(gate: SentenceGate, *, keep: float, validation: str | os.PathLike | None, segmenter: Any,
                    cache_dir: str | os.PathLike | None = None) -> tuple[float, str]:
    """The first-pass threshold of ``gate`` that keeps ``keep`` of the validation sentences the
    whole gate passes at its threshold, and where it came from: the manifest's ``first_pass``
    block when training stored one for this ``keep`` and a threshold no higher; else computed from
    ``validation`` (the val.jsonl the gate was trained with, checked by its checksum) in float32,
    and kept in ``cache_dir`` (keyed by the weights, the validation file, ``keep`` and the
    threshold) so that it is computed once. ``segmenter``: the cue lexicon's (the cue feature).
    Raises ModelError when the manifest holds none and the validation file is missing or another."""
    block = gate.manifest.get(FIRST_PASS) or {}
    # A gate threshold above the block's passes a subset of its sentences: the block holds for it too.
    if block and float(block.get("keep", -1)) == float(keep) and gate.threshold >= float(block.get("gate_threshold", 2)):
        return float(block["threshold"]), "model manifest"
    want = gate.manifest.get("training", {}).get("val_sha256")
    path = Path(validation) if validation is not None else None
    if path is None or not path.is_file() or describe_input(path)["sha256"] != want:
        raise ModelError(f"the sentence gate in {gate.folder} holds no first-pass threshold, and its validation "
                         f"file is not at {path} (checksum {str(want)[:12]})",
                         hint="point extract.gate.train.data at the data it was trained on, retrain it with "
                              "'causalkg kg train-gate --force', or set extract.gate.first_pass = false")
    key = fingerprint({"weights": describe_input(gate.folder / WEIGHTS)["sha256"], "val": want, "keep": float(keep),
                       "threshold": gate.threshold, "version": GATE_VERSION})
    cached = Path(cache_dir) / f"{key}.json" if cache_dir is not None else None
    if cached is not None and cached.is_file():
        return float(json.loads(cached.read_text(encoding="utf-8"))["threshold"]), "validation (cached)"
    from causalkg.core.jsonl import read_jsonl

    texts = [r["text"] for r in read_jsonl(path)]
    cues = cue_hits(texts, segmenter)
    encoder = gate.encoder
    if getattr(encoder, "dtype", "float32") != "float32":  # the threshold is one number on every machine
        from causalkg.linking.encoder import Encoder

        encoder = Encoder(gate.encoder_name, device="cpu", batch_size=gate.batch_size, backend=gate.backend,
                          cache_dir=gate.cache_dir)
    twin = SentenceGate(gate.folder, threshold=gate.threshold, encoder=encoder, batch_size=gate.batch_size)
    words = twin.words.transform(texts)
    passed = twin.scores(texts, cues, words) >= gate.threshold
    out = first_pass_block(twin.word_logits(texts, cues, words), passed, keep) | {"gate_threshold": gate.threshold}
    if cached is not None:
        cached.parent.mkdir(parents=True, exist_ok=True)
        with atomic_write(cached) as fh:
            json.dump(out, fh, indent=1)
    return float(out["threshold"]), "validation"


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
    tr = block(cfg, "extract.gate.train", GateTrainSettings)
    files = training_files(cfg, "extract.gate.train.data", data, "gate")
    recall = float(tr.target_recall)
    if not 0 < recall <= 1:
        raise ConfigError("extract.gate.train.target_recall must be in (0, 1]")
    if int(tr.steps) < 1 or int(tr.batch_size) < 1 or float(tr.learning_rate) <= 0:
        raise ConfigError("train-gate needs extract.gate.train.steps >= 1, extract.gate.train.batch_size >= 1 "
                          "and a positive learning rate")
    if not tr.mix or not all(0 <= float(v) <= 1 for v in tr.mix):
        raise ConfigError("extract.gate.train.mix must be a non-empty list of shares in [0, 1]")
    plan = {
        "version": GATE_VERSION,
        "train_sha256": describe_input(files["train"])["sha256"],
        "val_sha256": describe_input(files["val"])["sha256"],
        "encoder": tr.encoder,
        "encoder_fingerprint": model_fingerprint(tr.encoder),
        # only when set: a gate of all the layers keeps the fingerprint it was trained with
        **({"encoder_layers": int(tr.encoder_layers)} if int(tr.encoder_layers) else {}),
        "target_recall": recall,
        "c": [float(v) for v in tr.c],
        "words": {"ngrams": [1, 2], "min_df": WORD_MIN_DF},
        "mix": [float(v) for v in tr.mix],
        "steps": int(tr.steps),
        "batch_size": int(tr.batch_size),
        "learning_rate": float(tr.learning_rate),
        "warmup": float(tr.warmup),
        "seed": int(tr.seed),
        "dtype": str(tr.dtype),
        "logit_scale": LOGIT_SCALE,
        "cue_lexicon": {"base": describe_input(BASE_CUES)["sha256"], "cnc": describe_input(CNC_CUES)["sha256"],
                        "min_count": int(ex["cue_min_count"]), "min_precision": float(ex["cue_min_precision"])},
    }
    plan["fingerprint"] = fingerprint(plan)
    plan["train_file"], plan["val_file"] = str(files["train"]), str(files["val"])
    return plan


def train_gate(cfg: Config, *, output: str | os.PathLike | None = None, data: str | os.PathLike | None = None,
               if_missing: bool = False) -> GateTrainResult:
    """Train the gate on ``data`` (default ``extract.gate.train.data``) and save it to
    ``output`` (default ``extract.gate.model``). The regularisation is chosen from
    ``extract.gate.train.c`` by validation average precision, the threshold by
    ``extract.gate.train.target_recall`` on validation. ``if_missing``: nothing when current."""
    from causalkg.core.jsonl import read_jsonl
    from causalkg.kg.sentences import make_cue_segmenter

    plan = gate_plan(cfg, data)
    out = Path(output) if output is not None else cfg.path("extract.gate.model")
    if if_missing:
        current, reason = gate_is_current(out, plan["fingerprint"])
        if current:
            return GateTrainResult(out, skipped=True, reason=reason, manifest=read_manifest(out) or {})
    t0 = time.perf_counter()
    from causalkg.linking.encoder import Encoder

    segmenter = make_cue_segmenter(cfg["extract"])
    train = list(read_jsonl(plan["train_file"]))
    val = list(read_jsonl(plan["val_file"]))
    for recs in (train, val):
        if not recs or not any(r.get("causal") for r in recs) or all(r.get("causal") for r in recs):
            raise ConfigError("gate training data needs causal and non-causal sentences in train and val")
    t_train, t_val = [r["text"] for r in train], [r["text"] for r in val]
    y_train = np.asarray([1.0 if r["causal"] else 0.0 for r in train], dtype=np.float32)
    y_val = np.asarray([1.0 if r["causal"] else 0.0 for r in val], dtype=np.float32)

    tmp = temp_dir_beside(out)
    # 1. The encoder, fine-tuned as a classifier of the training sentences.
    dev = resolve_device(stage_device(cfg, "extract.device"))
    dtype = training_dtype(plan["dtype"], dev)
    head_w, head_b = fine_tune_encoder(plan["encoder"], t_train, y_train, tmp / ENCODER_DIR, steps=plan["steps"],
                                       batch_size=plan["batch_size"], learning_rate=plan["learning_rate"],
                                       warmup=plan["warmup"], seed=plan["seed"], dtype=dtype, device=dev,
                                       keep_layers=int(plan.get("encoder_layers", 0)))
    tune_seconds = time.perf_counter() - t0
    encoder = Encoder(str(tmp / ENCODER_DIR), device=dev, **encoder_backend(cfg))
    x_val = features(encoder, t_val, cue_hits(t_val, segmenter)).astype(np.float64)
    ft_val = x_val[:, :-1] @ head_w + head_b
    # 2. A logistic regression over the words and the cue feature.
    cue_train = cue_hits(t_train, segmenter).reshape(-1, 1)
    words = WordFeatures.fit(t_train, min_df=WORD_MIN_DF)
    wtrain, wval = words.transform(t_train), words.transform(t_val)
    best = None
    tried = []
    for c in progress(plan["c"], desc="fitting the gate's word model", unit="C"):
        ww, wc, wb = fit_sparse_logistic(wtrain, cue_train, y_train, c)
        lr_val = wval @ ww + x_val[:, -1] * float(wc[0]) + wb
        ap = average_precision(lr_val, y_val)
        tried.append({"c": c, "val_average_precision": round(ap, 4)})
        if best is None or ap > best[0]:
            best = (ap, c, ww, float(wc[0]), wb, lr_val)
    _, c, ww, wcue, wb, lr_val = best
    # 3. The two scores, each divided by its spread on validation, mixed in the share that ranks
    # validation best; one linear function over [embedding | cue | words] in the end.
    sd_ft, sd_lr = float(np.std(ft_val)) or 1.0, float(np.std(lr_val)) or 1.0
    mixes = [{"mix": a, "val_average_precision": round(average_precision(a * ft_val / sd_ft + (1 - a) * lr_val / sd_lr,
                                                                          y_val), 4)} for a in plan["mix"]]
    mix = max(mixes, key=lambda m: m["val_average_precision"])["mix"]  # the first of equals
    w = np.concatenate([mix * head_w / sd_ft, [(1 - mix) * wcue / sd_lr]]).astype(np.float32)
    w_words = (1 - mix) * ww / sd_lr
    b = mix * head_b / sd_ft + (1 - mix) * wb / sd_lr
    val_scores = _sigmoid(x_val @ w.astype(np.float64) + wval @ w_words + b)
    fit_seconds = time.perf_counter() - t0 - tune_seconds
    # Not rounded: a threshold rounded up past the last kept score would lose that sentence.
    threshold = float(threshold_for_recall(val_scores, y_val, plan["target_recall"]))
    grid = sorted({round(float(t), 3) for t in np.linspace(0.02, 0.9, 45)})
    keep = float(block(cfg, "extract.gate", GateSettings).first_pass_keep)
    first_pass = first_pass_block(word_logit(wval, w_words, x_val[:, -1], w[-1]), val_scores >= threshold, keep) | {
        "gate_threshold": threshold}
    validation = {
        "sentences": len(val), "causal": int(y_val.sum()), "c": c, "words": len(words), "tried": tried,
        "mix": mix, "mixes": mixes, "dtype": dtype,
        "threshold": threshold, "at_threshold": curve(val_scores, y_val, [threshold])[0],
        "curve": curve(val_scores, y_val, grid),
    }
    seconds = time.perf_counter() - t0
    public = {k: v for k, v in plan.items() if k not in ("train_file", "val_file")}
    manifest = build_manifest(
        STAGE, cfg, inputs={"train": plan["train_file"], "val": plan["val_file"]},
        counts={"train_sentences": len(train), "train_causal": int(y_train.sum())},
        timings={"fine_tune": tune_seconds, "fit": fit_seconds, "total": seconds},
        models={"encoder": plan["encoder"], "fine_tuned_encoder": ENCODER_DIR,
                "encoder_backend": getattr(encoder, "backend", "torch"),
                "encoder_layers": encoder_layers(tmp / ENCODER_DIR)},
        extra={"training": public, "validation": validation, "recommended": {"threshold": threshold},
               FIRST_PASS: first_pass},
    )
    np.savez(tmp / WEIGHTS, w=w, b=np.float64(b), w_words=w_words, idf=words.idf)
    (tmp / WORDS).write_text(json.dumps(words.terms, ensure_ascii=False), encoding="utf-8")
    write_manifest(tmp, manifest)
    replace_dir(tmp, out)
    return GateTrainResult(out, seconds=seconds, validation=validation, manifest=manifest)


__all__ = ["SentenceGate", "train_gate", "load_first_pass", "first_pass_threshold", "first_pass_block", "gate_plan", "gate_is_current", "curve",
           "threshold_for_recall", "fit_sparse_logistic", "features", "cue_hits", "WordFeatures"]
