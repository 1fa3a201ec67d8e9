"""Wikitext to the fields of a corpus document, with mwparserfromhell.

Where it sits: ``corpus/dump.py`` hands over a page's raw wikitext; ``corpus/wikipedia.py``
calls ``convert_wikitext`` on it and adds the ids, the URL and the Wikidata concept to make a
``CorpusDocument`` (``causalkg.core.contracts``). The nodes are rendered to text by
``corpus/wikirender.py`` (with the dates of ``corpus/wikidates.py``); this module decides what is
kept and in which field.

What comes out (see ``docs/corpus-wikipedia.md`` for the field-by-field description):

- ``text``: the article as clean plain text. Paragraphs (and list items) are separated by a
  blank line; each kept section starts with its heading as a paragraph of its own. Removed:
  templates (but a small table of inline formatting templates is rendered: dates, conversions,
  ``nowrap``, ``lang``, quotations, ...), references, tables, galleries, math, comments,
  File/Image/Media and Category links, bare URLs, and the sections named in
  ``[wikipedia] drop_sections`` (References, See also, External links, Notes, ...) with their
  subsections. ``strip_code()`` alone would keep File captions, table cells and category sort
  keys; the nodes are rendered here one by one instead.
- ``sections``: ``{heading, level, start, end, path}``, one per kept section, in order,
  ``text[start:end]`` being the heading line and body. The lead has heading None and level 1.
  Spans are flat (a section ends where the next heading of any level starts), so each
  character of ``text`` belongs to exactly one section; ``path`` gives the enclosing headings.
- ``first_section``: the lead's text. ``headings``: every heading of the page with its level
  (dropped sections included, since they are part of the page's structure).
- ``categories``: ``[[Category:...]]`` names without prefix or sort key (categories added by
  templates are not visible without template expansion).
- ``infobox``: the first ``{{Infobox ...}}`` template: its name and a field -> plain-text map
  (empty fields left out; multi-line values joined with ``"; "``).
- ``timelines``: sections whose heading has a word starting with ``timeline`` or
  ``chronolog`` (``[wikipedia] timeline_words``), with their subsections, as ordered
  ``{date, text}`` items from list items, paragraphs, table rows and ``<timeline>`` charts.
  ``date`` is the leading date of an item or table row, else the subsection's heading when it
  is a date, else the first date in the paragraph, else null.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import mwparserfromhell
from mwparserfromhell.nodes import Heading, Tag, Template
from mwparserfromhell.wikicode import Wikicode

from causalkg.corpus.wikidates import read_date, _LEADING_DATE_RE
from causalkg.corpus.wikiprune import Pruned, is_table_placeholder, prune
from causalkg.corpus.wikirender import _OPEN_PHRASE, _has_words, _lines, _name, _paragraphs, _Renderer, _tidy
# Re-exported: what callers and tests use of the renderer and the dates.
from causalkg.corpus.wikidates import DATE_RE  # noqa: F401
from causalkg.corpus.wikirender import infobox_key, infobox_names  # noqa: F401

CONVERTER_VERSION = "2"  # bump when the output of convert_wikitext changes

DEFAULT_DROP_SECTIONS = (
    "References", "Notes", "See also", "External links", "Further reading", "Bibliography",
    "Sources", "Footnotes", "Citations", "Notes and references", "References and notes",
    "Works cited", "Explanatory notes", "General references", "Cited sources",
)
DEFAULT_TIMELINE_WORDS = ("timeline", "chronolog")


@dataclass(frozen=True)
class ConvertOptions:
    """How to convert: section headings to drop (case-insensitive) and the word starts that
    mark a timeline heading."""

    drop_sections: tuple[str, ...] = DEFAULT_DROP_SECTIONS
    timeline_words: tuple[str, ...] = DEFAULT_TIMELINE_WORDS
    # Remove comments and <ref> elements with a regular expression before parsing: the output
    # drops both anyway, and mwparserfromhell spends a fifth of its time building their nodes
    # (citation templates). False parses them like everything else (the reference path).
    strip_refs_first: bool = True
    # Replace what renders to nothing (most templates, tables, File links, refs) by a placeholder,
    # plain links by their text and list marks by the item mark, before parsing
    # (``corpus.wikiprune``): the same fields from a tree a few times smaller, about 6 times less
    # CPU. False parses the page as it is (the reference path).
    prune_first: bool = True




# --- the converter ---------------------------------------------------------------------------


_COMMENT = re.compile(r"<!--.*?-->", re.S)
# <ref ...>...</ref> (not <references/>, whose name goes on after "ref") and <ref .../>
_REF = re.compile(r"<ref(?=[\s>/])[^>]*?(?:/>|>.*?</ref\s*>)", re.S | re.I)
# Elements whose content is literal text: a comment or ref inside them is not one.
_LITERAL = re.compile(r"<(nowiki|pre|syntaxhighlight|source|math|code)\b", re.I)


def strip_refs_and_comments(wikitext: str) -> str:
    """``wikitext`` without comments and ``<ref>`` elements (see ``ConvertOptions.strip_refs_first``).
    A page with literal-text elements (nowiki, pre, math, ...) is returned unchanged: a comment or
    ref written inside one is text there."""
    if _LITERAL.search(wikitext):
        return wikitext
    if "<!--" in wikitext:
        wikitext = _COMMENT.sub("", wikitext)
    if "<ref" in wikitext or "<REF" in wikitext or "<Ref" in wikitext:
        wikitext = _REF.sub("", wikitext)
    return wikitext


def _date_order(code: Wikicode) -> bool:
    """True when the page asks for day-month-year dates (``{{Use dmy dates}}``)."""
    for tpl in code.filter_templates(recursive=False):
        name = _name(tpl.name)
        if name.startswith("use dmy"):
            return True
        if name.startswith("use mdy"):
            return False
    return False


_INFOBOX_ANYCASE = re.compile(r"[Ii][Nn][Ff][Oo][Bb][Oo][Xx]")


def _first_infobox(code: Wikicode) -> Template | None:
    for tpl in code.ifilter_templates(recursive=True):
        if _name(tpl.name).startswith("infobox"):
            return tpl
    return None


def _infobox(tpl: Template, dmy: bool) -> dict[str, Any]:
    r = _Renderer(dmy=dmy, infobox=True)
    name = " ".join(re.sub(r"<!--.*?-->", "", str(tpl.name), flags=re.S).replace("_", " ").split())
    if name.lower().startswith("template:"):
        name = name[9:].strip()
    fields: dict[str, str] = {}
    for p in tpl.params:
        key = " ".join(_tidy(r.render(p.name)).split())
        if not key or key in fields:
            continue
        value = ""
        for line in _lines(r.render(p.value)):
            # "Military dead:<br>Over 16,000,000" reads as one item; a line that ends with its
            # own separator ("...elsewhere;<br>European waters") needs no second one; a <br> in
            # the middle of a phrase ("the independence of the<br>United States") is a space
            value += (" " if value.endswith((":", ";", ",", ".")) or _OPEN_PHRASE.search(value)
                      else "; ") + line if value else line
        if value:
            fields[key] = value
    return {"name": name, "fields": fields}


_COMMENT_RE = re.compile(r"<!--.*?(?:-->|$)", re.S)
_NOWIKI_RE = re.compile(r"<nowiki>.*?</nowiki>", re.S | re.I)
_CATEGORY_RE = re.compile(r"\[\[\s*[Cc]ategory\s*:\s*([^|\]\n]+)")


def _categories(wikitext: str) -> list[str]:
    """``[[Category:...]]`` names in order, without sort keys, outside comments and nowiki.
    (A regex over the source: the same links the parser sees, at a fraction of the cost of
    walking the tree.)"""
    seen: dict[str, None] = {}
    source = _NOWIKI_RE.sub("", _COMMENT_RE.sub("", wikitext))
    for m in _CATEGORY_RE.finditer(source):
        name = " ".join(m.group(1).replace("_", " ").split())
        if name:
            seen.setdefault(name[:1].upper() + name[1:], None)
    return list(seen)


def _norm_heading(text: str) -> str:
    return " ".join(text.lower().rstrip(":").split())


def _table_rows(r: _Renderer, table: Tag) -> list[list[str]]:
    """A wikitable's rows as lists of cell texts; header-only rows and captions left out."""
    rows: list[list[str]] = []
    implicit: list[Tag] = []

    def cells_of(nodes: list) -> tuple[list[str], bool]:
        texts, all_header = [], True
        for c in nodes:
            if isinstance(c, Tag) and str(c.tag).strip().lower() in ("td", "th"):
                raw = r.render(c.contents)
                if str(c.tag).strip().lower() == "td" and raw.lstrip().startswith("+") and c.wiki_markup == "|":
                    continue  # "|+ caption"
                texts.append(" ".join(_lines(raw)))
                all_header &= str(c.tag).strip().lower() == "th"
        return texts, all_header

    for node in (table.contents.nodes if table.contents is not None else []):
        if isinstance(node, Tag) and str(node.tag).strip().lower() == "tr":
            texts, header = cells_of(node.contents.nodes if node.contents is not None else [])
            if texts and not header:
                rows.append(texts)
        elif isinstance(node, Tag) and str(node.tag).strip().lower() in ("td", "th"):
            implicit.append(node)
    if implicit:
        texts, header = cells_of(implicit)
        if texts and not header:
            rows.insert(0, texts)
    return rows


_EASYTIMELINE_RE = re.compile(
    r"(?:\bfrom:[ \t]*(\S+)[ \t]+till:[ \t]*(\S+)|\bat:[ \t]*(\S+))[^\n]*?\btext:[ \t]*(?:\"([^\"]*)\"|([^\n]*))"
)


def _easytimeline_items(r: _Renderer, tag: Tag) -> list[dict[str, str | None]]:
    """Bars and events of an EasyTimeline chart (``<timeline>``): ``from:/till:`` or ``at:``
    with a ``text:`` on the same line."""
    items = []
    for m in _EASYTIMELINE_RE.finditer(str(tag.contents or "")):
        date = f"{m.group(1)} – {m.group(2)}" if m.group(1) else m.group(3)
        raw = m.group(4) if m.group(4) is not None else (m.group(5) or "")
        raw = raw.replace("~", " ").replace("^", " ")
        text = " ".join(_lines(r.render(mwparserfromhell.parse(raw, skip_style_tags=True))))
        if _has_words(text):
            items.append({"date": date, "text": text})
    return items


def _item(text: str, context_date: str | None) -> dict[str, str | None]:
    m = _LEADING_DATE_RE.match(text)
    if m and _has_words(m.group(2)):
        return {"date": m.group(1).strip(), "text": m.group(2).strip()}
    return {"date": context_date or read_date(text), "text": text}


def _timeline_items(r: _Renderer, blocks: list[tuple[str | None, list]]) -> list[dict[str, str | None]]:
    """Items of a timeline: ``blocks`` are (subsection heading, nodes) of the timeline section."""
    items: list[dict[str, str | None]] = []
    for heading, nodes in blocks:
        context = read_date(heading, whole=True) if heading else None
        buf: list = []

        def flush() -> None:
            for para in _paragraphs("".join(r.node(n) for n in buf)):
                items.append(_item(para, context))
            buf.clear()

        for node in nodes:
            if isinstance(node, Tag) and str(node.tag).strip().lower() == "table":
                flush()
                for cells in _table_rows(r, node):
                    cells = [c for c in cells if c]
                    if not cells:
                        continue
                    date = read_date(cells[0], whole=True)
                    if date and len(cells) > 1:
                        items.append({"date": date, "text": " ".join(cells[1:])})
                    else:
                        items.append({"date": context, "text": " – ".join(cells)})
            elif isinstance(node, Tag) and str(node.tag).strip().lower() == "timeline":
                flush()
                items.extend(_easytimeline_items(r, node))
            else:
                buf.append(node)
        flush()
    return items


def _with_tables(nodes: list, pruned: Pruned | None) -> list:
    """A section's top-level nodes with the tables that ``prune`` replaced parsed back (the
    timeline reads their rows). A top-level table parses alone as it does in the page."""
    if pruned is None or not pruned.tables:
        return nodes
    out = []
    for node in nodes:
        k = is_table_placeholder(node)
        if k is None:
            out.append(node)
        else:
            out.extend(mwparserfromhell.parse(pruned.tables[k], skip_style_tags=True).nodes)
    return out


def convert_wikitext(wikitext: str, *, title: str = "", options: ConvertOptions | None = None) -> dict[str, Any]:
    """Convert a page's wikitext to the document fields.

    Returns a dict with ``text``, ``first_section``, ``categories``, ``infobox`` (or None),
    ``headings``, ``sections``, ``timelines``. ``title`` is only used in error messages.
    Raises whatever mwparserfromhell raises on input it cannot parse (the dump reader reports
    it for the page and goes on).
    """
    opts = options or ConvertOptions()
    # skip_style_tags: an unclosed '' would otherwise become an italic tag that swallows the
    # rest of the page, headings included (mwparserfromhell issue #40); the quote marks left
    # as text are removed by _tidy.
    if opts.strip_refs_first:
        wikitext = strip_refs_and_comments(wikitext)
    pruned = prune(wikitext) if opts.prune_first else None
    code = mwparserfromhell.parse(pruned.text if pruned else wikitext, skip_style_tags=True)
    dmy = _date_order(code)
    r = _Renderer(dmy=dmy)
    drop = {_norm_heading(s) for s in opts.drop_sections}
    words = tuple(w.lower() for w in opts.timeline_words)

    # split the top level into sections at headings
    raw_sections: list[tuple[str | None, int, list]] = [(None, 1, [])]
    for node in code.nodes:
        if isinstance(node, Heading):
            heading = " ".join(_tidy(r.render(node.title)).split())
            raw_sections.append((heading, node.level, []))
        else:
            raw_sections[-1][2].append(node)

    headings = [{"text": h, "level": lvl} for h, lvl, _ in raw_sections[1:]]

    parts: list[str] = []
    sections: list[dict[str, Any]] = []
    timelines: list[dict[str, Any]] = []
    pos = 0
    dropping_at: int | None = None
    timeline_at: int | None = None
    path: list[tuple[int, str]] = []
    first_section = ""
    for idx, (heading, level, nodes) in enumerate(raw_sections):
        if heading is not None:
            if dropping_at is not None and level > dropping_at:
                continue  # a subsection of a dropped section
            dropping_at = None
            if _norm_heading(heading) in drop:
                dropping_at = level
                continue
            while path and path[-1][0] >= level:
                path.pop()
            path.append((level, heading))
        paras = _paragraphs(r.render(Wikicode(nodes)))
        if heading is None:
            first_section = "\n\n".join(paras)
        block = ([heading] if heading else []) + paras
        if not block:
            continue
        start = pos + (2 if parts else 0)
        body = "\n\n".join(block)
        parts.append(body)
        pos = start + len(body)
        sections.append({
            "heading": heading, "level": level, "start": start, "end": pos,
            "path": [h for _, h in path],
        })
        # timelines: this section and its subsections
        if heading is not None and (timeline_at is None or level <= timeline_at):
            timeline_at = None
            hw = heading.lower().split()
            if any(w.startswith(words) for w in hw):
                timeline_at = level
                blocks = [(None, _with_tables(nodes, pruned))]
                for h2, l2, n2 in raw_sections[idx + 1:]:
                    if h2 is None or l2 <= level:
                        break
                    blocks.append((h2, _with_tables(n2, pruned)))
                items = _timeline_items(_Renderer(dmy=dmy), blocks)
                if items:
                    timelines.append({"heading": heading, "items": items})

    text = "\n\n".join(parts)
    # (no walk of the tree when no template name can hold "infobox")
    tpl = _first_infobox(code) if _INFOBOX_ANYCASE.search(pruned.text if pruned else wikitext) else None
    return {
        "text": text,
        "first_section": first_section,
        "categories": _categories(wikitext),
        "infobox": _infobox(tpl, dmy) if tpl is not None else None,
        "headings": headings,
        "sections": sections,
        "timelines": timelines,
    }


def strip_code_text(wikitext: str) -> str:
    """The plain ``mwparserfromhell.parse(text).strip_code()`` baseline (for the benchmark)."""
    return mwparserfromhell.parse(wikitext).strip_code()
