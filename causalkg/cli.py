"""The ``causalkg`` command: noun-verb subcommands, one per function of the Python API.

Each stage has its commands in its own ``cli`` modules (``corpus.cli``, ``linking.cli``,
``kg.cli``, ``evaluation.cli``): a command's function (what ``import causalkg as ck`` gives), its
result class and its parser sit side by side there. The direction of the imports is one way: a
stage CLI imports ``causalkg.options`` for the parser helpers (``add_group``, ``add_command``,
``register_modules``), not this module, so that using a function loads nothing of a command's
run; this module imports no stage, it names the stage CLIs in ``STAGE_CLIS`` and loads them by
name when the parser is built (``tests/causalkg/test_structure.py`` checks both). A command parses typed options, resolves the configuration (defaults < ``--config FILE``
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
from typing import Any, ClassVar, Sequence

from causalkg import __version__
from causalkg.core.config import CfgLike, Config, flat_items, load_config, parse_assignment, resolve_config, to_toml
from causalkg.core.errors import CausalKGError
from causalkg.core.results import Result, TableResult, table
# The parser helpers live in causalkg.options (the command modules import them from there); they
# are imported here for build_parser, and stay importable from here.
from causalkg.options import (CommandParser, Handler, HelpFormatter, add_command, add_format, add_group,
                              common_options, register_modules)

STAGE_CLIS = ("causalkg.corpus.cli", "causalkg.linking.cli", "causalkg.kg.cli", "causalkg.evaluation.cli",
              "causalkg.web.cli")

# What running a command needs beside its function (``main`` imports from them): loaded with the
# parser, so that once a command runs nothing more is read from disk before its own work (a command
# that runs out of file handles still ends in one line).
RUN_MODULES = ("causalkg.core.deadline", "causalkg.core.interrupts", "causalkg.core.jsonl", "causalkg.core.progress",
               "causalkg.core.ranges")


def build_parser() -> argparse.ArgumentParser:
    for name in RUN_MODULES:
        importlib.import_module(name)
    parser = CommandParser(
        prog="causalkg",
        description="Causal knowledge graphs from Wikipedia and Wikidata, and the measures to judge them.",
        parents=[common_options(suppress=False)],
        formatter_class=HelpFormatter,
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
    # What running a command needs, and a command's function does not: loaded here, not with the
    # module, which ``import causalkg as ck`` may load for show_config and list_registry.
    from causalkg.core.deadline import stage_deadline
    from causalkg.core.interrupts import Interrupted, stop_on_signals
    from causalkg.core.jsonl import allowing_empty_outputs
    from causalkg.core.progress import progress_enabled, progress_for_command
    from causalkg.core.ranges import check_options

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


# What ``import causalkg as ck`` gives from this module (listed again in causalkg.COMMANDS).
__all__ = ["show_config", "list_registry", "ConfigView", "RegistryListing"]
