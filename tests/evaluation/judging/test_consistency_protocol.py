"""The consistency protocol end to end: an LLM judge on a local OpenAI-compatible server started by
the test (deterministic generations and rankings, malformed answers, HTTP faults), the
token-probability judge on a tiny causal LM built in the test, saving and finding results, and
the ``eval consistency`` command."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from causalkg.core.config import load_config
from causalkg.core.errors import ConfigError
from causalkg.testing.openai_server import Fault
from causalkg.evaluation.judging.consistency import (
    INTENDED_LABELS, consistency, load_judge_consistency, order_from_ranks, pair_metrics, read_pairs,
)

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "consistency" / "delta-causal-test-sample.csv"
REFERENCE_RANKS = [0, 1, 3, 4, 2, 5, 6, 8, 7, 9]
IDENTITY = list(range(10))
REVERSED = list(range(9, -1, -1))


class ScriptedJudge:
    """Writes versions by appending a tag, remembers each text's intended position, and ranks as
    ``plan(cause)`` says: a list of ranks, or "garbage" (an unreadable answer every time), or
    "garbage-once" (unreadable first, correct after the correction)."""

    def __init__(self, plan=None):
        self.known: dict[str, int] = {}
        self.plan = plan or (lambda cause: IDENTITY)

    def __call__(self, body):
        msgs = body["messages"]
        prompt = msgs[0]["content"]
        if "Write one supporter and one defeater" in prompt:
            cause = re.search(r"^Cause: (.*)$", prompt, re.M).group(1)
            return json.dumps({"supporter": f"Conditions favour it ({cause})", "defeater": f"Something prevents it ({cause})"})
        m = re.search(r"^(Defeater|Supporter): (.*)$", prompt, re.M)
        if m and "four new versions" in prompt:
            role, st = m.groups()
            v = {k: f"{st} [{k}]" for k in ("much_stronger", "slightly_stronger", "slightly_weaker", "much_weaker")}
            seq = ([v["much_stronger"], v["slightly_stronger"], st, v["slightly_weaker"], v["much_weaker"]]
                   if role == "Defeater" else
                   [v["much_weaker"], v["slightly_weaker"], st, v["slightly_stronger"], v["much_stronger"]])
            base = 0 if role == "Defeater" else 5
            for i, t in enumerate(seq):
                self.known[t] = base + i
            return json.dumps(v)
        if "Rank all ten" in prompt:
            cause = re.search(r"^Cause: (.*)$", prompt, re.M).group(1)
            plan = self.plan(cause)
            if plan == "garbage" or (plan == "garbage-once" and len(msgs) == 1):
                return "They are all quite plausible, it depends on the context."
            ranks = IDENTITY if plan == "garbage-once" else plan
            items = dict((t, l) for l, t in re.findall(r"^([A-J])\. (.*)$", prompt, re.M))
            by_intended = {self.known[t]: l for t, l in items.items()}
            return json.dumps({"ranking": [by_intended[i] for i in order_from_ranks(ranks)]})
        return "unexpected prompt"


def make_cfg(server, tmp_path, **extra):
    over = {"llm.base_url": server.base_url, "llm.backoff_base": 0.0, "llm.max_retries": 2,
            "paths.data": str(tmp_path / "data"), "paths.cache": str(tmp_path / "cache")}
    over.update(extra)
    return load_config(search_cwd=False, overrides=over)


def test_llm_protocol_reference_values_and_outputs(openai_server, tmp_path):
    pairs = read_pairs(FIXTURE)
    plans = {pairs[0].cause: IDENTITY, pairs[1].cause: REFERENCE_RANKS, pairs[2].cause: REVERSED}
    openai_server.responder = ScriptedJudge(lambda cause: plans[cause])
    src = tmp_path / "three.jsonl"
    src.write_text("".join(json.dumps({"id": p.id, "cause": p.cause, "effect": p.effect, "supporter": p.supporter,
                                       "defeater": p.defeater}) + "\n" for p in pairs[:3]))
    cfg = make_cfg(openai_server, tmp_path)
    result = consistency(cfg, pairs=src, judge="openai:test-model")
    assert result.scored == 3 and not result.failures
    assert openai_server.chat_requests == 3 * 3  # two generation prompts and one ranking prompt per pair
    s = result.summary["llm"]
    assert s["tau_supporters"]["mean"] == pytest.approx((1 + 0.8 - 1) / 3)
    assert s["tau_defeaters"]["mean"] == pytest.approx((1 + 0.6 - 1) / 3)
    assert s["tau_all"]["mean"] == pytest.approx((1 + (1 - 6 / 45) - 1) / 3)
    assert s["cgp"]["mean"] == pytest.approx(2 / 3)
    records = [json.loads(x) for x in (result.out / "pairs.jsonl").read_text().splitlines()]
    by_id = {r["id"]: r for r in records}
    ref = by_id[pairs[1].id]
    assert ref["rankings"]["llm"] == REFERENCE_RANKS
    assert ref["metrics"]["llm"]["tau_defeaters"] == pytest.approx(0.6)
    assert ref["metrics"]["llm"]["tau_all"] == pytest.approx(0.8667, abs=1e-4)
    assert [i["label"] for i in ref["intermediates"]] == list(INTENDED_LABELS)
    assert ref["intermediates"][2]["text"] == pairs[1].defeater and ref["intermediates"][7]["text"] == pairs[1].supporter
    assert sorted(ref["presentation"]) == sorted(INTENDED_LABELS) and ref["presentation"] != list(INTENDED_LABELS)
    # Each ranking prompt shows one pair's ten statements. Pairs are judged concurrently, so the
    # prompts arrive in any order: match them to the records as sets.
    rank_prompts = [b["messages"][0]["content"] for b in openai_server.requests if "Rank all ten" in b["messages"][0]["content"]]
    shown = [re.findall(r"^[A-J]\. (.*)$", prompt, re.M) for prompt in rank_prompts]
    assert len(shown) == 3 and all(len(texts) == 10 for texts in shown)
    assert sorted(sorted(texts) for texts in shown) == sorted(sorted(i["text"] for i in r["intermediates"]) for r in records)
    summary = json.loads((result.out / "summary.json").read_text())
    assert summary["scored"] == 3 and summary["confusion"]["llm"][2][3] == 1
    png = (result.out / "confusion.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000
    manifest = json.loads((result.out / "manifest.json").read_text())
    assert manifest["judge"] == "openai.v1:test-model" and manifest["counts"]["scored"] == 3  # the versioned name
    assert manifest["models"] == {"judge": "openai.v1:test-model", "generator": "openai.v1:test-model"}
    # A rerun asks nothing: every answer comes from the disk cache.
    before = openai_server.chat_requests
    again = consistency(cfg, pairs=src, judge="openai:test-model")
    assert openai_server.chat_requests == before and again.summary == result.summary


def test_malformed_answers_are_retried_then_reported(openai_server, tmp_path):
    pairs = read_pairs(FIXTURE)[:4]
    plans = {pairs[0].cause: "garbage-once", pairs[1].cause: "garbage", pairs[2].cause: IDENTITY,
             pairs[3].cause: REVERSED}
    openai_server.responder = ScriptedJudge(lambda cause: plans[cause])
    openai_server.add_fault(Fault(status=500), Fault(malformed=True))  # HTTP faults: retried by the client
    cfg = make_cfg(openai_server, tmp_path, **{"eval.consistency.max_attempts": 3})
    result = consistency(cfg, pairs=FIXTURE, judge="openai:test-model", limit=0)
    ids = {p.id for p in pairs}
    fails = {f["id"]: f["error"] for f in result.failures}
    assert pairs[1].id in fails and "no usable answer after 3 attempt(s)" in fails[pairs[1].id]
    assert pairs[0].id not in fails and pairs[2].id not in fails
    records = {json.loads(x)["id"]: json.loads(x) for x in (result.out / "pairs.jsonl").read_text().splitlines()}
    assert len(records[pairs[0].id]["answers"]["rank"]) == 2  # unreadable, then corrected
    assert records[pairs[0].id]["rankings"]["llm"] == IDENTITY
    assert len(records[pairs[1].id]["answers"]["rank"]) == 3 and records[pairs[1].id]["rankings"] == {}
    # The correction turn quotes the parser's complaint back to the model.
    retry = next(b for b in openai_server.requests if len(b["messages"]) == 3)
    assert "could not be used: no ranking found" in retry["messages"][2]["content"]
    assert ids <= set(records)


def test_kg_edges_get_a_supporter_and_defeater_first(openai_server, tmp_path):
    openai_server.responder = ScriptedJudge()
    kg = tmp_path / "kg.jsonl"
    kg.write_text('{"cause": {"label": "earthquake", "id": ["Q7944"]}, "effect": {"label": "tsunami", "id": ["Q8070"]}}\n')
    result = consistency(make_cfg(openai_server, tmp_path), pairs=kg, judge="openai:test-model")
    assert result.scored == 1 and result.summary["llm"]["tau_all"]["mean"] == 1.0
    rec = json.loads((result.out / "pairs.jsonl").read_text())
    assert rec["supporter"] == "Conditions favour it (earthquake)" and len(rec["answers"]["seed"]) == 1


def test_load_judge_consistency_finds_the_latest_run(openai_server, tmp_path):
    cfg = make_cfg(openai_server, tmp_path)
    assert load_judge_consistency(cfg, "openai:test-model") is None
    judge = ScriptedJudge(lambda cause: IDENTITY)
    openai_server.responder = judge
    consistency(cfg, pairs=FIXTURE, judge="openai:test-model", limit=2)
    first = load_judge_consistency(cfg, "test-model")  # a bare name means openai:
    assert first["figures"]["tau_all"]["mean"] == 1.0 and first["scored"] == 2
    judge.plan = lambda cause: REVERSED  # the same judge: its generations are answered from the cache
    consistency(cfg, pairs=FIXTURE, judge="openai:test-model", limit=3, seed=1)
    latest = load_judge_consistency(cfg, "openai:test-model")
    assert latest["figures"]["tau_all"]["mean"] == -1.0 and latest["scored"] == 3
    assert latest["path"] != first["path"]
    assert load_judge_consistency(cfg, "openai:another-model") is None
    # The manifests say openai.v1:test-model; asking with the version finds the same run.
    assert load_judge_consistency(cfg, "openai.v1:test-model")["path"] == latest["path"]
    from causalkg.evaluation.judging.consistency import format_judge_consistency

    line = format_judge_consistency(latest)
    assert line.startswith("judge consistency (openai:test-model, 3 pairs,") and "CGP 0.000 ± 0.000" in line


@pytest.mark.slow
def test_token_probability_judge_on_a_tiny_causal_lm(openai_server, tmp_path):
    from causalkg.testing.tiny_models import tiny_causal_lm

    lm = tiny_causal_lm(tmp_path / "lm")
    openai_server.responder = ScriptedJudge()
    cfg = make_cfg(openai_server, tmp_path, **{"eval.consistency.batch_size": 7})
    with pytest.raises(ConfigError, match="does not write them"):
        consistency(cfg, pairs=FIXTURE, judge=f"transformers:{lm}", limit=2)
    result = consistency(cfg, pairs=FIXTURE, judge=f"transformers:{lm}", generator="openai:test-model", limit=2,
                         conjunctions=["so", "because"])
    assert result.method == "tokenprob" and result.variants == ["so", "because", "combined"]
    assert result.scored == 2 and result.headline == "combined"
    rec = json.loads((result.out / "pairs.jsonl").read_text().splitlines()[0])
    scores = rec["log_cs"]
    assert len(scores["so"]) == 10 and all(v < 0 for v in scores["so"])
    assert scores["combined"] == pytest.approx([(a + b) / 2 for a, b in zip(scores["so"], scores["because"])])
    # The ranking orders the intermediates by causal strength, lowest first.
    order = order_from_ranks(rec["rankings"]["so"])
    assert [scores["so"][i] for i in order] == sorted(scores["so"])
    assert rec["metrics"]["so"] == pair_metrics(rec["rankings"]["so"])
    # A second judge run reuses the generated intermediates from pairs.jsonl: no generator needed.
    again = consistency(cfg, pairs=result.out / "pairs.jsonl", judge=f"transformers:{lm}", conjunctions=["so", "because"])
    assert again.summary == result.summary
    # A pair that a previous run failed (no intermediates) is reported, the others are scored.
    partial = tmp_path / "partial.jsonl"
    partial.write_text(json.dumps(rec) + "\n" + json.dumps({**rec, "id": "failed-before", "intermediates": None}) + "\n")
    mixed = consistency(cfg, pairs=partial, judge=f"transformers:{lm}", conjunctions=["so"])
    assert mixed.scored == 1 and mixed.failures == [
        {"id": "failed-before", "error": "no intermediates (pass --generator openai:MODEL to write them)"}]


def test_batched_log_probabilities_equal_one_at_a_time(tmp_path):
    import torch

    from causalkg.testing.tiny_models import tiny_causal_lm
    from causalkg.evaluation.judging.causal_lm import CausalLMScorer

    lm = tiny_causal_lm(tmp_path / "lm", seed=1)
    scorer = CausalLMScorer(str(lm), device="cpu", batch_size=3)
    prefixes = ["The dam broke and the rain kept falling, so", "War, therefore", "A long drought hit the region and crops failed, hence"]
    conts = ["the valley flooded", "famine", "food prices rose sharply across the country"]
    batched = scorer.logprobs(prefixes, conts)
    tok, model = scorer.tokenizer, scorer.model
    for p, c, got in zip(prefixes, conts, batched):
        ids = tok(p + " " + c)["input_ids"]
        n_prefix = len(tok(p)["input_ids"]) - 1  # without the final [SEP]
        ids = ids[:-1]  # drop [SEP]
        with torch.inference_mode():
            logp = torch.log_softmax(model(torch.tensor([ids])).logits[0].float(), -1)
        want = sum(float(logp[t - 1, ids[t]]) for t in range(n_prefix, len(ids)))
        assert got == pytest.approx(want, abs=1e-4)
    assert batched[1] > batched[2]  # one word is more probable than seven


def test_cli_consistency(cli, in_tmp, openai_server):
    openai_server.responder = ScriptedJudge(lambda cause: REFERENCE_RANKS)
    base = ["--set", f"llm.base_url={openai_server.base_url}", "--set", "llm.backoff_base=0"]
    r = cli("eval", "consistency", "--pairs", FIXTURE, "--judge", "openai:test-model", "--limit", "3", *base,
            "--format", "md")
    assert r.code == 0, r.err
    assert "| llm | 3 | 0.800 ± 0.000 | 0.600 ± 0.000 | 0.867 ± 0.000 | 1.000 ± 0.000 | 1.000 ± 0.000 |" in r.out
    assert "judge openai:test-model: 3 of 3 pairs ranked" in r.out
    found = list((in_tmp / "data" / "eval" / "consistency" / "openai_test-model").glob("*/confusion.png"))
    assert len(found) == 1
    r = cli("eval", "consistency", "--pairs", FIXTURE, "--judge", "openai:test-model", "--limit", "3",
            "--format", "json", *base)
    doc = json.loads(r.out)
    assert doc["summary"]["llm"]["tau_defeaters"]["mean"] == pytest.approx(0.6)
    r = cli("eval", "consistency", "--pairs", FIXTURE, "--limit", "4", "--dry-run", *base)
    assert r.code == 0 and json.loads(r.out)["pairs"] == 4 and json.loads(r.out)["judge"] == "openai:gpt-4o-mini"


def test_cli_consistency_errors(cli, in_tmp, openai_server):
    r = cli("eval", "consistency", "--pairs", in_tmp / "missing.csv")
    assert r.code == 1 and r.err.strip() == f"error: {in_tmp / 'missing.csv'}: no such file"
    r = cli("eval", "consistency", "--pairs", FIXTURE, "--judge", "ollama:x")
    assert r.code == 2 and "error: unknown consistency judge backend 'ollama'" in r.err
    r = cli("eval", "consistency", "--pairs", FIXTURE, "--judge", "transformers:some/model")
    assert r.code == 2 and "the token-probability judge ranks intermediates but does not write them" in r.err
    openai_server.responder = ScriptedJudge(lambda cause: "garbage")
    r = cli("eval", "consistency", "--pairs", FIXTURE, "--judge", "openai:test-model", "--limit", "1",
            "--set", f"llm.base_url={openai_server.base_url}", "--set", "eval.consistency.max_attempts=1")
    assert r.code == 1
    assert "error: no pair could be ranked (first: ranking: no usable answer after 1 attempt(s): no ranking found" in r.err
