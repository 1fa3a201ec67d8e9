"""A small registry of swappable parts, chosen by name with lazy imports.

Specs look like ``"openai:gpt-4o-mini"`` or ``"qa:models/causal-qa"``: a backend name, a colon,
and an argument the backend interprets (a model name, a path). Each registry maps backend names
to ``"module:attribute"`` strings, imported only when that backend is used, so that choosing the
embedding matcher never imports transformers and the CLI starts fast.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Callable

from causalkg.errors import ConfigError


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


class Registry:
    """Named factories, imported lazily. ``kind`` names the registry in error messages."""

    def __init__(self, kind: str, entries: dict[str, str] | None = None):
        self.kind = kind
        self._entries: dict[str, str | Callable[..., Any]] = dict(entries or {})

    def register(self, name: str, target: str | Callable[..., Any]) -> None:
        self._entries[name] = target

    def names(self) -> list[str]:
        return sorted(self._entries)

    def get(self, name: str) -> Callable[..., Any]:
        try:
            target = self._entries[name]
        except KeyError:
            raise ConfigError(
                f"unknown {self.kind} {name!r}", hint=f"choose one of: {', '.join(self.names())}"
            ) from None
        if callable(target):
            return target
        module_name, _, attr = target.partition(":")
        module = importlib.import_module(module_name)
        return getattr(module, attr)

    def create(self, spec: str | Spec, **kwargs: Any) -> Any:
        s = parse_spec(spec) if isinstance(spec, str) else spec
        return self.get(s.backend)(s.arg, **kwargs)
