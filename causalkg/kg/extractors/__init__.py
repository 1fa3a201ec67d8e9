"""Cause-effect extractors behind one interface, chosen by name from a small registry.

``qa`` (extractive question answering, ``kg.extractors.qa``), ``patterns`` (spaCy Matcher cue
constructions, ``kg.extractors.patterns``) and ``llm`` (an OpenAI-compatible chat model,
``kg.extractors.llm``) are imported only when chosen. A spec may carry an argument after a
colon: ``qa:path/to/model`` uses another QA model, ``llm:gpt-4o`` another chat model.

Every extractor takes a shard of prepared documents (``Document``: text, sentences with their
cue matches and concept mentions) and returns Extraction records (``causalkg.core.contracts``) as
dicts, in document order, with offsets into each document's text. ``describe()`` says what
the output depends on (model, checksum, settings): the stage fingerprints it to know when
earlier output is still current. Flow: kg.sentences -> here -> kg.extract.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Protocol, Sequence

from causalkg.core.config import Config
from causalkg.core.contracts import SCHEMA_VERSION
from causalkg.registry import Registry, Spec, parse_spec
from causalkg.registry import registry as registry_of
from causalkg.kg.sentences import Mention, Sentence


def registry() -> Registry:
    """The extractor registry (``causalkg.registry.CATALOG["extractor"]``): versioned names to
    lazily imported factories ``factory(arg, cfg=..., **kw)``."""
    return registry_of("extractor")


def create_extractor(spec: str | Spec, cfg: Config, **kwargs: Any) -> "Extractor":
    """An extractor from ``qa``, ``qa:MODEL``, ``patterns``, ``llm``, ``llm:MODEL``.
    Raises ConfigError for an unknown name."""
    s = parse_spec(spec) if isinstance(spec, str) else spec
    return registry().create(s, cfg=cfg, **kwargs)


@dataclass
class Document:
    """A document ready for extraction: its text, its sentences (candidates marked) and the
    fields that ride along into every extraction (``extras``: revision_id, title, ...)."""

    id: str
    text: str
    sentences: list[Sentence]
    extras: dict[str, Any] = field(default_factory=dict)

    @property
    def candidates(self) -> list[Sentence]:
        return [s for s in self.sentences if s.is_candidate]


class Extractor(Protocol):
    name: str
    model: str | None

    def extract(self, docs: Sequence[Document]) -> list[dict[str, Any]]:
        """Extraction records (dicts) of a shard of documents, in document order."""

    def describe(self) -> dict[str, Any]:
        """What the output depends on: model id and checksum, settings (JSON-serialisable)."""

    def stats(self) -> dict[str, Any]:
        """Counters since creation (questions asked, answers kept, requests, ...)."""


def span_of(doc: Document, start: int, end: int, **extra: Any) -> dict[str, Any]:
    return {"text": doc.text[start:end], "start": start, "end": end, **extra}


def mention_span(doc: Document, m: Mention) -> dict[str, Any]:
    extra = {"qid": m.qid} if m.qid else {}
    return span_of(doc, m.start, m.end, **extra)


# An extraction's score is written to 4 decimals. The models' float32 arithmetic differs in its
# last bits between instruction sets (ONNX Runtime and PyTorch pick their kernels by CPUID: SSE4.2,
# AVX2, AVX-512), which moved 17 of 98 scores in their 6th decimal (PyTorch held to SSE4.1 against
# AVX2) and 1 of 4 under an emulated SSE4.2-only CPU (python -m bench isa); at 4 decimals such a
# difference changes a written score a hundred times less often (docs/reliability.md, "The same
# KG on every CPU"). Decisions (min_score, the thresholds) still read the unrounded values.
SCORE_DECIMALS = 4


def make_record(doc: Document, sentence: Sentence | Mapping[str, Any], cause: Mapping[str, Any],
                effect: Mapping[str, Any], *, score: float, extractor: str, model: str | None,
                question: str | None = None, direction: str | None = None, **extra: Any) -> dict[str, Any]:
    """One Extraction record as a dict; ``extra`` fields and the document's extras ride along."""
    sent = sentence.ref() if isinstance(sentence, Sentence) else dict(sentence)
    cues = [c.text for c in sentence.cues] if isinstance(sentence, Sentence) else []
    rec: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "doc_id": doc.id,
        "sentence": sent,
        "cause": dict(cause),
        "effect": dict(effect),
        "direction": direction,
        "score": round(float(score), SCORE_DECIMALS),
        "extractor": extractor,
        "model": model,
        "question": question,
    }
    rec.update(doc.extras)
    if cues:
        rec["cue"] = cues
    rec.update(extra)
    return rec


def spans_overlap(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return a["start"] < b["end"] and b["start"] < a["end"]


def sort_records(records: list[dict[str, Any]], doc_order: Mapping[str, int]) -> list[dict[str, Any]]:
    """Deterministic order: document, sentence, cause, effect, question."""
    return sorted(records, key=lambda r: (doc_order.get(r["doc_id"], 0), r["sentence"]["start"],
                                          r["cause"]["start"], r["cause"]["end"], r["effect"]["start"],
                                          r["effect"]["end"], r.get("question") or ""))
