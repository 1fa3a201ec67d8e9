"""Cause -> effect pairs stated by the structure of a page rather than by a sentence.

Two provenance kinds, as CauseNet keeps ``wikipedia_infobox`` and ``wikipedia_list`` sources
beside its sentences:

- ``wikipedia_infobox``: a field of the page's infobox that names causes or consequences of the
  page's event. Cause fields (``cause``, ``causes``, ``casus``, ``casus belli``, ``reason``,
  ``motive``, ``trigger``, ``origin``): each item of the value causes the page's event. Effect
  fields (``result``, ``outcome``, ``consequences``, ``effects``, ``aftermath``, ``damage``,
  ``casualties``... see ``EFFECT_FIELDS``): the page's event causes each item.
- ``wikipedia_list``: the sub-headings under a "Causes" heading (each causes the event) or under
  an "Aftermath" / "Consequences" / "Effects" / "Impact" heading (each is caused by it), and the
  short list lines directly in such a section.

A value is cut into items at ``;``, line breaks, and ``,`` / `` and `` between short items;
bracketed notes are removed. The page's event is the page title; the linker links it like any
phrase (exact and nearest matches of the vocabulary), and when the title is not in the
vocabulary the page's categories name its class ("Oil spills in the United States" -> oil
spill): their head nouns are tried, exact matches only (``event_phrases``).

Records are ``Extraction`` lines with ``source`` set and ``extractor`` equal to the source kind.
There is no sentence: ``sentence.text`` is one line of a *virtual text* per page (``Title |
field = value`` for a field, ``Title | Heading > item`` for a list item), ``sentence.start`` is
that line's offset in the virtual text and the spans' offsets are in the same text, so
``sentence.text[span.start - sentence.start: span.end - sentence.start] == span.text`` holds as
for prose. ``sentence.section`` names the infobox (``infobox:Infobox military conflict``) or the
heading. Scores: 1.0 (the page states the relation outright; whether it is an edge is then up
to the linker).
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Iterator, Mapping

CAUSE_FIELDS = ("cause", "causes", "casus", "casus belli", "casus_belli", "reason", "reasons", "motive",
                "motives", "trigger", "triggered by", "probable cause")  # not "origin": an aviation infobox's departure airport
EFFECT_FIELDS = ("result", "results", "outcome", "outcomes", "consequence", "consequences", "effect", "effects",
                 "aftermath", "damage", "damages", "impact")
CAUSE_HEADINGS = ("causes", "cause", "causes of the war", "origins", "background and causes")
EFFECT_HEADINGS = ("aftermath", "consequences", "effects", "impact", "impacts", "aftermath and consequences",
                   "legacy and consequences", "effects and aftermath")

SOURCES = ("wikipedia_infobox", "wikipedia_list")

_BRACKETS = re.compile(r"\([^()]*\)|\[[^\[\]]*\]")
_SPLIT = re.compile(r"\s*(?:;|\n|\u2022)\s*")
_YEARS = re.compile(r"^(?:\d{3,4}s?|\d{1,2}(?:st|nd|rd|th)-century|\d{1,2}(?:st|nd|rd|th) century)\s+", re.I)
_CATEGORY_CUT = re.compile(r"\s+(?:in|of|by|at|on|during|from|involving|between|against)\s+.*$")


def _norm_key(name: str) -> str:
    return " ".join(name.replace("_", " ").lower().split())


def split_items(value: str, *, max_words: int = 20) -> list[tuple[int, int]]:
    """(start, end) offsets of the items of an infobox value or a list line: cut at ``;`` and
    line breaks, then at ``,`` / `` and `` when every piece is short; bracketed notes dropped;
    items longer than ``max_words`` words or without a letter are skipped."""
    clean = _BRACKETS.sub(lambda m: " " * len(m.group(0)), value)
    out: list[tuple[int, int]] = []
    pos = 0
    for m in list(_SPLIT.finditer(clean)) + [None]:
        end = m.start() if m is not None else len(clean)
        piece_start = pos
        pieces = [(piece_start, end)]
        chunk = clean[piece_start:end]
        parts = re.split(r",\s*(?:and\s+)?|\s+and\s+", chunk) if "," in chunk else [chunk]
        if len(parts) > 1 and all(0 < len(p.split()) <= 4 for p in parts):
            pieces, cur = [], piece_start
            for p in parts:
                i = clean.index(p, cur)
                pieces.append((i, i + len(p)))
                cur = i + len(p)
        for s, e in pieces:
            while s < e and (clean[s].isspace() or clean[s] in ",.:-\u2013\"'"):
                s += 1
            while e > s and (clean[e - 1].isspace() or clean[e - 1] in ",.:-\u2013\"'"):
                e -= 1
            text = clean[s:e]
            if not re.search(r"[A-Za-z]", text) or len(text.split()) > max_words:
                continue
            if text.lower().startswith(("and others", "others", "see ", "various")):
                continue
            out.append((s, e))
        pos = m.end() if m is not None else len(clean)
    return out


def category_heads(categories: Iterable[str]) -> list[str]:
    """Class phrases named by a page's categories: "Oil spills in the United States" -> "oil
    spills", "20th-century revolutions" -> "revolutions" (the linker singularises)."""
    out: list[str] = []
    for cat in categories:
        head = _CATEGORY_CUT.sub("", cat.strip())
        head = _YEARS.sub("", head).strip()
        if not head or head[0].isupper() and " " not in head and not head.endswith("s"):
            continue
        low = head.lower()
        if low not in out and 1 <= len(low.split()) <= 4:
            out.append(low)
    return out


def _last_stem(phrase: str) -> str:
    w = (phrase.lower().split() or [""])[-1]
    for suf, rep in (("ies", "y"), ("ses", "s"), ("s", "")):
        if w.endswith(suf) and len(w) > len(suf) + 2:
            return w[: -len(suf)] + rep
    return w


def event_phrases(record: Mapping[str, Any]) -> list[str]:
    """What names the page's event, best first: its title, then the head nouns of its
    categories that end in the title's own head noun ("Chernobyl disaster": "industrial
    disasters", "disasters"; "Red Butte Creek oil spill": "oil spills"), longest first."""
    title = str(record.get("title") or "").strip()
    if not title:
        return []
    head = _last_stem(title)
    cats = [c for c in category_heads(record.get("categories") or [])
            if c != title.lower() and _last_stem(c) == head]
    return [title] + sorted(cats, key=lambda c: (-len(c.split()), cats.index(c)))


def _pair(record: Mapping[str, Any], title: str, line: str, line_start: int, item: tuple[int, int], item_text: str,
          section: str, source: str, field: str, event_is_cause: bool) -> dict[str, Any]:
    title_span = {"text": title, "start": line_start, "end": line_start + len(title)}
    item_span = {"text": item_text, "start": line_start + item[0], "end": line_start + item[1]}
    cause, effect = (title_span, item_span) if event_is_cause else (item_span, title_span)
    rev = record.get("revision_id")
    dc = record.get("document_concept")
    return {
        "doc_id": str(record.get("id")),
        "title": title,
        "url": record.get("url"),
        "revision_id": int(rev) if rev is not None else None,
        # the page's concept, as a sentence's extraction carries it (kg.extract.prepare): the
        # mention's provenance then comes from the record alone, not from which documents the
        # linking run happened to load
        "document_concept": {"id": dc.get("id"), "label": dc.get("label")} if isinstance(dc, dict) else None,
        "event_end": "cause" if event_is_cause else "effect",
        "sentence": {"text": line, "start": line_start, "end": line_start + len(line), "section": section},
        "cause": cause,
        "effect": effect,
        "direction": None,
        "score": 1.0,
        "extractor": source,
        "model": field,
        "question": None,
        "source": source,
    }


def structured_pairs(record: Mapping[str, Any], *, lists: bool = True, infobox: bool = True) -> Iterator[dict[str, Any]]:
    """The structured pairs of one corpus record (a dict of ``CorpusDocument`` fields), as
    ``Extraction`` dicts (without ``schema_version``), in page order: infobox fields, then
    list items. The cause or effect that is the page's event is the page title."""
    title = str(record.get("title") or "").strip()
    if not title:
        return
    offset = 0
    box = record.get("infobox") or None
    if infobox and box:
        name = box.get("name") or "infobox"
        for field, value in (box.get("fields") or {}).items():
            key = _norm_key(field)
            kind = "cause" if key in CAUSE_FIELDS else "effect" if key in EFFECT_FIELDS else None
            if kind is None or not str(value).strip():
                continue
            prefix = f"{title} | {field} = "
            line = prefix + str(value)
            for s, e in split_items(str(value)):
                yield _pair(record, title, line, offset, (len(prefix) + s, len(prefix) + e), str(value)[s:e],
                            f"infobox:{name}", "wikipedia_infobox", field, event_is_cause=kind == "effect")
            offset += len(line) + 1
    if not lists:
        return
    text = str(record.get("text") or "")
    sections = list(record.get("sections") or [])
    for i, sec in enumerate(sections):
        heading = _norm_key(str(sec.get("heading") or ""))
        kind = "cause" if heading in CAUSE_HEADINGS else "effect" if heading in EFFECT_HEADINGS else None
        if kind is None:
            continue
        items: list[str] = []
        for sub in sections[i + 1:]:
            if int(sub.get("level", 0)) <= int(sec.get("level", 0)):
                break
            if int(sub.get("level", 0)) == int(sec.get("level", 0)) + 1 and sub.get("heading"):
                items.append(str(sub["heading"]))
        body = text[int(sec.get("start", 0)):int(sec.get("end", 0))]
        for ln in body.split("\n")[1:]:
            ln = ln.strip()
            # a list line: short, no full stop at its end (prose paragraphs are left to the extractors)
            if ln and len(ln.split()) <= 8 and not ln.endswith((".", ":", "?", "!")):
                items.append(ln)
        for item in items:
            prefix = f"{title} | {sec.get('heading')} > "
            line = prefix + item
            for s, e in split_items(item, max_words=8):
                yield _pair(record, title, line, offset, (len(prefix) + s, len(prefix) + e), item[s:e],
                            str(sec.get("heading")), "wikipedia_list", str(sec.get("heading")),
                            event_is_cause=kind == "effect")
            offset += len(line) + 1
