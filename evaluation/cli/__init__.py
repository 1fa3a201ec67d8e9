"""The ``causalkg eval ...`` commands. Each family of measures registers its verbs from its own
module here (``recall``/``precision``, ``soft``/``elo``/``meta``/``align``, ``sqc``/``consistency``)."""

from __future__ import annotations

import importlib
from typing import Any

from causalkg.cli import add_group

COMMAND_MODULES: tuple[str, ...] = ()


def register(subparsers: Any) -> None:
    """Add the ``eval`` group and every measure's verbs to the top-level parser."""
    group = add_group(subparsers, "eval", "evaluate causal KGs and graphs")
    for name in COMMAND_MODULES:
        importlib.import_module(f"evaluation.cli.{name}").register(group)
