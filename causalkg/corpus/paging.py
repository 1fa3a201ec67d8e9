"""Paging a SPARQL query by key instead of by OFFSET.

The public Wikidata Query Service answers ``ORDER BY ... LIMIT n OFFSET k`` by producing and
sorting the first ``k + n`` rows, so the cost of a page grows with its number and deep pages of
a large class (crime, death, protest, war: tens of thousands of instances) time out. Paging by
key asks instead for "the next ``n`` rows after the last key seen":

    ... FILTER(STR(?item) > "http://www.wikidata.org/entity/Q1234") } ORDER BY ?item LIMIT n

so every page costs what the first one does. ``select_keyset`` does that for any query of
``corpus.queries`` (they all order by an IRI key first and take a ``key`` condition):

- a short page ends the query;
- a full page whose key is unique per row (``unique=True``: ``DISTINCT ?item``, one group per
  ``?class``) continues after its last key;
- otherwise the last key's rows may go on in the next page: the page's rows with that key are
  dropped and the next page starts *at* that key (``>=``), so rows arrive in exactly the order
  OFFSET paging gives them;
- one key with more rows than a page (a cause with thousands of effects) is paged on its own by
  OFFSET within that key (``= key``): its cost grows with that key's rows only.

Rows are returned in the query's ORDER BY order, deduplicated, identical to
``corpus.sparql.select_all`` on a stable result. Flow: ``corpus.wikidata`` calls it for every
paged query when ``wikidata.paging = "keyset"`` (the default).
"""

from __future__ import annotations

import json
from typing import Any, Callable

from causalkg.corpus.queries import Key, Query
from causalkg.corpus.sparql import Engine

# build(limit, offset, key) -> the page's query
PageBuilder = Callable[[int, int, "Key | None"], Query]


def _key_of(row: dict[str, Any], var: str) -> str:
    term = row.get(var)
    if not isinstance(term, dict) or term.get("type") != "uri":
        raise ValueError(f"keyset paging needs ?{var} bound to an IRI in every row, got {term!r}")
    return term["value"]


def select_keyset(engine: Engine, build: PageBuilder, var: str, page_size: int, *,
                  unique: bool = False) -> list[dict[str, Any]]:
    """All rows of a query whose ORDER BY starts with IRI variable ``var``, paged by key.
    ``unique``: each key has at most one row (no page boundary can split a key)."""
    rows: list[dict[str, Any]] = []
    seen: set[str] = set()
    page_size = max(1, int(page_size))

    def add(batch: list[dict[str, Any]]) -> None:
        for row in batch:
            k = json.dumps(row, sort_keys=True)
            if k not in seen:
                seen.add(k)
                rows.append(row)

    cursor: Key | None = None
    while True:
        bindings = engine.select(build(page_size, 0, cursor))["results"]["bindings"]
        if len(bindings) < page_size:
            add(bindings)
            return rows
        last = _key_of(bindings[-1], var)
        if unique:
            add(bindings)
            cursor = Key(var, ">", last)
            continue
        head = [r for r in bindings if _key_of(r, var) != last]
        if head:
            add(head)
            cursor = Key(var, ">=", last)
            continue
        # One key fills a whole page: page that key alone by OFFSET, then go on after it.
        offset = 0
        while True:
            page = engine.select(build(page_size, offset, Key(var, "=", last)))["results"]["bindings"]
            add(page)
            if len(page) < page_size:
                break
            offset += page_size
        cursor = Key(var, ">", last)
