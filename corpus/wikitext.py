"""Wikitext to the fields of a corpus document, with mwparserfromhell.

Where it sits: ``corpus/dump.py`` hands over a page's raw wikitext; ``corpus/wikipedia.py``
calls ``convert_wikitext`` on it and adds the ids, the URL and the Wikidata concept to make a
``CorpusDocument`` (``causalkg.contracts``).

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
from typing import Any, Callable

import mwparserfromhell
from mwparserfromhell.nodes import (
    Argument, Comment, ExternalLink, Heading, HTMLEntity, Tag, Template, Text, Wikilink,
)
from mwparserfromhell.wikicode import Wikicode

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


# --- small text helpers ----------------------------------------------------------------------

_LI = "\ue000"  # marks the start of a list item in rendered text (a private-use character: not whitespace, so strip() keeps it)
_FILE_NS = {"file", "image", "media"}
_CATEGORY_NS = "category"
_DROP_TAGS = {
    "ref", "references", "gallery", "math", "chem", "ce", "score", "timeline", "graph", "mapframe",
    "maplink", "templatestyles", "imagemap", "syntaxhighlight", "source", "hiero", "inputbox",
    "categorytree", "section", "noinclude", "indicator", "table", "hr", "references-small",
}
_SPACES = str.maketrans({
    "\xa0": " ", "\u2002": " ", "\u2003": " ", "\u2009": " ", "\u200a": " ", "\u202f": " ",
    "\u200b": "", "\u200e": "", "\u200f": "", "\u00ad": "", "\t": " ", "\r": "",
})
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
           "September", "October", "November", "December")

_RESIDUAL = [
    (re.compile(r"<ref[^>/]*/>", re.I), ""),
    (re.compile(r"<ref[^>]*>.*?</ref\s*>", re.I | re.S), ""),
    (re.compile(r"</?ref[^>]*>", re.I), ""),
    (re.compile(r"\{\{[^{}]*\}\}"), ""),
    (re.compile(r"\{\{|\}\}|\[\[|\]\]"), ""),
    (re.compile(r"'{2,}"), ""),
    (re.compile(r"__[A-Z]+__"), ""),
]
_TIDY = [
    (re.compile(r" {2,}"), " "),
    (re.compile(r"\(\s*[,;:.]?\s*\)"), ""),          # parentheses emptied by removed templates
    (re.compile(r"\(\s*[,;]\s*"), "("),
    (re.compile(r"\s*[,;]\s*\)"), ")"),
    (re.compile(r"([(\[]) +"), r"\1"),
    (re.compile(r" +([,.;:!?)\]])"), r"\1"),
    (re.compile(r",(\s*,)+"), ","),
    (re.compile(r" {2,}"), " "),
]
_TABLE_LINE = re.compile(r"^\s*(\{\||\|\}|\|-|\|\+)")


def _tidy(s: str) -> str:
    s = s.translate(_SPACES)
    for rx, rep in _RESIDUAL:
        s = rx.sub(rep, s)
    for rx, rep in _TIDY:
        s = rx.sub(rep, s)
    return s.strip()


def _has_words(s: str) -> bool:
    return any(ch.isalnum() for ch in s)


def _paragraphs(raw: str) -> list[str]:
    """Rendered wikitext -> paragraphs. A blank line ends a paragraph; single newlines inside
    a paragraph are soft (joined by a space); each list item is a paragraph of its own."""
    paras: list[str] = []
    cur: list[str] = []

    def flush() -> None:
        if cur:
            paras.append(" ".join(cur))
            cur.clear()

    for line in raw.split("\n"):
        if _TABLE_LINE.match(line):
            continue
        if _LI in line:
            before, *items = line.split(_LI)
            if before.strip():
                cur.append(before)
            flush()
            paras.extend(items)
            continue
        if not line.strip():
            flush()
            continue
        cur.append(line)
    flush()
    out = []
    for p in paras:
        p = _tidy(p)
        if _has_words(p):
            out.append(p)
    return out


_LIST_MARK = re.compile(r"^[*#:;]+\s*")
_OPEN_PHRASE = re.compile(r"\b(?:the|of|and|or|a|an|in|on|at|to|by|for|from|with|near)$")


def _lines(raw: str) -> list[str]:
    """Rendered wikitext -> non-empty tidy lines (for infobox values and table cells).
    A list item that opens a value (``|x= *item``) is not at a line start, so the parser
    leaves its ``*`` as text: list marks at a line start are removed here."""
    out = []
    for line in raw.replace(_LI, "\n").split("\n"):
        line = _tidy(_LIST_MARK.sub("", line.strip()))
        if _has_words(line):
            out.append(line)
    return out


def _name(node_name: Any) -> str:
    """A template's name, normalized for lookup: no comments, spaces collapsed, lower case,
    no ``Template:`` prefix."""
    s = re.sub(r"<!--.*?-->", "", str(node_name), flags=re.S)
    s = " ".join(s.replace("_", " ").split()).lower()
    return s[9:].strip() if s.startswith("template:") else s


def infobox_key(name: str) -> str:
    """WEC's normalization of an infobox name: lower case, no spaces or underscores, without
    the leading ``infobox`` (``Infobox civilian attack`` -> ``civilianattack``)."""
    s = re.sub(r"[\s_]+", "", _name(name))
    return s[7:] if s.startswith("infobox") else s


_INFOBOX_NAME_RE = re.compile(rb"\{\{\s*(?:[Tt]emplate\s*:\s*)?([Ii]nfobox[^|}<&\n]*)")


def infobox_names(source: bytes | str) -> list[str]:
    """Names of every ``{{Infobox ...}}`` in raw wikitext (or in a page's raw XML bytes), found
    with a regex, no parse: a cheap pre-filter for selecting pages by infobox. It sees at least
    the infoboxes the parser sees (and perhaps some in comments); ``convert_wikitext`` gives
    the exact first one."""
    data = source.encode("utf-8") if isinstance(source, str) else source
    return [" ".join(m.group(1).decode("utf-8", "replace").replace("_", " ").split())
            for m in _INFOBOX_NAME_RE.finditer(data)]


# --- dates -----------------------------------------------------------------------------------

_MON = (r"(?:January|February|March|April|May|June|July|August|September|October|November|December|"
        r"Jan\.?|Feb\.?|Mar\.?|Apr\.?|Jun\.?|Jul\.?|Aug\.?|Sept?\.?|Oct\.?|Nov\.?|Dec\.?)")
_YR = r"(?:[12]\d{3}|\d{1,4} (?:BC|BCE|AD|CE))"
_DY = r"(?:[0-3]?\d)"
_RG = r"\s*[–—-]\s*"
_DATE_CORE = (
    rf"{_DY}(?:{_RG}{_DY})?\s+{_MON}(?:{_RG}{_DY}\s+{_MON})?,?\s+{_YR}"  # 26 December 2004
    rf"|{_MON}\s+{_DY}(?:{_RG}(?:{_MON}\s+)?{_DY})?,?\s+{_YR}"             # December 26, 2004
    rf"|{_MON}(?:{_RG}{_MON})?\s+{_YR}"                                     # September–October 2012
    rf"|{_DY}\s+{_MON}(?![\w.])|{_MON}\s+{_DY}(?!\d)"                      # 25 May, November 6
    rf"|{_YR}(?:{_RG}(?:[12]\d{{3}}|\d{{2}}))?s?"                           # 1939, 1968–1970, 1940s
    r"|\d{1,2}:\d{2}(?::\d{2})?(?:\s?[ap]\.?m\.?)?(?:\s(?:UTC|GMT|[A-Z]{2,3}T))?"  # 1:26:03, 11:15 p.m. EST
)
DATE_RE = re.compile(rf"(?<![\w:.])(?:{_DATE_CORE})(?![\w:])")
_TIME_RE = re.compile(r"\d{1,2}:\d{2}.*")
_LEADING_DATE_RE = re.compile(
    rf"^(?:(?:On|In|By|From|Since|Until|c\.)\s+)?((?:{_DATE_CORE}))(?!\w)\s*(?:[:–—-]|,)\s*(\S.*)$", re.S
)


def read_date(text: str, *, whole: bool = False) -> str | None:
    """The first date or time expression in ``text`` (or ``text`` itself when ``whole`` and it
    is one), as written; None when there is none."""
    s = text.strip()
    if whole:
        return s if DATE_RE.fullmatch(s) else None
    first = None
    for m in DATE_RE.finditer(s):
        if not _TIME_RE.fullmatch(m.group(0)):
            return m.group(0)  # a calendar date beats a clock time met before it ("at 17:30 UTC on 21 May")
        first = first or m.group(0)
    return first


def _fmt_date(y: str, m: str | None, d: str | None, dmy: bool) -> str:
    try:
        month = _MONTHS[int(m) - 1] if m and m.strip().isdigit() and 1 <= int(m) <= 12 else (m.strip() if m else None)
    except ValueError:
        month = None
    y = y.strip()
    day = str(int(d)) if d and d.strip().isdigit() else (d.strip() if d else None)
    if month and day:
        return f"{day} {month} {y}" if dmy else f"{month} {day}, {y}"
    if month:
        return f"{month} {y}"
    return y


def _group_digits(num: str) -> str:
    n = num.strip()
    if re.fullmatch(r"\d{4,}(\.\d+)?", n):
        whole, _, frac = n.partition(".")
        return f"{int(whole):,}" + (f".{frac}" if frac else "")
    return n


# --- rendering -------------------------------------------------------------------------------


class _Renderer:
    """Renders mwparserfromhell nodes to plain text. ``infobox`` renders coordinates and makes
    ``<br>`` a line break (values are joined later); ``dmy`` is the page's date order."""

    def __init__(self, *, dmy: bool = False, infobox: bool = False) -> None:
        self.dmy = dmy
        self.infobox = infobox

    def render(self, code: Wikicode | None) -> str:
        if code is None:
            return ""
        return "".join(self.node(n) for n in code.nodes)

    def node(self, n: Any) -> str:
        if isinstance(n, Text):
            return n.value
        if isinstance(n, Wikilink):
            return self.wikilink(n)
        if isinstance(n, Template):
            return self.template(n)
        if isinstance(n, Tag):
            return self.tag(n)
        if isinstance(n, HTMLEntity):
            try:
                return n.normalize()
            except (ValueError, OverflowError):
                return ""
        if isinstance(n, ExternalLink):
            return self.render(n.title) if n.brackets and n.title is not None else ""
        if isinstance(n, Heading):
            return "\n" + _tidy(self.render(n.title)) + "\n"
        if isinstance(n, Argument):
            return self.render(n.default) if n.default is not None else ""
        if isinstance(n, Comment):
            return ""
        return ""

    def wikilink(self, n: Wikilink) -> str:
        title = str(n.title).strip()
        if title.startswith(":"):  # [[:Category:X]] is a visible link, not a categorization
            if n.text is not None:
                return self.render(n.text)
            # "see [[:Category:Wars of Spain]]" reads "see Wars of Spain": no namespace in the prose
            ns, sep, rest = title[1:].partition(":")
            return rest.strip() if sep and ns.strip().lower() in (_FILE_NS | {_CATEGORY_NS}) else title[1:]
        if ":" in title:
            prefix = title.split(":", 1)[0].strip().lower()
            if prefix in _FILE_NS or prefix == _CATEGORY_NS:
                return ""
        if n.text is not None:
            return self.render(n.text)
        return self.render(n.title)

    def tag(self, n: Tag) -> str:
        name = str(n.tag).strip().lower()
        if n.wiki_markup and name in ("li", "dt", "dd"):
            return _LI
        if name in _DROP_TAGS:
            return ""
        if name == "br":
            return "\n"
        if name in ("p", "div", "blockquote", "poem", "center"):
            return "\n" + self.render(n.contents) + "\n"
        return self.render(n.contents)

    # templates -------------------------------------------------------------------------------

    def template(self, n: Template) -> str:
        name = _name(n.name)
        if name.startswith("formatnum:"):
            return _group_digits(name[len("formatnum:"):])
        if name.startswith("#") or ":" in name:
            return ""  # parser functions and magic words (#if, DISPLAYTITLE:, DEFAULTSORT:)
        handler = _TEMPLATES.get(name) or (_first if name.startswith("lang-") else None)
        if handler is None:
            return ""  # citations, hatnotes, navboxes, pronunciations, maintenance tags, ...
        pos, named = _params(n)
        try:
            return handler(self, pos, named)
        except (IndexError, ValueError):
            return ""


def _params(n: Template) -> tuple[list[Wikicode], dict[str, Wikicode]]:
    pos, named = [], {}
    for p in n.params:
        if p.showkey:
            named[str(p.name).strip().lower()] = p.value
        else:
            pos.append(p.value)
    return pos, named


def _s(r: _Renderer, code: Wikicode | None) -> str:
    return r.render(code).strip() if code is not None else ""


def _first(r: _Renderer, pos: list, named: dict) -> str:
    return _s(r, pos[0]) if pos else ""


def _second(r: _Renderer, pos: list, named: dict) -> str:
    return _s(r, pos[1]) if len(pos) > 1 else (_s(r, pos[0]) if pos else "")


def _last(r: _Renderer, pos: list, named: dict) -> str:
    return _s(r, pos[-1]) if pos else ""


def _const(text: str) -> Callable[[_Renderer, list, dict], str]:
    return lambda r, pos, named: text


def _list(r: _Renderer, pos: list, named: dict) -> str:
    items = [_s(r, p) for p in pos]
    return "\n".join(i for i in items if i)


def _quote(r: _Renderer, pos: list, named: dict) -> str:
    for key in ("text", "quote", "quotetext"):
        if key in named:
            return "\n" + _s(r, named[key]) + "\n"
    return "\n" + _s(r, pos[0]) + "\n" if pos else ""


def _ill(r: _Renderer, pos: list, named: dict) -> str:
    if "lt" in named:
        return _s(r, named["lt"])
    return _first(r, pos, named)


def _sortname(r: _Renderer, pos: list, named: dict) -> str:
    return " ".join(_s(r, p) for p in pos[:2] if _s(r, p))


def _sort(r: _Renderer, pos: list, named: dict) -> str:
    return _s(r, pos[1]) if len(pos) > 1 else _first(r, pos, named)


def _ship(r: _Renderer, pos: list, named: dict) -> str:
    parts = [_s(r, p) for p in pos[:3]]
    if len(parts) >= 2:
        out = f"{parts[0]} {parts[1]}"
        return out + (f" ({parts[2]})" if len(parts) > 2 and parts[2] else "")
    return parts[0] if parts else ""


def _prefixed_ship(prefix: str) -> Callable[[_Renderer, list, dict], str]:
    def render(r: _Renderer, pos: list, named: dict) -> str:
        parts = [_s(r, p) for p in pos[:2]]
        if not parts:
            return prefix
        return f"{prefix} {parts[0]}" + (f" ({parts[1]})" if len(parts) > 1 and parts[1] else "")
    return render


def _money(symbol: str) -> Callable[[_Renderer, list, dict], str]:
    return lambda r, pos, named: symbol + (_s(r, pos[0]) if pos else "")


def _frac(r: _Renderer, pos: list, named: dict) -> str:
    v = [_s(r, p) for p in pos]
    if len(v) == 1:
        return f"1/{v[0]}"
    if len(v) == 2:
        return f"{v[0]}/{v[1]}"
    if len(v) >= 3:
        return f"{v[0]} {v[1]}/{v[2]}"
    return ""


def _val(r: _Renderer, pos: list, named: dict) -> str:
    num = _first(r, pos, named)
    unit = _s(r, named.get("u") or named.get("ul"))
    return f"{num} {unit}".strip()


_CONVERT_RANGE = {"-": "–", "–": "–", "to": "to", "and": "and", "or": "or", "by": "by", "x": "×", "×": "×",
                  "+/-": "±", "±": "±", "to(-)": "to", "and(-)": "and", "&": "&"}


def _convert(r: _Renderer, pos: list, named: dict) -> str:
    v = [_s(r, p) for p in pos]
    if not v:
        return ""
    if _s(r, named.get("disp")).lower().startswith("output"):
        # "{{convert|6|cm|in|disp=output number only}} inches": the converted value alone,
        # which needs the unit tables that only template expansion has: say nothing rather
        # than the input value under the wrong unit ("6 cm inches")
        return ""
    out = _group_digits(v[0])
    i = 1
    while i + 1 < len(v) and v[i] in _CONVERT_RANGE:
        sep = _CONVERT_RANGE[v[i]]
        out += (sep if sep == "–" else f" {sep} ") + _group_digits(v[i + 1])
        i += 2
    unit = v[i] if i < len(v) else ""
    return f"{out} {unit}".strip()


def _metres(r: _Renderer, pos: list, named: dict) -> str:
    """{{T&Fcalc|70.32}}: a track-and-field mark in metres (the feet conversion is left out)."""
    num = _first(r, pos, named)
    return f"{num} m" if num else ""


_INR_UNITS = {"c": "crore", "l": "lakh", "b": "billion", "m": "million", "t": "thousand"}


def _inr(r: _Renderer, pos: list, named: dict) -> str:
    """{{INRConvert|40000|c}}: rupees, with the lakh/crore word (the US$ conversion is left out)."""
    num = _first(r, pos, named)
    if not num:
        return ""
    unit = _INR_UNITS.get(_s(r, pos[1]).lower(), "") if len(pos) > 1 else ""
    return f"₹{_group_digits(num)}" + (f" {unit}" if unit else "")


def _date_tpl(r: _Renderer, pos: list, named: dict) -> str:
    v = [_s(r, p) for p in pos]
    v = [x for x in v if x]
    if not v:
        return ""
    dmy = r.dmy
    for key in ("df",):
        if key in named and _s(r, named[key]).lower() in ("y", "yes", "true", "1"):
            dmy = True
    if "mf" in named and _s(r, named["mf"]).lower() in ("y", "yes", "true", "1"):
        dmy = False
    if not v[0].lstrip("-").isdigit():
        return v[0]  # e.g. {{start date|26 December 2004}}
    return _fmt_date(v[0], v[1] if len(v) > 1 else None, v[2] if len(v) > 2 else None, dmy)


def _date_range_tpl(r: _Renderer, pos: list, named: dict) -> str:
    v = [x for x in (_s(r, p) for p in pos) if x]
    dmy = r.dmy or ("df" in named and _s(r, named["df"]).lower() in ("y", "yes"))
    if len(v) >= 6:
        return f"{_fmt_date(v[0], v[1], v[2], dmy)} – {_fmt_date(v[3], v[4], v[5], dmy)}"
    return _date_tpl(r, pos, named)


def _as_of(r: _Renderer, pos: list, named: dict) -> str:
    v = [x for x in (_s(r, p) for p in pos) if x]
    if not v:
        return ""
    lead = "as of" if _s(r, named.get("lc")).lower() in ("y", "yes") else "As of"
    return f"{lead} {_fmt_date(v[0], v[1] if len(v) > 1 else None, v[2] if len(v) > 2 else None, r.dmy)}"


def _circa(r: _Renderer, pos: list, named: dict) -> str:
    return "c. " + _first(r, pos, named) if pos else "c."


def _coord(r: _Renderer, pos: list, named: dict) -> str:
    if not r.infobox:
        return ""  # coordinates are page metadata, not prose
    v = [_s(r, p) for p in pos]
    v = [x for x in v if x and ":" not in x]
    hemis = [i for i, x in enumerate(v) if x.upper() in ("N", "S", "E", "W")]
    if len(hemis) >= 2:
        a, b = hemis[0], hemis[1]
        units = ("°", "′", "″")
        lat = "".join(x + units[k] for k, x in enumerate(v[:a])) + v[a].upper()
        lon = "".join(x + units[k] for k, x in enumerate(v[a + 1:b])) + v[b].upper()
        return f"{lat} {lon}"
    if len(v) >= 2:
        return f"{v[0]}, {v[1]}"
    return ""


def _flag(r: _Renderer, pos: list, named: dict) -> str:
    return _first(r, pos, named)


_TEMPLATES: dict[str, Callable[[_Renderer, list, dict], str]] = {}
for _n in ("nowrap", "nobr", "nobreak", "small", "smaller", "big", "larger", "center", "centre", "nowiki",
           "noitalic", "not a typo", "proper name", "em", "strong", "var", "visible anchor", "vanchor", "abbr",
           "abbrlink", "smallcaps", "sc", "tooltip", "mono", "code", "nts", "ntsh", "marriage", "nihongo",
           "nihongo2", "lang-rtl", "wikt-lang", "keypress", "highlight", "sic", "linktext", "anchored",
           "hidden", "spaced", "text"):
    _TEMPLATES[_n] = _first
for _n in ("lang", "color", "colour", "font color", "resize", "transl", "transliteration", "translit"):
    _TEMPLATES[_n] = _last if _n in ("transl", "transliteration", "translit", "resize") else _second
for _n in ("ubl", "unbulleted list", "plainlist", "plain list", "flatlist", "flat list", "hlist", "bulleted list",
           "blist", "ordered list", "unordered list", "indented plainlist", "collapsible list", "bulleted"):
    _TEMPLATES[_n] = _list
for _n in ("quote", "blockquote", "cquote", "quotation", "quote box", "rquote", "centered pull quote", "poem quote"):
    _TEMPLATES[_n] = _quote
for _n in ("ill", "interlanguage link", "interlanguage link multi", "ill-wd"):
    _TEMPLATES[_n] = _ill
for _n in ("convert", "cvt"):
    _TEMPLATES[_n] = _convert
for _n in ("start date", "end date", "start date and age", "end date and age", "birth date", "death date",
           "birth date and age", "death date and age", "dts", "date", "start-date", "end-date", "birth-date"):
    _TEMPLATES[_n] = _date_tpl
for _n in ("start and end dates", "start and end date"):
    _TEMPLATES[_n] = _date_range_tpl
for _n in ("flag", "flagcountry", "flagu", "flag country", "country flag"):
    _TEMPLATES[_n] = _flag
for _n in ("hms", "uss", "ss", "rms", "hmas", "hmcs", "hmnzs", "mv", "sms", "usns", "uscgc", "hmt", "hmhs"):
    _TEMPLATES[_n] = _prefixed_ship(_n.upper())
_TEMPLATES.update({
    "sortname": _sortname, "sort": _sort, "ship": _ship, "frac": _frac, "fraction": _frac, "val": _val,
    "as of": _as_of, "circa": _circa, "c.": _circa, "coord": _coord,
    "us$": _money("US$"), "usd": _money("US$"), "gbp": _money("£"), "eur": _money("€"), "€": _money("€"),
    "£": _money("£"), "inr": _money("₹"), "jpy": _money("¥"),
    "ndash": _const("–"), "mdash": _const("—"), "snd": _const(" – "), "spnd": _const(" – "),
    "snds": _const(" – "), "sndash": _const(" – "), "spndash": _const(" – "), "spaced ndash": _const(" – "),
    "spaced en dash": _const(" – "), "dash": _const(" – "), "spaced mdash": _const(" — "), "spmdash": _const(" — "),
    "fract": _frac, "flagathlete": _first, "t&fcalc": _metres, "24hlm": _first, "inrconvert": _inr,
    "·": _const(" · "), "dot": _const(" · "), "middot": _const(" · "), "bull": _const(" • "),
    "nbsp": _const(" "), "hsp": _const(" "), "space": _const(" "), "spaces": _const(" "), "thinsp": _const(" "),
    "!": _const("|"), "=": _const("="), "!!": _const("||"), "'": _const("'"), "okina": _const("ʻ"),
    "br": _const("\n"), "break": _const("\n"), "crlf": _const("\n"),
    "shy": _const(""), "zwsp": _const(""), "lrm": _const(""), "rlm": _const(""), "flagicon": _const(""),
})


# --- the converter ---------------------------------------------------------------------------


def _date_order(code: Wikicode) -> bool:
    """True when the page asks for day-month-year dates (``{{Use dmy dates}}``)."""
    for tpl in code.filter_templates(recursive=False):
        name = _name(tpl.name)
        if name.startswith("use dmy"):
            return True
        if name.startswith("use mdy"):
            return False
    return False


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
    code = mwparserfromhell.parse(wikitext, skip_style_tags=True)
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
                blocks = [(None, nodes)]
                for h2, l2, n2 in raw_sections[idx + 1:]:
                    if h2 is None or l2 <= level:
                        break
                    blocks.append((h2, n2))
                items = _timeline_items(_Renderer(dmy=dmy), blocks)
                if items:
                    timelines.append({"heading": heading, "items": items})

    text = "\n\n".join(parts)
    tpl = _first_infobox(code)
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
