"""A consistent world of any size, made from the bundled real data: a Wikipedia dump and the
matching Wikidata, for benchmarks and tests at scale.

``make_world(out, events=N, others=M)`` writes into ``out`` (a folder the caller names; never
the repository's data):

- ``enwiki-world-pages-articles-multistream.xml.bz2`` and ``...-multistream-index.txt.bz2``: a
  real-format multistream dump (the snapshot's ``<siteinfo>`` header, streams of 100 pages,
  ``offset:page_id:title`` index) holding N event articles among M other pages, in a seeded
  shuffled order. Texts are the bundled snapshot's real pages, cycled: event articles from its
  WEC event pages, other pages from its 2016 articles. Every title gets the suffix
  ``(generated world N)`` and every page / revision id is renumbered from 2,000,000,000 up
  (above any id enwiki has issued), so nothing generated passes for a real page.
- ``wikidata-world.nt.gz``: N-Triples in the Wikidata RDF vocabulary, loadable by the embedded
  store (``wikidata.snapshot``) and by ``causalkg.testing.wdqs_server``: every class of the
  bundled snapshot with its label, aliases and class-level causal statements, and N instances
  of the seed classes made by cycling the snapshot's instances that have causal statements
  (each keeps its class, its label marked ``(generated N)``, an alias, an English Wikipedia
  sitelink to the N-th event article's title, and copies of its causal statements with
  generated effect items of the same classes), so the Base KG's spread of statements over
  classes is the snapshot's, N times over. Item ids are Q1000000000 and up.
- ``world.json``: what was made (counts, seed) and the ``--set`` overrides that point
  ``causalkg corpus build`` at it.

Memory stays bounded in N: pages and triples are streamed to disk (the shuffled page order is
one small tuple per page).

    python scripts/make_world.py OUT --events 1000 --others 4000
"""

from __future__ import annotations

import argparse
import bz2
import gzip
import html
import json
import random
import re
import sys
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import pyoxigraph as ox

from causalkg.core.config import load_config
from causalkg.corpus.dump import cut_pages, peek_header, read_header, write_multistream
from causalkg.corpus.queries import ENTITY_PREFIX, qid_of

REPO = Path(__file__).resolve().parents[2]
SNAPSHOT_DUMP = REPO / "snapshots" / "enwiki" / "enwiki-snapshot-pages-articles-multistream.xml.bz2"
SNAPSHOT_WIKIDATA = REPO / "snapshots" / "wikidata" / "wikidata-snapshot.nt.gz"
DUMP_NAME = "enwiki-world-pages-articles-multistream.xml.bz2"
INDEX_NAME = "enwiki-world-pages-articles-multistream-index.txt.bz2"
WIKIDATA_NAME = "wikidata-world.nt.gz"

FIRST_GENERATED_QID = 1_000_000_000
FIRST_EFFECT_QID = 1_500_000_000
FIRST_PAGE_ID = 2_000_000_000
FIRST_REVISION_ID = 4_000_000_000
WEC_FIRST_PAGE_ID = 1_000_000_001  # the snapshot's WEC event pages (snapshots/enwiki/SOURCE.md)

WDT = "http://www.wikidata.org/prop/direct/"
P31 = ox.NamedNode(WDT + "P31")
P1542 = ox.NamedNode(WDT + "P1542")
LABEL = ox.NamedNode("http://www.w3.org/2000/01/rdf-schema#label")
ALT = ox.NamedNode("http://www.w3.org/2004/02/skos/core#altLabel")
ABOUT = ox.NamedNode("http://schema.org/about")
PART_OF = ox.NamedNode("http://schema.org/isPartOf")
NAME = ox.NamedNode("http://schema.org/name")
ENWIKI = ox.NamedNode("https://en.wikipedia.org/")


def suffix(n: int) -> str:
    return f" (generated world {n})"


def _wd(number: int) -> ox.NamedNode:
    return ox.NamedNode(f"{ENTITY_PREFIX}Q{number}")


def _line(s: Any, p: Any, o: Any) -> bytes:
    return f"{s} {p} {o} .\n".encode("utf-8")


# --- pages -----------------------------------------------------------------------------------


def _pages(dump: Path) -> tuple[bytes, list[bytes], list[bytes]]:
    """The dump's header, its event pages (WEC) and its other articles (ns 0, no redirects)."""
    data = bz2.open(dump).read()
    pages, _ = cut_pages(data)
    events, others = [], []
    for chunk in pages:
        h = peek_header(chunk)
        if h.ns != 0 or h.redirect is not None:
            continue
        (events if h.page_id >= WEC_FIRST_PAGE_ID else others).append(chunk)
    return read_header(dump), events, others


_TITLE = re.compile(rb"<title>(.*?)</title>", re.S)
_ID = re.compile(rb"<id>\s*\d+\s*</id>")


def rename_page(chunk: bytes, title: str, page_id: int, revision_id: int) -> bytes:
    """``chunk`` with a new title, page id and revision id (the text is untouched)."""
    chunk = _TITLE.sub(b"<title>" + html.escape(title, quote=False).encode("utf-8") + b"</title>", chunk, count=1)
    m = _ID.search(chunk)
    chunk = chunk[: m.start()] + f"<id>{page_id}</id>".encode() + chunk[m.end():]
    rev = chunk.find(b"<revision>")
    if rev >= 0:
        m = _ID.search(chunk, rev)
        if m:
            chunk = chunk[: m.start()] + f"<id>{revision_id}</id>".encode() + chunk[m.end():]
    return chunk


def event_title(events: list[bytes], i: int) -> str:
    return peek_header(events[i % len(events)]).title + suffix(i)


# --- Wikidata --------------------------------------------------------------------------------


@dataclass
class _Template:
    item: str                          # the snapshot instance copied
    classes: list[ox.NamedNode]        # its P31 classes
    label: str
    effects: list[tuple[list[ox.NamedNode], str]]  # (P31 classes, label) of each effect


def _wikidata_templates(path: Path, seeds: set[str]) -> tuple[list[ox.Triple], list[_Template]]:
    """The class triples to keep as they are, and the seed-class instances with causal
    statements to cycle (in QID order)."""
    with gzip.open(path, "rb") as fh:
        triples = list(ox.parse(fh, format=ox.RdfFormat.N_TRIPLES))
    p31: dict[str, list[ox.NamedNode]] = {}
    labels: dict[str, str] = {}
    effects: dict[str, list[str]] = {}
    for t in triples:
        s = t.subject.value
        if t.predicate == P31:
            p31.setdefault(s, []).append(t.object)
        elif t.predicate == LABEL:
            labels[s] = t.object.value
        elif t.predicate == P1542:
            effects.setdefault(s, []).append(t.object.value)
    classes = {o.value for objs in p31.values() for o in objs} | {ENTITY_PREFIX + q for q in seeds}
    keep = [t for t in triples if t.subject.value in classes and t.predicate in (LABEL, ALT, P1542)]
    templates = []
    for item in sorted(effects, key=lambda iri: int((qid_of(iri) or "Q0")[1:])):
        if item in classes or not any((qid_of(c.value) or "") in seeds for c in p31.get(item, [])):
            continue
        templates.append(_Template(
            item=item, classes=sorted(p31[item], key=str), label=labels.get(item, qid_of(item) or item),
            effects=[(sorted(p31.get(y, []), key=str), labels.get(y, qid_of(y) or y)) for y in sorted(effects[item])],
        ))
    return keep, templates


def _world_triples(keep: list[ox.Triple], templates: list[_Template], n: int, events: list[bytes]) -> Iterator[bytes]:
    for t in keep:
        yield _line(t.subject, t.predicate, t.object)
    effect_number = FIRST_EFFECT_QID
    for i in range(n):
        tpl = templates[i % len(templates)]
        x = _wd(FIRST_GENERATED_QID + i)
        yield _line(x, LABEL, ox.Literal(tpl.label + suffix(i), language="en"))
        yield _line(x, ALT, ox.Literal(f"generated event {i}", language="en"))
        for c in tpl.classes:
            yield _line(x, P31, c)
        title = event_title(events, i)
        article = ox.NamedNode("https://en.wikipedia.org/wiki/" + urllib.parse.quote(title.replace(" ", "_"), safe="()_,'-"))
        yield _line(article, ABOUT, x)
        yield _line(article, PART_OF, ENWIKI)
        yield _line(article, NAME, ox.Literal(title, language="en"))
        for classes, label in tpl.effects:
            y = _wd(effect_number)
            effect_number += 1
            yield _line(x, P1542, y)
            yield _line(y, LABEL, ox.Literal(label + suffix(i), language="en"))
            for c in classes:
                yield _line(y, P31, c)


# --- the world -------------------------------------------------------------------------------


def make_world(out: str | Path, *, events: int, others: int | None = None, seed: int = 0,
               dump: Path = SNAPSHOT_DUMP, wikidata: Path = SNAPSHOT_WIKIDATA,
               wikidata_only: bool = False) -> dict[str, Any]:
    """Write a world of ``events`` event articles among ``others`` other pages (default 4 per
    event) into ``out``; return what ``world.json`` says. ``wikidata_only``: write the
    N-Triples only (no dump), for benchmarks of the Wikidata side."""
    out = Path(out)
    for bad in (REPO / "data", REPO / "snapshots"):
        if out.resolve() == bad.resolve() or bad.resolve() in out.resolve().parents:
            raise ValueError(f"refusing to write a generated world into {out} (the repository's {bad.name}/)")
    out.mkdir(parents=True, exist_ok=True)
    events, others = int(events), int(4 * events if others is None else others)
    if events < 1 or others < 0:
        raise ValueError("events must be at least 1 and others at least 0")
    header, event_pages, other_pages = _pages(Path(dump))
    seeds = set(load_config(search_cwd=False)["wikidata"]["seed_classes"])
    keep, templates = _wikidata_templates(Path(wikidata), seeds)
    random.Random(seed).shuffle(templates)  # any N draws from every class alike

    order = [(True, i) for i in range(events)] + [(False, j) for j in range(others)]
    random.Random(seed).shuffle(order)

    def pages() -> Iterator[bytes]:
        for position, (is_event, i) in enumerate(order):
            if is_event:
                template = event_pages[i % len(event_pages)]
                title = event_title(event_pages, i)
            else:
                template = other_pages[i % len(other_pages)]
                title = peek_header(template).title + suffix(i)
            yield rename_page(template, title, FIRST_PAGE_ID + position, FIRST_REVISION_ID + position)

    written = 0 if wikidata_only else write_multistream(header, pages(), out / DUMP_NAME, out / INDEX_NAME)
    triples = 0
    with open(out / WIKIDATA_NAME, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as fh:
        for line in _world_triples(keep, templates, events, event_pages):
            fh.write(line)
            triples += 1
    info = {
        "events": events, "others": others, "pages": written, "seed": seed, "triples": triples,
        "event_templates": len(event_pages), "other_templates": len(other_pages),
        "item_templates": len(templates),
        "causal_statements": sum(len(templates[i % len(templates)].effects) for i in range(events)),
        "files": {"dump": DUMP_NAME, "index": INDEX_NAME, "wikidata": WIKIDATA_NAME},
        "set": [f"wikidata.snapshot={out / WIKIDATA_NAME}", f"wikipedia.dump={out / DUMP_NAME}",
                f"wikipedia.index={out / INDEX_NAME}", "wikipedia.select=concepts"],
        "note": "generated from the bundled snapshots: real texts cycled, titles marked '(generated world N)', "
                "page ids from 2000000000, item ids from Q1000000000; not real Wikipedia or Wikidata",
    }
    (out / "world.json").write_text(json.dumps(info, indent=2) + "\n")
    return info


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", help="folder to write the world into (not the repository's data/)")
    ap.add_argument("--events", type=int, required=True, help="event articles (N)")
    ap.add_argument("--others", type=int, default=None, help="other pages (default 4 per event)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--wikidata-only", action="store_true", help="write the N-Triples only, no dump")
    args = ap.parse_args(argv)
    info = make_world(args.out, events=args.events, others=args.others, seed=args.seed,
                      wikidata_only=args.wikidata_only)
    print(json.dumps({k: v for k, v in info.items() if k != "note"}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
