"""Rendering wikitext nodes to plain text: the small text helpers (paragraphs, list items, tidying),
infobox names, and ``_Renderer`` with its table of inline formatting templates (dates,
conversions, ``nowrap``, ``lang``, quotations, ship names, money, coordinates, flags, ...).

Used by the converter, ``corpus.wikitext.convert_wikitext``, which decides what is kept.
"""

from __future__ import annotations

import re
from typing import Any, Callable

from mwparserfromhell.nodes import (
    Argument, Comment, ExternalLink, Heading, HTMLEntity, Tag, Template, Text, Wikilink,
)
from mwparserfromhell.wikicode import Wikicode

from causalkg.corpus.wikidates import _fmt_date, _group_digits


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
_ODD_SPACE = re.compile("[" + "".join(chr(c) for c in _SPACES) + "]")  # translate() is slow on non-ASCII text

_REF_SELF = re.compile(r"<ref[^>/]*/>", re.I)
_REF_ELEMENT = re.compile(r"<ref[^>]*>.*?</ref\s*>", re.I | re.S)
_REF_TAG = re.compile(r"</?ref[^>]*>", re.I)
_INNER_TEMPLATE = re.compile(r"\{\{[^{}]*\}\}")
_BRACKETS = re.compile(r"\{\{|\}\}|\[\[|\]\]")
_QUOTES = re.compile(r"'{2,}")
_MAGIC = re.compile(r"__[A-Z]+__")
_SPACE_RUN = re.compile(r" {2,}")
_EMPTY_PARENS = re.compile(r"\(\s*[,;:.]?\s*\)")  # parentheses emptied by removed templates
_PAREN_OPEN_SEP = re.compile(r"\(\s*[,;]\s*")
_PAREN_CLOSE_SEP = re.compile(r"\s*[,;]\s*\)")
_OPEN_SPACE = re.compile(r"([(\[]) +")
_SPACE_PUNCT = re.compile(r" +([,.;:!?)\]])")
_COMMA_RUN = re.compile(r",(\s*,)+")


_TABLE_LINE = re.compile(r"^\s*(\{\||\|\}|\|-|\|\+)")


def _tidy(s: str) -> str:
    """Plain-text clean-up of rendered wikitext: odd spaces, residual markup (refs, templates and
    brackets the parser left as text, quote marks, magic words), then spacing around
    punctuation. Each substitution runs only when the text holds what a match needs."""
    if _ODD_SPACE.search(s):
        s = s.translate(_SPACES)
    if "<" in s:
        s = _REF_SELF.sub("", s)
        s = _REF_ELEMENT.sub("", s)
        s = _REF_TAG.sub("", s)
    if "{{" in s:
        s = _INNER_TEMPLATE.sub("", s)
    if "{{" in s or "}}" in s or "[[" in s or "]]" in s:
        s = _BRACKETS.sub("", s)
    if "''" in s:
        s = _QUOTES.sub("", s)
    if "__" in s:
        s = _MAGIC.sub("", s)
    if "  " in s:
        s = _SPACE_RUN.sub(" ", s)
    if "(" in s:
        s = _EMPTY_PARENS.sub("", s)
        if "(" in s:
            s = _PAREN_OPEN_SEP.sub("(", s)
    if ")" in s:
        s = _PAREN_CLOSE_SEP.sub(")", s)
    if "( " in s or "[ " in s:
        s = _OPEN_SPACE.sub(r"\1", s)
    s = _SPACE_PUNCT.sub(r"\1", s)
    if "," in s:
        s = _COMMA_RUN.sub(",", s)
    if "  " in s:
        s = _SPACE_RUN.sub(" ", s)
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
