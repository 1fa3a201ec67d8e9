"""Precision from people's judgements (evaluation/human.py, ``eval precision --human``): the
last verdict per judge counts, majorities per edge, the Wilson interval, Cohen's kappa with an
LLM judge's verdicts. The judgement lines are invented (edge cases, named so), on real QIDs."""

from __future__ import annotations

import json
import math

import pytest

from causalkg.core.errors import SchemaError, SourceError
from causalkg.evaluation.wikicausal.human import human_precision
from causalkg.evaluation.wikicausal.precision import wilson_interval

S1 = "The undersea megathrust earthquake ... triggered a series of devastating tsunamis"


def _j(cause, effect, verdict, judge="ada", sentence=S1, time="2026-01-01T00:00:00+00:00"):
    return {"schema_version": "1", "cause": cause, "effect": effect, "sentence": sentence, "verdict": verdict,
            "judge": judge, "time": time}


def _write(path, lines):
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path


def test_precision_uses_the_last_verdict_and_majorities(tmp_path):
    path = _write(tmp_path / "judgements.jsonl", [
        _j("Q7944", "Q8070", "wrong"),
        _j("Q7944", "Q8070", "correct"),                 # ada changed her mind: correct
        _j("Q7944", "Q8070", "correct", judge="bo"),
        _j("Q7944", "Q4", "wrong"),
        _j("Q7944", "Q4", "correct", judge="bo"),        # a tie between judges: undecided
        _j("Q179057", "Q4", "unsure"),                   # only unsure: undecided
        _j("Q171558", "Q4", "correct"),
        _j("Q750215", "Q4", "wrong", sentence="  another\nsentence "),
        _j("Q750215", "Q4", "wrong", sentence="another sentence"),  # same sentence, whitespace aside
    ])
    r = human_precision(path)
    assert (r.edges, r.correct, r.wrong, r.undecided) == (5, 2, 1, 2)
    assert r.precision == pytest.approx(2 / 3)
    assert (r.ci_low, r.ci_high) == pytest.approx(wilson_interval(2, 3))
    assert r.judges == ["ada", "bo"] and r.lines == 9
    assert r.sentences == {"correct": 4, "wrong": 2, "unsure": 1}
    assert r.llm is None
    # ada and bo both decided Q7944->Q8070 (agree) and Q7944->Q4 (disagree)
    [pair] = r.between
    assert pair["judges"] == ["ada", "bo"] and (pair["common"], pair["agree"]) == (2, 1)
    assert pair["kappa"] == pytest.approx(0.0)
    assert "Between judges" in r.render("md")


def test_a_withdrawn_verdict_leaves_none(tmp_path):
    # the web page's undo: a first verdict taken back is "withdrawn", a second brings the first back
    path = _write(tmp_path / "judgements.jsonl", [
        _j("Q7944", "Q8070", "wrong"),
        _j("Q7944", "Q8070", "withdrawn"),
        _j("Q7944", "Q4", "correct"),
        _j("Q7944", "Q4", "wrong"),
        _j("Q7944", "Q4", "correct"),
    ])
    r = human_precision(path)
    assert (r.edges, r.correct, r.wrong) == (1, 1, 0)
    assert r.sentences == {"correct": 1}


def test_kappa_with_the_llm_judge_over_common_edges(tmp_path):
    path = _write(tmp_path / "judgements.jsonl", [
        _j("Q7944", "Q8070", "correct"), _j("Q7944", "Q4", "wrong"), _j("Q171558", "Q4", "correct"),
        _j("Q179057", "Q4", "wrong"), _j("Q1", "Q2", "correct")])
    llm = _write(tmp_path / "llm.jsonl", [
        {"cause": "earthquake", "effect": "tsunami", "cause_ids": ["Q7944"], "effect_ids": ["Q8070"], "verdict": True},
        {"cause": "earthquake", "effect": "death", "cause_ids": ["Q7944"], "effect_ids": ["Q4"], "verdict": True},
        {"cause": "accident", "effect": "death", "cause_ids": ["Q171558"], "effect_ids": ["Q4"], "verdict": True},
        {"cause": "explosion", "effect": "death", "cause_ids": ["Q179057"], "effect_ids": ["Q4"], "verdict": False},
        {"cause": "x", "effect": "y", "cause_ids": ["Q5"], "effect_ids": ["Q6"], "verdict": None},  # failed: skipped
    ])
    r = human_precision(path, llm=[llm])
    assert r.llm["common"] == 4 and r.llm["agree"] == 3
    # human yes,no,yes,no vs llm yes,yes,yes,no: po = 3/4, pe = 1/2*3/4 + 1/2*1/4 = 1/2
    assert r.llm["kappa"] == pytest.approx(0.5)
    r = human_precision(path, llm=[_write(tmp_path / "none.jsonl", [])])
    assert r.llm["common"] == 0 and math.isnan(r.llm["kappa"]) and "no kappa" in r.notes[0]


def test_errors_name_the_file_and_line(tmp_path):
    with pytest.raises(SourceError, match="no judgements file"):
        human_precision(tmp_path / "missing.jsonl")
    bad = _write(tmp_path / "bad.jsonl", [_j("Q1", "Q2", "correct"), _j("Q1", "Q2", "maybe")])
    with pytest.raises(SchemaError, match=r"bad.jsonl:2"):
        human_precision(bad)
    assert human_precision(bad, lenient=True).lines == 1
    with pytest.raises(SourceError, match="no LLM judgements"):
        human_precision(bad, llm=[tmp_path / "nope.jsonl"], lenient=True)


def test_cli_eval_precision_human(cli, in_tmp):
    path = _write(in_tmp / "j.jsonl", [_j("Q7944", "Q8070", "correct"), _j("Q7944", "Q4", "wrong"),
                                       _j("Q171558", "Q4", "correct")])
    r = cli("eval", "precision", "--human", str(path), "--format", "json")
    assert r.code == 0, r.err
    data = json.loads(r.out)
    assert (data["correct"], data["wrong"], data["precision"]) == (2, 1, pytest.approx(2 / 3))
    assert data["llm"] is None
    r = cli("eval", "precision", "--human", str(path))
    assert r.code == 0 and "precision" in r.out and "0.6667" in r.out
    r = cli("eval", "precision")
    assert r.code == 2 and "error: no KG to judge" in r.err and "--human" in r.err
    r = cli("eval", "precision", "--human", str(in_tmp / "none.jsonl"))
    assert r.code == 1 and "error: no judgements file" in r.err
