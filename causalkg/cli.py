"""The ``causalkg`` command: noun-verb subcommands, one per function of the Python API.

Each stage has its commands in its own ``cli`` modules (``corpus.cli``, ``linking.cli``,
``kg.cli``, ``evaluation.cli``): a command's function (what ``import causalkg as ck`` gives), its
result class and its parser sit side by side there. The direction of the imports is one way: a
stage CLI imports this module for its parser helpers (``add_group``, ``add_command``,
``register_modules``); this module imports no stage, it names the stage CLIs in ``STAGE_CLIS``
and loads them by name when the parser is built (``tests/causalkg/test_structure.py`` checks
both). A command parses typed options, resolves the configuration (defaults < ``--config FILE``
< ``--set key=value`` < the command's own flags), calls its function with the same name and
arguments and prints the result's ``to_table(--format)``.

This module holds the two commands that belong to no stage the same way: ``show_config``
(``causalkg config show``) and ``list_registry`` (``causalkg registry list``).

Errors: a ``CausalKGError`` prints one line, ``error: ...`` with the fix, and exits non-zero
(2 for configuration and usage errors); ``--debug`` shows the traceback.
"""

from __future__ import annotations

import argparse
import errno
import importlib
import json
import logging
import os
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, NoReturn, Sequence

from causalkg import __version__
from causalkg.core.config import CfgLike, Config, flat_items, load_config, parse_assignment, resolve_config, to_toml
from causalkg.core.deadline import stage_deadline
from causalkg.core.errors import CausalKGError
from causalkg.core.interrupts import Interrupted, stop_on_signals
from causalkg.core.jsonl import allowing_empty_outputs
from causalkg.core.progress import progress_enabled, progress_for_command
from causalkg.core.ranges import check_options
from causalkg.core.results import Result, TableResult, table
from causalkg.options import add_format

STAGE_CLIS = ("causalkg.corpus.cli", "causalkg.linking.cli", "causalkg.kg.cli", "causalkg.evaluation.cli",
              "causalkg.web.cli")

Handler = Callable[[argparse.Namespace, Config], "int | None"]


def _common_options(suppress: bool, skip: Sequence[str] = ()) -> argparse.ArgumentParser:
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


class _Parser(argparse.ArgumentParser):
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


class _Formatter(argparse.RawDescriptionHelpFormatter):
    def __init__(self, prog: str) -> None:
        super().__init__(prog, max_help_position=32, width=100)


def add_group(subparsers: Any, name: str, help: str, description: str | None = None) -> Any:
    """A noun (``corpus``, ``kg``, ...) whose verbs are added to the returned subparsers."""
    p = subparsers.add_parser(name, help=help, description=description or help, formatter_class=_Formatter)
    p.set_defaults(_group_parser=p)
    return p.add_subparsers(dest=f"{name}_command", metavar="COMMAND", title="commands")


def add_command(subparsers: Any, name: str, handler: Handler, help: str,
                description: str | None = None, *, skip: Sequence[str] = ()) -> argparse.ArgumentParser:
    """A verb: its parser (add options to it) calls ``handler(args, cfg)``. ``skip``: common
    options that mean nothing to this command (``--engine``, ``--force`` for a read-only one)."""
    # "resolve": a command's own --force (with its own help) takes the place of the common one.
    p = subparsers.add_parser(name, help=help, description=description or help, conflict_handler="resolve",
                              parents=[_common_options(suppress=True, skip=skip)], formatter_class=_Formatter)
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


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="causalkg",
        description="Causal knowledge graphs from Wikipedia and Wikidata, and the measures to judge them.",
        parents=[_common_options(suppress=False)],
        formatter_class=_Formatter,
        epilog="Run 'causalkg COMMAND --help' for a command's options.",
    )
    parser.add_argument("--version", action="version", version=f"causalkg {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands")
    config_cmds = add_group(sub, "config", "show the resolved configuration")
    show = add_command(config_cmds, "show", _config_show, "print the resolved configuration")
    add_format(show, "configuration (text: TOML)")
    reg = add_command(add_group(sub, "registry", "the swappable parts, by versioned name"), "list", _registry_list,
                      "list what is registered: extractors, judges, measures, matchers, encoders, export "
                      "targets (name.vN)")
    reg.add_argument("--kind", help="one kind only (extractor, judge, similarity, sqc-matcher, sqc-complementer, "
                                    "consistency-judge, encoder, export-target)")
    add_format(reg)
    for module_name in STAGE_CLIS:
        importlib.import_module(module_name).register(sub)
    return parser


@dataclass
class ConfigView(Result):
    """The resolved configuration (``causalkg config show``): text is TOML, json is JSON."""

    data: dict[str, Any] = field(default_factory=dict)
    sources: list[str] = field(default_factory=list)

    def _json(self) -> Any:
        return self.data

    def _render(self, fmt: str) -> str:
        if fmt == "csv":
            rows = [{"key": k, "value": v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)}
                    for k, v in flat_items(self.data)]
            return table(rows, ["key", "value"], "csv")
        text = to_toml(self.data).rstrip("\n")
        return f"```toml\n{text}\n```" if fmt == "md" else text


def show_config(*, cfg: CfgLike = None) -> ConfigView:
    """The resolved configuration (``causalkg config show``)."""
    c = resolve_config(cfg)
    return ConfigView(data=c.to_dict(), sources=list(c.sources), detail=c)


@dataclass
class RegistryListing(TableResult):
    """What is registered (``list_registry``): one row per kind and versioned name."""

    entries: list[dict[str, str]] = field(default_factory=list)
    COLUMNS: ClassVar[list[str]] = ["kind", "name", "aliases", "target"]

    def rows(self) -> list[dict[str, str]]:
        return self.entries


def list_registry(*, kind: str | None = None) -> RegistryListing:
    """What can be swapped, by versioned name (``causalkg registry list``): extractors, judges,
    similarity measures, the SQC matcher and complementer, the consistency judge, encoders,
    export targets. ``kind`` keeps one kind. Names without a version (``qa``) mean the newest (``qa.v1``)."""
    from causalkg.registry import CATALOG, registry

    kinds = [kind] if kind else sorted(CATALOG)
    entries = []
    for k in kinds:
        reg = registry(k)
        for name in reg.names():
            base = name.rsplit(".v", 1)[0]
            aliases = ", ".join(sorted(a for a, b in reg.aliases().items() if b == base))
            entries.append({"kind": k, "name": name, "aliases": aliases, "target": reg.target(name)})
    return RegistryListing(entries=entries)


# --- the command line ----------------------------------------------------------------------


def _config_show(args: argparse.Namespace, cfg: Config) -> None:
    print(show_config(cfg=cfg).to_table(args.format))


def _registry_list(args: argparse.Namespace, cfg: Config) -> None:
    print(list_registry(kind=args.kind).to_table(args.format))


def _setup_logging(debug: bool, quiet: bool) -> None:
    level = logging.DEBUG if debug else logging.WARNING if quiet else logging.INFO
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s" if not debug else "%(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.WARNING)
    for name in ("causalkg", "corpus", "linking", "kg", "evaluation"):
        logging.getLogger(name).setLevel(level)


# What to do about the operating system's errors a command cannot work around, by errno.
_OS_ERROR_HINTS = {
    errno.ENOSPC: "free space on that disk or point paths.data (or --out) elsewhere, then rerun: finished work is kept",
    errno.EDQUOT: "free space within your quota or point paths.data (or --out) elsewhere, then rerun",
    errno.EACCES: "make that path writable by you, or choose another --out or paths.data",
    errno.EPERM: "make that path writable by you, or choose another --out or paths.data",
    errno.EROFS: "that file system is read-only: choose a writable --out or paths.data",
    errno.EMFILE: "too many open files: raise the limit (ulimit -n) or use fewer workers (run.workers)",
    errno.ENFILE: "the system ran out of file handles: close other programs or use fewer workers (run.workers)",
    errno.ENOENT: "check that the path exists",
}


def os_error_line(exc: OSError, data: "os.PathLike | str | None" = None) -> str:
    """One line for an ``OSError`` that reached the command: what failed, on which path (the
    file when the error names one, else the data folder ``data`` being written), and what to
    do. Nothing was published: the outputs are the previous run's."""
    what = exc.strerror or str(exc)
    where = f": {exc.filename}" if exc.filename else f" (writing under {data})" if data else ""
    if exc.filename2:
        where += f" -> {exc.filename2}"
    hint = _OS_ERROR_HINTS.get(exc.errno or 0, "see --debug for the traceback")
    return f"{what}{where}; the previous outputs are unchanged ({hint})"


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``causalkg`` command. Returns the exit status."""
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:  # reported by the command's own parser, which knows its options
        (getattr(args, "_command_parser", None) or parser).error(f"unrecognized arguments: {' '.join(extra)}")
    debug = bool(getattr(args, "debug", False))
    _setup_logging(debug, bool(getattr(args, "quiet", False)))
    handler: Handler | None = getattr(args, "_handler", None)
    if handler is None:
        (getattr(args, "_group_parser", None) or parser).print_help()
        return 2
    cfg: Config | None = None
    try:
        check_options(vars(args))
        assignments = [*(getattr(args, "overrides", None) or []), *(getattr(args, "command_overrides", None) or [])]
        overrides = dict(parse_assignment(a) for a in assignments)
        if getattr(args, "engine", None):
            overrides["run.engine"] = args.engine
        cfg = load_config(getattr(args, "config", None), overrides)
        with progress_for_command(bool(getattr(args, "quiet", False)), cfg.get("run.progress", "auto")), \
                stop_on_signals(), allowing_empty_outputs(bool(getattr(args, "allow_shrink", False))), \
                stage_deadline(float(cfg.get("run.network_deadline", 0) or 0)):
            if not progress_enabled():
                # transformers and huggingface_hub draw bars of their own ("Loading weights", ...):
                # keep them to terminals like ours. Read when they are first imported, i.e. later.
                os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
            status = handler(args, cfg)
        return int(status or 0)
    except CausalKGError as exc:
        if debug:
            raise
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt as exc:
        # SIGINT or SIGTERM (stop_on_signals): one line, what the stage kept, and 128 + the signal
        stop = exc if isinstance(exc, Interrupted) else Interrupted.of(exc, "")
        print(stop.line(), file=sys.stderr)
        return stop.exit_code
    except BrokenPipeError:
        return 0
    except OSError as exc:
        if debug:
            raise
        data = cfg.path("paths.data") if cfg is not None else None
        print(f"error: {os_error_line(exc, data)}", file=sys.stderr)
        return 1
    except Exception as exc:  # the last resort: a bug, still one line for the user
        if debug:
            raise
        print(f"error: internal error: {type(exc).__name__}: {exc} (this is a bug in causalkg: rerun with "
              "--debug for the traceback and report it)", file=sys.stderr)
        return 70


def run(argv: Sequence[str]) -> int:
    """Run the CLI in-process (for tests): same as the command line, returns the exit status."""
    try:
        return main(list(argv))
    except SystemExit as exc:  # argparse usage errors and --help
        return int(exc.code or 0) if not isinstance(exc.code, str) else 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())


# What ``import causalkg as ck`` gives from this module (causalkg.COMMAND_MODULES).
__all__ = ["show_config", "list_registry", "ConfigView", "RegistryListing"]
