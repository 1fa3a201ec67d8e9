"""Dates as Wikipedia writes them ("5 May 2011", "May 5, 2011", ranges, years BC), found in text
and written in one form (day-first or month-first, as the page prefers). Used by the template
renderer (``corpus.wikirender``) and the converter's timelines (``corpus.wikitext``).
"""

from __future__ import annotations

import re


# --- dates -----------------------------------------------------------------------------------

_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
           "September", "October", "November", "December")

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
