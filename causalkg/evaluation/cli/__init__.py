"""The ``causalkg eval ...`` commands. Each family of measures registers its verbs from its own
module in this package, and each verb is a thin wrapper over one function of ``evaluation``."""

from __future__ import annotations

from typing import Any

from causalkg.cli import add_group, register_modules


def register(subparsers: Any) -> None:
    """Add the ``eval`` group and the verbs of every module here to the top-level parser."""
    register_modules(add_group(subparsers, "eval", "evaluate causal KGs and graphs"), __name__, __path__)
