"""Gold cause-effect sentences and the QA training examples made from them.

Two public causal datasets are read here and turned into one shape, the *gold sentence*:

- Causal News Corpus V2 (CC0), subtask 2 train: sentences whose ``text_w_pairs`` mark the cause
  (``<ARG0>``), the effect (``<ARG1>``) and the signal (``<SIG0>``) of each relation; subtask 1
  train gives the sentences labelled non-causal (``label`` 0).
- SemEval-2010 Task 8 (CC BY 3.0), train: ``Cause-Effect(e1,e2)`` and ``Cause-Effect(e2,e1)``
  sentences give one relation between the two marked nominals; ``Other`` sentences are
  non-causal.

A gold sentence is ``{"id", "source", "group", "text", "causal", "relations": [{"cause",
"effect", "signal"}]}`` with every span ``{"text", "start", "end"}`` (character offsets into
``text``). ``scripts/build_qa_training_set.py`` reads the raw files once and writes the gold
sentences, split into train and validation by document, to ``snapshots/qa-training/``; the QA
trainer (``kg.train_qa``) and the extraction benchmark read that snapshot, never the raw data.

``qa_examples`` turns gold sentences into SQuAD 2.0 style questions with the same templates
the QA extractor asks (``[extract]`` in the config), so the model is trained on the questions
it will be asked; non-causal sentences give no-answer examples.
"""

from __future__ import annotations

import csv
import hashlib
import random
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

from causalkg.core.errors import SchemaError
from causalkg.core.jsonl import write_jsonl
from causalkg.core.manifest import file_sha256

# Tags of the Causal News Corpus; SIG1.. are extra signals of the same relation.
_CNC_TAG = re.compile(r"<(/?)(ARG0|ARG1|SIG\d+)>")
_SEMEVAL_TAG = re.compile(r"</?e[12]>")
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]{3,}")
# Words too generic to stand for an event when a no-answer anchor is drawn from a sentence.
_STOP = frozenset(
    """also been being were that this these those with from have their there which while when
    where what will would could should into about after before over under they them then than
    said says more most some such only other very just like upon onto said""".split()
)


def span(text: str, start: int, end: int) -> dict[str, Any]:
    """A ``{"text", "start", "end"}`` span of ``text`` with surrounding whitespace trimmed."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return {"text": text[start:end], "start": start, "end": end}


def parse_cnc_tagged(tagged: str) -> tuple[str, dict[str, dict[str, Any]]]:
    """Strip the ``<ARG0>``/``<ARG1>``/``<SIGn>`` tags of a CNC ``text_w_pairs``.

    Returns the clean text and a map tag -> span in it. Tags may interleave
    (``<SIG0>in order <ARG0>to</SIG0> ...</ARG0>``), so spans are tracked by offsets, not
    nesting. Raises SchemaError when a tag is opened twice or never closed.
    """
    out: list[str] = []
    pos = 0
    length = 0
    opened: dict[str, int] = {}
    spans: dict[str, tuple[int, int]] = {}
    for m in _CNC_TAG.finditer(tagged):
        chunk = tagged[pos : m.start()]
        out.append(chunk)
        length += len(chunk)
        pos = m.end()
        closing, name = m.group(1) == "/", m.group(2)
        if not closing:
            if name in opened or name in spans:
                raise SchemaError(f"tag <{name}> opened twice in {tagged[:80]!r}")
            opened[name] = length
        else:
            if name not in opened:
                raise SchemaError(f"tag </{name}> closes nothing in {tagged[:80]!r}")
            spans[name] = (opened.pop(name), length)
    out.append(tagged[pos:])
    if opened:
        raise SchemaError(f"tag <{next(iter(opened))}> never closed in {tagged[:80]!r}")
    text = "".join(out)
    return text, {name: span(text, s, e) for name, (s, e) in spans.items()}


def _read_csv(path: Path) -> list[dict[str, str]]:
    # The CNC files start with a UTF-8 byte-order mark.
    with open(path, encoding="utf-8-sig", newline="") as fh:
        return list(csv.DictReader(fh))


def read_cnc_subtask1(path: str | Path) -> list[dict[str, Any]]:
    """Every sentence of CNC subtask 1 train, in file order: ``{"id", "source", "group", "text",
    "label"}`` with ``label`` as written ("1" causal, "0" not); ``group`` is the news document id."""
    out = []
    for row in _read_csv(Path(path)):
        doc, sent = row["index"].rsplit("_", 1)
        out.append({"id": f"cnc:{doc}:{sent}", "source": "cnc", "group": f"cnc:{doc}", "text": row["text"],
                    "label": row["label"].strip()})
    return out


def read_cnc(subtask1: str | Path, subtask2: str | Path) -> list[dict[str, Any]]:
    """Gold sentences from CNC train: causal ones from subtask 2 (all their relations),
    non-causal ones from subtask 1 (label 0). ``group`` is the news document id."""
    by_sentence: dict[tuple[str, str], dict[str, Any]] = {}
    for row in _read_csv(Path(subtask2)):
        text, spans = parse_cnc_tagged(row["text_w_pairs"])
        if text != row["text"]:
            raise SchemaError(f"{subtask2}: {row['index']}: tagged text does not match text")
        if "ARG0" not in spans or "ARG1" not in spans:
            continue  # a relation without both arguments gives no question
        key = (row["doc_id"], row["sent_id"])
        rec = by_sentence.setdefault(key, {
            "id": f"cnc:{row['doc_id']}:{row['sent_id']}", "source": "cnc", "group": f"cnc:{row['doc_id']}",
            "text": text, "causal": True, "relations": [],
        })
        rec["relations"].append({"cause": spans["ARG0"], "effect": spans["ARG1"], "signal": spans.get("SIG0")})
    records = list(by_sentence.values())
    for row in read_cnc_subtask1(subtask1):
        if row["label"] == "0":
            records.append({"id": row["id"], "source": "cnc", "group": row["group"], "text": row["text"],
                            "causal": False, "relations": []})
    return records


def untag_semeval(quoted: str) -> tuple[str, dict[str, tuple[int, int]]]:
    """A SemEval-2010 Task 8 sentence (quoted, its nominals tagged ``<e1>...</e1>``) as plain text
    and the character span of each nominal in it."""
    tagged = quoted.strip()
    if tagged.startswith('"') and tagged.endswith('"'):
        tagged = tagged[1:-1]
    text_parts, pos, opened, spans, length = [], 0, {}, {}, 0
    for m in re.finditer(r"<(/?)(e[12])>", tagged):
        chunk = tagged[pos : m.start()]
        text_parts.append(chunk)
        length += len(chunk)
        pos = m.end()
        if m.group(1):
            spans[m.group(2)] = (opened.pop(m.group(2)), length)
        else:
            opened[m.group(2)] = length
    text_parts.append(tagged[pos:])
    return "".join(text_parts), spans


def read_semeval_sentences(train_file: str | Path) -> Iterator[dict[str, Any]]:
    """Every sentence of SemEval-2010 Task 8's training file, in file order: ``{"sid", "label",
    "text", "spans"}``, the text without its tags and ``spans`` the character span (start, end)
    of each nominal in it (``"e1"``, ``"e2"``; ``untag_semeval``)."""
    raw = Path(train_file).read_text(encoding="utf-8-sig").replace("\r", "")
    for block in (b for b in raw.split("\n\n") if b.strip()):
        lines = block.strip().split("\n")
        sid, quoted = lines[0].split("\t", 1)
        text, spans = untag_semeval(quoted)
        yield {"sid": sid, "label": lines[1].strip(), "text": text, "spans": spans}


def read_semeval(train_file: str | Path) -> list[dict[str, Any]]:
    """Gold sentences from SemEval-2010 Task 8 train: Cause-Effect sentences (one relation
    between the marked nominals, in the labelled direction) and ``Other`` sentences."""
    records = []
    for sentence in read_semeval_sentences(train_file):
        sid, label, text, spans = sentence["sid"], sentence["label"], sentence["text"], sentence["spans"]
        if label not in ("Cause-Effect(e1,e2)", "Cause-Effect(e2,e1)", "Other"):
            continue
        e1, e2 = (span(text, *spans["e1"]), span(text, *spans["e2"]))
        rec = {"id": f"semeval:{sid}", "source": "semeval", "group": f"semeval:{sid}", "text": text,
               "causal": label != "Other", "relations": [], "entities": [e1, e2]}
        if label == "Cause-Effect(e1,e2)":
            rec["relations"].append({"cause": e1, "effect": e2, "signal": None})
        elif label == "Cause-Effect(e2,e1)":
            rec["relations"].append({"cause": e2, "effect": e1, "signal": None})
        records.append(rec)
    return records


def is_validation(group: str, fraction: float, salt: str = "causalkg-qa-v1") -> bool:
    """Deterministic split by group (a document): the same group always lands on the same side."""
    digest = hashlib.sha256(f"{salt}:{group}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < fraction


def split_records(records: Iterable[Mapping[str, Any]], fraction: float) -> tuple[list, list]:
    """(train, validation) lists, split by ``group`` so no document is on both sides."""
    train, val = [], []
    for rec in records:
        (val if is_validation(rec["group"], fraction) else train).append(dict(rec))
    return train, val


TEST_SALT = "causalkg-test-v1"


def split_three(records: Iterable[Mapping[str, Any]], fraction: float,
                test_share: float = 0.5) -> tuple[list, list, list]:
    """(train, validation, test) lists by ``group``: the groups ``split_records`` puts in
    validation are shared between validation (model selection) and test (held out of training
    and selection alike; only the benchmarks read it), ``test_share`` of them to test. The train
    side is exactly ``split_records``'s, so every model trained on it sees the same documents."""
    train, val, test = [], [], []
    for rec in records:
        if not is_validation(rec["group"], fraction):
            train.append(dict(rec))
        elif is_validation(rec["group"], test_share, salt=TEST_SALT):
            test.append(dict(rec))
        else:
            val.append(dict(rec))
    return train, val, test


def write_splits(out: str | Path, splits: Mapping[str, Sequence[Mapping[str, Any]]],
                 counts: Callable[[Sequence[Mapping[str, Any]]], dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Write each split of a training snapshot to ``out/NAME.jsonl``; returns, by split name,
    ``counts(records)`` followed by the written file's ``sha256`` (the snapshot's ``stats.json``
    entries; ``scripts/build_*_training_set.py``)."""
    out = Path(out)
    stats = {}
    for name, records in splits.items():
        write_jsonl(out / f"{name}.jsonl", records)
        stats[name] = {**counts(records), "sha256": file_sha256(out / f"{name}.jsonl")}
    return stats


# --- questions --------------------------------------------------------------------------------


@dataclass(frozen=True)
class AnchoredTemplate:
    """A question about a named event; ``answer`` says what the answer is (cause or effect)."""

    template: str
    answer: str  # "cause" | "effect"

    def ask(self, concept: str) -> str:
        return self.template.format(concept=concept)


@dataclass(frozen=True)
class QuestionTemplates:
    """The questions of the QA extractor (``[extract]`` in the config), checked once."""

    anchored: tuple[AnchoredTemplate, ...]
    cause: str  # unanchored: "What is the cause?"
    effect: str  # asked with each cause found: "What did {cause} lead to?"

    @classmethod
    def from_config(cls, section: Any) -> "QuestionTemplates":
        """The templates of ``[extract.qa]``: its dict, or its ``QASettings``."""
        import dataclasses

        from causalkg.core.errors import ConfigError

        if dataclasses.is_dataclass(section):
            section = dataclasses.asdict(section)
        anchored = []
        for i, item in enumerate(section.get("questions_anchored") or []):
            if not isinstance(item, Mapping) or set(item) != {"template", "answer"}:
                raise ConfigError(f"extract.qa.questions_anchored[{i}] must be {{template = ..., answer = ...}}")
            if item["answer"] not in ("cause", "effect"):
                raise ConfigError(f"extract.qa.questions_anchored[{i}].answer must be cause or effect")
            _check_fields(f"extract.qa.questions_anchored[{i}]", item["template"], {"concept"})
            anchored.append(AnchoredTemplate(str(item["template"]), str(item["answer"])))
        cause = str(section.get("question_cause") or "")
        effect = str(section.get("question_effect") or "")
        if cause:
            _check_fields("extract.qa.question_cause", cause, set())
        if effect:
            _check_fields("extract.qa.question_effect", effect, {"cause"})
        return cls(tuple(anchored), cause, effect)

    def as_dict(self) -> dict[str, Any]:
        return {"anchored": [(t.template, t.answer) for t in self.anchored], "cause": self.cause,
                "effect": self.effect}


def _check_fields(key: str, template: str, allowed: set[str]) -> None:
    import string

    from causalkg.core.errors import ConfigError

    try:
        fields = {f for _, f, _, _ in string.Formatter().parse(template) if f is not None}
    except ValueError as exc:
        raise ConfigError(f"{key}: bad template {template!r}: {exc}") from None
    if fields - allowed:
        raise ConfigError(f"{key}: unknown placeholder(s) {sorted(fields - allowed)} in {template!r}",
                          hint=f"allowed: {sorted(allowed) or 'none'}")


@dataclass(frozen=True)
class QAExample:
    """One SQuAD 2.0 style example; ``answer_start`` is None for no-answer."""

    id: str
    question: str
    context: str
    answer_text: str
    answer_start: int | None
    kind: str  # which template family made it (for reports)


def _no_answer_anchor(text: str, rng: random.Random) -> str | None:
    words = [w for w in _WORD.findall(text) if w.lower() not in _STOP]
    return rng.choice(words) if words else None


# The version of the rules below that turn gold sentences into questions: part of the training
# fingerprint, so that a model trained with older rules is retrained by ``train-qa --if-missing``.
# 2: reversed anchored questions (about the wrong side of a relation) as no-answer examples.
EXAMPLES_VERSION = 2


def _overlaps(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return a["start"] < b["end"] and b["start"] < a["end"]


def qa_examples(records: Sequence[Mapping[str, Any]], templates: QuestionTemplates,
                *, seed: int = 0, reversed_share: float = 1.0) -> list[QAExample]:
    """The QA examples of gold sentences, in the extractor's question templates.

    A causal sentence gives, per relation: the unanchored cause question (answer: the cause;
    asked once per sentence, answered with its first relation), the effect question about that
    cause, and each anchored template about the relation's effect or cause. It also gives each
    anchored template asked the wrong way round, without answer: "What caused {cause}?" and
    "What did {effect} cause?" (kind ``reversed-cause`` / ``reversed-effect``; each kept with
    probability ``reversed_share``, drawn from the seeded generator), unless the anchor
    overlaps a span that is on the asked side of another relation of the sentence (a chain
    "A caused B, which caused C" does answer "What did B cause?"). Without these the model
    learns that an anchored question is answered by "the other event of the sentence" and
    answers both directions alike. A non-causal sentence gives the unanchored cause question and
    anchored questions about its marked nominals (SemEval) or one of its words (CNC), all without
    answer. Deterministic for a seed.
    """
    rng = random.Random(seed)
    out: list[QAExample] = []
    for rec in records:
        text, rid = rec["text"], rec["id"]
        rels = rec.get("relations") or []
        if rels:
            if templates.cause:
                c = rels[0]["cause"]
                out.append(QAExample(f"{rid}:cause", templates.cause, text, c["text"], c["start"], "cause"))
            for i, rel in enumerate(rels):
                cause, effect = rel["cause"], rel["effect"]
                if templates.effect:
                    out.append(QAExample(f"{rid}:{i}:effect", templates.effect.format(cause=cause["text"]), text,
                                         effect["text"], effect["start"], "effect"))
                for j, t in enumerate(templates.anchored):
                    anchor, answer = (effect, cause) if t.answer == "cause" else (cause, effect)
                    out.append(QAExample(f"{rid}:{i}:a{j}", t.ask(anchor["text"]), text, answer["text"],
                                         answer["start"], f"anchored-{t.answer}"))
                    # The same template about the other side: "What caused {the cause}?" has no
                    # answer here unless that span is an effect elsewhere in the sentence.
                    wrong = cause if t.answer == "cause" else effect
                    asked_side = "effect" if t.answer == "cause" else "cause"
                    if reversed_share >= 1.0 or rng.random() < reversed_share:
                        if any(_overlaps(wrong, other[asked_side]) for other in rels):
                            continue
                        out.append(QAExample(f"{rid}:{i}:r{j}", t.ask(wrong["text"]), text, "", None,
                                             f"reversed-{t.answer}"))
        else:
            if templates.cause:
                out.append(QAExample(f"{rid}:cause", templates.cause, text, "", None, "cause"))
            anchors = [e["text"] for e in rec.get("entities") or []]
            if not anchors:
                word = _no_answer_anchor(text, rng)
                anchors = [word] if word else []
            for k, anchor in enumerate(anchors):
                for j, t in enumerate(templates.anchored):
                    out.append(QAExample(f"{rid}:n{k}:a{j}", t.ask(anchor), text, "", None, f"anchored-{t.answer}"))
    return out


def read_gold(path: str | Path) -> Iterator[dict[str, Any]]:
    """Gold sentences from a snapshot JSONL file (``snapshots/qa-training/*.jsonl``)."""
    from causalkg.core.jsonl import read_jsonl

    def check(rec: Any) -> str | None:
        if not isinstance(rec, dict) or not isinstance(rec.get("text"), str) or "relations" not in rec:
            return "a gold sentence needs text and relations"
        for rel in rec["relations"]:
            for role in ("cause", "effect"):
                s = rel.get(role) or {}
                if rec["text"][s.get("start", 0):s.get("end", -1)] != s.get("text"):
                    return f"{role} offsets do not slice the text to {s.get('text')!r}"
        return None

    yield from read_jsonl(path, check=check)
