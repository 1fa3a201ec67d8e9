"""Remote export over the SPARQL 1.1 Graph Store HTTP Protocol (kg/graphstore.py) against a real
Virtuoso server started on 127.0.0.1 (one per test session), with faults injected by a real
proxy in front of it."""

from __future__ import annotations

import json
import shutil
from decimal import Decimal
from pathlib import Path

import pyoxigraph
import pytest

from causalkg.core.config import load_config
from causalkg.core.contracts import KGMention
from causalkg.core.errors import SourceError, StoreError
from causalkg.core.jsonl import read_jsonl
from causalkg.core.retry import RetryPolicy
from causalkg.testing.virtuoso import FaultProxy, ProxyFault, VirtuosoServer
from causalkg.kg import assemble as A
from causalkg.kg import store as K
from causalkg.kg.graphstore import GraphStoreClient

REPO = Path(__file__).resolve().parents[2]
FIX = REPO / "tests" / "fixtures" / "kg"
BASE = REPO / "snapshots" / "wikicausal" / "base-kg-v1.jsonl"
KG_GRAPH = "https://w3id.org/causalkg/graph/kg"
BASE_GRAPH = "https://w3id.org/causalkg/graph/base-kg"


@pytest.fixture(scope="session")
def virtuoso():
    with VirtuosoServer() as server:
        yield server


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    root = tmp_path_factory.mktemp("remote")
    linked = root / "linked.jsonl"
    linked.write_text((FIX / "linked.jsonl").read_text(encoding="utf-8") + (FIX / "tricky.jsonl").read_text(encoding="utf-8"),
                      encoding="utf-8")
    cfg = load_config(search_cwd=False, overrides={"paths.data": str(root / "data")})
    (root / "data" / "wikidata").mkdir(parents=True)
    shutil.copy(BASE, root / "data" / "wikidata" / "base_kg.jsonl")
    A.assemble(cfg, linked=linked, concepts=FIX / "concepts.jsonl")
    return root, cfg


@pytest.fixture
def creds(monkeypatch, virtuoso):
    monkeypatch.setenv("CAUSALKG_STORE_USER", virtuoso.user)
    monkeypatch.setenv("CAUSALKG_STORE_PASSWORD", virtuoso.password)


def _canonical(triples) -> set[tuple]:
    """Triples compared by value: Virtuoso stores xsd:decimal 1.0 and prints it as 1."""
    out = set()
    for t in triples:
        o = t.object
        if isinstance(o, pyoxigraph.Literal) and o.datatype.value.endswith("#decimal"):
            o = ("decimal", Decimal(o.value).normalize())
        else:
            o = str(o)
        out.add((str(t.subject), str(t.predicate), o))
    return out


def _expected(root: Path) -> set[tuple]:
    out = set()
    for p in sorted((root / "data" / "kg" / "nt").glob("*.nt")):
        out |= _canonical(pyoxigraph.parse(path=str(p), format=pyoxigraph.RdfFormat.N_TRIPLES))
    return out


def _remote(virtuoso, graph: str) -> set[tuple]:
    client = GraphStoreClient(virtuoso.gsp_url, user=virtuoso.user, password=virtuoso.password)
    return _canonical(pyoxigraph.parse(client.get(graph), format=pyoxigraph.RdfFormat.N_TRIPLES))


def _count(virtuoso, graph: str) -> int:
    client = GraphStoreClient(virtuoso.gsp_url, sparql_endpoint=virtuoso.sparql_public_url)
    return client.count(graph)


def test_export_in_chunks_with_digest_auth_and_the_same_triples(virtuoso, project, creds):
    root, cfg = project
    with FaultProxy(virtuoso.base_url) as proxy:
        result = K.export(cfg, endpoint=proxy.url("/sparql-graph-crud-auth"), chunk_triples=100)
    manifest = json.loads((root / "data" / "kg" / "manifest.json").read_text())
    n = manifest["counts"]["triples"]
    assert result.graphs[KG_GRAPH] == n and result.graphs[BASE_GRAPH] > 1000
    writes = [(r.method, r.status) for r in proxy.seen if r.method in ("PUT", "POST") and r.status in (200, 201)]
    chunks = -(-n // 100) + -(-result.graphs[BASE_GRAPH] // 100)
    assert len(writes) == chunks and [m for m, _ in writes].count("PUT") == 2  # one PUT per graph, then POSTs
    assert all(r.bytes > 0 for r in proxy.seen if r.method == "POST" and r.status in (200, 201))
    # what the server holds is exactly what we wrote: quotes, newline and scripts survived
    assert _remote(virtuoso, KG_GRAPH) == _expected(root)
    assert _count(virtuoso, KG_GRAPH) == n


def test_tricky_sentence_reads_back_from_virtuoso(virtuoso, project, creds):
    _, cfg = project
    K.export(cfg, endpoint=virtuoso.gsp_url, with_base_kg=False)
    tricky = next(read_jsonl(FIX / "tricky.jsonl", KGMention))
    client = GraphStoreClient(virtuoso.gsp_url, sparql_endpoint=virtuoso.sparql_public_url)
    rows = client.select(f'SELECT ?t WHERE {{ GRAPH <{KG_GRAPH}> {{ ?m <https://w3id.org/causalkg/ns#extractor> "llm" ; '
                         '<https://schema.org/text> ?t } }')
    assert [r["t"]["value"] for r in rows] == [tricky.sentence.text]


def test_export_twice_does_not_double(virtuoso, project, creds):
    root, cfg = project
    # Once through kg.endpoint and kg.target = graph-store, once through the endpoint argument (auto).
    named = load_config(search_cwd=False, overrides={"paths.data": str(root / "data"), "kg.endpoint": virtuoso.gsp_url,
                                                      "kg.target": "graph-store.v1"})
    assert K.export(named).backend == "graph-store.v1"
    first = _remote(virtuoso, KG_GRAPH)
    again = K.export(cfg, endpoint=virtuoso.gsp_url)
    assert _remote(virtuoso, KG_GRAPH) == first == _expected(root)
    assert _count(virtuoso, KG_GRAPH) == again.graphs[KG_GRAPH] == len(first)


def test_staged_export_with_sparql_endpoint_replaces_the_graph(virtuoso, project, creds, tmp_path):
    root, cfg = project
    K.export(cfg, endpoint=virtuoso.gsp_url, sparql_endpoint=virtuoso.sparql_url, chunk_triples=200)
    assert _count(virtuoso, KG_GRAPH + "#staging") == 0
    assert _remote(virtuoso, KG_GRAPH) == _expected(root)
    # a smaller KG (no lifting) replaces the bigger one: nothing of the old graph is left
    small = tmp_path / "kg"
    A.assemble(cfg.with_overrides({"kg.lift": "none"}), linked=FIX / "linked.jsonl", concepts=FIX / "concepts.jsonl", out=small)
    result = K.export(cfg, endpoint=virtuoso.gsp_url, sparql_endpoint=virtuoso.sparql_url, kg=small, with_base_kg=False)
    expected = set()
    for p in sorted((small / "nt").glob("*.nt")):
        expected |= _canonical(pyoxigraph.parse(path=str(p), format=pyoxigraph.RdfFormat.N_TRIPLES))
    assert _remote(virtuoso, KG_GRAPH) == expected and result.graphs[KG_GRAPH] == len(expected)
    assert _count(virtuoso, KG_GRAPH + "#staging") == 0


def test_upload_reports_each_chunk_for_the_progress_bar(virtuoso, project):
    from causalkg.kg.graphstore import upload_graph

    root, _ = project
    files = sorted((root / "data" / "kg" / "nt").glob("*.nt"))
    n = json.loads((root / "data" / "kg" / "manifest.json").read_text())["counts"]["triples"]
    client = GraphStoreClient(virtuoso.gsp_url, user=virtuoso.user, password=virtuoso.password)
    seen: list[int] = []
    assert upload_graph(client, KG_GRAPH, files, n, chunk_triples=120, on_chunk=seen.append) == n
    assert sum(seen) == n and seen[:-1] == [120] * (len(seen) - 1) and len(seen) == -(-n // 120)


def test_retries_honour_retry_after_and_survive_dropped_connections(virtuoso, project, creds):
    root, cfg = project
    waits: list[float] = []
    with FaultProxy(virtuoso.base_url) as proxy:
        proxy.add_fault(ProxyFault(status=503, retry_after=7, methods=("PUT",)),
                        ProxyFault(drop=True, methods=("POST",)),
                        ProxyFault(status=429, retry_after="2", methods=("POST",)))
        result = K.export(cfg, endpoint=proxy.url("/sparql-graph-crud-auth"), chunk_triples=150,
                          with_base_kg=False, sleep=waits.append)
    assert 7.0 in waits and 2.0 in waits and len(waits) == 3
    assert result.graphs[KG_GRAPH] == _count(virtuoso, KG_GRAPH) == len(_expected(root))
    assert _remote(virtuoso, KG_GRAPH) == _expected(root)  # the retried chunks added nothing twice


def test_gives_up_after_the_retries_naming_the_endpoint(virtuoso, project, creds):
    _, cfg = project
    cfg = cfg.with_overrides({"kg.max_retries": 2})
    waits: list[float] = []
    with FaultProxy(virtuoso.base_url) as proxy:
        proxy.add_fault(*[ProxyFault(status=503) for _ in range(3)])
        url = proxy.url("/sparql-graph-crud-auth")
        with pytest.raises(SourceError) as err:
            K.export(cfg, endpoint=url, with_base_kg=False, sleep=waits.append)
    assert str(err.value).startswith(f"PUT <{KG_GRAPH}> at {url} failed after 3 attempts: HTTP 503")
    assert len(waits) == 2


def test_export_cli_remote_and_its_errors(cli, virtuoso, project, monkeypatch):
    root, _ = project
    n = json.loads((root / "data" / "kg" / "manifest.json").read_text())["counts"]["triples"]
    monkeypatch.setenv("CAUSALKG_STORE_USER", virtuoso.user)
    monkeypatch.setenv("CAUSALKG_STORE_PASSWORD", "wrong")
    r = cli("kg", "export", "--endpoint", virtuoso.gsp_url, "--no-base-kg", cwd=root)
    assert r.code == 1
    assert r.err.strip() == (
        f"error: PUT <{KG_GRAPH}> at {virtuoso.gsp_url}: the server refused access (HTTP 401) (set the credentials in "
        "the environment variables named by kg.user_env and kg.password_env (or kg.token_env), and check the account "
        "may write graphs)")
    monkeypatch.setenv("CAUSALKG_STORE_PASSWORD", virtuoso.password)
    r = cli("kg", "export", "--endpoint", virtuoso.gsp_url, "--sparql-endpoint", virtuoso.sparql_url, cwd=root)
    assert r.code == 0, r.err
    assert r.out.splitlines()[0].startswith(f"{virtuoso.gsp_url} loaded in ")
    assert f"  <{KG_GRAPH}>: {n} triples" in r.out.splitlines()
    assert r.err == ""  # the counts are said once, by the command
    r = cli("kg", "export", "--endpoint", "ftp://nowhere", cwd=root)
    assert r.code == 2 and r.err.strip() == "error: --endpoint must be an http(s) URL, got 'ftp://nowhere'"
    monkeypatch.delenv("CAUSALKG_STORE_PASSWORD")
    r = cli("kg", "export", "--endpoint", virtuoso.gsp_url, "--set", "kg.auth=digest", cwd=root)
    assert r.code == 2 and "kg.auth is digest but no user/password is set" in r.err


def test_anonymous_endpoint_needs_the_sparql_update_grant(virtuoso, project, monkeypatch):
    _, cfg = project
    for name in ("CAUSALKG_STORE_USER", "CAUSALKG_STORE_PASSWORD", "CAUSALKG_STORE_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(StoreError, match=r"refused access \(HTTP 403\).*Permission denied"):
        K.export(cfg, endpoint=virtuoso.gsp_anonymous_url, with_base_kg=False)
    virtuoso.grant_anonymous_update()
    result = K.export(cfg, endpoint=virtuoso.gsp_anonymous_url, with_base_kg=False)
    assert result.graphs[KG_GRAPH] == _count(virtuoso, KG_GRAPH)


def test_client_rejects_bad_settings():
    from causalkg.core.errors import ConfigError

    with pytest.raises(ConfigError, match="kg.auth must be one of"):
        GraphStoreClient("http://127.0.0.1:1/x", auth="kerberos")
    with pytest.raises(ConfigError, match="kg.auth is bearer but no token"):
        GraphStoreClient("http://127.0.0.1:1/x", auth="bearer")
    # nothing listens on port 1: a connection error is retried, then reported with the endpoint
    client = GraphStoreClient("http://127.0.0.1:1/store", policy=RetryPolicy(max_retries=1, base=0, cap=0),
                              sleep=lambda s: None)
    with pytest.raises(SourceError, match=r"PUT <http://g> at http://127.0.0.1:1/store failed after 2 attempts"):
        client.put("http://g", b"")
