"""notebooks/explore_kg.ipynb runs offline (nbclient) on a fixture KG and shows what it says."""

from __future__ import annotations

import shutil
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from causalkg.core.config import load_config
from causalkg.kg import assemble as A

REPO = Path(__file__).resolve().parents[2]
FIX = REPO / "tests" / "fixtures" / "kg"


@pytest.mark.slow
def test_explore_kg_notebook_executes(tmp_path, monkeypatch):
    data = tmp_path / "data"
    (data / "wikidata").mkdir(parents=True)
    shutil.copy(REPO / "snapshots" / "wikicausal" / "base-kg-v1.jsonl", data / "wikidata" / "base_kg.jsonl")
    cfg = load_config(search_cwd=False, overrides={"paths.data": str(data)})
    A.assemble(cfg, linked=FIX / "linked.jsonl", concepts=FIX / "concepts.jsonl")

    monkeypatch.setenv("CAUSALKG_DATA", str(data))
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    nb = nbformat.read(REPO / "notebooks" / "explore_kg.ipynb", as_version=4)
    NotebookClient(nb, timeout=180, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()

    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.output_type == "error"]
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert f"causal KG in {data}/kg: 13 edges (10 class, 1 instance, 2 mixed)" in text
    pngs = [o for o in outputs if o.output_type == "display_data" and "image/png" in o.get("data", {})]
    assert len(pngs) == 3  # the class graph, instance + mixed graphs, the degree plot
    markdown = "".join(o["data"].get("text/markdown", "") for o in outputs if o.output_type == "display_data")
    assert "| earthquake | tsunami | class | 2 | 1 | 0.93 | The undersea megathrust earthquake" in markdown
    assert "[lifted] The tsunami caused the 2004 Sri Lanka tsunami-rail disaster" in markdown
    assert "| classes | 10 | 427 | 5 |" in markdown
