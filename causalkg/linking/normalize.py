"""Phrase normalisation for the linker: what a cause or effect phrase is reduced to before it is
matched against the surface forms (labels and aliases) of the Wikidata concepts.

Two products per phrase (``normalise``):

- ``text``: the phrase cleaned for the encoder (Unicode NFKC, one kind of quote and dash,
  whitespace collapsed, lower case, surrounding punctuation and brackets removed, leading
  determiners and quantifiers such as "the", "a series of", "widespread", "a wave of" removed).
- ``keys``: exact-match keys, tried in order until one names a surface form: the whole phrase
  folded (accents dropped, every run of non-letters/digits one space), then with the leading
  determiners and quantifiers removed, then both again with apostrophes dropped ("King Williams
  war" finds "King William's War", whose folded form is "king william s war"), then the singular
  forms of the last word ("the tsunamis" -> "tsunami", "casualties" -> "casualty", "crises" ->
  "crisis").

Surface forms are keyed with ``surface_keys`` (the folded form, the folded form without a
leading determiner, and both with apostrophes dropped), so "The Troubles" is found by "troubles" and "the troubles" alike. A phrase
is only reduced when the reduced form is not empty: "the" stays "the".

Flow: corpus (concepts.jsonl) -> linking: index (surface keys) and linker (phrase keys).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

# Leading words that never name the concept: articles, demonstratives, possessives, numbers,
# quantity and intensity words. Multi-word entries first (the regex takes the longest).
LEADING_MODIFIERS: tuple[str, ...] = (
    # quantities of events
    "a series of", "series of", "a wave of", "waves of", "wave of", "a spate of", "spate of",
    "a string of", "string of", "a rash of", "a number of", "number of", "a lot of", "lots of",
    "a couple of", "a host of", "a variety of", "a range of", "a round of", "rounds of",
    "a period of", "periods of", "an episode of", "episodes of", "a bout of", "bouts of",
    "dozens of", "hundreds of", "thousands of", "millions of", "one of the", "some of the",
    "many of the", "most of the", "all of the", "a few", "a little",
    # determiners
    "the", "a", "an", "this", "that", "these", "those", "its", "their", "his", "her", "our",
    "your", "my", "such", "any", "some", "each", "every", "all", "both", "no",
    # quantifiers and numbers
    "several", "many", "numerous", "multiple", "various", "countless", "few", "more", "most",
    "much", "further", "other", "another", "additional", "two", "three", "four", "five", "ten",
    # intensity and scale
    "widespread", "massive", "large scale", "large-scale", "small scale", "small-scale",
    "major", "minor", "severe", "serious", "significant", "heavy", "huge", "great", "big",
    "extensive", "frequent", "repeated", "recurrent", "recurring", "continued", "ongoing",
    "subsequent", "resulting", "ensuing", "consequent", "possible", "potential", "increased",
    "increasing", "growing", "rising", "sudden", "devastating", "deadly", "fatal",
)

_DETERMINERS = ("the", "a", "an")

_QUOTES = str.maketrans({
    "\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u2032": "'", "`": "'",
    "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u00ab": '"', "\u00bb": '"',
    "\u2010": "-", "\u2011": "-", "\u2012": "-", "\u2013": "-", "\u2014": "-", "\u2015": "-",
    "\u2212": "-", "\u00a0": " ",
})

_EDGE_PUNCT = " \t\r\n'\"()[]{}<>.,;:!?-*_/\\|"


def _modifier_regex(words: tuple[str, ...]) -> re.Pattern[str]:
    alts = sorted(words, key=len, reverse=True)
    body = "|".join(r"[\s\-]+".join(re.escape(w) for w in re.split(r"[\s\-]+", a)) for a in alts)
    return re.compile(rf"^(?:{body})(?:\s+|-)(?=\S)")


_LEADING_RE = _modifier_regex(LEADING_MODIFIERS)
_DETERMINER_RE = _modifier_regex(_DETERMINERS)


def clean(text: str) -> str:
    """NFKC, uniform quotes and dashes, collapsed whitespace, lower case, no surrounding punctuation."""
    text = unicodedata.normalize("NFKC", text).translate(_QUOTES)
    text = " ".join(text.split()).lower()
    return text.strip(_EDGE_PUNCT)


_NOT_WORD = re.compile(r"[\W_]+")
_ASCII_FOLD = bytes(ord(chr(c).lower()) if chr(c).isalnum() else 32 for c in range(128)) + bytes(range(128, 256))


def fold(text: str) -> str:
    """The exact-match key of an already cleaned text: accents dropped, every run of characters
    that are not letters or digits one space ("coup d'état" -> "coup d etat").

    An ASCII text has no accents to drop (NFKD leaves it as it is and it holds no combining
    mark), so it skips the decomposition and the character-by-character filter: most labels,
    aliases and phrases are ASCII, and a linker folds every surface form when it loads (249,954
    at the full WikiCausal vocabulary)."""
    if text.isascii():  # lower case; every ASCII character but a letter or digit is a separator
        return " ".join(text.encode().translate(_ASCII_FOLD).decode().split())
    decomposed = unicodedata.normalize("NFKD", text)
    no_marks = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return " ".join(_NOT_WORD.sub(" ", no_marks.lower()).split())


def _no_apostrophes(text: str) -> str:
    """A cleaned text without apostrophes (``clean`` made every kind one "'"): "william's" ->
    "williams", so a name typed without its possessive apostrophe still matches exactly."""
    return text.replace("'", "")


def strip_leading(text: str, pattern: re.Pattern[str] = _LEADING_RE) -> str:
    """Remove leading modifiers from a cleaned text, repeatedly, never down to nothing."""
    while True:
        m = pattern.match(text)
        if not m:
            return text
        rest = text[m.end():].strip(_EDGE_PUNCT)
        if not rest:
            return text
        text = rest


# Words whose final "s" is not a plural ("loss", "news", "series"). Anything else may be tried:
# a wrong singular ("crisis" -> "crisi") is never a surface form, so it never matches.
_INVARIANT_ENDINGS = ("ss", "news", "series", "species")


def singular_forms(key: str) -> list[str]:
    """Candidate singulars of a folded key's last word, most likely first (may be none).

    Over-generation is harmless: a form is only used when it is a surface form of a concept.
    """
    head, _, last = key.rpartition(" ")
    if len(last) < 3 or last.endswith(_INVARIANT_ENDINGS) or not last.isalpha():
        return []
    forms: list[str] = []
    if last.endswith("ies") and len(last) > 4:
        forms.append(last[:-3] + "y")
    if last.endswith("ses") and len(last) > 4:
        forms.append(last[:-2] + "is")  # crises -> crisis, analyses -> analysis
    if last.endswith("ves") and len(last) > 4:
        forms += [last[:-3] + "f", last[:-3] + "fe"]  # wolves, lives
    if last.endswith(("ches", "shes", "xes", "zes", "sses", "oes")):
        forms.append(last[:-2])
    if last.endswith("men") and len(last) > 4:
        forms.append(last[:-3] + "man")
    if last.endswith("s"):
        forms.append(last[:-1])
    out = []
    for f in forms:
        candidate = f"{head} {f}" if head else f
        if candidate not in out and candidate != key:
            out.append(candidate)
    return out


@dataclass(frozen=True)
class Normalised:
    """A phrase ready for linking: ``text`` for the encoder, ``keys`` for exact matching."""

    original: str
    text: str
    keys: tuple[str, ...]

    @property
    def empty(self) -> bool:
        return not self.text


def normalise(phrase: str) -> Normalised:
    """Normalise one phrase (see the module docstring). An empty or whitespace-only phrase, or
    one of punctuation only, gives ``Normalised(text="", keys=())``."""
    cleaned = clean(phrase)
    folded = {cleaned: fold(cleaned)}  # each distinct variant folded once
    if not folded[cleaned]:
        return Normalised(phrase, "", ())
    stripped = strip_leading(cleaned)
    if stripped not in folded:
        folded[stripped] = fold(stripped)
    if not folded[stripped]:
        stripped = cleaned
    keys: list[str] = []
    for v in (cleaned, stripped, _no_apostrophes(cleaned), _no_apostrophes(stripped)):
        if v not in folded:
            folded[v] = fold(v)
        k = folded[v]
        if k and k not in keys:
            keys.append(k)
    for k in list(keys)[::-1]:
        for s in singular_forms(k):
            if s not in keys:
                keys.append(s)
    return Normalised(phrase, stripped, tuple(keys))


def surface_keys(surface: str) -> tuple[str, ...]:
    """The exact-match keys of a label or alias: its folded form, then (when different) the
    folded form without a leading "the", "a" or "an", then both with apostrophes dropped."""
    cleaned = clean(surface)
    bare = strip_leading(cleaned, _DETERMINER_RE)
    keys = []
    # the four variants are often one text: each distinct one is folded once (same keys, same order)
    for v in dict.fromkeys((cleaned, bare, _no_apostrophes(cleaned), _no_apostrophes(bare))):
        k = fold(v)
        if k and k not in keys:
            keys.append(k)
    return tuple(keys)
