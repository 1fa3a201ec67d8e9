"""scripts/synthetic_mentions.py, the input of the assembly and export memory measurements in
docs/scale.md: COPIES times a KG's linked mentions in generated documents, effects rotated, that
`kg assemble --linked` reads as any linked file."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import pytest

from causalkg.core.config import load_config
from causalkg.kg import assemble as A

REPO = Path(__file__).resolve().parents[2]
FIX = REPO / "tests" / "fixtures" / "kg"


def _script():
    spec = importlib.util.spec_from_file_location("synthetic_mentions", REPO / "scripts" / "synthetic_mentions.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_copies_in_generated_documents_assemble_into_a_bounded_kg(tmp_path):
    kg = tmp_path / "kg"
    (kg / "linked").mkdir(parents=True)
    shutil.copy(FIX / "linked.jsonl", kg / "linked" / "shard-00000.jsonl")
    rows = [json.loads(line) for line in (FIX / "linked.jsonl").read_text().splitlines() if line.strip()]
    mod = _script()
    out = tmp_path / "m.jsonl"
    assert mod.main(["7", str(out), "--kg", str(kg)]) == 0
    made = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(made) == 7 * len(rows)
    assert len({m["mention_id"] for m in made}) == len(made)
    assert all(m["doc_id"].startswith("gen-") and "(generated " in m["title"] for m in made)
    assert [m["sentence"] for m in made[: len(rows)]] == [r["sentence"] for r in rows]  # the real texts
    assert made[: len(rows)][0]["effect"]["qid"] == rows[0]["effect"]["qid"]  # copy 0 unchanged
    effects = {r["effect"]["qid"] for r in rows}
    assert {m["effect"]["qid"] for m in made} == effects  # rotated among the KG's effects only

    cfg = load_config(search_cwd=False, overrides={"paths.data": str(tmp_path / "data")})
    res = A.assemble(cfg, linked=out, concepts=FIX / "concepts.jsonl", out=tmp_path / "out")
    # every copy is a mention of its own document (two copies of a sentence whose rotated effects
    # meet are one mention); the edges stay few while the mentions grow with COPIES
    assert len(rows) < res.counts["mentions"] <= len(made)
    assert res.counts["edges"] < res.counts["mentions"]


def test_no_linked_mentions_is_a_clear_exit(tmp_path):
    (tmp_path / "kg" / "linked").mkdir(parents=True)
    with pytest.raises(SystemExit, match="no linked mentions"):
        _script().main(["2", str(tmp_path / "m.jsonl"), "--kg", str(tmp_path / "kg")])
