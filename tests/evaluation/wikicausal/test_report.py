"""``causalkg eval report`` (what ``make eval`` runs): missing inputs are reported, not a crash;
recall of every KG against every Base KG; precision only when a judge is configured."""

from __future__ import annotations

import json
from pathlib import Path

from causalkg.testing.openai_server import Fault, last_user_message

REPO = Path(__file__).resolve().parents[3]
WIKICAUSAL = REPO / "snapshots" / "wikicausal"


def lines_of(path: Path, n: int) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()[:n]


def fake_build(root: Path) -> None:
    """Stand-ins for `make corpus` and `make kg` outputs, cut from the real WikiCausal files: the
    first 10 Base KG classes as the built Base KG, 3 of them as our nested KG, 40 CauseNet lines
    as our flat KG, and an invented three-document corpus."""
    (root / "data" / "wikidata").mkdir(parents=True)
    (root / "data" / "kg").mkdir(parents=True)
    (root / "data" / "corpus").mkdir(parents=True)
    base = lines_of(WIKICAUSAL / "base-kg-v1.jsonl", 10)
    (root / "data" / "wikidata" / "base_kg.jsonl").write_text("\n".join(base) + "\n", encoding="utf-8")
    (root / "data" / "kg" / "causal_kg.jsonl").write_text("\n".join(base[:3]) + "\n", encoding="utf-8")
    flat = lines_of(WIKICAUSAL / "causenet-full-linked-v1.jsonl", 40)
    (root / "data" / "kg" / "causal_kg_pairs.jsonl").write_text("\n".join(flat) + "\n", encoding="utf-8")
    docs = [{"id": i, "title": t, "url": "u", "text": "", "document_concept": {"id": q, "label": t}}
            for i, (q, t) in enumerate([("Q180684", "Conflict"), ("Q2727213", "Theft"), ("Q1070342", "King William's War")])]
    (root / "data" / "corpus" / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")


def test_report_without_built_data_lists_what_is_missing_and_skips_precision(cli, tmp_path):
    res = cli("eval", "report", cwd=tmp_path)
    assert res.code == 0, res.err
    report = tmp_path / "data" / "eval" / "report.md"
    assert res.out.splitlines()[0] == f"wrote {report}"
    make_kg = ("make kg (= causalkg corpus build; causalkg link build; causalkg kg train-qa --if-missing; "
               "causalkg kg extract; causalkg kg assemble)")
    assert f"missing our KG (base-KG shape): {tmp_path}/data/kg/causal_kg.jsonl (make it with: {make_kg})" in res.out
    assert (f"missing Base KG (built from Wikidata): {tmp_path}/data/wikidata/base_kg.jsonl "
            "(make it with: make corpus (= causalkg corpus build))") in res.out
    assert "precision skipped: no judge configured" in res.out
    text = report.read_text()
    assert "| our KG (flat pairs) | " in text and f"missing: {make_kg}" in text
    assert "## Recall against Base KG (bundled WikiCausal v1): `base-kg-v1.jsonl`" in text
    assert "## Recall against Base KG (built from Wikidata)" not in text
    assert "| causenet-full-linked-v1.jsonl | base-kg-v1.jsonl | classes | 0.1265 | 54 | 560 | 427 | 29 | 0.5800 |" in text
    assert "| causenet-full-linked-v1.jsonl | classes | 0.1265 | 0.1265 |" in text  # beside the published figure
    assert "Skipped: no judge is configured." in text and 'precision_judge = "openai:gpt-4o-mini"' in text
    assert (tmp_path / "data" / "eval" / "recall" / "base-kg-v1" / "recall_by_class.png").read_bytes()[:4] == b"\x89PNG"
    assert "![recall per seed class](recall/base-kg-v1/recall_by_class.png)" in text
    manifest = json.loads((tmp_path / "data" / "eval" / "manifest.json").read_text())
    assert manifest["stage"] == "eval-report" and manifest["counts"]["missing"] == 4


def test_report_with_our_kg_both_base_kgs_the_corpus_and_a_judge(cli, openai_server, tmp_path):
    fake_build(tmp_path)
    openai_server.responder = lambda body: "Yes." if "war" in last_user_message(body) else "no"
    res = cli("eval", "report", "--judge", "openai:test-model", "--tries", "1", "--limit", "5",
              "--set", f"llm.base_url={openai_server.base_url}", cwd=tmp_path)
    assert res.code == 0, res.err
    assert not [line for line in res.out.splitlines() if line.startswith(("missing", "empty"))]
    text = (tmp_path / "data" / "eval" / "report.md").read_text()
    assert "## Recall against Base KG (built from Wikidata): `base_kg.jsonl`" in text
    # our nested KG is the first three classes of the built Base KG: recall of those classes is 1
    assert "| causal_kg.jsonl | base_kg.jsonl | classes |" in text and "reachable_recall" in text
    built = json.loads((tmp_path / "data" / "eval" / "recall" / "base_kg" / "recall.json").read_text())
    ours = {r["eval_type"]: r for r in built if r["input_kg_file_name"] == "causal_kg.jsonl"}
    assert ours["full"]["precision"] == 1.0 and ours["classes"]["reachable_recall"] == 1.0
    assert ours["classes"]["reachable_base_size"] > 0
    assert "## Precision (LLM-judged)" in text and "Judge `openai:test-model`, 1 tries per pair (greedy)" in text
    assert "| causal_kg_pairs.jsonl | full | 5 | 5 |" in text
    assert "| causenet-full-linked-v1.jsonl | 0.8650 | 0.8650 | 0.0000 |" in text  # the published row
    # 4 KGs x their first 5 pairs; our flat KG and both CauseNet KGs share their first 5 lines:
    # those are asked once, then answered from the cache
    assert openai_server.chat_requests == 10
    assert "10 requests, 10 cache hits" in text
    assert (tmp_path / "data" / "eval" / "precision" / "precision.png").exists()


def test_report_says_when_precision_failed_and_exits_non_zero(cli, openai_server, tmp_path):
    res = cli("eval", "report", "--no-plots", cwd=tmp_path)  # a complete report (precision skipped)
    assert res.code == 0, res.err
    good = (tmp_path / "data" / "eval" / "report.md").read_bytes()
    openai_server.add_fault(*[Fault(status=500) for _ in range(50)])
    res = cli("eval", "report", "--judge", "openai:test-model", "--tries", "1", "--limit", "2", "--no-plots",
              "--set", f"llm.base_url={openai_server.base_url}", "--set", "llm.max_retries=0", cwd=tmp_path)
    assert res.code == 1
    assert "error: some pairs could not be judged; see the report" in res.err
    assert (f"(this run's report is {tmp_path / 'data' / 'eval' / 'report.partial.md'}; the last complete report.md "
            "beside it is kept)") in res.err
    assert (tmp_path / "data" / "eval" / "report.md").read_bytes() == good  # never replaced by a failed run
    text = (tmp_path / "data" / "eval" / "report.partial.md").read_text()
    assert "4 pairs could not be judged (first error: chat request to" in text
    assert "run `make eval` again to retry them" in text
    assert not (tmp_path / "data" / "eval" / "recall" / "base-kg-v1" / "recall_by_class.png").exists()


def test_report_flags_inputs_that_are_there_but_empty(cli, tmp_path):
    """A stage that ran and found nothing (an empty corpus, so an empty KG) leaves 0-byte files:
    the report says so instead of listing them as found and scoring them 0 without a word."""
    fake_build(tmp_path)
    for name in ("kg/causal_kg.jsonl", "kg/causal_kg_pairs.jsonl", "corpus/corpus.jsonl"):
        (tmp_path / "data" / name).write_text("", encoding="utf-8")
    res = cli("eval", "report", "--no-plots", cwd=tmp_path)
    assert res.code == 0, res.err
    assert (f"empty our KG (flat pairs): {tmp_path}/data/kg/causal_kg_pairs.jsonl (0 bytes: the stage that wrote it "
            "found nothing; see its output, or: make kg (= causalkg corpus build; causalkg link build; "
            "causalkg kg train-qa --if-missing; causalkg kg extract; causalkg kg assemble))") in res.out
    assert "empty corpus (for reachable recall)" in res.out
    assert not [line for line in res.out.splitlines() if line.startswith("missing")]
    text = (tmp_path / "data" / "eval" / "report.md").read_text()
    assert "| our KG (base-KG shape) | " in text and "| empty (0 bytes): make kg (= causalkg corpus build;" in text
    assert "Empty inputs are there but hold nothing" in text and "our KG (flat pairs) `causal_kg_pairs.jsonl`" in text
    assert "| causal_kg_pairs.jsonl | base_kg.jsonl | full | 0.0000 | 0 | 0 |" in text  # still scored: 0
    manifest = json.loads((tmp_path / "data" / "eval" / "manifest.json").read_text())
    assert manifest["counts"]["empty"] == 3 and manifest["counts"]["missing"] == 0
