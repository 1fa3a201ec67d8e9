"""Phrase normalisation: no model needed."""

from __future__ import annotations

import pytest

from causalkg.linking.normalize import clean, fold, normalise, singular_forms, surface_keys


@pytest.mark.parametrize("phrase, text, key", [
    ("the tsunamis", "tsunamis", "tsunami"),
    ("A wave of Protests.", "protests", "protest"),
    ("widespread famine", "famine", "famine"),
    ("a series of large-scale riots", "riots", "riot"),
    ("  Two  major\tearthquakes ", "earthquakes", "earthquake"),
    ("the crises", "crises", "crisis"),
    ("heavy casualties", "casualties", "casualty"),
])
def test_leading_modifiers_and_plurals(phrase, text, key):
    n = normalise(phrase)
    assert n.text == text
    assert key in n.keys
    # the phrase as written is tried first, so "major depression" can match its own surface form
    assert n.keys[0] == fold(clean(phrase))


def test_a_phrase_is_never_reduced_to_nothing():
    assert normalise("the").text == "the"
    assert normalise("widespread").keys == ("widespread",)


@pytest.mark.parametrize("phrase", ["", "   ", "\t\n", "!!!", "--", "\u00a0"])
def test_empty_and_punctuation_only_phrases_are_empty(phrase):
    n = normalise(phrase)
    assert n.empty and n.keys == ()


def test_ten_thousand_characters():
    phrase = "the " + "economic crisis and " * 500
    assert len(phrase) >= 10_000
    n = normalise(phrase)
    assert n.text.startswith("economic crisis and") and not n.text.startswith("the ")
    assert len(n.keys[0]) > 9_000


def test_fold_drops_accents_quotes_and_dashes():
    assert fold(clean("Coup d\u2019\u00e9tat")) == fold(clean("coup d'etat")) == "coup d etat"
    assert fold(clean("Arab\u2013Israeli conflict")) == "arab israeli conflict"


def test_surface_keys_drop_a_leading_article():
    assert surface_keys("The Troubles") == ("the troubles", "troubles")
    assert surface_keys("war") == ("war",)
    assert surface_keys("King William's War") == ("king william s war", "king williams war")


def test_a_name_without_its_apostrophe_keeps_an_exact_key():
    assert "king williams war" in normalise("the King Williams war").keys
    assert normalise("coup d'etat").keys[:2] == ("coup d etat", "coup detat")


def test_singular_forms():
    assert singular_forms("casualties")[0] == "casualty"
    assert "crisis" in singular_forms("crises")
    assert singular_forms("civil wars") == ["civil war"]
    assert singular_forms("loss") == [] and singular_forms("news") == []


def test_fold_and_the_keys_are_the_definitions_on_real_names_and_every_ascii_character():
    # fold skips the decomposition for ASCII text and folds each distinct variant once: the same
    # keys as the plain definition, on the Base KG's concept names and on edge cases.
    import json
    import re
    import string
    import unicodedata
    from pathlib import Path

    from causalkg.linking.normalize import _DETERMINER_RE, _no_apostrophes, clean, fold, strip_leading, surface_keys

    def reference_fold(text):
        no_marks = "".join(ch for ch in unicodedata.normalize("NFKD", text) if not unicodedata.combining(ch))
        return " ".join(re.sub(r"[\W_]+", " ", no_marks.lower()).split())

    def reference_keys(surface):
        cleaned = clean(surface)
        bare = strip_leading(cleaned, _DETERMINER_RE)
        keys = []
        for k in map(reference_fold, (cleaned, bare, _no_apostrophes(cleaned), _no_apostrophes(bare))):
            if k and k not in keys:
                keys.append(k)
        return tuple(keys)

    names = []
    fixture = Path(__file__).resolve().parents[1] / "fixtures" / "linking" / "base_kg_concepts.jsonl"
    for line in fixture.read_text(encoding="utf-8").splitlines():
        c = json.loads(line)
        names += [c.get("label") or "", *(c.get("aliases") or [])]
    edge = [chr(i) for i in range(128)] + [string.printable, "a_b__c", "x\x00y", "A\tB\x0bC\x1c\x1dD", "coup d'état",
                                           "Ⅻ war", "The  War", "'the' war", "ÉMEUTES", "naïve—riots"]
    assert sum(not n.isascii() for n in names) > 10  # the other path is exercised too
    for text in names + edge:
        assert fold(text) == reference_fold(text) and fold(clean(text)) == reference_fold(clean(text)), text
        assert surface_keys(text) == reference_keys(text), text
