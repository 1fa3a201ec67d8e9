"""The ``/sparql`` endpoint's cost per query: a fresh child process per query (the old way)
beside a warm worker reused across queries (``WorkerPool``), on the same store in one run.

    python -m bench sparql            # 10 queries of each kind, each way
    python bench/bench_sparql.py 50

The fixture KG of ``tests/fixtures/kg`` (13 real edges) is assembled and exported into a real
Oxigraph store in a temporary folder. Timed, each ``N`` times through ``run_query`` (what
``/sparql`` calls; the time limit stays a killed child process in both): a trivial ASK, and a
SELECT of the effects of earthquake with their labels; then the same queries as HTTP requests
to ``/sparql`` of the application (Starlette's TestClient, in process: negotiation, JSON
writing and the warm worker). The warm pool's first query, which starts its worker, is timed
apart ("warm-up") and not in the per-query figures.

Prints a table: query, way, queries, seconds, median ms, queries/s, ratio (fresh time over warm).
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

from causalkg.core.tables import render_table

REPO = Path(__file__).resolve().parents[1]

QUERIES = {
    "trivial ASK": "ASK { ?s ?p ?o }",
    "SELECT effects": "SELECT ?x ?label WHERE { wd:Q7944 ck:causes ?x . ?x rdfs:label ?label } ORDER BY ?label",
}


def main(argv: list[str] | None = None) -> None:
    sys.path.insert(0, str(REPO))
    from starlette.testclient import TestClient

    from causalkg.kg import rdf
    from causalkg.web.app import create_app
    from causalkg.web.sparql import WorkerPool, run_query
    from tests.web.kgfixture import build_project

    argv = sys.argv[1:] if argv is None else argv
    sizes = [int(a) for a in argv if a.isdigit()]  # run through python -m bench, argv holds the name
    n = sizes[0] if sizes else 10
    with tempfile.TemporaryDirectory() as tmp:
        cfg = build_project(Path(tmp))
        folder = cfg.path("paths.data") / "store"
        graph = cfg["kg"]["graph"]
        pool = WorkerPool()
        app = create_app(cfg, judgements=str(Path(tmp) / "j.jsonl"))
        client = TestClient(app)
        client.get("/sparql", params={"query": "ASK {}"})  # starts the app's worker
        try:
            start = time.perf_counter()
            run_query(folder, "ASK {}", default_graph=graph, timeout=60, cap=10, pool=pool)
            warmup = time.perf_counter() - start
            table = []
            for name, query in QUERIES.items():
                timings = {}
                for way, p in (("fresh process", None), ("warm worker", pool)):
                    times = []
                    for _ in range(n):
                        t = time.perf_counter()
                        res = run_query(folder, query, default_graph=graph, timeout=60, cap=10_000,
                                        prefixes=dict(rdf.PREFIXES), pool=p)
                        times.append(time.perf_counter() - t)
                    assert res.boolean is True or len(res.rows) == 3, res
                    timings[way] = times
                times = []
                for _ in range(n):
                    t = time.perf_counter()
                    r = client.get("/sparql", params={"query": query})
                    times.append(time.perf_counter() - t)
                    assert r.status_code == 200, r.text
                timings["GET /sparql (warm)"] = times
                fresh = sum(timings["fresh process"])
                for way, times in timings.items():
                    total = sum(times)
                    table.append({"query": name, "way": way, "queries": n, "seconds": round(total, 3),
                                  "median ms": round(1000 * statistics.median(times), 1),
                                  "queries/s": round(n / total, 1), "ratio": round(fresh / total, 1)})
        finally:
            pool.close()
            app.state.web.pool.close()
    print(render_table(table, floatfmt=".2f"))
    print(f"\nwarm-up (the pool's first query, starting its worker): {1000 * warmup:.0f} ms; "
          "ratio = the fresh processes' seconds / this way's")


if __name__ == "__main__":
    main()
