"""Read-only SPARQL over the embedded Oxigraph store, for the ``/sparql`` endpoint and the query page.

Each query runs in a child process (``python -m causalkg.web.sparql``) that opens the store
read-only, runs the query and sends back at most ``cap`` results as JSON on its stdout; the
server keeps such processes warm (``WorkerPool``, ``--serve``: a job per line) so that a query
does not pay for starting Python. The parent waits at most ``timeout`` seconds and kills the
child after that (the pool starts a new one): a query that never ends (or computes a huge
ORDER BY) costs nothing once its time is up, and the server stays responsive. A fresh read-only open per query also means each query sees the store as it is
then: the store's current generation is opened and held (``causalkg.kg.store.reading_store``);
``kg export`` writes a new generation and swaps it in, so a query sees the old KG or the new one.

Before a query reaches the store it is checked: updates (INSERT, DELETE, LOAD, CLEAR, DROP,
CREATE, ADD, MOVE, COPY, WITH ...) and ``SERVICE`` (which would make the server fetch remote
URLs) are refused with a clear message. The store is opened read-only in any case.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import select
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from causalkg.core.errors import CausalKGError

OPEN_ATTEMPTS = 5
STARTUP_TIMEOUT = 120.0  # seconds a new warm worker may take to import what it needs (a busy machine)
UPDATE_KEYWORDS = ("INSERT", "DELETE", "LOAD", "CLEAR", "DROP", "CREATE", "ADD", "MOVE", "COPY", "WITH")

# Strings, IRIs and comments, which may contain any word without it being a keyword.
_NOT_CODE = re.compile(
    r'"""(?:[^"\\]|\\.|"(?!""))*"""'
    r"|'''(?:[^'\\]|\\.|'(?!''))*'''"
    r'|"(?:[^"\\\n]|\\.)*"'
    r"|'(?:[^'\\\n]|\\.)*'"
    r"|<[^<>\"{}|^`\\\s]*>"
    r"|#[^\n]*",
    re.S,
)
_PROLOGUE = re.compile(r"^\s*(?:(?:PREFIX\s+[^\s:]*:\s*|BASE\s+)\s*)*", re.I)


class QueryError(CausalKGError):
    """A query the endpoint will not run or that failed. ``status`` is the HTTP status to answer."""

    def __init__(self, message: str, status: int = 400, hint: str | None = None) -> None:
        super().__init__(message, hint)
        self.status = status


_ESCAPE = re.compile(r"\\u([0-9A-Fa-f]{4})|\\U([0-9A-Fa-f]{8})")


def _code_only(query: str) -> str:
    """The query without strings, IRIs and comments, after the ``\\uXXXX`` escapes SPARQL
    applies before parsing (so ``\\u0053ERVICE`` is seen as SERVICE)."""
    try:
        text = _ESCAPE.sub(lambda m: chr(int(m.group(1) or m.group(2), 16)), query)
    except (ValueError, OverflowError):
        text = query
    return _NOT_CODE.sub(" ", text)


def check_query(query: str, max_length: int = 100_000) -> None:
    """Refuse what the read-only endpoint never runs: empty or huge text, updates, SERVICE."""
    if not query or not query.strip():
        raise QueryError("the query is empty")
    if len(query) > max_length:
        raise QueryError(f"the query is longer than {max_length} characters")
    code = _code_only(query)
    head = _PROLOGUE.sub("", code).lstrip()
    first = re.match(r"[A-Za-z]+", head)
    if first and first.group(0).upper() in UPDATE_KEYWORDS:
        raise QueryError(f"updates are refused: this endpoint is read-only ({first.group(0).upper()})", 403)
    from causalkg.kg.store import uses_service

    if uses_service(query):  # the same test as causalkg kg query's
        raise QueryError("SERVICE is refused: this endpoint does not query other endpoints", 403)


@dataclass
class SparqlResult:
    """``kind``: select, ask or graph. Select bindings and graph triples hold terms as SPARQL
    JSON term objects (``{"type", "value", ...}``); ``truncated`` when the cap cut them."""

    kind: str
    columns: list[str] = field(default_factory=list)
    rows: list[dict[str, dict[str, str]]] = field(default_factory=list)
    boolean: bool | None = None
    triples: list[list[dict[str, str]]] = field(default_factory=list)
    truncated: bool = False
    cap: int = 0


SCHEMA_HTTP, SCHEMA_HTTPS = "<http://schema.org/", "<https://schema.org/"


def schema_https(query: str) -> str:
    """``query`` with its IRIs written ``http://schema.org/...`` (as on Wikidata) written
    ``https://schema.org/...``, the namespace the KG uses; strings and comments are left alone."""
    if SCHEMA_HTTP not in query:
        return query
    return _NOT_CODE.sub(lambda m: SCHEMA_HTTPS + m.group(0)[len(SCHEMA_HTTP):]
                         if m.group(0).startswith(SCHEMA_HTTP) else m.group(0), query)


def run_query(folder: str | Path, query: str, *, default_graph: str | None, timeout: float, cap: int,
              prefixes: dict[str, str] | None = None, union: bool = False,
              pool: "WorkerPool | None" = None) -> SparqlResult:
    """Run ``query`` over the store of ``folder`` (``<paths.data>/store``) in a child process: a
    warm worker of ``pool`` when given, else a fresh process for this query alone.
    Raises QueryError: 400 for a
    query that is not valid SPARQL, 403 for an update or SERVICE, 503 when there is no store or
    it cannot be read, 504 when the query ran past ``timeout`` seconds."""
    check_query(query)
    if not (Path(folder) / "oxigraph").exists():
        raise QueryError(f"no triple store in {Path(folder) / 'oxigraph'}", 503,
                         hint="run causalkg kg export (make kg does)")
    job = {"folder": str(folder), "query": schema_https(query), "default_graph": default_graph, "cap": int(cap),
           "prefixes": prefixes or {}, "union": union}
    if pool is not None:
        return pool.run(job, timeout)
    env = dict(os.environ, PYTHONIOENCODING="utf-8")
    proc = subprocess.Popen([sys.executable, "-m", "causalkg.web.sparql"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        out, err = proc.communicate(json.dumps(job).encode("utf-8"), timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise QueryError(f"the query ran longer than the time limit ({timeout:g} s) and was stopped", 504,
                         hint="add a LIMIT, or narrow the patterns") from None
    try:
        answer = json.loads(out.decode("utf-8"))
    except ValueError:
        tail = err.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no output"]
        raise QueryError(f"the query process failed: {tail[0]}", 500) from None
    if "error" in answer:
        raise QueryError(answer["error"], int(answer.get("status", 400)))
    return SparqlResult(**answer)


def _time_limit_error(timeout: float) -> QueryError:
    return QueryError(f"the query ran longer than the time limit ({timeout:g} s) and was stopped", 504,
                      hint="add a LIMIT, or narrow the patterns")


class _Worker:
    """One ``python -m causalkg.web.sparql --serve`` process: a JSON job per line in, a JSON
    answer per line out."""

    def __init__(self) -> None:
        env = dict(os.environ, PYTHONIOENCODING="utf-8")
        self.proc = subprocess.Popen([sys.executable, "-m", "causalkg.web.sparql", "--serve"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
        self.buffer = b""
        self.ready = False

    def _line(self, seconds: float) -> bytes | None:
        """The next line the worker writes; None when it closed its stdout, b"" when ``seconds``
        passed first."""
        assert self.proc.stdout is not None
        deadline = time.monotonic() + seconds
        fd = self.proc.stdout.fileno()
        parts = [self.buffer]
        chunk = self.buffer
        while b"\n" not in chunk:  # a large answer comes in many chunks: join them once
            left = deadline - time.monotonic()
            if left <= 0:
                self.buffer = b"".join(parts)
                return b""
            readable, _, _ = select.select([fd], [], [], left)
            if readable:
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    return None
                parts.append(chunk)
        line, _, self.buffer = b"".join(parts).partition(b"\n")
        return line + b"\n"

    def ask(self, job: dict[str, Any], timeout: float) -> dict[str, Any] | None:
        """The answer to ``job``, or None when the worker died or never became ready; raises
        QueryError 504 (and kills the worker) when no answer came within ``timeout`` seconds of
        the job being sent (a new worker's start-up is not counted: it says ``ready`` first)."""
        assert self.proc.stdin is not None
        if not self.ready:
            if self._line(STARTUP_TIMEOUT) != b"ready\n":
                return None
            self.ready = True
        try:
            self.proc.stdin.write(json.dumps(job, ensure_ascii=False).encode("utf-8") + b"\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            return None
        line = self._line(timeout)
        if line == b"":
            self.kill()
            raise _time_limit_error(timeout)
        if line is None:
            return None
        try:
            return json.loads(line.decode("utf-8"))
        except ValueError:
            return None

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for pipe in (self.proc.stdin, self.proc.stdout):
            with contextlib.suppress(OSError):
                pipe.close()  # type: ignore[union-attr]


class WorkerPool:
    """Warm query processes reused across queries, so that a query does not pay for starting
    Python and importing pyoxigraph. A query takes an idle worker (or starts one: concurrent
    queries each get their own); a worker that runs past the time limit is killed and a new one
    takes its place on the next query; at most ``keep`` idle workers are kept. Each job opens the
    store's current generation afresh, as a one-off process would, so a replaced store is seen
    by the next query."""

    def __init__(self, keep: int = 2) -> None:
        self.keep = keep
        self.idle: list[_Worker] = []
        self.started = 0
        self.lock = threading.Lock()
        self.closed = False

    def _take(self) -> _Worker:
        with self.lock:
            while self.idle:
                w = self.idle.pop()
                if w.proc.poll() is None:
                    return w
                w.kill()
            self.started += 1
        return _Worker()

    def _give(self, w: _Worker) -> None:
        with self.lock:
            if not self.closed and len(self.idle) < self.keep and w.proc.poll() is None:
                self.idle.append(w)
                return
        w.kill()

    def run(self, job: dict[str, Any], timeout: float) -> SparqlResult:
        for attempt in range(2):  # a worker found dead (killed from outside) is replaced once
            w = self._take()
            try:
                answer = w.ask(job, timeout)
            except BaseException:
                w.kill()
                raise
            if answer is not None:
                self._give(w)
                break
            w.kill()
        else:
            raise QueryError("the query process failed: it ended without an answer", 500)
        if "error" in answer:
            raise QueryError(answer["error"], int(answer.get("status", 400)))
        return SparqlResult(**answer)

    def close(self) -> None:
        with self.lock:
            self.closed = True
            idle, self.idle = self.idle, []
        for w in idle:
            w.kill()


# --- result formats (SPARQL 1.1 Query Results JSON, XML, CSV and TSV) -----------------------------

XSD = "http://www.w3.org/2001/XMLSchema#"


def to_json(res: SparqlResult) -> str:
    if res.kind == "ask":
        return json.dumps({"head": {}, "boolean": res.boolean})
    if res.kind == "graph":
        raise QueryError("a CONSTRUCT or DESCRIBE answer is a graph: ask for N-Triples (text/plain)", 406)
    return json.dumps({"head": {"vars": res.columns}, "results": {"bindings": res.rows}}, ensure_ascii=False)


def _csv_field(value: str) -> str:
    if any(ch in value for ch in ',"\r\n'):
        return '"' + value.replace('"', '""') + '"'
    return value


def _nt_term(t: dict[str, str]) -> str:
    if t["type"] == "uri":
        return f"<{t['value']}>"
    if t["type"] == "bnode":
        return f"_:{t['value']}"
    v = (t["value"].replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
         .replace("\r", "\\r").replace("\t", "\\t"))
    if "xml:lang" in t:
        return f'"{v}"@{t["xml:lang"]}'
    if "datatype" in t:
        return f'"{v}"^^<{t["datatype"]}>'
    return f'"{v}"'


def to_csv(res: SparqlResult) -> str:
    if res.kind == "ask":
        raise QueryError("an ASK answer has no CSV or TSV form: ask for JSON or XML", 406)
    if res.kind == "graph":
        raise QueryError("a CONSTRUCT or DESCRIBE answer is a graph: ask for N-Triples (text/plain)", 406)
    lines = [",".join(_csv_field(c) for c in res.columns)]
    for r in res.rows:
        lines.append(",".join(_csv_field(r[c]["value"]) if c in r else "" for c in res.columns))
    return "\r\n".join(lines) + "\r\n"


def to_tsv(res: SparqlResult) -> str:
    if res.kind == "ask":
        raise QueryError("an ASK answer has no CSV or TSV form: ask for JSON or XML", 406)
    if res.kind == "graph":
        raise QueryError("a CONSTRUCT or DESCRIBE answer is a graph: ask for N-Triples (text/plain)", 406)
    lines = ["\t".join("?" + c for c in res.columns)]
    for r in res.rows:
        lines.append("\t".join(_nt_term(r[c]) if c in r else "" for c in res.columns))
    return "\n".join(lines) + "\n"


def to_ntriples(res: SparqlResult) -> str:
    if res.kind != "graph":
        raise QueryError("only CONSTRUCT and DESCRIBE answers are graphs", 406)
    return "".join(" ".join(_nt_term(t) for t in triple) + " .\n" for triple in res.triples)


# --- content negotiation (SPARQL 1.1 Protocol) ------------------------------------------------

# What each answer can be given as: format name -> media types, in the order preferred when a
# client accepts several equally (the first media type is the one answered).
RESULT_FORMATS: dict[str, tuple[str, ...]] = {
    "json": ("application/sparql-results+json", "application/json"),
    "xml": ("application/sparql-results+xml", "application/xml", "text/xml"),
    "csv": ("text/csv",),
    "tsv": ("text/tab-separated-values",),
}
GRAPH_FORMATS: dict[str, tuple[str, ...]] = {
    "nt": ("application/n-triples", "text/plain"),
    "turtle": ("text/turtle", "application/x-turtle", "application/turtle"),
    "rdfxml": ("application/rdf+xml", "application/xml", "text/xml"),
    "jsonld": ("application/ld+json", "application/json"),
}
KIND_FORMATS: dict[str, tuple[str, ...]] = {
    "select": ("json", "xml", "csv", "tsv"),
    "ask": ("json", "xml"),  # a boolean has no CSV or TSV form
    "graph": ("nt", "turtle", "rdfxml", "jsonld"),
}
# ``format=`` names (those SPARQLWrapper and other clients send) per kind of answer.
_FORMAT_NAMES: dict[str, dict[str, str]] = {
    "results": {"json": "json", "xml": "xml", "srj": "json", "srx": "xml", "csv": "csv", "tsv": "tsv"},
    "graph": {"nt": "nt", "ntriples": "nt", "n-triples": "nt", "turtle": "turtle", "ttl": "turtle",
              "xml": "rdfxml", "rdf": "rdfxml", "rdf+xml": "rdfxml", "rdfxml": "rdfxml", "json-ld": "jsonld",
              "jsonld": "jsonld", "json": "jsonld"},
}


def _media_types(kind: str) -> dict[str, tuple[str, ...]]:
    table = GRAPH_FORMATS if kind == "graph" else RESULT_FORMATS
    return {name: table[name] for name in KIND_FORMATS[kind]}


def query_form(query: str) -> str | None:
    """``select``, ``ask`` or ``graph`` (CONSTRUCT, DESCRIBE) from the query's first keyword after
    its prologue; None when it cannot be told (the store's parser then has the last word)."""
    head = _PROLOGUE.sub("", _code_only(query)).lstrip()
    first = re.match(r"[A-Za-z]+", head)
    word = first.group(0).upper() if first else ""
    return {"SELECT": "select", "ASK": "ask", "CONSTRUCT": "graph", "DESCRIBE": "graph"}.get(word)


def _parse_accept(accept: str) -> list[tuple[str, float, int]]:
    """(media range, q, position) for each item of an ``Accept`` header; a bad q counts as 0."""
    out = []
    for pos, part in enumerate(accept.split(",")):
        pieces = [p.strip() for p in part.split(";")]
        media = pieces[0].lower()
        if not media:
            continue
        q = 1.0
        for p in pieces[1:]:
            key, _, val = p.partition("=")
            if key.strip().lower() == "q":
                try:
                    q = min(max(float(val.strip()), 0.0), 1.0)
                except ValueError:
                    q = 0.0
        out.append((media, q, pos))
    return out


def _quality(media: str, ranges: list[tuple[str, float, int]]) -> tuple[float, int]:
    """The q the client gives ``media`` (the most specific matching range decides) and how
    specific that range was (2 exact, 1 type/*, 0 */*); (-1, -1) when nothing matches."""
    best = (-1.0, -1)
    mtype = media.split("/")[0]
    for rng, q, _pos in ranges:
        if rng == media:
            spec = 2
        elif rng == f"{mtype}/*":
            spec = 1
        elif rng == "*/*":
            spec = 0
        else:
            continue
        if spec > best[1]:
            best = (q, spec)
    return best


def negotiate(kind: str, accept: str = "", fmt: str = "") -> tuple[str, str]:
    """The format name and media type to answer a ``kind`` (select, ask, graph) result in.

    ``fmt`` (the ``format=`` parameter: a name such as ``xml``, ``csv``, ``turtle``, or a media
    type) wins over ``accept`` (the ``Accept`` header, q-values honoured). Raises QueryError 406
    naming what can be given when neither asks for something this answer has."""
    offers = _media_types(kind)
    fmt = fmt.strip().lower().replace(" ", "+")  # a '+' sent unescaped in a URL arrives as a space
    if fmt:
        names = _FORMAT_NAMES["graph" if kind == "graph" else "results"]
        name = names.get(fmt) or next((n for n, types in offers.items() if fmt in types), None)
        if name is None or name not in offers:
            raise QueryError(f"format={fmt} cannot be given for {_kind_words(kind)}: {_can_give(offers)}", 406)
        return name, offers[name][0]
    ranges = _parse_accept(accept)
    if not ranges:
        name = next(iter(offers))
        return name, offers[name][0]
    best: tuple[float, int, int] | None = None
    chosen = None
    for rank, (name, types) in enumerate(offers.items()):
        # the most specific range naming any of this format's types decides its q, so that
        # "application/sparql-results+json;q=0, */*" rules JSON out rather than in by application/json
        spec, q = max((_quality(media, ranges)[::-1] for media in types))
        if q <= 0:
            continue
        key = (q, spec, -rank)
        if best is None or key > best:
            best, chosen = key, name
    if chosen is None:
        raise QueryError(f"none of the types in Accept can be given for {_kind_words(kind)}: "
                         f"{_can_give(offers)}", 406)
    return chosen, offers[chosen][0]


def _kind_words(kind: str) -> str:
    return {"select": "a SELECT answer", "ask": "an ASK answer", "graph": "a CONSTRUCT or DESCRIBE answer"}[kind]


def _can_give(offers: dict[str, tuple[str, ...]]) -> str:
    return "it can be given as " + ", ".join(types[0] for types in offers.values())


def to_xml(res: SparqlResult) -> str:
    """SPARQL Query Results XML Format."""
    from xml.sax.saxutils import escape, quoteattr

    ns = "http://www.w3.org/2005/sparql-results#"
    out = ['<?xml version="1.0" encoding="utf-8"?>\n', f'<sparql xmlns="{ns}">\n']
    if res.kind == "ask":
        out.append("<head/>\n<boolean>" + ("true" if res.boolean else "false") + "</boolean>\n</sparql>\n")
        return "".join(out)
    if res.kind == "graph":
        raise QueryError("a CONSTRUCT or DESCRIBE answer is a graph, not a result table", 406)
    out.append("<head>" + "".join(f"<variable name={quoteattr(c)}/>" for c in res.columns) + "</head>\n<results>\n")
    for row in res.rows:
        out.append("<result>")
        for c in res.columns:
            if c not in row:
                continue
            t = row[c]
            if t["type"] == "uri":
                term = f"<uri>{escape(t['value'])}</uri>"
            elif t["type"] == "bnode":
                term = f"<bnode>{escape(t['value'])}</bnode>"
            else:
                attr = ""
                if "xml:lang" in t:
                    attr = f" xml:lang={quoteattr(t['xml:lang'])}"
                elif "datatype" in t:
                    attr = f" datatype={quoteattr(t['datatype'])}"
                term = f"<literal{attr}>{escape(t['value'])}</literal>"
            out.append(f"<binding name={quoteattr(c)}>{term}</binding>")
        out.append("</result>\n")
    out.append("</results>\n</sparql>\n")
    return "".join(out)


def to_graph_text(res: SparqlResult, name: str, prefixes: dict[str, str] | None = None) -> str:
    """A CONSTRUCT or DESCRIBE answer as N-Triples (``nt``), Turtle, RDF/XML or JSON-LD, the
    last three written by rdflib (with ``prefixes`` bound for Turtle and RDF/XML)."""
    if name == "nt":
        return to_ntriples(res)
    if res.kind != "graph":
        raise QueryError("only CONSTRUCT and DESCRIBE answers are graphs", 406)
    from rdflib import BNode, Graph, Literal, URIRef

    def term(t: dict[str, str]):  # noqa: ANN202
        if t["type"] == "uri":
            return URIRef(t["value"])
        if t["type"] == "bnode":
            return BNode(t["value"])
        return Literal(t["value"], lang=t.get("xml:lang"), datatype=URIRef(t["datatype"]) if "datatype" in t else None)

    g = Graph(bind_namespaces="none")
    for p, ns in (prefixes or {}).items():
        g.bind(p, ns)
    for s, p, o in res.triples:
        g.add((term(s), term(p), term(o)))
    fmt = {"turtle": "turtle", "rdfxml": "xml", "jsonld": "json-ld"}[name]
    return g.serialize(format=fmt)


_AT = re.compile(r"error at (\d+):(\d+): (.*)", re.S)


def explain_syntax_error(query: str, message: str) -> str:
    """The parser's message as a sentence with the line and column, what stands there, and what
    was expected in words (the parser lists character classes such as ``['A' ..= 'Z' | ...]``,
    shown as "a name"). A message without a position is returned as it is."""
    m = _AT.match(message.strip())
    if not m:
        return message
    line, col, rest = int(m.group(1)), int(m.group(2)), m.group(3)
    lines = query.split("\n")
    text = lines[line - 1] if 0 < line <= len(lines) else ""
    tail = text[col - 1:].strip() if col >= 1 else text
    later = "".join(lines[line:]).strip() if line <= len(lines) else ""
    found = f"at {tail.split()[0][:30]!r}" if tail else ("at the end of the line" if later else "at the end of the query")
    expected = ""
    if rest.startswith("expected"):
        words = re.findall(r'"((?:[^"\\]|\\.)+)"', rest)
        if "[" in rest:
            words.append("a name")
        if not words:
            words = [rest[len("expected"):].replace("one of", "").strip().split(",")[0].strip()]
        expected = "; expected " + (words[0] if len(words) == 1 else "one of " + ", ".join(words[:12])
                                    + (", ..." if len(words) > 12 else ""))
    else:
        expected = f"; {rest.strip()}"
    return f"syntax error on line {line}, column {col} ({found}){expected}"


# --- the child process -----------------------------------------------------------------------


def _term(term: Any) -> dict[str, str]:
    import pyoxigraph

    if isinstance(term, pyoxigraph.NamedNode):
        return {"type": "uri", "value": term.value}
    if isinstance(term, pyoxigraph.BlankNode):
        return {"type": "bnode", "value": term.value}
    if isinstance(term, pyoxigraph.Literal):
        out = {"type": "literal", "value": term.value}
        if term.language:
            out["xml:lang"] = term.language
        elif term.datatype is not None and term.datatype.value != XSD + "string":
            out["datatype"] = term.datatype.value
        return out
    return {"type": "literal", "value": str(term)}  # a quoted triple (RDF-star): shown as text


@contextlib.contextmanager
def open_store_read_only(folder: str | Path) -> Iterator[Any]:
    """The embedded store of ``folder`` (``<paths.data>/store``), opened read-only.

    When ``causalkg.kg.store`` publishes the store as generations (``reading_store``), the
    current generation is opened and held against pruning while the block runs: a published
    generation is never written again. Otherwise ``folder/oxigraph`` is opened beside any writer;
    opening it while a writer compacts can fail (the files it lists are being replaced), which is
    retried a few times."""
    import pyoxigraph

    try:
        from causalkg.kg.store import reading_store  # type: ignore[attr-defined]
    except ImportError:
        reading_store = None
    if reading_store is not None:
        with reading_store(Path(folder)) as (db, _manifest):
            if not Path(db).is_dir():
                raise FileNotFoundError(f"no triple store in {db}")
            yield pyoxigraph.Store.read_only(str(db))
        return
    db = Path(folder) / "oxigraph"
    for attempt in range(OPEN_ATTEMPTS):
        try:
            store = pyoxigraph.Store.read_only(str(db))
            store.query("ASK { ?s ?p ?o }")  # touches the files the open listed
            break
        except (OSError, RuntimeError):
            if attempt == OPEN_ATTEMPTS - 1:
                raise
    yield store


def _answer(job: dict[str, Any]) -> dict[str, Any]:
    for attempt in range(OPEN_ATTEMPTS):
        try:
            with open_store_read_only(job["folder"]) as store:
                return _run(store, job)
        except (OSError, RuntimeError) as exc:
            # a store being replaced under a reader of the plain layout: read it again
            if attempt == OPEN_ATTEMPTS - 1:
                return {"error": f"cannot read the triple store: {exc}", "status": 503}
        except CausalKGError as exc:
            return {"error": str(exc), "status": 503}
    raise AssertionError("unreachable")


def _run(store: Any, job: dict[str, Any]) -> dict[str, Any]:
    import pyoxigraph

    kwargs: dict[str, Any] = {"prefixes": job["prefixes"]}
    if job["union"]:
        kwargs["use_default_graph_as_union"] = True
    elif job["default_graph"]:
        try:
            kwargs["default_graph"] = pyoxigraph.NamedNode(job["default_graph"])
        except ValueError as exc:
            return {"error": f"default-graph-uri is not an IRI: {exc}", "status": 400}
    cap = job["cap"]
    try:
        res = store.query(job["query"], **kwargs)
        if isinstance(res, pyoxigraph.QueryBoolean):
            return {"kind": "ask", "boolean": bool(res), "cap": cap}
        if isinstance(res, pyoxigraph.QuerySolutions):
            columns = [v.value for v in res.variables]
            rows, truncated = [], False
            for sol in res:
                if len(rows) >= cap:
                    truncated = True
                    break
                rows.append({c: _term(sol[c]) for c in columns if sol[c] is not None})
            return {"kind": "select", "columns": columns, "rows": rows, "truncated": truncated, "cap": cap}
        triples, truncated = [], False
        for t in res:
            if len(triples) >= cap:
                truncated = True
                break
            triples.append([_term(t.subject), _term(t.predicate), _term(t.object)])
        return {"kind": "graph", "triples": triples, "truncated": truncated, "cap": cap}
    except SyntaxError as exc:
        return {"error": f"the query is not valid SPARQL: {explain_syntax_error(job['query'], str(exc))}",
                "status": 400}
    except (ValueError, TypeError) as exc:
        return {"error": f"the query failed: {exc}", "status": 400}


def _serve() -> int:
    """A warm worker: one JSON job per line on stdin, one JSON answer per line on stdout, until
    stdin closes."""
    import pyoxigraph  # noqa: F401  (imported once, before the first job)

    sys.stdout.write("ready\n")
    sys.stdout.flush()
    for raw in sys.stdin.buffer:
        if not raw.strip():
            continue
        try:
            answer = _answer(json.loads(raw.decode("utf-8")))
        except Exception as exc:  # noqa: BLE001  (a bad job must not end the worker)
            answer = {"error": f"the query process failed: {type(exc).__name__}: {exc}", "status": 500}
        sys.stdout.write(json.dumps(answer, ensure_ascii=False) + "\n")
        sys.stdout.flush()
    return 0


def _main() -> int:
    if sys.argv[1:] == ["--serve"]:
        return _serve()
    job = json.loads(sys.stdin.buffer.read().decode("utf-8"))
    sys.stdout.write(json.dumps(_answer(job), ensure_ascii=False))
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(_main())
