"""The span-tagger extractor: every relation of each candidate sentence (``kg.tagger``).

Each candidate sentence is tagged once per relation index (up to ``tagger_max_relations``
passes, stopping at the first pass that finds no cause or no effect); each pass gives one
cause -> effect pair with its signal. Records carry ``signal`` (a span, when tagged) and
``relation_index`` (the pass). Flow: kg.sentences -> the gate -> here -> kg.extract.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any, Sequence

from causalkg.core.models import stage_device
from causalkg.core.config import Config, block
from causalkg.core.manifest import describe_input
from causalkg.kg.extractors import Document, make_record, span_of
from causalkg.kg.qa_decode import resolve_model_path
from causalkg.kg.settings import TaggerSettings
from causalkg.kg.tagger import SpanTagger


def create(arg: str, *, cfg: Config, tagger: SpanTagger | None = None, **_: Any) -> "TaggerExtractor":
    """The registry factory: ``tagger`` (model from ``extract.tagger.model``) or ``tagger:MODEL``."""
    return TaggerExtractor.from_config(cfg, model_name=arg or None, tagger=tagger)


class TaggerExtractor:
    name = "tagger"

    def __init__(self, tg: TaggerSettings, *, base_dir: Path | None = None, device: str = "cpu",
                 dtype: str = "float32", candidates_only: bool = True, model_name: str | None = None,
                 tagger: SpanTagger | None = None):
        """The extractor of its block, ``[extract.tagger]``, and the run's ``device``, ``dtype``
        and ``candidates_only``; ``model_name`` overrides ``tg.model``."""
        self.model = model_name or tg.model
        self.candidates_only = bool(candidates_only)
        self.min_score = float(tg.min_score)
        path, local = resolve_model_path(self.model, base_dir)
        self.model_path = path if local else None
        self.tagger = tagger or SpanTagger(
            self.model, base_dir=base_dir, device=device, batch_size=tg.batch_size,
            max_relations=tg.max_relations, max_seq_length=tg.max_seq_length, dtype=str(dtype))
        self.counts: Counter[str] = Counter()

    @classmethod
    def from_config(cls, cfg: Config, *, model_name: str | None = None,
                    tagger: SpanTagger | None = None) -> "TaggerExtractor":
        """The extractor of a resolved configuration: ``[extract.tagger]`` and ``[extract]``'s
        ``device`` (falling back to ``run.device``), ``dtype`` and ``candidates_only``."""
        ex = cfg["extract"]
        return cls(block(cfg, "extract.tagger", TaggerSettings), base_dir=cfg.base_dir,
                   device=stage_device(cfg, "extract.device"), dtype=ex["dtype"],
                   candidates_only=ex["candidates_only"], model_name=model_name, tagger=tagger)

    def describe(self) -> dict[str, Any]:
        checksum = describe_input(self.model_path)["sha256"] if self.model_path else None
        return {"extractor": self.name, "model": self.model, "model_path": self.model_path, "model_sha256": checksum,
                "device": self.tagger.device, "dtype": self.tagger.dtype, "max_relations": self.tagger.max_relations,
                "max_seq_length": self.tagger.max_seq_length, "min_score": self.min_score}

    def stats(self) -> dict[str, Any]:
        out = dict(self.counts)
        out["forward_passes"] = self.tagger.calls
        out["features"] = self.tagger.features
        return out

    def extract(self, docs: Sequence[Document]) -> list[dict[str, Any]]:
        todo = []
        for doc in docs:
            for sent in doc.sentences:
                self.counts["sentences"] += 1
                if self.candidates_only and not sent.is_candidate:
                    continue
                self.counts["sentences_read"] += 1
                todo.append((doc, sent))
        found = self.tagger.relations([s.text for _, s in todo])
        records = []
        for (doc, sent), rels in zip(todo, found):
            for rel in rels:
                if rel.score < self.min_score:
                    self.counts["dropped_low_score"] += 1
                    continue
                extra: dict[str, Any] = {"relation_index": rel.pass_index}
                if rel.signal is not None:
                    extra["signal"] = span_of(doc, sent.start + rel.signal.start, sent.start + rel.signal.end)
                records.append(make_record(
                    doc, sent, span_of(doc, sent.start + rel.cause.start, sent.start + rel.cause.end),
                    span_of(doc, sent.start + rel.effect.start, sent.start + rel.effect.end),
                    score=rel.score, extractor=self.name, model=self.model, **extra))
        self.counts["extractions"] += len(records)
        return records
