"""The same KG on every x86-64 CPU: extraction and assembly of a few snapshot documents, run on
this CPU and again with fewer instruction sets, compared byte for byte with ``scripts/kg_diff.py``.

    python -m bench isa

Needs a built project in the working directory (``make kg``: ``data/corpus``, ``data/wikidata``,
``data/linking``, ``models/causal-gate``, ``models/causal-qa``, and the ONNX exports the first
extraction made); ``BENCH_ISA_PROJECT`` names another. Nothing of it is written: each run works in
a fresh copy under a temporary folder.

Runs (``causalkg kg extract`` then ``causalkg kg assemble``, each in its own process):

- ``native``: the default settings (the gate's encoder and the QA model on ONNX Runtime, the
  linker's encoder on PyTorch), on this CPU: the baseline of the ``qemu`` runs.
- ``qemu CPU``: the same under ``qemu-x86_64 -cpu CPU`` (qemu-user; Debian's ``qemu-user``
  package), an emulated CPU whose CPUID offers only that model's instruction sets, so ONNX
  Runtime (MLAS), PyTorch (ATen, oneDNN), OpenBLAS and FAISS choose their kernels for it: with
  ``Nehalem`` SSE4.2 and no AVX (no FMA, no bfloat16), with ``Haswell`` AVX2 and FMA.
  ``BENCH_ISA_CPUS`` (default ``Nehalem``; comma-separated, empty for none). Emulation is slow
  (about 150 times for the models' float32 products; the 3 documents took 38 minutes on 2 busy
  cores), hence few documents.
- ``torch``: every model on PyTorch (``extract.backend = torch``), this CPU: the baseline of
  ``torch SSE4.1``;
- ``torch SSE4.1``: the same with ATen's vector code at its default (no AVX) level
  (``ATEN_CPU_CAPABILITY=default``), oneDNN at SSE4.1 (``DNNL_MAX_CPU_ISA=SSE41``) and MKL's
  code path fixed (``MKL_CBWR=COMPATIBLE``): the limits PyTorch offers without an emulator.

The ONNX exports are copied with the models, so every run reads the same ONNX files (an export
is a trace of the model, made once per installed model). Documents: the ``BENCH_ISA_DOCS``
shortest of the corpus (default 3). Each run gets ``BENCH_ISA_TIMEOUT`` seconds per command
(default 1800). ``BENCH_ISA_KEEP=DIR`` keeps every run's project folder in ``DIR`` (emptied first).

Prints, per run: its baseline, what the emulated CPU offered (numpy's view of the SIMD
extensions), seconds for extraction and assembly and their ratio to the baseline's, extracted
pairs, pairs whose spans or score differ from the baseline's (and the largest score
difference), and kg_diff's verdict on the whole KG folder. Exits with the differences listed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from causalkg.core.tables import render_table

REPO = Path(__file__).resolve().parents[1]
TORCH_LIMITS = {"ATEN_CPU_CAPABILITY": "default", "DNNL_MAX_CPU_ISA": "SSE41", "MKL_CBWR": "COMPATIBLE"}
INPUTS = ("data/corpus", "data/wikidata", "data/linking", "data/cache/onnx", "models/causal-gate", "models/causal-qa")


@dataclass
class Variant:
    name: str
    baseline: str | None
    prefix: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    settings: list[str] = field(default_factory=list)


@dataclass
class Run:
    variant: Variant
    root: Path
    seconds: dict[str, float] = field(default_factory=dict)
    error: str | None = None
    simd: str = ""


def variants(cpus: list[str], qemu: str | None) -> list[Variant]:
    out = [Variant("native", None)]
    for cpu in cpus:
        if qemu:
            out.append(Variant(f"qemu {cpu}", "native", prefix=[qemu, "-cpu", cpu, "-L", "/"]))
    torch = ["--set", "extract.backend=torch"]
    out.append(Variant("torch", None, settings=torch))
    out.append(Variant("torch SSE4.1", "torch", env=TORCH_LIMITS, settings=torch))
    return out


def shortest_documents(corpus: Path, n: int) -> list[str]:
    """The ``n`` shortest documents' lines of ``corpus``, in corpus order."""
    lines = corpus.read_text(encoding="utf-8").splitlines()
    chosen = sorted(sorted(range(len(lines)), key=lambda i: len(json.loads(lines[i])["text"]))[:n])
    return [lines[i] for i in chosen]


def prepare(source: Path, root: Path) -> None:
    for rel in INPUTS:
        src = source / rel
        if src.exists():
            shutil.copytree(src, root / rel)


SIMD = ("SSE42", "AVX", "AVX2", "FMA3", "AVX512F", "AVX512_BF16")


def simd_seen(prefix: list[str], env: dict[str, str], torch: bool) -> str:
    """The x86 SIMD extensions numpy finds on the (maybe emulated) CPU, e.g. ``SSE42``; with
    ``torch``, PyTorch's ATen vector level too (what ATEN_CPU_CAPABILITY leaves it)."""
    code = ("import numpy._core._multiarray_umath as m; "
            f"print(' '.join(k for k, v in m.__cpu_features__.items() if v and k in {SIMD!r}))")
    if torch:
        code += "; import torch; print('ATen', torch.backends.cpu.get_cpu_capability())"
    r = subprocess.run([*prefix, sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600)
    return "; ".join(r.stdout.split("\n")).strip("; ") or r.stderr.strip()[-200:]


def run_variant(v: Variant, source: Path, sample: Path, work: Path, timeout: int) -> Run:
    root = work / v.name.replace(" ", "-").replace(".", "")
    root.mkdir(parents=True)
    prepare(source, root)
    env = {**os.environ, "CAUSALKG_PROGRESS": "never", "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
           "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p), **v.env}
    run = Run(v, root)
    run.simd = simd_seen(v.prefix, env, torch=bool(v.env) or v.name == "torch")
    base = [*v.prefix, sys.executable, "-m", "causalkg.cli", "--quiet", *v.settings]
    for step, args in (("extract", ["kg", "extract", "--input", str(sample)]), ("assemble", ["kg", "assemble"])):
        t0 = time.perf_counter()
        try:
            r = subprocess.run([*base, *args], cwd=root, env=env, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            run.error = f"{step}: timed out after {timeout} s"
            return run
        run.seconds[step] = time.perf_counter() - t0
        if r.returncode != 0:
            run.error = f"{step}: exit {r.returncode}: {(r.stderr or r.stdout).strip().splitlines()[-1:]}"
            return run
    return run


def _records(path: Path) -> dict[tuple, dict]:
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        key = (r["doc_id"], r["sentence"]["start"], r["cause"]["start"], r["cause"]["end"], r["effect"]["start"],
               r["effect"]["end"], r.get("question") or "")
        out[key] = r
    return out


def compare_extractions(a: Path, b: Path) -> dict[str, float | int]:
    """Pairs of ``b`` that ``a`` lacks or has with other spans (``pairs differing``), pairs with
    another score, and the largest score difference."""
    ra, rb = _records(a), _records(b)
    common = ra.keys() & rb.keys()
    deltas = [abs(ra[k]["score"] - rb[k]["score"]) for k in common]
    return {"pairs": len(rb), "pairs differing": len(ra.keys() ^ rb.keys()),
            "scores differing": sum(1 for d in deltas if d), "max score diff": max(deltas, default=0.0)}


def kg_diff(a: Path, b: Path) -> tuple[str, list[str]]:
    r = subprocess.run([sys.executable, str(REPO / "scripts" / "kg_diff.py"), str(a), str(b)],
                       capture_output=True, text=True)
    lines = r.stdout.strip().splitlines()
    if r.returncode == 0:
        return "identical", []
    return f"{sum(1 for d in lines[:-1] if not d.startswith(' '))} difference(s)", lines


def main() -> None:
    source = Path(os.environ.get("BENCH_ISA_PROJECT", ".")).resolve()
    missing = [rel for rel in INPUTS[:3] + INPUTS[4:] if not (source / rel).exists()]
    if missing:
        print(f"bench isa needs a built project in {source} ('make kg'); missing: {', '.join(missing)}")
        return
    cpus = [c for c in os.environ.get("BENCH_ISA_CPUS", "Nehalem").split(",") if c]
    qemu = shutil.which("qemu-x86_64")
    if cpus and not qemu:
        print("qemu-x86_64 not found (apt-get install qemu-user): the emulated CPUs are left out\n")
    timeout = int(os.environ.get("BENCH_ISA_TIMEOUT", "1800"))
    keep = os.environ.get("BENCH_ISA_KEEP")
    with tempfile.TemporaryDirectory(prefix="bench-isa-") as tmp:
        work = Path(keep) if keep else Path(tmp)
        if keep:
            shutil.rmtree(work, ignore_errors=True)
            work.mkdir(parents=True)
        sample = work / "sample.jsonl"
        docs = shortest_documents(source / "data" / "corpus" / "corpus.jsonl", int(os.environ.get("BENCH_ISA_DOCS", "3")))
        sample.write_text("\n".join(docs) + "\n", encoding="utf-8")
        print(f"{len(docs)} documents ({sum(len(json.loads(d)['text']) for d in docs)} characters): "
              + ", ".join(json.loads(d).get("title", json.loads(d)["id"]) for d in docs) + "\n", flush=True)
        runs: dict[str, Run] = {}
        rows, details = [], []
        for v in variants(cpus, qemu):
            run = runs[v.name] = run_variant(v, source, sample, work, timeout)
            base = runs.get(v.baseline) if v.baseline else None
            row = {"run": v.name, "baseline": v.baseline or "-", "CPU offers": run.simd,
                   **{f"{step} s": f"{run.seconds[step]:.0f}" for step in ("extract", "assemble") if step in run.seconds}}
            if base and len(base.seconds) == 2 and len(run.seconds) == 2:
                row["slowdown"] = f"{sum(run.seconds.values()) / sum(base.seconds.values()):.1f}x"
            if run.error:
                row["KG"] = f"failed: {run.error}"
            elif base is not None and base.error is None:
                found = compare_extractions(base.root / "data/kg/extractions.jsonl", run.root / "data/kg/extractions.jsonl")
                row.update(found, **{"max score diff": f"{found['max score diff']:.1e}" if found["max score diff"] else "0"})
                verdict, lines = kg_diff(base.root / "data", run.root / "data")
                row["KG"] = verdict
                if lines:
                    details.append(f"{v.name} against {v.baseline}:\n" + "\n".join(lines[:40]))
            rows.append(row)
            print(f"{v.name}: done ({sum(run.seconds.values()):.0f} s{'; ' + run.error if run.error else ''})", flush=True)
        cols = ["run", "baseline", "CPU offers", "extract s", "assemble s", "slowdown", "pairs", "pairs differing",
                "scores differing", "max score diff", "KG"]
        print()
        print(render_table([{c: r.get(c, "") for c in cols} for r in rows], cols, "md"))
        for d in details:
            print("\n" + d)
