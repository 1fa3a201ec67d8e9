"""The SPARQL client against a real SPARQL endpoint on 127.0.0.1 (Oxigraph over the bundled
snapshot), with faults injected by the server: 429 + Retry-After, 503, slow answers, cut
bodies, malformed results. Retry waits go to a recorder, so nothing here sleeps."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from causalkg.core.cache import DiskCache
from causalkg.core.errors import ConfigError, SourceError
from causalkg.core.retry import RetryPolicy
from causalkg.testing.sparql_server import Fault, SPARQLServer
from causalkg.corpus import queries as Q
from causalkg.corpus.snapshot import SnapshotEngine
from causalkg.corpus.sparql import SPARQLClient, check_results, select_all

REPO = Path(__file__).resolve().parents[2]
SNAPSHOT = REPO / "snapshots" / "wikidata" / "wikidata-snapshot.nt.gz"
UA = "causalkg-tests/0.1 (https://example.org/causalkg; tests@example.org)"


@pytest.fixture
def server():
    with SPARQLServer.from_ntriples_gz(SNAPSHOT) as s:
        yield s


@pytest.fixture(scope="module")
def engine():
    return SnapshotEngine(SNAPSHOT)


class Waits(list):
    """Stands in for time.sleep: records the waits instead of waiting."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def make_client(endpoint: str, *, waits: Waits | None = None, cache: DiskCache | None = None,
                timeout: float = 5.0, retries: int = 5, refresh: bool = False, **kw) -> SPARQLClient:
    return SPARQLClient(endpoint, user_agent=UA, timeout=timeout,
                        policy=RetryPolicy(max_retries=retries, base=2.0, cap=120.0),
                        cache=cache, refresh=refresh, sleep=waits if waits is not None else Waits(), **kw)


def rows(doc):
    return doc["results"]["bindings"]


WAR = Q.instances_of("Q198", 1000, 0)


def test_answers_match_the_local_engine_and_send_the_user_agent(server, engine):
    client = make_client(server.endpoint)
    doc = client.select(WAR)
    assert doc == engine.select(WAR)
    assert len(rows(doc)) > 20  # war has dozens of instances in the snapshot
    assert server.user_agents() == {UA}
    req = server.requests[0]
    assert req["method"] == "GET"
    assert req["params"]["timeout"] == ["5"]  # the server-side time limit, in seconds
    assert req["query"] == WAR.text
    assert "sparql-results+json" in req["headers"]["accept"]


def test_long_queries_go_by_post_and_get_the_same_answer(server, engine):
    items = [f"Q{n}" for n in range(1, 400)] + ["Q198", "Q7944"]
    query = Q.entity_terms(items, ["en"], "https://en.wikipedia.org/", 500, 0)
    doc = make_client(server.endpoint).select(query)
    assert server.requests[-1]["method"] == "POST"
    assert doc == engine.select(query)
    labels = {r["value"]["value"] for r in rows(doc) if r["field"]["value"] == "label"}
    assert {"war", "earthquake"} <= labels


def test_429_waits_for_retry_after(server, engine):
    server.add_fault(Fault(status=429, retry_after=7))
    waits = Waits()
    client = make_client(server.endpoint, waits=waits)
    assert client.select(WAR) == engine.select(WAR)
    assert waits == [7.0]
    assert len(server.requests) == 2 and client.stats.retries == 1


def test_retry_after_past_the_cap_stops_instead_of_asking_early(server):
    server.add_fault(Fault(status=429, retry_after=120), Fault(status=429, retry_after=3600))
    waits = Waits()
    client = make_client(server.endpoint, waits=waits)
    with pytest.raises(SourceError) as err:
        client.select(WAR)
    assert waits == [120.0] and len(server.requests) == 2  # 120 s is within the cap: waited, asked again
    assert str(err.value) == (
        f"query 'instances of Q198 (page 1)' at {server.endpoint}: HTTP 429 Too Many Requests; the server asks "
        "to wait 3600s (Retry-After), longer than wikidata.backoff_cap (120s) "
        "(rerun later (answered queries are cached), or raise wikidata.backoff_cap)")


def test_a_refused_user_agent_says_how_to_fix_it(server):
    server.add_fault(Fault(status=403, message="Please set a user-agent and respect our robot policy"))
    with pytest.raises(SourceError, match=r"HTTP 403 Forbidden: Please set a user-agent .* set wikidata.user_agent"):
        make_client(server.endpoint).select(WAR)
    assert len(server.requests) == 1  # not retried


def test_every_transient_fault_is_retried_with_backoff(server, engine):
    server.add_fault(
        Fault(status=503),
        Fault(delay=4.0),  # twice the 2 s client timeout (generous: a loaded machine must not make a normal answer late)
        Fault(truncate=True),
        Fault(malformed=True),
        Fault(body=b'{"head": {"vars": ["item"]}}'),  # JSON, but no results
        Fault(status=500),
    )
    waits = Waits()
    client = make_client(server.endpoint, waits=waits, timeout=2.0, retries=6)
    assert client.select(WAR) == engine.select(WAR)
    assert len(server.requests) == 7 and client.stats.retries == 6
    # exponential backoff with "equal jitter": between half and all of base * 2**n
    for n, wait in enumerate(waits):
        assert 2.0 * 2**n / 2 <= wait <= 2.0 * 2**n


def test_gives_up_naming_the_query_and_the_endpoint(server):
    server.always = Fault(status=503)
    with pytest.raises(SourceError) as err:
        make_client(server.endpoint, retries=2).select(WAR)
    assert str(err.value).startswith(
        f"query 'instances of Q198 (page 1)' at {server.endpoint} failed after 3 attempts: HTTP 503"
    )
    assert len(server.requests) == 3


def test_a_malformed_results_document_fails_after_the_retries(server):
    server.always = Fault(body=b'{"head": {"vars": ["item"]}, "results": {"bindings": [{"item": 3}]}}')
    with pytest.raises(SourceError) as err:
        make_client(server.endpoint, retries=1).select(WAR)
    assert "malformed results document: binding of ?item has no 'type'/'value'" in str(err.value)


def test_a_bad_query_is_not_retried(server):
    with pytest.raises(SourceError) as err:
        make_client(server.endpoint).select(Q.Query("broken", "SELECT WHERE {"))
    assert len(server.requests) == 1
    assert f"query 'broken' at {server.endpoint} was rejected as malformed (HTTP 400): query does not parse" in str(err.value)


def test_a_wrong_path_is_a_404_not_a_retry(server):
    with pytest.raises(SourceError, match="HTTP 404, no SPARQL endpoint there"):
        make_client(server.endpoint.replace("/sparql", "/nothing")).select(WAR)
    assert len(server.requests) == 0  # the server only records requests to its endpoint path


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_unreachable_endpoint_fails_with_one_clear_error():
    endpoint = f"http://127.0.0.1:{closed_port()}/sparql"
    waits = Waits()
    with pytest.raises(SourceError) as err:
        make_client(endpoint, waits=waits, retries=2).select(WAR)
    message = str(err.value)
    assert message.startswith(f"query 'instances of Q198 (page 1)' at {endpoint} failed after 3 attempts: cannot connect")
    assert "\n" not in message and len(waits) == 2


def test_probe_is_one_quick_try(server):
    client = make_client(server.endpoint)
    assert client.probe(Q.probe(), 1.0) is None
    server.always = Fault(status=503)
    assert client.probe(Q.probe(), 1.0) == "HTTP 503 Service Unavailable"
    assert len(server.requests) == 2  # no retries
    assert "cannot connect" in make_client(f"http://127.0.0.1:{closed_port()}/sparql").probe(Q.probe(), 1.0)


def test_answers_are_cached_by_endpoint_and_query(server, tmp_path, engine):
    cache_path = tmp_path / "sparql.sqlite"
    first = make_client(server.endpoint, cache=DiskCache(cache_path))
    doc = first.select(WAR)
    first.select(WAR)
    assert len(server.requests) == 1 and first.stats.cache_hits == 1
    # a new client (a rerun) on the same cache file costs no request at all
    again = make_client(server.endpoint, cache=DiskCache(cache_path))
    assert again.select(WAR) == doc
    assert len(server.requests) == 1
    # another query text is another key
    again.select(Q.instances_of("Q7944", 1000, 0))
    assert len(server.requests) == 2
    # refresh asks again, and stores the fresh answer
    fresh = make_client(server.endpoint, cache=DiskCache(cache_path), refresh=True)
    assert fresh.select(WAR) == doc
    assert len(server.requests) == 3 and fresh.stats.cache_hits == 0
    # the same query at another endpoint is not served from this one's answers
    with SPARQLServer.from_ntriples_gz(SNAPSHOT) as other:
        make_client(other.endpoint, cache=DiskCache(cache_path)).select(WAR)
        assert len(other.requests) == 1


def test_failed_answers_are_not_cached(server, tmp_path):
    cache = DiskCache(tmp_path / "sparql.sqlite")
    server.always = Fault(malformed=True)
    with pytest.raises(SourceError):
        make_client(server.endpoint, cache=cache, retries=1).select(WAR)
    assert len(cache) == 0


def test_paging_loses_and_repeats_nothing_across_faults(server, engine):
    full = rows(engine.select(WAR))
    assert len(full) > 20
    # faults land on the 2nd, 4th and 5th requests: inside the run of pages
    server.schedule(2, Fault(status=503))
    server.schedule(4, Fault(truncate=True))
    server.schedule(5, Fault(status=429, retry_after=1))
    client = make_client(server.endpoint)
    got = select_all(client, lambda limit, offset: Q.instances_of("Q198", limit, offset), 7)
    assert got == full
    pages = -(-len(full) // 7) + (1 if len(full) % 7 == 0 else 0)
    assert server.answered == pages and len(server.requests) == pages + 3
    offsets = sorted({int(q.rsplit("OFFSET", 1)[1]) for q in server.queries})
    assert offsets == list(range(0, 7 * pages, 7))


def test_select_all_on_the_snapshot_engine_pages_the_same(engine):
    whole = rows(engine.select(WAR))
    for size in (1, 5, len(whole), len(whole) + 1):
        assert select_all(engine, lambda limit, offset: Q.instances_of("Q198", limit, offset), size) == whole


@pytest.mark.parametrize("bad", ["Q0", "q198", "Q198 }", "Q12x", "P31", "", None, "Q1 . ?s ?p ?o"])
def test_only_valid_qids_enter_a_query(bad):
    with pytest.raises(ConfigError, match="is not a Wikidata item id"):
        Q.instances_of(bad, 10, 0)
    with pytest.raises(ConfigError):
        Q.causal_facts(["Q1", bad], 10, 0)


@pytest.mark.parametrize("bad", ["P0", "P31 ?x", "Q31", "wdt:P31"])
def test_only_valid_pids_enter_a_query(bad):
    with pytest.raises(ConfigError, match="is not a Wikidata property id"):
        Q.causal_facts(["Q1"], 10, 0, subject_properties=[bad])


def test_languages_and_sites_are_checked():
    with pytest.raises(ConfigError, match="is not a language code"):
        Q.entity_terms(["Q1"], ['en")) } UNION { ?s ?p ?o'], "https://en.wikipedia.org/", 10, 0)
    with pytest.raises(ConfigError, match="is not a wiki site IRI"):
        Q.entity_terms(["Q1"], ["en"], "https://en.wikipedia.org/> } #", 10, 0)


def test_results_documents_are_checked():
    assert check_results({"head": {"vars": []}, "results": {"bindings": []}}) is None
    assert check_results([]) == "not a JSON object"
    assert check_results({"head": {"vars": []}}) == "no 'results.bindings' list"
    assert check_results({"head": {"vars": []}, "results": {"bindings": [[1]]}}) == "a binding is not an object"


def test_the_client_refuses_bad_settings():
    with pytest.raises(SourceError, match="is not an http"):
        SPARQLClient("ftp://example.org/sparql", user_agent=UA)
    with pytest.raises(SourceError, match="empty User-Agent"):
        SPARQLClient("https://example.org/sparql", user_agent=" ")
