"""The `causalkg kg ...` commands: thin wrappers over the kg library functions."""

from __future__ import annotations

from typing import Any

from causalkg.cli import add_group


def register(subparsers: Any) -> None:
    """Add the ``kg`` group and its commands to the top-level parser."""
    add_group(subparsers, "kg", "extract causal pairs and build the causal KG")
