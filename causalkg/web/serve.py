"""``serve``: run the web application with uvicorn (the ``causalkg serve`` command).

Safe by default: it listens on 127.0.0.1 and answers only requests whose Host is a loopback
name (so a web page elsewhere cannot reach it through DNS rebinding). Another address must be
asked for (``allow_remote``); the server is then read-only (pages and SPARQL, no judgements)
unless a token is set, which judgements must then carry. A token, when set, is needed on
loopback too.

It says at start where it listens and that Ctrl-C stops it, then logs one line per request
(method, path, status, milliseconds) at INFO, which ``--quiet`` silences.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import socket
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from causalkg.core.config import Config
from causalkg.core.errors import ConfigError
from causalkg.core.interrupts import Interrupted

log = logging.getLogger(__name__)

LOOPBACK_NAMES = ["127.0.0.1", "localhost", "::1", "[::1]"]


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@dataclass
class ServePlan:
    """What ``serve`` will do: where, and whether judgements are accepted."""

    host: str
    port: int
    read_only: bool
    token: bool
    allowed_hosts: list[str] | None
    app: Any = field(default=None, repr=False, compare=False)  # the ASGI application ``serve`` built

    def describe(self) -> str:
        mode = ("read-only: no token is set, so judgements are refused" if self.read_only
                else "judgements need the token" if self.token else "judgements accepted")
        shown = f"[{self.host}]" if ":" in self.host else self.host
        return f"serving the KG on http://{shown}:{self.port}/ ({mode})"


def plan_serve(cfg: Config, *, host: str | None = None, port: int | None = None, allow_remote: bool = False,
               token: str | None = None) -> tuple[ServePlan, str | None]:
    """Check the options; returns the plan and the token (from ``token`` or the environment
    variable ``web.token_env``). Raises ConfigError for a non-loopback host without
    ``allow_remote`` or a bad port."""
    web = cfg["web"]
    host = host or web["host"]
    port = int(port if port is not None else web["port"])
    if not 0 <= port <= 65535:
        raise ConfigError(f"--port must be 0..65535, got {port}")
    if token is None and web["token_env"]:
        token = os.environ.get(web["token_env"]) or None
    loopback = is_loopback(host)
    if not loopback and not allow_remote:
        raise ConfigError(f"{host} is not a loopback address: other machines could reach the server",
                          hint="pass --allow-remote to serve it to them (read-only unless a token is set)")
    # The Host names answered: the loopback names and the --host given (127.0.0.2 is loopback too).
    named = [host, f"[{host}]"] if ":" in host and not host.startswith("[") else [host]
    allowed = LOOPBACK_NAMES + [h for h in named if h not in LOOPBACK_NAMES]
    plan = ServePlan(host, port, read_only=not loopback and not token, token=bool(token),
                     allowed_hosts=allowed if loopback else None)
    return plan, token


def logged_requests(app: Any) -> Any:
    """``app`` (ASGI) logging ``METHOD PATH STATUS N ms`` for each HTTP request it answers (the
    query string is left out: it may hold a long SPARQL query or a token)."""

    async def wrapped(scope: dict, receive: Any, send: Any) -> None:
        if scope.get("type") != "http":
            await app(scope, receive, send)
            return
        t0 = time.perf_counter()
        status = {"code": 500}  # what the server answers when the app fails before a response

        async def watch(message: dict) -> None:
            if message.get("type") == "http.response.start":
                status["code"] = int(message["status"])
            await send(message)

        try:
            await app(scope, receive, watch)
        finally:
            log.info("%s %s %d %.0f ms", scope.get("method", "?"), scope.get("path", "?"), status["code"],
                     1000 * (time.perf_counter() - t0))

    return wrapped


def serve(cfg: Config, *, host: str | None = None, port: int | None = None, allow_remote: bool = False,
          token: str | None = None, kg: str | None = None, judgements: str | None = None,
          dry_run: bool = False) -> ServePlan:
    """Serve the KG of ``cfg`` in a browser until interrupted (see the module docstring).
    ``dry_run``: check the options and the KG, return the plan (with the application built,
    ``plan.app``), serve nothing."""
    plan, token = plan_serve(cfg, host=host, port=port, allow_remote=allow_remote, token=token)
    from causalkg.web.app import create_app

    app = plan.app = create_app(cfg, kg=kg, judgements=judgements, read_only=plan.read_only, token=token,
                                allowed_hosts=plan.allowed_hosts)
    if dry_run:
        return plan
    import uvicorn

    # Bind the socket ourselves so that port 0 works and the real port can be printed.
    family = socket.AF_INET6 if ":" in plan.host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((plan.host.strip("[]"), plan.port))
    except OSError as exc:
        sock.close()
        raise ConfigError(f"cannot listen on {plan.host}:{plan.port}: {exc.strerror}",
                          hint="pick another --port") from None
    sock.listen(128)  # connections made from now on wait until uvicorn serves them
    plan.port = sock.getsockname()[1]
    # where it listens is the command's answer, shown with --quiet too (which silences the requests)
    print(f"{plan.describe()}; press Ctrl-C to stop", file=sys.stderr, flush=True)
    config = uvicorn.Config(logged_requests(app), log_level="warning", access_log=False, proxy_headers=False,
                            server_header=False, lifespan="off")
    try:
        uvicorn.Server(config).run(sockets=[sock])
    except KeyboardInterrupt as exc:  # uvicorn stops gracefully, then raises the signal it caught again
        raise Interrupted.of(exc, f"the server on port {plan.port} stopped") from None
    return plan
