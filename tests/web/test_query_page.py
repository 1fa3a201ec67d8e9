"""The query page and the endpoint's messages: syntax errors with line and column in words, the
http form of schema.org read as the KG's https one, labels and links in the results, the vendored
editor. Against a real `causalkg serve` on 127.0.0.1 and the app."""

from __future__ import annotations

import urllib.error
import urllib.parse
import urllib.request
from typing import Any

import pytest

from causalkg.kg import rdf
from tests.web.server import ServeProcess

PROLOGUE = "".join(f"PREFIX {p}: <{iri}>\n" for p, iri in rdf.PREFIXES.items())
CONSTRUCT = PROLOGUE + "CONSTRUCT { wd:Q7944 ck:causes ?x . ?x rdfs:label ?l } WHERE { wd:Q7944 ck:causes ?x . ?x rdfs:label ?l }"


@pytest.fixture(scope="module")
def endpoint(kg_project, tmp_path_factory):
    root, _cfg = kg_project
    judgements = tmp_path_factory.mktemp("judgements") / "j.jsonl"
    with ServeProcess(root / "data", "--judgements", str(judgements)) as srv:
        yield srv.url + "/sparql"


def _get(url: str, **headers: str) -> tuple[int, Any, bytes]:
    req = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, r.headers, r.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers, exc.read()


def test_syntax_errors_give_line_and_column_in_words(endpoint):
    q = urllib.parse.urlencode({"query": "SELECT ?x\nWHERE {\n  ?x rdfs:label ?l\n"})
    status, _, body = _get(endpoint + "?" + q)
    text = body.decode("utf-8")
    assert status == 400 and text.count("\n") == 1
    assert "syntax error on line 4, column 1 (at the end of the query); expected one of" in text
    assert "[_]" not in text and "..=" not in text
    from causalkg.web.sparql import explain_syntax_error

    msg = explain_syntax_error("SELEC ?x WHERE {}", "error at 1:10: expected CONSTRUCT")
    assert msg == "syntax error on line 1, column 10 (at 'WHERE'); expected CONSTRUCT"
    assert explain_syntax_error("x", "no position here") == "no position here"


def _schema_locals(endpoint: str) -> list[str]:
    q = "SELECT DISTINCT ?p WHERE { ?s ?p ?o FILTER(STRSTARTS(STR(?p), 'https://schema.org/')) }"
    status, _, body = _get(endpoint + "?" + urllib.parse.urlencode({"query": q}), Accept="text/csv")
    return [line.rsplit("/", 1)[1] for line in body.decode().split()[1:]]


def test_http_schema_org_is_read_as_the_kgs_https_namespace(endpoint):
    from causalkg.web.sparql import schema_https

    q = 'PREFIX s: <http://schema.org/>\nSELECT ?x WHERE { ?x s:name "<http://schema.org/x>" } # <http://schema.org/>'
    assert schema_https(q) == q.replace("<http://schema.org/>\nSELECT", "<https://schema.org/>\nSELECT")
    https = "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o FILTER(STRSTARTS(STR(?p), 'https://schema.org/')) }"
    status, _, body = _get(endpoint + "?" + urllib.parse.urlencode({"query": https}), Accept="text/csv")
    n = int(body.decode().split()[1])
    assert status == 200 and n > 0
    http_q = ("PREFIX schema: <http://schema.org/> SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o "
              "FILTER(?p IN (" + ", ".join(f"schema:{local}" for local in _schema_locals(endpoint)) + ")) }")
    status, _, body = _get(endpoint + "?" + urllib.parse.urlencode({"query": http_q}), Accept="text/csv")
    assert status == 200 and int(body.decode().split()[1]) == n


def test_query_page_shows_labels_beside_concepts_and_links_urls(kg_project, tmp_path):
    from starlette.testclient import TestClient

    from causalkg.web.app import create_app

    _root, cfg = kg_project
    q = "SELECT ?p ?x WHERE { wd:Q7944 ?p ?x . FILTER(?x = wd:Q8070) }"
    with TestClient(create_app(cfg, judgements=str(tmp_path / "j.jsonl"))) as c:
        r = c.get("/query", params={"query": q, "run": "1"})
    assert r.status_code == 200
    assert '<a href="/concept/Q8070">Q8070</a> <span class="label">tsunami</span>' in r.text
    assert '<a href="https://w3id.org/causalkg/ns#causes" rel="noopener noreferrer">' in r.text
    assert "format=xml" in r.text and "http://schema.org/" in r.text


def test_query_page_loads_the_vendored_editor_and_lists_prefixes(kg_project, tmp_path):
    import html
    import json
    import re

    from starlette.testclient import TestClient

    from causalkg.web.app import create_app

    _root, cfg = kg_project
    with TestClient(create_app(cfg, judgements=str(tmp_path / "j.jsonl"))) as c:
        page = c.get("/query").text
        scripts = re.findall(r'<script src="([^"]+)"', page)
        assert "/static/vendor/codemirror/codemirror.js" in scripts and "/static/query.js" in scripts
        for src in scripts + re.findall(r'<link rel="stylesheet" href="([^"]+)"', page):
            assert c.get(src).status_code == 200, src  # vendored and served, never a CDN
        assert not any(s.startswith("http") for s in scripts)
        prefixes = json.loads(html.unescape(re.search(r'data-prefixes="([^"]*)"', page).group(1)))
        assert prefixes == dict(rdf.PREFIXES)
        assert "CodeMirror.fromTextArea" in c.get("/static/query.js").text
