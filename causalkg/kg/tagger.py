"""The span tagger: every cause -> effect relation of a sentence by token classification.

MiniLM fine-tuned as a token classifier (``AutoModelForTokenClassification``) with BIO tags for
the cause (``C``), effect (``E``) and signal (``S``) spans of one relation. A sentence may state
several relations (the Causal News Corpus annotates up to four, and they overlap: one
relation's effect is often the next one's cause), which one tag sequence cannot hold, so the
model is asked once per relation index: the input is the pair ``("relation 2", sentence)`` and
the tags are those of the sentence's second relation in reading order (relations sorted by the
start of their first span). Past the last relation every tag is ``O``, which is how a pass says
"no more". Non-causal sentences train pass 1 to say nothing.

Decoding a pass: the most probable tag of each word piece; runs of ``B``/``I`` of one kind are
spans; the cause and the effect are the runs with the highest mean probability; a pass that
finds no cause or no effect ends the sentence's relations. Spans are widened to whole words and
trimmed like QA answers (``kg.qa_decode.clean_span``). ``score`` is the lower of the two
spans' mean tag probabilities.

``train_tagger`` (``causalkg kg train-tagger``) trains from ``snapshots/qa-training`` (the CNC
sentences: relations with their signals, and non-causal sentences), picks the checkpoint by
pair F1 on the validation split and saves the model with a manifest to
``extract.tagger.model`` (``models/causal-tagger``). The test split is never read here.
"""

from __future__ import annotations

import logging
import math
import os
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from causalkg.core.models import bucketed_batches, fine_tune, save_model_folder, stage_device, training_files
from causalkg.linking.encoder import FIXED_PASS_TOKENS, bucket_batches, pad_pass
from causalkg.core.config import Config, block
from causalkg.core.errors import ConfigError, ModelError
from causalkg.core.manifest import build_manifest, describe_input, fingerprint, read_manifest, trained_model_is_current
from causalkg.kg.settings import TaggerSettings, TaggerTrainSettings

log = logging.getLogger(__name__)

STAGE = "kg.train-tagger"
LABELS = ("O", "B-C", "I-C", "B-E", "I-E", "B-S", "I-S")
KINDS = {"C": "cause", "E": "effect", "S": "signal"}
ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth")
TAGGER_VERSION = 1


def pass_prompt(k: int) -> str:
    """The first segment of pass ``k`` (0-based): "first relation", "second relation", ..."""
    return f"{ORDINALS[k] if k < len(ORDINALS) else str(k + 1)} relation"


def ordered_relations(rec: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A gold sentence's relations in reading order (first span start, then cause, effect)."""
    def key(rel):
        starts = [rel[r]["start"] for r in ("cause", "effect", "signal") if rel.get(r)]
        return (min(starts), rel["cause"]["start"], rel["effect"]["start"])

    return sorted(rec.get("relations") or [], key=key)


@dataclass(frozen=True)
class TagExample:
    pass_index: int
    text: str
    spans: tuple[tuple[str, int, int], ...]  # (kind letter, start, end) char offsets


def tag_examples(records: Sequence[Mapping[str, Any]], max_relations: int) -> list[TagExample]:
    """One example per relation of each sentence (up to ``max_relations``) and one empty pass
    after the last (when under ``max_relations``); a non-causal sentence gives one empty pass."""
    out = []
    for rec in records:
        rels = ordered_relations(rec)[:max_relations]
        for k, rel in enumerate(rels):
            spans = [("C", rel["cause"]["start"], rel["cause"]["end"]), ("E", rel["effect"]["start"], rel["effect"]["end"])]
            if rel.get("signal"):
                spans.append(("S", rel["signal"]["start"], rel["signal"]["end"]))
            out.append(TagExample(k, rec["text"], tuple(spans)))
        if len(rels) < max_relations:
            out.append(TagExample(len(rels), rec["text"], ()))
    return out


def token_labels(offsets: Sequence[tuple[int, int]], seq_ids: Sequence[int | None],
                 spans: Sequence[tuple[str, int, int]]) -> list[int]:
    """BIO label ids for the word pieces of the sentence segment (-100 elsewhere). Where spans
    overlap (a signal inside a cause), the cause and effect win over the signal."""
    index = {l: i for i, l in enumerate(LABELS)}
    labels = []
    prev_kind = None
    for (s, e), sid in zip(offsets, seq_ids):
        if sid != 1 or e <= s:
            labels.append(-100)
            prev_kind = None
            continue
        kind = None
        for letter in ("C", "E", "S"):
            if any(k == letter and a <= s < b for k, a, b in spans):
                kind = letter
                break
        if kind is None:
            labels.append(0)
        else:
            labels.append(index[("I-" if prev_kind == kind else "B-") + kind])
        prev_kind = kind
    return labels


@dataclass(frozen=True)
class TaggedSpan:
    start: int
    end: int
    score: float


@dataclass(frozen=True)
class TaggedRelation:
    cause: TaggedSpan
    effect: TaggedSpan
    signal: TaggedSpan | None
    score: float
    pass_index: int


def decode_pass(text: str, offsets: Sequence[tuple[int, int]], seq_ids: Sequence[int | None],
                probs: Any) -> dict[str, list[TaggedSpan]]:
    """Spans per kind letter from one pass's tag probabilities (``probs``: tokens x labels)."""
    from causalkg.kg.qa_decode import clean_span

    best = probs.argmax(-1).tolist()
    runs: dict[str, list[TaggedSpan]] = {"C": [], "E": [], "S": []}
    cur: list[Any] | None = None  # [kind, start, end, prob sum, n]

    def close():
        if cur is not None:
            span = clean_span(text, cur[1], cur[2])
            if span is not None:
                runs[cur[0]].append(TaggedSpan(span[0], span[1], cur[3] / cur[4]))

    for t, ((s, e), sid) in enumerate(zip(offsets, seq_ids)):
        if sid != 1 or e <= s:
            continue
        label = LABELS[best[t]]
        p = float(probs[t, best[t]])
        if label == "O":
            close()
            cur = None
            continue
        bio, kind = label.split("-")
        if cur is not None and cur[0] == kind and (bio == "I" or s <= cur[2]):
            cur[2], cur[3], cur[4] = e, cur[3] + p, cur[4] + 1
        else:
            close()
            cur = [kind, s, e, p, 1]
    close()
    return runs


def relation_of(runs: Mapping[str, list[TaggedSpan]], k: int) -> TaggedRelation | None:
    if not runs["C"] or not runs["E"]:
        return None
    cause = max(runs["C"], key=lambda x: (x.score, x.end - x.start))
    effect = max(runs["E"], key=lambda x: (x.score, x.end - x.start))
    if cause.start < effect.end and effect.start < cause.end:
        return None
    signal = max(runs["S"], key=lambda x: x.score) if runs["S"] else None
    return TaggedRelation(cause, effect, signal, min(cause.score, effect.score), k)


class SpanTagger:
    """Loads a token-classification model (a folder or a hub name in the local cache) and tags
    sentences: ``relations(texts)`` -> the relations of each text."""

    def __init__(self, name: str, *, base_dir: Path | None = None, device: str = "auto", batch_size: int = 32,
                 max_relations: int = 4, max_seq_length: int = 192, model: Any = None, tokenizer: Any = None,
                 dtype: str = "float32"):
        import torch  # noqa: F401

        from causalkg.kg.qa_decode import prepare_for_inference, resolve_device, resolve_model_path

        self.name = name
        self.batch_size = max(1, int(batch_size))
        self.max_relations = max(1, int(max_relations))
        self.max_seq_length = int(max_seq_length)
        self.calls = 0
        self.features = 0
        if model is not None:  # a model given is used as it is
            self.model, self.tokenizer = model, tokenizer
            self.device = str(next(model.parameters()).device)
            self.dtype = str(next(model.parameters()).dtype).removeprefix("torch.")
            return
        path, local = resolve_model_path(name, base_dir)
        if not local and name.startswith(("models/", "./", "/")):
            raise ModelError(f"span tagger not found: {path}", hint="train it with 'causalkg kg train-tagger'")
        from transformers import AutoModelForTokenClassification, AutoTokenizer
        from transformers.utils import logging as hf_logging

        verbosity = hf_logging.get_verbosity()
        hf_logging.set_verbosity_error()
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=not local or None)
            self.model = AutoModelForTokenClassification.from_pretrained(path, local_files_only=not local or None)
        except (OSError, ValueError) as exc:
            raise ModelError(f"cannot load the span tagger {name!r}: {exc}",
                             hint="train it with 'causalkg kg train-tagger'") from None
        finally:
            hf_logging.set_verbosity(verbosity)
        if self.model.config.num_labels != len(LABELS):
            raise ModelError(f"{name} is not a span tagger: {self.model.config.num_labels} labels, expected {len(LABELS)}")
        self.device = resolve_device(device)
        self.model, self.dtype = prepare_for_inference(self.model, self.device, dtype)

    def _probs(self, prompts: Sequence[str], texts: Sequence[str]) -> list[tuple[Any, Any, Any]]:
        import torch

        from causalkg.kg.qa_decode import PAD_MULTIPLE

        enc = self.tokenizer(list(prompts), list(texts), truncation="only_second", max_length=self.max_seq_length,
                             return_offsets_mapping=True, padding=False)
        out: list[Any] = [None] * len(texts)
        keys = [k for k in ("input_ids", "token_type_ids", "attention_mask") if k in enc]
        # As QA (kg.qa_decode): each pass padded to its bucket's length, with the same rows in
        # every pass over a bucket, so a sentence's tags do not depend on the sentences beside it.
        with torch.inference_mode():
            for bucket, idx in bucket_batches([len(ids) for ids in enc["input_ids"]], self.batch_size,
                                              multiple=PAD_MULTIPLE, cap=self.max_seq_length, tokens=FIXED_PASS_TOKENS):
                batch = pad_pass(self.tokenizer, [{k: enc[k][i] for k in keys} for i in idx], bucket, self.batch_size,
                                 FIXED_PASS_TOKENS, tensors="pt")
                logits = self.model(**{k: v.to(self.device) for k, v in batch.items()}).logits[: len(idx)]
                probs = torch.softmax(logits.float(), -1).cpu().numpy()
                self.calls += 1
                self.features += len(idx)
                for j, i in enumerate(idx):
                    m = len(enc["input_ids"][i])
                    out[i] = (enc["offset_mapping"][i], enc.sequence_ids(i), probs[j, :m])
        return out

    def relations(self, texts: Sequence[str]) -> list[list[TaggedRelation]]:
        """The relations of each text, in pass order; duplicates (same cause and effect) once."""
        results: list[list[TaggedRelation]] = [[] for _ in texts]
        alive = list(range(len(texts)))
        for k in range(self.max_relations):
            if not alive:
                break
            got = self._probs([pass_prompt(k)] * len(alive), [texts[i] for i in alive])
            still = []
            for i, (offsets, seq_ids, probs) in zip(alive, got):
                rel = relation_of(decode_pass(texts[i], offsets, seq_ids, probs), k)
                if rel is None:
                    continue
                if not any((r.cause.start, r.cause.end, r.effect.start, r.effect.end)
                           == (rel.cause.start, rel.cause.end, rel.effect.start, rel.effect.end) for r in results[i]):
                    results[i].append(rel)
                still.append(i)
            alive = still
        return results


# --- training ---------------------------------------------------------------------------------


@dataclass
class TaggerTrainResult:
    output: Path
    skipped: bool = False
    reason: str = ""
    steps: int = 0
    seconds: float = 0.0
    validation: dict[str, Any] = field(default_factory=dict)
    manifest: dict[str, Any] = field(default_factory=dict)


def tagger_plan(cfg: Config, *, data: str | os.PathLike | None = None, steps: int | None = None,
                base_model: str | None = None) -> dict[str, Any]:
    from causalkg.linking.encoder import resolve_model_path as resolve_encoder

    tg = block(cfg, "extract.tagger", TaggerSettings)
    tr = block(cfg, "extract.tagger.train", TaggerTrainSettings)
    files = training_files(cfg, "extract.tagger.train.data", data, "tagger")
    base = base_model or tr.base_model
    base_path = resolve_encoder(base)
    plan = {
        "version": TAGGER_VERSION,
        "train_sha256": describe_input(files["train"])["sha256"],
        "val_sha256": describe_input(files["val"])["sha256"],
        "sources": list(tr.sources),
        "base_model": base,
        "base_model_config_sha256": describe_input(Path(base_path) / "config.json")["sha256"]
        if (Path(base_path) / "config.json").is_file() else None,
        "steps": int(steps if steps is not None else tr.steps),
        "batch_size": int(tr.batch_size),
        "learning_rate": float(tr.learning_rate),
        "warmup": float(tr.warmup),
        "seed": int(tr.seed),
        "max_seq_length": int(tg.max_seq_length),
        "max_relations": int(tg.max_relations),
        "eval_every": int(tr.eval_every),
        "freeze_embeddings": bool(tr.freeze_embeddings),
        "frozen_layers": int(tr.frozen_layers),
    }
    if plan["steps"] < 1 or plan["batch_size"] < 1 or plan["learning_rate"] <= 0:
        raise ConfigError("train-tagger needs steps >= 1, batch size >= 1 and a positive learning rate")
    plan["fingerprint"] = fingerprint(plan)
    plan["train_file"], plan["val_file"], plan["base_model_path"] = str(files["train"]), str(files["val"]), base_path
    return plan


def tagger_is_current(folder: Path, plan_fingerprint: str) -> tuple[bool, str]:
    """Whether ``folder`` holds a model trained here with this fingerprint (and why not)."""
    return trained_model_is_current(folder, plan_fingerprint, STAGE)


def pair_f1(tagger: SpanTagger, records: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """Pair precision/recall/F1 (token overlap, one to one; ``kg.span_metrics.pair_match``) of
    the tagger's relations against the gold relations of ``records``."""
    from causalkg.kg.span_metrics import PairMatch

    found = tagger.relations([r["text"] for r in records])
    m = PairMatch()
    for rec, rels in zip(records, found):
        text = rec["text"]
        m.add([(text[r.cause.start:r.cause.end], text[r.effect.start:r.effect.end]) for r in rels],
              [(g["cause"]["text"], g["effect"]["text"]) for g in rec.get("relations") or []])
    return m.as_dict()


def train_tagger(cfg: Config, *, output: str | os.PathLike | None = None, data: str | os.PathLike | None = None,
                 steps: int | None = None, base_model: str | None = None, if_missing: bool = False,
                 device: str | None = None) -> TaggerTrainResult:
    """Fine-tune the span tagger (see the module docstring) and save it to ``output`` (default
    ``extract.tagger.model``). ``if_missing``: nothing when the folder is current."""
    import torch

    from causalkg.kg import qa_data

    plan = tagger_plan(cfg, data=data, steps=steps, base_model=base_model)
    out = Path(output) if output is not None else cfg.path("extract.tagger.model")
    if if_missing:
        current, reason = tagger_is_current(out, plan["fingerprint"])
        if current:
            return TaggerTrainResult(out, skipped=True, reason=reason, manifest=read_manifest(out) or {})
    from transformers import AutoModelForTokenClassification, AutoTokenizer
    from transformers.utils import logging as hf_logging

    t0 = time.perf_counter()
    random.seed(plan["seed"])
    torch.manual_seed(plan["seed"])
    rng = random.Random(plan["seed"])
    sources = set(plan["sources"])
    train_recs = [r for r in qa_data.read_gold(plan["train_file"]) if r.get("source") in sources]
    val_recs = [r for r in qa_data.read_gold(plan["val_file"]) if r.get("source") in sources]
    if not train_recs or not val_recs:
        raise ConfigError(f"no training or validation sentences from {sorted(sources)} in {plan['train_file']}")
    examples = tag_examples(train_recs, plan["max_relations"])
    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    try:
        tokenizer = AutoTokenizer.from_pretrained(plan["base_model_path"])
        model = AutoModelForTokenClassification.from_pretrained(
            plan["base_model_path"], num_labels=len(LABELS), id2label=dict(enumerate(LABELS)),
            label2id={l: i for i, l in enumerate(LABELS)})
    except (OSError, ValueError) as exc:
        raise ModelError(f"cannot load the base model {plan['base_model']}: {exc}") from None
    finally:
        hf_logging.set_verbosity(verbosity)
    from causalkg.kg.qa_decode import resolve_device

    dev = resolve_device(device or stage_device(cfg, "extract.device"))
    model.to(dev)
    enc = tokenizer([pass_prompt(e.pass_index) for e in examples], [e.text for e in examples],
                    truncation="only_second", max_length=plan["max_seq_length"], return_offsets_mapping=True)
    keys = [k for k in ("input_ids", "token_type_ids", "attention_mask") if k in enc]
    feats = []
    for i, e in enumerate(examples):
        f = {k: enc[k][i] for k in keys}
        f["labels"] = token_labels(enc["offset_mapping"][i], enc.sequence_ids(i), e.spans)
        feats.append(f)
    if plan["freeze_embeddings"]:
        for p in model.base_model.embeddings.parameters():
            p.requires_grad = False
    # The lower layers stay as pre-trained: their backward pass is most of the cost on a CPU.
    layers = getattr(getattr(model.base_model, "encoder", None), "layer", [])
    for layer in list(layers)[: plan["frozen_layers"]]:
        for p in layer.parameters():
            p.requires_grad = False
    eval_tagger = SpanTagger("validation", model=model, tokenizer=tokenizer, batch_size=64,
                             max_relations=plan["max_relations"], max_seq_length=plan["max_seq_length"])

    def loss_of(idx: list[int]) -> Any:
        width = max(len(feats[i]["input_ids"]) for i in idx)
        batch = tokenizer.pad([{k: feats[i][k] for k in keys} for i in idx], return_tensors="pt", padding_side="right")
        batch["labels"] = torch.tensor([feats[i]["labels"] + [-100] * (width - len(feats[i]["labels"])) for i in idx])
        return model(**{k: v.to(dev) for k, v in batch.items()}).loss

    def evaluate() -> tuple[float, dict[str, Any]]:
        scores = pair_f1(eval_tagger, val_recs)
        return scores["f1"], {"val_pair_f1": round(scores["f1"], 4)}, f"validation pair F1 {scores['f1']:.3f}"

    # Length buckets inside windows of 50 batches: little padding, random order.
    batches = bucketed_batches([len(f["input_ids"]) for f in feats], plan["batch_size"], plan["steps"], rng)
    run = fine_tune(model, batches, loss_of, params=[p for p in model.parameters() if p.requires_grad],
                    steps=plan["steps"], learning_rate=plan["learning_rate"], warmup=plan["warmup"],
                    desc="training the span tagger", evaluate=evaluate, eval_every=plan["eval_every"], started=t0,
                    log=log)
    val_scores = pair_f1(eval_tagger, val_recs)
    seconds = time.perf_counter() - t0
    validation = {"sentences": len(val_recs), "relations": sum(len(r["relations"]) for r in val_recs),
                  "selected_step": run.best_step, "pair": {k: round(v, 4) for k, v in val_scores.items()},
                  "history": run.history}
    public = {k: v for k, v in plan.items() if k not in ("train_file", "val_file", "base_model_path")}
    manifest = build_manifest(
        STAGE, cfg, inputs={"train": plan["train_file"], "val": plan["val_file"]},
        counts={"train_sentences": len(train_recs), "train_examples": len(examples)},
        timings={"total": seconds}, models={"base": plan["base_model"], "device": dev,
                                            "threads": torch.get_num_threads()},
        extra={"training": public, "validation": validation},
    )
    save_model_folder(model, tokenizer, out, manifest)
    return TaggerTrainResult(out, steps=plan["steps"], seconds=seconds, validation=validation, manifest=manifest)


__all__ = ["SpanTagger", "train_tagger", "tagger_plan", "tagger_is_current", "tag_examples", "token_labels",
           "decode_pass", "pair_f1", "TaggedRelation", "LABELS"]
_ = math
