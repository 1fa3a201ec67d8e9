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

The names here are those of the modules in ``COMMAND_MODULES`` (their ``__all__``), imported
on first use (module ``__getattr__``), so importing ``causalkg`` stays cheap and loads none of
the stages.

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

# The modules whose public names (``__all__``) ``import causalkg as ck`` gives: the
# configuration and the errors, then each stage's commands in the order of the flow.
COMMAND_MODULES: tuple[str, ...] = (
    "causalkg.core.config",
    "causalkg.core.errors",
    "causalkg.cli",
    "causalkg.corpus.cli",
    "causalkg.linking.cli",
    "causalkg.kg.cli.extract",
    "causalkg.kg.cli.gate",
    "causalkg.kg.cli.models",
    "causalkg.kg.cli.graph",
    "causalkg.evaluation.cli.recall",
    "causalkg.evaluation.cli.soft",
    "causalkg.evaluation.cli.sqc",
    "causalkg.web.cli",
)


def _names() -> dict[str, str]:
    """Public name -> the command module that defines it (imports every module in the list)."""
    found: dict[str, str] = {}
    for module_name in COMMAND_MODULES:
        for name in importlib.import_module(module_name).__all__:
            found.setdefault(name, module_name)
    return found


def __getattr__(name: str) -> Any:
    if name == "__all__":
        return ["__version__", *_names()]
    if not name.startswith("_"):
        for module_name in COMMAND_MODULES:  # in order, stopping at the first that has it
            module = importlib.import_module(module_name)
            if name in module.__all__:
                value = getattr(module, name)
                globals()[name] = value  # later lookups skip this function
                return value
    raise AttributeError(f"module 'causalkg' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_names()))
