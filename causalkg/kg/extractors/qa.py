"""The QA extractor: ask an extractive QA model about each candidate sentence.

Questions come from the templates in ``[extract]``:

- anchored, for each concept mentioned in the sentence (the document concept first, then the
  page's other event concepts, at most ``max_anchors``): "What caused {concept}?" gives a cause
  for the mention; "What did {concept} cause?" and "What were the consequences of {concept}?"
  give effects of it;
- unanchored: "What is the cause?", then, for each cause found, "What did {cause} lead to?". A
  sentence may state several relations: the ``max_causes`` best non-overlapping answers to the
  first question that pass the thresholds are each asked about, and the ``max_effects`` best
  answers to each effect question are kept (``kg.qa_decode.QAModel.answers``).

All questions of a shard are asked in one batched round (and the effect questions in a
second), identical (question, sentence) pairs once (``kg.qa_decode``). An answer is kept when
its no-answer margin is over ``null_threshold`` (the model's tuned value when its manifest has
one and ``null_threshold_from_model`` is on) and its ``p(start)p(end)`` reaches ``min_score``.
A pair whose cause and effect overlap is dropped (counted). The score of an unanchored pair is
the product of its two answers' scores.

Two checks, both on by default, keep anchored answers honest (measured on the snapshot corpus,
docs/extraction.md):

- ``anchored_needs_causal_sentence``: anchored answers are kept only from a sentence that reads
  as causal, i.e. it carries a causal cue or the model answers the unanchored "What is the
  cause?" about it. A sentence that is a candidate only because it names the document concept
  ("The English Civil War (1642-1651) was a series of armed conflicts ...") otherwise yields
  whatever other event it mentions as a "cause" or "consequence" (counted as
  ``dropped_not_causal``).
- ``drop_reversed_anchored``: an anchored pair whose reverse was also extracted from the same
  sentence (B -> A beside A -> B, spans overlapping) is dropped: the model answered "What
  caused X?" and "What did X cause?" alike, so neither direction is supported. When the reverse
  came from the unanchored questions (which find the cause first), that pair is kept; two
  anchored pairs that reverse each other both go (counted as ``dropped_reversed``).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any, Sequence

from causalkg.core.config import Config, block
from causalkg.core.manifest import describe_input
from causalkg.core.models import local_model_path, stage_device
from causalkg.kg.extractors import Document, make_record, mention_span, span_of, spans_overlap
from causalkg.kg.qa_data import QuestionTemplates
from causalkg.kg.qa_decode import QAAnswer, QAModel, recommended_null_threshold
from causalkg.kg.sentences import Mention, Sentence
from causalkg.kg.settings import QASettings

# Causes quoted inside the effect question are cut to this many characters (at a space).
MAX_CAUSE_IN_QUESTION = 200


def create(arg: str, *, cfg: Config, qa_model: QAModel | None = None, **_: Any) -> "QAExtractor":
    """The registry factory: ``qa`` (model from ``extract.qa.model``) or ``qa:MODEL``."""
    return QAExtractor.from_config(cfg, model_name=arg or None, qa_model=qa_model)


def _short(text: str, limit: int = MAX_CAUSE_IN_QUESTION) -> str:
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", 0, limit)
    return text[: cut if cut > 0 else limit]


class QAExtractor:
    """Reads candidate sentences with a QA model. Built from its block (``[extract.qa]`` as
    ``QASettings``) and the run's settings the models share: ``base_dir`` (where a relative model
    path is found), ``device``, ``dtype``, ``backend``, ``candidates_only``. ``model_name``
    overrides ``settings.model``; ``qa_model``: a loaded model to reuse."""

    name = "qa"

    def __init__(self, settings: QASettings, *, base_dir: Path, device: str, dtype: str = "float32",
                 backend: str = "torch", candidates_only: bool = True, model_name: str | None = None,
                 qa_model: QAModel | None = None):
        qa = settings
        self.model = model_name or qa.model
        self.templates = QuestionTemplates.from_config(qa)
        self.max_anchors = int(qa.max_anchors)
        self.min_score = float(qa.min_score)
        self.max_causes = max(1, int(qa.max_causes))
        self.max_effects = max(1, int(qa.max_effects))
        self.candidates_only = bool(candidates_only)
        self.needs_causal = bool(qa.anchored_needs_causal_sentence)
        self.drop_reversed = bool(qa.drop_reversed_anchored)
        path, local = local_model_path(self.model, base_dir)
        self.model_path = path if local else None
        self.null_threshold = float(qa.null_threshold)
        self.threshold_source = "config"
        if local and qa.null_threshold_from_model:
            tuned = recommended_null_threshold(path)
            if tuned is not None:
                self.null_threshold, self.threshold_source = tuned, "model manifest"
        self.qa = qa_model or QAModel(
            self.model, base_dir=base_dir, device=device, batch_size=qa.batch_size,
            max_seq_length=qa.max_seq_length, doc_stride=qa.doc_stride,
            max_answer_tokens=qa.max_answer_tokens, max_question_tokens=qa.max_question_tokens,
            dtype=dtype, backend=backend,
        )
        self.counts: Counter[str] = Counter()

    @classmethod
    def from_config(cls, cfg: Config, *, model_name: str | None = None,
                    qa_model: QAModel | None = None) -> "QAExtractor":
        """The extractor of a resolved configuration: ``[extract.qa]`` and the run's keys of
        ``[extract]`` (``device``, falling back to ``run.device``; ``dtype``, ``backend``,
        ``candidates_only``)."""
        ex = cfg["extract"]
        return cls(block(cfg, "extract.qa", QASettings), base_dir=cfg.base_dir,
                   device=stage_device(cfg, "extract.device"), dtype=ex["dtype"], backend=ex["backend"],
                   candidates_only=ex["candidates_only"], model_name=model_name, qa_model=qa_model)

    def describe(self) -> dict[str, Any]:
        checksum = describe_input(self.model_path)["sha256"] if self.model_path else None
        return {
            "extractor": self.name, "model": self.model, "model_path": self.model_path,
            "model_sha256": checksum, "device": self.qa.device, "dtype": self.qa.dtype,
            "backend": self.qa.backend, "null_threshold": self.null_threshold,
            "null_threshold_source": self.threshold_source, "min_score": self.min_score,
            "templates": self.templates.as_dict(), "max_anchors": self.max_anchors,
            "max_answer_tokens": self.qa.max_answer_tokens, "max_seq_length": self.qa.max_seq_length,
            "doc_stride": self.qa.doc_stride, "anchored_needs_causal_sentence": self.needs_causal,
            "max_causes": self.max_causes, "max_effects": self.max_effects,
            "drop_reversed_anchored": self.drop_reversed,
        }

    def stats(self) -> dict[str, Any]:
        out = dict(self.counts)
        out["forward_passes"] = self.qa.calls
        out["features"] = self.qa.features
        return out

    def _accept(self, ans: QAAnswer | None) -> bool:
        return ans is not None and ans.null_diff > self.null_threshold and ans.score >= self.min_score

    def _anchors(self, sentence: Sentence) -> list[Mention]:
        seen: set[str] = set()
        out = []
        for m in sorted(sentence.mentions, key=lambda m: (not m.document_concept, m.start)):
            key = m.text.lower()
            if key not in seen:
                seen.add(key)
                out.append(m)
        return out[: self.max_anchors]

    def extract(self, docs: Sequence[Document]) -> list[dict[str, Any]]:
        """Extraction records of a shard; see the module docstring."""
        t = self.templates
        first: list[tuple[str, str]] = []
        first_meta: list[tuple[Document, Sentence, Any, Any]] = []
        for doc in docs:
            for sent in doc.sentences:
                self.counts["sentences"] += 1
                if self.candidates_only and not sent.is_candidate:
                    continue
                self.counts["sentences_read"] += 1
                if t.cause:
                    first.append((t.cause, sent.text))
                    first_meta.append((doc, sent, None, None))
                for m in self._anchors(sent):
                    for tpl in t.anchored:
                        first.append((tpl.ask(m.text), sent.text))
                        first_meta.append((doc, sent, m, tpl))
        self.counts["questions"] += len(first)
        self.counts["unique_questions"] += len(set(first))
        n_first = self.max_causes if t.cause else 1
        answer_lists = self.qa.answers([q for q, _ in first], [c for _, c in first], n_first)
        answers = [a[0] if a else None for a in answer_lists]

        # (doc id, cause span, effect span) -> best record so far
        best: dict[tuple, dict[str, Any]] = {}

        def keep(rec: dict[str, Any]) -> None:
            key = (rec["doc_id"], rec["cause"]["start"], rec["cause"]["end"], rec["effect"]["start"],
                   rec["effect"]["end"])
            old = best.get(key)
            if old is None or rec["score"] > old["score"]:
                best[key] = rec

        second: list[tuple[str, str]] = []
        second_meta: list[tuple[Document, Sentence, dict[str, Any], float, str]] = []
        # Sentences that read as causal: a cue, or an accepted answer to "What is the cause?".
        causal = {(doc.id, sent.start) for doc, sent, mention, _ in first_meta if sent.cues}
        for ans, (doc, sent, mention, _) in zip(answers, first_meta):
            if mention is None and self._accept(ans):
                causal.add((doc.id, sent.start))
        for (question, _), ans, alts, (doc, sent, mention, tpl) in zip(first, answers, answer_lists, first_meta):
            if not self._accept(ans):
                continue
            if mention is None:  # "What is the cause?": up to max_causes causes, each asked about
                for cause_ans in [a for a in alts[: self.max_causes] if self._accept(a)]:
                    self.counts["answers"] += 1
                    span = span_of(doc, sent.start + cause_ans.start, sent.start + cause_ans.end)
                    if t.effect:
                        second.append((t.effect.format(cause=_short(span["text"])), sent.text))
                        second_meta.append((doc, sent, span, cause_ans.score, question))
                continue
            self.counts["answers"] += 1
            span = span_of(doc, sent.start + ans.start, sent.start + ans.end)
            if self.needs_causal and (doc.id, sent.start) not in causal:
                self.counts["dropped_not_causal"] += 1
                continue
            anchor = mention_span(doc, mention)
            if spans_overlap(span, anchor):
                self.counts["dropped_overlap"] += 1
                continue
            cause, effect = (span, anchor) if tpl.answer == "cause" else (anchor, span)
            keep(make_record(doc, sent, cause, effect, score=ans.score, extractor=self.name, model=self.model,
                             question=question, anchor=anchor))
        self.counts["questions"] += len(second)
        self.counts["unique_questions"] += len(set(second))
        answers2 = self.qa.answers([q for q, _ in second], [c for _, c in second], self.max_effects)
        for (question, _), alts, (doc, sent, cause, cause_score, cause_q) in zip(second, answers2, second_meta):
            for ans in [a for a in alts[: self.max_effects] if self._accept(a)]:
                self.counts["answers"] += 1
                effect = span_of(doc, sent.start + ans.start, sent.start + ans.end)
                if spans_overlap(cause, effect):
                    self.counts["dropped_overlap"] += 1
                    continue
                keep(make_record(doc, sent, cause, effect, score=cause_score * ans.score, extractor=self.name,
                                 model=self.model, question=question, cause_question=cause_q))
        records = list(best.values())
        if self.drop_reversed:
            records = self._without_reversed(records)
        self.counts["extractions"] += len(records)
        return records

    def _without_reversed(self, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Drop anchored pairs whose reverse was extracted from the same sentence (see the
        module docstring)."""
        by_sentence: dict[tuple, list[int]] = {}
        for i, r in enumerate(records):
            by_sentence.setdefault((r["doc_id"], r["sentence"]["start"]), []).append(i)
        drop: set[int] = set()
        for idx in by_sentence.values():
            for a in idx:
                ra = records[a]
                if "anchor" not in ra:
                    continue
                for b in idx:
                    rb = records[b]
                    if a != b and spans_overlap(ra["cause"], rb["effect"]) and spans_overlap(ra["effect"], rb["cause"]):
                        drop.add(a)
                        break
        self.counts["dropped_reversed"] += len(drop)
        return [r for i, r in enumerate(records) if i not in drop]

