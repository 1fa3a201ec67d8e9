"""causalkg: causal knowledge graphs from Wikipedia and Wikidata.

``import causalkg as ck`` gives the whole flow with the CLI's names and arguments::

    cfg = ck.load_config(overrides={"paths.data": "/tmp/ckdata"})
    ck.build_corpus(source="snapshot", cfg=cfg)      # causalkg corpus build
    ck.build_index(cfg=cfg)                          # causalkg link build
    ck.extract(extractor="patterns", cfg=cfg)        # causalkg kg extract
    kg = ck.assemble(cfg=cfg)                        # causalkg kg assemble
    print(ck.recall(kg.out / "causal_kg.jsonl", cfg=cfg).to_table("md"))

Each command is one function, defined in its stage's command module beside its result class
and its ``causalkg`` subcommand (``causalkg.kg.cli.extract`` holds ``extract``, ``Extraction``
and ``causalkg kg extract``). Each returns a typed result (a ``causalkg.core.results.Result``)
that renders itself with ``to_table(fmt)``; the command prints exactly that. Every function
takes ``cfg``: a ``Config`` (from ``load_config``), a path to a TOML file over the defaults, or
None (the defaults, and ``./causalkg.toml`` when present); keyword options that are settings
override it for that call only. Errors are ``CausalKGError`` subclasses.

The names here are those of the modules in ``COMMANDS`` (their ``__all__``), each imported on
first use (module ``__getattr__``) from the one module that defines it, so importing
``causalkg`` stays cheap and loads none of the stages, and ``ck.assemble`` loads its command
module only (not the parser, nor the stage until the function runs).

This package also holds what every stage shares: the CLI, the configuration, the error types,
the JSONL contracts between stages, manifests, progress bars, retries, the disk cache and the
registry of swappable parts. The stages are ``causalkg.corpus``, ``causalkg.linking``,
``causalkg.kg`` and ``causalkg.evaluation`` (in that order of the flow; a stage imports only
from stages before it).
"""

from __future__ import annotations

import importlib
from typing import Any

from causalkg.core import __version__ as __version__  # re-exported: causalkg.__version__

# The modules whose public names ``import causalkg as ck`` gives, each with its ``__all__``: the
# configuration and the errors, then each stage's commands in the order of the flow. The names are
# written here too so that ``ck.assemble`` imports the one module that defines it and no other
# (tests/causalkg/test_api.py checks that each tuple is its module's ``__all__``).
COMMANDS: dict[str, tuple[str, ...]] = {
    "causalkg.core.config": ("Config", "load_config", "resolve_config"),
    "causalkg.core.errors": ("CausalKGError", "ConfigError", "SchemaError", "SourceError", "StoreError", "ModelError"),
    "causalkg.cli": ("show_config", "list_registry", "ConfigView", "RegistryListing"),
    "causalkg.corpus.cli": ("build_corpus", "CorpusBuild"),
    "causalkg.linking.cli": ("build_index", "link", "IndexBuild", "Links"),
    "causalkg.kg.cli.extract": ("extract", "train_qa", "Extraction", "Training"),
    "causalkg.kg.cli.gate": ("train_gate", "train_tagger", "train_verifier", "GateTraining", "TaggerTraining",
                             "VerifierTraining"),
    "causalkg.kg.cli.models": ("install_models", "build_modelpack"),
    "causalkg.kg.cli.graph": ("assemble", "export", "query", "stats", "summary", "Assembly", "Export", "QueryAnswer",
                              "Stats", "Summary"),
    "causalkg.evaluation.cli.recall": ("recall", "precision", "human_precision", "report", "Recall", "Precision",
                                       "HumanPrecisionResult", "Report"),
    "causalkg.evaluation.cli.soft": ("soft", "elo", "meta", "align", "agreement", "setup_wordnet", "SoftScores",
                                     "EloRatings", "MetaEvaluation", "Alignment", "Agreement", "WordNetInstall"),
    "causalkg.evaluation.cli.sqc": ("sqc", "consistency", "SQCScore", "Consistency"),
    "causalkg.web.cli": ("serve", "Serving"),
}
COMMAND_MODULES: tuple[str, ...] = tuple(COMMANDS)

# Public name -> the module that defines it (the first one listed, should two give a name).
_WHERE: dict[str, str] = {}
for _module, _public in COMMANDS.items():
    for _name in _public:
        _WHERE.setdefault(_name, _module)
del _module, _public, _name


def __getattr__(name: str) -> Any:
    if name == "__all__":
        return ["__version__", *_WHERE]
    module_name = _WHERE.get(name)
    if module_name is not None:
        value = getattr(importlib.import_module(module_name), name)
        globals()[name] = value  # later lookups skip this function
        return value
    raise AttributeError(f"module 'causalkg' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_WHERE))
