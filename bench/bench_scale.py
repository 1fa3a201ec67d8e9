"""Benchmark skeleton of issue 14's `bench scale`: the stages at growing N on a generated world,
and the Ray engine's overhead against the local one on the same cores.

For each N (event documents; 2 other pages per event) a world is generated
(``causalkg.testing.world``) in a temporary folder and the stages run as `causalkg` commands in
child processes, each measured on its own process tree (``os.wait4``):

- ``world``: generating the dump, index and Wikidata N-Triples;
- ``wikidata``: `corpus build --only wikidata` from the world's N-Triples in the embedded store;
- ``wikipedia``: `corpus build --only wikipedia` (multistream index, process pool);
- ``extract``: `kg extract` with the **patterns** extractor behind the default learned gate (the
  gate of ``models/causal-gate``, trained first when missing; QA's rate is measured by
  `bench extract` and `bench quality`), shards of 10 documents.

Printed per stage and N: wall time, CPU time (user + system of the process tree, Ray's own
daemons excepted), items/s (items: pages for world and wikipedia, documents for extract, items
for wikidata), peak RSS of the largest process, and the slope of wall time against N between the
two largest sizes (the exponent b of time ~ N^b: 1.0 is linear). Then extraction at the middle N
with `--engine ray` on a local 2-CPU cluster, run under `unshare --net` (loopback only, as the
tests do) beside the local engine: the Ray overhead. Sizes are small (this is a 2-core shared
machine); the issue's N = 1,000 / 10,000 / 68,391 are for a dedicated machine:
`CAUSALKG_SCALE_SIZES=1000,10000 python -m bench scale`.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SIZES = tuple(int(x) for x in os.environ.get("CAUSALKG_SCALE_SIZES", "20,40,80").split(","))
REPO = Path(__file__).resolve().parents[1]
CK = [str(Path(sys.executable).with_name("causalkg"))]
CWD = [Path(tempfile.gettempdir())]
GATE = REPO / "models" / "causal-gate"  # the learned gate of `make kg` (trained first when missing)


def measured(cmd: list[str], env: dict | None = None, cwd: Path | None = None) -> dict:
    """Run ``cmd``; its wall time, CPU time and peak RSS (its process tree, as reaped)."""
    t0 = time.perf_counter()
    # cwd: the benchmark's tmp folder, so no relative default can land in the repository's data/
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, cwd=cwd or CWD[0])
    out = proc.stdout.read()
    _, status, ru = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:6])} ... failed ({proc.returncode}):\n{out.decode()[-3000:]}")
    return {"wall": wall, "cpu": ru.ru_utime + ru.ru_stime, "rss_mb": ru.ru_maxrss / 1024, "out": out.decode()}


def sets(info: dict, data: Path) -> list[str]:
    out = []
    for s in [*info["set"], f"paths.data={data}", f"paths.cache={data / 'cache'}", "run.workers=2",
              "run.progress=never", "extract.extractor=patterns", "extract.shard_size=10",
              f"extract.gate_model={GATE}",
              f"extract.input={data / 'corpus' / 'corpus.jsonl'}", f"extract.output={data / 'kg' / 'extractions.jsonl'}"]:
        out += ["--set", s]
    return out


def stages(n: int, tmp: Path) -> tuple[dict, dict]:
    world = tmp / f"world-{n}"
    res = {"world": measured([sys.executable, str(REPO / "scripts" / "make_world.py"), str(world), "--events", str(n),
                              "--others", str(2 * n)])}
    info = json.loads((world / "world.json").read_text())
    data = tmp / f"data-{n}"
    common = sets(info, data)
    res["wikidata"] = measured(CK + ["corpus", "build", "--only", "wikidata", "--source", "snapshot", *common])
    res["wikipedia"] = measured(CK + ["corpus", "build", "--only", "wikipedia", *common])
    res["extract"] = measured(CK + ["kg", "extract", *common])
    items = {"world": info["pages"], "wikidata": n, "wikipedia": info["pages"], "extract": n}
    return res, {"info": info, "common": common, "data": data, "items": items}


def ray_overhead(ctx: dict, tmp: Path) -> str:
    if shutil.which("unshare") is None:
        return "Ray engine not measured: unshare is not available (the cluster must run loopback-only)"
    try:
        import ray  # noqa: F401
    except ImportError:
        return "Ray engine not measured: the ray extra is not installed"
    common = ctx["common"]
    rows = []
    for engine in ("local", "ray"):
        out = ctx["data"] / "kg" / f"extractions-{engine}.jsonl"
        args = CK + ["kg", "extract", "--engine", engine, *common, "--set", f"extract.output={out}",
                     "--set", f"run.ray_temp_dir={tmp / 'r'}"]
        cmd = ["unshare", "--net", "sh", "-c", "ip link set lo up && exec " + " ".join(map(_q, args))]
        env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
        try:
            r = measured(cmd, env)
        except RuntimeError as exc:
            return f"Ray engine not measured: {str(exc).splitlines()[0]}"
        rows.append((engine, r, out.read_bytes()))
    (le, lr, lb), (re_, rr, rb) = rows
    same = "same bytes" if lb == rb else "OUTPUTS DIFFER"
    return (f"extract at N={ctx['items']['extract']} on 2 CPUs: local {lr['wall']:.1f} s wall, "
            f"ray {rr['wall']:.1f} s wall ({rr['wall'] / lr['wall']:.2f}x, +{rr['wall'] - lr['wall']:.1f} s: "
            f"cluster start, actors loading the segmenter, task round trips); {same}")


def _q(s: str) -> str:
    return "'" + s.replace("'", "'\\''") + "'"


def ensure_gate() -> None:
    """The default gate is learned: extraction needs the gate model `make kg` trains."""
    from causalkg.config import load_config
    from causalkg.kg.gate import train_gate

    res = train_gate(load_config(search_cwd=False), output=GATE, if_missing=True)
    if not res.skipped:
        print(f"(trained the sentence gate in {res.seconds:.0f} s)\n")


def main() -> None:
    ensure_gate()
    print(f"sizes N = {', '.join(map(str, SIZES))} event documents (+2 other pages each); 2 workers; "
          "extraction with the patterns extractor\n")
    header = f"{'stage':<10} {'N':>6} {'wall s':>8} {'CPU s':>8} {'items/s':>9} {'peak RSS MB':>11}"
    print(header)
    print("-" * len(header))
    results: dict[int, dict] = {}
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as d:
        tmp = Path(d)
        CWD[0] = tmp
        ctxs = {}
        for n in SIZES:
            res, ctx = stages(n, tmp)
            results[n], ctxs[n] = res, ctx
            for stage, r in res.items():
                rate = ctx["items"][stage] / r["wall"] if r["wall"] else float("nan")
                print(f"{stage:<10} {n:>6} {r['wall']:>8.1f} {r['cpu']:>8.1f} {rate:>9.1f} {r['rss_mb']:>11.0f}",
                      flush=True)
        if len(SIZES) >= 2:
            a, b = SIZES[-2], SIZES[-1]
            print(f"\nslope of wall time against N between N={a} and N={b} (exponent b of time ~ N^b; 1 = linear):")
            for stage in results[a]:
                ta, tb = results[a][stage]["wall"], results[b][stage]["wall"]
                print(f"  {stage:<10} {math.log(tb / ta) / math.log(b / a):.2f}  "
                      f"({(tb - ta) / (b - a) * 1000:.0f} ms per extra document)")
        mid = SIZES[len(SIZES) // 2]
        print("\n" + ray_overhead(ctxs[mid], tmp))
    print("\nbaseline: the local engine (run.engine = local); at these sizes the fixed costs (interpreter, spaCy, "
          "store load, the gate's model) are a large share, so the slopes are noisy estimates.")


if __name__ == "__main__":
    main()
