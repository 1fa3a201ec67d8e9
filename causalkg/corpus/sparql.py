"""The SPARQL client for the Wikidata Query Service (or any SPARQL 1.1 endpoint), and paging.

``SPARQLClient`` sends one query at a time (the request built by SPARQLWrapper, sent through a
deadline-aware urllib opener) with a descriptive User-Agent, a client timeout that bounds each
request as a whole, connect to last byte (``causalkg.core.deadline``: a server trickling bytes cannot
stretch it), the server-side ``timeout`` parameter the query service understands, and answers in
the SPARQL 1.1 JSON results format. Failures are classified:

- HTTP 429: wait for ``Retry-After``, then retry; a ``Retry-After`` longer than the longest
  wait allowed (``backoff_cap``) stops the run with an error instead of asking early;
- HTTP 5xx, timeouts, refused or reset connections, bodies cut short, results that are not a
  SPARQL JSON results document: retry with exponential backoff and jitter (``causalkg.core.retry``);
- other HTTP errors (400 bad query, 404 no endpoint, ...): fail at once.

After ``max_retries`` retries it raises ``SourceError`` naming the query and the endpoint.
Every successful answer is stored in a ``DiskCache`` keyed by (endpoint, query text), so a
rerun costs no requests; ``refresh=True`` skips the lookups (answers are still stored).

``corpus.snapshot.SnapshotEngine`` has the same ``select(query) -> results document`` method
over the bundled snapshot, so ``select_all`` (paging with LIMIT/OFFSET, rows deduplicated) and
everything above it work on either.

Flow: ``corpus.build`` opens a client (or the snapshot engine); ``corpus.wikidata`` and
``corpus.basekg`` run the queries of ``corpus.queries`` through it.
"""

from __future__ import annotations

import ast
import http.client
import json
import logging
import socket
import threading
import time
import urllib.error
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Protocol

from SPARQLWrapper import GET, JSON, POST, SPARQLWrapper
from SPARQLWrapper.SPARQLExceptions import (
    EndPointInternalError,
    EndPointNotFound,
    QueryBadFormed,
    SPARQLWrapperException,
    Unauthorized,
    URITooLong,
)

from causalkg.core.cache import DiskCache
from causalkg.core.deadline import Deadline, deadline_opener
from causalkg.core.errors import SourceError
from causalkg.core.retry import Retry, RetryPolicy, call_with_retries, parse_retry_after
from causalkg.corpus.queries import Query

log = logging.getLogger(__name__)

# GET keeps answers cacheable by the query service; long queries (VALUES batches) go by POST
# so no URL grows past what proxies accept.
GET_MAX_URL = 2000


class Engine(Protocol):
    """What the Wikidata builders need: ``select`` returning a SPARQL JSON results document."""

    endpoint: str

    def select(self, query: Query) -> dict[str, Any]: ...


@dataclass
class QueryStats:
    """What a client did: queries asked, HTTP requests sent, cache hits, retries, waits."""

    queries: int = 0
    requests: int = 0
    cache_hits: int = 0
    retries: int = 0
    waited_s: float = 0.0
    by_name: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "queries": self.queries,
            "requests": self.requests,
            "cache_hits": self.cache_hits,
            "retries": self.retries,
            "waited_s": round(self.waited_s, 3),
        }


def check_results(doc: Any) -> str | None:
    """None if ``doc`` is a SPARQL 1.1 JSON SELECT results document, else what is wrong."""
    if not isinstance(doc, dict):
        return "not a JSON object"
    head = doc.get("head")
    if not isinstance(head, dict) or not isinstance(head.get("vars", []), list):
        return "no 'head.vars' list"
    results = doc.get("results")
    if not isinstance(results, dict) or not isinstance(results.get("bindings"), list):
        return "no 'results.bindings' list"
    for row in results["bindings"]:
        if not isinstance(row, dict):
            return "a binding is not an object"
        for var, term in row.items():
            if not isinstance(term, dict) or "type" not in term or not isinstance(term.get("value"), str):
                return f"binding of ?{var} has no 'type'/'value'"
    return None


def _wrapper_response(exc: Exception) -> str:
    """The server's answer carried in a SPARQLWrapper exception (which keeps it only as the
    repr of the bytes at the end of its message)."""
    text = str(exc)
    if "Response:\n" not in text:
        return ""
    tail = text.split("Response:\n", 1)[1]
    try:
        value = ast.literal_eval(tail)
    except (ValueError, SyntaxError):
        return tail
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _first_line(value: Any, limit: int = 200) -> str:
    text = value.decode("utf-8", "replace") if isinstance(value, (bytes, bytearray)) else str(value)
    for line in text.splitlines():
        line = line.strip()
        if line:
            return line[:limit]
    return ""


class SPARQLClient:
    """A polite client of one SPARQL endpoint. ``select(query)`` returns the results document.

    ``sleep`` is what waits between retries (tests pass a recorder so they never wait).
    ``method``: ``auto`` (GET unless the URL would be long, then POST), ``GET`` or ``POST``.
    ``server_timeout_param``: the URL parameter that tells the server its time limit in
    seconds (``timeout`` on the Wikidata Query Service); empty to send none.
    """

    def __init__(
        self,
        endpoint: str,
        *,
        user_agent: str,
        timeout: float = 60.0,
        policy: RetryPolicy | None = None,
        cache: DiskCache | None = None,
        refresh: bool = False,
        method: str = "auto",
        server_timeout_param: str = "timeout",
        sleep: Callable[[float], None] = time.sleep,
    ):
        if not endpoint.startswith(("http://", "https://")):
            raise SourceError(f"SPARQL endpoint {endpoint!r} is not an http(s) URL", hint="set wikidata.endpoint")
        if not user_agent.strip():
            raise SourceError("an empty User-Agent is blocked by the Wikidata Query Service", hint="set wikidata.user_agent")
        self.endpoint = endpoint
        self.user_agent = user_agent
        self.timeout = float(timeout)
        self.policy = policy or RetryPolicy()
        self.cache = cache
        self.refresh = refresh
        self.method = method.upper()
        if self.method not in ("AUTO", "GET", "POST"):
            raise SourceError(f"wikidata.method must be auto, GET or POST, got {method!r}")
        self.server_timeout_param = server_timeout_param
        self.sleep = sleep
        self.stats = QueryStats()
        self._lock = threading.Lock()  # one query at a time, as the query service asks
        self._opener = deadline_opener()

    # -- public -------------------------------------------------------------------------------

    def select(self, query: Query) -> dict[str, Any]:
        """Run a SELECT query; return its SPARQL JSON results document (from the cache when
        there). Raises SourceError when the endpoint fails past the retries."""
        with self._lock:
            self.stats.queries += 1
            self.stats.by_name[query.name] = self.stats.by_name.get(query.name, 0) + 1
            if self.cache is not None and not self.refresh:
                cached = self.cache.get(self.endpoint, query.text)
                if cached is not None:
                    self.stats.cache_hits += 1
                    return cached
            doc = call_with_retries(
                lambda: self._attempt(query, self.timeout),
                self.policy,
                what=f"query '{query.name}' at {self.endpoint}",
                sleep=self._wait,
                on_retry=self._note_retry,
            )
            if self.cache is not None:
                self.cache.put(doc, self.endpoint, query.text)
            return doc

    def probe(self, query: Query, timeout: float) -> str | None:
        """Try ``query`` once (no cache, no retries, ``timeout`` seconds). None when the
        endpoint answered with a results document, else the reason it did not."""
        with self._lock:
            try:
                self._attempt(query, timeout)
            except Retry as exc:
                return exc.reason
            except SourceError as exc:
                return exc.message
        return None

    # -- internals ----------------------------------------------------------------------------

    def _wait(self, seconds: float) -> None:
        self.stats.waited_s += seconds
        self.sleep(seconds)

    def _note_retry(self, n: int, exc: Retry, wait: float) -> None:
        self.stats.retries += 1

    def _wrapper(self, query: Query, timeout: float) -> SPARQLWrapper:
        w = SPARQLWrapper(self.endpoint, agent=self.user_agent)
        w.setQuery(query.text)
        w.setReturnFormat(JSON)
        if self.server_timeout_param:
            w.addParameter(self.server_timeout_param, str(max(1, int(round(timeout)))))
        method = self.method
        if method == "AUTO":
            # The encoded query roughly triples in length (percent-escapes); decide on that.
            method = "GET" if len(self.endpoint) + 3 * len(query.text) < GET_MAX_URL else "POST"
        w.setMethod(GET if method == "GET" else POST)
        # SPARQLWrapper.setTimeout truncates to whole seconds; urllib takes a float.
        w.timeout = timeout
        return w

    def _attempt(self, query: Query, timeout: float) -> dict[str, Any]:
        """One request, bounded as a whole by ``timeout`` seconds (connect, headers and body:
        a server trickling bytes cannot stretch it); past it, a ``Retry(timeout=True)``."""
        with Deadline(timeout) as deadline:
            try:
                doc = self._attempt_once(query, timeout)
            except (Retry, SourceError):
                if not deadline.expired:
                    raise
                doc = None
        if doc is None:
            raise Retry(f"no complete answer within {deadline.seconds:.3g}s (request deadline)", timeout=True)
        return doc

    def _open(self, wrapper: SPARQLWrapper, timeout: float) -> bytes:
        """SPARQLWrapper's request, sent through our deadline-aware opener; HTTP errors mapped
        to SPARQLWrapper's exceptions as its own ``query()`` does."""
        request = wrapper._createRequest()
        try:
            response = self._opener.open(request, timeout=timeout)
        except urllib.error.HTTPError as e:
            mapped = {400: QueryBadFormed, 404: EndPointNotFound, 401: Unauthorized, 414: URITooLong,
                      500: EndPointInternalError}.get(e.code)
            if mapped is not None:
                raise mapped(e.read()) from None
            raise
        try:
            return response.read()
        finally:
            response.close()

    def _attempt_once(self, query: Query, timeout: float) -> dict[str, Any]:
        where = f"query '{query.name}' at {self.endpoint}"
        wrapper = self._wrapper(query, timeout)
        self.stats.requests += 1
        try:
            raw = self._open(wrapper, timeout)
        except urllib.error.HTTPError as exc:  # codes SPARQLWrapper does not map (429, 502, 503, ...)
            after = parse_retry_after(exc.headers.get("Retry-After") if exc.headers else None)
            if exc.code == 429:
                if after is not None and after > self.policy.cap:
                    # Asking again before the server allows it is what gets a client banned:
                    # stop instead (the answers so far are cached; a rerun goes on from there).
                    raise SourceError(
                        f"{where}: HTTP 429 Too Many Requests; the server asks to wait {after:g}s (Retry-After), "
                        f"longer than wikidata.backoff_cap ({self.policy.cap:g}s)",
                        hint="rerun later (answered queries are cached), or raise wikidata.backoff_cap") from None
                raise Retry("HTTP 429 Too Many Requests", after=after) from None
            if 500 <= exc.code < 600:
                raise Retry(f"HTTP {exc.code} {exc.reason}", after=after) from None
            if exc.code == 403:
                raise SourceError(
                    f"{where}: HTTP 403 Forbidden: {_first_line(exc.read())}",
                    hint="the Wikidata Query Service refuses generic User-Agents and clients that ignored "
                         "429s: set wikidata.user_agent to name the tool and a contact") from None
            raise SourceError(f"{where}: HTTP {exc.code} {exc.reason}: {_first_line(exc.read())}") from None
        except EndPointInternalError as exc:  # HTTP 500
            raise Retry(f"HTTP 500 server error: {_first_line(_wrapper_response(exc))}") from None
        except QueryBadFormed as exc:
            raise SourceError(
                f"{where} was rejected as malformed (HTTP 400): {_first_line(_wrapper_response(exc))}"
            ) from None
        except EndPointNotFound:
            raise SourceError(f"{where}: HTTP 404, no SPARQL endpoint there", hint="check wikidata.endpoint") from None
        except Unauthorized:
            raise SourceError(f"{where}: HTTP 401 unauthorized") from None
        except URITooLong:
            raise SourceError(f"{where}: HTTP 414 URI too long", hint="set wikidata.method = \"POST\"") from None
        except SPARQLWrapperException as exc:
            raise SourceError(f"{where}: {_first_line(exc)}") from None
        except (TimeoutError, socket.timeout):
            raise Retry(f"no answer within {timeout:g}s (client timeout)", timeout=True) from None
        except urllib.error.URLError as exc:
            if isinstance(exc.reason, (TimeoutError, socket.timeout)):
                raise Retry(f"no answer within {timeout:g}s (client timeout)", timeout=True) from None
            raise Retry(f"cannot connect: {exc.reason}") from None
        except http.client.IncompleteRead as exc:
            raise Retry(f"response cut short ({len(exc.partial)} bytes received)") from None
        except (http.client.HTTPException, ConnectionError, OSError) as exc:
            raise Retry(f"connection failed: {exc.__class__.__name__}: {exc}") from None
        try:
            doc = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise Retry(f"malformed results document: not JSON ({exc.__class__.__name__}: {_first_line(exc)})") from None
        problem = check_results(doc)
        if problem:
            raise Retry(f"malformed results document: {problem}")
        return doc


# --- paging ----------------------------------------------------------------------------------


def select_all(engine: Engine, build: Callable[[int, int], Query], page_size: int) -> list[dict[str, Any]]:
    """All rows of a paged query: ``build(limit, offset)`` makes each page's query (which must
    have a total ORDER BY). Stops at the first page shorter than ``page_size``. Rows are
    deduplicated, so a page boundary can neither lose nor repeat a row of a stable result."""
    rows: list[dict[str, Any]] = []
    seen: set[str] = set()
    offset = 0
    page_size = max(1, int(page_size))
    while True:
        doc = engine.select(build(page_size, offset))
        bindings = doc["results"]["bindings"]
        for row in bindings:
            key = json.dumps(row, sort_keys=True)
            if key not in seen:
                seen.add(key)
                rows.append(row)
        if len(bindings) < page_size:
            return rows
        offset += page_size


def iter_values(row: dict[str, Any], *names: str) -> Iterator[str | None]:
    """The string values of ``names`` in a results row (None where unbound)."""
    for name in names:
        term = row.get(name)
        yield term.get("value") if isinstance(term, dict) else None


def term_lang(row: dict[str, Any], name: str) -> str | None:
    term = row.get(name)
    return term.get("xml:lang") if isinstance(term, dict) else None
