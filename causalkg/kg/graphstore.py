"""Export to a remote triple store over the SPARQL 1.1 Graph Store HTTP Protocol (GSP).

Flow: ``causalkg kg export --endpoint URL`` -> ``kg.store.export`` -> ``export_remote`` here,
with the N-Triples files ``kg assemble`` wrote. Works with any GSP service: Virtuoso
(``/sparql-graph-crud-auth``), Fuseki (``/DATASET/data``), GraphDB
(``/repositories/REPO/rdf-graphs/service``), Oxigraph server (``/store``), ...

For each named graph: the triples go up in chunks of ``kg.upload_chunk_triples`` (the first with
PUT, which replaces the graph; the rest with POST, which adds), then the graph's triple count is
checked against what was sent. Every resource is an IRI (no blank nodes), so a chunk that is
sent twice after a retry adds nothing. With a SPARQL endpoint of the same server
(``--sparql-endpoint``), the chunks go to a staging graph first and one ``MOVE`` replaces the
target graph, so readers never see a half-uploaded KG; the count then comes from a
``COUNT`` query. Without it, the graph is replaced in place and counted by reading it back.

Each request is bounded as a whole by ``kg.timeout`` (``causalkg.core.deadline``: connect to last
byte, so a store that trickles bytes cannot stretch it). Requests are retried with backoff on
429, 5xx, timeouts and dropped connections, honouring
Retry-After (``causalkg.core.retry``); a refusal (401/403/other 4xx) fails at once with the server's
words. Credentials come from the environment only: the variables named by ``kg.user_env`` /
``kg.password_env`` (HTTP Basic or Digest, whichever the server asks for) or ``kg.token_env``
(a bearer token).
"""

from __future__ import annotations

import base64
import http.client
import json
import logging
import os
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from causalkg.core.config import Config
from causalkg.core.deadline import Deadline, deadline_opener
from causalkg.core.errors import ConfigError, SourceError, StoreError
from causalkg.core.progress import progress
from causalkg.core.retry import Retry, RetryPolicy, call_with_retries, parse_retry_after
from causalkg.kg.rdf import staging_iri

log = logging.getLogger(__name__)

AUTH_MODES = ("auto", "basic", "digest", "bearer", "none")
NT_TYPE = "application/n-triples"
RETRY_STATUS = {408, 425, 429, 500, 502, 503, 504}


@dataclass
class Response:
    status: int
    headers: dict[str, str]
    body: bytes


class GraphStoreClient:
    """A small GSP client: PUT/POST/DELETE/GET of named graphs, and SPARQL count/update.

    ``endpoint``: the GSP service URL (graphs are addressed with ``?graph=IRI``, indirect
    identification); ``sparql_endpoint``: optional SPARQL query/update URL of the same server;
    ``auth``: one of AUTH_MODES; ``user``/``password``/``token``: credentials; ``policy``: retries;
    ``sleep``: how to wait between retries (injectable so tests do not wait).
    """

    def __init__(
        self,
        endpoint: str,
        *,
        sparql_endpoint: str | None = None,
        auth: str = "auto",
        user: str | None = None,
        password: str | None = None,
        token: str | None = None,
        timeout: float = 120.0,
        policy: RetryPolicy | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ):
        for name, url in (("--endpoint", endpoint), ("--sparql-endpoint", sparql_endpoint)):
            if url is None:
                continue
            parts = urllib.parse.urlsplit(url)
            if parts.scheme not in ("http", "https") or not parts.netloc:
                raise ConfigError(f"{name} must be an http(s) URL, got {url!r}")
        if auth not in AUTH_MODES:
            raise ConfigError(f"kg.auth must be one of {', '.join(AUTH_MODES)}, got {auth!r}")
        if auth == "bearer" and not token:
            raise ConfigError("kg.auth is bearer but no token is set", hint="set the variable named by kg.token_env")
        if auth in ("basic", "digest") and not (user and password is not None):
            raise ConfigError(f"kg.auth is {auth} but no user/password is set",
                              hint="set the variables named by kg.user_env and kg.password_env")
        self.endpoint = endpoint
        self.sparql_endpoint = sparql_endpoint
        self.timeout = timeout
        self.policy = policy or RetryPolicy()
        self.sleep = sleep
        self.requests = 0
        self._headers: dict[str, str] = {}
        handlers: list[Any] = []
        if auth == "bearer" or (auth == "auto" and token):
            self._headers["Authorization"] = f"Bearer {token}"
        elif auth == "basic":
            raw = f"{user}:{password}".encode("utf-8")
            self._headers["Authorization"] = "Basic " + base64.b64encode(raw).decode("ascii")
        elif auth in ("digest", "auto") and user:
            mgr = urllib.request.HTTPPasswordMgrWithDefaultRealm()
            for url in (endpoint, sparql_endpoint):
                if url:
                    mgr.add_password(None, url, user, password or "")
            handlers.append(urllib.request.HTTPDigestAuthHandler(mgr))
            if auth == "auto":
                handlers.append(urllib.request.HTTPBasicAuthHandler(mgr))
        self._opener = deadline_opener(*handlers)

    # --- HTTP ------------------------------------------------------------------------------

    def _url(self, base: str, **params: str) -> str:
        sep = "&" if urllib.parse.urlsplit(base).query else "?"
        return base + sep + urllib.parse.urlencode(params)

    def request(self, method: str, url: str, *, body: bytes | None = None, headers: dict[str, str] | None = None,
                what: str, ok: Sequence[int] = (200, 201, 204)) -> Response:
        """One HTTP request with retries. Returns the response when its status is in ``ok``;
        raises StoreError on a refusal and SourceError when retries run out."""

        def attempt() -> Response:
            # ``timeout`` bounds the request as a whole (a Deadline), not only each read.
            with Deadline(self.timeout) as deadline:
                try:
                    return attempt_once()
                except (Retry, StoreError):
                    if not deadline.expired:
                        raise
            raise Retry(f"no complete answer within {deadline.seconds:.3g}s (request deadline)", timeout=True)

        def attempt_once() -> Response:
            self.requests += 1
            req = urllib.request.Request(url, data=body, method=method, headers={**self._headers, **(headers or {})})
            try:
                with self._opener.open(req, timeout=self.timeout) as resp:
                    return Response(resp.status, dict(resp.headers.items()), resp.read())
            except urllib.error.HTTPError as exc:
                data = exc.read() if exc.fp is not None else b""
                status = exc.code
                if status in ok:
                    return Response(status, dict(exc.headers.items()), data)
                if status in RETRY_STATUS:
                    raise Retry(f"HTTP {status}", parse_retry_after(exc.headers.get("Retry-After"))) from None
                text = _excerpt(data)
                if status in (401, 403):
                    raise StoreError(
                        f"{what}: the server refused access (HTTP {status}){': ' + text if text else ''}",
                        hint="set the credentials in the environment variables named by kg.user_env and "
                             "kg.password_env (or kg.token_env), and check the account may write graphs",
                    ) from None
                raise StoreError(f"{what}: HTTP {status}{': ' + text if text else ''}") from None
            except ValueError as exc:  # urllib's auth handlers: a scheme they do not speak
                raise StoreError(f"{what}: {exc}", hint="set kg.auth to the scheme the server uses") from None
            except (urllib.error.URLError, http.client.HTTPException, ConnectionError, socket.timeout,
                    TimeoutError) as exc:
                reason = getattr(exc, "reason", exc)
                timed_out = isinstance(exc, (socket.timeout, TimeoutError)) or isinstance(reason, (socket.timeout, TimeoutError))
                raise Retry(f"{type(exc).__name__}: {reason}", timeout=timed_out) from None

        return call_with_retries(attempt, self.policy, what=what, sleep=self.sleep)

    # --- GSP -------------------------------------------------------------------------------

    def put(self, graph: str, data: bytes) -> None:
        """Replace ``graph`` by the N-Triples ``data``."""
        self.request("PUT", self._url(self.endpoint, graph=graph), body=data,
                     headers={"Content-Type": NT_TYPE}, what=f"PUT <{graph}> at {self.endpoint}")

    def post(self, graph: str, data: bytes) -> None:
        """Add the N-Triples ``data`` to ``graph``."""
        self.request("POST", self._url(self.endpoint, graph=graph), body=data,
                     headers={"Content-Type": NT_TYPE}, what=f"POST to <{graph}> at {self.endpoint}")

    def delete(self, graph: str) -> None:
        """Remove ``graph`` (a graph that does not exist is fine)."""
        self.request("DELETE", self._url(self.endpoint, graph=graph), what=f"DELETE <{graph}> at {self.endpoint}",
                     ok=(200, 202, 204, 404))

    def get(self, graph: str) -> bytes:
        """The N-Triples of ``graph`` (empty when it does not exist)."""
        resp = self.request("GET", self._url(self.endpoint, graph=graph), headers={"Accept": NT_TYPE},
                            what=f"GET <{graph}> from {self.endpoint}", ok=(200, 404))
        return b"" if resp.status == 404 else resp.body

    # --- SPARQL ----------------------------------------------------------------------------

    def select(self, sparql: str) -> list[dict[str, Any]]:
        """Run a SELECT on the SPARQL endpoint; bindings as in the SPARQL JSON results format."""
        if not self.sparql_endpoint:
            raise ConfigError("no SPARQL endpoint configured", hint="pass --sparql-endpoint URL")
        body = urllib.parse.urlencode({"query": sparql}).encode("ascii")
        resp = self.request("POST", self.sparql_endpoint, body=body,
                            headers={"Content-Type": "application/x-www-form-urlencoded",
                                     "Accept": "application/sparql-results+json"},
                            what=f"query at {self.sparql_endpoint}")
        try:
            return json.loads(resp.body.decode("utf-8"))["results"]["bindings"]
        except (ValueError, KeyError, UnicodeDecodeError) as exc:
            raise StoreError(f"query at {self.sparql_endpoint}: not a SPARQL JSON result ({exc}): "
                             f"{_excerpt(resp.body)}") from None

    def update(self, sparql: str) -> None:
        """Run a SPARQL update on the SPARQL endpoint."""
        if not self.sparql_endpoint:
            raise ConfigError("no SPARQL endpoint configured", hint="pass --sparql-endpoint URL")
        body = urllib.parse.urlencode({"update": sparql}).encode("ascii")
        self.request("POST", self.sparql_endpoint, body=body,
                     headers={"Content-Type": "application/x-www-form-urlencoded"},
                     what=f"update at {self.sparql_endpoint}")

    def count(self, graph: str) -> int:
        """Triples in ``graph``: a COUNT query when there is a SPARQL endpoint, else the graph is
        read back and parsed with Oxigraph."""
        import pyoxigraph

        g = pyoxigraph.NamedNode(graph)
        if self.sparql_endpoint:
            rows = self.select(f"SELECT (COUNT(*) AS ?n) WHERE {{ GRAPH {g} {{ ?s ?p ?o }} }}")
            try:
                return int(rows[0]["n"]["value"])
            except (IndexError, KeyError, ValueError) as exc:
                raise StoreError(f"count of <{graph}>: unexpected answer {rows!r} ({exc})") from None
        data = self.get(graph)
        try:
            return sum(1 for _ in pyoxigraph.parse(data, format=pyoxigraph.RdfFormat.N_TRIPLES))
        except SyntaxError as exc:
            raise StoreError(f"GET <{graph}> from {self.endpoint}: the answer is not N-Triples: {exc}") from None


def _excerpt(data: bytes, limit: int = 300) -> str:
    import re

    text = data.decode("utf-8", "replace")
    if re.search(r"<(html|body|h1|title)\b", text, flags=re.I):
        text = re.sub(r"<[^>]+>", " ", text)  # servers often answer errors in HTML
    text = " ".join(text.split())
    return text[:limit]


def _chunks(files: Sequence[Path], size: int) -> Iterator[bytes]:
    """N-Triples lines of ``files`` grouped ``size`` at a time (one triple per line)."""
    buf: list[bytes] = []
    for path in files:
        with open(path, "rb") as fh:
            for line in fh:
                if not line.strip():
                    continue
                buf.append(line if line.endswith(b"\n") else line + b"\n")
                if len(buf) >= size:
                    yield b"".join(buf)
                    buf = []
    if buf:
        yield b"".join(buf)


def client_from_config(cfg: Config, endpoint: str, *, sparql_endpoint: str | None = None,
                       sleep: Callable[[float], None] = time.sleep) -> GraphStoreClient:
    """A client with the ``[kg]`` settings; credentials read from the environment variables the
    config names."""
    kg = cfg["kg"]
    return GraphStoreClient(
        endpoint,
        sparql_endpoint=sparql_endpoint if sparql_endpoint is not None else (kg["sparql_endpoint"] or None),
        auth=kg["auth"],
        user=os.environ.get(kg["user_env"]) or None,
        password=os.environ.get(kg["password_env"]),
        token=os.environ.get(kg["token_env"]) or None,
        timeout=float(kg["timeout"]),
        policy=RetryPolicy(max_retries=int(kg["max_retries"]), base=float(kg["backoff_base"]),
                           cap=float(kg["backoff_cap"])),
        sleep=sleep,
    )


def upload_graph(client: GraphStoreClient, graph: str, files: Sequence[Path], expected: int, *,
                 chunk_triples: int, on_chunk: Callable[[int], None] | None = None) -> int:
    """Replace ``graph`` on the server by the triples of ``files`` and check the count.

    With a SPARQL endpoint the upload goes to ``<graph>#staging`` and a single MOVE replaces the
    graph; without one, the first chunk is PUT into the graph and the rest POSTed.
    ``on_chunk(triples)`` is called after each chunk is accepted (a progress bar). Returns the
    count found; raises StoreError when it differs from ``expected``."""
    import pyoxigraph

    if chunk_triples < 1:
        raise ConfigError(f"kg.upload_chunk_triples must be at least 1, got {chunk_triples}")
    staged = client.sparql_endpoint is not None
    dest = staging_iri(graph) if staged else graph
    first = True
    for data in _chunks(files, chunk_triples):
        (client.put if first else client.post)(dest, data)
        first = False
        if on_chunk is not None:
            on_chunk(data.count(b"\n"))  # one triple per N-Triples line
    if first:  # nothing to send: the graph must end up empty
        client.delete(dest)
    if staged:
        found = client.count(dest)
        if found != expected:
            raise StoreError(f"staging graph <{dest}> holds {found} triples after the upload, expected {expected}; "
                             f"the graph <{graph}> was left as it was")
        target, staging = pyoxigraph.NamedNode(graph), pyoxigraph.NamedNode(dest)
        if expected:
            client.update(f"MOVE SILENT GRAPH {staging} TO GRAPH {target}")
        else:
            client.update(f"DROP SILENT GRAPH {target}")
    found = client.count(graph)
    if found != expected:
        raise StoreError(f"graph <{graph}> at {client.endpoint} holds {found} triples after the upload, "
                         f"expected {expected}", hint="run the export again; it replaces the graph")
    return found


def export_remote(
    cfg: Config,
    graphs: Sequence[Any],
    *,
    endpoint: str,
    sparql_endpoint: str | None = None,
    chunk_triples: int | None = None,
    sleep: Callable[[float], None] | None = None,
) -> dict[str, int]:
    """Upload each ``GraphFiles`` of ``graphs`` (see ``kg.store.plan_export``) to the GSP
    ``endpoint``. Returns ``{graph IRI: triples}``. Raises SourceError when the server cannot
    be reached after the retries, StoreError when it refuses or the count is wrong."""
    client = client_from_config(cfg, endpoint, sparql_endpoint=sparql_endpoint, sleep=sleep or time.sleep)
    size = int(chunk_triples if chunk_triples is not None else cfg["kg"]["upload_chunk_triples"])
    counts: dict[str, int] = {}
    for g in graphs:
        bar = progress(desc=f"uploading <{g.graph}>", unit="triple", total=g.triples, mode=cfg["run"]["progress"])
        try:
            counts[g.graph] = upload_graph(client, g.graph, g.files, g.triples, chunk_triples=size, on_chunk=bar.update)
        finally:
            bar.close()
        log.debug("<%s>: %d triples at %s", g.graph, counts[g.graph], endpoint)  # the CLI prints the counts
    return counts


__all__ = ["GraphStoreClient", "export_remote", "upload_graph", "client_from_config", "SourceError"]
