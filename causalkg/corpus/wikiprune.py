"""A fast pre-pass for the converter: cut out of a page's wikitext what its output drops anyway.

``corpus.wikitext.convert_wikitext`` renders mwparserfromhell's tree of the page, and most of the
time went into building that tree (and tokenizing, with backtracking) for constructs whose
output is empty: citation templates, navboxes, hatnotes, maintenance tags, tables, File links,
refs. ``prune`` replaces each such construct (with everything nested in it) by a tiny template
(``PLACEHOLDER``, whose name is a private-use character) that renders to nothing as they do and
keeps the parser's context around it (a list item stays a list item, a line start stays one);
a placeholder alone on its line goes entirely, and so does one at the top level between a word
and a space or line end (not after a URL, not in a heading: ``_joins``). It also writes what the renderer would write for
the simplest nodes: plain wikilinks (``[[A|b]]``, ``[[b]]``) outside templates become their text,
list marks at a line start (``*``, ``#``, ``:``) become the renderer's item mark. The parser
reads a text about half the size with a few times fewer nodes, and the fields come out the same.

What is kept: templates the renderer writes out (``wikirender._TEMPLATES``, ``lang-*``,
``formatnum:``), ``{{Use dmy dates}}``-style templates, every template that holds an infobox
(``_first_infobox`` searches nested ones too), and anything inside a template whose name holds a
template (the renderer reads such names raw). Top-level tables are numbered placeholders; the
converter parses a table back from ``Pruned.tables`` where it reads table rows (timelines).

The scan is one regular-expression token search over ``{{ }} [[ ]] {| |}``, line-start list
marks, ``<ref>``, comments and the elements whose content is literal text (nowiki, pre, math,
gallery, timeline, ... exactly mwparserfromhell's ``PARSER_BLACKLIST``), with a stack for nesting,
following the C tokenizer's rules where they matter (table marks after leading spaces, what a
template name or a link title may hold). Where it cannot be sure to see what the parser sees
(template arguments ``{{{x}}}``, runs of three brackets, a closer that does not match its opener,
an unclosed construct, a template name or link title the parser would reject, an unclosed comment
or literal element) it returns ``None`` and the caller parses the page as it is. On the 264
pages of the bundled snapshot it never does, and the output is identical on all of them (and on
284 more real pages checked while writing it); tests/corpus/test_wikiprune.py holds this on a
sample (``ConvertOptions.prune_first`` off is the reference path).
"""

from __future__ import annotations

import bisect
import functools
import re
from dataclasses import dataclass

from mwparserfromhell.definitions import PARSER_BLACKLIST
from mwparserfromhell.nodes import Template

from causalkg.corpus.wikirender import _LI, _TEMPLATES

_TOP = "\x00top"  # a placeholder cut at the top level (written as PLACEHOLDER, or dropped: see prune)
_JOINS_AFTER = frozenset(".,;)\"'")
MARK = "\ue001"  # the placeholder template's name (a private-use character; a page holding it is not pruned)
PLACEHOLDER = "{{" + MARK + "}}"
_PLACEHOLDERS = (PLACEHOLDER, _TOP)

_LITERAL_NAMES = "|".join(sorted(PARSER_BLACKLIST, key=len, reverse=True))
# Every token starts with one of { } [ ] | < (so the regex engine skips other text fast); the
# line-start condition of table marks is checked apart. "|" is a token only before "}" (a
# possible table end), and only the "|" is taken, so that "|}}" still shows its "}}".
_TOKEN = re.compile(
    r"\{\{+|\}\}+|\[\[+|\]\]+|\{\||\|(?=\})|\n[*#:;]+|<(?:!--|(?i:ref)(?=[\s>/])|(?i:" + _LITERAL_NAMES + r")(?=[\s/>]))"
)
# a <ref> element (as strip_refs_and_comments removes them from pages without literal elements)
_REF_ELEMENT = re.compile(r"<ref(?=[\s>/])[^>]*?(?:/>|>.*?</ref\s*>)", re.S | re.I)
_NOT_BEFORE = frozenset("<&:/=[{|")
_NOT_AFTER = frozenset(">;:/]}|")
_SPACE = re.compile(r"[ \n\t]")
_LIST_MARKS = re.compile(r"[*#:;]+")
_LITERAL_OPEN = re.compile(r"<(?:" + _LITERAL_NAMES + r")(?=[\s/>])|<!--", re.I)
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
_INFOBOX = re.compile(r"[Ii][Nn][Ff][Oo][Bb][Oo][Xx]")  # as _name lower-cases it


@functools.lru_cache(maxsize=4096)
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
    frozen = 0  # frames on the stack whose content is left as it is
    skip_to = 0  # the end of the comment or literal element the scan is in
    eaten = -1  # the "}" of a table end "|}", not part of the "}}" that may follow it
    n = len(wikitext)
    lm = _LIST_MARKS.match(wikitext)
    if lm is not None and ";" not in lm.group():
        cuts.append((0, lm.end(), _LI * lm.end()))
    for m in _TOKEN.finditer(wikitext):
        start = m.start()
        if start < skip_to:
            continue
        tok = m.group()
        c = tok[0]
        if c == "\n":
            # list marks at a line start: the parser makes a tag of each, which the renderer
            # writes as _LI; written as _LI here. Not a ";" line (its ":" is a mark too).
            if not frozen and ";" not in tok:
                cuts.append((start + 1, m.end(), _LI * (len(tok) - 1)))
        elif c == "{" and tok[1] == "{":
            if len(tok) != 2:
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
        elif c == "}":
            run = len(tok)
            if start == eaten:
                start += 1
                run -= 1
            if run % 2:
                if run == 1:
                    continue
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
                        _cut(cuts, s, e, PLACEHOLDER if stack else _TOP)
        elif c == "[":
            if len(tok) != 2:
                return None
            pl = _PLAIN_LINK.match(wikitext, start)
            if pl is not None and wikitext[pl.end():pl.end() + 1] != "]":
                # a link with nothing inside to follow: no frame needed
                if not stack:
                    _plain_link(pl, wikitext, cuts)
                skip_to = pl.end()
                continue
            lt = _LINK_TITLE.match(wikitext, start)
            if lt is None:
                return None  # a title the tokenizer rejects ("[[" stays text): not worth following
            stack.append(["l", start, _DROP_LINK.match(lt.group(1)) is not None, False])
        elif c == "]":
            run = len(tok)
            for k in range(run // 2):
                if not stack:
                    break  # "]]" with nothing open is text
                if stack[-1][0] != "l":
                    return None
                _, s, drop, _ = stack.pop()
                e = start + 2 * (k + 1)
                if frozen:
                    continue
                if drop and run % 2 == 0:  # "]]]": the parser may end the link one later
                    _cut(cuts, s, e, PLACEHOLDER if stack else _TOP)
                elif not drop and not stack and run == 2:
                    pl = _PLAIN_LINK.fullmatch(wikitext, s, e)
                    if pl is not None:
                        _plain_link(pl, wikitext, cuts)
        elif c == "{":  # "{|"
            if _line_start(wikitext, start):
                stack.append(["b", start, not stack, False])
        elif c == "|":  # "|" before "}"
            if stack and stack[-1][0] == "b" and _line_start(wikitext, start):
                _, s, drop, _ = stack.pop()
                eaten = start + 1
                if drop:  # top level: numbered, to be parsed back in a timeline section
                    _cut(cuts, s, start + 2, "{{%s|%d}}" % (MARK, len(tables)))
                    tables.append(wikitext[s:start + 2])
        elif tok == "<!--":
            close = wikitext.find("-->", start + 4)
            if close < 0:
                return None
            skip_to = close + 3
        elif tok[1] in "rR":  # <ref
            rm = _REF_ELEMENT.match(wikitext, start)
            if rm is None:
                continue  # left to the parser, and the scan goes on inside
            body = rm.group()
            if (_LITERAL_OPEN.search(body) or body.count("{{") != body.count("}}")
                    or body.count("[[") != body.count("]]") or "<ref" in body[4:].lower()):
                continue  # the parser may end it elsewhere
            if not frozen:
                _cut(cuts, start, rm.end(), PLACEHOLDER if stack else _TOP)
            skip_to = rm.end()
        else:  # an element whose content is text
            lo = _LIT_OPEN.match(wikitext, start)
            if lo is None:
                return None
            if lo.group(2):  # <nowiki/>
                continue
            closer = re.compile(rf"</{re.escape(lo.group(1))}\s*>", re.I).search(wikitext, lo.end())
            if closer is None:
                return None
            skip_to = closer.end()
    if stack:
        return None
    if not cuts:
        return Pruned(wikitext, ())
    out = []
    at = 0
    for s, e, rep in cuts:
        out.append(wikitext[at:s])
        if rep == PLACEHOLDER or rep == _TOP:
            line_end = e == n or wikitext[e] == "\n"
            if (s == 0 or wikitext[s - 1] == "\n") and line_end and not _in_tag(wikitext, s):
                # alone on its line: the line stays, empty (outside a tag's markup, no construct
                # of the parser depends on a line being empty or holding a template that renders
                # nothing; "</ref\n\n>" closes a tag, "</ref\n{{x}}\n>" does not)
                rep = ""
            elif rep == _TOP and at < s and (line_end or wikitext[e] == " ") and _joins(wikitext, s):
                rep = ""
            else:
                rep = PLACEHOLDER
        out.append(rep)
        at = e
    out.append(wikitext[at:n])
    return Pruned("".join(out), tuple(tables))


def _line_start(wikitext: str, at: int) -> bool:
    """True when only spaces stand between the start of the line and ``at`` (the C tokenizer's
    condition for a table mark)."""
    ls = wikitext.rfind("\n", 0, at) + 1
    return ls == at or wikitext[ls:at].isspace()


def _cut(cuts: list[tuple[int, int, str]], start: int, end: int, rep: str) -> None:
    """Record a replacement of ``[start, end)``, dropping the ones nested in it; placeholders
    that touch become one."""
    while cuts and cuts[-1][0] >= start:
        cuts.pop()
    if rep in _PLACEHOLDERS and cuts and cuts[-1][1] == start and cuts[-1][2] in _PLACEHOLDERS:
        before = cuts.pop()
        start = before[0]
        rep = _TOP if rep == _TOP and before[2] == _TOP else PLACEHOLDER
    cuts.append((start, end, rep))


def _in_tag(wikitext: str, at: int) -> bool:
    """True when a "<" before ``at`` has no ">" after it yet: ``at`` may be inside a tag's markup
    (its name or attributes), where a template is not the same as nothing."""
    lt = wikitext.rfind("<", 0, at)
    return lt >= 0 and wikitext.find(">", lt, at) < 0


def _joins(wikitext: str, at: int) -> bool:
    """True when a top-level placeholder at ``at``, followed by a space or a line end, can go:
    the word before it ends in a letter, digit or closing punctuation, is not part of a URL
    (whose trailing punctuation the parser treats differently), the line is no heading, and it is
    not inside a tag's markup."""
    p = wikitext[at - 1]
    if not (p.isalnum() or p in _JOINS_AFTER):
        return False
    ls = wikitext.rfind("\n", 0, at) + 1
    if wikitext.startswith("=", ls) or _in_tag(wikitext, at):
        return False
    ws = max(wikitext.rfind(" ", ls, at), wikitext.rfind("\t", ls, at))
    return ":" not in wikitext[max(ws + 1, ls):at]


def _plain_link(m: re.Match, wikitext: str, cuts: list[tuple[int, int, str]]) -> None:
    """A top-level ``[[title]]`` / ``[[title|text]]`` (``m``, a ``_PLAIN_LINK`` match) becomes the
    text it renders to, when neither part holds anything the parser treats specially (markup,
    entities, a namespace, list or table marks) and its neighbours cannot join it into something
    else: a free URL that would run on through it (a ``:`` in the word before or after it), an
    entity or a tag."""
    start, end = m.span()
    text = m.group(2) if m.group(2) is not None else m.group(1)
    if not text.strip() or text[0] in " -" or text[-1] == " ":
        return
    if start and wikitext[start - 1] in _NOT_BEFORE or end < len(wikitext) and wikitext[end] in _NOT_AFTER:
        return
    lo = start - 256 if start > 256 else 0
    ws = max(wikitext.rfind(" ", lo, start), wikitext.rfind("\n", lo, start), wikitext.rfind("\t", lo, start))
    if ws < 0 and lo:
        return  # the word before is longer than we look: it may be a URL
    before = wikitext[ws + 1:start]
    if ":" in before or "&" in before:
        return
    # the word after: a scheme's ":" would be close (a URL that starts right after the link)
    we = _SPACE.search(wikitext, end, end + 64)
    if ":" in wikitext[end:we.start() if we else end + 64]:
        return
    cuts.append((start, end, text))
