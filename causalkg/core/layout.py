"""The data layout: where every stage reads and writes under ``paths.data``.

One place names the folders and files the stages hand each other (corpus -> linking -> kg ->
evaluation), so that moving ``paths.data`` moves all of them and no stage spells another's path::

    <paths.data>/wikidata/   event_classes.jsonl, concepts.jsonl, base_kg.jsonl   (corpus build)
    <paths.data>/corpus/     corpus.jsonl                                          (corpus build)
    <paths.data>/linking/    the concept index, manifest.json                      (link build)
    <paths.data>/kg/         extractions.jsonl, causal_kg*.jsonl, RDF              (kg extract, assemble)
    <paths.data>/store/      the embedded Oxigraph store                           (kg export)
    <paths.data>/eval/<measure>/                                                   (eval ...)
    <paths.data>/judgements/ judgements.jsonl                                      (serve: human verdicts)

A path setting that is empty (``extract.input = ""``) means "the layout's place"; a user may
still point it anywhere. ``Layout`` holds no configuration of its own: build it from a Config.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from causalkg.core.config import Config

WIKIDATA = "wikidata"
CORPUS = "corpus"
LINKING = "linking"
KG = "kg"
EVAL = "eval"
STORE = "store"
JUDGEMENTS = "judgements"

CONCEPTS_FILE = "concepts.jsonl"
BASE_KG_FILE = "base_kg.jsonl"
EVENT_CLASSES_FILE = "event_classes.jsonl"
CORPUS_FILE = "corpus.jsonl"
EXTRACTIONS_FILE = "extractions.jsonl"
PAIRS_FILE = "causal_kg_pairs.jsonl"
NESTED_FILE = "causal_kg.jsonl"


@dataclass(frozen=True)
class Layout:
    """The folders and files of one data root. ``Layout.from_config(cfg)`` reads ``paths.data``."""

    data: Path

    @classmethod
    def from_config(cls, cfg: Config) -> "Layout":
        return cls(cfg.path("paths.data"))

    # -- corpus stage --------------------------------------------------------------------------
    @property
    def wikidata_dir(self) -> Path:
        return self.data / WIKIDATA

    @property
    def concepts(self) -> Path:
        return self.wikidata_dir / CONCEPTS_FILE

    @property
    def base_kg(self) -> Path:
        return self.wikidata_dir / BASE_KG_FILE

    @property
    def corpus_dir(self) -> Path:
        return self.data / CORPUS

    @property
    def corpus(self) -> Path:
        return self.corpus_dir / CORPUS_FILE

    # -- linking stage -------------------------------------------------------------------------
    @property
    def linking_dir(self) -> Path:
        return self.data / LINKING

    @property
    def linking_manifest(self) -> Path:
        return self.linking_dir / "manifest.json"

    # -- kg stage ------------------------------------------------------------------------------
    @property
    def kg_dir(self) -> Path:
        return self.data / KG

    @property
    def extractions(self) -> Path:
        return self.kg_dir / EXTRACTIONS_FILE

    @property
    def kg_pairs(self) -> Path:
        return self.kg_dir / PAIRS_FILE

    @property
    def kg_nested(self) -> Path:
        return self.kg_dir / NESTED_FILE

    @property
    def store_dir(self) -> Path:
        """The embedded triple store (``kg export``); the database is in ``oxigraph/``."""
        return self.data / STORE

    # -- evaluation stage ----------------------------------------------------------------------
    @property
    def eval_dir(self) -> Path:
        return self.data / EVAL

    @property
    def judgements(self) -> Path:
        """The human judgements the browser UI records (``causalkg serve``)."""
        return self.data / JUDGEMENTS / "judgements.jsonl"

    def eval_out(self, measure: str) -> Path:
        """``<paths.data>/eval/<measure>``: the default output folder of one measure."""
        return self.eval_dir / measure


def configured_path(cfg: Config, dotted: str, default: Path) -> Path:
    """The path setting ``dotted``, or ``default`` (a layout place) when it is empty."""
    value = cfg.get(dotted, "")
    return cfg.path(dotted) if value not in ("", None) else default


def extract_input(cfg: Config) -> Path:
    """``extract.input``, by default the corpus the corpus stage writes."""
    return configured_path(cfg, "extract.input", Layout.from_config(cfg).corpus)


def extract_output(cfg: Config) -> Path:
    """``extract.output``, by default ``<paths.data>/kg/extractions.jsonl`` (assemble reads it)."""
    return configured_path(cfg, "extract.output", Layout.from_config(cfg).extractions)


def kg_dir(cfg: Config) -> Path:
    """``<paths.data>/kg``: where extractions are read and the KG is written."""
    return Layout.from_config(cfg).kg_dir


def default_paths(cfg: Config) -> dict[str, Path]:
    """The inputs of KG assembly and the readers after it, by role."""
    lay = Layout.from_config(cfg)
    return {
        "extractions": extract_output(cfg),
        "corpus": lay.corpus,
        "concepts": lay.concepts,
        "base_kg": lay.base_kg,
        "linking_manifest": lay.linking_manifest,
    }


__all__ = ["Layout", "configured_path", "extract_input", "extract_output", "kg_dir", "default_paths"]
