"""A small real KG for the web tests: the fixture mentions of tests/fixtures/kg (real Wikipedia
sentences, gold links) assembled and exported into an Oxigraph store, with the bundled Base KG,
as ``make kg`` lays them out under ``data/``. No model is trained or loaded."""

from __future__ import annotations

import shutil
from pathlib import Path

from causalkg.core.config import load_config

REPO = Path(__file__).resolve().parents[2]
FIX = REPO / "tests" / "fixtures" / "kg"
BASE = REPO / "snapshots" / "wikicausal" / "base-kg-v1.jsonl"


def build_project(root: Path, *, export: bool = True):
    """``root/data`` with the fixture KG assembled (and exported); returns the config."""
    from causalkg.kg import assemble as A
    from causalkg.kg import store as K

    cfg = load_config(search_cwd=False, overrides={"paths.data": str(root / "data")})
    wd = root / "data" / "wikidata"
    wd.mkdir(parents=True, exist_ok=True)
    shutil.copy(BASE, wd / "base_kg.jsonl")
    shutil.copy(FIX / "concepts.jsonl", wd / "concepts.jsonl")
    A.assemble(cfg, linked=FIX / "linked.jsonl", concepts=wd / "concepts.jsonl")
    if export:
        K.export(cfg)
    return cfg
