"""The vocabulary fixture is the Base KG, faithfully converted."""

from __future__ import annotations

import json

from causalkg.core.contracts import Concept
from causalkg.core.jsonl import read_jsonl



def test_fixture_is_current_and_valid(make_concepts_module):
    derived = make_concepts_module.derive_concepts()
    FULL_CONCEPTS = make_concepts_module.OUT
    on_disk = [json.loads(x) for x in FULL_CONCEPTS.read_text(encoding="utf-8").splitlines()]
    assert derived == on_disk, "rerun python tests/fixtures/linking/make_concepts.py"
    concepts = list(read_jsonl(FULL_CONCEPTS, Concept))
    assert len(concepts) == 904
    assert sum(c.kind == "class" for c in concepts) == 307
    by_id = {c.id: c for c in concepts}
    assert by_id["Q8070"].label == "tsunami" and by_id["Q8070"].seed_classes == ["Q8070"]
    assert "wars" in by_id["Q198"].aliases and "conflict" in by_id["Q198"].aliases
    # the cause of an example under "conflict" falls under the seed class conflict
    assert by_id["Q1070342"].label == "King William's War" and by_id["Q1070342"].kind == "instance"
    assert "Q180684" in by_id["Q1070342"].seed_classes
