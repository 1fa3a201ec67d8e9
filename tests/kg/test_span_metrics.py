"""kg.span_metrics: SQuAD 2.0 answer scores, the tuned no-answer threshold, pair scores."""

from __future__ import annotations

import pytest

from causalkg.kg.span_metrics import (PRF, best_null_threshold, exact, normalize, pair_scores, squad2_scores,
                                      token_prf)


def test_normalize_and_token_prf():
    assert normalize("The  Tsunami's “waves”!") == "tsunamis waves"
    assert exact("the earthquake", "Earthquake.")
    assert token_prf("heavy rain fall", "heavy rain") == pytest.approx((2 / 3, 1.0, 0.8))
    assert token_prf("drought", "heavy rain") == (0.0, 0.0, 0.0)
    assert token_prf("", "") == (1.0, 1.0, 1.0) and token_prf("the", "rain") == (0.0, 0.0, 0.0)


def test_squad2_scores_count_answers_and_abstentions():
    golds = {"q1": ["the earthquake"], "q2": [], "q3": ["heavy rain", "rain"], "q4": []}
    preds = {"q1": "earthquake", "q2": "", "q3": "heavy rain fall", "q4": "floods"}
    s = squad2_scores(preds, golds)
    assert s["exact"] == pytest.approx(100 * 2 / 4)          # q1 and q2
    assert s["f1"] == pytest.approx(100 * (1 + 1 + 0.8) / 4)  # q3: best of its two answers
    assert s["has_ans_f1"] == pytest.approx(100 * 1.8 / 2)
    assert s["no_ans_acc"] == pytest.approx(50.0) and s["questions"] == 4.0
    assert squad2_scores({}, {"q": ["x"]})["f1"] == 0.0  # a missing prediction is an abstention


def test_best_null_threshold_answers_where_it_pays():
    golds = {"a": ["rain"], "b": ["war"], "c": [], "d": []}
    best = {"a": "rain", "b": "war", "c": "famine", "d": "floods"}
    diff = {"a": 3.0, "b": 2.0, "c": 1.0, "d": -1.0}
    t, f1 = best_null_threshold(best, diff, golds)
    assert 1.0 < t < 2.0 and f1 == pytest.approx(100.0)  # answer a and b, abstain on c and d
    # answering everything is best when every question has an answer
    t2, f2 = best_null_threshold(best, diff, {"a": ["rain"], "b": ["war"], "c": ["famine"], "d": ["floods"]})
    assert t2 < -1.0 and f2 == pytest.approx(100.0)
    assert best_null_threshold({}, {}, golds) == (0.0, 0.0)


def test_pair_scores_match_each_gold_pair_once():
    s = pair_scores([
        ([("the earthquake", "a tsunami"), ("earthquake", "tsunami")], [("earthquake", "tsunami")]),
        ([], [("war", "famine")]),
    ])
    assert (s.cause_exact.n_pred, s.cause_exact.n_gold, s.cause_exact.tp) == (2, 2, 1)
    row = s.table_row()
    assert row["pred"] == 2 and row["gold"] == 2
    assert row["cause P/R/F1 exact"] == "50.0/50.0/50.0" and row["macro F1 exact"] == 50.0
    assert PRF().f1 == 0.0 and PRF(tp=1, n_pred=2, n_gold=1).f1 == pytest.approx(2 / 3)
