"""The exception hierarchy. Every error the toolkit raises on purpose is a CausalKGError.

The CLI prints ``error: <message>`` (and the hint, when there is one) and exits non-zero;
``--debug`` shows the traceback instead.
"""

from __future__ import annotations


def _rebuild(cls: type, args: tuple, state: dict) -> "CausalKGError":
    err = cls.__new__(cls)
    Exception.__init__(err, *args)
    err.__dict__.update(state)
    return err


class CausalKGError(Exception):
    """Root of all causalkg errors. ``hint`` says how to fix it, when we know.

    Pickled whole (message, hint and any attribute of a subclass), so an error raised in a
    worker process or a Ray actor reaches the command with its hint."""

    exit_code = 1

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __reduce__(self):
        return (_rebuild, (type(self), self.args, dict(self.__dict__)))

    def __str__(self) -> str:
        if self.hint:
            return f"{self.message} ({self.hint})"
        return self.message


class ConfigError(CausalKGError):
    """A configuration value or command-line option is missing, unknown or of the wrong type."""

    exit_code = 2


class SchemaError(CausalKGError):
    """A record does not follow its data contract. The message starts with ``path:line:``."""


class SourceError(CausalKGError):
    """A data source failed: an endpoint, a dump, a model file, an LLM server."""


class DeadlineExceeded(SourceError):
    """A server kept a request past its whole-request deadline on every attempt (a hung or
    trickling server). The message names the endpoint and the deadline."""


class StoreError(CausalKGError):
    """A triple store refused or lost data."""


class ModelError(CausalKGError):
    """A model could not be loaded or produced unusable output."""


__all__ = ["CausalKGError", "ConfigError", "SchemaError", "SourceError", "StoreError", "ModelError"]
