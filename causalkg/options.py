"""The options every command spells the same way, defined once.

A command's ``register`` adds them with these helpers, so ``--format`` has the same choices
and default everywhere, outputs are ``--out``, redoing current work is ``--force`` (``--refresh``
and ``--output`` stay as deprecated aliases that say so), and ``--lenient`` and ``--dry-run``
read the same in every ``--help``.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from causalkg.core.results import FORMATS

DEFAULT_FORMAT = "text"


class _DeprecatedAlias(argparse.Action):
    """An old flag kept working: it stores into the new option's ``dest`` and warns once."""

    def __init__(self, option_strings: list[str], dest: str, new: str, store: Any = None, **kw: Any) -> None:
        self.new = new
        self.store = store
        nargs = 0 if store is not None else None
        super().__init__(option_strings, dest, nargs=nargs, help=argparse.SUPPRESS, **kw)

    def __call__(self, parser: Any, namespace: argparse.Namespace, values: Any, option_string: str | None = None) -> None:
        print(f"warning: {option_string} is deprecated; use {self.new}", file=sys.stderr)
        setattr(namespace, self.dest, self.store if self.store is not None else values)


class _FormatAlias(argparse.Action):
    """``--format`` with the old names of the text format (``table``, ``toml``) accepted, with a warning."""

    OLD = {"table": "text", "toml": "text"}

    def __call__(self, parser: Any, namespace: argparse.Namespace, values: Any, option_string: str | None = None) -> None:
        if values in self.OLD:
            print(f"warning: --format {values} is deprecated; use --format {self.OLD[values]}", file=sys.stderr)
            values = self.OLD[values]
        elif values not in FORMATS:
            parser.error(f"argument --format: invalid choice: {values!r} (choose from {', '.join(FORMATS)})")
        setattr(namespace, self.dest, values)


def add_format(p: argparse.ArgumentParser, what: str = "output") -> None:
    """``--format text|md|csv|json`` (default text): how the result is printed."""
    p.add_argument("--format", action=_FormatAlias, default=DEFAULT_FORMAT, metavar="{" + ",".join(FORMATS) + "}",
                   help=f"{what} format: text (aligned), md, csv or json (default {DEFAULT_FORMAT})")


def add_out(p: argparse.ArgumentParser, help: str, *, metavar: str = "DIR", old: str | None = None) -> None:
    """``--out PATH``: where the command writes. ``old`` (``--output``) stays as a deprecated alias."""
    p.add_argument("--out", metavar=metavar, help=help)
    if old:
        p.add_argument(old, dest="out", action=_DeprecatedAlias, new="--out")


def add_no_write(p: argparse.ArgumentParser) -> None:
    """``--no-write``: print the result only."""
    p.add_argument("--no-write", action="store_true", help="print the result only; write nothing")


def add_force(p: argparse.ArgumentParser, help: str = "redo the work even when the outputs are current",
              *, refresh_alias: bool = False) -> None:
    """``--force``; ``refresh_alias`` keeps ``--refresh`` as a deprecated alias of it."""
    p.add_argument("--force", action="store_true", help=help)
    if refresh_alias:
        p.add_argument("--refresh", dest="force", action=_DeprecatedAlias, new="--force", store=True)


def add_lenient(p: argparse.ArgumentParser, what: str = "lines") -> None:
    """``--lenient``: skip and count bad input instead of failing."""
    p.add_argument("--lenient", action="store_true",
                   help=f"skip bad input {what} (counted and reported) instead of failing")


def add_dry_run(p: argparse.ArgumentParser, help: str = "check the inputs and settings, print the plan, write nothing") -> None:
    """``--dry-run``: validate and print the plan."""
    p.add_argument("--dry-run", action="store_true", help=help)


__all__ = ["FORMATS", "DEFAULT_FORMAT", "add_format", "add_out", "add_no_write", "add_force", "add_lenient",
           "add_dry_run"]
