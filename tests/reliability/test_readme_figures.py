"""The README's KG figures are the ones a fresh-clone ``make kg`` gives.

A full build trains the QA model (minutes of CPU), too slow for the suite; so the figures of a
real fresh-clone build are committed in ``tests/fixtures/kg/snapshot-figures.json`` (written by
``scripts/kg_figures.py --write`` after ``make kg``; ``--check`` compares a build with it), and
this test holds every place of the README that states them to that file. What a test can afford
of the build itself is checked in test_determinism.py: extraction and assembly give the same
bytes at any shard and batch size, so the figures do not depend on how the build was batched."""

from __future__ import annotations

import json
import re

from tests.conftest import REPO

FIGURES = json.loads((REPO / "tests" / "fixtures" / "kg" / "snapshot-figures.json").read_text(encoding="utf-8"))["figures"]
README = (REPO / "README.md").read_text(encoding="utf-8")
KG_DOC = (REPO / "docs" / "kg.md").read_text(encoding="utf-8")


def test_the_figures_block_is_the_fresh_build():
    block = re.search(r"<!-- kg-figures -->\n(.*?)<!-- /kg-figures -->", README, re.S)
    assert block, "README.md has no <!-- kg-figures --> block"
    rows = [line for line in block.group(1).splitlines() if line.startswith("|")]
    header = [c.strip() for c in rows[0].strip("|").split("|")]
    values = [int(c.strip().replace(",", "")) for c in rows[2].strip("|").split("|")]
    names = {"extracted pairs": "extractions", "edges": "edges", "class": "edges_class", "instance": "edges_instance",
             "mixed": "edges_mixed", "concepts": "nodes", "mentions": "mentions", "documents": "documents",
             "RDF triples": "triples"}
    assert {names[h]: v for h, v in zip(header, values)} == FIGURES


def test_the_worked_example_states_the_same_figures():
    f = FIGURES
    line = (f"causal KG in data/kg: {f['edges']} edges ({f['edges_class']} class, {f['edges_instance']} instance, "
            f"{f['edges_mixed']} mixed) between {f['nodes']} concepts, from {f['mentions']} mentions in "
            f"{f['documents']} documents; {f['triples']} RDF triples")
    assert line in README
    assert f"of {f['extractions']} extracted pairs linked at both ends" in README
    assert f"So the offline KG has {f['edges']} edges" in KG_DOC
    assert f"{f['nodes']} nodes, {f['edges']} edges" in README
