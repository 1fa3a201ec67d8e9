"""The typed config blocks of the extraction's components, one frozen dataclass per section.

Each is built from its resolved section by ``causalkg.core.config.block`` (``block(cfg,
"extract.gate", GateSettings)``), which checks that the fields are exactly the section's keys:
the dataclasses name and type the keys, the values (defaults included) come only from
``causalkg/core/defaults.toml`` and the user's overrides. The meaning of each key is documented
there. A component takes its block instead of the whole Config where it can (the gate, the QA
extractor), and the trainers read theirs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class GateSettings:
    """``[extract.gate]``: the sentence gate that picks the sentences the extractor reads."""

    kind: str
    model: str
    threshold: float
    batch_size: int
    first_pass: bool
    first_pass_keep: float


@dataclass(frozen=True)
class GateTrainSettings:
    """``[extract.gate.train]``: training the gate (``causalkg kg train-gate``)."""

    data: str
    encoder: str
    encoder_layers: int
    target_recall: float
    c: list[float]
    mix: list[float]
    steps: int
    batch_size: int
    learning_rate: float
    warmup: float
    seed: int
    dtype: str


@dataclass(frozen=True)
class QASettings:
    """``[extract.qa]``: the QA extractor's model, questions and span decoding."""

    model: str
    batch_size: int
    max_anchors: int
    questions_anchored: list[dict[str, Any]]
    question_cause: str
    question_effect: str
    max_seq_length: int
    doc_stride: int
    max_question_tokens: int
    max_answer_tokens: int
    min_score: float
    null_threshold: float
    null_threshold_from_model: bool
    max_causes: int
    max_effects: int
    anchored_needs_causal_sentence: bool
    drop_reversed_anchored: bool


@dataclass(frozen=True)
class QATrainSettings:
    """``[extract.qa.train]``: training the QA model (``causalkg kg train-qa``)."""

    data: str
    base_model: str
    steps: int
    batch_size: int
    learning_rate: float
    warmup: float
    seed: int
    max_seq_length: int
    eval_every: int
    selection_questions: int
    freeze_embeddings: bool
    dtype: str
    reversed_share: float
    encoder_layers: int
    teacher: str
    distill_weight: float
    distill_temperature: float


@dataclass(frozen=True)
class TaggerSettings:
    """``[extract.tagger]``: the span tagger extractor."""

    model: str
    batch_size: int
    max_seq_length: int
    max_relations: int
    min_score: float


@dataclass(frozen=True)
class TaggerTrainSettings:
    """``[extract.tagger.train]``: training the span tagger (``causalkg kg train-tagger``)."""

    data: str
    sources: list[str]
    base_model: str
    steps: int
    batch_size: int
    learning_rate: float
    warmup: float
    seed: int
    freeze_embeddings: bool
    frozen_layers: int
    eval_every: int


@dataclass(frozen=True)
class LLMSettings:
    """``[extract.llm]``: the LLM extractor (the endpoint and model are ``[llm]``'s)."""

    prompt: str
    max_attempts: int
    passage_chars: int


# Each block's section, for ``block`` and for the test that checks them all against defaults.toml.
BLOCKS: dict[str, type] = {
    "extract.gate": GateSettings,
    "extract.gate.train": GateTrainSettings,
    "extract.qa": QASettings,
    "extract.qa.train": QATrainSettings,
    "extract.tagger": TaggerSettings,
    "extract.tagger.train": TaggerTrainSettings,
    "extract.llm": LLMSettings,
}

__all__ = ["GateSettings", "GateTrainSettings", "QASettings", "QATrainSettings", "TaggerSettings",
           "TaggerTrainSettings", "LLMSettings", "BLOCKS"]
