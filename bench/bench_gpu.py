"""The default extraction on a GPU: `kg extract` (the learned gate of ``models/causal-gate``, QA
with ``models/causal-qa``) of a corpus sample on CUDA, per numeric format (``extract.dtype``),
batch sizes, and number of processes sharing the one GPU, beside the same extraction on this
machine's CPU (the CPU defaults: float32, ONNX Runtime where installed) in the same run.

    python -m bench gpu

Needs a CUDA device (prints a note and stops without one). Input: ``BENCH_GPU_INPUT``, a corpus
JSONL (default: the snapshot's ``data/corpus/corpus.jsonl``, which ``make kg`` builds);
``BENCH_GPU_DOCS`` (100) of its first documents; the CPU baseline reads the first
``BENCH_GPU_CPU_DOCS`` (20; 0 leaves it out). ``BENCH_GPU_PROCS`` (``4,8``): the process counts of
the shared-GPU rows (separate `kg extract` processes, each on a contiguous slice of the documents,
all started together: what ``run.engine = "ray"`` with ``run.ray_gpus_per_actor = 1/N`` does with
N actors on one GPU; each process's own load is left out of its per-document time, so these rows
give the steady rate). ``BENCH_GPU_WORKERS`` (``8``): the ``extract.workers`` rows (one `kg
extract` whose worker processes share the GPU, shards of 4; the workers' loads overlap the first
shards, so a short sample understates their rate).
``BENCH_GPU_JSON=FILE`` writes the figures and every row's pairs as JSON.

Each row is one or more `causalkg kg extract` processes, measured as in ``bench scale``: wall
time, the part of it outside the extraction's shard loop (start, imports, model load: from its
manifest) counted once, the rest per document (``bench_scale.sample_estimate``); the GPU's mean
utilisation while the row ran, sampled by ``nvidia-smi`` where it exists. The full-size column is
that split applied to 68,391 documents. ``pairs changed``: (document, cause, effect) triples not
shared with the reference row (the CPU row for float32, on its documents; the first bfloat16
row for the others).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from bench.bench_scale import FULL, GATE, QA, REPO, sample_estimate
from causalkg.core.tables import render_table

CK = [sys.executable, "-m", "causalkg.cli"]


@dataclass(frozen=True)
class Row:
    label: str
    device: str
    dtype: str
    batch: int = 32  # extract.qa.batch_size: QA features per forward pass
    gate_batch: int = 64  # extract.gate.batch_size
    shard: int = 8  # extract.shard_size
    procs: int = 1  # separate `kg extract` processes, each on its slice of the documents
    workers: int = 1  # extract.workers: one `kg extract` with a pool of worker processes


def rows(procs: list[int], workers: list[int]) -> list[Row]:
    big = {"batch": 256, "gate_batch": 512, "shard": 64}
    out = [Row("GPU float32, default batches", "cuda", "float32"),
           Row("GPU bfloat16, default batches", "cuda", "bfloat16"),
           Row("GPU bfloat16, large batches", "cuda", "bfloat16", **big),
           Row("GPU float16, large batches", "cuda", "float16", **big)]
    out += [Row(f"GPU bfloat16, large batches, {p} processes", "cuda", "bfloat16", procs=p, **big) for p in procs if p > 1]
    out += [Row(f"GPU bfloat16, large batches, extract.workers = {w}", "cuda", "bfloat16", batch=256, gate_batch=512,
                shard=4, workers=w) for w in workers if w > 1]
    return out


class GpuSampler:
    """Mean GPU utilisation (%) between start and stop, from ``nvidia-smi`` every 200 ms."""

    def __init__(self):
        self.values: list[float] = []
        self.proc = None
        self.thread = None

    def __enter__(self):
        try:
            self.proc = subprocess.Popen(["nvidia-smi", "--query-gpu=utilization.gpu", "--format=csv,noheader,nounits",
                                          "-lms", "200"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        except OSError:
            return self
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()
        return self

    def _read(self):
        for line in self.proc.stdout:
            try:
                self.values.append(float(line.split(",")[0]))
            except ValueError:
                pass

    def __exit__(self, *exc):
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait()
            self.thread.join(timeout=5)

    @property
    def mean(self) -> float | None:
        return round(sum(self.values) / len(self.values), 1) if self.values else None


def _slices(lines: list[bytes], n: int, folder: Path) -> list[tuple[Path, int]]:
    """``lines`` cut into ``n`` contiguous files (document order kept); (path, documents) each."""
    out = []
    size = -(-len(lines) // n)
    for i in range(n):
        part = lines[i * size:(i + 1) * size]
        if part:
            path = folder / f"part{i}.jsonl"
            path.write_bytes(b"".join(part))
            out.append((path, len(part)))
    return out


def run_row(row: Row, lines: list[bytes], tmp: Path) -> dict:
    folder = tmp / row.label.replace(" ", "_").replace(",", "")
    folder.mkdir(parents=True)
    parts = _slices(lines, row.procs, folder)
    children = []
    t0 = time.perf_counter()
    with GpuSampler() as gpu:
        for i, (path, _) in enumerate(parts):
            out = folder / f"out{i}.jsonl"
            sets = {"paths.data": folder / "data", "paths.cache": folder / "cache", "run.progress": "never",
                    "extract.input": path, "extract.output": out, "extract.gate.model": GATE, "extract.qa.model": QA,
                    "extract.device": row.device, "extract.dtype": row.dtype, "extract.qa.batch_size": row.batch,
                    "extract.gate.batch_size": row.gate_batch, "extract.shard_size": row.shard,
                    "extract.workers": row.workers}
            cmd = CK + ["kg", "extract"] + [a for k, v in sets.items() for a in ("--set", f"{k}={v}")]
            log = (folder / f"log{i}.txt").open("wb")
            children.append((subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=tmp), out, log))
        walls, cpu, failed = [], 0.0, []
        for proc, out, log in children:
            _, status, ru = os.wait4(proc.pid, 0)
            walls.append(time.perf_counter() - t0)
            cpu += ru.ru_utime + ru.ru_stime
            log.close()
            if os.waitstatus_to_exitcode(status) != 0:
                failed.append(Path(log.name).read_text(errors="replace")[-3000:])
    if failed:
        raise RuntimeError(f"{row.label}: kg extract failed:\n{failed[0]}")
    wall = max(walls)
    docs = sum(n for _, n in parts)
    fixed = 0.0
    pairs = set()
    records = 0
    for (_, n), (_, out, _), w in zip(parts, children, walls):
        timings = json.loads(out.with_name(out.stem + ".manifest.json").read_text()).get("timings_s", {})
        est = sample_estimate({"wall": w, "cpu": 0.0}, timings, n)
        fixed = max(fixed, est["fixed_wall"])  # the processes load together: the longest load counts once
        with out.open(encoding="utf-8") as fh:
            for line in fh:
                r = json.loads(line)
                records += 1
                pairs.add((r["doc_id"], r["cause"]["text"], r["effect"]["text"]))
    per_doc = max(wall - fixed, 1e-9) / docs
    return {"row": row.__dict__, "docs": docs, "wall": wall, "cpu": cpu, "fixed": fixed, "per_doc": per_doc,
            "gpu_util": gpu.mean, "records": records, "pairs": pairs}


def main() -> None:
    try:
        import torch

        cuda = torch.cuda.is_available()
    except ImportError:
        cuda = False
    if not cuda:
        print("bench gpu: no CUDA device here; nothing measured (run it on a machine with a GPU)")
        return
    source = Path(os.environ.get("BENCH_GPU_INPUT") or REPO / "data" / "corpus" / "corpus.jsonl")
    if not source.is_file():
        raise SystemExit(f"bench gpu: no corpus at {source}; run `make kg` or set BENCH_GPU_INPUT")
    n_docs = int(os.environ.get("BENCH_GPU_DOCS", "100"))
    n_cpu = int(os.environ.get("BENCH_GPU_CPU_DOCS", "20"))
    procs = [int(x) for x in os.environ.get("BENCH_GPU_PROCS", "4,8").split(",") if x]
    workers = [int(x) for x in os.environ.get("BENCH_GPU_WORKERS", "8").split(",") if x]
    with source.open("rb") as fh:
        lines = [line for _, line in zip(range(n_docs), fh)]
    import torch

    print(f"GPU: {torch.cuda.get_device_name(0)}; CPU cores: {os.cpu_count()}; torch {torch.__version__}; "
          f"{len(lines)} documents of {source}\n", flush=True)
    plan = rows(procs, workers)
    if n_cpu > 0:
        plan.insert(0, Row("CPU (defaults)", "cpu", "float32"))
    results = []
    with tempfile.TemporaryDirectory(prefix="bench-gpu-") as tmp:
        for row in plan:
            try:
                res = run_row(row, lines[:n_cpu] if row.device == "cpu" else lines, Path(tmp))
            except RuntimeError as exc:  # one row's failure is reported; the others still run
                print(f"  {row.label}: FAILED\n{exc}", flush=True)
                continue
            results.append(res)
            print(f"  {row.label}: {res['wall']:.1f} s for {res['docs']} documents", flush=True)
    cpu = next((r for r in results if r["row"]["device"] == "cpu"), None)
    cpu_docs = {str(json.loads(line)["id"]) for line in lines[:n_cpu]}  # doc_id is the id as text
    bf16 = next((r for r in results if r["row"]["dtype"] == "bfloat16"), None)
    table = []
    for res in results:
        row = res["row"]
        ref = cpu if row["dtype"] == "float32" and row["device"] == "cuda" else (bf16 if row["device"] == "cuda" else None)
        changed = None
        if ref is cpu and cpu is not None:
            mine = {p for p in res["pairs"] if p[0] in cpu_docs}
            changed = len(mine ^ cpu["pairs"])
        elif ref is not None and ref is not res:
            changed = len(res["pairs"] ^ ref["pairs"])
        full_h = (res["fixed"] + res["per_doc"] * FULL) / 3600
        table.append({
            "extraction": row["label"], "QA / gate batch": f"{row['batch']} / {row['gate_batch']}",
            "shard": row["shard"], "docs": res["docs"], "wall s": round(res["wall"], 1),
            "load s": round(res["fixed"], 1), "s/doc": round(res["per_doc"], 4),
            "docs/s": round(1 / res["per_doc"], 2),
            "ratio": round(cpu["per_doc"] / res["per_doc"], 1) if cpu else None,
            "GPU util %": res["gpu_util"], "extractions": res["records"], "pairs changed": changed,
            "68,391 docs (h)": round(full_h, 2),
        })
    print()
    print(render_table(table))
    print("\nratio: documents per second against the CPU row's (after the load); pairs changed: against the "
          "CPU row (float32, its documents) or the first bfloat16 row")
    if os.environ.get("BENCH_GPU_JSON"):
        dump = [{**{k: v for k, v in r.items() if k != "pairs"}, "pairs": sorted(r["pairs"])} for r in results]
        Path(os.environ["BENCH_GPU_JSON"]).write_text(json.dumps({"gpu": torch.cuda.get_device_name(0), "rows": dump}))


if __name__ == "__main__":
    main()
