"""SQC-Score: hand-computed cases with an LLM matcher and complementer on a local OpenAI-compatible
server started by the test, the readers and the formulas, and the ``eval sqc`` command.
(The embedding matcher on real sentences and the NLI complementer: test_sqc_models.py.)"""

from __future__ import annotations

import json
import re
import statistics

import pytest

from causalkg.core.config import load_config
from causalkg.core.errors import ConfigError, SchemaError
from causalkg.evaluation.judging.llm_answers import ParseError
from causalkg.evaluation.judging.sqc import (
    Templates, Unit, _match_line_parser, build_complementer, build_matcher, fact_from_record, parse_probability,
    read_units, score_units, sqc, sqc_figures,
)

T = Templates()


def edge(c, e):
    return fact_from_record({"cause": c, "effect": e}, T)


# Invented entailment answers, chosen so that the figures can be computed by hand.
ENTAIL = {
    "drought causes wildfire.": "0.8",  # gold
    "heat causes power cuts.": "0.5",  # gold
    "drought causes crop failure.": "0.7",  # gold
    "storm causes flooding.": "0.3",  # gold
    "drought causes wildfires.": "0.9",  # unmatched prediction: credited
    "wind causes wildfires.": "0.2",  # unmatched prediction: not credited
    "rain causes landslides.": "0.95",  # prediction in a unit without gold: credited
    "snow causes avalanches.": "0.1",  # prediction in a unit without gold: not credited
}
MATCHES = {"drought causes forest fires.": "drought causes wildfire.", "storms causes floods.": "storm causes flooding."}


class Grader:
    """Matches by MATCHES, scores entailment from ENTAIL; unreadable answers on request."""

    def __init__(self, bad_match_answers=0, bad_entail=()):
        self.bad_match_answers = bad_match_answers
        self.bad_entail = set(bad_entail)

    def __call__(self, body):
        prompt = body["messages"][0]["content"]
        if "Standard answer:" in prompt:
            if self.bad_match_answers:
                self.bad_match_answers -= 1
                return "P1 matches G1, I think."
            gold = re.findall(r"^G(\d+)\. (.*)$", prompt, re.M)
            pred = re.findall(r"^P(\d+)\. (.*)$", prompt, re.M)
            lines = [f"(P{pi}, G{gi}) the same statement in other words"
                     for pi, pt in pred for gi, gt in gold if MATCHES.get(pt) == gt]
            return "\n".join(lines or ["NONE"]) + "\nEND"
        fact = re.search(r"^Statement: (.*)$", prompt, re.M).group(1)
        return "It is quite likely." if fact in self.bad_entail else ENTAIL[fact]


def hand_units():
    u1 = Unit("u1", "A long drought dried the forest and wildfires followed. The heat wave caused power cuts.",
              [edge("drought", "forest fires"), edge("drought", "wildfires"), edge("wind", "wildfires"),
               edge("Drought", "forest fires.")],  # the last repeats the first (case and full stop aside)
              [edge("drought", "wildfire"), edge("heat", "power cuts"), edge("drought", "crop failure")])
    u2 = Unit("u2", "Rain loosened the slopes.", [edge("rain", "landslides")], [])  # empty gold set
    u3 = Unit("u3", "Snow fell.", [edge("snow", "avalanches")], [])  # empty gold set, nothing entailed
    u4 = Unit("u4", "The storm flooded the town.", [edge("storms", "floods")], [edge("storm", "flooding")])
    return [u1, u2, u3, u4]


def cfg_for(server, tmp_path, **extra):
    over = {"llm.base_url": server.base_url, "llm.backoff_base": 0.0, "llm.max_retries": 1,
            "paths.data": str(tmp_path / "data"), "paths.cache": str(tmp_path / "cache")}
    over.update(extra)
    return load_config(search_cwd=False, overrides=over)


def hm(p, r):
    return 2 * p * r / (p + r)


def test_hand_computed_sqc(openai_server, tmp_path):
    openai_server.responder = Grader()
    cfg = cfg_for(openai_server, tmp_path)
    result = score_units(hand_units(), build_matcher(cfg, "openai:test-model"), build_complementer(cfg, "openai:test-model"))
    s = result.summary
    # tau: the 60th percentile of the gold scores 0.3, 0.5, 0.7, 0.8 = 0.5 + 0.8 * (0.7 - 0.5) = 0.66
    assert s["tau"] == pytest.approx(0.66)
    u1, u2, u3, u4 = result.units
    # u1: 1 match, "drought causes wildfires." credited 0.9 > 0.66, "wind ..." 0.2 not; the duplicate is dropped.
    assert u1["counts"] == {"predicted": 3, "gold": 3, "matched": 1, "credited": 1, "weight": pytest.approx(0.9),
                            "duplicates": 1}
    assert u1["precision"] == pytest.approx(1.9 / 3) and u1["recall"] == pytest.approx(1.9 / 3.9)
    assert u1["sqc"] == pytest.approx(hm(1.9 / 3, 1.9 / 3.9))
    assert [p["status"] for p in u1["predicted"]] == ["matched", "credited", "unsupported"]
    assert u1["predicted"][0]["gold"] == 0 and u1["predicted"][0]["why"] == "grader: the same statement in other words"
    assert "entailed by the text: 0.900 > tau 0.660" in u1["predicted"][1]["why"]
    assert "entailment 0.200 <= tau 0.660" in u1["predicted"][2]["why"]
    assert u1["duplicates"] == [{"text": "Drought causes forest fires.", "status": "duplicate", "duplicate_of": 0, "weight": 0.0}]
    assert [g["matched_by"] for g in u1["gold"]] == [0, None, None]
    assert [g["entailment"] for g in u1["gold"]] == [0.8, 0.5, 0.7]
    # u2: empty gold set; the prediction is entailed: P = 0.95/1, R = 0.95/(0 + 0.95) = 1.
    assert (u2["precision"], u2["recall"]) == (pytest.approx(0.95), pytest.approx(1.0))
    assert u2["sqc"] == pytest.approx(hm(0.95, 1.0))
    # u3: empty gold set, nothing credited: P = 0, R = 0/0 undefined, SQC undefined.
    assert u3["precision"] == 0.0 and u3["recall"] is None and u3["sqc"] is None
    # u4: everything matched.
    assert (u4["precision"], u4["recall"], u4["sqc"]) == (1.0, 1.0, 1.0)
    # Pooled: matched 2, Σw = 1.85, |P| = 6, |G| = 4.
    micro = s["micro"]
    assert (micro["matched"], micro["predicted"], micro["gold"]) == (2, 6, 4)
    assert micro["weight"] == pytest.approx(1.85)
    assert micro["precision"] == pytest.approx(3.85 / 6) and micro["recall"] == pytest.approx(3.85 / 5.85)
    macro = s["macro"]
    assert macro["precision"] == pytest.approx(statistics.fmean([1.9 / 3, 0.95, 0.0, 1.0]))
    assert macro["recall"] == pytest.approx(statistics.fmean([1.9 / 3.9, 1.0, 1.0])) and macro["recall_units"] == 3
    assert macro["sqc"] == pytest.approx(statistics.fmean([hm(1.9 / 3, 1.9 / 3.9), hm(0.95, 1.0), 1.0]))
    # Matched predictions are never sent to the complementer; gold facts and unmatched ones are.
    asked = [re.search(r"^Statement: (.*)$", b["messages"][0]["content"], re.M).group(1)
             for b in openai_server.requests if "Statement:" in b["messages"][0]["content"]]
    assert sorted(asked) == sorted(ENTAIL)


def test_duplicates_counted_and_a_fixed_tau(openai_server, tmp_path):
    openai_server.responder = Grader()
    cfg = cfg_for(openai_server, tmp_path)
    m, c = build_matcher(cfg, "openai:test-model"), build_complementer(cfg, "openai:test-model")
    u1 = score_units(hand_units(), m, c, duplicates="count").units[0]
    assert u1["counts"]["predicted"] == 4 and u1["precision"] == pytest.approx(1.9 / 4)
    fixed = score_units(hand_units(), m, c, tau=0.15)
    assert fixed.summary["tau"] == 0.15 and fixed.summary["tau_source"] == "fixed"
    assert fixed.units[0]["counts"]["weight"] == pytest.approx(0.9 + 0.2)
    with pytest.raises(ConfigError, match="sqc_duplicates"):
        score_units(hand_units(), m, c, duplicates="keep")


def test_without_complementer_it_is_plain_semantic_matching(openai_server, tmp_path):
    openai_server.responder = Grader()
    cfg = cfg_for(openai_server, tmp_path)
    r = score_units(hand_units(), build_matcher(cfg, "openai:test-model"), None)
    assert r.summary["tau"] is None and r.summary["complementer"] == "none"
    assert r.summary["micro"]["precision"] == pytest.approx(2 / 6) and r.summary["micro"]["recall"] == pytest.approx(2 / 4)
    assert not any("Statement:" in b["messages"][0]["content"] for b in openai_server.requests)


def test_unreadable_grading_is_retried_then_the_unit_is_reported(openai_server, tmp_path):
    openai_server.responder = Grader(bad_match_answers=1)
    cfg = cfg_for(openai_server, tmp_path)
    r = score_units(hand_units()[3:], build_matcher(cfg, "openai:test-model"), None)
    assert r.units[0]["sqc"] == 1.0 and len(r.units[0]["answers"]) == 2
    correction = openai_server.requests[-1]["messages"][2]["content"]
    assert 'the answer must end with a line "END"' in correction
    openai_server.responder = Grader(bad_match_answers=99, bad_entail={"wind causes wildfires."})
    cfg = cfg_for(openai_server, tmp_path, **{"eval.sqc.max_attempts": 2, "paths.cache": str(tmp_path / "cache2")})
    r = score_units(hand_units(), build_matcher(cfg, "openai:test-model"), None)
    failed = r.summary["failed_units"]
    assert [f["unit"] for f in failed] == ["u1", "u4"]  # u2 and u3 have no gold: nothing to ask
    assert "no usable answer after 2 attempt(s)" in failed[0]["error"]
    assert r.summary["micro"]["units"] == 2 and r.summary["micro"]["predicted"] == 2


def test_unreadable_entailment_leaves_the_item_unscored(openai_server, tmp_path):
    openai_server.responder = Grader(bad_entail={"wind causes wildfires."})
    cfg = cfg_for(openai_server, tmp_path, **{"eval.sqc.max_attempts": 2})
    r = score_units(hand_units(), build_matcher(cfg, "openai:test-model"), build_complementer(cfg, "openai:test-model"))
    item = r.units[0]["predicted"][2]
    assert item["status"] == "unscored" and item["weight"] == 0.0
    assert "complementer failed: no usable answer after 2 attempt(s)" in item["why"]
    assert r.summary["tau"] == pytest.approx(0.66)


@pytest.mark.parametrize("answer,expected", [("0.85", 0.85), ("Probability: 0.3", 0.3), ('{"entailment": 1}', 1.0),
                                             ("1.", 1.0), (".5", 0.5)])
def test_parse_probability(answer, expected):
    assert parse_probability(answer) == expected


@pytest.mark.parametrize("answer", ["likely", "0.8 or 0.9", "1.5", "85%"])
def test_parse_probability_rejects(answer):
    with pytest.raises(ParseError):
        parse_probability(answer)


def test_match_lines_are_parsed_strictly():
    parse = _match_line_parser(3, 2)
    assert parse("(P1, G2) same\n(P3,G1): also same\nEND") == [(0, 1, "same"), (2, 0, "also same")]
    assert parse("Matches:\nNONE\nEND") == []
    for bad, msg in [("(P1, G2) same", 'end with a line "END"'), ("(P4, G1)\nEND", "does not exist"),
                     ("(P1, G1)\n(P2, G1)\nEND", "at most one match"), ("P1 = G1\nEND", "cannot read the line"),
                     ("END", "NONE")]:
        with pytest.raises(ParseError, match=re.escape(msg)):
            parse(bad)


def test_formulas_and_zero_denominators():
    assert sqc_figures(2, 0.0, 2, 2) == {"precision": 1.0, "recall": 1.0, "sqc": 1.0}
    assert sqc_figures(0, 0.0, 0, 3) == {"precision": None, "recall": 0.0, "sqc": None}
    assert sqc_figures(0, 0.0, 2, 0) == {"precision": 0.0, "recall": None, "sqc": None}
    f = sqc_figures(1, 0.5, 4, 2)
    assert f["precision"] == pytest.approx(1.5 / 4) and f["recall"] == pytest.approx(1.5 / 2.5)


def test_fact_shapes():
    assert fact_from_record({"subject": "Barack Obama", "relation": "spouse", "object": "Michelle Obama"}, T).text == \
        "Barack Obama spouse Michelle Obama."
    assert fact_from_record(["Attack", "Attacker", "Tom"], T).kind == "triple"  # the reference's list triples
    kg = fact_from_record({"cause": {"label": "earthquake", "id": ["Q7944"]}, "effect": {"label": "tsunami", "id": ["Q8070"]}}, T)
    assert kg.text == "earthquake causes tsunami." and kg.parts == {"cause": "earthquake", "effect": "tsunami"}
    span = fact_from_record({"cause": {"text": "the quake", "start": 0, "end": 9}, "effect": {"text": "a wave."}}, T)
    assert span.text == "the quake causes a wave."
    assert fact_from_record({"text": "Rain  fell."}, T).text == "Rain fell."
    for bad in ({"cause": "x"}, {"foo": 1}, ["a", "b"], "text"):
        with pytest.raises(ValueError):
            fact_from_record(bad, T)
    with pytest.raises(ConfigError, match="bad sqc_edge_template"):
        Templates(edge="{cause} leads to {result}")


def test_read_units_from_fact_files(tmp_path):
    pred = tmp_path / "pred.jsonl"
    gold = tmp_path / "gold.jsonl"
    texts = tmp_path / "texts.jsonl"
    pred.write_text('{"unit": "a", "cause": "war", "effect": "famine"}\n{"doc_id": 7, "text": "x"}\n')
    gold.write_text('{"unit": "a", "cause": "war", "effect": "hunger"}\n{"unit": "b", "text": "y"}\n')
    texts.write_text('{"id": "a", "text": "The war caused famine."}\n{"id": 7, "text": "X."}\n')
    units, _ = read_units(predicted=pred, gold=gold, texts=texts)
    assert [(u.id, len(u.predicted), len(u.gold), u.text) for u in units] == [
        ("a", 1, 1, "The war caused famine."), ("7", 1, 0, "X."), ("b", 0, 1, None)]
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text('{"unit": "a", "text": "x"}\n{"text": "y"}\n')
    with pytest.raises(SchemaError, match=r"mixed.jsonl:2: some facts name their unit"):
        read_units(predicted=mixed, gold=gold)
    nounit = tmp_path / "nounit.jsonl"
    nounit.write_text('{"text": "x"}\n')
    units, _ = read_units(predicted=nounit, gold=nounit)
    assert [u.id for u in units] == ["(all)"]
    with pytest.raises(ConfigError, match="needs --units FILE"):
        read_units(predicted=pred)
    bad_units = tmp_path / "units.jsonl"
    bad_units.write_text('{"unit": "a", "predicted": [{"cause": "x"}]}\n')
    with pytest.raises(SchemaError, match=r"units.jsonl:1: predicted: a causal edge needs"):
        read_units(units=bad_units)


def test_tau_needs_gold_texts(openai_server, tmp_path):
    openai_server.responder = Grader()
    cfg = cfg_for(openai_server, tmp_path)
    no_text = [Unit("u", None, [edge("drought", "wildfires")], [edge("drought", "wildfire")])]
    with pytest.raises(ConfigError, match="tau cannot be set"):
        score_units(no_text, build_matcher(cfg, "openai:test-model"), build_complementer(cfg, "openai:test-model"))


def write_units(path, units):
    path.write_text("".join(json.dumps({"unit": u.id, "text": u.text, "predicted": [f.raw for f in u.predicted],
                                        "gold": [f.raw for f in u.gold]}) + "\n" for u in units))
    return path


def test_api_writes_the_report(openai_server, tmp_path):
    openai_server.responder = Grader()
    cfg = cfg_for(openai_server, tmp_path)
    src = write_units(tmp_path / "hand.jsonl", hand_units())
    plan = sqc(cfg, units=src, matcher="openai:test-model", complementer="openai:test-model", dry_run=True)
    assert plan.plan["units"] == 4 and plan.plan["predicted"] == 7 and openai_server.chat_requests == 0
    assert plan.units == [] and plan.out is None  # a typed result, nothing scored
    result = sqc(cfg, units=src, matcher="openai:test-model", complementer="openai:test-model")
    assert result.out == tmp_path / "data" / "eval" / "sqc" / "hand"
    lines = [json.loads(x) for x in (result.out / "units.jsonl").read_text().splitlines()]
    assert [x["unit"] for x in lines] == ["u1", "u2", "u3", "u4"]
    summary = json.loads((result.out / "summary.json").read_text())
    assert summary["micro"]["precision"] == pytest.approx(3.85 / 6)
    usage = summary["usage"]
    assert usage["matcher"]["requests"] + usage["complementer"]["requests"] == openai_server.chat_requests
    assert usage["matcher"]["requests"] == 2  # the units with gold facts and predictions: u1, u4
    manifest = json.loads((result.out / "manifest.json").read_text())
    assert manifest["stage"] == "eval.sqc"  # the parts by versioned registry name
    assert manifest["models"] == {"matcher": "openai.v1:test-model", "complementer": "openai.v1:test-model"}


def test_cli_sqc(cli, in_tmp, openai_server):
    openai_server.responder = Grader()
    src = write_units(in_tmp / "hand.jsonl", hand_units())
    base = ["--set", f"llm.base_url={openai_server.base_url}", "--set", "llm.backoff_base=0"]
    r = cli("eval", "sqc", "--units", src, "--matcher", "openai:test-model", "--complementer", "openai:test-model",
            "--explain", *base, "--format", "md")
    assert r.code == 0, r.err
    assert "| micro | 4 | 6 | 4 | 2 | 2 | 1.8500 | 0.6417 | 0.6581 | 0.6498 |" in r.out
    assert "tau 0.6600 (60th percentile of 4 gold entailment scores)" in r.out
    assert "  P2 credited: drought causes wildfires. (the grader matched it to no gold fact; entailed by the text: 0.900 > tau 0.660)" in r.out
    assert "  duplicate of P1: Drought causes forest fires." in r.out
    r = cli("eval", "sqc", "--units", src, "--matcher", "openai:test-model", "--complementer", "none",
            "--format", "json", *base)
    doc = json.loads(r.out)
    assert doc["micro"]["precision"] == pytest.approx(2 / 6) and doc["complementer"] == "none"


def test_cli_sqc_keeps_the_last_complete_result_when_units_cannot_be_graded(cli, in_tmp, openai_server):
    """A run where some units get no usable answer writes its result beside the complete one
    (summary.partial.json), which stays byte for byte, and exits 1 saying so; a later complete run
    replaces both."""
    src = write_units(in_tmp / "hand.jsonl", hand_units())
    base = ["--set", f"llm.base_url={openai_server.base_url}", "--set", "llm.backoff_base=0",
            "--set", "eval.sqc.max_attempts=2", "--matcher", "openai:test-model", "--complementer", "none"]
    openai_server.responder = Grader()
    assert cli("eval", "sqc", "--units", src, *base).code == 0
    out = in_tmp / "data" / "eval" / "sqc" / "hand"
    complete = {n: (out / n).read_bytes() for n in ("units.jsonl", "summary.json", "manifest.json")}
    openai_server.responder = Grader(bad_match_answers=99)
    r = cli("eval", "sqc", "--units", src, *base, "--set", f"paths.cache={in_tmp / 'cache2'}")
    assert r.code == 1
    assert r.err.strip().splitlines()[-1].startswith("error: 2 unit(s) could not be graded (first: u1: ")
    assert f"the incomplete result is in {out}/summary.partial.json" in r.err
    assert {n: (out / n).read_bytes() for n in complete} == complete
    assert json.loads((out / "summary.partial.json").read_text())["failed_units"]
    openai_server.responder = Grader()
    assert cli("eval", "sqc", "--units", src, *base).code == 0
    assert not (out / "summary.partial.json").exists() and not (out / "units.partial.jsonl").exists()


def test_cli_sqc_errors(cli, in_tmp):
    r = cli("eval", "sqc")
    assert r.code == 2 and r.err.strip() == "error: SQC needs --units FILE, or --predicted FILE and --gold FILE"
    bad = in_tmp / "bad.jsonl"
    bad.write_text('{"unit": "a", "predicted": "not a list"}\n')
    r = cli("eval", "sqc", "--units", bad)
    assert r.code == 1 and r.err.strip() == f'error: {bad}:1: "predicted" must be a list of facts'
    good = in_tmp / "good.jsonl"
    good.write_text('{"unit": "a", "text": "t", "predicted": [{"text": "x"}], "gold": [{"text": "y"}]}\n')
    r = cli("eval", "sqc", "--units", good, "--matcher", "bm25:x")
    assert r.code == 2 and "error: unknown SQC matcher 'bm25'" in r.err
    r = cli("eval", "sqc", "--units", good, "--matcher", "embedding", "--complementer", "nli:" + str(in_tmp / "no-model"))
    assert r.code == 1 and "error: cannot load sequence-classification model" in r.err
    assert "name a local model folder" in r.err
