"""The parser helpers of the commands, and the options every command spells the same way,
defined once.

A command module's ``register`` adds its verbs with ``add_group`` / ``add_command`` (each verb
gets the common options: ``--config``, ``--set``, ``--force``, ...) and their options with the
helpers below, so ``--format`` has the same choices and default everywhere, outputs are
``--out``, redoing current work is ``--force`` (``--refresh`` and ``--output`` stay as deprecated
aliases that say so), and ``--lenient`` and ``--dry-run`` read the same in every ``--help``.

Where it sits: under the command modules and ``causalkg.cli`` (which builds the parser and runs
a command). It loads nothing of a command's run (progress bars, signals, deadlines): a command
module imports it, and ``import causalkg as ck`` loads a command module to give its function.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Any, Callable, NoReturn, Sequence

from causalkg.core.config import Config
from causalkg.core.results import FORMATS

DEFAULT_FORMAT = "text"

# --- the parser: groups (nouns), commands (verbs), the options every command takes ------------

Handler = Callable[[argparse.Namespace, Config], "int | None"]


def common_options(suppress: bool, skip: Sequence[str] = ()) -> argparse.ArgumentParser:
    """Options every command takes, before or after the command name.

    ``--set`` before the command and after it go to two lists (``overrides`` and
    ``command_overrides``): argparse copies a subcommand's values over the main parser's, so
    one shared list would lose those given before the command. ``main`` applies both, in the
    order given on the command line."""
    default = argparse.SUPPRESS if suppress else None
    p = argparse.ArgumentParser(add_help=False)
    g = p.add_argument_group("common options")
    g.add_argument("--config", metavar="FILE", default=default,
                   help="a TOML file over the defaults (default: ./causalkg.toml when present)")
    g.add_argument("--set", dest="command_overrides" if suppress else "overrides", metavar="KEY=VALUE",
                   action="append", default=default, help="override one config key, e.g. --set wikidata.timeout=30 (repeatable)")
    if "--engine" not in skip:
        g.add_argument("--engine", choices=["local", "ray"], default=default,
                       help="where the heavy stages run: this machine, or a Ray cluster (run.engine; see run.ray_address)")
    g.add_argument("--debug", action="store_true", default=argparse.SUPPRESS if suppress else False,
                   help="show tracebacks and debug logs")
    if "--force" not in skip:
        g.add_argument("--force", action="store_true", default=argparse.SUPPRESS if suppress else False,
                       help="redo work even when it is current")
    if "--allow-shrink" not in skip:
        g.add_argument("--allow-shrink", action="store_true", default=argparse.SUPPRESS if suppress else False,
                       help="let an empty result, or a corpus that lost documents to a damaged dump, replace "
                            "a larger output (refused otherwise, the old output kept, whatever the other options)")
    g.add_argument("--quiet", "-q", action="store_true", default=argparse.SUPPRESS if suppress else False,
                   help="no progress and no information lines: only warnings and errors on stderr")
    return p


class CommandParser(argparse.ArgumentParser):
    """argparse with a "did you mean" for a mistyped command or option, the way a config key gets one."""

    def error(self, message: str) -> "NoReturn":  # type: ignore[override]
        import difflib
        import re

        choice = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
        unknown = re.search(r"unrecognized arguments: (\S+)", message)
        if choice:
            names = re.findall(r"'([^']*)'", choice.group(2))
            close = difflib.get_close_matches(choice.group(1), names, n=1)
            if close:
                message += f"; did you mean '{close[0]}'?"
        elif unknown and unknown.group(1).startswith("-"):
            opts = [o for a in self._actions for o in a.option_strings]
            given = unknown.group(1).split("=")[0]
            close = difflib.get_close_matches(given, opts, n=1)
            if given in ("--engine", "--force", "--allow-shrink"):
                message += f"; {given} means nothing to {self.prog}"
            elif close:
                message += f"; did you mean {close[0]}?"
        super().error(message)


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Help text as written (line breaks kept), options in a column at 32, lines of 100."""

    def __init__(self, prog: str) -> None:
        super().__init__(prog, max_help_position=32, width=100)


def add_group(subparsers: Any, name: str, help: str, description: str | None = None) -> Any:
    """A noun (``corpus``, ``kg``, ...) whose verbs are added to the returned subparsers."""
    p = subparsers.add_parser(name, help=help, description=description or help, formatter_class=HelpFormatter)
    p.set_defaults(_group_parser=p)
    return p.add_subparsers(dest=f"{name}_command", metavar="COMMAND", title="commands")


def add_command(subparsers: Any, name: str, handler: Handler, help: str,
                description: str | None = None, *, skip: Sequence[str] = ()) -> argparse.ArgumentParser:
    """A verb: its parser (add options to it) calls ``handler(args, cfg)``. ``skip``: common
    options that mean nothing to this command (``--engine``, ``--force`` for a read-only one)."""
    # "resolve": a command's own --force (with its own help) takes the place of the common one.
    p = subparsers.add_parser(name, help=help, description=description or help, conflict_handler="resolve",
                              parents=[common_options(suppress=True, skip=skip)], formatter_class=HelpFormatter)
    p.set_defaults(_handler=handler, _command_parser=p)
    return p


def register_modules(group: Any, package: str, path: Sequence[str]) -> None:
    """Load every module of ``package`` (whose ``__path__`` is ``path``) that has a
    ``register(group)`` function, in name order, and let it add its verbs to ``group``."""
    import pkgutil

    for info in sorted(pkgutil.iter_modules(list(path)), key=lambda m: m.name):
        module = importlib.import_module(f"{package}.{info.name}")
        if hasattr(module, "register"):
            module.register(group)


# --- the options spelt the same way everywhere --------------------------------------------------


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


__all__ = ["Handler", "CommandParser", "HelpFormatter", "common_options", "add_group", "add_command",
           "register_modules", "FORMATS", "DEFAULT_FORMAT", "add_format", "add_out", "add_no_write", "add_force", "add_lenient",
           "add_dry_run"]
