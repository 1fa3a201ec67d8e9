"""Extractive question answering without the transformers pipeline: batching and span decoding.

transformers 5.3 and later ship no ``question-answering`` pipeline, so ``QAModel`` loads any
``AutoModelForQuestionAnswering`` (a local folder, or a hub name already in the local cache)
and decodes answer spans from the start/end logits itself:

- each (question, context) pair is tokenised with ``truncation="only_second"``; a context too
  long for ``max_seq_length`` is cut into windows ``doc_stride`` tokens apart (overflowing
  tokens), and the offset mapping takes every token back to characters of the context;
- features are padded to a fixed *bucket* length (their own length rounded up to a multiple of
  ``PAD_MULTIPLE`` tokens, ``PAD_MULTIPLE_ONNX`` on ONNX Runtime) and batched only with features
  of the same bucket, so a batch of short sentences costs what short sentences cost, and a
  feature's logits do not depend on what else is in its batch: the forward pass a feature goes
  through has the same length whatever the shard or batch size (padding to the longest feature
  of a batch, as before, changed scores in the 6th decimal with the batch's composition);
- in each window the best span is the argmax of start + end logits over context tokens with
  ``0 <= end - start < max_answer_tokens``; the *null score* is the logit sum at the first
  token (SQuAD 2.0). Over the windows of one pair, the best span and the lowest null score are
  kept; ``null_diff = best - null`` is positive when the model prefers an answer;
- ``score`` is ``p(start) * p(end)``, both softmaxed over the context tokens and the null token.

Identical (question, context) pairs are computed once. Used by the QA extractor
(``kg.extractors.qa``), the trainer's validation (``kg.train_qa``) and the benchmark.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from causalkg.core.errors import ConfigError, ModelError
from causalkg.core.manifest import read_manifest
from causalkg.core.models import local_model_path, resolve_device  # noqa: F401 - resolve_device: also kg.tagger's
from causalkg.kg.onnx_runtime import OnnxModel, export_onnx, resolve_backend
from causalkg.linking.encoder import FIXED_PASS_TOKENS, bucket_batches, pad_pass

log = logging.getLogger(__name__)

# The old name of causalkg.core.models.local_model_path, kept for the modules that import it from here.
resolve_model_path = local_model_path

# Features are padded to a multiple of this many tokens (see the module docstring): on PyTorch
# 32; on ONNX Runtime 8, which pads the validation split's features with 9% more tokens than they
# hold instead of 39%, and runs them about 1.2x faster (``python -m bench inference``); on PyTorch
# the finer buckets gained nothing in one (noisy) run, so its buckets stay as they were. The spans are the same, scores move ~1e-6.
PAD_MULTIPLE = 32
PAD_MULTIPLE_ONNX = 8


@dataclass(frozen=True)
class QAAnswer:
    """The best span of one (question, context) pair. Offsets are into the context."""

    text: str
    start: int
    end: int
    score: float  # p(start) * p(end)
    null_diff: float  # best span logits minus null logits; > 0: an answer is preferred


def trim_questions(tokenizer: Any, questions: Sequence[str], max_tokens: int) -> list[str]:
    """Questions cut to their first ``max_tokens`` tokens (an anchor can be a long clause). The
    trainer cuts its questions the same way, so the model sees what the extractor will ask."""
    if not questions:
        return []
    enc = tokenizer(list(questions), add_special_tokens=False, return_offsets_mapping=True)
    out = []
    for q, offsets in zip(questions, enc["offset_mapping"]):
        if len(offsets) > max_tokens:
            q = q[: offsets[max_tokens - 1][1]]
        out.append(q)
    return out


def clean_span(text: str, start: int, end: int) -> tuple[int, int] | None:
    """Answer span boundaries made presentable, or None when nothing worth a phrase is left.

    Whole words only (a span may end inside a word piece: "Ace" of "Aceh"); then the spaces and
    punctuation a span boundary tends to swallow are trimmed: a leading ``,;:`` or closing
    bracket, a trailing ``,;:.`` or opening bracket ("Flight 5741 (" -> "Flight 5741"). A span
    with no letter or digit left (")") is no answer.
    """
    while start > 0 and start < len(text) and text[start - 1].isalnum() and text[start].isalnum():
        start -= 1
    while 0 < end < len(text) and text[end].isalnum() and text[end - 1].isalnum():
        end += 1
    while start < end and (text[start].isspace() or text[start] in ",;:)]}"):
        start += 1
    while end > start and (text[end - 1].isspace() or text[end - 1] in ",;:.([{"):
        end -= 1
    if end <= start or not any(ch.isalnum() for ch in text[start:end]):
        return None
    return start, end


# The stage name ``kg train-qa`` writes into a model folder's manifest (kg.train_qa).
TRAIN_STAGE = "kg.train-qa"


def recommended_null_threshold(folder: str | os.PathLike) -> float | None:
    """The no-answer threshold tuned on validation, from a model folder's manifest (or None)."""
    manifest = read_manifest(folder)
    if not manifest or manifest.get("stage") != TRAIN_STAGE:
        return None
    value = (manifest.get("recommended") or {}).get("null_threshold")
    return float(value) if isinstance(value, (int, float)) else None


DTYPES = ("auto", "float32", "int8", "int8-per-channel", "float16", "bfloat16")
# The dynamically quantized formats (CPU only). ``int8`` scales each weight matrix by one factor;
# ``int8-per-channel`` by one factor per output channel (and, on ONNX Runtime, with 7-bit weights:
# ``reduce_range``): validation F1 within 0.5 of float32's, but 3 points lower end to end on the
# held-out split (README, "Inference speed on CPU"), so neither is a default.
INT8_FORMATS = ("int8", "int8-per-channel")


def check_dtype(dtype: str) -> str:
    """``dtype`` when it is one of ``DTYPES`` (``extract.dtype``); a ConfigError otherwise."""
    if dtype not in DTYPES:
        raise ConfigError(f"extract.dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
    return dtype


def inference_dtype(dtype: str, device: str) -> str:
    """The numeric format a model runs in: ``auto`` is int8 (dynamic quantization of the
    linear layers) on a CPU and float16 on a GPU; the others are taken as given (int8 and
    int8-per-channel are CPU-only and float16 GPU-only, falling back to float32 elsewhere;
    bfloat16 runs on a GPU and on a CPU that multiplies bfloat16 natively,
    ``causalkg.core.models.cpu_has_native_bf16``, and is float32 on other CPUs, where it would be
    emulated and slower)."""
    from causalkg.core.models import half_dtype

    check_dtype(dtype)
    gpu = str(device).startswith("cuda")
    if dtype == "auto":
        return "float16" if gpu else "int8"
    if dtype in INT8_FORMATS and gpu:
        return "float32"
    return half_dtype(dtype, device)


def prepare_for_inference(model: Any, device: str, dtype: str = "float32") -> tuple[Any, str]:
    """``(model, dtype used)``: the model in eval mode on ``device`` in the format that
    :func:`inference_dtype` picks. int8 replaces every ``nn.Linear`` by a dynamically
    quantized one (weights int8, activations quantized per batch): about 2x less work per
    token on a CPU, with spans and scores that differ slightly from float32 (measured in
    ``python -m bench extract``). int8-per-channel quantizes each output channel of a weight
    matrix with its own scale (``per_channel_dynamic_qconfig``)."""
    import warnings

    import torch

    used = inference_dtype(dtype, device)
    model.to(device)
    model.eval()
    if used in INT8_FORMATS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch deprecates the quantized-tensor API, not its kernels
            from torch.ao.quantization import per_channel_dynamic_qconfig, quantize_dynamic

            spec: Any = {torch.nn.Linear: per_channel_dynamic_qconfig} if used == "int8-per-channel" else {torch.nn.Linear}
            model = quantize_dynamic(model, spec, dtype=torch.qint8)
    elif used in ("float16", "bfloat16"):
        model = model.to(getattr(torch, used))
    return model, used


def load_qa_model(name: str, *, base_dir: Path | None = None, device: str = "auto",
                  dtype: str = "float32", backend: str = "torch") -> tuple[Any, Any, str]:
    """``(model, tokenizer, device)`` for a QA model folder or cached hub name, in eval mode,
    in the numeric format ``dtype`` resolves to (:func:`inference_dtype`), run by ``backend``
    (``torch``, ``onnxruntime`` or ``auto``: see :mod:`causalkg.kg.onnx_runtime`; ONNX
    Runtime needs a model folder, a cached hub model runs on PyTorch).

    Raises ModelError naming the model and what to do when it cannot be loaded.
    """
    from transformers import AutoModelForQuestionAnswering, AutoTokenizer

    path, local = local_model_path(name, base_dir)
    kwargs = {} if local else {"local_files_only": True}
    try:
        tokenizer = AutoTokenizer.from_pretrained(path, **kwargs)
        model = AutoModelForQuestionAnswering.from_pretrained(path, **kwargs)
    except (OSError, ValueError) as exc:
        hint = "train one with 'causalkg kg train-qa', or set extract.qa.model to a QA model folder"
        if local:
            raise ModelError(f"cannot load the QA model in {path}: {str(exc).splitlines()[0]}", hint=hint) from None
        folder = Path(name) if Path(name).is_absolute() or base_dir is None else base_dir / name
        raise ModelError(f"QA model {name!r} not found: no folder {folder}, and no such model in the local "
                         "Hugging Face cache", hint=hint) from None
    if not getattr(tokenizer, "is_fast", False):
        raise ModelError(f"QA model {name}: a fast tokenizer is needed (for character offsets)")
    dev = resolve_device(device)
    used = inference_dtype(dtype, dev)
    # ONNX Runtime runs float32 and int8; bfloat16 runs on PyTorch.
    if local and resolve_backend(backend, dev) == "onnxruntime" and used != "bfloat16":
        model.eval()
        onnx = export_onnx(model, tokenizer, Path(path), quantize=used if used in INT8_FORMATS else None)
        return OnnxModel(onnx), tokenizer, dev
    model, _ = prepare_for_inference(model, dev, dtype)
    return model, tokenizer, dev


class QAModel:
    """Batched extractive QA over (question, context) pairs. See the module docstring."""

    def __init__(self, name: str, *, base_dir: Path | None = None, device: str = "auto",
                 batch_size: int = 32, max_seq_length: int = 256, doc_stride: int = 96,
                 max_answer_tokens: int = 40, max_question_tokens: int = 64,
                 model: Any = None, tokenizer: Any = None, dtype: str = "float32", backend: str = "torch"):
        if model is None or tokenizer is None:
            model, tokenizer, device = load_qa_model(name, base_dir=base_dir, device=device, dtype=dtype,
                                                     backend=backend)
            self.dtype = inference_dtype(dtype, device)
        else:  # a model given is used as it is
            device = str(next(model.parameters()).device)
            self.dtype = str(next(model.parameters()).dtype).removeprefix("torch.")
        self.name = name
        self.model = model
        self.backend = "onnxruntime" if isinstance(model, OnnxModel) else "torch"
        self.tokenizer = tokenizer
        self.device = device
        self.batch_size = max(1, int(batch_size))
        limit = int(getattr(tokenizer, "model_max_length", 512) or 512)
        self.max_seq_length = min(int(max_seq_length), limit if limit < 100_000 else 512)
        self.max_question_tokens = int(max_question_tokens)
        self.doc_stride = int(doc_stride)
        self.max_answer_tokens = max(1, int(max_answer_tokens))
        room = self.max_seq_length - self.max_question_tokens - 3
        if room <= 16:
            raise ConfigError(f"extract.qa.max_seq_length {self.max_seq_length} leaves no room for the context "
                              f"after {self.max_question_tokens} question tokens")
        if not 0 <= self.doc_stride < room:
            raise ConfigError(f"extract.qa.doc_stride must be between 0 and {room - 1} "
                              f"(max_seq_length - max_question_tokens - 3), got {self.doc_stride}")
        self.calls = 0  # forward passes, for reports
        self.features = 0

    # -- tokenisation ----------------------------------------------------------------------

    def _trim_questions(self, questions: Sequence[str]) -> list[str]:
        return trim_questions(self.tokenizer, questions, self.max_question_tokens)

    def featurize(self, questions: Sequence[str], contexts: Sequence[str]) -> dict[str, Any]:
        """Tokenised features of the pairs (overflowing windows included), unpadded."""
        # Question first, context second, as every SQuAD-style model of the family is trained.
        questions = self._trim_questions(questions)
        return self.tokenizer(
            questions,
            list(contexts),
            truncation="only_second",
            max_length=self.max_seq_length,
            stride=self.doc_stride,
            return_overflowing_tokens=True,
            return_offsets_mapping=True,
            padding=False,
        )

    # -- inference --------------------------------------------------------------------------

    def answer(self, questions: Sequence[str], contexts: Sequence[str]) -> list[QAAnswer | None]:
        """The best answer span for each pair (None when no span fits in any window).

        Thresholds are the caller's: compare ``null_diff`` and ``score``. Pairs that repeat
        are computed once.
        """
        return [a[0] if a else None for a in self.answers(questions, contexts, 1)]

    def answers(self, questions: Sequence[str], contexts: Sequence[str], n: int = 1) -> list[list[QAAnswer]]:
        """Up to ``n`` answer spans for each pair, best first, no two overlapping (a sentence that
        states two causes has two answers to "What is the cause?"). The first is ``answer``'s."""
        if len(questions) != len(contexts):
            raise ValueError("questions and contexts differ in length")
        unique: dict[tuple[str, str], int] = {}
        order = [unique.setdefault((q, c), len(unique)) for q, c in zip(questions, contexts)]
        if not unique:
            return []
        pairs = list(unique)
        results = self._answer_unique([q for q, _ in pairs], [c for _, c in pairs], max(1, int(n)))
        return [results[i] for i in order]

    def _answer_unique(self, questions: list[str], contexts: list[str], n: int = 1) -> list[list[QAAnswer]]:
        import torch

        enc = self.featurize(questions, contexts)
        n_feat = len(enc["input_ids"])
        sample_of = enc["overflow_to_sample_mapping"]
        seq_ids = [enc.sequence_ids(i) for i in range(n_feat)]
        # best[i] = (span_logit, null_logit, start_char, end_char, prob) per example
        best: list[list[Any] | None] = [None] * len(questions)
        more: list[list[list[Any]]] = [[] for _ in questions]  # n > 1: every window's top spans
        null: list[float] = [float("inf")] * len(questions)
        model_keys = set(self.tokenizer.model_input_names)
        for bucket, idx in self._batches([len(ids) for ids in enc["input_ids"]]):
            feats = [{k: enc[k][i] for k in ("input_ids", "attention_mask", "token_type_ids")
                      if k in enc and k in model_keys} for i in idx]
            # Right padding keeps the null token ([CLS]) at position 0 of every row; every row
            # is padded to its bucket's length, whatever else is in the batch.
            # On PyTorch the same rows in every pass over a bucket (pad_batch_rows).
            batch = pad_pass(self.tokenizer, feats, bucket, self.batch_size, self._pass_tokens, tensors="pt")
            length = batch["input_ids"].shape[1]
            ctx = torch.zeros((len(idx), length), dtype=torch.bool)
            for row, i in enumerate(idx):
                ids = seq_ids[i]
                ctx[row, : len(ids)] = torch.tensor([s == 1 for s in ids])
            with torch.inference_mode():
                out = self.model(**{k: v.to(self.device) for k, v in batch.items()})
            self.calls += 1
            self.features += len(idx)
            start = out.start_logits[: len(idx)].float().cpu()
            end = out.end_logits[: len(idx)].float().cpu()
            scores = self._span_scores(start, end, ctx)
            spans = self._decode(start, end, ctx, scores)
            extra = self._decode_more(ctx, n, scores) if n > 1 else None
            for row, i in enumerate(idx):
                ex = sample_of[i]
                null[ex] = min(null[ex], spans["null"][row])
                if spans["s"][row] < 0:
                    continue
                s, e = spans["s"][row], spans["e"][row]
                offsets = enc["offset_mapping"][i]
                cand = [spans["best"][row], offsets[s][0], offsets[e][1], spans["prob"][row]]
                if best[ex] is None or cand[0] > best[ex][0]:
                    best[ex] = cand
                if extra is not None:
                    more[ex] += [[lg, offsets[s2][0], offsets[e2][1], pr] for lg, s2, e2, pr in extra[row]]
        answers: list[list[QAAnswer]] = []
        for ex, cand in enumerate(best):
            found: list[QAAnswer] = []
            text = contexts[ex]
            # the best span first (exactly ``answer``'s), then the next best that overlap nothing kept
            for logit, cs, ce, prob in ([cand] if cand is not None else []) + sorted(
                    more[ex], key=lambda c: (-c[0], c[1], c[2])):
                if len(found) >= n:
                    break
                bounds = clean_span(text, cs, ce)
                if bounds is None:
                    if not found and cand is not None:
                        break  # the best span is empty after cleaning: no answer, as ``answer`` says
                    continue
                cs, ce = bounds
                if any(cs < a.end and a.start < ce for a in found):
                    continue
                found.append(QAAnswer(text[cs:ce], cs, ce, float(prob), float(logit - null[ex])))
            answers.append(found)
        return answers

    def _batches(self, lengths: Sequence[int]) -> list[tuple[int, list[int]]]:
        """``(bucket length, feature indices)`` per forward pass (``bucket_batches``)."""
        multiple = PAD_MULTIPLE_ONNX if self.backend == "onnxruntime" else PAD_MULTIPLE
        return bucket_batches(lengths, self.batch_size, multiple=multiple, cap=self.max_seq_length,
                              tokens=self._pass_tokens)

    @property
    def _pass_tokens(self) -> int | None:
        """On PyTorch, the most token rows of a forward pass, each pass over a bucket having the
        same rows (``pad_batch_rows``): PyTorch's kernels (their threads' split of the work in
        float32, their choice of kernel by the number of rows in bfloat16 with AMX) give an input
        outputs that differ in the last digits with the rows beside it, and a fixed shape per
        bucket makes an answer independent of the questions asked with it (at a given batch
        size). ONNX Runtime's are already (tests/reliability/test_determinism.py)."""
        return FIXED_PASS_TOKENS if self.backend == "torch" else None

    def _span_scores(self, start: Any, end: Any, ctx: Any) -> tuple[Any, Any, Any, Any]:
        """What both decoders read, computed once per batch: log-softmaxed start and end logits
        (over the context and the null token), and every (start, end) pair's logit sum flattened
        per feature, spans outside the context or longer than ``max_answer_tokens`` at ``neg``."""
        import torch

        n, length = start.shape
        neg = torch.finfo(start.dtype).min / 4
        allowed = ctx.clone()
        allowed[:, 0] = True  # the null token takes part in the softmax
        ls = torch.log_softmax(start.masked_fill(~allowed, neg), dim=-1)
        le = torch.log_softmax(end.masked_fill(~allowed, neg), dim=-1)
        s_ctx = start.masked_fill(~ctx, neg)
        e_ctx = end.masked_fill(~ctx, neg)
        pair = s_ctx[:, :, None] + e_ctx[:, None, :]
        i = torch.arange(length)
        band = (i[None, :] >= i[:, None]) & (i[None, :] - i[:, None] < self.max_answer_tokens)
        pair = pair.masked_fill(~band[None], neg)
        return ls, le, pair.view(n, -1), neg

    def _decode_more(self, ctx: Any, n: int, scores: tuple[Any, Any, Any, Any]) -> list[list[tuple[float, int, int, float]]]:
        """Per feature, the ``n`` best spans that do not overlap each other (token indices, logit
        sum, probability), best first; the first is ``_decode``'s best span."""
        import torch

        ls, le, flat, neg = scores
        nrow, length = ctx.shape
        k = min(flat.shape[1], 20 * n)
        vals, args = flat.topk(k, dim=-1)
        out: list[list[tuple[float, int, int, float]]] = []
        has = ctx.any(dim=-1).tolist()
        for r in range(nrow):
            kept: list[tuple[float, int, int, float]] = []
            if has[r]:
                for v, a in zip(vals[r].tolist(), args[r].tolist()):
                    if v <= neg / 2 or len(kept) >= n:
                        break
                    s, e = a // length, a % length
                    if any(s <= e2 and s2 <= e for _, s2, e2, _ in kept):
                        continue
                    kept.append((v, s, e, float(torch.exp(ls[r, s] + le[r, e]))))
            out.append(kept)
        return out

    def _decode(self, start: Any, end: Any, ctx: Any, scores: tuple[Any, Any, Any, Any]) -> dict[str, list]:
        """Best span per feature: indices, logit sum, probability; and the null logit sum."""
        import torch

        ls, le, flat, _ = scores
        n, length = start.shape
        null = (start[:, 0] + end[:, 0]).tolist()
        best, arg = flat.max(dim=-1)
        s_idx = (arg // length).tolist()
        e_idx = (arg % length).tolist()
        has = ctx.any(dim=-1).tolist()
        prob = []
        for r in range(n):
            if not has[r]:
                s_idx[r] = e_idx[r] = -1
                prob.append(0.0)
            else:
                prob.append(float(torch.exp(ls[r, s_idx[r]] + le[r, e_idx[r]])))
        return {"s": s_idx, "e": e_idx, "best": best.tolist(), "null": null, "prob": prob}
