"""Wikitext -> document fields (corpus/wikitext.py) on real articles of the bundled snapshot and
the gensim table-markup excerpt; invented snippets only for edge cases, named as such."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from causalkg.corpus import dump as d
from causalkg.corpus.wikitext import (
    ConvertOptions, convert_wikitext, infobox_key, infobox_names, read_date, strip_code_text,
)

REPO = Path(__file__).resolve().parents[2]
DUMP = REPO / "snapshots" / "enwiki" / "enwiki-snapshot-pages-articles-multistream.xml.bz2"
INDEX = REPO / "snapshots" / "enwiki" / "enwiki-snapshot-pages-articles-multistream-index.txt.bz2"
TABLES = REPO / "tests" / "fixtures" / "enwiki" / "enwiki-table-markup.xml.bz2"

NAMES = ["2004 Indian Ocean earthquake", "World War II", "Chernobyl disaster", "Three Mile Island accident",
         "United States presidential election, 2012", "Charlie Hebdo shooting", "Anarchism",
         "2018 Russian presidential election", "American Revolutionary War", "2011 eruption of Grímsvötn",
         "24 Hours of Le Mans", "September 11 attacks"]


@pytest.fixture(scope="module")
def wikitext() -> dict[str, str]:
    scan = d.scan_index(INDEX, NAMES)
    out = {}
    for offset in sorted({e.offset for e in scan.found.values()}):
        data, _ = d.read_stream(DUMP, offset)
        for i, chunk in enumerate(d.cut_pages(data)[0]):
            if d.peek_header(chunk).title in scan.found:
                page = d.parse_page(chunk, (offset, i))
                out[page.title] = page.text
    assert set(out) == set(NAMES)
    return out


@pytest.fixture(scope="module")
def docs(wikitext) -> dict[str, dict]:
    return {t: convert_wikitext(w, title=t) for t, w in wikitext.items()}


def test_text_has_no_markup_left(docs):
    for title, doc in docs.items():
        for bad in ("[[", "]]", "{{", "}}", "<ref", "{|", "|}", "'''", "<!--"):
            assert bad not in doc["text"], (title, bad)
        assert "thumb|" not in doc["text"] and "Category:" not in doc["text"]


def test_earthquake_infobox_categories_and_lead(docs):
    doc = docs["2004 Indian Ocean earthquake"]
    box = doc["infobox"]
    assert box["name"] == "Infobox earthquake"
    assert box["fields"]["magnitude"] == "9.1–9.3 Mw"
    assert box["fields"]["date"] == "26 December 2004"  # {{Start date|df=yes|2004|12|26}}
    assert box["fields"]["depth"] == "30 km"  # {{convert|30|km|abbr=on}}
    assert box["fields"]["location"] == "3.316°N 95.854°E"  # {{Coord|3.316|N|95.854|E|...}}
    assert box["fields"]["countries affected"].startswith("Indonesia; Sri Lanka; India")
    assert "map" not in box["fields"]  # a template only: nothing left
    assert "2004 earthquakes" in doc["categories"] and "2004 tsunamis" in doc["categories"]
    assert doc["first_section"].startswith("The 2004 Indian Ocean earthquake occurred at 00:58:53 UTC on 26 December")
    assert doc["text"].startswith(doc["first_section"])


def test_world_war_ii_headings_and_sections(docs):
    doc = docs["World War II"]
    heads = [(h["text"], h["level"]) for h in doc["headings"]]
    for main in ["Chronology", "Background", "Pre-war events", "Course of the war", "Aftermath", "Impact"]:
        assert (main, 2) in heads
    assert ("Axis collapse, Allied victory (1944–45)", 3) in heads
    assert ("References", 2) in heads  # headings keep the page's whole structure ...
    kept = [s["heading"] for s in doc["sections"]]
    for dropped in ["See also", "Notes", "Citations", "References", "Further reading", "External links"]:
        assert dropped not in kept  # ... but those sections are not in the text
    assert doc["infobox"]["name"] == "Infobox military conflict"
    assert doc["infobox"]["fields"]["date"] == "1 September 1939 – 2 September 1945"
    # a {{plainlist}} of flag icons and links after a bold link
    assert doc["infobox"]["fields"]["commander1"] == ("Main Allied leaders; Joseph Stalin; Franklin D. Roosevelt; "
                                                      "Winston Churchill; Chiang Kai-shek")
    assert doc["infobox"]["fields"]["casualties1"].startswith("Military dead: Over 16,000,000; Civilian dead:")


def test_sections_tile_the_text(docs):
    for title, doc in docs.items():
        text, secs = doc["text"], doc["sections"]
        assert secs[0]["heading"] is None and secs[0]["level"] == 1 and secs[0]["start"] == 0
        assert secs[-1]["end"] == len(text)
        for a, b in zip(secs, secs[1:]):
            assert b["start"] == a["end"] + 2 and text[a["end"]:b["start"]] == "\n\n"
        for s in secs[1:]:
            assert text[s["start"]:s["end"]].split("\n\n")[0] == s["heading"]
            assert s["path"][-1] == s["heading"]
    aftermath = next(s for s in docs["World War II"]["sections"] if s["heading"] == "Pacific (1942–43)")
    assert aftermath["path"] == ["Course of the war", "Axis advance stalls (1942–43)", "Pacific (1942–43)"]


def test_file_captions_tables_and_category_sort_keys_are_removed_unlike_strip_code(wikitext, docs):
    caption = "The view of Chernobyl Nuclear Power Plant taken from the city of Pripyat"
    assert caption in strip_code_text(wikitext["Chernobyl disaster"])  # the naive baseline keeps it
    assert caption not in docs["Chernobyl disaster"]["text"]
    tmi_row = "The reactor vessel head (top) was removed."  # a cell of the Timeline wikitable
    assert tmi_row in strip_code_text(wikitext["Three Mile Island accident"])
    assert tmi_row not in docs["Three Mile Island accident"]["text"]


def test_timelines_from_lists_tables_and_charts(docs):
    (tl,) = docs["Chernobyl disaster"]["timelines"]
    assert tl["heading"] == "Timeline"
    assert tl["items"][0] == {"date": "1:26:03", "text": "fire alarm activated"}
    (tl,) = docs["Three Mile Island accident"]["timelines"]
    assert {"date": "Mar. 1979", "text": "TMI-2 accident occurred. Containment coolant released into environment."} \
        in tl["items"]
    assert tl["items"][0] == {"date": "1968–1970", "text": "Construction"}
    (tl,) = docs["United States presidential election, 2012"]["timelines"]
    assert tl["items"][1]["date"] == "November 6, 2012" and tl["items"][1]["text"].startswith("Election Day")
    (tl,) = docs["2018 Russian presidential election"]["timelines"]  # an EasyTimeline chart
    assert tl["items"][0] == {"date": "02/02/2016 – 01/03/2018", "text": "Grigory Yavlinsky"}
    assert docs["Anarchism"]["timelines"] == []


def test_real_title_and_page_without_infobox(docs):
    assert docs["Charlie Hebdo shooting"]["infobox"]["name"] == "Infobox civilian attack"
    assert docs["Charlie Hebdo shooting"]["infobox"]["fields"]["fatalities"] == "12"


def test_table_heavy_pages_keep_prose_only():
    chunks = [c for _, c in d.SequentialReader(TABLES)]
    for chunk in chunks:
        page = d.parse_page(chunk, (0, 0))
        doc = convert_wikitext(page.text, title=page.title)
        assert "||" not in doc["text"] and "{|" not in doc["text"] and "wikitable" not in doc["text"]
        assert doc["text"]
    estonia = convert_wikitext(d.parse_page(chunks[3], (0, 0)).text)
    assert estonia["first_section"].startswith("Estonian economy is an advanced economy")


def test_drop_sections_option():
    # invented snippet: only the option's effect is under test
    text = "Lead.\n\n== Causes ==\nBecause.\n\n== Legacy ==\nLater.\n\n=== In film ===\nFilm.\n"
    doc = convert_wikitext(text, options=ConvertOptions(drop_sections=("legacy",)))
    assert doc["text"] == "Lead.\n\nCauses\n\nBecause."
    assert [h["text"] for h in doc["headings"]] == ["Causes", "Legacy", "In film"]


def test_edge_cases():
    # invented snippets, one per rule
    doc = convert_wikitext(
        "{{Use dmy dates}}''unclosed italic\n== Next ==\nA [[:Category:Wars|list of wars]], "
        "{{convert|65000|ft|km}} high,<ref name=x/> on {{start date|2011|5|21}} ({{IPA|x}}).\n"
        "[[File:X.jpg|thumb|caption]]\n[[Category:Eruptions| ]]\n* {{lang|fr|Le texte}}\n"
    )
    assert [h["text"] for h in doc["headings"]] == ["Next"]  # the unclosed '' swallowed nothing
    assert doc["text"] == ("unclosed italic\n\nNext\n\nA list of wars, 65,000 ft high, on 21 May 2011.\n\n"
                           "Le texte")
    assert doc["categories"] == ["Eruptions"]
    assert doc["infobox"] is None


def test_infobox_helpers_and_dates():
    assert infobox_key("Infobox civilian attack") == "civilianattack"
    assert infobox_key("infobox_Nuclear weapons test") == "nuclearweaponstest"
    assert infobox_names(b"x {{Infobox military conflict\n| a = {{infobox person}}}}") == [
        "Infobox military conflict", "infobox person"]
    assert read_date("On 26 May the IMO reported") == "26 May"
    assert read_date("Mar. 1979", whole=True) == "Mar. 1979"
    assert read_date("a magnitude of 9.1", whole=False) is None
    assert re.fullmatch(r"1968–1970", read_date("built 1968–1970 at") or "")


def test_infobox_values_read_as_the_page_shows_them(docs):
    box = docs["American Revolutionary War"]["infobox"]["fields"]
    # "April 19, 1775{{snds}}September 3, 1783<ref>..</ref><br />({{Age in years...}})<br /> Ratification ..."
    assert box["date"] == "April 19, 1775 – September 3, 1783; Ratification effective: May 12, 1784"
    # "...and elsewhere;<br />European coastal waters": one separator, not ";;"
    assert ";;" not in box["place"] and "and elsewhere; European coastal waters" in box["place"]
    # "|combatant1= *{{flagdeco|..}} [[..|United Colonies]]": the first item's "*" is not text
    assert box["combatant1"].startswith("United Colonies (before 1776); United States (after 1776);")
    # "recognition of the independence of the <br />[[United States|United States of America]]"
    assert "independence of the United States of America; End of the First British Empire" in box["result"]
    assert "Stonycreek Township near Shanksville" in docs["September 11 attacks"]["infobox"]["fields"]["location"]
    for doc in docs.values():
        for value in (doc["infobox"] or {"fields": {}})["fields"].values():
            assert not value.startswith(("*", "#", ";")) and ";;" not in value, value


def test_inline_templates_render_or_leave_nothing_wrong(docs):
    lemans = docs["24 Hours of Le Mans"]["text"]
    assert "held annually since 1923 near the town of Le Mans" in lemans  # {{24hLM|1923}}
    quake = docs["2004 Indian Ocean earthquake"]["text"]
    # {{convert|6|cm|in|disp=output number only}} is a number we cannot compute: nothing, not "6 cm inches"
    assert "6 centimetres per year (inches per year)" in quake and "cm inches" not in quake


def test_timeline_dates_prefer_a_calendar_date_to_a_clock_time(docs):
    (tl,) = docs["2011 eruption of Grímsvötn"]["timelines"]
    # "...started under the glacier at around 17:30 UTC on 21 May 2011 when ..."
    assert tl["items"][0]["date"] == "21 May 2011"
    assert read_date("at 8:49 am on 7 July") == "7 July" and read_date("at 8:49 am") == "8:49 am"


def test_refs_and_comments_are_stripped_before_parsing_with_the_same_output():
    # The snapshot dump's pages (real Wikipedia wikitext, CC BY-SA 4.0), converted both ways:
    # removing <ref> elements and comments first must not change any field.
    import bz2
    import html
    import re

    from causalkg.corpus.wikitext import ConvertOptions, convert_wikitext

    from tests.conftest import REPO

    dump = REPO / "snapshots" / "enwiki" / "enwiki-snapshot-pages-articles-multistream.xml.bz2"
    data = bz2.open(dump).read().decode("utf-8")
    pages = [(html.unescape(t), html.unescape(x)) for t, x in
             re.findall(r"<page>.*?<title>(.*?)</title>.*?<text[^>]*>(.*?)</text>.*?</page>", data, re.S)]
    with_refs = [p for p in pages if "<ref" in p[1] and "<!--" in p[1]][:12]
    assert len(with_refs) == 12
    for title, text in with_refs:
        slow = convert_wikitext(text, title=title, options=ConvertOptions(strip_refs_first=False))
        assert convert_wikitext(text, title=title) == slow, title


def test_strip_refs_and_comments():
    from causalkg.corpus.wikitext import strip_refs_and_comments as strip

    text = 'A<ref name="a">{{cite web|url=x}}</ref> b<ref name=a /> c<!-- note --> d<REF>x</REF>.\n<references/>'
    assert strip(text) == "A b c d.\n<references/>"
    assert strip("x<ref>unclosed") == "x<ref>unclosed"  # left to the parser
    literal = "<nowiki><!-- shown --></nowiki> y<ref>z</ref>"
    assert strip(literal) == literal  # a comment inside nowiki is text: the page is parsed as it is
