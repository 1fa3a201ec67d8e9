"""A fast pre-pass for the converter: cut out of a page's wikitext what its output drops anyway.

``corpus.wikitext.convert_wikitext`` renders mwparserfromhell's tree of the page, and most of the
time goes into building that tree for constructs whose output is empty: citation templates,
navboxes, hatnotes, maintenance tags, tables, File links. ``prune`` replaces each such construct
(with everything nested in it) by the tiny template ``{{_}}``, which renders to nothing as they
do and keeps the parser's context around it (a list item stays a list item, a line start stays
one), so the parser reads a much smaller text and the fields come out the same. It also writes
plain wikilinks (``[[A|b]]``, ``[[b]]``) as the text they render to, outside templates.

What is kept: templates the renderer writes out (``wikirender._TEMPLATES``, ``lang-*``,
``formatnum:``), ``{{Use dmy dates}}``-style templates, every template that holds an infobox
(``_first_infobox`` searches nested ones too), and the tables of pages with a timeline heading
(their rows are timeline items).

The scan is a regular-expression token search over ``{{ }} [[ ]] {| |}``, comments and the
elements whose content is literal text (nowiki, pre, math, gallery, timeline, ... exactly
mwparserfromhell's ``PARSER_BLACKLIST``), with a stack for nesting. Where it cannot be sure to
see what the parser sees (template arguments ``{{{x}}}``, runs of three brackets, a closer that
does not match its opener, an unclosed construct, a template name or link title the parser would
reject, an unclosed comment or literal element) it returns ``None`` and the caller parses the page
as it is. The check that this is output-neutral: tests/corpus/test_wikiprune.py converts real
pages both ways (``ConvertOptions.prune_first``).
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from mwparserfromhell.definitions import PARSER_BLACKLIST
from mwparserfromhell.nodes import Template

from causalkg.corpus.wikirender import _TEMPLATES

MARK = "\ue001"  # the placeholder template's name (a private-use character; a page holding it is not pruned)
PLACEHOLDER = "{{" + MARK + "}}"

_LITERAL_NAMES = "|".join(sorted(PARSER_BLACKLIST, key=len, reverse=True))
_TOKEN = re.compile(
    r"(?P<ts>^[^\S\n]*\{\|)"  # table start: at a line start, after spaces (as the C tokenizer)
    r"|(?P<te>^[^\S\n]*\|\})"  # table end, the same
    r"|(?P<lb>\{\{+)|(?P<rb>\}\}+)|(?P<ll>\[\[+)|(?P<rl>\]\]+)"
    r"|(?P<cm><!--)"
    rf"|(?P<lit><(?:{_LITERAL_NAMES})(?=[\s/>]))",
    re.M | re.I,
)
# a template name the tokenizer accepts: no brackets or tags, comments anywhere, no text after a
# newline; and one that starts with text and holds a template ({{formatnum:{{Inflation|...}}}})
_CMT = r"<!--(?s:.*?)-->"
_TPL_NAME = re.compile(
    rf"\{{\{{(?:\s|{_CMT})*([^\s{{}}\[\]<>|](?:[^{{}}\[\]<>|\n]|{_CMT})*?)(?:\s|{_CMT})*(?:\||\}}\}})"
)
_TPL_NESTED_NAME = re.compile(r"\{\{\s*([^\s{}\[\]<>|][^{}\[\]<>|\n]*?)\{\{")
_COMMENTS = re.compile(_CMT)
# a wikilink title the tokenizer accepts
_LINK_TITLE = re.compile(r"\[\[([^\n{}\[\]<>|]+)(?:\||\]\])")
_DROP_LINK = re.compile(r"\s*(?:file|image|media|category)\s*:", re.I)
# a plain link written as its text: [[title]] or [[title|text]] with nothing the parser or the
# renderer treats specially in either part (see _plain_link)
_PLAIN_LINK = re.compile(r"\[\[([^\n{}\[\]<>|:&=~!*#;/\\_]+)(?:\|([^\n{}\[\]<>|:&=~!*#;/\\]+))?\]\]")
_LIT_OPEN = re.compile(r"<([A-Za-z]+)(?:\s[^<>]*?)?\s*(/?)>")
_INFOBOX = re.compile(r"infobox", re.I)


def _keeps(name: str) -> bool:
    """True when the renderer writes something for a template of this (raw) name, or the
    converter reads it (the page's date order)."""
    if "<!--" in name:
        name = _COMMENTS.sub("", name)
    name = " ".join(name.replace("_", " ").split()).lower()
    if name.startswith("template:"):
        name = name[9:].strip()
    if name.startswith(("formatnum:", "use ")):
        return True
    if name.startswith("#") or ":" in name:
        return False
    return name in _TEMPLATES or name.startswith("lang-")


@dataclass(frozen=True)
class Pruned:
    """The pruned text, and the source of each top-level table it replaced: table ``k`` is the
    placeholder ``{{\ue001|k}}`` (the converter parses it back where it reads table rows)."""

    text: str
    tables: tuple[str, ...]


def is_table_placeholder(node: object) -> int | None:
    """The table number of a placeholder node of ``Pruned.text``, else None."""
    if isinstance(node, Template) and node.name == MARK and node.params:
        return int(str(node.params[0].value))
    return None


def prune(wikitext: str) -> Pruned | None:
    """``wikitext`` with the constructs whose output is empty replaced by a placeholder (see the
    module's docstring), or None when the scan is unsure (then parse ``wikitext`` itself)."""
    if MARK in wikitext:
        return None
    infobox_at = [m.start() for m in _INFOBOX.finditer(wikitext)]
    # stack frames: [kind, start, droppable, frozen]; kind "t" template, "l" link, "b" table
    stack: list[list] = []
    cuts: list[tuple[int, int, str]] = []  # (start, end, replacement), in order, not overlapping
    tables: list[str] = []
    search = _TOKEN.search
    pos = 0
    frozen = 0  # frames on the stack whose content is left as it is
    n = len(wikitext)
    while True:
        m = search(wikitext, pos)
        if m is None:
            break
        kind = m.lastgroup
        start, end = m.span()
        pos = end
        if kind == "lb":
            if end - start != 2:
                return None  # {{{argument}}} or a run of braces: left to the parser
            nm = _TPL_NAME.match(wikitext, start)
            if nm is not None:
                stack.append(["t", start, not _keeps(nm.group(1)), False])
            else:
                nm = _TPL_NESTED_NAME.match(wikitext, start)
                if nm is None:
                    return None  # a name the tokenizer may reject: then its "}}" would close another construct
                # the name holds a template: nothing in it is touched (the renderer reads the raw name)
                stack.append(["t", start, not _keeps(nm.group(1)), True])
                frozen += 1
        elif kind == "rb":
            run = end - start
            if run % 2:
                return None
            for k in range(run // 2):
                if not stack:
                    break  # "}}" with nothing open is text
                if stack[-1][0] != "t":
                    return None
                _, s, drop, frz = stack.pop()
                frozen -= frz
                e = start + 2 * (k + 1)
                if drop and not frozen:
                    i = bisect.bisect_left(infobox_at, s)
                    if i >= len(infobox_at) or infobox_at[i] >= e:  # unless it holds an infobox
                        _cut(cuts, s, e, PLACEHOLDER)
        elif kind == "ll":
            if end - start != 2:
                return None
            lt = _LINK_TITLE.match(wikitext, start)
            if lt is None:
                return None  # a title the tokenizer rejects ("[[" stays text): not worth following
            stack.append(["l", start, _DROP_LINK.match(lt.group(1)) is not None, False])
        elif kind == "rl":
            run = end - start
            closes = run // 2
            for k in range(closes):
                if not stack:
                    break  # "]]" with nothing open is text
                if stack[-1][0] != "l":
                    return None
                _, s, drop, _ = stack.pop()
                e = start + 2 * (k + 1)
                if frozen:
                    continue
                if drop and run % 2 == 0:  # "]]]": the parser may end the link one later
                    _cut(cuts, s, e, PLACEHOLDER)
                elif not drop and not stack and run == 2:
                    _plain_link(wikitext, s, e, cuts)
        elif kind == "ts":
            stack.append(["b", end - 2, not stack, False])
        elif kind == "te":
            if stack and stack[-1][0] == "b":
                _, s, drop, _ = stack.pop()
                if drop:  # top level: numbered, to be parsed back in a timeline section
                    _cut(cuts, s, end, "{{%s|%d}}" % (MARK, len(tables)))
                    tables.append(wikitext[s:end])
            else:
                pos = end - 1  # "|}" is no table end here ("|}}" closing a template): read the "}" again
        elif kind == "cm":
            close = wikitext.find("-->", end)
            if close < 0:
                return None
            pos = close + 3
        else:  # lit: an element whose content is text
            lo = _LIT_OPEN.match(wikitext, start)
            if lo is None:
                return None
            if lo.group(2):  # <nowiki/>
                pos = lo.end()
                continue
            closer = re.compile(rf"</{re.escape(lo.group(1))}\s*>", re.I).search(wikitext, lo.end())
            if closer is None:
                return None
            pos = closer.end()
    if stack:
        return None
    if not cuts:
        return Pruned(wikitext, ())
    out = []
    at = 0
    for s, e, rep in cuts:
        out.append(wikitext[at:s])
        out.append(rep)
        at = e
    out.append(wikitext[at:n])
    return Pruned("".join(out), tuple(tables))


def _cut(cuts: list[tuple[int, int, str]], start: int, end: int, rep: str) -> None:
    """Record a replacement of ``[start, end)``, dropping the ones nested in it."""
    while cuts and cuts[-1][0] >= start:
        cuts.pop()
    cuts.append((start, end, rep))


def _plain_link(wikitext: str, start: int, end: int, cuts: list[tuple[int, int, str]]) -> None:
    """A top-level ``[[title]]`` / ``[[title|text]]`` becomes the text it renders to, when neither
    part holds anything the parser treats specially (markup, entities, a namespace, list or
    table marks) and its neighbours cannot join it into something else (a free URL's ``:``/``/``)."""
    m = _PLAIN_LINK.fullmatch(wikitext, start, end)
    if m is None:
        return
    text = m.group(2) if m.group(2) is not None else m.group(1)
    if not text.strip() or text[0] in " -" or text[-1] == " ":
        return
    if start and wikitext[start - 1] in ":/" or end < len(wikitext) and wikitext[end] in ":/":
        return
    cuts.append((start, end, text))
