"""The LLM extractor: an OpenAI-compatible chat model reads passages and answers in JSON.

Consecutive candidate sentences of a document are sent together as one passage (up to
``extract.llm.passage_chars``). The prompt is a template file (``kg/prompts/extract_llm.txt``
or ``extract.llm.prompt``): the text before a line ``=== user ===`` is the system message,
the rest the user message, and ``$passage`` is replaced by the passage as a JSON string
(``json.dumps``: the escaping is the JSON library's, never string pasting).

The answer must be ``[{cause, effect, direction, evidence}]`` (bare, or as ``{"relations":
[...]}``; a Markdown code fence is tolerated) and is validated against ``RESPONSE_SCHEMA``
with jsonschema. An answer that is not valid JSON of that schema is asked again, up to
``llm_max_attempts`` times (each attempt is a different cache entry: ``try_index``).
Transport failures (429 with Retry-After, 5xx, timeouts) are retried by
``causalkg.core.llm.ChatClient``, which also caches every answer on disk, so a rerun asks nothing
twice. Cause and effect are mapped back to character offsets in the document: exact, then
case-insensitive, then ignoring spacing and punctuation; a phrase that is not in the passage is
dropped and counted (``not_in_text``), never invented.
"""

from __future__ import annotations

import json
import re
import string
from collections import Counter
from pathlib import Path
from typing import Any, Sequence

from causalkg.core.config import Config, block
from causalkg.core.errors import ConfigError
from causalkg.core.manifest import file_sha256
from causalkg.kg.extractors import Document, make_record, span_of, spans_overlap
from causalkg.kg.sentences import Sentence
from causalkg.kg.settings import LLMSettings

PROMPTS = Path(__file__).resolve().parents[1] / "prompts"
USER_MARK = "=== user ==="

RESPONSE_SCHEMA: dict[str, Any] = {
    "type": "array",
    "items": {
        "type": "object",
        "required": ["cause", "effect"],
        "properties": {
            "cause": {"type": "string", "minLength": 1},
            "effect": {"type": "string", "minLength": 1},
            "direction": {"enum": ["increase", "decrease", "unspecified", None]},
            "evidence": {"type": ["string", "null"]},
        },
    },
}

_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL)


def create(arg: str, *, cfg: Config, client: Any = None, **_: Any) -> "LLMExtractor":
    """The registry factory: ``llm`` (model from ``llm.model``) or ``llm:MODEL``."""
    return LLMExtractor.from_config(cfg, model=arg or None, client=client)


def prompt_path(name: str, base_dir: Path | None = None) -> Path:
    """A prompt template: a name in ``kg/prompts/`` (without .txt) or a path to a file."""
    p = Path(name)
    if p.suffix or "/" in name:
        p = p if p.is_absolute() or base_dir is None else base_dir / p
    else:
        p = PROMPTS / f"{name}.txt"
    if not p.is_file():
        raise ConfigError(f"LLM prompt template not found: {p}", hint="set extract.llm.prompt to a file or a name in kg/prompts/")
    return p


def load_prompt(path: Path) -> tuple[str, string.Template]:
    """(system message, user template) of a prompt file."""
    text = path.read_text(encoding="utf-8")
    system, mark, user = text.partition(USER_MARK + "\n")
    if not mark:
        raise ConfigError(f"{path}: no '{USER_MARK}' line separating the system and user messages")
    template = string.Template(user)
    if "passage" not in {m.group("named") or m.group("braced") for m in template.pattern.finditer(user)}:
        raise ConfigError(f"{path}: the user message has no $passage placeholder")
    return system.strip(), template


def parse_answer(text: str) -> list[dict[str, Any]]:
    """The relations of an answer; raises ValueError (with why) when it is not valid."""
    import jsonschema

    m = _FENCE.match(text)
    body = m.group(1) if m else text.strip()
    try:
        value = json.loads(body)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON: {exc.msg}") from None
    if isinstance(value, dict):
        if "relations" not in value:
            raise ValueError("a JSON object without 'relations'")
        value = value["relations"]
    try:
        jsonschema.validate(value, RESPONSE_SCHEMA)
    except jsonschema.ValidationError as exc:
        raise ValueError(f"does not match the schema: {exc.message}") from None
    return value


def locate(phrase: str, text: str, near: int = 0) -> tuple[int, int] | None:
    """Offsets of ``phrase`` in ``text`` (the occurrence nearest ``near``): exact, then case-
    insensitive, then ignoring spacing and punctuation between words. None when absent."""
    phrase = phrase.strip().strip(".,;:")
    if not phrase:
        return None
    candidates = [m.span() for m in re.finditer(re.escape(phrase), text)]
    if not candidates:
        candidates = [m.span() for m in re.finditer(re.escape(phrase), text, re.IGNORECASE)]
    if not candidates:
        words = re.findall(r"\w+", phrase)
        if not words:
            return None
        loose = r"\W+".join(re.escape(w) for w in words)
        candidates = [m.span() for m in re.finditer(rf"(?<!\w){loose}(?!\w)", text, re.IGNORECASE)]
    if not candidates:
        return None
    return min(candidates, key=lambda sp: abs(sp[0] - near))


class LLMExtractor:
    name = "llm"

    def __init__(self, settings: LLMSettings, client: Any, *, base_dir: Path | None = None,
                 candidates_only: bool = True):
        """The extractor of its block, ``[extract.llm]``, a chat ``client`` (``core.llm.ChatClient``
        or one speaking its ``complete`` API) and the run's ``candidates_only``."""
        self.client = client
        self.model = self.client.model
        self.prompt_file = prompt_path(settings.prompt, base_dir)
        self.system, self.template = load_prompt(self.prompt_file)
        self.max_attempts = max(1, int(settings.max_attempts))
        self.passage_chars = max(200, int(settings.passage_chars))
        self.candidates_only = bool(candidates_only)
        self.counts: Counter[str] = Counter()

    @classmethod
    def from_config(cls, cfg: Config, *, model: str | None = None, client: Any = None) -> "LLMExtractor":
        """The extractor of a resolved configuration: ``[extract.llm]``, the client of ``[llm]``
        (``model`` overrides ``llm.model``) unless ``client`` is given, ``extract.candidates_only``."""
        from causalkg.core.llm import ChatClient

        return cls(block(cfg, "extract.llm", LLMSettings), client or ChatClient.from_config(cfg, model=model),
                   base_dir=cfg.base_dir, candidates_only=cfg["extract"]["candidates_only"])

    def describe(self) -> dict[str, Any]:
        return {"extractor": self.name, "model": self.model, "base_url": self.client.base_url,
                "prompt": str(self.prompt_file), "prompt_sha256": file_sha256(self.prompt_file),
                "max_attempts": self.max_attempts, "passage_chars": self.passage_chars}

    def stats(self) -> dict[str, Any]:
        out = dict(self.counts)
        out["usage"] = self.client.usage.as_dict()
        return out

    def messages(self, passage: str) -> list[dict[str, str]]:
        user = self.template.substitute(passage=json.dumps(passage, ensure_ascii=False))
        msgs = [{"role": "system", "content": self.system}] if self.system else []
        return msgs + [{"role": "user", "content": user}]

    def passages(self, doc: Document) -> list[list[Sentence]]:
        """Runs of consecutive sentences to read, each within ``passage_chars``."""
        runs: list[list[Sentence]] = []
        current: list[Sentence] = []
        last_index = -2
        for i, sent in enumerate(doc.sentences):
            if self.candidates_only and not sent.is_candidate:
                continue
            too_long = current and sent.end - current[0].start > self.passage_chars
            if current and (i != last_index + 1 or too_long):
                runs.append(current)
                current = []
            current.append(sent)
            last_index = i
        if current:
            runs.append(current)
        return runs

    def extract(self, docs: Sequence[Document]) -> list[dict[str, Any]]:
        """Extraction records of a shard: one request per passage (more when an answer is invalid).

        Raises SourceError when the server keeps failing (the stage resumes at this shard)."""
        from causalkg.core.llm import ChatRequest

        jobs = []
        for doc in docs:
            self.counts["sentences"] += len(doc.sentences)
            for run in self.passages(doc):
                self.counts["sentences_read"] += len(run)
                jobs.append((doc, run, doc.text[run[0].start : run[-1].end]))
        answers: list[list[dict[str, Any]] | None] = [None] * len(jobs)
        pending = list(range(len(jobs)))
        for attempt in range(self.max_attempts):
            if not pending:
                break
            requests = [ChatRequest.of(self.messages(jobs[i][2]), temperature=0.0, try_index=attempt,
                                       json_mode=True) for i in pending]
            results = self.client.chat_many(requests, desc=f"asking {self.model}")
            still = []
            for i, result in zip(pending, results):
                self.counts["requests"] += 1
                try:
                    answers[i] = parse_answer(result.text)
                except ValueError:
                    self.counts["invalid_answers"] += 1
                    still.append(i)
            pending = still
        self.counts["passages"] += len(jobs)
        self.counts["passages_failed"] += len(pending)
        records = []
        for (doc, run, passage), relations in zip(jobs, answers):
            base = run[0].start
            for rel in relations or []:
                self.counts["relations"] += 1
                ev = locate(rel.get("evidence") or "", passage) if rel.get("evidence") else None
                near = ev[0] if ev else 0
                c = locate(rel["cause"], passage, near)
                e = locate(rel["effect"], passage, near)
                if c is None or e is None:
                    self.counts["not_in_text"] += 1
                    continue
                cause = span_of(doc, base + c[0], base + c[1])
                effect = span_of(doc, base + e[0], base + e[1])
                if spans_overlap(cause, effect):
                    self.counts["dropped_overlap"] += 1
                    continue
                lo, hi = min(cause["start"], effect["start"]), max(cause["end"], effect["end"])
                covering = [s for s in run if s.start < hi and lo < s.end]
                if len(covering) == 1:
                    sentence: Any = covering[0]
                else:  # the relation spans sentences: the sentence is their union
                    s0, s1 = covering[0].start, covering[-1].end
                    sentence = {"text": doc.text[s0:s1], "start": s0, "end": s1, "section": covering[0].section}
                records.append(make_record(doc, sentence, cause, effect, score=1.0, extractor=self.name,
                                           model=self.model, question=None,
                                           direction=rel.get("direction") or "unspecified",
                                           evidence=rel.get("evidence")))
        self.counts["extractions"] += len(records)
        return records
