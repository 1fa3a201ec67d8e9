"""Benchmark: recall and LLM-judged precision (evaluation/wikicausal/recall.py, evaluation/wikicausal/precision.py).

Precision: pairs judged per second against a local OpenAI-compatible server
(``causalkg.testing.openai_server``) that answers every request after a fixed latency (200 ms,
like a hosted model's round trip). The baseline does what the WikiCausal reference script does:
K = 5 calls per pair, one at a time, through the ``openai`` client. Ours: ``eval_precision``
with K = 5 sampled tries at the default concurrency (``llm.concurrency`` = 8) and at 32, with a
greedy judge (one request stands for the five identical greedy tries), and re-run from its disk
cache. Same pairs (the first unique label pairs of the bundled CauseNet-Precision KG), same run.

Recall: a flat-shape KG of a million pairs, generated here by sampling real QIDs and labels
from the bundled WikiCausal files (``snapshots/wikicausal/``; 0.05% of the lines are drawn from
a random half of the Base KG pairs, so there are hits and misses), scored against the bundled Base KG v1. The baseline is the reference's
algorithm (json.loads, id[0], sets, no validation); ours validates every line.
"""

from __future__ import annotations

import json
import os
import random
import tempfile
from pathlib import Path

from bench import ThroughputTable, timed

REPO = Path(__file__).resolve().parents[1]
WIKICAUSAL = REPO / "snapshots" / "wikicausal"
BASE = WIKICAUSAL / "base-kg-v1.jsonl"
PREC = WIKICAUSAL / "causenet-precision-linked-v1.jsonl"

LATENCY = 0.2
PAIRS = 30
TRIES = 5
RECALL_PAIRS = 1_000_000


def _answer(body: dict) -> str:
    prompt = body["messages"][-1]["content"]
    return "Yes." if "death" in prompt or "war" in prompt else "No."


def reference_loop(pairs: list[tuple[str, str]], base_url: str, tries: int = TRIES) -> float:
    """What the reference does: for each pair, ``tries`` greedy calls in a row, majority vote."""
    import openai

    from causalkg.evaluation.wikicausal.precision import load_template

    client = openai.OpenAI(base_url=base_url, api_key="EMPTY", max_retries=0)
    template = load_template("instruction")
    correct = 0
    for cause, effect in pairs:
        yes = 0
        for _ in range(tries):
            resp = client.chat.completions.create(
                model="test-model", messages=[{"role": "user", "content": template.render(cause, effect)}],
                temperature=0.0, max_tokens=10)
            if (resp.choices[0].message.content or "").strip().lower().startswith("yes"):
                yes += 1
        correct += yes >= tries // 2 + 1
    return correct / len(pairs)


def bench_precision() -> None:
    from causalkg.evaluation.wikicausal.precision import collect_label_pairs

    pairs = list(collect_label_pairs(PREC).pairs)[:PAIRS]
    with tempfile.TemporaryDirectory(prefix="bench-eval-") as tmp:
        _bench_precision(pairs, Path(tmp))


def _bench_precision(pairs: list[tuple[str, str]], kg_dir: Path) -> None:
    from causalkg.core.config import load_config
    from causalkg.testing.openai_server import OpenAIServer
    from causalkg.evaluation.wikicausal.judges import create_judge
    from causalkg.evaluation.wikicausal.precision import eval_precision

    kg = kg_dir / "pairs.jsonl"
    kg.write_text("".join(json.dumps({"cause": {"label": c, "id": ["Q1"]}, "effect": {"label": e, "id": ["Q2"]}}) + "\n"
                          for c, e in pairs), encoding="utf-8")
    table = ThroughputTable(f"Precision: {PAIRS} pairs, K={TRIES}, server latency {LATENCY * 1000:.0f} ms",
                            unit="pairs")
    with OpenAIServer(_answer, latency=LATENCY) as server:
        with timed() as t:
            ref_precision = reference_loop(pairs, server.base_url)
        table.add("reference loop (5 greedy calls per pair, sequential)", len(pairs), t.seconds, baseline=True,
                  requests=len(pairs) * TRIES, precision=round(ref_precision, 4))

        def ours(name: str, cache_dir: Path, *, concurrency: int, temperature: float) -> None:
            cfg = load_config(overrides={"llm.base_url": server.base_url, "llm.model": "test-model",
                                         "llm.concurrency": concurrency, "paths.cache": str(cache_dir),
                                         "paths.data": str(kg_dir / "data")}, search_cwd=False)
            before = server.chat_requests
            with timed() as t:
                judge = create_judge("openai:test-model", cfg, temperature=temperature)
                rep = eval_precision([kg], judge, cfg=cfg, tries=TRIES, write=False)
            table.add(name, len(pairs), t.seconds, requests=server.chat_requests - before,
                      precision=round(rep.rows[0]["precision"], 4))

        ours("causalkg, 5 sampled tries, concurrency 8", kg_dir / "c8", concurrency=8, temperature=0.7)
        ours("causalkg, 5 sampled tries, concurrency 32", kg_dir / "c32", concurrency=32, temperature=0.7)
        ours("causalkg, greedy (1 request per pair), concurrency 8", kg_dir / "greedy", concurrency=8, temperature=0.0)
        ours("causalkg, 5 sampled tries, re-run from the disk cache", kg_dir / "c8", concurrency=8, temperature=0.7)
    table.print()


def _sample_kg(path: Path, n: int, seed: int = 0) -> None:
    """``n`` flat-shape lines over real QIDs and labels from the bundled WikiCausal files."""
    rng = random.Random(seed)
    labels: dict[str, str] = {}
    base_pairs = []
    for line in BASE.read_text(encoding="utf-8").splitlines():
        o = json.loads(line)
        labels[o["event"]["id"]] = o["event"]["label"]
        for c in o["consequences"]:
            labels[c["id"]] = c["label"]
            base_pairs.append((o["event"]["id"], c["id"]))
            for e in c.get("examples") or []:
                labels[e["cause"]["id"]] = e["cause"]["label"]
                labels[e["effect"]["id"]] = e["effect"]["label"]
                base_pairs.append((e["cause"]["id"], e["effect"]["id"]))
    for name in ("causenet-full-linked-v1.jsonl", "causenet-precision-linked-v1.jsonl"):
        for line in (WIKICAUSAL / name).read_text(encoding="utf-8").splitlines():
            o = json.loads(line)
            for end in (o["cause"], o["effect"]):
                for q in end["id"]:
                    labels.setdefault(q, end["label"])
    qids = sorted(labels)
    hit_pool = rng.sample(sorted(set(base_pairs)), len(set(base_pairs)) // 2)
    with open(path, "w", encoding="utf-8") as fh:
        for _ in range(n):
            if rng.random() < 0.0005:
                c, e = rng.choice(hit_pool)
            else:
                c, e = rng.choice(qids), rng.choice(qids)
            cids = [c] + rng.sample(qids, rng.choice((0, 0, 1, 2)))
            fh.write(json.dumps({"cause": {"label": labels[c], "id": cids}, "effect": {"label": labels[e], "id": [e]}}))
            fh.write("\n")


def reference_recall(kg_path: Path, base_path: Path) -> float:
    """The reference's algorithm: json.loads each line, (id[0], id[0]) into sets, intersect."""
    base_types, base_examples = set(), set()
    with open(base_path, encoding="utf-8") as fh:
        for line in fh:
            o = json.loads(line)
            for c in o["consequences"]:
                base_types.add((o["event"]["id"], c["id"]))
                for e in c.get("examples") or []:
                    base_examples.add((e["cause"]["id"], e["effect"]["id"]))
    kg = set()
    with open(kg_path, encoding="utf-8") as fh:
        for line in fh:
            o = json.loads(line)
            kg.add((o["cause"]["id"][0], o["effect"]["id"][0]))
    full = base_types | base_examples
    return len(kg & full) / len(full)


def bench_recall() -> None:
    from causalkg.evaluation.wikicausal.recall import eval_recall

    with tempfile.TemporaryDirectory(prefix="bench-recall-") as tmp:
        kg = Path(tmp) / "million.jsonl"
        with timed() as t:
            _sample_kg(kg, RECALL_PAIRS)
        size = os.path.getsize(kg) / 1e6
        table = ThroughputTable(f"Recall: {RECALL_PAIRS:,} flat pairs ({size:.0f} MB, generated in {t.seconds:.1f} s) "
                                "against base-kg-v1", unit="pairs")
        with timed() as t:
            ref = reference_recall(kg, BASE)
        table.add("reference algorithm (json.loads + sets, no validation)", RECALL_PAIRS, t.seconds, baseline=True,
                  full_recall=round(ref, 4))
        with timed() as t:
            rep = eval_recall([kg], BASE, plot=False)
        table.add("causalkg eval recall (validated, per-class, marked pairs)", RECALL_PAIRS, t.seconds,
                  full_recall=round(rep.rows[0]["recall"], 4))
        with timed() as t:
            rep = eval_recall([kg], BASE, any_id=True, plot=False)
        table.add("causalkg eval recall --any-id", RECALL_PAIRS, t.seconds, full_recall=round(rep.rows[0]["recall"], 4))
        assert abs(rep.rows[0]["recall"] - ref) < 1e-12, "our recall differs from the reference algorithm"
    table.print()


def main() -> None:
    bench_precision()
    bench_recall()


if __name__ == "__main__":
    main()
