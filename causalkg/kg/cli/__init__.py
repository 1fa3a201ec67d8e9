"""The ``causalkg kg ...`` commands. Each part of the KG stage (extraction; assembly, RDF and
export) registers its verbs from its own module in this package, and each verb is a thin wrapper
over one function of ``kg``."""

from __future__ import annotations

from typing import Any

from causalkg.cli import add_group, register_modules


def register(subparsers: Any) -> None:
    """Add the ``kg`` group and the verbs of every module here to the top-level parser."""
    register_modules(add_group(subparsers, "kg", "extract causal pairs and build the causal KG"), __name__, __path__)
