"""Benchmark: SQC-Score matchers (evaluation/judging/sqc.py) beside exact string matching, same facts, same run.

Input (no ../shared): the 53 real passages of the soft-measures FCM corpus that two sources
annotated (tests/fixtures/soft-measures/double-annotated.csv, CC BY 4.0). Per passage, the
non-SIFT annotation's (cause, effect) tuples are the gold facts and the SIFT annotation's the
predicted facts, with the passage as the unit's source text: two people's readings of the same
text, worded differently. Complementer ``none`` throughout, so the figures show the matchers.

1. Matching cost and what it buys: the baseline is exact matching of (cause, effect) after
   case, spacing and final-punctuation folding, one-to-one, the way an exact-match F1 is
   computed; beside it the embedding matcher (offline MiniLM, part-wise cosine >= 0.8, maximum
   one-to-one assignment) cold (model load and encoding included) and warm (vectors cached).
   Items are predicted facts; the matched count and P/R/F1 (SQC without a complementer) show
   what the extra time buys.
2. The LLM matcher (one grading prompt per unit) against a local OpenAI-compatible server that
   answers after a fixed 200 ms (a scripted grader: it lists the exact-text matches, so every
   row gets the same answers): one unit at a time, as the reference grades, against our
   concurrent requests, and a re-run from the disk cache. Items are units.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

from bench import ThroughputTable, timed
from causalkg.evaluation.graph.graphs import read_fcm_csv
from causalkg.evaluation.judging.sqc import EmbeddingMatcher, Templates, Unit, fact_from_record, score_units

FIXTURE = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "soft-measures" / "double-annotated.csv"
LATENCY = 0.2
WARM_REPEAT = 20


def real_units() -> list[Unit]:
    """One SQC unit per doubly annotated passage: gold = non-SIFT tuples, predicted = SIFT tuples."""
    by_source = read_fcm_csv(FIXTURE)
    pred = by_source.pop("SIFT_data_2024_03")
    gold = {u: g for graphs in by_source.values() for u, g in graphs.items()}
    t = Templates()
    units = []
    for uid, g in gold.items():
        p = pred.get(uid)
        facts = lambda graph: [fact_from_record({"cause": graph.label(e.source), "effect": graph.label(e.target)}, t)
                               for e in graph.edges] if graph is not None else []
        units.append(Unit(uid, g.text, facts(p), facts(g)))
    return units


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text.casefold()).strip().rstrip(" .;!")


def exact_match(units: list[Unit]) -> dict[str, float]:
    """Exact-match counts: distinct normalised (cause, effect) tuples, each gold tuple used once."""
    matched = n_pred = n_gold = 0
    for u in units:
        preds = {(_norm(f.parts["cause"]), _norm(f.parts["effect"])) for f in u.predicted}
        golds = {(_norm(f.parts["cause"]), _norm(f.parts["effect"])) for f in u.gold}
        matched += len(preds & golds)
        n_pred += len(preds)
        n_gold += len(golds)
    p = matched / n_pred if n_pred else 0.0
    r = matched / n_gold if n_gold else 0.0
    return {"matched": matched, "precision": p, "recall": r, "f1": 2 * p * r / (p + r) if p + r else 0.0}


def _figures(result) -> dict[str, float]:
    m = result.summary["micro"]
    return {"matched": m["matched"], "precision": m["precision"], "recall": m["recall"], "f1": m["sqc"]}


def _cols(f: dict[str, float]) -> dict[str, object]:
    return {"matched": f["matched"], "P": round(f["precision"], 4), "R": round(f["recall"], 4), "F1/SQC": round(f["f1"], 4)}


def bench_matchers(units: list[Unit]) -> None:
    n_pred = sum(len({f.key for f in u.predicted}) for u in units)
    n_gold = sum(len({f.key for f in u.gold}) for u in units)
    table = ThroughputTable(f"SQC matchers: {len(units)} real passages, {n_pred} predicted and {n_gold} gold facts "
                            "(complementer none)", unit="facts")
    with timed() as t:
        for _ in range(WARM_REPEAT):
            exact = exact_match(units)
    table.add("exact (cause, effect) match, one-to-one", n_pred * WARM_REPEAT, t.seconds, baseline=True, **_cols(exact))
    with timed() as t:
        matcher = EmbeddingMatcher("all-MiniLM-L6-v2", threshold=0.8, device="cpu")
        cold = score_units(units, matcher, None)
    table.add("SQC embedding matcher (MiniLM, 0.8), cold: load + encode + match", n_pred, t.seconds, **_cols(_figures(cold)))
    with timed() as t:
        for _ in range(WARM_REPEAT):
            warm = score_units(units, matcher, None)
    table.add("SQC embedding matcher, warm (vectors cached)", n_pred * WARM_REPEAT, t.seconds, **_cols(_figures(warm)))
    table.print()
    assert _figures(warm) == _figures(cold)


_LINE = re.compile(r"^([PG])(\d+)\. (.*)$")


def scripted_grader(body: dict) -> str:
    """Lists (P<i>, G<j>) for predicted and gold points with the same text (case and spacing
    folded), each used once; NONE when there is none; then END."""
    prompt = body["messages"][-1]["content"]
    items: dict[str, list[tuple[int, str]]] = {"P": [], "G": []}
    for line in prompt.splitlines():
        m = _LINE.match(line.strip())
        if m:
            items[m.group(1)].append((int(m.group(2)), _norm(m.group(3))))
    used: set[int] = set()
    lines = []
    for i, p in items["P"]:
        for j, g in items["G"]:
            if j not in used and p == g:
                used.add(j)
                lines.append(f"(P{i}, G{j}) the same statement")
                break
    return "\n".join(lines or ["NONE"]) + "\nEND"


def bench_llm_matcher(units: list[Unit]) -> None:
    from causalkg.core.config import load_config
    from causalkg.core.llm import ChatClient
    from causalkg.testing.openai_server import OpenAIServer
    from causalkg.evaluation.judging.sqc import LLMMatcher

    graded = [u for u in units if u.predicted and u.gold]
    table = ThroughputTable(f"SQC LLM matcher: {len(graded)} units with predicted and gold facts, one grading prompt "
                            f"each, server latency {LATENCY * 1000:.0f} ms", unit="units")
    with tempfile.TemporaryDirectory(prefix="bench-sqc-") as tmp, OpenAIServer(scripted_grader, latency=LATENCY) as server:
        def run(name: str, cache: str, concurrency: int, **extra: object) -> dict[str, float]:
            cfg = load_config(overrides={"llm.base_url": server.base_url, "llm.model": "test-model",
                                         "llm.concurrency": concurrency, "paths.cache": str(Path(tmp) / cache)},
                              search_cwd=False)
            before = server.chat_requests
            with timed() as t:
                result = score_units(graded, LLMMatcher(ChatClient.from_config(cfg)), None)
            figures = _figures(result)
            table.add(name, len(graded), t.seconds, requests=server.chat_requests - before, **extra, **_cols(figures))
            return figures

        seq = run("one unit at a time (concurrency 1), as the reference grades", "seq", 1, baseline=True)
        par = run("evaluation.judging.sqc LLMMatcher, concurrency 8", "c8", 8)
        again = run("evaluation.judging.sqc LLMMatcher, re-run from the disk cache", "c8", 8)
    table.print()
    assert seq == par == again


def main() -> None:
    units = real_units()
    bench_matchers(units)
    bench_llm_matcher(units)


if __name__ == "__main__":
    main()
