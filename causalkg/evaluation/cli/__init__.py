"""The ``causalkg eval ...`` commands. Each family of measures has its commands in its own module
in this package: each command's function (the Python API, re-exported by ``import causalkg``),
its result class and its parser side by side. This package adds the ``eval`` group and loads them."""

from __future__ import annotations

from typing import Any

from causalkg.options import add_group, register_modules


def register(subparsers: Any) -> None:
    """Add the ``eval`` group and the verbs of every module here to the top-level parser."""
    register_modules(add_group(subparsers, "eval", "evaluate causal KGs and graphs"), __name__, __path__)
