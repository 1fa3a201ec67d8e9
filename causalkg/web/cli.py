"""``serve`` / ``Serving`` / ``causalkg serve``: the function of the Python API, its result class
and its parser (the work: ``web.serve.serve``; ``import causalkg as ck`` re-exports the function
and the class)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any

from causalkg.core.config import CfgLike, Config, PathLike, resolve_config
from causalkg.core.results import Result, lines_block
from causalkg.options import add_command, add_dry_run


@dataclass
class Serving(Result):
    """Where ``serve`` listens (or would listen) and whether judgements are accepted. ``app`` is
    the ASGI application it built (run it with any ASGI server, or test it with a client)."""

    host: str = ""
    port: int = 0
    read_only: bool = False
    token: bool = False  # whether judgements need a token (the token itself is not kept here)
    allowed_hosts: list[str] | None = None

    def _render(self, fmt: str) -> str:
        return lines_block([self.detail.describe()], fmt)


def serve(*, host: str | None = None, port: int | None = None, allow_remote: bool = False, token: str | None = None,
          kg: PathLike | None = None, judgements: PathLike | None = None, dry_run: bool = False,
          cfg: CfgLike = None) -> Serving:
    """Serve the KG in a browser (``causalkg serve``): build the web application over ``kg``
    (default ``<paths.data>/kg``) and run it on ``host``:``port`` (default web.host, web.port;
    0 picks a free port) until interrupted, as the command does: the call blocks, Ctrl-C or
    SIGTERM stops the server and raises ``KeyboardInterrupt`` (``core.interrupts.Interrupted``).
    ``dry_run``: check the options and the KG, build the application and return at once, serving
    nothing; the result's ``app`` is that ASGI application. A non-loopback ``host`` needs
    ``allow_remote`` and is read-only unless a ``token`` is set (default ``$CAUSALKG_WEB_TOKEN``).
    Raises ConfigError for a bad host or port, or a port that is taken."""
    from causalkg.web.serve import serve as _serve

    plan = _serve(resolve_config(cfg), host=host, port=port, allow_remote=allow_remote, token=token,
                  kg=None if kg is None else str(kg), judgements=None if judgements is None else str(judgements),
                  dry_run=dry_run)
    return Serving(host=plan.host, port=plan.port, read_only=plan.read_only, token=plan.token,
                   allowed_hosts=plan.allowed_hosts, detail=plan)


# --- the command line ----------------------------------------------------------------------


def register(subparsers: Any) -> None:
    """Add ``serve`` to the top-level parser."""
    p = add_command(
        subparsers, "serve", _serve_cli, "explore, verify and query the KG in a browser",
        description=(
            "Serve the KG of `make kg` (data/kg, data/store) as web pages: search, concepts, edges with\n"
            "their sentences, a graph view, causal paths, SPARQL (/sparql), human verification and the\n"
            "evaluation report. Listens on 127.0.0.1:8000; another address needs --allow-remote and is\n"
            "read-only unless a token is set (--token or $CAUSALKG_WEB_TOKEN), which judgements then need."
        ),
    )
    p.add_argument("--host", help="address to listen on (default: web.host, 127.0.0.1)")
    p.add_argument("--port", type=int, help="port (default: web.port, 8000; 0 = any free port)")
    p.add_argument("--allow-remote", action="store_true", help="allow a non-loopback --host")
    p.add_argument("--token", help="judgements need this token (default: $CAUSALKG_WEB_TOKEN)")
    p.add_argument("--kg", metavar="DIR", help="the KG folder (default: <data>/kg)")
    p.add_argument("--judgements", metavar="FILE",
                   help="where judgements are appended (default: <data>/judgements/judgements.jsonl)")
    add_dry_run(p, "check the options and print the plan; serve nothing")


def _serve_cli(args: argparse.Namespace, cfg: Config) -> None:
    # Serving says where it listens on stderr when it starts; the plan is the answer of a dry run.
    r = serve(host=args.host, port=args.port, allow_remote=args.allow_remote, token=args.token, kg=args.kg,
              judgements=args.judgements, dry_run=args.dry_run, cfg=cfg)
    if args.dry_run:
        print(r.to_table("text"))


# What ``import causalkg as ck`` gives from this module (listed again in causalkg.COMMANDS).
__all__ = ["serve", "Serving"]
