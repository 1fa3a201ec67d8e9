"""The edges page (``/edges``) on a KG scaled up from the fixture, beside SQLite doing the same.

    python -m bench edges_page            # 20,000 edges
    python bench/bench_edges_page.py 100000

The fixture KG of ``tests/fixtures/kg`` (13 real edges) is assembled once, then copied with new
QIDs (invented, for scale only) until it has N edges. Timed, on the same edges in one process:

- ``causalkg``: ``edgetable.edge_table`` (the function behind ``/edges``): the first request of a
  KG reading (which builds and caches the rows), then a cached request with every facet's
  counts, a filter, a search over the evidence sentences and a sort;
- ``sqlite``: the peer Datasette is built on: the same rows in an in-memory SQLite table
  (loading it is timed as the first request), then the same filter, search (``LIKE`` over the
  evidence text) and sort, with one ``GROUP BY`` per facet for the counts.

Prints a table: request, edges, seconds, edges/s, ratio (SQLite's time over ours).
"""

from __future__ import annotations

import json
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

from causalkg.core.tables import render_table

REPO = Path(__file__).resolve().parents[1]


def scaled_edges(n: int) -> list:
    """The fixture KG's edges, copied with shifted QIDs until there are ``n``."""
    sys.path.insert(0, str(REPO))
    from tests.web.kgfixture import build_project
    from causalkg.core.contracts import KGEdge
    from causalkg.core.jsonl import read_jsonl

    with tempfile.TemporaryDirectory() as tmp:
        cfg = build_project(Path(tmp), export=False)
        base = [e.model_dump(mode="json") for e in read_jsonl(cfg.path("paths.data") / "kg" / "causal_kg_pairs.jsonl", KGEdge)]
    out = []
    copy = 0
    while len(out) < n:
        shift = 10_000_000 * copy

        def q(qid: str) -> str:
            return f"Q{int(qid[1:]) + shift}"

        for e in base:
            if len(out) >= n:
                break
            d = json.loads(json.dumps(e))
            for end in ("cause", "effect"):
                d[end]["id"] = [q(d[end]["id"][0])]
            d["edge_id"] = f"{d['cause']['id'][0]}_{d['effect']['id'][0]}"
            d["examples"] = []
            d["lifted_to"] = []
            for m in d["mentions"]:
                m["cause"]["qid"], m["effect"]["qid"] = d["cause"]["id"][0], d["effect"]["id"][0]
            out.append(KGEdge.model_validate(d))
        copy += 1
    return out


def main(argv: list[str] | None = None) -> None:
    from causalkg.web.edgetable import EdgeQuery, edge_table
    from causalkg.web.kgview import KGView

    argv = sys.argv[1:] if argv is None else argv
    sizes = [int(a) for a in argv if a.isdigit()]  # run through python -m bench, argv holds the name
    n = sizes[0] if sizes else 20_000
    edges = scaled_edges(n)
    view = KGView(edges, {}, set())
    ask = EdgeQuery.from_params({"level": ["class"], "q": ["tsunami"], "sort": ["-confidence"]})

    t0 = time.perf_counter()
    first = edge_table(view, EdgeQuery())
    t_first = time.perf_counter() - t0
    t0 = time.perf_counter()
    ours = edge_table(view, ask)
    t_ours = time.perf_counter() - t0

    t0 = time.perf_counter()
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE edges (edge_id TEXT, cause TEXT, effect TEXT, level TEXT, sentences INT, "
               "confidence REAL, extractor TEXT, evidence TEXT)")
    db.executemany("INSERT INTO edges VALUES (?,?,?,?,?,?,?,?)", [
        (e.edge_id, e.cause.label, e.effect.label, e.level, e.support.sentences, e.confidence,
         ";".join(sorted({m.extractor for m in e.mentions})), "\n".join(m.sentence.text for m in e.mentions))
        for e in edges])
    db.commit()
    t_load = time.perf_counter() - t0
    t0 = time.perf_counter()
    where = "level = 'class' AND evidence LIKE '%tsunami%'"
    rows = db.execute(f"SELECT edge_id FROM edges WHERE {where} ORDER BY confidence DESC LIMIT 50").fetchall()
    total = db.execute(f"SELECT count(*) FROM edges WHERE {where}").fetchone()[0]
    for col in ("level", "extractor", "sentences", "CAST(confidence * 10 AS INT)"):
        db.execute(f"SELECT {col}, count(*) FROM edges WHERE {where} GROUP BY 1").fetchall()
    t_sql = time.perf_counter() - t0
    if total != ours.total or len(rows) != len(ours.rows):
        print(f"note: the two disagree ({total} vs {ours.total} rows)")

    table = [
        {"request": "first (build rows / load table)", "edges": n, "causalkg s": round(t_first, 3),
         "sqlite s": round(t_load, 3), "causalkg edges/s": int(n / t_first), "ratio": round(t_load / t_first, 2)},
        {"request": "filter + search + sort + facets", "edges": n, "causalkg s": round(t_ours, 3),
         "sqlite s": round(t_sql, 3), "causalkg edges/s": int(n / t_ours), "ratio": round(t_sql / t_ours, 2)},
    ]
    print(render_table(table))
    print(f"\nmatching rows: {ours.total} of {first.total}; ratio = SQLite's seconds / ours")


if __name__ == "__main__":
    main()
