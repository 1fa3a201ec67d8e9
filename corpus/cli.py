"""The `causalkg corpus ...` commands: thin wrappers over the corpus library functions."""

from __future__ import annotations

from typing import Any

from causalkg.cli import add_group


def register(subparsers: Any) -> None:
    """Add the ``corpus`` group and its commands to the top-level parser."""
    add_group(subparsers, "corpus", "build the corpus: Wikidata concepts, the Base KG, Wikipedia documents")
