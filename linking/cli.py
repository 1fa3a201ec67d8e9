"""The `causalkg link ...` commands: thin wrappers over the linking library functions."""

from __future__ import annotations

from typing import Any

from causalkg.cli import add_group


def register(subparsers: Any) -> None:
    """Add the ``link`` group and its commands to the top-level parser."""
    add_group(subparsers, "link", "link phrases to Wikidata concepts")
