"""Read-only SPARQL over the embedded Oxigraph store, for the ``/sparql`` endpoint and the query page.

Each query runs in a child process (``python -m causalkg.web.sparql``) that opens the store
read-only, runs the query and sends back at most ``cap`` results as JSON on its stdout. The
parent waits at most ``timeout`` seconds and kills the child after that: a query that never
ends (or computes a huge ORDER BY) costs nothing once its time is up, and the server stays
responsive. A fresh read-only open per query also means each query sees the store as it is
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
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from causalkg.core.errors import CausalKGError

OPEN_ATTEMPTS = 5
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


def run_query(folder: str | Path, query: str, *, default_graph: str | None, timeout: float, cap: int,
              prefixes: dict[str, str] | None = None, union: bool = False) -> SparqlResult:
    """Run ``query`` over the store of ``folder`` (``<paths.data>/store``) in a child process.
    Raises QueryError: 400 for a
    query that is not valid SPARQL, 403 for an update or SERVICE, 503 when there is no store or
    it cannot be read, 504 when the query ran past ``timeout`` seconds."""
    check_query(query)
    if not (Path(folder) / "oxigraph").exists():
        raise QueryError(f"no triple store in {Path(folder) / 'oxigraph'}", 503,
                         hint="run causalkg kg export (make kg does)")
    job = {"folder": str(folder), "query": query, "default_graph": default_graph, "cap": int(cap),
           "prefixes": prefixes or {}, "union": union}
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


# --- result formats (SPARQL 1.1 Query Results JSON, CSV and TSV) -----------------------------

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
        return "_askResult\r\n" + ("true" if res.boolean else "false") + "\r\n"
    if res.kind == "graph":
        raise QueryError("a CONSTRUCT or DESCRIBE answer is a graph: ask for N-Triples (text/plain)", 406)
    lines = [",".join(_csv_field(c) for c in res.columns)]
    for r in res.rows:
        lines.append(",".join(_csv_field(r[c]["value"]) if c in r else "" for c in res.columns))
    return "\r\n".join(lines) + "\r\n"


def to_tsv(res: SparqlResult) -> str:
    if res.kind == "ask":
        return "?_askResult\n" + ("true" if res.boolean else "false") + "\n"
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
        return {"error": f"the query is not valid SPARQL: {exc}", "status": 400}
    except (ValueError, TypeError) as exc:
        return {"error": f"the query failed: {exc}", "status": 400}


def _main() -> int:
    job = json.loads(sys.stdin.buffer.read().decode("utf-8"))
    sys.stdout.write(json.dumps(_answer(job), ensure_ascii=False))
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(_main())
