"""LLM-judged precision: the reference's prompts, yes-reading and majority, against a real
OpenAI-compatible server on 127.0.0.1 (faults injected there) and tiny local transformers models."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from causalkg.core.config import load_config
from causalkg.core.errors import ConfigError, ModelError
from causalkg.testing.openai_server import Fault, last_user_message
from causalkg.evaluation.wikicausal.judges import JudgeQuery, create_judge
from causalkg.evaluation.wikicausal.precision import (
    collect_label_pairs, eval_precision, is_yes, load_template, majority, wilson_interval,
)

REPO = Path(__file__).resolve().parents[3]
PREC = REPO / "snapshots" / "wikicausal" / "causenet-precision-linked-v1.jsonl"

INSTRUCTION = ("Definition: Answer the question with yes or no. Now complete the following example - "
               "Input: Question: Could war result in famine? Output:")
QUESTION = "Answer the question with yes or no.\nQuestion: Does war cause famine? Answer:"


def write_jsonl(path: Path, lines) -> Path:
    path.write_text("".join(json.dumps(l) + "\n" for l in lines), encoding="utf-8")
    return path


def kg_lines():
    """A small KG in both shapes with real Wikidata labels and ids (the pairs are invented)."""
    return [
        {"cause": {"label": "earthquake", "id": ["Q7944"]}, "effect": {"label": "tsunami", "id": ["Q8070"]}},
        {"cause": {"label": "earthquake", "id": ["Q7944", "Q8065"]}, "effect": {"label": "tsunami", "id": ["Q8070"]}},
        {"event": {"id": "Q198", "label": "war"}, "consequences": [
            {"id": "Q168247", "label": "famine", "examples": [
                {"cause": {"id": "Q361", "label": "World War I"}, "effect": {"id": "Q1341584", "label": "Russian famine of 1921"}}]},
            {"id": "Q625298", "label": "peace treaty", "examples": []},
        ]},
    ]


def answers_by_topic(body):
    prompt = last_user_message(body)
    if "famine" in prompt:
        return "Yes."
    if "tsunami" in prompt:
        return "  YES, certainly"
    return "no, but it could"


@pytest.fixture
def kg(tmp_path):
    return write_jsonl(tmp_path / "kg.jsonl", kg_lines())


def config(tmp_path, server, **extra):
    overrides = {"llm.base_url": server.base_url, "llm.model": "test-model", "paths.data": str(tmp_path / "data"),
                 "paths.cache": str(tmp_path / "cache"), "llm.max_retries": 3}
    overrides.update(extra)
    return load_config(overrides=overrides, search_cwd=False)


def judge_for(cfg, waits=None, **kw):
    return create_judge("openai:test-model", cfg, sleep=(waits.append if waits is not None else (lambda s: None)), **kw)


# -- the reference's rules -----------------------------------------------------------------------


def test_prompt_templates_are_the_reference_text_verbatim(tmp_path):
    assert load_template("instruction").render("war", "famine") == INSTRUCTION
    assert load_template("question").render("war", "famine") == QUESTION
    custom = tmp_path / "t.txt"
    custom.write_text("Is {cause} a cause of {effect}?\n")
    assert load_template(str(custom)).render("flood", "{effect}") == "Is flood a cause of {effect}?"
    assert load_template("instruction").render("war\nx", "famine").count("\n") == 0
    with pytest.raises(ConfigError, match="unknown precision template 'nope'"):
        load_template("nope")
    custom.write_text("no slots")
    with pytest.raises(ConfigError, match="must contain"):
        load_template(str(custom))


@pytest.mark.parametrize("answer, yes", [
    ("Yes.", True), ("  YES, certainly", True), ("yes", True), ("yesterday", True),  # starts with "yes"
    ("no, but", False), ("No", False), ("", False), ("I think yes", False), ("\nYes", True),
])
def test_an_answer_is_yes_when_it_starts_with_yes(answer, yes):
    assert is_yes(answer) is yes


def test_majority_is_floor_half_plus_one_and_the_interval_brackets_the_share():
    assert [majority(k) for k in (1, 2, 3, 4, 5, 6)] == [1, 2, 2, 3, 3, 4]
    lo, hi = wilson_interval(8, 10)
    assert 0.49 < lo < 0.8 < hi < 0.95
    assert wilson_interval(0, 0) == (0.0, 0.0)


def test_pairs_are_unique_label_pairs_with_their_views(kg):
    coll = collect_label_pairs(kg)
    assert list(coll.pairs) == [("earthquake", "tsunami"), ("war", "famine"),
                                ("World War I", "Russian famine of 1921"), ("war", "peace treaty")]
    assert coll.pairs[("earthquake", "tsunami")].cause_ids == ["Q7944"]  # id[0] of both lines
    assert [p.views for p in coll.pairs.values()] == [["types"], ["types"], ["instances"], ["types"]]
    quirks = collect_label_pairs(kg, reference_quirks=True)
    assert ("e", "tsunami") in quirks.pairs and ("earthquake", "tsunami") not in quirks.pairs


def test_a_pair_both_type_and_instance_is_in_both_views_unless_reference_quirks(tmp_path):
    path = write_jsonl(tmp_path / "kg.jsonl", [
        {"event": {"id": "Q198", "label": "war"}, "consequences": [
            {"id": "Q8065", "label": "famine", "examples": [{"cause": {"id": "Q198", "label": "war"},
                                                               "effect": {"id": "Q8065", "label": "famine"}}]}]},
        {"cause": {"label": None, "id": ["Q1"]}, "effect": {"label": "x", "id": ["Q2"]}},
    ])
    coll = collect_label_pairs(path)
    assert coll.pairs[("war", "famine")].views == ["types", "instances"] and coll.in_both_views == 1
    assert coll.unlabelled == 1
    assert collect_label_pairs(path, reference_quirks=True).pairs[("war", "famine")].views == ["types"]


# -- against a local OpenAI-compatible server ---------------------------------------------------


def test_precision_per_view_with_sampled_tries(openai_server, tmp_path, kg):
    openai_server.responder = answers_by_topic
    cfg = config(tmp_path, openai_server)
    report = eval_precision([kg], judge_for(cfg), cfg=cfg, tries=3)
    rows = {r["view"]: r for r in report.rows}
    assert (rows["types"]["pairs"], rows["types"]["correct"]) == (3, 2)
    assert rows["types"]["precision"] == pytest.approx(2 / 3)
    assert (rows["instances"]["judged"], rows["instances"]["precision"]) == (1, 1.0)
    assert (rows["full"]["correct"], rows["full"]["judged"]) == (3, 4)
    assert rows["full"]["unanimous"] == 4 and rows["full"]["mean_yes"] == pytest.approx(0.75)
    assert report.results[0].reference_row == {"input_kg_file_name": "kg.jsonl", "full precision": 0.75,
                                               "types precision": pytest.approx(2 / 3), "instances precision": 1.0}
    # 4 pairs x 3 tries, each try sampled with its own seed, the reference prompt as the user message
    assert openai_server.chat_requests == 12
    assert sorted(b["seed"] for b in openai_server.requests) == [0] * 4 + [1] * 4 + [2] * 4
    assert all(b["temperature"] == 0.7 and b["max_tokens"] == 10 for b in openai_server.requests)
    assert INSTRUCTION in [last_user_message(b) for b in openai_server.requests]
    j = [x for x in report.results[0].judgements if x["cause"] == "war" and x["effect"] == "famine"][0]
    assert j["prompt"] == INSTRUCTION and j["answers"] == ["Yes."] * 3 and j["verdict"] is True and j["yes"] == 3
    assert report.usage["requests"] == 12 and report.usage["prompt_tokens"] > 0


def test_majority_of_sampled_answers_decides(openai_server, tmp_path, kg):
    openai_server.responder = lambda body: "yes" if body["seed"] in (0, 1) else "no"
    cfg = config(tmp_path, openai_server)
    three = eval_precision([kg], judge_for(cfg), cfg=cfg, tries=3, write=False)
    assert three.rows[0]["precision"] == 1.0 and three.rows[0]["unanimous"] == 0  # 2 of 3 say yes
    four = eval_precision([kg], judge_for(cfg), cfg=cfg, tries=4, write=False)
    assert four.rows[0]["precision"] == 0.0  # 2 of 4 is short of floor(4/2)+1 = 3
    assert openai_server.chat_requests == 16  # tries 0-2 came from the cache the second time


def test_greedy_judge_is_asked_once_per_pair(openai_server, tmp_path, kg):
    openai_server.responder = answers_by_topic
    cfg = config(tmp_path, openai_server)
    report = eval_precision([kg], judge_for(cfg), cfg=cfg, tries=5, temperature=0.0)
    assert openai_server.chat_requests == 4
    assert all(b["temperature"] == 0.0 and "seed" not in b for b in openai_server.requests)
    assert report.rows[0]["correct"] == 3 and report.results[0].judgements[0]["yes"] == 5
    assert any("one greedy answer per pair stands for all 5 tries" in n for n in report.notes)
    one = eval_precision([kg], judge_for(cfg), cfg=cfg, tries=1, write=False)
    assert one.rows[0]["correct"] == 3 and openai_server.chat_requests == 4  # K = 1 is greedy: cached


def test_cache_hits_cost_no_request(openai_server, tmp_path, kg):
    openai_server.responder = answers_by_topic
    cfg = config(tmp_path, openai_server)
    first = eval_precision([kg], judge_for(cfg), cfg=cfg, tries=3)
    assert openai_server.chat_requests == 12
    again = eval_precision([kg], judge_for(cfg), cfg=cfg, tries=3)
    assert openai_server.chat_requests == 12
    assert again.usage["requests"] == 0 and again.usage["cache_hits"] == 12
    assert again.rows == first.rows


def test_429_500_and_a_slow_answer_are_retried_honouring_retry_after(openai_server, tmp_path, kg):
    openai_server.responder = answers_by_topic
    # the slow answer takes twice the timeout; the timeout is generous, so a loaded machine never
    # makes a normal answer late
    openai_server.add_fault(Fault(status=429, retry_after=7), Fault(status=500), Fault(delay=4.0))
    cfg = config(tmp_path, openai_server, **{"llm.timeout": 2.0})
    waits: list[float] = []
    report = eval_precision([kg], judge_for(cfg, waits, concurrency=1), cfg=cfg, tries=1)
    assert waits[0] == 7.0 and len(waits) == 3
    assert report.usage["retries"] == 3 and report.usage["requests"] == 4
    assert [r["failed"] for r in report.rows] == [0, 0, 0] and report.rows[0]["correct"] == 3


def test_pairs_the_judge_cannot_answer_are_failed_not_guessed(openai_server, tmp_path, kg):
    openai_server.responder = answers_by_topic
    openai_server.add_fault(*[Fault(status=503) for _ in range(2)])
    cfg = config(tmp_path, openai_server, **{"llm.max_retries": 1})
    report = eval_precision([kg], judge_for(cfg, concurrency=1), cfg=cfg, tries=1)
    full = report.rows[0]
    assert (full["pairs"], full["judged"], full["failed"]) == (4, 3, 1)
    failed = report.failed[0]
    assert failed["verdict"] is None and "failed after 2 attempts: HTTP 503" in failed["error"]
    rerun = eval_precision([kg], judge_for(cfg), cfg=cfg, tries=1)  # the failed pair is asked again
    assert rerun.rows[0]["failed"] == 0 and rerun.usage["requests"] == 1 and rerun.usage["cache_hits"] == 3


def test_outputs_judgements_summary_reference_layout_and_manifest(openai_server, tmp_path, kg):
    openai_server.responder = answers_by_topic
    cfg = config(tmp_path, openai_server)
    report = eval_precision([kg, PREC], judge_for(cfg), cfg=cfg, tries=1, limit=20,
                            consistency={"tau_all": 0.8667, "cgp": 1.0})
    root = tmp_path / "data" / "eval" / "precision"
    lines = [json.loads(l) for l in (root / "kg" / "judgements.jsonl").read_text().splitlines()]
    assert len(lines) == 4 and set(lines[0]) >= {"cause", "effect", "prompt", "answers", "verdict", "views"}
    ref = (root / "precision-reference.md").read_text().splitlines()
    assert ref[0] == "# Precision Results"
    assert ref[2] == "| input_kg_file_name | full precision | types precision | instances precision |"
    assert ref[4] == "| kg.jsonl | 0.7500 | 0.6667 | 1.0000 |"
    summary = json.loads((root / "precision.json").read_text())
    assert summary["settings"]["tries"] == 1 and summary["usage"]["requests"] == report.usage["requests"]
    assert "judge_tau_all" in (root / "precision.md").read_text().splitlines()[0]
    assert report.consistency_line() == "judge consistency (eval consistency): tau_all 0.8667, cgp 1.0000"
    assert (root / "precision.png").read_bytes()[:4] == b"\x89PNG"
    judge = json.loads((root / "manifest.json").read_text())["models"]["judge"]
    assert judge["model"] == "test-model" and judge["spec"] == "openai.v1:test-model"  # the versioned name
    assert any("only the first 20 of 433 pairs judged" in n for n in report.notes)
    assert len((root / "causenet-precision-linked-v1" / "judgements.jsonl").read_text().splitlines()) == 20


def test_reference_quirks_show_the_first_character_defect(openai_server, tmp_path):
    openai_server.responder = lambda body: "yes"
    cfg = config(tmp_path, openai_server)
    ours = eval_precision([PREC], judge_for(cfg), cfg=cfg, tries=1, limit=3, write=False)
    quirky = eval_precision([PREC], judge_for(cfg), cfg=cfg, tries=1, reference_quirks=True, limit=3, write=False)
    assert ours.results[0].judgements[0]["prompt"].endswith("Could accident result in death? Output:")
    assert quirky.results[0].judgements[0]["prompt"].endswith("Could a result in death? Output:")
    assert len(collect_label_pairs(PREC).pairs) == 433
    assert len(collect_label_pairs(PREC, reference_quirks=True).pairs) == 294


# -- a local transformers judge (tiny random models: mechanics, not quality) --------------------


@pytest.fixture(scope="module")
def tiny_models(tmp_path_factory):
    from causalkg.testing.tiny_models import tiny_causal_lm, tiny_seq2seq

    root = tmp_path_factory.mktemp("judges")
    return {"seq2seq": tiny_seq2seq(root / "s2s"), "causal": tiny_causal_lm(root / "clm")}


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["seq2seq", "causal"])
def test_transformers_judge_batches_samples_and_caches(tiny_models, tmp_path, kg, kind):
    import torch

    torch.set_num_threads(1)
    cfg = load_config(overrides={"paths.data": str(tmp_path / "data"), "paths.cache": str(tmp_path / "cache"),
                                 "eval.precision.batch_size": 3, "eval.precision.max_tokens": 4}, search_cwd=False)
    spec = f"transformers:{tiny_models[kind]}"
    report = eval_precision([kg], spec, cfg=cfg, tries=3)
    assert report.judge["seq2seq"] is (kind == "seq2seq") and report.judge["device"] == "cpu"
    assert report.usage["requests"] == 12 and report.usage["completion_tokens"] > 0
    for j in report.results[0].judgements:
        assert len(j["answers"]) == 3 and all(isinstance(a, str) for a in j["answers"])
        assert j["yes"] == sum(is_yes(a) for a in j["answers"])
        # a tiny random model says mostly neither yes nor no: such a pair has no verdict
        assert j["verdict"] == (None if j["abstained"] else j["yes"] >= 2)
    again = eval_precision([kg], spec, cfg=cfg, tries=3)
    assert again.usage["requests"] == 0 and again.usage["cache_hits"] == 12
    assert [j["answers"] for j in again.results[0].judgements] == [j["answers"] for j in report.results[0].judgements]
    # greedy decoding is deterministic: a fresh judge without the cache gives the same answers
    a = create_judge(spec, cfg, temperature=0.0)
    a.cache = None
    b = create_judge(spec, cfg, temperature=0.0)
    b.cache = None
    q = [JudgeQuery(INSTRUCTION), JudgeQuery(QUESTION)]
    assert a.answer(q) == b.answer(q)


def test_transformers_judge_reports_a_model_it_cannot_load(tmp_path, kg):
    cfg = load_config(overrides={"paths.cache": str(tmp_path / "cache")}, search_cwd=False)
    with pytest.raises(ModelError, match="cannot load judge model") as exc:
        eval_precision([kg], f"transformers:{tmp_path / 'no-model'}", cfg=cfg, tries=1, write=False)
    assert "give a local folder" in str(exc.value)


# -- the command ---------------------------------------------------------------------------------


def test_cli_precision_prints_the_summary_usage_and_reference_layout(cli, openai_server, tmp_path, kg):
    openai_server.responder = answers_by_topic
    base = ["eval", "precision", "--kg", kg, "--judge", "openai:test-model", "--set", f"llm.base_url={openai_server.base_url}",
            "--format", "md"]
    res = cli(*base, "--tries", "3", cwd=tmp_path)
    assert res.code == 0, res.err
    lines = res.out.splitlines()
    assert lines[0].startswith("| input_kg_file_name | view | pairs | judged | correct | precision | ci_low | ci_high |")
    assert lines[2].startswith("| kg.jsonl | full | 4 | 4 | 3 | 0.7500 |")
    assert lines[-1].startswith("judge openai:test-model: 12 requests, 0 cache hits, 0 retries, 0 failures")
    assert (tmp_path / "data" / "eval" / "precision" / "kg" / "judgements.jsonl").exists()
    res = cli(*base, "--tries", "3", "--reference-table")
    assert res.out.splitlines()[2] == "| kg.jsonl | 0.7500 | 0.6667 | 1.0000 |"
    assert "12 cache hits" in res.out and openai_server.chat_requests == 12
    res = cli(*base, "--tries", "3", "--format", "json")
    data = json.loads(res.out)
    assert data["reference"][0]["full precision"] == 0.75 and data["usage"]["cache_hits"] == 12
    res = cli(*base, "--tries", "1", "--template", "question", "--format", "csv", "--reference-quirks")
    assert res.code == 0 and res.out.splitlines()[0].startswith("input_kg_file_name,view,pairs")
    assert last_user_message(openai_server.requests[-1]).startswith("Answer the question with yes or no.\nQuestion: Does ")
    assert "--reference-quirks" in res.err


def test_cli_precision_errors(cli, openai_server, tmp_path, kg):
    res = cli("eval", "precision", "--kg", kg, cwd=tmp_path)
    assert res.code == 2
    assert res.err.startswith("error: no judge configured (pass --judge openai:MODEL")
    res = cli("eval", "precision", "--kg", kg, "--judge", "magic:model")
    assert res.code == 2 and res.err.strip() == "error: unknown judge 'magic' (choose one of: openai, transformers)"
    res = cli("eval", "precision", "--kg", kg, "--judge", "openai:m", "--tries", "0")
    assert res.code == 2 and "--tries must be at least 1" in res.err
    openai_server.add_fault(*[Fault(status=500) for _ in range(4)])
    res = cli("eval", "precision", "--kg", kg, "--judge", "openai:m", "--tries", "1", "--concurrency", "1",
              "--set", f"llm.base_url={openai_server.base_url}", "--set", "llm.max_retries=0", "--format", "md")
    assert res.code == 1 and "| kg.jsonl | full | 4 | 0 | 0 |" in res.out
    assert res.err.strip().endswith(
        "error: 4 of 4 pairs could not be judged (first error: chat request to "
        f"{openai_server.base_url} (model m) failed after 1 attempts: HTTP 500); this run's partial result is in "
        f"{tmp_path / 'data' / 'eval' / 'precision' / 'precision.partial.json'} "
        "(rerun the same command to retry them; answers so far are cached)")


def test_cli_precision_shows_the_judge_consistency_measured_by_eval_consistency(cli, openai_server, tmp_path, kg):
    """The hook to ``evaluation.judging.consistency``: a saved consistency run for the same judge (its
    manifest, written here as ``eval consistency`` writes it) is shown beside the precision."""
    from causalkg.core.manifest import build_manifest, write_manifest

    figures = {m: {"mean": v, "std": 0.1} for m, v in
               (("tau_all", 0.8667), ("tau_supporters", 0.8), ("tau_defeaters", 0.6), ("cgp", 1.0), ("igc", 0.9))}
    write_manifest(tmp_path / "data" / "eval" / "consistency" / "openai-test-model" / "run1", build_manifest(
        "eval.consistency", None, counts={"pairs": 3, "scored": 3, "failed": 0},
        extra={"judge": "openai:test-model", "method": "llm", "headline": "tau_all", "figures": figures}))
    openai_server.responder = answers_by_topic
    res = cli("eval", "precision", "--kg", kg, "--judge", "openai:test-model", "--tries", "1",
              "--set", f"llm.base_url={openai_server.base_url}", "--format", "md", cwd=tmp_path)
    assert res.code == 0, res.err
    header = res.out.splitlines()[0]
    assert header.endswith("| failed | abstained | unparsed | judge_tau_all | judge_tau_supporters | judge_tau_defeaters | judge_cgp | judge_igc |")
    assert res.out.splitlines()[2].endswith("| 0 | 0.8667 | 0.8000 | 0.6000 | 1.0000 | 0.9000 |")
    line = res.out.splitlines()[-1]
    assert line.startswith("judge consistency (openai:test-model, 3 pairs, ") and "tau all 0.867 ± 0.100" in line


def test_answers_neither_yes_nor_no_are_counted_apart_not_as_no(openai_server, tmp_path, kg):
    """"Perhaps." and "" are unparsed (abstained when a pair has no other answer), reported in
    the rows and the notes; a pair with some yes/no answers keeps the reference's verdict."""
    def answer(body):
        prompt = last_user_message(body)
        if "earthquake" in prompt:
            return "Perhaps."
        if "famine" in prompt and "World War" not in prompt:
            return "" if body["seed"] == 0 else "Yes."
        return "No."
    openai_server.responder = answer
    cfg = config(tmp_path, openai_server)
    report = eval_precision([kg], judge_for(cfg), cfg=cfg, tries=3)
    by_pair = {(j["cause"], j["effect"]): j for j in report.results[0].judgements}
    quake = by_pair[("earthquake", "tsunami")]
    assert quake["verdict"] is None and quake["abstained"] and quake["unparsed"] == 3
    assert quake["error"] == "the judge answered neither yes nor no: 'Perhaps.'"
    famine = by_pair[("war", "famine")]
    assert famine["verdict"] is True and famine["unparsed"] == 1 and not famine["abstained"]
    full = report.rows[0]
    assert (full["pairs"], full["judged"], full["abstained"], full["failed"], full["unparsed"]) == (4, 3, 1, 0, 4)
    assert full["correct"] == 1  # war -> famine; the "No." pairs are no
    assert any("4 answers were neither yes nor no (e.g. 'Perhaps.')" in n and "1 pairs" in n for n in report.notes)
