"""The converter's pre-pass (corpus/wikiprune.py): pruned or not, every field of convert_wikitext
is the same. Real pages of the bundled snapshot (Wikipedia, CC BY-SA 4.0) and the gensim
table-markup excerpt are converted both ways; invented snippets, named as such, pin down what is
cut, what is kept and when the scan gives up."""

from __future__ import annotations

from pathlib import Path

import pytest

from causalkg.corpus import dump as d
from causalkg.corpus.wikiprune import MARK, PLACEHOLDER, prune
from causalkg.corpus.wikitext import ConvertOptions, convert_wikitext, strip_refs_and_comments

REPO = Path(__file__).resolve().parents[2]
DUMP = REPO / "snapshots" / "enwiki" / "enwiki-snapshot-pages-articles-multistream.xml.bz2"
TABLES = REPO / "tests" / "fixtures" / "enwiki" / "enwiki-table-markup.xml.bz2"
FULL = ConvertOptions(prune_first=False)

# Pages that exercise each path: timelines read from tables that prune replaced (Andre Agassi,
# Three Mile Island accident), {{formatnum:{{Inflation|...}}}} (Abraham Lincoln, Asia), literal
# elements and comments left in place (math, nowiki, gallery, <timeline>), and large event articles.
SAMPLE = ["Andre Agassi", "Three Mile Island accident", "Abraham Lincoln", "Asia",
          "Albedo", "ASCII", "Analysis of variance", "Apollo 11", "Iranian Revolution", "2000 Summer Olympics",
          "Chernobyl disaster", "Anarchism", "World War II", "September 11 attacks", "Charlie Hebdo shooting"]


def _pages(path: Path) -> dict[str, str]:
    out = {}
    for seq, chunk in d.SequentialReader(path):
        page = d.parse_page(chunk, seq)
        if page.ns == 0 and page.redirect is None and page.text:
            out[page.title] = page.text
    return out


@pytest.fixture(scope="module")
def snapshot() -> dict[str, str]:
    return _pages(DUMP)


def same(text: str, title: str = "invented") -> dict:
    fast = convert_wikitext(text, title=title)
    assert fast == convert_wikitext(text, title=title, options=FULL), title
    return fast


def test_real_pages_convert_the_same_pruned_or_not(snapshot):
    assert set(SAMPLE) <= set(snapshot)
    for title in SAMPLE:
        same(snapshot[title], title)
    # the timeline rows that come from tables put back after pruning
    assert len(same(snapshot["Three Mile Island accident"])["timelines"][0]["items"]) > 10


def test_table_markup_excerpt_converts_the_same():
    pages = _pages(TABLES)
    assert pages
    for title, text in pages.items():
        same(text, title)


def test_every_snapshot_article_takes_the_fast_path(snapshot):
    # the scan gives up only where it cannot follow the parser; on the real pages it never does,
    # and the text the parser reads is much smaller
    before = after = 0
    for title, text in snapshot.items():
        text = strip_refs_and_comments(text)
        pruned = prune(text)
        assert pruned is not None, title
        before += len(text)
        after += len(pruned.text)
    assert after < 0.8 * before


def test_what_is_cut_and_what_is_kept():
    # invented snippets
    p = prune("A{{cite web|url=x|title={{lang|fr|y}}}}, b {{Citation needed|date=May 2020}}.")
    assert p.text == f"A{PLACEHOLDER}, b {PLACEHOLDER}." and p.tables == ()
    kept = ("{{convert|5|km}} {{lang-fr|Paris}} {{formatnum:1234}} {{Use dmy dates|date=x}} {{nowrap|a b}} "
            "{{Template:Start date|2001|9|11}}")
    assert prune(kept).text == kept
    # a template that holds an infobox stays (the converter finds nested infoboxes), its citations go
    p = prune("{{Campaignbox|x={{Infobox military conflict|conflict=X|date={{cite web|u}}}}}}")
    assert p.text == f"{{{{Campaignbox|x={{{{Infobox military conflict|conflict=X|date={PLACEHOLDER}}}}}}}}}"
    # a name holding a template is read raw by the renderer: nothing in it is touched
    assert prune("{{formatnum:{{Inflation|US|800|1861}}}}").text == "{{formatnum:{{Inflation|US|800|1861}}}}"
    # File and Category links go, a visible [[:Category:...]] link stays
    p = prune("x [[File:A.jpg|thumb|A [[b]] c]] [[Category:Wars]] see [[:Category:Wars|wars]]")
    assert p.text == f"x {PLACEHOLDER} {PLACEHOLDER} see [[:Category:Wars|wars]]"
    # a top-level table is numbered and kept aside; a table inside a template stays where it is
    src = "a\n{| class=wikitable\n| 1 || {{cite|x}}\n|}\nb {{navbox|list=\n{|\n|c\n|}}}\n  {|\n|d\n |}\n"
    p = prune(src)
    assert p.text == f"a\n{{{{{MARK}|0}}}}\nb {PLACEHOLDER}\n  {{{{{MARK}|1}}}}\n"
    assert p.tables == ("{| class=wikitable\n| 1 || {{cite|x}}\n|}", "{|\n|d\n |}")
    # "|}}" at a line start inside a template is a parameter and the template's end, not a table end
    assert prune("x {{Navbox\n|list1=x\n|}}\nafter").text == f"x {PLACEHOLDER}\nafter"
    # a top-level placeholder between a word and a space or line end goes; not after a URL (whose
    # trailing punctuation the parser reads differently), not in a heading, not inside a template
    src = ("A sentence.{{sfn|x}} Next{{cn}}\nsee http://x.com.{{cite|y}} z\n== H{{anchor|h}} ==\n"
           "{{lang|fr|a{{cite|q}} b}}\n")
    assert prune(src).text == (f"A sentence. Next\nsee http://x.com.{PLACEHOLDER} z\n== H{PLACEHOLDER} ==\n"
                               f"{{{{lang|fr|a{PLACEHOLDER} b}}}}\n")
    same(src)
    # ... nor inside a tag's markup, where a template is not the same as nothing: "</ref\n\n>"
    # closes the ref, "</ref\n{{Main|x}}\n>" does not (found by mutating a real page)
    assert prune("<span{{cn}} class=x>a</span> b.{{cn}} c").text == f"<span{PLACEHOLDER} class=x>a</span> b. c"
    assert PLACEHOLDER in prune("<math>x</math>a<ref name=b>c</ref\n{{Main|x}}\n> d").text
    same("<math>x</math>a.<ref name=b>http://c.org/d.pdf</ref\n{{Main|x}}\n>\n\ne [[f]]")
    # a placeholder alone on its line goes, the line stays
    assert prune("a\n{{Main|B}}\n{{See also|C}}\nb\n{{Navbox|x}}").text == "a\n\n\nb\n"


def test_list_marks_become_the_renderers_item_mark():
    # invented snippets: each mark at a line start is a tag the renderer writes as _LI
    from causalkg.corpus.wikirender import _LI

    p = prune("* a\n** b\n#: c\n; d : e\nf * g")
    assert p.text == f"{_LI} a\n{_LI * 2} b\n{_LI * 2} c\n; d : e\nf * g"  # a ";" line is left to the parser
    same("* a\n** b\n#: c\n; d : e\nf * g\n{{Infobox x|list=\n* one\n* two}}\n<nowiki>\n* h</nowiki>")


def test_plain_links_become_their_text():
    # invented snippets
    assert prune("the [[Battle of X|battle]] of [[Y]] in [[Z]]s").text == "the battle of Y in Zs"
    # not inside templates, not with markup, namespaces, entities or a URL's ":" or "/" beside them
    for src in ("{{lang|fr|[[Paris]]}}", "[[A|<b>x</b>]]", "[[w:X|x]]", "[[A|b &amp; c]]", "mailto:[[x]]",
                "[[a]]:b", "[[A|= b]]", "[[A|*b]]", "&[[amp]];", "<[[br]]>", "x [[a]]b://y"):
        assert "[[" in prune(src).text, src
        same(src)
    # a free URL runs on through "|" and "=" up to the "[[": as text, the link would join it
    # (a fragment of a citation whose "{{" is elsewhere, as a broken page can have)
    src = "painful |url=http://www.usatoday.com/a.htm|agency=[[Associated Press]]|work=USA Today"
    assert prune(src).text == src
    same(src)
    assert prune("[[A|b's ''c'']]").text == "b's ''c''"  # quotes are text (skip_style_tags)


def test_the_scan_gives_up_where_it_cannot_follow_the_parser():
    # invented snippets: each is parsed as it is (and converts the same either way)
    unsure = [
        "{{{1|default}}}",  # template argument
        "{{a|b]]}}",  # a closer that does not match its opener
        "{{a|b",  # unclosed
        "[[[a]]]",  # three brackets
        "{{a\nb|c}}",  # text after a newline in a template name: the tokenizer rejects it
        "[[a\nb]]",  # a link title the tokenizer rejects
        "x <nowiki>{{a}}",  # unclosed literal element
        "x <!-- {{a}}",  # unclosed comment
        f"x {{{{{MARK}}}}}",  # the placeholder's own name on the page
        "{{a|}}}",  # an odd run of braces
    ]
    for src in unsure:
        assert prune(src) is None, src
        same(src)


def test_literal_elements_and_comments_are_skipped():
    # invented snippets: braces inside these are text for the parser, and so for the scan
    src = "<math>\\frac{a}}{b}</math> {{cite|x}} <nowiki>{{</nowiki> <!-- }} --> <pre>]]</pre> <nowiki/>{{sfn|y}}"
    p = prune(src)
    assert p.text == src.replace("{{cite|x}}", PLACEHOLDER).replace("{{sfn|y}}", PLACEHOLDER)
    assert prune("<timeline>\nbar:x text:[[a|b]]\n</timeline>").text == "<timeline>\nbar:x text:[[a|b]]\n</timeline>"
    # on such pages refs are still in the text: each goes as a whole, unless its end is in doubt
    p = prune("<math>x</math> a<ref name=x>{{cite|y}} [[b]]</ref> b<ref name=x/> c<ref>{{cite|t=a</ref>b}}</ref>")
    assert p.text == f"<math>x</math> a b c<ref>{PLACEHOLDER}</ref>"  # (the first two at a word's end go)
    same("<math>x</math> a<ref name=x>{{cite|y}}</ref> b<ref name=x/> c<ref>{{cite|t=a</ref>b}}</ref> d")
    # a comment inside a template name (kept on pages with literal elements) is part of the name
    assert prune("x {{multiple image\n<!-- layout -->\n| align = right}}").text == f"x {PLACEHOLDER}"


def test_invented_edge_cases_convert_the_same():
    # invented snippets around the cuts: list items, headings, timelines and infoboxes
    for src in [
        "{{Use dmy dates}}\n{{Infobox event|date={{start date|2001|9|11}}{{cite web|u}}|place=[[New York City|NYC]]}}\n"
        "Lead [[A|a]] {{sfn|x}} text.\n\n== Timeline ==\n{| class=wikitable\n! Date !! Event\n|-\n"
        "| 1 May 2001 || [[B]] began {{cite|y}}\n|}\n* 2 May 2001: [[C|c]] {{efn|z}} ended\n"
        "== See also ==\n* [[D]]\n{{Reflist}}\n[[Category:Events]]",
        "{{cite|x}}* not a list item\n{{hatnote|y}}\n* a list item [[File:x.png|thumb]]\n== H {{anchor|h}} ==\nbody",
        "a [[A|b]]]] c }} d ]] {{x}}}",
        "{| class=wikitable\n|-\n| a\n|}}\n",
        "a\n{{Navbox\n|list1=\n{|\n|x\n|}}}\nb",
    ]:
        same(src)


def test_mutated_real_fragments_convert_the_same(snapshot):
    # Broken markup, as a full dump has plenty of: fragments of real pages with brackets, marks
    # and constructs deleted or inserted at random (fixed seed). Pruned or not, the same fields
    # (the scan gives up where it cannot follow). Mutations like these found the URL and tag
    # cases above.
    import random

    rnd = random.Random(14)
    pieces = ["{{", "}}", "[[", "]]", "\n{|", "\n|}", "<!--", "-->", "<ref>", "</ref>", "{{cite|x}}", "\n* ",
              "\n== H ==\n", " http://x.com/a|b=", "&amp", "<br>", ".{{cn}} ", "\n{{Main|x}}\n", "[[a|b]]",
              "\n;a:b\n", "[http://y.org/ t]", "<math>", "</math>"]
    texts = [snapshot[t] for t in SAMPLE[:8]]
    for _ in range(60):
        text = rnd.choice(texts)
        at = rnd.randrange(len(text) - 3000)
        chars = list(text[at:at + rnd.randrange(500, 2500)])
        for _ in range(rnd.randrange(1, 6)):
            pos = rnd.randrange(len(chars))
            if rnd.random() < 0.4:
                del chars[pos]
            else:
                chars.insert(pos, rnd.choice("{}[]|<>=\n*:;'") if rnd.random() < 0.5 else rnd.choice(pieces))
        same("".join(chars))
