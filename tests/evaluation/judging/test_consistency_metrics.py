"""Causal epistemic consistency: the metrics on single rankings, the parsers of the judge's answers,
and the reading of the delta-CAUSAL sample."""

from __future__ import annotations

import random
import statistics
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import kendalltau
from sklearn.metrics import silhouette_score

from causalkg.core.errors import SchemaError
from causalkg.evaluation.judging.consistency import (
    INTENDED_LABELS, check_ranks, confusion_matrix, igc_density, igc_silhouette, kendall_tau, order_from_ranks,
    pair_metrics, parse_ranking, parse_seed, parse_variants, polarity_change_distance, polarity_sequence,
    ranks_from_order, ranks_from_scores, read_pairs, sample_pairs, silhouette, split_template, summarize,
    tokenprob_inputs,
)
from causalkg.evaluation.judging.llm_answers import ParseError

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "consistency" / "delta-causal-test-sample.csv"
REFERENCE_RANKS = [0, 1, 3, 4, 2, 5, 6, 8, 7, 9]


def test_reference_values_from_the_issue():
    m = pair_metrics(REFERENCE_RANKS)
    assert m["tau_defeaters"] == pytest.approx(0.6)
    assert m["tau_supporters"] == pytest.approx(0.8)
    assert m["tau_all"] == pytest.approx(0.8667, abs=1e-4)
    assert m["tau_all"] == pytest.approx(1 - 2 * 3 / 45)  # three discordant pairs of 45
    assert m["cgp"] == 1.0
    assert m["igc"] == 1.0


def test_identity_gives_all_ones_and_reversed_gives_minus_one_and_cgp_zero():
    assert pair_metrics(list(range(10))) == {k: 1.0 for k in ("tau_supporters", "tau_defeaters", "tau_all", "cgp", "igc")}
    rev = pair_metrics(list(range(9, -1, -1)))
    assert rev["tau_supporters"] == rev["tau_defeaters"] == rev["tau_all"] == -1.0
    assert rev["cgp"] == 0.0
    assert rev["igc"] == 1.0  # the groups are still contiguous, only swapped
    for variant in ("silhouette", "density"):
        assert pair_metrics(list(range(10)), igc=variant)["igc"] == 1.0


def test_kendall_tau_agrees_with_scipy_on_random_rankings():
    rng = random.Random(3)
    for _ in range(50):
        r = list(range(10))
        rng.shuffle(r)
        assert kendall_tau(list(range(10)), r) == pytest.approx(kendalltau(list(range(10)), r)[0])


def test_silhouette_agrees_with_sklearn_on_random_rankings():
    rng = random.Random(5)
    for _ in range(100):
        r = list(range(10))
        rng.shuffle(r)
        labels = polarity_sequence(r)
        dist = polarity_change_distance(labels)
        ours = silhouette(dist, labels)
        theirs = silhouette_score(np.array(dist), np.array(labels), metric="precomputed")
        assert ours == pytest.approx(theirs, abs=1e-12)


def test_polarity_change_distance_counts_changes_away_from_the_start():
    # D D S D S S: from 0 to 5 the changes are D->S (2), S->D (3, back to D: not counted), D->S (4).
    labels = [0, 0, 1, 0, 1, 1]
    d = polarity_change_distance(labels)
    assert d[0][5] == 2 and d[5][0] == 2
    assert d[0][1] == 0  # same polarity all the way
    assert d[2][3] == 1 and d[2][5] == 1  # from S: S->D counts, D->S (back to S) does not
    assert d[1][3] == 1


def test_a_mixed_ranking_clusters_less():
    # Ranked polarities D S D S D S D S D S: maximally interleaved.
    order = [0, 5, 1, 6, 2, 7, 3, 8, 4, 9]
    ranks = ranks_from_order(order)
    assert polarity_sequence(ranks) == [0, 1] * 5
    assert igc_silhouette(ranks) < 0.5
    assert igc_density(ranks) < 0.5
    assert pair_metrics(ranks)["cgp"] == pytest.approx(1 - 10 / 25)  # supporters below defeaters: 10 pairs


def test_density_variant_by_hand():
    # Defeaters ranked at 0,1,2,3,5 (a gap of one), supporters at 4,6,7,8,9 (a gap of one).
    ranks = [0, 1, 2, 3, 5, 4, 6, 7, 8, 9]
    d = 5 / 6 * (1 - 1 / 6)
    assert igc_density(ranks) == pytest.approx(d)


def test_reference_code_reads_its_rank_vector_as_an_order():
    """The reference (metrics/confusion.py) computes the metrics on the g-* rank vector as if it
    were an ordering: its figures equal ours on the inverse permutation. Transcribed here from its
    definitions to pin the relation documented in docs/judging-the-judges.md."""

    def reference(seq):
        dfs, sps = [0, 1, 2, 3, 4], [5, 6, 7, 8, 9]
        violations = sum(1 for g2 in sps for g1 in dfs if seq.index(g2) < seq.index(g1))
        return {
            "tau_defeaters": kendalltau([x for x in seq if x in dfs], dfs)[0],
            "tau_supporters": kendalltau([x for x in seq if x in sps], sps)[0],
            "tau_all": kendalltau(seq, list(range(10)))[0],
            "cgp": 1 - violations / 25,
        }

    rng = random.Random(11)
    differs = 0
    for _ in range(200):
        r = list(range(10))
        rng.shuffle(r)
        ref, ours_inv, ours = reference(r), pair_metrics(order_from_ranks(r)), pair_metrics(r)
        for k in ref:
            assert ref[k] == pytest.approx(ours_inv[k])
        assert ref["tau_all"] == pytest.approx(ours["tau_all"])  # overall tau does not care
        differs += any(abs(ref[k] - ours[k]) > 1e-9 for k in ref)
    assert differs > 150
    assert reference(REFERENCE_RANKS) == pytest.approx(
        {k: v for k, v in pair_metrics(REFERENCE_RANKS).items() if k != "igc"})


def test_ranks_and_orders_round_trip_and_bad_rankings_fail():
    order = [3, 0, 9, 1, 2, 8, 4, 7, 5, 6]
    assert order_from_ranks(ranks_from_order(order)) == order
    with pytest.raises(ValueError, match="permutation"):
        check_ranks([0, 1, 1, 3, 4, 5, 6, 7, 8, 9])
    with pytest.raises(ValueError, match="permutation"):
        pair_metrics(list(range(9)))


def test_summary_is_mean_and_sample_std():
    per = [pair_metrics(list(range(10))), pair_metrics(REFERENCE_RANKS), pair_metrics(list(range(9, -1, -1)))]
    s = summarize(per)
    assert s["tau_supporters"]["mean"] == pytest.approx((1 + 0.8 - 1) / 3)
    assert s["tau_supporters"]["std"] == pytest.approx(statistics.stdev([1, 0.8, -1]))
    assert s["cgp"]["mean"] == pytest.approx(2 / 3)
    one = summarize(per[:1])
    assert one["tau_all"]["mean"] == 1.0 and one["tau_all"]["std"] is None


def test_confusion_matrix_rows_are_intended_columns_are_ranked():
    cm = confusion_matrix([list(range(10)), REFERENCE_RANKS])
    assert cm[0][0] == 2 and cm[2][2] == 1 and cm[2][3] == 1 and cm[4][2] == 1
    assert all(sum(row) == 2 for row in cm)
    assert len(INTENDED_LABELS) == 10 and INTENDED_LABELS[0] == "SD2" and INTENDED_LABELS[-1] == "SS2"


def test_ties_in_token_scores_are_not_broken_in_favour_of_the_intended_order():
    flat = [0.0] * 10
    rankings = {tuple(ranks_from_scores(flat, f"seed:{i}")) for i in range(20)}
    assert len(rankings) > 1
    assert ranks_from_scores([float(i) for i in range(10)], "x") == list(range(10))
    assert ranks_from_scores([float(-i) for i in range(10)], "x") == list(range(9, -1, -1))


@pytest.mark.parametrize("answer", [
    '{"ranking": ["C", "A", "B", "D", "E", "F", "G", "H", "I", "J"]}',
    '```json\n{"ranking": ["C","A","B","D","E","F","G","H","I","J"]}\n```',
    'Here is my ranking:\n["(C)", "A.", "B", "D", "E", "F", "G", "H", "I", "J"]',
    "Ranking: C > A > B > D > E > F > G > H > I > J",
    "C, A, B, D, E, F, G, H, I, J",
    "1. C\n2. A - the family\n3. B\n4. D\n5. E\n6. F\n7. G\n8. H\n9. I\n10. J",
])
def test_parse_ranking_accepts_common_shapes(answer):
    assert parse_ranking(answer) == list("CABDEFGHIJ")


@pytest.mark.parametrize("answer,message", [
    ('{"ranking": ["A", "B", "C"]}', "missing D"),
    ('{"ranking": ["A","A","B","C","D","E","F","G","H","I"]}', "repeated A"),
    ('{"ranking": ["A","B","C","D","E","F","G","H","I","K"]}', "not one of the letters"),
    ("I would rather not rank these.", "no ranking found"),
])
def test_parse_ranking_rejects_what_it_cannot_use(answer, message):
    with pytest.raises(ParseError, match=message):
        parse_ranking(answer)


def test_parse_variants_and_seed():
    good = '{"much stronger": "a", "Slightly-Stronger": "b", "slightly_weaker": "c", "much_weaker": "d"}'
    assert parse_variants(good) == {"much_stronger": "a", "slightly_stronger": "b", "slightly_weaker": "c", "much_weaker": "d"}
    with pytest.raises(ParseError, match="missing or empty key"):
        parse_variants('{"much_stronger": "a"}')
    with pytest.raises(ParseError, match="differ"):
        parse_variants(good, original="b")
    assert parse_seed('{"supporter": "It rains.", "defeater": "A dam holds."}') == {
        "supporter": "It rains.", "defeater": "A dam holds."}
    with pytest.raises(ParseError, match="same statement"):
        parse_seed('{"supporter": "x", "defeater": "X"}')


def test_read_the_delta_causal_sample():
    pairs = read_pairs(FIXTURE)
    assert len(pairs) == 30
    first = pairs[0]
    assert first.id == "5642-1"
    assert first.cause == "Steve had a problem learning to read as a kid."
    assert first.effect == "Steve was having trouble keeping jobs due to his reading problem."
    assert first.defeater == "Steve got extensive reading tutoring."
    assert first.supporter == "Steve never learned how to read in kindergarten."
    assert first.meta["domain"] == "education"
    sample = sample_pairs(pairs, 5, seed=0)
    assert len(sample) == 5 and sample == sorted(sample, key=pairs.index)
    assert sample_pairs(pairs, 5, seed=0) == sample and sample_pairs(pairs, 0, seed=0) == pairs


def test_read_pairs_jsonl_kg_edges_and_errors(tmp_path):
    f = tmp_path / "pairs.jsonl"
    f.write_text(
        '{"id": "p1", "cause": "Heavy rain fell.", "effect": "The river flooded.", "supporter": "The ground was saturated.", "defeater": "A new levee held."}\n'
        '{"cause": {"label": "earthquake", "id": ["Q7944"]}, "effect": {"label": "tsunami", "id": ["Q8070"]}}\n'
        '{"cause": {"label": "earthquake", "id": ["Q7944"]}, "effect": {"label": "tsunami", "id": ["Q8070"]}}\n'
    )
    pairs = read_pairs(f)
    assert [p.id for p in pairs] == ["p1", "Q7944->Q8070", "Q7944->Q8070#1"]
    assert pairs[1].cause == "earthquake" and pairs[1].supporter is None and pairs[1].meta["source"] == "kg"
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"cause": "x"}\n{"cause": "a", "effect": "b", "intermediates": ["only one"]}\n')
    with pytest.raises(SchemaError, match=r"bad.jsonl:1: needs non-empty 'cause' and 'effect'"):
        read_pairs(bad)
    from causalkg.core.jsonl import ReadStats

    stats = ReadStats()
    assert read_pairs(bad, lenient=True, stats=stats) == [] and stats.skipped == 2
    csv_bad = tmp_path / "x.csv"
    csv_bad.write_text("ID,cause\n1,a\n")
    with pytest.raises(SchemaError, match="missing column"):
        read_pairs(csv_bad)


def test_token_probability_texts_follow_the_template():
    pairs = read_pairs(FIXTURE)
    inputs = tokenprob_inputs(pairs[0], ["Steve got extensive reading tutoring."] * 10, "so",
                              "{cause} and {intermediate}, {conjunction} {effect}")
    prefix, cont = inputs[0]
    assert prefix == "Steve had a problem learning to read as a kid and Steve got extensive reading tutoring, so"
    assert cont == "Steve was having trouble keeping jobs due to his reading problem"
    with pytest.raises(Exception, match="bad consistency template"):
        split_template("{effect} because {cause}")
