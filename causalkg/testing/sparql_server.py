"""A real SPARQL 1.1 protocol endpoint on 127.0.0.1, answering from an Oxigraph store.

For tests and benchmarks of the live Wikidata code path: it takes queries by GET
(``?query=``), by POST form (``application/x-www-form-urlencoded``) and by POST body
(``application/sparql-query``), answers SELECT and ASK in ``application/sparql-results+json``
(CONSTRUCT/DESCRIBE in N-Triples), 400 for a query that does not parse, 404 off its path. It
keeps every request (method, path, parameters, headers, query text) in ``requests``.

Faults are injected in order, one per request, as with ``OpenAIServer`` (``Fault`` is the same
class, with ``body`` added): 429 with Retry-After, 5xx, a slow answer past the client's timeout,
a body cut short (full Content-Length announced, half sent), a body trickled one byte at a
time (``trickle``), a body that is not JSON, or any
exact body (e.g. a JSON document that is not a results document). ``schedule(n, fault)`` aims
a fault at the n-th request; ``always`` answers every request with one fault (an endpoint that
is down for good).

    with SPARQLServer.from_ntriples_gz("snapshots/wikidata/wikidata-snapshot.nt.gz") as server:
        client = SPARQLClient(server.endpoint, user_agent="test/1.0 (me@example.org)")
        server.add_fault(Fault(status=429, retry_after=2), Fault(status=503))
        client.select(query)
        assert server.requests[0]["headers"]["user-agent"].startswith("test/1.0")
"""

from __future__ import annotations

import gzip
import threading
import time
import urllib.parse
from collections import deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pyoxigraph as ox

from causalkg.testing.loopback import LoopbackServer, send_trickle
from causalkg.testing.openai_server import Fault as _BaseFault


@dataclass
class Fault(_BaseFault):
    """``OpenAIServer``'s Fault plus ``body``: answer 200 with exactly these bytes."""

    body: bytes | None = None


RESULTS_JSON = "application/sparql-results+json"


@dataclass
class Refusal:
    """An answer instead of the results: status, body and headers."""

    status: int
    body: bytes
    headers: dict[str, str] | None = None


class SPARQLServer(LoopbackServer):
    """Start with ``with SPARQLServer(store) as s:``; ``s.endpoint`` is the query URL."""

    def __init__(self, store: ox.Store | None = None, *, path: str = "/sparql"):
        super().__init__()
        self.store = store if store is not None else ox.Store()
        self.path = path
        self.requests: list[dict[str, Any]] = []
        self.faults: deque[Fault] = deque()
        self.always: Fault | None = None
        self.scheduled: dict[int, Fault] = {}  # request number (1-based) -> fault
        self.answered = 0  # queries answered with a full, normal response
        self._lock = threading.Lock()

    @classmethod
    def from_ntriples_gz(cls, path: str | Path, **kwargs: Any) -> "SPARQLServer":
        """A server over the triples of an N-Triples file (gzip when it ends in .gz)."""
        store = ox.Store()
        opener = gzip.open if str(path).endswith(".gz") else open
        with opener(path, "rb") as fh:
            store.bulk_load(input=fh, format=ox.RdfFormat.N_TRIPLES)
        return cls(store, **kwargs)

    # -- hooks for subclasses that model a real service (``wdqs_server.WDQSServer``) ------------

    def before_query(self, query: str) -> "Refusal | None":
        """Called before a query runs: a Refusal answers the request instead (e.g. 429)."""
        return None

    def after_query(self, query: str, seconds: float) -> "Refusal | None":
        """Called once a query ran and its answer is serialised (``seconds`` for both, which is
        when Oxigraph evaluates): a Refusal replaces the answer."""
        return None

    # -- control -----------------------------------------------------------------------------

    def add_fault(self, *faults: Fault) -> None:
        with self._lock:
            self.faults.extend(faults)

    def schedule(self, request_number: int, fault: Fault) -> None:
        """Answer the ``request_number``-th request (1-based, counting every request so far)
        with ``fault``: to hit a run in the middle, on a later page or batch."""
        with self._lock:
            self.scheduled[int(request_number)] = fault

    @property
    def endpoint(self) -> str:
        return f"{self.address}{self.path}"

    @property
    def queries(self) -> list[str]:
        """The query texts received, in order (one per request, faults included)."""
        return [r["query"] for r in self.requests if r.get("query") is not None]

    def user_agents(self) -> set[str]:
        return {r["headers"].get("user-agent", "") for r in self.requests}

    def start(self) -> "SPARQLServer":
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def _send(self, status: int, payload: bytes, content_type: str = "text/plain; charset=utf-8",
                      headers: dict[str, str] | None = None, length: int | None = None) -> None:
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", content_type)
                    self.send_header("Content-Length", str(len(payload) if length is None else length))
                    for k, v in (headers or {}).items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(payload)
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    # The client gave up (a slow-answer fault): nothing to tell it.
                    self.close_connection = True

            def _params(self) -> tuple[dict[str, list[str]], str | None]:
                url = urllib.parse.urlsplit(self.path)
                params = urllib.parse.parse_qs(url.query, keep_blank_values=True)
                query = params.get("query", [None])[0]
                if self.command == "POST":
                    length = int(self.headers.get("Content-Length") or 0)
                    raw = self.rfile.read(length)
                    ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
                    if ctype == "application/sparql-query":
                        query = raw.decode("utf-8")
                    else:
                        form = urllib.parse.parse_qs(raw.decode("utf-8"), keep_blank_values=True)
                        for k, v in form.items():
                            params.setdefault(k, []).extend(v)
                        query = form.get("query", [query])[0]
                return params, query

            def _handle(self) -> None:
                url = urllib.parse.urlsplit(self.path)
                params, query = self._params()
                if url.path != server.path:
                    self._send(404, b"no SPARQL endpoint here\n")
                    return
                with server._lock:
                    server.requests.append({
                        "method": self.command,
                        "path": url.path,
                        "params": {k: v for k, v in params.items() if k != "query"},
                        "headers": {k.lower(): v for k, v in self.headers.items()},
                        "query": query,
                    })
                    fault = server.scheduled.pop(len(server.requests), None)
                    if fault is None:
                        fault = server.faults.popleft() if server.faults else server.always
                if fault is not None and fault.delay:
                    time.sleep(fault.delay)
                if fault is not None and fault.status is not None:
                    headers = {"Retry-After": str(fault.retry_after)} if fault.retry_after is not None else {}
                    self._send(fault.status, f"{fault.message}\n".encode(), headers=headers)
                    return
                if fault is not None and fault.malformed:
                    self._send(200, b"<html><body>upstream error</body></html>", RESULTS_JSON)
                    return
                if fault is not None and fault.body is not None:
                    self._send(200, fault.body, RESULTS_JSON)
                    return
                if not query:
                    self._send(400, b"missing 'query' parameter\n")
                    return
                refused = server.before_query(query)
                if refused is not None:
                    self._send(refused.status, refused.body, headers=refused.headers)
                    return
                started = time.perf_counter()
                try:
                    result = server.store.query(query)
                except SyntaxError as exc:
                    self._send(400, f"query does not parse: {exc}\n".encode())
                    return
                if isinstance(result, (ox.QuerySolutions, ox.QueryBoolean)):
                    data = result.serialize(format=ox.QueryResultsFormat.JSON)
                    ctype = RESULTS_JSON
                else:
                    data = result.serialize(format=ox.RdfFormat.N_TRIPLES)
                    ctype = "application/n-triples"
                refused = server.after_query(query, time.perf_counter() - started)
                if refused is not None:
                    self._send(refused.status, refused.body, headers=refused.headers)
                    return
                if fault is not None and fault.trickle:
                    send_trickle(self, data, interval=fault.trickle, content_type=ctype)
                    return
                if fault is not None and fault.truncate:
                    self._send(200, data[: len(data) // 2], ctype, length=len(data))
                    self.close_connection = True
                    return
                with server._lock:  # counted before sending, so a client that has the answer sees it
                    server.answered += 1
                self._send(200, data, ctype)

            def do_GET(self) -> None:  # noqa: N802
                self._handle()

            def do_POST(self) -> None:  # noqa: N802
                self._handle()

        self._serve(Handler, "sparql-server")
        return self


__all__ = ["SPARQLServer", "Fault", "Refusal", "RESULTS_JSON"]
