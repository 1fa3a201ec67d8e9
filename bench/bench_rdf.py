"""Benchmark: the KG's RDF writer (``kg.rdf.write_rdf``: Turtle and N-Triples chunks) against
rdflib's own serialisers on the same triples, same run, same bytes.

Input (no ../shared): the linked mentions of the KG test fixtures (tests/fixtures/kg: real
WikiCausal sentences, one with quotes, a newline and Japanese), copied ``BENCH_RDF_COPIES``
times (default 400) into distinct mentions (new ids and documents), aggregated into edges
as ``kg assemble`` does. Both rows build the same triples (``kg_blocks``) and write the same
files; the baseline renders every batch with rdflib's Turtle and N-Triples serialisers (what
``write_rdf`` did before its own writer), ours with ``_BatchWriter``. The table's items are
triples; the files of the two rows are compared byte for byte. Building the triples (rdflib
terms) is part of both rows' time.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from unittest import mock

from bench import ThroughputTable, timed
from causalkg.core.contracts import KGMention
from causalkg.core.jsonl import read_jsonl
from causalkg.kg import rdf
from causalkg.kg.aggregate import aggregate
from causalkg.kg.inputs import load_concepts

FIX = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "kg"


def _mentions(copies: int) -> list[KGMention]:
    base = list(read_jsonl(FIX / "linked.jsonl", KGMention)) + list(read_jsonl(FIX / "tricky.jsonl", KGMention))
    out = []
    for i in range(copies):
        for m in base:
            out.append(m.model_copy(update={
                "doc_id": f"gen-{i}-{m.doc_id}",
                "mention_id": rdf.mention_id_for(f"gen-{i}-{m.doc_id}", m.sentence.start, (m.cause.start, m.cause.end),
                                                 (m.effect.start, m.effect.end), m.extractor),
            }))
    return out


def _write(edges, concepts, out: Path) -> rdf.RdfFiles:
    return rdf.write_rdf(rdf.kg_blocks(edges, concepts, rdf.RdfOptions()), turtle=out / "kg.ttl", nt_dir=out / "nt")


def main() -> None:
    copies = int(os.environ.get("BENCH_RDF_COPIES", "400"))
    concepts = load_concepts(FIX / "concepts.jsonl")
    mentions = _mentions(copies)
    edges = aggregate(mentions, concepts)
    with tempfile.TemporaryDirectory() as tmp:
        base_dir, ours_dir = Path(tmp) / "rdflib", Path(tmp) / "ours"
        with mock.patch.object(rdf, "_render_batch", rdf._rdflib_batch), timed() as t:
            base = _write(edges, concepts, base_dir)
        table = ThroughputTable(f"KG RDF writing: {len(mentions):,} mentions in {len(edges)} edges "
                                f"({copies} copies of the fixture KG's), Turtle + N-Triples", unit="triples")
        table.add("rdflib serialisers (the writer before)", base.triples, t.seconds, baseline=True, same_bytes="(reference)")
        with timed() as t:
            ours = _write(edges, concepts, ours_dir)
        same = all((base_dir / p.relative_to(ours_dir)).read_bytes() == p.read_bytes()
                   for p in [ours.turtle, *ours.ntriples])
        table.add("kg.rdf.write_rdf (its own writer)", ours.triples, t.seconds,
                  same_bytes="yes" if same and len(ours.ntriples) == len(base.ntriples) else "NO")
        table.print()
        if not same:
            raise SystemExit("the writer's files differ from rdflib's")


if __name__ == "__main__":
    main()
