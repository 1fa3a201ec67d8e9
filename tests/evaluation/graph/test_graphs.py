"""Graph readers: the documented JSONL, the tuple form, Label Studio exports, the study's CSV."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from causalkg.core.errors import ConfigError, SchemaError
from causalkg.core.jsonl import ReadStats
from causalkg.evaluation.graph.graphs import (
    Edge,
    Graph,
    parse_named_paths,
    read_fcm_csv,
    read_graphs,
    read_label_studio,
    write_graphs,
)

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "soft-measures"


def _write(path: Path, lines: list) -> Path:
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path


def test_documented_form_round_trips(tmp_path):
    rec = {
        "id": "a1", "text": "Stress increases burnout.",
        "nodes": [{"id": "n1", "label": "stress", "level": "higher"}, {"id": "n2", "label": "burnout"}],
        "edges": [{"source": "n1", "target": "n2", "type": "Directional", "direction": "positive", "validation": "validated"}],
    }
    graphs = read_graphs(_write(tmp_path / "g.jsonl", [rec]))
    g = graphs["a1"]
    assert g.label("n1") == "stress" and g.nodes["n1"].level == "higher"
    # Case is folded and the study's positive/negative read as increase/decrease.
    assert g.edges == [Edge("n1", "n2", "directional", "increase", "validated")]
    write_graphs(tmp_path / "out.jsonl", graphs.values())
    again = read_graphs(tmp_path / "out.jsonl")["a1"]
    assert again.edges == g.edges and again.nodes == g.nodes and again.text == g.text


def test_tuple_form_and_the_studys_key(tmp_path):
    lines = [
        {"id": "p1", "text": "t", "edges": [{"src": "rainfall", "tgt": "risk", "direction": " Negative"}]},
        {"text": "u", "causal relations": [{"src": "roads", "tgt": "access", "direction": "Positive"}]},
    ]
    graphs = read_graphs(_write(tmp_path / "t.jsonl", lines))
    assert list(graphs) == ["p1", "1"]  # an id-less line is numbered by position
    # The tuple form keeps the direction string exactly (the reference mode compares strings).
    assert graphs["p1"].edges[0].direction == " Negative"
    assert graphs["1"].label(graphs["1"].edges[0].source) == "roads"
    assert graphs["1"].edges[0].type == "directional"


def test_errors_name_path_and_line(tmp_path):
    bad = _write(tmp_path / "bad.jsonl", [
        {"id": "ok", "nodes": [{"id": "a", "label": "a"}], "edges": []},
        {"id": "x", "nodes": [{"id": "a", "label": "a"}], "edges": [{"source": "a", "target": "zz"}]},
        {"id": "y", "nodes": [{"id": "a", "label": "a"}, {"id": "b", "label": "b"}],
         "edges": [{"source": "a", "target": "b", "type": "causes"}]},
    ])
    with pytest.raises(SchemaError) as exc:
        read_graphs(bad)
    assert str(exc.value) == f"{bad}:2: edges.0: node 'zz' is not in nodes"
    stats = ReadStats()
    graphs = read_graphs(bad, lenient=True, stats=stats)
    assert list(graphs) == ["ok"] and stats.skipped == 2
    assert stats.errors[1].startswith(f"{bad}:3: edges.0.type: Input should be 'directional'")


def test_duplicate_unit_ids_fail(tmp_path):
    f = _write(tmp_path / "d.jsonl", [{"id": "u", "edges": []}, {"id": "u", "edges": []}])
    with pytest.raises(SchemaError, match="unit id 'u' appears twice"):
        read_graphs(f)


# An invented Label Studio export in the shape of the EmpiriGraph-Psy project's (one task).
LABEL_STUDIO = [{
    "id": 7,
    "data": {"AB": "Stress and workload predict burnout; support moderates it."},
    "annotations": [
        {"was_cancelled": True, "completed_by": 9, "result": []},
        {"completed_by": 1, "result": [
            {"id": "s1", "type": "labels", "value": {"text": "stress", "labels": ["Variable"]}},
            {"id": "s2", "type": "labels", "value": {"text": "work load ", "labels": ["Variable"]}},
            {"id": "s3", "type": "labels", "value": {"text": "burnout", "labels": ["Variable"]}},
            {"id": "s4", "type": "labels", "value": {"text": "support", "labels": ["Variable"]}},
            {"id": "s5", "type": "labels", "value": {"text": "Study 1", "labels": ["Method"]}},
            {"id": "s2", "type": "textarea", "from_name": "var_name", "value": {"text": ["workload"]}},
            {"type": "relation", "from_id": "s1", "to_id": "s3", "labels": ["direction__validated", "increase"]},
            {"type": "relation", "from_id": "s2", "to_id": "s3", "labels": ["correlation__null"]},
            {"type": "relation", "from_id": "s4", "to_id": "s3", "labels": ["moderation__hypothesized"]},
            {"type": "relation", "from_id": "s1", "to_id": "s2", "labels": ["hierarchy"]},
            {"type": "relation", "from_id": "s4", "to_id": "s1", "labels": ["direction"]},
            {"type": "relation", "from_id": "s5", "to_id": "s3", "labels": ["direction__validated"]},
            {"type": "relation", "from_id": "s4", "to_id": "s2", "labels": ["causes"]},
        ]},
    ],
}]


def test_label_studio_export(tmp_path):
    f = tmp_path / "export.json"
    f.write_text(json.dumps(LABEL_STUDIO), encoding="utf-8")
    stats = ReadStats()
    g = read_graphs(f, stats=stats)["7"]
    assert g.text.startswith("Stress and workload")
    assert {n.id: n.label for n in g.nodes.values()} == {"s1": "stress", "s2": "workload", "s3": "burnout", "s4": "support"}
    assert g.edges == [
        Edge("s1", "s3", "directional", "increase", "validated"),
        Edge("s2", "s3", "correlational", None, "null"),
        Edge("s4", "s3", "moderation", None, "hypothesized"),
        Edge("s1", "s2", "hierarchy", None, None),
        Edge("s4", "s1", "directional", None, "validated"),  # no suffix: validated, as the gold parser
    ]
    assert g.nodes["s1"].level == "higher" and g.nodes["s2"].level == "lower"
    # The relation from a non-variable span and the unknown label are reported, not lost silently.
    assert any("not a variable" in e for e in stats.errors)
    assert any("unknown relation label 'causes'" in e for e in stats.errors)
    # Choosing the cancelled annotator gives an empty graph, said in the stats.
    stats2 = ReadStats()
    assert read_label_studio(f, annotator=9, stats=stats2)[0].edges == []
    assert "no annotation by 9" in stats2.errors[0]


def test_label_studio_errors(tmp_path):
    f = tmp_path / "bad.json"
    f.write_text(json.dumps([{"id": 3, "annotations": [{"result": {"x": 1}}]}]))
    with pytest.raises(SchemaError) as exc:
        read_label_studio(f)
    assert str(exc.value) == f"{f}: task 1 (id 3): annotations[0].result must be a list"
    f.write_text("[{")
    with pytest.raises(SchemaError, match=r"not valid JSON"):
        read_label_studio(f)


def test_fcm_csv_fixture_pairs_two_annotations_per_passage():
    by_source = read_fcm_csv(FIXTURES / "double-annotated.csv")
    sift = by_source.pop("SIFT_data_2024_03")
    others: dict[str, Graph] = {}
    for graphs in by_source.values():
        others.update(graphs)
    assert len(sift) == 53 and set(sift) == set(others)
    assert sum(len(g.edges) for g in sift.values()) == 110
    assert sum(len(g.edges) for g in others.values()) == 126
    g = others[next(iter(others))]
    assert g.label(g.edges[0].source) == "livestock, especially cattle" and g.edges[0].direction == "Positive"


def test_named_paths():
    assert parse_named_paths(["a=x.jsonl", "b = y.json"]) == {"a": "x.jsonl", "b": "y.json"}
    with pytest.raises(ConfigError, match="expected NAME=PATH"):
        parse_named_paths(["nope"])


def test_capitalised_study_directions_are_read(tmp_path):
    """The soft-measures study writes Positive/Negative; they read as increase/decrease."""
    from causalkg.evaluation.graph.graphs import read_graphs

    p = tmp_path / "g.jsonl"
    p.write_text('{"id": "u", "nodes": [{"id": "a", "label": "a"}, {"id": "b", "label": "b"}], '
                 '"edges": [{"source": "a", "target": "b", "direction": "Positive"}, '
                 '{"source": "b", "target": "a", "direction": " NEGATIVE "}]}\n')
    g = read_graphs(p)["u"]
    assert sorted(e.direction for e in g.edges) == ["decrease", "increase"]
