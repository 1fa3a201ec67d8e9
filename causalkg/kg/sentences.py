"""Sentences of a document and the candidate filter: which sentences the extractors read.

``Segmenter.split`` cuts a document text into sentences with spaCy (``spacy.blank("en")`` and
the rule-based ``sentencizer``: no downloaded model), keeping character offsets into the text
and the section each sentence is in (from the corpus record's ``sections`` spans). Text is cut
into paragraphs at line breaks first (a sentence never crosses one) and any paragraph longer
than ``max_chunk_chars`` is cut at a space, so texts over spaCy's 1,000,000-character limit are
fine; a "sentence" longer than ``max_sentence_chars`` (a list, a table row) is cut at spaces too.

A sentence is a *candidate* when the learned gate (``kg.gate``, the default) scores it as
causal; with ``extract.gate.kind = "cues"``, when it carries a causal cue (``kg.cues``) or mentions
the document concept (its label or aliases). Mentions of the page's other event concepts are found
too: the QA extractor asks about them (anchored questions). Flow: corpus document -> sentences
-> candidates -> extractors (``kg.extractors``).
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Mapping, Sequence

from causalkg.kg.cues import CueMatch, CueMatcher

_NEWLINES = re.compile(r"\n+")


@dataclass
class Mention:
    """A concept label found in a sentence (document offsets)."""

    start: int
    end: int
    text: str
    label: str  # the label or alias that matched
    qid: str | None = None
    document_concept: bool = False


@dataclass
class Sentence:
    """A sentence of a document: ``doc_text[start:end] == text``."""

    text: str
    start: int
    end: int
    section: str | None = None
    cues: list[CueMatch] = field(default_factory=list)
    mentions: list[Mention] = field(default_factory=list)
    # Set by the learned gate (kg.gate.SentenceGate.mark); None when no gate scored it.
    gate_score: float | None = None
    gate_pass: bool | None = None
    gate_reason: str | None = None  # "gate" (the encoder scored it) or "first pass" (stopped before it)

    @property
    def concept_mentions(self) -> list[Mention]:
        return [m for m in self.mentions if m.document_concept]

    @property
    def is_candidate(self) -> bool:
        """The learned gate's decision when it scored this sentence, else the cue gate's: a
        causal cue or a mention of the document concept."""
        if self.gate_pass is not None:
            return self.gate_pass
        return bool(self.cues) or bool(self.concept_mentions)

    def ref(self) -> dict[str, Any]:
        return {"text": self.text, "start": self.start, "end": self.end, "section": self.section}


def make_nlp() -> Any:
    """``spacy.blank("en")`` with a sentencizer: tokens and sentence boundaries, no model files."""
    import spacy

    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    return nlp


def _pieces(text: str, start: int, end: int, limit: int) -> Iterator[tuple[int, int]]:
    """Cut ``text[start:end]`` into pieces of at most ``limit`` chars, at spaces where possible."""
    while end - start > limit:
        cut = text.rfind(" ", start + limit // 2, start + limit)
        if cut <= start:
            cut = start + limit
        yield start, cut
        start = cut
        while start < end and text[start].isspace():
            start += 1
    if end > start:
        yield start, end


class SectionIndex:
    """Which section a character offset is in: the innermost (latest-starting) span holding it."""

    def __init__(self, sections: Sequence[Mapping[str, Any]] | None):
        items = sorted(
            ((int(s["start"]), int(s["end"]), s.get("heading")) for s in (sections or [])),
            key=lambda x: (x[0], -x[1]),
        )
        self.items = items
        self.starts = [s for s, _, _ in items]

    def at(self, offset: int) -> str | None:
        i = bisect.bisect_right(self.starts, offset) - 1
        while i >= 0:
            start, end, heading = self.items[i]
            if start <= offset < end:
                return heading
            i -= 1
        return None


class MentionFinder:
    """Finds concept labels in text: case-insensitive, on word boundaries, longest first."""

    def __init__(self, labels: Iterable[tuple[str, str | None, bool]], min_chars: int = 3):
        # (label, qid, is_document_concept); the document concept wins a tie on the same label.
        best: dict[str, tuple[str, str | None, bool]] = {}
        for label, qid, is_doc in labels:
            label = " ".join((label or "").split())
            if len(label) < min_chars:
                continue
            key = label.lower()
            if key not in best or (is_doc and not best[key][2]):
                best[key] = (label, qid, is_doc)
        self.labels = best
        if best:
            alternatives = sorted(best, key=len, reverse=True)
            pattern = "|".join(re.escape(k).replace(r"\ ", r"\s+") for k in alternatives)
            self.regex: re.Pattern | None = re.compile(rf"(?<!\w)(?:{pattern})(?!\w)", re.IGNORECASE)
        else:
            self.regex = None

    def find(self, text: str, offset: int = 0) -> list[Mention]:
        if self.regex is None:
            return []
        out = []
        for m in self.regex.finditer(text):
            key = " ".join(m.group(0).lower().split())
            label, qid, is_doc = self.labels.get(key, (m.group(0), None, False))
            out.append(Mention(offset + m.start(), offset + m.end(), m.group(0), label, qid, is_doc))
        return out


def concept_labels(record: Mapping[str, Any]) -> list[tuple[str, str | None, bool]]:
    """The labels a corpus record names: its document concept (label and aliases) and its
    event concepts. A plain text record (``{"id", "text"}``) names none."""
    out: list[tuple[str, str | None, bool]] = []
    dc = record.get("document_concept") or {}
    if isinstance(dc, Mapping):
        for label in [dc.get("label"), *(dc.get("labels") or [])]:
            if label:
                out.append((str(label), dc.get("id"), True))
    for ec in record.get("event_concepts") or []:
        if isinstance(ec, Mapping) and ec.get("label"):
            out.append((str(ec["label"]), ec.get("id"), False))
    return out


# Documents longer than this are not read (extract.max_document_chars): skipped and counted.
MAX_DOCUMENT_CHARS = 2_000_000


class Segmenter:
    """Splits documents into sentences and marks candidates. One per process; reuse it."""

    def __init__(self, nlp: Any | None = None, cue_matcher: CueMatcher | None = None, *,
                 max_chunk_chars: int = 100_000, max_sentence_chars: int = 2000,
                 min_mention_chars: int = 3):
        self.nlp = nlp or make_nlp()
        self.cue_matcher = cue_matcher
        self.gate: Any = None  # a kg.gate.SentenceGate that kg.extract runs over each shard's sentences
        # spaCy refuses texts over nlp.max_length (1,000,000 by default).
        self.max_chunk_chars = max(1000, min(int(max_chunk_chars), int(self.nlp.max_length)))
        self.max_sentence_chars = max(50, int(max_sentence_chars))
        self.min_mention_chars = min_mention_chars
        self.max_document_chars = MAX_DOCUMENT_CHARS

    def _chunks(self, text: str) -> list[tuple[int, int]]:
        chunks: list[tuple[int, int]] = []
        pos = 0
        for m in [*_NEWLINES.finditer(text), None]:
            end = m.start() if m is not None else len(text)
            if text[pos:end].strip():
                chunks.extend(_pieces(text, pos, end, self.max_chunk_chars))
            if m is not None:
                pos = m.end()
        return chunks

    def split(self, text: str, sections: Sequence[Mapping[str, Any]] | None = None,
              labels: Iterable[tuple[str, str | None, bool]] = ()) -> list[Sentence]:
        """The sentences of ``text`` with their section, cue matches and concept mentions.

        ``sections``: ``{"heading", "start", "end"}`` spans (the corpus record's ``sections``);
        ``labels``: ``(label, qid, is_document_concept)`` as from ``concept_labels``.
        Offsets are into ``text``; whitespace around sentences is trimmed.
        """
        if not text or not text.strip():
            return []
        index = SectionIndex(sections)
        finder = MentionFinder(labels, self.min_mention_chars)
        chunks = self._chunks(text)
        out: list[Sentence] = []
        for (cstart, cend), doc in zip(chunks, self.nlp.pipe(text[a:b] for a, b in chunks)):
            cue_matches = self.cue_matcher.find(doc, cstart) if self.cue_matcher is not None else []
            # The cues are handed out in one pass over the chunk (sentences come in order): time
            # linear in the chunk, not its sentences times its cues.
            cue_matches = sorted(cue_matches, key=lambda c: c.start)
            next_cue = 0
            for sent in doc.sents:
                s, e = cstart + sent.start_char, cstart + sent.end_char
                while s < e and text[s].isspace():
                    s += 1
                while e > s and text[e - 1].isspace():
                    e -= 1
                if s >= e:
                    continue
                for ps, pe in _pieces(text, s, e, self.max_sentence_chars):
                    while next_cue < len(cue_matches) and cue_matches[next_cue].start < ps:
                        next_cue += 1
                    cues = []
                    k = next_cue
                    while k < len(cue_matches) and cue_matches[k].start < pe:
                        if cue_matches[k].end <= pe:
                            cues.append(cue_matches[k])
                        k += 1
                    out.append(Sentence(
                        text=text[ps:pe], start=ps, end=pe, section=index.at(ps),
                        cues=cues,
                        mentions=finder.find(text[ps:pe], ps),
                    ))
        return out


def make_cue_segmenter(extract_settings: Mapping[str, Any]) -> "Segmenter":
    """The sentence splitter with the cue lexicon of the ``[extract]`` settings (its
    ``max_sentence_chars``, ``cue_min_count``, ``cue_min_precision``): what the extractors and
    the gate's training read sentences with. ``kg.extract.make_segmenter`` adds the gate."""
    from causalkg.kg.cues import BASE_CUES, CNC_CUES, load_lexicon

    seg = Segmenter(max_sentence_chars=extract_settings["max_sentence_chars"])
    seg.max_document_chars = int(extract_settings.get("max_document_chars", MAX_DOCUMENT_CHARS))
    cues = load_lexicon(BASE_CUES, CNC_CUES, min_count=int(extract_settings["cue_min_count"]),
                        min_precision=float(extract_settings["cue_min_precision"]))
    seg.cue_matcher = CueMatcher(seg.nlp, cues)
    return seg
