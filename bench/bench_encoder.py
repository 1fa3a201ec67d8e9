"""The linker's sentence encoder: texts/s embedding a link build's surface forms, per device,
numeric format, batch size and pass size, in one run.

    python -m bench encoder

``link build`` embeds every distinct surface form of the vocabulary (249,637 for the 68,391
world of ``bench scale``), and ``kg assemble`` the cause and effect phrases that no name
matches; both go through ``linking.encoder.Encoder.encode``. This bench times that call.

Inputs: ``BENCH_ENCODER_TEXTS``, comma-separated files of texts (``.txt`` or ``.txt.gz``: one
text per line; ``.jsonl``: the ``surface`` field, as ``data/linking/surfaces.jsonl``), default
the snapshot's ``data/linking/surfaces.jsonl`` (``make kg`` builds it); their distinct texts, the
first ``BENCH_ENCODER_LIMIT`` (0: all) of each file. ``BENCH_ENCODER_CPU_LIMIT`` (20,000): the
texts the CPU rows take (the first ones of the same list). ``BENCH_ENCODER_MODEL``: the model
(default ``linking.model``). ``BENCH_ENCODER_PASSES``: the ``batch size:token rows`` settings of
the GPU rows (default ``256:2048,1024:16384,4096:65536``; the first is the default setting).
``BENCH_ENCODER_JSON=FILE`` writes the figures.

Rows: on the CPU, PyTorch float32 and, where it is installed, ONNX Runtime, at the first pass
setting (the default); where CUDA is there, float32, bfloat16 and float16 at
each pass setting. Each row loads the model ("load s"), encodes once to warm up and then times
the best of ``BENCH_ENCODER_REPEATS`` (2) encodes of its texts. "tokenize s" is the fast
tokenizer's share (run once per row, outside the timing). "max |diff|": the largest difference
of a vector component against the float32 row of the same device and texts at the default
setting (vectors are unit length); "min cos" the least cosine between a text's two vectors.
"""

from __future__ import annotations

import gzip
import json
import os
import time
from pathlib import Path

import numpy as np

from causalkg.core.config import load_config
from causalkg.core.tables import render_table

REPO = Path(__file__).resolve().parents[1]
DEFAULT_TEXTS = REPO / "data" / "linking" / "surfaces.jsonl"
DEFAULT_PASSES = "256:2048,1024:16384,4096:65536"


def read_texts(path: Path, limit: int = 0) -> list[str]:
    """The distinct texts of ``path`` in file order (see the module's doc for the formats)."""
    opener = gzip.open if path.suffix == ".gz" else open
    seen: dict[str, None] = {}
    with opener(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            if ".jsonl" in path.name:
                line = line.strip()
                text = json.loads(line).get("surface") if line else None
            else:
                text = line.rstrip("\n")
            if text:
                seen.setdefault(text, None)
                if limit and len(seen) >= limit:
                    break
    return list(seen)


def parse_passes(spec: str) -> list[tuple[int, int]]:
    out = []
    for part in filter(None, (p.strip() for p in spec.split(","))):
        batch, _, tokens = part.partition(":")
        out.append((int(batch), int(tokens or 2048)))
    return out


def cuda_name() -> str | None:
    try:
        import torch

        return torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    except Exception:  # noqa: BLE001 - no CUDA build, no driver: CPU rows only
        return None


def measure(model: str, texts: list[str], *, device: str, dtype: str, backend: str, batch: int, tokens: int,
            repeats: int) -> tuple[dict, np.ndarray]:
    """Load, warm up, time ``repeats`` encodes of ``texts`` (best); the figures and the vectors."""
    from causalkg.linking.encoder import Encoder

    t0 = time.perf_counter()
    enc = Encoder(model, device=device, batch_size=batch, backend=backend, dtype=dtype, pass_tokens=tokens)
    load = time.perf_counter() - t0
    t0 = time.perf_counter()
    cap = enc.max_seq_length or 512
    enc.model.tokenizer(texts, truncation=True, max_length=cap)
    tokenize = time.perf_counter() - t0
    vectors = enc.encode(texts[: min(len(texts), 2000)])  # warm-up: kernels, autotuning, allocator
    best, cpu = float("inf"), 0.0
    for _ in range(max(1, repeats)):
        c0, t0 = time.process_time(), time.perf_counter()
        vectors = enc.encode(texts)
        wall = time.perf_counter() - t0
        if wall < best:
            best, cpu = wall, time.process_time() - c0
    fig = {"device": device, "dtype": enc.dtype, "backend": enc.backend, "batch": batch, "tokens": tokens,
           "texts": len(texts), "load_s": round(load, 2), "tokenize_s": round(tokenize, 2), "encode_s": round(best, 3),
           "cpu_s": round(cpu, 2), "texts_per_s": round(len(texts) / best, 1)}
    del enc
    return fig, vectors


def compare(vectors: np.ndarray, reference: np.ndarray | None) -> dict:
    if reference is None or reference.shape != vectors.shape:
        return {}
    diff = float(np.abs(vectors - reference).max())
    cos = float(np.einsum("ij,ij->i", vectors, reference).min())
    return {"max_diff": diff, "min_cos": cos}


def main() -> None:
    cfg = load_config()
    model = os.environ.get("BENCH_ENCODER_MODEL") or str(cfg["linking"]["model"])
    files = [Path(p) for p in os.environ.get("BENCH_ENCODER_TEXTS", str(DEFAULT_TEXTS)).split(",") if p]
    missing = [str(p) for p in files if not p.is_file()]
    if missing:
        print(f"bench encoder: no texts at {', '.join(missing)} (run `make kg`, or set BENCH_ENCODER_TEXTS)")
        return
    limit = int(os.environ.get("BENCH_ENCODER_LIMIT", "0"))
    texts: list[str] = []
    for path in files:
        texts += read_texts(path, limit)
    texts = list(dict.fromkeys(texts))
    cpu_texts = texts[: int(os.environ.get("BENCH_ENCODER_CPU_LIMIT", "20000")) or len(texts)]
    repeats = int(os.environ.get("BENCH_ENCODER_REPEATS", "2"))
    passes = parse_passes(os.environ.get("BENCH_ENCODER_PASSES", DEFAULT_PASSES))
    default_batch = int(cfg["linking"]["batch_size"])
    gpu = cuda_name()
    print(f"model {model}; {len(texts):,} distinct texts from {', '.join(p.name for p in files)}; CPU rows on the "
          f"first {len(cpu_texts):,}; GPU: {gpu or 'none'}\n")

    rows, figures = [], []

    def add(label: str, fig: dict, extra: dict) -> None:
        figures.append({"row": label, **fig, **extra})
        print(json.dumps(figures[-1]), flush=True)  # each row as it is measured
        rows.append({"row": label, "dtype": fig["dtype"], "batch / token rows": f"{fig['batch']} / {fig['tokens']:,}",
                     "texts": f"{fig['texts']:,}", "load s": f"{fig['load_s']:.1f}",
                     "tokenize s": f"{fig['tokenize_s']:.2f}", "encode s": f"{fig['encode_s']:.2f}",
                     "CPU s": f"{fig['cpu_s']:.1f}", "texts/s": f"{fig['texts_per_s']:,.0f}",
                     "max |diff|": f"{extra['max_diff']:.1e}" if "max_diff" in extra else "",
                     "min cos": f"{extra['min_cos']:.6f}" if "min_cos" in extra else ""})

    import importlib.util

    ref = None
    for backend in ["torch"] + (["onnxruntime"] if importlib.util.find_spec("onnxruntime") else []):
        fig, vec = measure(model, cpu_texts, device="cpu", dtype="float32", backend=backend, batch=default_batch,
                           tokens=passes[0][1] if passes else 2048, repeats=repeats)
        add(f"CPU {fig['backend']}", fig, compare(vec, ref))
        ref = vec if ref is None else ref
    if gpu:
        gref = None
        for dtype in ("float32", "bfloat16", "float16"):
            for batch, tokens in passes:
                fig, vec = measure(model, texts, device="cuda", dtype=dtype, backend="torch", batch=batch, tokens=tokens,
                                   repeats=repeats)
                add(f"GPU {dtype}", fig, compare(vec, gref))
                if gref is None:
                    gref = vec
                    figures[-1]["vs_cpu"] = compare(vec[: len(cpu_texts)], ref)
                    print(f"GPU float32 against CPU PyTorch float32 on the CPU rows' texts: {figures[-1]['vs_cpu']}")
    print(render_table(rows, fmt="md"))
    if not gpu:
        print("\n(no CUDA device: CPU rows only)")
    out = os.environ.get("BENCH_ENCODER_JSON")
    if out:
        Path(out).write_text(json.dumps({"model": model, "gpu": gpu, "files": [str(p) for p in files],
                                         "rows": figures}, indent=1))


if __name__ == "__main__":
    main()
