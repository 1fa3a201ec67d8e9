"""Structured sources (kg/extractors/structured.py): infobox fields and Causes/Aftermath lists.

Infobox values and headings are quoted from the bundled English Wikipedia snapshot
(snapshots/enwiki, CC BY-SA 4.0): Iranian Revolution, Spanish–American War, Red Butte Creek oil
spill, Air India Express Flight 812, American Revolutionary War.
"""

from __future__ import annotations

from causalkg.core.contracts import Extraction
from causalkg.kg.extractors.structured import category_heads, event_phrases, split_items, structured_pairs


def _check_offsets(p):
    t, st = p["sentence"]["text"], p["sentence"]["start"]
    for end in ("cause", "effect"):
        sp = p[end]
        assert t[sp["start"] - st: sp["end"] - st] == sp["text"]


IRAN = {
    "id": 14653, "title": "Iranian Revolution", "url": "https://en.wikipedia.org/wiki/Iranian_Revolution",
    "text": "", "categories": ["Protests in Iran", "20th-century revolutions", "1979 in Iran"],
    "infobox": {"name": "Infobox Civil Conflict", "fields": {
        "date": "7 January 1978 – 11 February 1979",
        "causes": "Discontent with the Shah's rule; Exile of Ayatollah Khomeini; Social injustice; Western imperialism; "
                  "Religious motives; and others",
        "result": "Overthrow of the Shah and monarchy; 1979 energy crisis; Iran hostage crisis",
    }},
}


def test_infobox_cause_and_result_fields_become_pairs_with_the_page_event():
    pairs = list(structured_pairs(IRAN))
    for p in pairs:
        _check_offsets(p)
        assert p["source"] == p["extractor"] == "wikipedia_infobox"
        Extraction.model_validate({"schema_version": "1", **p})
    causes = [p["cause"]["text"] for p in pairs if p["effect"]["text"] == "Iranian Revolution"]
    effects = [p["effect"]["text"] for p in pairs if p["cause"]["text"] == "Iranian Revolution"]
    assert causes == ["Discontent with the Shah's rule", "Exile of Ayatollah Khomeini", "Social injustice",
                      "Western imperialism", "Religious motives"]  # "and others" is not an item
    assert "1979 energy crisis" in effects and "Iran hostage crisis" in effects
    assert all(p["model"] in ("causes", "result") for p in pairs)  # "date" is not a causal field
    assert {p["event_end"] for p in pairs} == {"cause", "effect"}


def test_an_aviation_origin_field_is_not_a_cause():
    rec = {"id": 1, "title": "Air India Express Flight 812", "text": "",
           "infobox": {"name": "Infobox aircraft occurrence",
                       "fields": {"origin": "Dubai International Airport", "summary": "Runway overrun"}}}
    assert list(structured_pairs(rec)) == []


def test_sub_headings_of_a_causes_section_are_list_items():
    text = "Causes\n\nTaxes Rates\n\nThe colonists objected.\n\nCrisis\n\nMore prose here."
    rec = {"id": 2, "title": "American Revolutionary War", "text": text,
           "sections": [{"heading": "Causes", "level": 2, "start": 0, "end": 8},
                        {"heading": "Taxes Rates", "level": 3, "start": 8, "end": 45},
                        {"heading": "Crisis", "level": 3, "start": 45, "end": len(text)},
                        {"heading": "References", "level": 2, "start": len(text), "end": len(text)}]}
    pairs = list(structured_pairs(rec))
    assert [(p["cause"]["text"], p["effect"]["text"]) for p in pairs] == [
        ("Taxes Rates", "American Revolutionary War"), ("Crisis", "American Revolutionary War")]
    assert all(p["source"] == "wikipedia_list" for p in pairs)
    for p in pairs:
        _check_offsets(p)


def test_items_are_split_and_cleaned():
    v = "Islamic extremism, retaliation against French airstrikes on ISIL"
    assert [v[s:e] for s, e in split_items(v)] == [v]  # a long piece after the comma: one item
    v = "Casualties and war crimes"
    assert [v[s:e] for s, e in split_items(v)] == [v]
    v = "Genocide, concentration camps, and slave labour"
    assert [v[s:e] for s, e in split_items(v)] == ["Genocide", "concentration camps", "slave labour"]
    v = "Ruptured pipeline (presumed)"
    assert [v[s:e] for s, e in split_items(v)] == ["Ruptured pipeline"]


def test_the_page_event_falls_back_to_categories_with_the_same_head():
    rec = {"title": "Red Butte Creek oil spill",
           "categories": ["Chevron Corporation", "Oil spills in the United States", "2010 industrial disasters"]}
    assert event_phrases(rec) == ["Red Butte Creek oil spill", "oil spills"]
    assert category_heads(["20th-century revolutions", "1986 industrial disasters"]) == ["revolutions", "industrial disasters"]
