"""Issue 14's `bench scale`: the whole job (`make corpus && make kg && make eval`) at growing N
on a generated world, the slope of each stage's time against N, its peak memory, the Ray
engine's overhead against the local one on the same cores, and the cost of the full-size job.

For each N (event documents, among 2N other pages) a world is generated
(``causalkg.testing.world``: real texts cycled, everything generated marked) in a temporary
folder and every stage runs as a `causalkg` command in a child process, measured on its own
process tree (``os.wait4``):

- ``world``: generating the dump, its index and the Wikidata N-Triples (not part of the job);
- ``wikidata``: `corpus build --only wikidata` from the world's N-Triples in the embedded store
  (``wikidata.snapshot_store = "auto"``: in memory up to ``snapshot_disk_mb``, on disk above);
  ``wikidata:memory`` and ``wikidata:disk``: the same with each store pinned, outside the job;
- ``wikipedia``: `corpus build --only wikipedia` (multistream index, process pool);
- ``link``: `link build`, the linker's index over every label and alias of the concepts;
- ``extract``: `kg extract` over **every** document with the patterns extractor behind the cue
  gate: the cheap extraction that gives the downstream stages real input of the full size;
- ``assemble``, ``export``, ``summary``: `kg assemble`, `kg export`, `kg summary` on it;
- ``eval``: `eval report --no-plots` (recall against the world's Base KG and the bundled one);
- ``extract-qa``: the default extraction (the learned gate of ``models/causal-gate``, the QA
  model of ``models/causal-qa``; both trained first when missing) on a **fixed sample** of the
  first ``CAUSALKG_SCALE_SAMPLE`` (100) documents of the corpus; its time is then extrapolated to
  all N documents (``extract-qa (est.)``), since on 2 cores it costs about a second per document:
  the run's fixed part (start, imports, model load: from its manifest) once, the rest per document.
  The world's texts are the 48 WEC event pages cycled, so the sample stands for the corpus.

Printed per stage and N: wall time, CPU time (user + system of the process tree, Ray's own
daemons excepted), items/s (pages for world and wikipedia; items for wikidata; concepts for
link; documents for the extractions and the KG stages), peak RSS of the largest process (at least the bench's own, about 20 MB: a forked child
starts with its parent's high-water mark), the
exponent b of time ~ N^b between the two largest sizes (1.0 is linear) and the ratio of the
measured time to the linear extrapolation from the smaller size (the issue's target: within 1.2
from 10k to 68k). Then extraction at the middle N with ``--engine ray`` on a local 2-CPU
cluster, run under ``unshare --net`` (loopback only, as the tests do), beside the local engine.
Last, the full-size job (68,391 documents) on these 2 cores: each stage's measured time at the
largest N scaled linearly to 68,391 (measured when N = 68,391 ran), extraction from the sample.

The linker's index is the default, ``auto``: ``flat`` below 50,000 concepts and ``ivf`` with
exact search from there (``linking.ivf_nprobe = 0``: the same candidates as ``flat``,
docs/linking.md), the one for large vocabularies: a ``flat`` index makes assembly's linking grow
as N² (each phrase read against every surface form; docs/scale.md). ``CAUSALKG_SCALE_INDEX=flat``
(or ``ivf``) measures one index at every size instead.

Sizes: ``CAUSALKG_SCALE_SIZES`` (default ``100,300``: minutes on 2 cores; the issue's sizes,
``1000,10000,68391``, take hours there). Each row is printed as its stage finishes.
``CAUSALKG_SCALE_JSON=FILE`` also writes every figure as JSON, rewritten after each stage, so a
run that is stopped keeps what it measured (docs/scale.md's tables come from such a file). ``CAUSALKG_SCALE_WORLDS=DIR`` keeps the
generated worlds in DIR and reuses them in later runs (the ``world`` row is then printed only
for a world generated in that run): the 68,391 world takes 13-25 minutes to make.
``CAUSALKG_SCALE_DATA=DIR`` keeps each size's stage outputs in DIR (and its world, unless
``CAUSALKG_SCALE_WORLDS`` names another folder); run again with the same ``CAUSALKG_SCALE_JSON``,
the bench goes on from where it stopped: the stages the JSON holds are not run again (their rows
are marked ``*``), the others run whole (``--force``, not resumed from finished shards; assembly's
row says ``shards_resumed``). Each
sitting records its start and a fixed workload's time (``runs``; each row its ``run``), and each
stage the same workload's time just before and after it (``calibration_s``), since a machine's
speed can differ between sittings and within one: at 68,391 the whole job takes 2-5 hours on 2 cores.
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
from typing import Callable, Mapping

SIZES = tuple(int(x) for x in os.environ.get("CAUSALKG_SCALE_SIZES", "100,300").split(","))
SAMPLE = int(os.environ.get("CAUSALKG_SCALE_SAMPLE", "100"))
INDEX = os.environ.get("CAUSALKG_SCALE_INDEX", "auto")  # the linker's index (linking.index)
FULL = 68_391  # WikiCausal's event articles
REPO = Path(__file__).resolve().parents[1]
CK = [str(Path(sys.executable).with_name("causalkg"))]
CWD = [Path(tempfile.gettempdir())]
GATE = REPO / "models" / "causal-gate"  # the learned gate of `make kg` (trained first when missing)
QA = REPO / "models" / "causal-qa"  # the QA model of `make kg` (trained first when missing)
# CAUSALKG_SCALE_SKIP: stages left out (with the stages that need them), e.g. to measure the
# corpus side alone at the full size: wikipedia,extract,assemble,export,summary,eval,extract-qa
# CAUSALKG_SCALE_WORLDS=DIR: keep the generated worlds in DIR and reuse them in later runs (the
# 68,391 world takes 13-25 minutes to generate, about 3.4 GB); default: a temporary folder each run
WORLDS = Path(os.environ["CAUSALKG_SCALE_WORLDS"]).resolve() if os.environ.get("CAUSALKG_SCALE_WORLDS") else None
# CAUSALKG_SCALE_DATA=DIR: keep each size's stage outputs in DIR/data-N, and with CAUSALKG_SCALE_JSON,
# go on from an earlier run of the same sizes: the stages its JSON holds are not run again (a long
# run on a slow machine can span several sittings; each stage is still measured whole, in one run)
DATA = Path(os.environ["CAUSALKG_SCALE_DATA"]).resolve() if os.environ.get("CAUSALKG_SCALE_DATA") else None
SKIP = frozenset(x for x in os.environ.get("CAUSALKG_SCALE_SKIP", "").split(",") if x)
NEEDS = {"extract": ("wikipedia",), "assemble": ("extract", "link", "wikipedia"), "export": ("assemble", "extract", "wikipedia"),
         "summary": ("assemble", "extract", "wikipedia"), "eval": ("assemble", "extract", "wikipedia")}
JOB = ("wikidata", "wikipedia", "link", "extract-qa (est.)", "assemble", "export", "summary", "eval")


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
              "run.progress=never", f"linking.index={INDEX}", "extract.shard_size=10", f"extract.gate.model={GATE}", f"extract.qa.model={QA}",
              f"extract.input={data / 'corpus' / 'corpus.jsonl'}", f"extract.output={data / 'kg' / 'extractions.jsonl'}"]:
        out += ["--set", s]
    return out


def _lines(path: Path) -> int:
    with path.open("rb") as fh:
        return sum(1 for _ in fh)


def kept_world(folder: Path, n: int) -> bool:
    """Whether ``folder`` holds a finished world of ``n`` event documents among 2n other pages
    (its ``world.json``, written last, says so, and names files that are there)."""
    try:
        info = json.loads((folder / "world.json").read_text())
    except (OSError, ValueError):
        return False
    files = info.get("files") or {}
    return (info.get("events"), info.get("others")) == (n, 2 * n) and bool(files) and all(
        (folder / name).is_file() for name in files.values())


def stages(n: int, tmp: Path, record: Callable[..., None] = lambda *a, **k: None,
           earlier: Mapping[str, dict] | None = None) -> tuple[dict, dict]:
    """Every stage at ``n``; ``record(stage, result, items)`` is called as each one finishes (the
    bench prints its row then and writes its JSON so far, so a long run that is stopped keeps what
    it measured). ``earlier``: the stages at ``n`` an earlier run measured on the kept data
    (``CAUSALKG_SCALE_DATA``), taken as they are; every stage that runs then runs with ``--force``,
    so that one stopped halfway is measured whole, not from its finished shards."""
    res: dict = {}
    earlier = earlier or {}

    counted: dict[Path, int] = {}

    def lines(path: Path) -> int:
        # a file's lines, counted once (read only after the stage that writes it)
        if path not in counted:
            counted[path] = _lines(path) if path.exists() else n
        return counted[path]

    def count(stage: str) -> int:
        # the stage's items: pages, concepts, documents, or the sample's documents
        if stage in ("world", "wikipedia"):
            return info["pages"]
        if stage.startswith("wikidata") or stage == "link":
            return lines(data / "wikidata" / "concepts.jsonl")
        docs = lines(data / "corpus" / "corpus.jsonl")
        return min(SAMPLE, docs) if stage == "extract-qa" else docs

    items: dict[str, int] = {}  # each recorded stage's items

    def done(stage: str, taken: bool = False) -> None:
        items[stage] = count(stage)
        record(stage, res[stage], items[stage], earlier=taken)

    def run(stage: str, cmd: list[str]) -> None:
        if stage in earlier:
            res[stage] = dict(earlier[stage])
            done(stage, taken=True)
            return
        # the fixed workload just before and after: a machine's speed can move within a sitting (stop
        # 38: the patterns extraction took 36.6 ms of CPU per document at 68,391, then 49.1 ms at
        # 10,000, run alone ten minutes later; stop 34 measured 20.2 and 20.5)
        speed = calibrate()
        res[stage] = measured(cmd + (["--force"] if DATA else []))
        res[stage]["calibration_s"] = [speed, calibrate()]
        if stage == "assemble":
            # the share of assembly in its linking (the part on a process pool or Ray actors; the
            # aggregation and the KG files are the driver's), from the manifest's own timings
            manifest = json.loads((data / "kg" / "manifest.json").read_text())
            t = manifest.get("timings_s", {})
            res[stage]["link_share"] = t["link"] / t["total"] if t.get("total") else 0.0
            # 0 with --force (stop 39: before, ``kg assemble --force`` rewrote the KG from the linked
            # shards an earlier run had finished, and a run stopped in the 68,391 assembly went on
            # from 44 of them); the row says it
            res[stage]["shards_resumed"] = manifest.get("linking", {}).get("shards_resumed", 0)
        done(stage)
    # a kept world (CAUSALKG_SCALE_WORLDS, else CAUSALKG_SCALE_DATA beside the data made from it) is
    # generated once, reused by later runs, not timed again
    keep = WORLDS or DATA
    world = (keep or tmp) / f"world-{n}"
    if not (keep and kept_world(world, n)):
        shutil.rmtree(world, ignore_errors=True)
        world.parent.mkdir(parents=True, exist_ok=True)
        res["world"] = measured([sys.executable, str(REPO / "scripts" / "make_world.py"), str(world), "--events", str(n),
                                 "--others", str(2 * n)])
    info = json.loads((world / "world.json").read_text())
    data = (DATA or tmp) / f"data-{n}"
    if "world" in res:
        done("world")
    common = sets(info, data)
    cheap = ["--set", "extract.extractor=patterns", "--set", "extract.gate.kind=cues"]
    steps = [
        ("wikidata", ["corpus", "build", "--only", "wikidata", "--source", "snapshot", *common]),
        ("wikipedia", ["corpus", "build", "--only", "wikipedia", *common]),
        ("link", ["link", "build", *common]),
        ("extract", ["kg", "extract", *common, *cheap]),
        ("assemble", ["kg", "assemble", *common, *cheap]),
        ("export", ["kg", "export", *common]),
        ("summary", ["kg", "summary", *common]),
        ("eval", ["eval", "report", "--no-plots", *common]),
    ]
    for stage, args in steps:
        if stage in SKIP or any(need in SKIP for need in NEEDS.get(stage, ())):
            continue
        run(stage, CK + args)
        if stage == "wikidata":
            # ``auto`` keeps a small world's triples in memory and puts a large one's on disk, so
            # the job's row changes store between sizes: each store is also measured at every
            # size, on its own (a fresh on-disk store each time), to show each one's slope
            for mode in ("memory", "disk"):
                if f"wikidata:{mode}" not in SKIP:
                    side = tmp / f"data-{n}-wikidata-{mode}"
                    run(f"wikidata:{mode}", CK + args + [
                        "--set", f"wikidata.snapshot_store={mode}", "--set", f"paths.data={side}",
                        "--set", f"paths.cache={side / 'cache'}"])
                    shutil.rmtree(side, ignore_errors=True)
    ctx = {"info": info, "common": common, "cheap": cheap, "data": data, "items": items, "docs": n}
    if "wikipedia" in SKIP:
        return res, ctx
    corpus = data / "corpus" / "corpus.jsonl"
    docs = ctx["docs"] = lines(corpus)
    if "extract-qa" in SKIP:
        return res, ctx
    sample = data / "corpus" / "sample.jsonl"
    with corpus.open("rb") as src, sample.open("wb") as dst:
        for i, line in enumerate(src):
            if i >= SAMPLE:
                break
            dst.write(line)
    k = count("extract-qa")
    out = data / "kg" / "sample-qa.jsonl"
    run("extract-qa", CK + ["kg", "extract", *common, "--set", f"extract.input={sample}",
                            "--set", f"extract.output={out}"])
    manifest = json.loads(out.with_name("sample-qa.manifest.json").read_text())
    res["extract-qa (est.)"] = {**sample_estimate(res["extract-qa"], manifest.get("timings_s", {}), k),
                                "rss_mb": res["extract-qa"]["rss_mb"], "estimated": True}
    res["extract-qa (est.)"].update(extrapolate(res["extract-qa (est.)"], docs))
    done("extract-qa (est.)", taken="extract-qa" in earlier)
    return res, ctx


def sample_estimate(run: dict, timings: Mapping[str, float], k: int) -> dict:
    """A sample extraction's time split into what a run costs once and what each document costs.

    Once: the process's start, its imports and the models' load (``timings_s.load`` of the
    extraction's manifest), i.e. the wall time outside the manifest's shard loop (``total`` minus
    ``load``); the CPU time is split in the same proportion. Scaling the whole sample's time by
    N / k would count the model load once per k documents (about a tenth of a 100-document
    bfloat16 sample)."""
    loop = max(0.0, float(timings.get("total", run["wall"])) - float(timings.get("load", 0.0)))
    share = min(1.0, loop / run["wall"]) if run["wall"] > 0 else 1.0
    return {"fixed_wall": run["wall"] * (1 - share), "fixed_cpu": run["cpu"] * (1 - share),
            "doc_wall": run["wall"] * share / k, "doc_cpu": run["cpu"] * share / k}


def extrapolate(est: Mapping[str, float], docs: int) -> dict:
    """Wall and CPU time of an extraction of ``docs`` documents from ``sample_estimate``'s split."""
    return {key: est[f"fixed_{key}"] + est[f"doc_{key}"] * docs for key in ("wall", "cpu")}


def ray_overhead(ctx: dict, tmp: Path) -> dict:
    if shutil.which("unshare") is None:
        return {"note": "Ray engine not measured: unshare is not available (the cluster must run loopback-only)"}
    try:
        import ray  # noqa: F401
    except ImportError:
        return {"note": "Ray engine not measured: the ray extra is not installed"}
    common = ctx["common"] + ctx["cheap"]
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
            return {"note": f"Ray engine not measured: {str(exc).splitlines()[0]}"}
        rows.append((engine, r, out.read_bytes()))
    (_, lr, lb), (_, rr, rb) = rows
    same = "same bytes" if lb == rb else "OUTPUTS DIFFER"
    docs = ctx["docs"]
    return {"docs": docs, "local_wall": lr["wall"], "ray_wall": rr["wall"], "local_cpu": lr["cpu"], "same": lb == rb,
            "note": f"extract (patterns, cue gate) of N={docs} documents on 2 CPUs: local {lr['wall']:.1f} s wall, "
                    f"ray {rr['wall']:.1f} s wall ({rr['wall'] / lr['wall']:.2f}x, "
                    f"{rr['wall'] - lr['wall']:+.1f} s: cluster start, actors loading the segmenter, task round "
                    f"trips); {same}"}


def _q(s: str) -> str:
    return "'" + s.replace("'", "'\\''") + "'"


def ensure_models() -> None:
    """The default extraction needs the gate and QA models `make kg` trains."""
    from bench.bench_extract import ensure_model
    from causalkg.core.config import load_config
    from causalkg.kg.gate import train_gate

    res = train_gate(load_config(search_cwd=False), output=GATE, if_missing=True)
    if not res.skipped:
        print(f"(trained the sentence gate in {res.seconds:.0f} s)\n")
    ensure_model()


def full_size(results: dict[int, dict], ctxs: dict[int, dict]) -> list[dict]:
    """Each stage of the job at 68,391 documents on these 2 cores: measured there, or scaled
    linearly (by documents; by concepts for wikidata and link) from the largest N measured."""
    rows = []
    for stage in JOB:
        have = [m for m in results if stage in results[m]]
        if not have:
            continue
        n = max(have)
        r, ctx = results[n][stage], ctxs[n]
        factor = FULL / n
        how = "measured" if n == FULL else f"linear from N={n:,}"
        if r.get("estimated"):
            how = f"sample of {ctx['items']['extract-qa']} docs, per-document time"
        scaled = extrapolate(r, FULL) if r.get("estimated") else {key: r[key] * factor for key in ("wall", "cpu")}
        rows.append({"stage": stage, "wall_h": scaled["wall"] / 3600, "cpu_h": scaled["cpu"] / 3600,
                     "rss_mb": r["rss_mb"], "how": how, "model_part": r.get("link_share", 1.0)})
    return rows


# The full-size job elsewhere: ESTIMATES from the rates measured here (no GPU machine was lent
# to the run that wrote docs/scale.md; the assumptions are these constants, printed with it).
GPU_NODE_CORES = 16  # the GPU machine of the estimate: 16 cores and 1 GPU (the lent H100 machine's shape)
GPU_SPEEDUP = 50.0  # the model's forward passes on one GPU against this machine's 2 cores (assumed)
MODEL_SHARE = 0.8  # share of extraction / linker time in the model's forward passes (a profile: 491 of 618 s)
CLUSTER_NODES = 10
# A GPU machine's MEASURED extraction rate, seconds per document after the load (``python -m
# bench gpu`` on one, e.g. 0.051 for 8 processes sharing an H100 machine's GPU in bfloat16): set,
# it replaces the estimate in the extraction row (the cluster's nodes each at that rate).
GPU_EXTRACT_DOC_S = float(os.environ.get("CAUSALKG_SCALE_GPU_DOC_S", "0") or 0)
# assemble: its linking (``link_share`` of its time, from its manifest) is a model stage on a
# process pool or Ray actors; the rest (aggregation, the KG files) is serial in the driver
KIND = {"wikidata": "serial", "wikipedia": "parallel", "link": "model", "extract-qa (est.)": "model",
        "assemble": "model + serial", "export": "serial", "summary": "serial", "eval": "serial"}


def elsewhere(rows: list[dict], ray_ratio: float) -> None:
    """Adds the estimated hours on one GPU machine and on a 10-node cluster of them to ``rows``:
    serial stages (one process in the driver) keep their 2-core time; parallel ones (the dump's
    units) divide their CPU time over the cores; model stages run their forward passes on the
    GPUs at GPU_SPEEDUP times this machine's rate and the rest of their CPU time over the cores
    (an actor pool of fractional-GPU actors: ``run.ray_gpus_per_actor = 0.125``); assembly is a
    model stage for its linking's share of the time and serial for the rest. On the cluster,
    parallel and model stages also pay the Ray overhead measured here (``ray_ratio``)."""
    for r in rows:
        for col, nodes, overhead in (("gpu_h", 1, 1.0), ("cluster_h", CLUSTER_NODES, max(1.0, ray_ratio))):
            cores, gpus = GPU_NODE_CORES * nodes, nodes
            kind = KIND.get(r["stage"], "serial")
            if r["stage"] == "extract-qa (est.)" and GPU_EXTRACT_DOC_S > 0:
                r[col] = GPU_EXTRACT_DOC_S * FULL / 3600 / nodes * overhead
            elif kind == "serial":
                r[col] = r["wall_h"]
            elif kind == "parallel":
                r[col] = r["cpu_h"] / cores * overhead
            else:
                part = r.get("model_part", 1.0) if kind == "model + serial" else 1.0
                model = (MODEL_SHARE * r["wall_h"] / (GPU_SPEEDUP * gpus) + (1 - MODEL_SHARE) * r["cpu_h"] / cores) * overhead
                r[col] = part * model + (1 - part) * r["wall_h"]


def earlier_report() -> dict:
    """The report to fill: a new one, or, with ``CAUSALKG_SCALE_DATA`` and an existing
    ``CAUSALKG_SCALE_JSON`` of the same sizes, sample and index, that one (the rows of a size
    whose data folder is gone are dropped: later stages read what earlier ones wrote)."""
    new = {"sizes": list(SIZES), "sample": SAMPLE, "index": INDEX, "stages": {}, "cpus": os.cpu_count(), "runs": []}
    name = os.environ.get("CAUSALKG_SCALE_JSON")
    path = Path(name or "")
    if not (DATA and name and path.is_file()):
        return new
    old = json.loads(path.read_text())
    if [old.get(k) for k in ("sizes", "sample", "index")] != [new[k] for k in ("sizes", "sample", "index")]:
        raise SystemExit(f"{path} holds another run (sizes {old.get('sizes')}, sample {old.get('sample')}, "
                         f"index {old.get('index')}): name another CAUSALKG_SCALE_JSON, or remove it to start over")
    stages = {stage: {int(n): row for n, row in rows.items() if (DATA / f"data-{n}").is_dir()}
              for stage, rows in old.get("stages", {}).items()}
    return {**new, "stages": {k: v for k, v in stages.items() if v}, "runs": old.get("runs", [])}


def calibrate() -> float:
    """Seconds for a fixed CPU workload (pure Python and a little NumPy, one core), best of three:
    the machine's speed at the start of a sitting, and before and after each stage."""
    import numpy as np

    def work() -> float:
        t = time.perf_counter()
        sum(i * i % 7 for i in range(2_000_000))
        a = np.arange(1_000_000, dtype=np.float64)
        for _ in range(20):
            a = np.sqrt(a * a + 1.0)
        return time.perf_counter() - t

    return min(work() for _ in range(3))


def save(report: dict) -> None:
    """Write the figures so far to ``CAUSALKG_SCALE_JSON`` (atomically), if it is set."""
    if os.environ.get("CAUSALKG_SCALE_JSON"):
        path = Path(os.environ["CAUSALKG_SCALE_JSON"])
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(report, indent=1))
        os.replace(tmp, path)


def main() -> None:
    # In a child process: a forked child starts with its parent's peak RSS (Linux keeps the high
    # water mark across exec), so the bench itself stays small and loads no model.
    subprocess.run([sys.executable, "-c", "from bench.bench_scale import ensure_models; ensure_models()"],
                   check=True, cwd=REPO)
    print(f"sizes N = {', '.join(map(str, SIZES))} event documents (+2 other pages each); 2 workers; "
          f"downstream stages on the patterns extractor's output; default extraction on a sample of {SAMPLE}; "
          f"linking.index = {INDEX}\n")
    header = f"{'stage':<18} {'N':>6} {'wall s':>9} {'CPU s':>9} {'items/s':>9} {'peak RSS MB':>11}"
    print(header)
    print("-" * len(header))
    results: dict[int, dict] = {}
    report = earlier_report()
    resumed = bool(report["stages"])
    # each sitting's start, load and CPU speed (a fixed workload's time), so that rows measured in
    # different sittings can be told apart and compared
    report["runs"].append({"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                           "load_before": os.getloadavg(), "calibration_s": calibrate()})
    here = len(report["runs"]) - 1
    if resumed:
        before = ", ".join(f"{r['calibration_s']:.2f}" for r in report["runs"][:-1])
        print(f"(going on from {os.environ['CAUSALKG_SCALE_JSON']}: its rows are marked *, measured in an earlier "
              f"sitting; calibration (a fixed workload) {report['runs'][-1]['calibration_s']:.2f} s now, "
              f"{before} s then)\n")
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as d:
        tmp = Path(d)
        CWD[0] = tmp
        ctxs = {}
        for n in SIZES:
            def record(stage: str, r: dict, items: int, n: int = n, earlier: bool = False) -> None:
                # a row as its stage finishes
                rate = items / r["wall"] if r["wall"] else float("nan")
                print(f"{stage:<18} {n:>6} {r['wall']:>9.1f} {r['cpu']:>9.1f} {rate:>9.1f} {r['rss_mb']:>11.0f}"
                      + (" *" if earlier else ""), flush=True)
                row = {k: v for k, v in r.items() if k != "out"} | {"items": items}
                row.setdefault("run", here)
                report["stages"].setdefault(stage, {})[n] = row
                save(report)

            before = {stage: rows[n] for stage, rows in report["stages"].items() if n in rows}
            res, ctx = stages(n, tmp, record, before)
            results[n], ctxs[n] = res, ctx
            # the world of this size is no longer needed: keep the disk use to one world
            shutil.rmtree(tmp / f"world-{n}", ignore_errors=True)
        if len(SIZES) >= 2:
            a, b = SIZES[-2], SIZES[-1]
            print(f"\nslope of wall time against N between N={a:,} and N={b:,} (exponent b of time ~ N^b; "
                  "1 = linear; ratio: measured time / linear extrapolation from the smaller N):")
            for stage in results[a]:
                if stage not in results[b] or results[a][stage].get("estimated"):
                    continue
                ta, tb = results[a][stage]["wall"], results[b][stage]["wall"]
                ca, cb = results[a][stage]["cpu"], results[b][stage]["cpu"]
                ia, ib = ctxs[a]["items"][stage], ctxs[b]["items"][stage]
                ratio = tb / (ta * ib / ia)
                print(f"  {stage:<15} b = {math.log(tb / ta) / math.log(b / a):.2f}, ratio {ratio:.2f} (CPU time ratio "
                      f"{cb / (ca * ib / ia):.2f}); peak RSS {results[a][stage]['rss_mb']:.0f} -> "
                      f"{results[b][stage]['rss_mb']:.0f} MB")
        mid = SIZES[len(SIZES) // 2] if len(SIZES) > 2 else SIZES[0]
        if "extract" in results[mid] and "ray" not in SKIP:
            report["ray"] = ray_overhead(ctxs[mid], tmp)
            print("\n" + report["ray"]["note"])
        rows = full_size(results, ctxs)
        ray = report.get("ray") or {}
        ray_ratio = ray["ray_wall"] / ray["local_wall"] if ray.get("local_wall") else 1.0
        elsewhere(rows, ray_ratio)
        report["full_size"] = rows
        print(f"\nthe full-size job ({FULL:,} documents), hours: on these 2 cores (measured at the largest N, "
              f"scaled linearly), and ESTIMATED on one machine of {GPU_NODE_CORES} cores + 1 GPU and on "
              f"{CLUSTER_NODES} of them with Ray (model passes {GPU_SPEEDUP:.0f}x this machine's rate on a GPU, "
              f"{MODEL_SHARE:.0%} of a model stage's time in them, Ray overhead {ray_ratio:.2f}x"
              + (f"; extraction MEASURED on a GPU machine at {GPU_EXTRACT_DOC_S} s per document" if GPU_EXTRACT_DOC_S
                 else "") + "):")
        print(f"  {'stage':<18} {'2 cores':>8} {'CPU h':>7} {'1 GPU':>7} {'cluster':>8}")
        for r in rows:
            print(f"  {r['stage']:<18} {r['wall_h']:>8.2f} {r['cpu_h']:>7.2f} {r['gpu_h']:>7.2f} {r['cluster_h']:>8.2f}  "
                  f"({r['how']}; {KIND.get(r['stage'], 'serial')})")
        print(f"  {'total':<18} {sum(r['wall_h'] for r in rows):>8.2f} {sum(r['cpu_h'] for r in rows):>7.2f} "
              f"{sum(r['gpu_h'] for r in rows):>7.2f} {sum(r['cluster_h'] for r in rows):>8.2f}")
    report["load_after"] = os.getloadavg()
    save(report)
    print("\nbaseline: linear time in N (the slope's exponent 1.0) and the local engine (run.engine = local); "
          "at small N the fixed costs (interpreter, spaCy, store load, models) are a large share of each stage.")


if __name__ == "__main__":
    main()
