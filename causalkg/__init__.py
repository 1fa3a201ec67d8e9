"""causalkg: causal knowledge graphs from Wikipedia and Wikidata.

``import causalkg as ck`` gives the whole flow with the CLI's names and arguments::

    cfg = ck.load_config(overrides={"paths.data": "/tmp/ckdata"})
    ck.build_corpus(source="snapshot", cfg=cfg)      # causalkg corpus build
    ck.build_index(cfg=cfg)                          # causalkg link build
    ck.extract(extractor="patterns", cfg=cfg)        # causalkg kg extract
    kg = ck.assemble(cfg=cfg)                        # causalkg kg assemble
    print(ck.recall(kg.out / "causal_kg.jsonl", cfg=cfg).to_table("md"))

Each step returns a typed result (``causalkg.results``) that renders itself with
``to_table(fmt)``. The names are imported on first use (module ``__getattr__``), so importing
``causalkg`` stays cheap and loads none of the stages.

This package also holds what every stage shares: the CLI, the configuration, the error types,
the JSONL contracts between stages, manifests, progress bars, retries, the disk cache and the
registry of swappable parts. The stages are ``causalkg.corpus``, ``causalkg.linking``,
``causalkg.kg`` and ``causalkg.evaluation`` (in that order of the flow; a stage imports only
from stages before it).
"""

from __future__ import annotations

import importlib
from typing import Any

from causalkg.core import __version__

# name -> "module:attribute", imported when first asked for.
_API: dict[str, str] = {
    # configuration and errors
    "load_config": "causalkg.core.config:load_config",
    "Config": "causalkg.core.config:Config",
    "show_config": "causalkg.api:show_config",
    "list_registry": "causalkg.api:list_registry",
    "CausalKGError": "causalkg.core.errors:CausalKGError",
    "ConfigError": "causalkg.core.errors:ConfigError",
    "SchemaError": "causalkg.core.errors:SchemaError",
    "SourceError": "causalkg.core.errors:SourceError",
    "StoreError": "causalkg.core.errors:StoreError",
    "ModelError": "causalkg.core.errors:ModelError",
    # the flow
    "build_corpus": "causalkg.api:build_corpus",
    "build_index": "causalkg.api:build_index",
    "link": "causalkg.api:link",
    "train_qa": "causalkg.api:train_qa",
    "install_models": "causalkg.api:install_models",
    "extract": "causalkg.api:extract",
    "assemble": "causalkg.api:assemble",
    "export": "causalkg.api:export",
    "query": "causalkg.api:query",
    "stats": "causalkg.api:stats",
    "summary": "causalkg.api:summary",
    # evaluation
    "recall": "causalkg.api:recall",
    "precision": "causalkg.api:precision",
    "human_precision": "causalkg.api:human_precision",
    "report": "causalkg.api:report",
    "soft": "causalkg.api:soft",
    "elo": "causalkg.api:elo",
    "meta": "causalkg.api:meta",
    "align": "causalkg.api:align",
    "agreement": "causalkg.api:agreement",
    "sqc": "causalkg.api:sqc",
    "consistency": "causalkg.api:consistency",
    "setup_wordnet": "causalkg.api:setup_wordnet",
}

__all__ = ["__version__", *_API]


def __getattr__(name: str) -> Any:
    target = _API.get(name)
    if target is None:
        raise AttributeError(f"module 'causalkg' has no attribute {name!r}")
    module_name, _, attr = target.partition(":")
    value = getattr(importlib.import_module(module_name), attr)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_API))
