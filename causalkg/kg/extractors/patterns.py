"""The patterns extractor: cue constructions matched on lower-cased tokens (``kg.cues.TokenTrie``:
the matches of spaCy's rule ``Matcher``). Fast; the baseline.

The constructions are in ``kg/lexicon/patterns.tsv``: *forward* cues put the cause before
and the effect after ("X caused Y", "X led to Y", "X, triggering Y"); *backward* cues the
other way ("Y was caused by X", "Y due to X", "Y in response to X"), and a backward cue that
opens a clause reads "because of X, Y". Without a parser (``spacy.blank("en")`` has none) a
side of the cue runs to the nearest clause boundary (a comma, semicolon, colon, bracket or
dash; a cue just after a comma takes the clause before it), is cut to ``MAX_SIDE_TOKENS``
tokens next to the cue, and loses leading conjunctions and trailing auxiliaries ("was",
"has"). Every pair scores 1.0; the record's ``pattern`` says which construction matched.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any, Sequence

from causalkg.core.config import Config
from causalkg.core.errors import ConfigError
from causalkg.core.manifest import file_sha256
from causalkg.kg.cues import LEXICON_DIR, TokenTrie, longest_first, parse_cue
from causalkg.kg.extractors import Document, make_record, span_of
from causalkg.kg.sentences import make_nlp

PATTERNS = LEXICON_DIR / "patterns.tsv"
MAX_SIDE_TOKENS = 20
_BOUNDARY = {",", ";", ":", "(", ")", "[", "]", "—", "–", '"', "“", "”", "!", "?"}
_LEAD_TRIM = {"and", "but", "or", "which", "that", "who", "while", "when", "whereas", "then", "so", "thus",
              "also", "in", "turn", "has", "have", "had", "was", "were", "is", "are"}
_TAIL_TRIM = {"was", "were", "is", "are", "be", "been", "being", "has", "have", "had", "also", "largely", "partly",
              "mainly", "mostly", "directly", "ultimately", "eventually", "reportedly", "allegedly", "not", "which",
              "that", "and", "or", "primarily", "in", "part", "probably", "possibly", "may", "might", "could",
              "would", "will", "can", "did", "does", "do", "to", "of", "a", "an", "the", "by", "as", "."}
_OPENERS = {"and", "but", "so", "yet", "however", "partly", "largely", "mainly", "primarily", "probably"}


def create(arg: str, *, cfg: Config, nlp: Any = None, **_: Any) -> "PatternExtractor":
    """The registry factory: ``patterns`` or ``patterns:FILE`` (another patterns file)."""
    return PatternExtractor(path=Path(arg) if arg else PATTERNS, candidates_only=cfg["extract"]["candidates_only"], nlp=nlp)


def load_patterns(path: Path) -> list[tuple[str, tuple[tuple[str, ...], ...]]]:
    """``(kind, token alternatives)`` of each line of a patterns file."""
    out = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise ConfigError(f"patterns file not found: {path}") from None
    for n, line in enumerate(lines, 1):
        if not line.strip() or line.startswith("#"):
            continue
        kind, _, cue = line.partition("\t")
        parsed = parse_cue(cue, str(path))
        if kind not in ("forward", "backward") or parsed is None:
            raise ConfigError(f"{path}:{n}: expected 'forward|backward<TAB>cue', got {line!r}")
        out.append((kind, parsed.tokens))
    return out


class PatternExtractor:
    name = "patterns"
    model = None

    def __init__(self, *, path: Path = PATTERNS, candidates_only: bool = True, nlp: Any = None):
        self.path = path
        self.candidates_only = bool(candidates_only)
        self.nlp = nlp or make_nlp()
        self.patterns = load_patterns(path)
        # (kind, cue text) of each construction; where two lines spell the same words, the first.
        self.trie = TokenTrie(self.nlp.vocab, ((tokens, (kind, " ".join("|".join(a) for a in tokens)))
                                               for kind, tokens in self.patterns))
        self.counts: Counter[str] = Counter()

    def describe(self) -> dict[str, Any]:
        return {"extractor": self.name, "patterns": str(self.path), "patterns_sha256": file_sha256(self.path)}

    def stats(self) -> dict[str, Any]:
        return dict(self.counts)

    # -- one sentence -----------------------------------------------------------------------

    @staticmethod
    def _is_boundary(tok: Any) -> bool:
        return tok.text in _BOUNDARY

    def _trim(self, toks: list[Any], lead: bool = True) -> list[Any]:
        while toks and (self._is_boundary(toks[0]) or (lead and toks[0].lower_ in _LEAD_TRIM)):
            toks = toks[1:]
        while toks and (self._is_boundary(toks[-1]) or toks[-1].lower_ in _TAIL_TRIM or toks[-1].is_punct):
            toks = toks[:-1]
        return toks

    def _left(self, doc: Any, start: int) -> list[Any]:
        end = start
        if end > 0 and doc[end - 1].text == ",":
            end -= 1  # "X, causing Y": the cause is the clause before the comma
        begin = end
        while begin > 0 and not self._is_boundary(doc[begin - 1]):
            begin -= 1
        toks = self._trim(list(doc[max(begin, end - MAX_SIDE_TOKENS) : end]))
        if not toks and begin > 0 and doc[begin - 1].text == "," and begin < start:
            # "X, which led to Y": only a relative word before the cue; the cause is X.
            return self._left(doc, begin)
        return toks

    def _right(self, doc: Any, start: int, stop_at_comma: bool = True) -> list[Any]:
        end = start
        while end < len(doc) and not (self._is_boundary(doc[end]) and (stop_at_comma or doc[end].text != ",")):
            end += 1
        toks = list(doc[start : min(end, start + MAX_SIDE_TOKENS)])
        return self._trim(toks, lead=False)

    def _pairs(self, doc: Any) -> list[tuple[list[Any], list[Any], str, str]]:
        matches = {(s, e): found for s, e, found in self.trie.find(doc)}
        out = []
        for start, end in longest_first(matches):
            kind, cue = matches[(start, end)]
            opener = start == 0 or self._is_boundary(doc[start - 1]) or (
                start == 1 and doc[0].lower_ in _OPENERS)
            if kind == "backward" and opener:
                comma = next((i for i in range(end, len(doc)) if doc[i].text == ","), None)
                if comma is None:
                    continue
                cause = self._trim(list(doc[end : comma]), lead=False)
                effect = self._right(doc, comma + 1)
                out.append((cause, effect, "fronted", cue))
            elif kind == "backward":
                out.append((self._right(doc, end), self._left(doc, start), kind, cue))
            else:
                out.append((self._left(doc, start), self._right(doc, end), kind, cue))
        return out

    def extract(self, docs: Sequence[Document]) -> list[dict[str, Any]]:
        """Extraction records of a shard of documents."""
        jobs = []
        for doc in docs:
            for sent in doc.sentences:
                self.counts["sentences"] += 1
                if self.candidates_only and not sent.is_candidate:
                    continue
                jobs.append((doc, sent))
        self.counts["sentences_read"] += len(jobs)
        records = []
        for (doc, sent), sdoc in zip(jobs, self.nlp.tokenizer.pipe(s.text for _, s in jobs)):
            seen = set()
            for cause, effect, kind, cue in self._pairs(sdoc):
                if not cause or not effect or not any(t.is_alpha or t.is_digit for t in cause) \
                        or not any(t.is_alpha or t.is_digit for t in effect):
                    self.counts["empty_side"] += 1
                    continue
                c = span_of(doc, sent.start + cause[0].idx, sent.start + cause[-1].idx + len(cause[-1].text))
                e = span_of(doc, sent.start + effect[0].idx, sent.start + effect[-1].idx + len(effect[-1].text))
                key = (c["start"], c["end"], e["start"], e["end"])
                if key in seen:
                    continue
                seen.add(key)
                records.append(make_record(doc, sent, c, e, score=1.0, extractor=self.name, model=None,
                                           question=None, pattern=f"{kind}: {cue}"))
        self.counts["extractions"] += len(records)
        return records
