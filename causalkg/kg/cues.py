"""The causal cue lexicon and its matcher: the first half of the candidate-sentence filter.

A sentence is a candidate for extraction when it carries a causal cue ("caused", "led to",
"due to", "in the wake of", ...) or mentions the document's concept (``kg.sentences``). Cues
come from two data files in ``kg/lexicon/``:

- ``cues_base.txt``: written by hand (``a|b`` in a position matches either word);
- ``cues_cnc.tsv``: derived from the ``<SIG0>`` signal spans of the Causal News Corpus train
  split (``scripts/build_qa_training_set.py``), kept when a signal occurs at least
  ``min_count`` times and, in the CNC subtask 1 sentences, is followed by a causal label at
  least ``min_precision`` of the time (the base rate is 0.53, so "to" and "for" stay out).

Matching is over lower-cased tokens of ``spacy.blank("en")`` (the matches of spaCy's rule
``Matcher``, found with a token trie): no statistical model is needed. Flow: corpus text ->
sentences -> cue matches -> candidates -> extractors.
"""

from __future__ import annotations

import csv
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from causalkg.core.errors import ConfigError

LEXICON_DIR = Path(__file__).with_name("lexicon")
BASE_CUES = LEXICON_DIR / "cues_base.txt"
CNC_CUES = LEXICON_DIR / "cues_cnc.tsv"


@dataclass(frozen=True)
class Cue:
    """One cue: a sequence of token alternatives (lower case), and where it came from."""

    tokens: tuple[tuple[str, ...], ...]
    source: str  # "base" | "cnc"

    @property
    def text(self) -> str:
        return " ".join("|".join(alts) for alts in self.tokens)


@dataclass(frozen=True)
class CueMatch:
    start: int  # character offsets into the text the Doc was made from
    end: int
    text: str


def parse_cue(line: str, source: str) -> Cue | None:
    """A cue from one lexicon line (``lead|leads|led to``), or None for blanks and comments."""
    line = line.strip()
    if not line or line.startswith("#"):
        return None
    tokens = tuple(tuple(a.lower() for a in part.split("|") if a) for part in line.split())
    if not tokens or any(not alts for alts in tokens):
        raise ConfigError(f"bad cue {line!r} in the {source} lexicon")
    return Cue(tokens, source)


def load_lexicon(base: str | Path | None = BASE_CUES, derived: str | Path | None = CNC_CUES,
                 *, min_count: int = 2, min_precision: float = 0.75) -> list[Cue]:
    """The cue lexicon: hand-written cues plus derived ones passing the thresholds.

    ``base``/``derived``: lexicon files (None leaves one out). A derived cue made only of
    English stop words ("to", "for", "as", "so that") is left out whatever its precision: such
    words are in nearly every sentence of an encyclopedia. Duplicates are removed.
    Raises ConfigError when a file is missing or malformed.
    """
    from spacy.lang.en.stop_words import STOP_WORDS

    cues: list[Cue] = []
    if base is not None:
        try:
            lines = Path(base).read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            raise ConfigError(f"cue lexicon not found: {base}") from None
        cues += [c for c in (parse_cue(x, "base") for x in lines) if c is not None]
    if derived is not None:
        for row in read_derived(derived):
            if int(row["count"]) >= min_count and float(row["precision"]) >= min_precision:
                cue = parse_cue(row["cue"], "cnc")
                if cue is not None and not all(set(alts) <= STOP_WORDS for alts in cue.tokens):
                    cues.append(cue)
    seen: set = set()
    out = []
    for cue in cues:
        if cue.tokens not in seen:
            seen.add(cue.tokens)
            out.append(cue)
    return out


def read_derived(path: str | Path) -> list[dict[str, str]]:
    """Rows of a derived cue file (TSV with a header: cue, count, sentences, precision)."""
    try:
        with open(path, encoding="utf-8", newline="") as fh:
            rows = [r for r in csv.DictReader((l for l in fh if not l.startswith("#")), delimiter="\t")]
    except FileNotFoundError:
        raise ConfigError(f"derived cue lexicon not found: {path}",
                          hint="run scripts/build_qa_training_set.py") from None
    for r in rows:
        if not {"cue", "count", "precision"} <= set(r):
            raise ConfigError(f"{path}: expected columns cue, count, sentences, precision")
    return rows


class TokenTrie:
    """Token sequences matched in spaCy Docs on lower-cased tokens: the matches of spaCy's rule
    ``Matcher`` with one ``LOWER`` pattern per sequence, without its cost.

    ``entries``: ``(tokens, value)``, ``tokens`` a sequence of positions, each a sequence of
    lower-case alternatives (a ``Cue``'s ``tokens``). The trie's keys are the vocabulary's hashes
    of those words; ``find`` walks it from each token. spaCy's ``Matcher`` updated a predicate
    cache for every token and pattern: it was 80% of ``Segmenter.split``'s time. Where two
    entries spell the same words, the first one's value is kept.
    """

    _END = -1  # the key that holds an entry's value (token hashes are never negative)

    def __init__(self, vocab: Any, entries: Iterable[tuple[Sequence[Sequence[str]], Any]]):
        strings = vocab.strings
        self.root: dict[int, Any] = {}
        for tokens, value in entries:
            nodes = [self.root]
            for alts in tokens:
                nodes = [node.setdefault(strings.add(a), {}) for node in nodes for a in alts]
            for node in nodes:
                node.setdefault(self._END, value)

    def find(self, doc: Any) -> list[tuple[int, int, Any]]:
        """``(start, end, value)`` token spans of every occurrence in ``doc``, overlaps included,
        by start then end."""
        from spacy.attrs import LOWER

        if len(doc) == 0:
            return []
        lowers = doc.to_array(LOWER).tolist()
        root, end_key, n = self.root, self._END, len(lowers)
        out = []
        for i, h in enumerate(lowers):
            node = root.get(h)
            j = i + 1
            while node is not None:
                if end_key in node:
                    out.append((i, j, node[end_key]))
                if j == n:
                    break
                node = node.get(lowers[j])
                j += 1
        return out


def longest_first(spans: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """Overlapping ``(start, end)`` token spans resolved as ``spacy.util.filter_spans`` does:
    the longest first, then the earliest; a span is kept when neither of its end tokens is taken.
    The kept spans by start."""
    kept: list[tuple[int, int]] = []
    taken: set[int] = set()
    for s, e in sorted(set(spans), key=lambda se: (se[1] - se[0], -se[0]), reverse=True):
        if s not in taken and e - 1 not in taken:
            kept.append((s, e))
            taken.update(range(s, e))
    return sorted(kept)


class CueMatcher:
    """Finds cue phrases in spaCy Docs (``find``): the longest non-overlapping matches, the same
    as spaCy's rule ``Matcher`` and ``filter_spans`` (``tests/kg/test_sentences.py`` compares
    them on real pages), found with a ``TokenTrie``."""

    def __init__(self, nlp: Any, cues: Sequence[Cue]):
        self.cues = list(cues)
        self.trie = TokenTrie(nlp.vocab, ((cue.tokens, i) for i, cue in enumerate(self.cues)))

    def find(self, doc: Any, offset: int = 0) -> list[CueMatch]:
        """Longest non-overlapping cue matches in ``doc``, in order; offsets shifted by ``offset``."""
        out = []
        for s, e in longest_first((s, e) for s, e, _ in self.trie.find(doc)):
            span = doc[s:e]
            out.append(CueMatch(offset + span.start_char, offset + span.end_char, span.text))
        return out


# --- derivation from the Causal News Corpus --------------------------------------------------

_SPACES = re.compile(r"\s+")


def derive_cues(records: Iterable[Mapping[str, Any]], nlp: Any) -> list[dict[str, Any]]:
    """Signal phrases of CNC gold sentences, with how often each is a signal (``count``), in how
    many sentences it occurs (``sentences``) and the causal share of those (``precision``).

    ``records``: gold sentences (``kg.qa_data``), causal and non-causal, of the train split.
    Sorted by count, then phrase.
    """
    records = [r for r in records if r.get("source") == "cnc"]
    signals: Counter[str] = Counter()
    for rec in records:
        for rel in rec.get("relations") or []:
            sig = rel.get("signal")
            if sig and sig.get("text"):
                phrase = " ".join(t.lower_ for t in nlp.make_doc(_SPACES.sub(" ", sig["text"])))
                if any(ch.isalpha() for ch in phrase):
                    signals[phrase] += 1
    token_lists = [[t.lower_ for t in nlp.make_doc(rec["text"])] for rec in records]
    rows = []
    for phrase, count in signals.items():
        toks = phrase.split()
        n = len(toks)
        seen = causal = 0
        for rec, words in zip(records, token_lists):
            if any(words[i : i + n] == toks for i in range(len(words) - n + 1)):
                seen += 1
                causal += bool(rec["causal"])
        rows.append({"cue": phrase, "count": count, "sentences": seen,
                     "precision": round(causal / seen, 4) if seen else 0.0})
    rows.sort(key=lambda r: (-r["count"], r["cue"]))
    return rows


def write_derived(path: str | Path, rows: Sequence[Mapping[str, Any]], header: str) -> None:
    """Write derived cues as TSV, ``header`` lines first as ``#`` comments (source, licence)."""
    from causalkg.core.jsonl import atomic_write

    with atomic_write(path) as fh:
        for line in header.strip().splitlines():
            fh.write(f"# {line}\n")
        fh.write("cue\tcount\tsentences\tprecision\n")
        for r in rows:
            fh.write(f"{r['cue']}\t{r['count']}\t{r['sentences']}\t{r['precision']}\n")
