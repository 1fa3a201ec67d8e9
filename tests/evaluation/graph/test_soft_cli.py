"""``causalkg eval soft`` on the real soft-measures passages: output table, files, errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from causalkg.evaluation.graph.graphs import read_fcm_csv, write_graphs

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "soft-measures"


@pytest.fixture
def passages(tmp_path):
    """The non-SIFT annotation of each passage as gold, the SIFT one as prediction (tuple form)."""
    by_source = read_fcm_csv(FIXTURES / "double-annotated.csv")
    pred = by_source.pop("SIFT_data_2024_03")
    gold = {u: g for graphs in by_source.values() for u, g in graphs.items()}
    g, p = tmp_path / "gold.jsonl", tmp_path / "pred.jsonl"
    write_graphs(g, gold.values(), form="tuple")
    write_graphs(p, pred.values(), form="tuple")
    return g, p


def test_soft_command_ours_and_reference(cli, passages, in_tmp):
    gold, pred = passages
    r = cli("eval", "soft", gold, pred, "--measure", "exact", "--measure", "rouge1=0.5", "--format", "csv")
    assert r.code == 0, r.err
    lines = r.out.splitlines()
    assert lines[0] == "measure,theta,mode,units,TP,PP,FP,FN,micro_p,micro_r,micro_f1,macro_p,macro_r,macro_f1"
    assert lines[1].startswith("exact,1.0000,ours,53,9,0,101,116,")
    assert lines[2].startswith("rouge1,0.5000,ours,53,")
    assert len(lines) == 3  # csv is the table only; text adds the counts
    text = cli("eval", "soft", gold, pred, "--measure", "exact", "--measure", "rouge1=0.5")
    assert text.out.rstrip().splitlines()[-1] == f"53 units; per-unit scores in {in_tmp / 'data/eval/soft'}/units.jsonl"
    units = [json.loads(x) for x in (in_tmp / "data/eval/soft/units.jsonl").read_text().splitlines()]
    assert len(units) == 106 and {u["measure"] for u in units} == {"exact", "rouge1"}
    manifest = json.loads((in_tmp / "data/eval/soft/manifest.json").read_text())
    assert manifest["stage"] == "eval.soft" and manifest["counts"]["units"] == 53
    assert manifest["options"]["measures"] == ["exact.v1=1.0", "rouge1.v1=0.5"]  # versioned registry names
    # Reference mode: bleu and exact become the study's variants, with their own thresholds.
    r = cli("eval", "soft", gold, pred, "--mode", "reference", "--measure", "bleu", "--measure", "exact",
            "--no-write", "--format", "csv")
    assert r.code == 0, r.err
    rows = [x.split(",") for x in r.out.splitlines()[1:3]]
    assert rows[0][:3] == ["ref-bleu", "0.2000", "reference"] and rows[1][:3] == ["verbatim", "0.5000", "reference"]
    assert "per-unit scores" not in r.out


def test_soft_command_options(cli, passages, in_tmp):
    gold, pred = passages
    r = cli("eval", "soft", gold, pred, "--measure", "rouge1=0.5", "--one-to-one", "--w", "1",
            "--non-textual", "direction", "--no-write", "--format", "json")
    assert r.code == 0, r.err
    (row,) = json.loads(r.out)
    assert row["TP"] + row["PP"] + row["FP"] == 110


def test_soft_command_errors(cli, passages, in_tmp):
    gold, pred = passages
    r = cli("eval", "soft", gold, in_tmp / "missing.jsonl")
    assert r.code == 1 and r.err.strip() == f"error: {in_tmp / 'missing.jsonl'}: no such file"
    r = cli("eval", "soft", gold, pred, "--measure", "blue", "--no-write")
    assert r.code == 2 and r.err.strip().startswith("error: no default threshold for measure 'blue'")
    r = cli("eval", "soft", gold, pred, "--measure", "blue=0.3", "--no-write")
    assert r.code == 2 and r.err.strip().startswith("error: unknown similarity measure 'blue' (choose one of: bleu,")
    r = cli("eval", "soft", gold, pred, "--non-textual", "colour", "--measure", "exact", "--no-write")
    assert r.code == 2 and "unknown non-textual attribute(s) colour" in r.err
    bad = in_tmp / "bad.jsonl"
    bad.write_text('{"id": "1", "edges": [{"src": "a"}]}\n')
    r = cli("eval", "soft", bad, pred, "--measure", "exact", "--no-write")
    assert r.code == 1 and r.err.strip() == f"error: {bad}:1: edges.0.tgt: Field required"
    r = cli("eval", "soft", bad, pred, "--measure", "exact", "--no-write", "--lenient")
    assert r.code == 0
    assert "53 units (0 without a prediction, 53 without gold: scored as empty)" in r.out
