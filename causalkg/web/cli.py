"""``causalkg serve``: a thin wrapper over ``causalkg.web.serve.serve``."""

from __future__ import annotations

import argparse
from typing import Any

from causalkg.cli import add_command
from causalkg.core.config import Config
from causalkg.options import add_dry_run


def register(subparsers: Any) -> None:
    p = add_command(
        subparsers, "serve", _serve, "explore, verify and query the KG in a browser",
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


def _serve(args: argparse.Namespace, cfg: Config) -> int:
    from causalkg.web.serve import serve

    plan = serve(cfg, host=args.host, port=args.port, allow_remote=args.allow_remote, token=args.token,
                 kg=args.kg, judgements=args.judgements, dry_run=args.dry_run)
    if args.dry_run:
        print(plan.describe())
    return 0
