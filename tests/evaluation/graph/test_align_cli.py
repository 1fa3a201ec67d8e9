"""``causalkg eval align`` on invented graphs: views, per-type scores, node validation, errors."""

from __future__ import annotations

import json

import pytest


def _rec(uid, nodes, edges):
    return {"id": uid, "nodes": [{"id": n, "label": lbl} for n, lbl in nodes.items()],
            "edges": [{"source": s, "target": t, "type": ty, "validation": v} for s, t, ty, v in edges]}


@pytest.fixture
def files(in_tmp):
    gold = [
        _rec("a1", {"H": "job demands", "L1": "workload", "L2": "time pressure", "B": "burnout", "S": "support"},
             [("H", "L1", "hierarchy", None), ("H", "L2", "hierarchy", None), ("L1", "B", "directional", "validated"),
              ("S", "B", "moderation", "null"), ("S", "L2", "correlational", "hypothesized")]),
        _rec("a2", {}, []),
    ]
    pred = [
        _rec("a1", {"h": "demands at work", "w": "work load", "t": "time stress", "b": "exhaustion", "s": "social support"},
             [("h", "w", "hierarchy", None), ("h", "t", "hierarchy", None), ("w", "b", "directional", "null"),
              ("s", "b", "moderation", "null"), ("t", "s", "correlational", "validated")]),
    ]
    g, p = in_tmp / "gold.jsonl", in_tmp / "pred.jsonl"
    g.write_text("".join(json.dumps(x) + "\n" for x in gold))
    p.write_text("".join(json.dumps(x) + "\n" for x in pred))
    return g, p


def test_align_command(cli, files, in_tmp):
    g, p = files
    r = cli("eval", "align", g, p, "--format", "csv")
    assert r.code == 0, r.err
    rows = {line.split(",")[0]: line.split(",") for line in r.out.splitlines()[1:5]}
    header = r.out.splitlines()[0].split(",")
    col = {name: i for i, name in enumerate(header)}
    # Typed: after propagation both graphs have H->L1, H->L2, L1->B, H->B, S->B, S--L2, S--H,
    # and everything matches (correlational edges undirected).
    typed = rows["typed"]
    assert typed[col["units"]] == "2" and typed[col["exact_units"]] == "2"
    assert typed[col["matched"]] == typed[col["gold_edges"]] == typed[col["pred_edges"]] == "7"
    assert float(typed[col["macro_f1"]]) == 1.0  # a2: both empty scores 1
    assert float(rows["higher"][col["micro_f1"]]) == 1.0 and rows["higher"][col["gold_edges"]] == "3"
    assert rows["agnostic"][col["matched"]] == "7"
    assert len(r.out.splitlines()) == 5  # csv is the table only; text adds the counts
    text = cli("eval", "align", g, p, "--no-write")
    assert text.out.rstrip().splitlines()[-1] == "2 units; 8 of 8 unit views solved exactly"
    units = [json.loads(x) for x in (in_tmp / "data/eval/align/units.jsonl").read_text().splitlines()]
    a1 = next(u for u in units if u["unit"] == "a1" and u["view"] == "typed")
    assert a1["phi"] == {"H": "h", "L1": "w", "L2": "t", "B": "b", "S": "s"}
    assert a1["per_type"]["moderation"]["f1"] == 1.0 and a1["per_type"]["directional"]["matched"] == 2


def test_align_validation_variants(cli, files):
    g, p = files
    r = cli("eval", "align", g, p, "--views", "typed", "--validation", "match", "--no-write", "--format", "json")
    assert r.code == 0, r.err
    (row,) = json.loads(r.out)
    # Validations agree only on the two hierarchy edges and S->B (null): L1->B is validated in
    # gold and null in pred (so are their propagated copies H->B), S--L2 hypothesized vs validated.
    assert row["matched"] == 3 and row["gold_edges"] == 7
    r = cli("eval", "align", g, p, "--views", "typed", "--validation", "validated-only", "--no-write", "--format", "json")
    (row,) = json.loads(r.out)
    assert row["gold_edges"] == 4 and row["pred_edges"] == 4  # hierarchy + validated edges only


def test_align_manifest_names_the_node_measure_by_versioned_name(cli, files, in_tmp):
    """Node validation with any similarity measure (rouge, an alias of rouge1: no model to load);
    the manifest records the measure as the registry's versioned name."""
    g, p = files
    r = cli("eval", "align", g, p, "--views", "typed", "--node-encoder", "rouge")
    assert r.code == 0, r.err
    assert "node validation [typed] mean cosine" in r.out
    manifest = json.loads((in_tmp / "data/eval/align/manifest.json").read_text())
    assert manifest["options"]["node_encoder"] == "rouge1.v1"


@pytest.mark.slow
def test_align_node_validation_with_minilm(cli, files):
    g, p = files
    r = cli("eval", "align", g, p, "--views", "typed", "--node-encoder", "embedding:all-MiniLM-L6-v2", "--no-write")
    assert r.code == 0, r.err
    assert "node validation [typed] mean cosine" in r.out and "over 5 pairs" in r.out


def test_align_errors(cli, files):
    g, p = files
    r = cli("eval", "align", g, p, "--views", "flat")
    assert r.code == 2 and r.err.strip() == (
        "error: unknown alignment view 'flat' (choose from typed, higher, agnostic, higher-agnostic)")
    r = cli("eval", "align", g, p, "--orders", "bfs")
    assert r.code == 2 and r.err.strip().startswith("error: unknown node order 'bfs'")


def test_align_reference_mode_counts_the_self_loops_of_step3(cli, in_tmp):
    # gold: a parent with two children joined by a directional edge; pred: the same without the
    # child-to-child edge. Step 3 copies A->B up to H at either end; the reference mode also makes
    # the self-loop H->H, which counts as a gold edge that no prediction matches.
    gold = [_rec("u", {"H": "demands", "A": "workload", "B": "time pressure"},
                 [("H", "A", "hierarchy", None), ("H", "B", "hierarchy", None), ("A", "B", "directional", None)])]
    pred = [_rec("u", {"h": "demands", "a": "workload", "b": "time pressure"},
                 [("h", "a", "hierarchy", None), ("h", "b", "hierarchy", None)])]
    g, p = in_tmp / "g.jsonl", in_tmp / "p.jsonl"
    g.write_text("".join(json.dumps(x) + "\n" for x in gold))
    p.write_text("".join(json.dumps(x) + "\n" for x in pred))
    rows = {}
    for mode in ("ours", "reference"):
        r = cli("eval", "align", g, p, "--views", "typed", "--mode", mode, "--format", "json", "--out", in_tmp / mode)
        assert r.code == 0, r.err
        rows[mode] = json.loads(r.out)
        man = json.loads((in_tmp / mode / "manifest.json").read_text())
        assert man["options"]["mode"] == mode
    ours, ref = rows["ours"][0], rows["reference"][0]
    # ours: H->A, H->B, A->B; the reference adds H->H, a gold edge no prediction matches
    assert (ours["gold_edges"], ours["matched"], round(ours["micro_r"], 4)) == (3, 2, 0.6667)
    assert (ref["gold_edges"], ref["matched"], ref["micro_r"]) == (4, 2, 0.5)
    r = cli("eval", "align", g, p, "--mode", "theirs", "--no-write")
    assert r.code == 2
