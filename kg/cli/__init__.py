"""The ``causalkg kg ...`` commands. Each part of the KG stage (extraction; assembly, RDF and export) registers its verbs from its own
module in this package (every module here with a ``register(group)`` function is loaded, in name
order), and each verb is a thin wrapper over one function of ``kg``."""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any

from causalkg.cli import add_group


def register(subparsers: Any) -> None:
    """Add the ``kg`` group and its verbs to the top-level parser."""
    group = add_group(subparsers, "kg", "extract causal pairs and build the causal KG")
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{__name__}.{info.name}")
        if hasattr(module, "register"):
            module.register(group)
