"""Paging by key (corpus.paging) against paging by OFFSET: the same rows in the same order on
the bundled snapshot in the embedded store, for every paged query, at page sizes that split
keys; and the same `corpus build` outputs either way."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from causalkg.core.config import load_config
from causalkg.corpus import queries as Q
from causalkg.corpus.build import build_wikidata
from causalkg.corpus.paging import select_keyset
from causalkg.corpus.snapshot import SnapshotEngine
from causalkg.corpus.sparql import select_all

REPO = Path(__file__).resolve().parents[2]
SNAPSHOT = REPO / "snapshots" / "wikidata" / "wikidata-snapshot.nt.gz"
FILES = ("event_classes.jsonl", "concepts.jsonl", "base_kg.jsonl")


class Recording:
    """An engine that keeps every query text it passes on."""

    def __init__(self, engine):
        self.engine, self.endpoint, self.texts = engine, engine.endpoint, []

    def select(self, query):
        self.texts.append(query.text)
        return self.engine.select(query)


@pytest.fixture(scope="module")
def engine():
    return SnapshotEngine(SNAPSHOT)


def offsets(texts):
    return [int(m.group(1)) for t in texts for m in [re.search(r"OFFSET (\d+)", t)] if m]


@pytest.fixture(scope="module")
def causes(engine):
    rows = select_all(engine, lambda limit, offset: Q.instances_of("Q198", limit, offset), 1000)
    return [Q.qid_of(r["item"]["value"]) for r in rows][:60]


CASES = {
    "instances": ("item", True, lambda c: lambda limit, offset, key: Q.instances_of("Q198", limit, offset, key=key)),
    "facts": ("cause", False, lambda c: lambda limit, offset, key: Q.causal_facts(c, limit, offset, key=key)),
    "terms": ("item", False, lambda c: lambda limit, offset, key: Q.entity_terms(
        c, ["en"], "https://en.wikipedia.org/", limit, offset, key=key)),
}


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("page", [1, 2, 3, 7, 50, 5000])
def test_keyset_pages_give_the_offset_rows_in_order(engine, causes, name, page):
    var, unique, make = CASES[name]
    build = make(causes)
    whole = select_all(engine, lambda limit, offset: build(limit, offset, None), 100000)
    assert len(whole) > 7  # something to page through
    rec = Recording(engine)
    got = select_keyset(rec, build, var, page, unique=unique)
    assert got == whole
    by_offset = Recording(engine)
    assert select_all(by_offset, lambda limit, offset: build(limit, offset, None), page) == whole
    # No keyset page skips rows by OFFSET except inside one key that fills a page by itself.
    for text in rec.texts:
        if "OFFSET 0" not in text:
            assert re.search(r'FILTER\(STR\(\?\w+\) = "', text), text
    if page == 1 and not unique:  # a key with two rows fills a page of one: paged on its own
        assert any(re.search(r'FILTER\(STR\(\?\w+\) = "', t) for t in rec.texts)
    if page < len(whole):
        assert max(offsets(by_offset.texts)) >= len(whole) - page  # OFFSET paging goes deep ...
        assert max(offsets(rec.texts)) < len(whole) // 2 or page == 1  # ... keyset paging does not


def test_key_rejects_what_is_not_an_iri_or_an_operator():
    with pytest.raises(ValueError):
        Q.Key("item", ">", 'x" ) } #')
    with pytest.raises(ValueError):
        Q.Key("item", "<", "http://www.wikidata.org/entity/Q1")
    with pytest.raises(ValueError):
        Q.Key("item) } #", ">", "http://www.wikidata.org/entity/Q1")
    text = Q.instances_of("Q198", 10, 0, key=Q.Key("item", ">", "http://www.wikidata.org/entity/Q5")).text
    assert 'FILTER(STR(?item) > "http://www.wikidata.org/entity/Q5")' in text


def test_build_is_the_same_with_keyset_and_offset_paging(tmp_path):
    out = {}
    for paging in ("keyset", "offset"):
        cfg = load_config(search_cwd=False, overrides={
            "paths.data": str(tmp_path / paging / "data"), "paths.cache": str(tmp_path / paging / "cache"),
            "wikidata.snapshot": str(SNAPSHOT), "wikidata.page_size": 3, "wikidata.values_batch": 25,
            "wikidata.paging": paging})
        build_wikidata(cfg, source="snapshot")
        out[paging] = {f: (tmp_path / paging / "data" / "wikidata" / f).read_bytes() for f in FILES}
    assert out["keyset"] == out["offset"]
    assert out["keyset"]["base_kg.jsonl"].count(b"\n") == 50
