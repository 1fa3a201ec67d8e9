"""Benchmark: live Wikidata paged by OFFSET (the baseline) beside paged by key, same world,
same run, against a loopback endpoint that behaves like the public query service.

World: ``causalkg.testing.world`` at N event items (Wikidata side only), served by
``causalkg.testing.wdqs_server.WDQSServer`` from an Oxigraph store. The server's model of the
public service is scaled down so the run takes a minute or two, not hours: pages of
``PAGE`` rows (the default is 5000 against classes of 100k+), a per-query limit of
``LIMIT_S`` seconds (60 s), ``ROW_COST_S`` seconds per OFFSET row, and ``BUDGET_S`` seconds of
query time per ``WINDOW_S`` seconds (60 s per 60 s); the modelled cost is really waited for.
The client runs the step that pages deep, the instances (P31/P279*) of every seed class
(``corpus.wikidata.instances_of_seeds``, what `corpus build` runs first), with
``wikidata.paging`` = offset, then keyset (a fresh cache each), fewer retries than the default
so a run that cannot finish stops quickly. (The VALUES-batched queries after it page shallowly
either way; tests/corpus/test_world.py runs the whole build through this server.)

Printed per size and mode: requests, server-side cost (sum and largest query), the deepest
OFFSET asked, timeouts, 429s, wall time, and whether the build finished with the same files.
"""

from __future__ import annotations

import gzip
import logging
import tempfile
import time
from pathlib import Path

import pyoxigraph as ox

from causalkg.core.config import load_config
from causalkg.corpus.build import make_client
from causalkg.corpus.wikidata import WikidataSettings, instances_of_seeds
from causalkg.core.errors import CausalKGError
from causalkg.testing.wdqs_server import WDQSServer
from causalkg.testing.world import WIKIDATA_NAME, make_world

SIZES = (2000, 8000, 16000)
PAGE = 100
LIMIT_S = 3.0
ROW_COST_S = 5e-4
BUDGET_S = 10.0
WINDOW_S = 15.0


def load(path: Path) -> ox.Store:
    store = ox.Store()
    with gzip.open(path, "rb") as fh:
        store.bulk_load(input=fh, format=ox.RdfFormat.N_TRIPLES)
    return store


def run(store: ox.Store, tmp: Path, paging: str) -> dict:
    with WDQSServer(store, time_limit_s=LIMIT_S, offset_row_cost_s=ROW_COST_S, budget_s=BUDGET_S,
                    window_s=WINDOW_S) as server:
        cfg = load_config(search_cwd=False, overrides={
            "paths.data": str(tmp / paging / "data"), "paths.cache": str(tmp / paging / "cache"),
            "wikidata.endpoint": server.endpoint, "wikidata.paging": paging, "wikidata.page_size": PAGE,
            "wikidata.timeout": 30.0, "wikidata.max_retries": 3, "wikidata.backoff_base": 0.5,
            "wikidata.backoff_cap": 30.0, "run.progress": "never"})
        settings = WikidataSettings.from_config(cfg)
        client = make_client(cfg)
        t0 = time.perf_counter()
        error, found = None, None
        try:
            found = instances_of_seeds(client, settings)
        except CausalKGError as exc:
            error = str(exc).splitlines()[0][:80]
        finally:
            client.cache.close()
        wall = time.perf_counter() - t0
        out = {"wall_s": wall, "error": error, "found": found, **server.stats.to_dict()}
    return out


def main() -> None:
    logging.getLogger("causalkg").setLevel(logging.ERROR)  # the retries are counted below instead
    print(f"server model (scaled down): page {PAGE} rows, limit {LIMIT_S:g} s/query, {ROW_COST_S * 1e3:g} ms per "
          f"OFFSET row, budget {BUDGET_S:g} s per {WINDOW_S:g} s; client: max_retries 3\n")
    header = (f"{'N':>6} {'paging':>7} {'requests':>8} {'cost s':>7} {'max q s':>7} {'max OFFSET':>10} "
              f"{'timeouts':>8} {'429s':>5} {'wall s':>7}  result")
    print(header)
    print("-" * len(header))
    for n in SIZES:
        with tempfile.TemporaryDirectory(prefix="bench-paging-") as d:
            tmp = Path(d)
            make_world(tmp / "world", events=n, others=0, wikidata_only=True)
            store = load(tmp / "world" / WIKIDATA_NAME)
            results = {mode: run(store, tmp, mode) for mode in ("offset", "keyset")}
        for mode, r in results.items():
            if r["error"]:
                result = f"FAILED: {r['error']}"
            elif mode == "keyset" and results["offset"]["found"] is not None:
                result = "ok, same instances as offset" if r["found"] == results["offset"]["found"] else "ok, DIFFERENT"
            else:
                result = f"ok, {sum(len(v) for v in r['found'].values())} instances"
            print(f"{n:>6} {mode:>7} {r['requests']:>8} {r['cost_s']:>7.1f} {r['max_cost_s']:>7.2f} "
                  f"{r['max_offset']:>10} {r['timeouts']:>8} {r['throttled_429']:>5} {r['wall_s']:>7.1f}  {result}",
                  flush=True)
    print("\nbaseline: offset (LIMIT/OFFSET, as before); ours: keyset (FILTER(STR(?key) > last)).")


if __name__ == "__main__":
    main()
