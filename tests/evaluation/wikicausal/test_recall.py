"""Recall against the Base KG: the reference rules on small hand-made KGs, and the real WikiCausal
files pinned to the figures the WikiCausal repository publishes (results/recall-v1.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from causalkg.core.errors import SchemaError
from causalkg.evaluation.wikicausal.kgread import KGReadStats, iter_kg_pairs, read_document_concepts
from causalkg.evaluation.wikicausal.recall import any_id_measures, eval_recall, read_base_kg, read_kg_pairs, recall_measures, score_kg

REPO = Path(__file__).resolve().parents[3]
WIKICAUSAL = REPO / "snapshots" / "wikicausal"
BASE_V1 = WIKICAUSAL / "base-kg-v1.jsonl"
FULL = WIKICAUSAL / "causenet-full-linked-v1.jsonl"
PREC = WIKICAUSAL / "causenet-precision-linked-v1.jsonl"


def write_jsonl(path: Path, lines) -> Path:
    path.write_text("".join((l if isinstance(l, str) else json.dumps(l)) + "\n" for l in lines), encoding="utf-8")
    return path


def ref(qid, label=None):
    return {"id": qid, "label": label or qid.lower()}


def nested(event, consequences):
    """A base-KG-shape line; consequences: [(qid, [(cause, effect), ...]), ...] (invented QIDs)."""
    return {"event": ref(event), "consequences": [
        {**ref(c), "examples": [{"cause": ref(a), "effect": ref(b)} for a, b in ex]} for c, ex in consequences]}


def flat(causes, effects, label="x"):
    return {"cause": {"label": label, "id": list(causes)}, "effect": {"label": label, "id": list(effects)}}


# Invented edge-case data (small QIDs are placeholders, not the Wikidata items they name).
BASE_LINES = [
    nested("Q1", [("Q2", [("Q10", "Q20"), ("Q11", "Q21")]), ("Q3", [])]),
    nested("Q4", [("Q2", [("Q10", "Q20")])]),  # an instance pair listed under a second class too
]
KG_LINES = [
    nested("Q1", [("Q2", [("Q10", "Q20"), ("Q12", "Q20")]), ("Q5", [])]),
    nested("Q1", [("Q2", [("Q10", "Q20"), ("Q12", "Q20")]), ("Q5", [])]),  # a duplicate line
]


@pytest.fixture
def base(tmp_path):
    return write_jsonl(tmp_path / "base.jsonl", BASE_LINES)


def rows_by_view(report):
    return {r["eval_type"]: r for r in report.rows}


def test_each_view_follows_the_reference_rules_and_duplicates_count_once(tmp_path, base):
    kg = write_jsonl(tmp_path / "kg.jsonl", KG_LINES)
    rows = rows_by_view(eval_recall([kg], base))
    c = rows["classes"]
    assert (c["hit_count"], c["rel_count"], c["base_kg_size"], c["base_count"]) == (1, 2, 3, 1)
    assert rows["classes"]["recall"] == pytest.approx(1 / 3)
    assert rows["classes"]["precision"] == pytest.approx(1 / 2)
    assert rows["classes"]["base_coverage"] == pytest.approx(1 / 2)  # causes {Q1, Q4}, KG has Q1
    inst = rows["instances"]
    assert (inst["hit_count"], inst["rel_count"], inst["base_kg_size"], inst["base_count"]) == (1, 2, 2, 1)
    assert inst["recall"] == pytest.approx(0.5) and inst["base_coverage"] == pytest.approx(0.5)
    full = rows["full"]
    assert (full["hit_count"], full["rel_count"], full["base_kg_size"], full["base_count"]) == (2, 4, 5, 2)
    assert full["recall"] == pytest.approx(2 / 5) and full["base_coverage"] == pytest.approx(2 / 4)
    assert full["input_kg_file_name"] == "kg.jsonl" and full["base_kg_file_name"] == "base.jsonl"


def test_flat_lines_take_the_first_id_as_a_class_pair_and_any_id_uses_every_candidate(tmp_path, base):
    kg = write_jsonl(tmp_path / "flat.jsonl", [
        flat(["Q9", "Q4"], ["Q2"]),
        flat(["Q1"], ["Q3", "Q2"]),
        flat(["Q1"], ["Q3", "Q2"]),
    ])
    rows = rows_by_view(eval_recall([kg], base, any_id=True))
    c = rows["classes"]
    assert (c["hit_count"], c["rel_count"], c["base_count"]) == (1, 2, 1)  # only (Q1, Q3) hits by id[0]
    assert rows["instances"]["rel_count"] == 0 and rows["instances"]["recall"] == 0.0
    # any id: (Q4, Q2) from the first line, (Q1, Q3) and (Q1, Q2) from the second
    assert c["any_id_hit_count"] == 3 and c["any_id_recall"] == pytest.approx(1.0)
    assert c["any_id_rel_count"] == 2 and c["any_id_precision"] == pytest.approx(1.0)
    assert c["any_id_base_count"] == 2
    assert c["recall"] == pytest.approx(1 / 3)  # the reference column is unchanged by --any-id


def test_any_id_full_view_joins_class_and_instance_units(tmp_path, base):
    kg = write_jsonl(tmp_path / "mixed.jsonl", [flat(["Q9", "Q4"], ["Q2"]), nested("Q1", [("Q2", [("Q11", "Q21")])])])
    rows = rows_by_view(eval_recall([kg], base, any_id=True))
    got = {v: (r["any_id_hit_count"], r["any_id_rel_count"], r["any_id_base_count"]) for v, r in rows.items()}
    assert got == {"full": (3, 3, 3), "classes": (2, 2, 2), "instances": (1, 1, 1)}
    assert rows["full"]["any_id_recall"] == pytest.approx(3 / 5) and rows["full"]["any_id_precision"] == 1.0
    assert rows["full"]["hit_count"] == 2  # by id[0]: (Q1, Q2) and (Q11, Q21)


def test_recall_measures_is_the_reference_arithmetic_on_sets():
    m = recall_measures({("Q1", "Q2"), ("Q7", "Q8")}, {("Q1", "Q2"), ("Q1", "Q3"), ("Q5", "Q6")})
    assert m == {"hit_count": 1, "rel_count": 2, "base_kg_size": 3, "recall": 1 / 3, "precision": 0.5,
                 "base_count": 1, "base_coverage": 0.5}
    assert any_id_measures({(("Q7", "Q1"), ("Q9", "Q2"))}, {("Q1", "Q2"), ("Q1", "Q3")}) == {
        "any_id_recall": 0.5, "any_id_hit_count": 1, "any_id_rel_count": 1, "any_id_precision": 1.0,
        "any_id_base_count": 1, "_covered": {("Q1", "Q2")}}
    empty = recall_measures(set(), set())
    assert empty["recall"] == 0.0 and empty["precision"] == 0.0 and empty["base_coverage"] == 0.0


def test_an_empty_kg_scores_zero_against_the_full_base(tmp_path, base):
    kg = write_jsonl(tmp_path / "empty.jsonl", [])
    rows = rows_by_view(eval_recall([kg], base))
    assert [(r["hit_count"], r["rel_count"], r["base_kg_size"], r["recall"], r["precision"])
            for r in rows.values()] == [(0, 0, 5, 0.0, 0.0), (0, 0, 3, 0.0, 0.0), (0, 0, 2, 0.0, 0.0)]


@pytest.mark.parametrize("line, message", [
    ('{"foo": 1}', 'kg.jsonl:2: neither KG shape: expected the base-KG shape {"event", "consequences"} or the '
                   'flat shape {"cause", "effect"}; found keys: foo'),
    ("[1, 2]", "kg.jsonl:2: a KG line must be a JSON object, got list"),
    ("{not json", "kg.jsonl:2: not valid JSON"),
    ('{"event": {"id": "Q1"}}', 'kg.jsonl:2: base-KG shape line without "consequences"'),
    ('{"cause": {"label": "a", "id": ["Q1"]}}', 'kg.jsonl:2: flat-shape line without "effect"'),
    ('{"cause": {"label": "a", "id": ["X1"]}, "effect": {"label": "b", "id": ["Q2"]}}', "kg.jsonl:2: cause.id.0:"),
    ('{"cause": {"label": "a", "id": []}, "effect": {"label": "b", "id": ["Q2"]}}', "kg.jsonl:2: cause.id:"),
    ('{"event": {"id": "Q1"}, "consequences": [{"id": "Q2", "examples": [{"cause": {"id": "Q3"}}]}]}',
     "kg.jsonl:2: consequences.0.examples.0.effect: Field required"),
])
def test_a_bad_line_is_an_error_naming_the_line(tmp_path, base, line, message):
    kg = tmp_path / "kg.jsonl"
    kg.write_text(json.dumps(flat(["Q1"], ["Q2"])) + "\n" + line + "\n", encoding="utf-8")
    with pytest.raises(SchemaError) as exc:
        eval_recall([kg], base)
    assert str(exc.value).startswith(str(tmp_path / message.split(":")[0]) + ":")
    assert message in str(exc.value)


def test_lenient_skips_and_counts_bad_lines(tmp_path, base):
    kg = write_jsonl(tmp_path / "kg.jsonl", [flat(["Q1"], ["Q3"]), '{"foo": 1}', flat(["Q1"], ["Q2"])])
    report = eval_recall([kg], base, lenient=True)
    assert rows_by_view(report)["classes"]["hit_count"] == 2
    assert any("1 bad lines skipped" in n for n in report.notes)
    assert report.results[0].read["skipped"] == 1 and report.results[0].read["records"] == 2


def test_the_base_kg_must_be_in_the_nested_shape(tmp_path):
    bad = write_jsonl(tmp_path / "base.jsonl", [flat(["Q1"], ["Q2"])])
    with pytest.raises(SchemaError, match=r"base.jsonl:1: expected the base-KG shape"):
        read_base_kg(bad)


def test_fast_flat_check_accepts_exactly_what_the_model_accepts(tmp_path):
    # A label that is a number is refused by FlatPair (str | None); a QID with a trailing newline too.
    p = write_jsonl(tmp_path / "kg.jsonl", [
        {"cause": {"label": 3, "id": ["Q1"]}, "effect": {"label": "b", "id": ["Q2"]}},
        {"cause": {"label": "a", "id": ["Q1\n"]}, "effect": {"label": "b", "id": ["Q2"]}},
        {"cause": {"id": ["Q1"], "extra": True}, "effect": {"id": ["Q2"]}, "provenance": {"page": 1}},
    ])
    stats = KGReadStats()
    pairs = list(iter_kg_pairs(p, lenient=True, stats=stats))
    assert stats.skipped == 2 and "cause.label" in stats.errors[0] and "cause.id.0" in stats.errors[1]
    assert [(x.cause, x.effect, x.cause_label) for x in pairs] == [("Q1", "Q2", None)]


def test_reachable_recall_counts_only_base_pairs_whose_cause_has_a_document(tmp_path, base):
    kg = write_jsonl(tmp_path / "kg.jsonl", KG_LINES)
    corpus = write_jsonl(tmp_path / "corpus.jsonl", [  # invented minimal corpus records
        {"id": 1, "title": "A", "url": "u", "text": "", "document_concept": {"id": "Q1", "label": "a"}},
        {"id": 2, "title": "B", "url": "u", "text": "", "document_concept": {"id": "Q10", "label": "b"}},
        {"id": 3, "title": "C", "url": "u", "text": "", "document_concept": {"id": None, "resolved": False}},
    ])
    assert read_document_concepts(corpus) == {"Q1", "Q10"}
    rows = rows_by_view(eval_recall([kg], base, corpus=corpus))
    assert (rows["classes"]["reachable_base_size"], rows["classes"]["reachable_hit_count"]) == (2, 1)
    assert rows["classes"]["reachable_recall"] == pytest.approx(0.5)
    assert (rows["instances"]["reachable_base_size"], rows["instances"]["reachable_recall"]) == (1, 1.0)
    assert (rows["full"]["reachable_base_size"], rows["full"]["reachable_hit_count"]) == (3, 2)
    # base_count and base_coverage over the reachable Base pairs: their causes are Q1 (classes)
    # and Q10 (instances), and the KG has both as causes; over the whole Base, Q4 and Q11 are missed.
    assert [(rows[v]["reachable_base_count"], rows[v]["reachable_base_coverage"]) for v in ("full", "classes", "instances")] \
        == [(2, 1.0), (1, 1.0), (1, 1.0)]
    assert (rows["full"]["base_count"], rows["full"]["base_coverage"]) == (2, 0.5)
    assert rows["classes"]["recall"] == pytest.approx(1 / 3)  # reference column unchanged
    bad = write_jsonl(tmp_path / "bad_corpus.jsonl", [{"id": 1}])
    with pytest.raises(SchemaError, match="bad_corpus.jsonl:1: not a corpus document"):
        read_document_concepts(bad)


def test_per_class_breakdown_and_marked_base_pairs_with_labels(tmp_path, base):
    kg = read_kg_pairs(write_jsonl(tmp_path / "kg.jsonl", KG_LINES))
    res = score_kg(kg, read_base_kg(base))
    by = {r["class_id"]: r for r in res.by_class}
    assert [r["class_id"] for r in res.by_class] == ["Q1", "Q4"]
    assert (by["Q1"]["class_pairs"], by["Q1"]["class_hits"], by["Q1"]["instance_pairs"], by["Q1"]["instance_hits"]) == (2, 1, 2, 1)
    assert by["Q1"]["full_recall"] == pytest.approx(0.5) and by["Q1"]["class_label"] == "q1"
    assert (by["Q4"]["class_hits"], by["Q4"]["instance_recall"], by["Q4"]["full_recall"]) == (0, 1.0, 0.5)
    pairs = {(p["view"], p["cause"]["id"], p["effect"]["id"]): p for p in res.pairs}
    assert len(pairs) == 5 == len(res.pairs)
    assert list(res.pairs) == list(res.pairs)  # made as read, the same rows each time
    shared = pairs[("instances", "Q10", "Q20")]
    assert shared["found"] and [g["id"] for g in shared["base_classes"]] == ["Q1", "Q4"]
    assert shared["cause"]["label"] == "q10"
    assert not pairs[("classes", "Q1", "Q3")]["found"] and pairs[("classes", "Q1", "Q2")]["found"]


# -- the real WikiCausal files ------------------------------------------------------------------


def independent_recall(kg_path: Path, base_path: Path) -> dict[str, tuple]:
    """The reference's rules re-implemented here on plain json and sets (no causalkg code)."""
    bc, bi = set(), set()
    for line in base_path.read_text(encoding="utf-8").splitlines():
        o = json.loads(line)
        for c in o["consequences"]:
            bc.add((o["event"]["id"], c["id"]))
            for e in c.get("examples") or []:
                bi.add((e["cause"]["id"], e["effect"]["id"]))
    kc: set = set()
    for line in kg_path.read_text(encoding="utf-8").splitlines():
        o = json.loads(line)
        kc.add((o["cause"]["id"][0], o["effect"]["id"][0]))
    out = {}
    for view, k, b in (("full", kc, bc | bi), ("classes", kc, bc), ("instances", set(), bi)):
        bs, ks = {x for x, _ in b}, {x for x, _ in k}
        hit = len(k & b)
        out[view] = (round(hit / len(b), 4), hit, len(k), len(b), len(bs & ks), round(len(bs & ks) / len(bs), 4))
    return out


# (recall, hit_count, rel_count, base_kg_size, base_count, base_coverage) as published in
# IBM/wikicausal results/recall-v1.md (commit a3df9e13), recall and coverage to 4 decimals.
PUBLISHED = {
    "causenet-full-linked-v1.jsonl": {
        "full": (0.0654, 54, 560, 826, 29, 0.0990),
        "classes": (0.1265, 54, 560, 427, 29, 0.5800),
        "instances": (0.0, 0, 0, 399, 0, 0.0),
    },
    "causenet-precision-linked-v1.jsonl": {
        "full": (0.0424, 35, 250, 826, 28, 0.0956),
        "classes": (0.0820, 35, 250, 427, 28, 0.5600),
        "instances": (0.0, 0, 0, 399, 0, 0.0),
    },
}


def test_the_causenet_kgs_score_exactly_the_published_figures():
    report = eval_recall([FULL, PREC], BASE_V1)
    got = {}
    for r in report.rows:
        got.setdefault(r["input_kg_file_name"], {})[r["eval_type"]] = (
            round(r["recall"], 4), r["hit_count"], r["rel_count"], r["base_kg_size"], r["base_count"],
            round(r["base_coverage"], 4))
    assert got == PUBLISHED
    assert independent_recall(FULL, BASE_V1) == PUBLISHED["causenet-full-linked-v1.jsonl"]
    assert independent_recall(PREC, BASE_V1) == PUBLISHED["causenet-precision-linked-v1.jsonl"]
    md = report.render("md").splitlines()
    assert "| causenet-full-linked-v1.jsonl | base-kg-v1.jsonl | classes | 0.1265 | 54 | 560 | 427 | 29 | 0.5800 |" in md[3]


def test_the_causenet_kgs_any_id_figures():
    rows = {(r["input_kg_file_name"], r["eval_type"]): r for r in eval_recall([FULL, PREC], BASE_V1, any_id=True).rows}
    full = rows[("causenet-full-linked-v1.jsonl", "classes")]
    prec = rows[("causenet-precision-linked-v1.jsonl", "classes")]
    assert (full["any_id_hit_count"], full["any_id_rel_count"], round(full["any_id_recall"], 4)) == (61, 615, 0.1429)
    assert (prec["any_id_hit_count"], prec["any_id_rel_count"], round(prec["any_id_recall"], 4)) == (40, 268, 0.0937)


def test_the_base_kg_scored_against_itself_has_recall_one():
    rows = rows_by_view(eval_recall([BASE_V1], BASE_V1))
    assert all(r["recall"] == 1.0 and r["precision"] == 1.0 and r["base_coverage"] == 1.0 for r in rows.values())
    assert (rows["classes"]["base_kg_size"], rows["instances"]["base_kg_size"], rows["full"]["base_kg_size"]) == (427, 399, 826)


# -- the command ---------------------------------------------------------------------------------


def test_cli_recall_tables_in_each_format(cli, tmp_path):
    res = cli("eval", "recall", "--kg", FULL, "--kg", PREC, "--format", "md", cwd=tmp_path)
    assert res.code == 0, res.err
    lines = res.out.splitlines()
    assert lines[0] == ("| input_kg_file_name | base_kg_file_name | eval_type | recall | hit_count | rel_count | "
                        "base_kg_size | base_count | base_coverage | precision |")
    assert "| causenet-precision-linked-v1.jsonl | base-kg-v1.jsonl | full | 0.0424 | 35 | 250 | 826 | 28 | 0.0956 | 0.1400 |" in lines
    res = cli("eval", "recall", "--kg", PREC, "--base-kg", BASE_V1, "--format", "csv", "--any-id")
    assert res.code == 0
    assert res.out.splitlines()[0].startswith("input_kg_file_name,base_kg_file_name,eval_type,recall,hit_count")
    assert "any_id_recall" in res.out.splitlines()[0]
    assert "causenet-precision-linked-v1.jsonl,base-kg-v1.jsonl,classes,0.0820,35,250,427,28,0.5600" in res.out
    res = cli("eval", "recall", "--kg", PREC, "--format", "json")
    data = json.loads(res.out)
    assert data[1]["eval_type"] == "classes" and data[1]["hit_count"] == 35
    assert data[1]["recall"] == pytest.approx(35 / 427)


def test_cli_recall_writes_details_and_a_plot(cli, tmp_path):
    out = tmp_path / "out"
    res = cli("eval", "recall", "--kg", FULL, "--per-class", "--out", out, "--format", "md", cwd=tmp_path)
    assert res.code == 0, res.err
    assert "| causenet-full-linked-v1.jsonl | base-kg-v1.jsonl | Q7944 | earthquake | 20 | 7 | 0.3500 |" in res.out
    assert (out / "recall_by_class.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    pairs = [json.loads(l) for l in (out / "recall_pairs.jsonl").read_text().splitlines()]
    assert len(pairs) == 826 and sum(p["found"] for p in pairs) == 54
    assert (out / "recall.md").read_text().startswith("# Recall Results\n")
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["stage"] == "eval-recall" and manifest["counts"]["rows"] == 3


def test_cli_recall_errors(cli, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"cause": {"id": ["Q1"]}, "effect": {"id": ["Q2"]}}\n{"oops": true}\n')
    res = cli("eval", "recall", "--kg", bad, cwd=tmp_path)
    assert res.code == 1 and res.out == ""
    assert res.err.strip() == (f'error: {bad}:2: neither KG shape: expected the base-KG shape {{"event", '
                               '"consequences"} or the flat shape {"cause", "effect"}; found keys: oops')
    res = cli("eval", "recall", "--kg", tmp_path / "nope.jsonl")
    assert res.code == 1 and res.err.strip() == f"error: {tmp_path / 'nope.jsonl'}: no such file"
    res = cli("eval", "recall", "--kg", bad, "--lenient")
    assert res.code == 0 and res.err.count("1 bad lines skipped") == 1  # said once, not once per layer
    corpus = tmp_path / "corpus.jsonl"  # a bad corpus line is counted too, never dropped silently
    corpus.write_text('{"document_concept": {"id": "Q1"}}\n{"title": "no concept"}\n')
    res = cli("eval", "recall", "--kg", bad, "--corpus", corpus, "--lenient")
    assert res.code == 0 and f"{corpus}: 1 records from 2 lines, 1 bad lines skipped (--lenient)" in res.err
    res = cli("eval", "recall")
    assert res.code == 2 and "--kg" in res.err
