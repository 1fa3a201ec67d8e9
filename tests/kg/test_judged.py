"""Hand judgements of KG edges (kg/judged.py): the JSONL file round trip."""

from __future__ import annotations

import json

from causalkg.kg import judged


def test_judgements_with_unicode_line_breaks_round_trip(tmp_path):
    """json.dumps(ensure_ascii=False) writes U+2028, U+0085 and form feeds raw; a reader that cut
    the file with str.splitlines() broke such a line in two and failed on it."""
    sentences = ["The quake\u2028caused the tsunami.", "Floods\x85led to famine.", "War\x0ccaused\u2029migration."]
    rows = [judged.Judgement(cause="Q7944", effect="Q8070", sentence=s, stated=True, asserted=True,
                             cause_ok=True, effect_ok=True, note="line\u2028break") for s in sentences]
    path = tmp_path / "judged.jsonl"
    path.write_text(judged.dump(rows), encoding="utf-8")
    loaded = judged.load(path)
    assert sorted(j.sentence for j in loaded.values()) == sorted(sentences)
    assert all(j.supported and j.note == "line\u2028break" for j in loaded.values())


def test_base_kg_pairs_reads_labels_with_unicode_line_breaks(tmp_path):
    line = {"event": {"id": "Q7944", "label": "earth\u2028quake"},
            "consequences": [{"id": "Q8070", "label": "tsu\x85nami", "examples": []}]}
    path = tmp_path / "base.jsonl"
    path.write_text(json.dumps(line, ensure_ascii=False) + "\n", encoding="utf-8")
    assert judged.base_kg_pairs(path) == {("Q7944", "Q8070")}
