#!/usr/bin/env python3
"""Rebuild the bundled Wikidata snapshot (snapshots/wikidata/) from the real data it comes from.

Inputs (a folder laid out like the project's shared data folder, default /work/shared/data):
  wikicausal/base-kg-v1.jsonl                  the WikiCausal Base KG v1 (IBM, Apache-2.0; Wikidata CC0)
  wikidata-historic-events/historicEvents.json  Wikidata historic events with enwiki articles (CC0 facts)
  eventkg-wikidata-classes/*.tsv                EventKG's class lists (QID, label), used to cross-check labels

Outputs (in --out, default snapshots/wikidata/):
  wikidata-snapshot.nt.gz          N-Triples in the Wikidata RDF vocabulary, sorted, gzip with mtime 0
                                   (byte-identical on every rebuild)
  historic-events-extract.json     the historic-event rows that contributed sitelinks (so the tests
                                   can rebuild the snapshot without the shared folder)

What goes in, triple by triple, is in corpus/snapshot.py:snapshot_triples and SOURCE.md. Nothing
is invented: every triple is a label, class membership, causal fact or sitelink stated by (or
implied by the construction of) these inputs.

    python scripts/build_wikidata_snapshot.py [--data DIR] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from causalkg.core.jsonl import atomic_write, read_jsonl, write_json  # noqa: E402
from causalkg.corpus.snapshot import serialize_ntriples, snapshot_triples  # noqa: E402


def eventkg_labels(folder: Path) -> dict[str, set[str]]:
    """QID -> the labels EventKG's class lists give it."""
    found: dict[str, set[str]] = {}
    for tsv in sorted(folder.glob("*.tsv")):
        for line in tsv.read_text(encoding="utf-8").splitlines():
            parts = line.split("\t")
            if len(parts) >= 2 and parts[0].startswith("Q"):
                found.setdefault(parts[0], set()).add(parts[1])
    return found


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=Path("/work/shared/data"), help="the shared data folder")
    ap.add_argument("--out", type=Path, default=REPO / "snapshots" / "wikidata")
    args = ap.parse_args(argv)

    base_kg_path = args.data / "wikicausal" / "base-kg-v1.jsonl"
    historic_path = args.data / "wikidata-historic-events" / "historicEvents.json"
    eventkg_dir = args.data / "eventkg-wikidata-classes"

    base_kg = list(read_jsonl(base_kg_path))
    historic = json.loads(historic_path.read_text(encoding="utf-8"))
    triples, stats = snapshot_triples(base_kg, historic)

    used = {s["qid"] for s in stats["sitelinks"]}
    extract = [
        {"event": row["event"], "label": row.get("label", ""), "article": row["article"]}
        for row in historic
        if str(row.get("event", "")).rsplit("/", 1)[-1] in used
    ]
    extract.sort(key=lambda r: int(r["event"].rsplit("/Q", 1)[-1]))

    # EventKG's lists name classes by QID and label: check they agree with the Base KG's labels.
    labels = {}
    for line in base_kg:
        labels[line["event"]["id"]] = line["event"]["label"]
        for c in line["consequences"]:
            labels[c["id"]] = c["label"]
    ekg = eventkg_labels(eventkg_dir) if eventkg_dir.is_dir() else {}
    shared = sorted(set(ekg) & set(labels))
    disagree = [q for q in shared if labels[q] not in ekg[q]]

    args.out.mkdir(parents=True, exist_ok=True)
    with atomic_write(args.out / "wikidata-snapshot.nt.gz", "wb") as fh:
        fh.write(serialize_ntriples(triples))
    write_json(args.out / "historic-events-extract.json", extract)

    size = (args.out / "wikidata-snapshot.nt.gz").stat().st_size
    print(f"wrote {args.out / 'wikidata-snapshot.nt.gz'}: {stats['triples']} triples, {size} bytes")
    for key in ("items", "class_pairs", "instance_pairs", "class_level_statements", "aliases", "enwiki_sitelinks"):
        print(f"  {key}: {stats.get(key, 0)}")
    for s in stats["sitelinks"]:
        note = "" if s["historic_events_label"] == s["base_kg_label"] else f"  (historic events label: {s['historic_events_label']!r})"
        print(f"  sitelink {s['qid']}: {s['title']}{note}")
    print(f"  EventKG classes also in the Base KG: {len(shared)}, labels agreeing: {len(shared) - len(disagree)}")
    for q in disagree:
        print(f"  EventKG label differs for {q}: {sorted(ekg[q])} vs {labels[q]!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
