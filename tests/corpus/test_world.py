"""The generated world (causalkg.testing.world) and the query-service-like endpoint
(causalkg.testing.wdqs_server): a small world is consistent, `corpus build` on it gives the same
outputs from the embedded store and through the endpoint, and the endpoint charges OFFSET,
kills queries past its limit and answers 429 with Retry-After past its budget."""

from __future__ import annotations

import bz2
import gzip
import json
import re
from pathlib import Path

import pyoxigraph as ox
import pytest

from causalkg.core.config import load_config
from causalkg.core.contracts import Concept
from causalkg.corpus import queries as Q
from causalkg.corpus.build import build
from causalkg.corpus.sparql import SPARQLClient
from causalkg.core.errors import SourceError
from causalkg.core.jsonl import read_jsonl
from causalkg.core.retry import RetryPolicy
from causalkg.testing.wdqs_server import WDQSServer
from causalkg.testing.world import WIKIDATA_NAME, make_world

EVENTS, OTHERS = 12, 20


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("world")
    return out, make_world(out, events=EVENTS, others=OTHERS, seed=3)


def store_of(path: Path) -> ox.Store:
    store = ox.Store()
    with gzip.open(path, "rb") as fh:
        store.bulk_load(input=fh, format=ox.RdfFormat.N_TRIPLES)
    return store


def config(tmp: Path, info: dict, **extra):
    overrides = dict(s.split("=", 1) for s in info["set"])
    overrides.update({"paths.data": str(tmp / "data"), "paths.cache": str(tmp / "cache"), "run.workers": 1})
    overrides.update(extra)
    return load_config(search_cwd=False, overrides=overrides)


def test_world_is_consistent_and_marked_generated(world):
    out, info = world
    lines = bz2.open(out / info["files"]["index"], "rt").read().splitlines()
    assert len(lines) == info["pages"] == EVENTS + OTHERS
    titles = [line.split(":", 2)[2] for line in lines]
    ids = [int(line.split(":", 2)[1]) for line in lines]
    assert len(set(titles)) == len(titles) and all("(generated world " in t for t in titles)
    assert min(ids) >= 2_000_000_000 and len(set(ids)) == len(ids)
    store = store_of(out / WIKIDATA_NAME)
    rows = list(store.query(Q.PREFIXES + """SELECT ?item ?title WHERE {
        ?a schema:about ?item ; schema:isPartOf <https://en.wikipedia.org/> ; schema:name ?title }"""))
    assert len(rows) == EVENTS
    assert {r["title"].value for r in rows} <= set(titles)
    assert all(int(r["item"].value.rsplit("Q", 1)[1]) >= 1_000_000_000 for r in rows)
    seeds = load_config(search_cwd=False)["wikidata"]["seed_classes"]
    typed = list(store.query(Q.PREFIXES + "SELECT DISTINCT ?item WHERE { ?a schema:about ?item . ?item wdt:P31 ?c . "
                                          "VALUES ?c { " + " ".join("wd:" + s for s in seeds) + " } }"))
    assert len(typed) == EVENTS  # every event item is an instance of a seed class
    assert info["causal_statements"] >= EVENTS


def test_world_refuses_the_repository_data(tmp_path):
    from causalkg.testing.world import REPO
    with pytest.raises(ValueError):
        make_world(REPO / "data" / "world", events=1)


def test_corpus_build_on_the_world_is_the_same_from_the_store_and_through_the_endpoint(world, tmp_path):
    out, info = world
    build(config(tmp_path / "embedded", info), source="snapshot")
    with WDQSServer(store_of(out / WIKIDATA_NAME), simulate=False, time_limit_s=60, budget_s=1e9) as server:
        live = build(config(tmp_path / "live", info, **{"wikidata.endpoint": server.endpoint,
                                                      "wikidata.page_size": 4, "wikidata.values_batch": 5,
                                                      "wikidata.counts": "never"}), source="live")
        # keyset paging: an OFFSET only inside one key with more rows than a page
        deep = [q for q in server.queries if not re.search(r"OFFSET 0\b", q)]
        assert deep and all(re.search(r'FILTER\(STR\(\?\w+\) = "', q) for q in deep)
        assert server.stats.answered > 20
    assert live["wikidata"]["source"] == "live"
    a, b = tmp_path / "embedded" / "data", tmp_path / "live" / "data"
    for name in ("concepts.jsonl", "base_kg.jsonl"):
        assert (a / "wikidata" / name).read_bytes() == (b / "wikidata" / name).read_bytes(), name

    def docs(root: Path) -> list[dict]:
        return [json.loads(x) for x in (root / "corpus" / "corpus.jsonl").read_text().splitlines()]

    got = docs(a)
    assert got == docs(b)
    assert len(got) == EVENTS
    concepts = {c.enwiki_title: c.id for c in read_jsonl(a / "wikidata" / "concepts.jsonl", Concept) if c.enwiki_title}
    assert len(concepts) == EVENTS


def test_endpoint_charges_offset_and_kills_queries_past_its_limit(world):
    out, _ = world
    with WDQSServer(store_of(out / WIKIDATA_NAME), simulate=False, offset_row_cost_s=0.01, time_limit_s=1.0,
                    budget_s=1e9) as server:
        client = SPARQLClient(server.endpoint, user_agent="test/1.0 (t@example.org)",
                              policy=RetryPolicy(max_retries=1, base=0.01, cap=1), sleep=lambda s: None)
        client.select(Q.instances_of("Q2727213", 10, 50))  # 50 rows skipped: 0.5 s modelled
        assert 0.5 <= server.stats.max_cost_s < 1.0
        with pytest.raises(SourceError, match="HTTP 500"):
            client.select(Q.instances_of("Q2727213", 10, 200))  # 2 s > the 1 s limit
        assert server.stats.timeouts == 2  # the try and its one retry
        assert server.stats.max_offset == 200


def test_endpoint_answers_429_with_retry_after_past_its_budget(world):
    out, _ = world
    now = [100.0]
    with WDQSServer(store_of(out / WIKIDATA_NAME), simulate=False, offset_row_cost_s=0.1, time_limit_s=60,
                    budget_s=3.0, window_s=60, clock=lambda: now[0]) as server:
        waits: list[float] = []
        client = SPARQLClient(server.endpoint, user_agent="test/1.0 (t@example.org)",
                              policy=RetryPolicy(max_retries=2, base=0.01, cap=120), sleep=waits.append)
        client.select(Q.instances_of("Q2727213", 10, 20))  # charged 2 s at t=100
        now[0] = 110.0
        client.select(Q.instances_of("Q2727213", 10, 20))  # budget not yet spent: 4 s at t=110

        def advance(seconds: float) -> None:
            waits.append(seconds)
            now[0] += seconds

        client.sleep = advance
        now[0] = 120.0
        client.select(Q.probe())  # 4 s used > 3 s: 429, Retry-After 40 (the t=100 charge leaves at 160)
        assert server.stats.throttled == 1 and waits == [40.0]
