"""The ``causalkg kg ...`` commands. Each part of the KG stage (extraction; assembly, RDF and
export; the shipped models; the trainers) has its commands in its own module in this package:
each command's function (the Python API, re-exported by ``import causalkg``), its result class
and its parser side by side. This package adds the ``kg`` group and loads them."""

from __future__ import annotations

from typing import Any

from causalkg.options import add_group, register_modules


def register(subparsers: Any) -> None:
    """Add the ``kg`` group and the verbs of every module here to the top-level parser."""
    register_modules(add_group(subparsers, "kg", "extract causal pairs and build the causal KG"), __name__, __path__)
