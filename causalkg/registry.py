"""The registry of swappable parts: chosen by versioned name, imported only when used.

Specs look like ``"openai:gpt-4o-mini"`` or ``"qa:models/causal-qa"``: a backend name, a colon,
and an argument the backend interprets (a model name, a path). Every backend is registered
under a versioned name, ``qa.v1``, ``embedding.v1``, ...; a spec may name the version
(``qa.v1:models/causal-qa``) or not (``qa:...`` takes the newest), so an output made with
``qa.v1`` can be reproduced after a ``qa.v2`` appears. Manifests record the versioned name
(``versioned_spec``: ``qa:models/causal-qa`` is recorded as ``qa.v1:models/causal-qa``).

``CATALOG`` below is the one list of what is swappable, per kind: extractors, precision judges,
similarity measures, the SQC matcher and complementer, the consistency judge, the encoder and the
export target. Entries are ``"module:attribute"`` strings, imported when that backend is first
used, so that choosing the embedding matcher never imports transformers and the CLI starts fast.
``registry(kind)`` gives one kind's ``Registry``; ``causalkg registry list`` shows them all.

Plugins: an installed distribution adds parts without editing this file by declaring entry points
in the group of their kind (``ENTRY_POINT_GROUPS``: ``causalkg.extractors``, ``causalkg.judges``,
...), named by versioned name, pointing at ``module:attribute``; in its ``pyproject.toml``::

    [project.entry-points."causalkg.extractors"]
    "myextractor.v1" = "my_package.extract:create"

A plugin cannot replace a built-in name (it is skipped with a warning); a plugin whose name is not
versioned (``name.vN``) is skipped the same way. Entry points are read when a registry is built,
and their modules imported only when that part is used.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import re
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from causalkg.core.errors import ConfigError


@dataclass(frozen=True)
class Spec:
    backend: str
    arg: str

    def __str__(self) -> str:
        return f"{self.backend}:{self.arg}" if self.arg else self.backend


def parse_spec(text: str, *, default_backend: str | None = None) -> Spec:
    """Split ``backend:arg``. Without a colon, ``default_backend`` (if given) takes the whole text."""
    text = (text or "").strip()
    if not text:
        raise ConfigError("empty backend spec", hint="use backend:argument, e.g. openai:gpt-4o-mini")
    backend, sep, arg = text.partition(":")
    if not sep:
        if default_backend is None:
            return Spec(backend, "")
        return Spec(default_backend, text)
    return Spec(backend.strip(), arg.strip())


_VERSIONED = re.compile(r"^(?P<base>[A-Za-z][A-Za-z0-9_-]*)\.v(?P<version>\d+)$")


def split_version(name: str) -> tuple[str, int | None]:
    """``"qa.v1"`` -> ``("qa", 1)``; ``"qa"`` -> ``("qa", None)``."""
    m = _VERSIONED.match(name)
    return (m.group("base"), int(m.group("version"))) if m else (name, None)


class Registry:
    """Named factories of one kind, imported lazily. ``kind`` names the registry in messages.

    ``entries`` maps versioned names (``qa.v1``) to ``"module:attribute"`` strings or callables;
    ``aliases`` maps other names to a base name (``rouge`` -> ``rouge1``).
    """

    def __init__(self, kind: str, entries: Mapping[str, str | Callable[..., Any]] | None = None,
                 aliases: Mapping[str, str] | None = None):
        self.kind = kind
        self._entries: dict[str, str | Callable[..., Any]] = {}
        self._aliases: dict[str, str] = dict(aliases or {})
        for name, target in (entries or {}).items():
            self.register(name, target)

    def register(self, name: str, target: str | Callable[..., Any]) -> None:
        """Add ``name`` (versioned: ``base.vN``) -> ``target`` (``"module:attr"`` or a callable)."""
        if split_version(name)[1] is None:
            raise ValueError(f"registry names carry a version (name.vN): {name!r}")
        self._entries[name] = target

    def names(self) -> list[str]:
        """Every versioned name, sorted."""
        return sorted(self._entries)

    def target(self, name: str) -> str:
        """What a versioned name points at, as text (``"module:attribute"``)."""
        t = self._entries[name]
        return t if isinstance(t, str) else f"{t.__module__}:{t.__qualname__}"

    def aliases(self) -> dict[str, str]:
        return dict(self._aliases)

    def bases(self) -> list[str]:
        """The names a spec may use without a version."""
        return sorted({split_version(n)[0] for n in self._entries})

    def resolve(self, name: str) -> str:
        """The versioned name for ``name``: itself when versioned, else the newest version (aliases
        followed). Raises ConfigError when nothing of that name is registered."""
        base, version = split_version(name)
        base = self._aliases.get(base, base)
        if version is not None:
            full = f"{base}.v{version}"
            if full in self._entries:
                return full
        else:
            versions = [v for n in self._entries for b, v in [split_version(n)] if b == base and v is not None]
            if versions:
                return f"{base}.v{max(versions)}"
        raise ConfigError(f"unknown {self.kind} {name!r}", hint=f"choose one of: {', '.join(self.bases())}")

    def base(self, name: str) -> str:
        """The unversioned, canonical name of a registered backend (``openai.v1`` -> ``openai``)."""
        return split_version(self.resolve(name))[0]

    def get(self, name: str) -> Callable[..., Any]:
        target = self._entries[self.resolve(name)]
        if callable(target):
            return target
        module_name, _, attr = target.partition(":")
        module = importlib.import_module(module_name)
        return getattr(module, attr)

    def create(self, spec: str | Spec, **kwargs: Any) -> Any:
        s = parse_spec(spec) if isinstance(spec, str) else spec
        return self.get(s.backend)(s.arg, **kwargs)


# kind -> (versioned name -> "module:attribute"), and aliases. The one list of swappable parts.
CATALOG: dict[str, dict[str, str]] = {
    "extractor": {
        "qa.v1": "causalkg.kg.extractors.qa:create",
        "tagger.v1": "causalkg.kg.extractors.tagger:create",
        "patterns.v1": "causalkg.kg.extractors.patterns:create",
        "llm.v1": "causalkg.kg.extractors.llm:create",
    },
    "judge": {
        "openai.v1": "causalkg.evaluation.wikicausal.judges:OpenAIJudge",
        "transformers.v1": "causalkg.evaluation.wikicausal.judges:TransformersJudge",
    },
    "similarity": {
        "exact.v1": "causalkg.evaluation.graph.similarity:ExactSimilarity",
        "verbatim.v1": "causalkg.evaluation.graph.similarity:VerbatimSimilarity",
        "bleu.v1": "causalkg.evaluation.graph.similarity:BleuSimilarity",
        "ref-bleu.v1": "causalkg.evaluation.graph.similarity:ReferenceBleuSimilarity",
        "rouge1.v1": "causalkg.evaluation.graph.similarity:Rouge1Similarity",
        "meteor.v1": "causalkg.evaluation.graph.similarity:MeteorSimilarity",
        "ref-meteor.v1": "causalkg.evaluation.graph.similarity:ReferenceMeteorSimilarity",
        "embedding.v1": "causalkg.evaluation.graph.similarity:EmbeddingSimilarity",
        "bleurt.v1": "causalkg.evaluation.graph.similarity:BleurtSimilarity",
    },
    "sqc-matcher": {
        "embedding.v1": "causalkg.evaluation.judging.sqc:embedding_matcher",
        "openai.v1": "causalkg.evaluation.judging.sqc:llm_matcher",
    },
    "sqc-complementer": {
        "nli.v1": "causalkg.evaluation.judging.sqc:nli_complementer",
        "openai.v1": "causalkg.evaluation.judging.sqc:llm_complementer",
    },
    "consistency-judge": {
        "openai.v1": "causalkg.evaluation.judging.consistency:llm_ranking",
        "transformers.v1": "causalkg.evaluation.judging.consistency:tokenprob_ranking",
    },
    "encoder": {
        "sentence-transformers.v1": "causalkg.linking.encoder:Encoder",
    },
    "export-target": {
        "oxigraph.v1": "causalkg.kg.store:export_oxigraph",
        "graph-store.v1": "causalkg.kg.store:export_graph_store",
    },
}
ALIASES: dict[str, dict[str, str]] = {
    "similarity": {"rouge": "rouge1", "cosine": "embedding"},
}


# How a kind is named in messages ("unknown SQC matcher 'bm25'").
TITLES: dict[str, str] = {"similarity": "similarity measure", "sqc-matcher": "SQC matcher",
                          "sqc-complementer": "SQC complementer", "consistency-judge": "consistency judge",
                          "export-target": "export target"}


# kind -> the entry-point group through which installed plugins add parts of that kind.
ENTRY_POINT_GROUPS: dict[str, str] = {
    "extractor": "causalkg.extractors", "judge": "causalkg.judges", "similarity": "causalkg.similarities",
    "sqc-matcher": "causalkg.sqc_matchers", "sqc-complementer": "causalkg.sqc_complementers",
    "consistency-judge": "causalkg.consistency_judges", "encoder": "causalkg.encoders",
    "export-target": "causalkg.export_targets",
}


def plugin_entries(kind: str) -> dict[str, str]:
    """The parts of ``kind`` that installed distributions declare as entry points (versioned name ->
    ``"module:attribute"``), without the ones that would replace a built-in or carry no version."""
    found: dict[str, str] = {}
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUPS[kind]):
        where = f"entry point {ep.name!r} in group {ep.group!r}" + (f" of {ep.dist.name}" if ep.dist else "")
        if split_version(ep.name)[1] is None:
            warnings.warn(f"{where} ignored: registry names carry a version (name.vN)", stacklevel=2)
        elif ep.name in CATALOG[kind]:
            warnings.warn(f"{where} ignored: {ep.name} is built in", stacklevel=2)
        elif ep.name not in found:
            found[ep.name] = ep.value
    return found


def registry(kind: str) -> Registry:
    """The registry of one kind of swappable part (a key of ``CATALOG``), with the parts installed
    plugins add through entry points (``ENTRY_POINT_GROUPS``)."""
    if kind not in CATALOG:
        raise ConfigError(f"no registry of {kind!r}", hint=f"choose one of: {', '.join(sorted(CATALOG))}")
    return Registry(TITLES.get(kind, kind), {**CATALOG[kind], **plugin_entries(kind)}, ALIASES.get(kind))


def versioned_spec(kind: str, spec: str | Spec, *, default_backend: str | None = None,
                   keep_unknown: bool = False) -> str:
    """``spec`` with its backend's versioned name, as manifests record it: ``qa:models/causal-qa``
    -> ``qa.v1:models/causal-qa`` (the newest version), ``qa.v1:...`` kept, aliases followed
    (``rouge`` -> ``rouge1.v1``). ``default_backend`` as in ``parse_spec``. Raises ConfigError when
    the backend is not registered under ``kind``, unless ``keep_unknown`` (for parts handed in as
    objects, a test's fake judge): then ``spec`` comes back as given."""
    s = parse_spec(spec, default_backend=default_backend) if isinstance(spec, str) else spec
    try:
        return str(Spec(registry(kind).resolve(s.backend), s.arg))
    except ConfigError:
        if keep_unknown and kind in CATALOG:
            return str(s)
        raise


def listing() -> dict[str, list[str]]:
    """Every kind and its versioned names (what ``causalkg registry list`` prints)."""
    return {kind: registry(kind).names() for kind in sorted(CATALOG)}
