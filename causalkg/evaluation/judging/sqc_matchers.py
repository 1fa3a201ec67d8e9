"""SQC-Score, its graders: matchers that pair each prediction with at most one gold fact
(``EmbeddingMatcher``: a one-to-one assignment over cosine similarities; ``LLMMatcher``: a grading
prompt) and complementers that score how well the source text entails an unmatched prediction
(``NLIComplementer``, ``LLMComplementer``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Sequence

from causalkg.core.cache import DiskCache
from causalkg.core.errors import ConfigError
from causalkg.evaluation.judging.sqc_facts import Fact, Unit


# --- matchers --------------------------------------------------------------------------------


@dataclass
class Match:
    predicted: int
    gold: int
    score: float | None
    why: str


@dataclass
class UnitMatches:
    matches: list[Match] = field(default_factory=list)
    unmatched_why: dict[int, str] = field(default_factory=dict)  # predicted index -> why no match
    error: str | None = None
    answers: list[str] = field(default_factory=list)


class EmbeddingMatcher:
    """Cosine similarity of sentence embeddings, a maximum one-to-one assignment, a threshold."""

    def __init__(self, encoder: str = "all-MiniLM-L6-v2", *, threshold: float = 0.8, device: str = "auto"):
        from causalkg.linking.encoder import create_encoder

        if not 0.0 <= threshold <= 1.0:
            raise ConfigError(f"sqc_embedding_threshold must be in [0, 1], got {threshold}")
        self.spec = f"embedding:{encoder}"
        self.threshold = threshold
        self.encoder = create_encoder(encoder, device=device)
        self._vectors: dict[str, Any] = {}  # text -> vector: gold facts recur across calls

    @staticmethod
    def _views(fact: Fact) -> list[str]:
        return [fact.text] + list(fact.parts.values())

    def similarity(self, p: Fact, g: Fact, vec: dict[str, Any]) -> tuple[float, str]:
        """The similarity of two facts and how it was made (for the report)."""
        whole = float(vec[p.text] @ vec[g.text])
        if p.kind == g.kind == "edge":
            c = float(vec[p.parts["cause"]] @ vec[g.parts["cause"]])
            e = float(vec[p.parts["effect"]] @ vec[g.parts["effect"]])
            return min(c, e), f"cause {c:.3f}, effect {e:.3f}"
        if p.kind == g.kind == "triple":
            s = float(vec[p.parts["subject"]] @ vec[g.parts["subject"]])
            o = float(vec[p.parts["object"]] @ vec[g.parts["object"]])
            return min(s, o, whole), f"subject {s:.3f}, object {o:.3f}, sentence {whole:.3f}"
        return whole, f"sentence {whole:.3f}"

    def match_units(self, units: Sequence[Unit]) -> list[UnitMatches]:
        import numpy as np
        from scipy.optimize import linear_sum_assignment

        strings = sorted({s for u in units for f in u.predicted + u.gold for s in self._views(f)} - set(self._vectors))
        self._vectors.update(zip(strings, self.encoder.encode(strings)))
        vec = self._vectors
        out: list[UnitMatches] = []
        for u in units:
            um = UnitMatches()
            out.append(um)
            if not u.predicted:
                continue
            if not u.gold:
                um.unmatched_why = {i: "no gold facts in this unit" for i in range(len(u.predicted))}
                continue
            sim = np.zeros((len(u.predicted), len(u.gold)))
            how: dict[tuple[int, int], str] = {}
            for i, p in enumerate(u.predicted):
                for j, g in enumerate(u.gold):
                    sim[i, j], how[i, j] = self.similarity(p, g, vec)
            eligible = sim >= self.threshold
            # Most matches first, then the most similar: eligible pairs weigh more than any sum of sims.
            weight = np.where(eligible, sim + len(u.predicted) + 1, 0.0)
            rows, cols = linear_sum_assignment(weight, maximize=True)
            taken: dict[int, int] = {}
            for i, j in zip(rows, cols):
                if eligible[i, j]:
                    um.matches.append(Match(int(i), int(j), float(sim[i, j]),
                                            f"cosine {sim[i, j]:.3f} >= {self.threshold:g} ({how[i, j]})"))
                    taken[int(j)] = int(i)
            matched_p = {m.predicted for m in um.matches}
            for i in range(len(u.predicted)):
                if i in matched_p:
                    continue
                j = int(np.argmax(sim[i]))
                if sim[i, j] < self.threshold:
                    um.unmatched_why[i] = f"closest gold G{j + 1} at {sim[i, j]:.3f} < {self.threshold:g} ({how[i, j]})"
                else:
                    um.unmatched_why[i] = f"closest gold G{j + 1} ({sim[i, j]:.3f}) went to P{taken.get(j, -1) + 1}"
        return out


def _match_line_parser(n_pred: int, n_gold: int):
    from causalkg.evaluation.judging.llm_answers import ParseError

    line_re = re.compile(r"^\(\s*P(\d+)\s*,\s*G(\d+)\s*\)\s*(?:[:\-–—]\s*)?(.*)$")

    def parse(text: str) -> list[tuple[int, int, str]]:
        lines = [ln.strip() for ln in text.strip().splitlines()]
        lines = [ln for ln in lines if ln and not ln.startswith("```")]
        if not lines or lines[-1].upper().rstrip(".") != "END":
            raise ParseError('the answer must end with a line "END"')
        body = lines[:-1]
        if body and body[0].rstrip(":").lower() in ("matches", "grading"):
            body = body[1:]
        if len(body) == 1 and body[0].upper().rstrip(".") == "NONE":
            return []
        if not body:
            raise ParseError('list the matches, or write "NONE", before "END"')
        out: list[tuple[int, int, str]] = []
        seen_p: set[int] = set()
        seen_g: set[int] = set()
        for ln in body:
            m = line_re.match(ln)
            if not m:
                raise ParseError(f"cannot read the line {ln[:80]!r}: each match must be a line like (P1, G2) reason")
            p, g, why = int(m.group(1)), int(m.group(2)), m.group(3).strip()
            if not 1 <= p <= n_pred or not 1 <= g <= n_gold:
                raise ParseError(f"(P{p}, G{g}) names an item that does not exist (P1-P{n_pred}, G1-G{n_gold})")
            if p in seen_p or g in seen_g:
                raise ParseError(f"(P{p}, G{g}): each P and each G may appear in at most one match")
            seen_p.add(p)
            seen_g.add(g)
            out.append((p - 1, g - 1, why))
        return out

    return parse


class LLMMatcher:
    """The teacher-style grading prompt: the model lists the matches as (P<i>, G<j>) lines."""

    def __init__(self, client: Any, *, max_attempts: int = 3):
        self.client = client
        self.spec = f"openai:{client.model}"
        self.max_attempts = max_attempts

    def match_units(self, units: Sequence[Unit]) -> list[UnitMatches]:
        from causalkg.evaluation.judging.llm_answers import ask_parsed, load_prompt, render

        template = load_prompt("sqc_match")
        out = [UnitMatches() for _ in units]
        todo = [k for k, u in enumerate(units) if u.predicted and u.gold]
        for k, u in enumerate(units):
            if u.predicted and not u.gold:
                out[k].unmatched_why = {i: "no gold facts in this unit" for i in range(len(u.predicted))}
        prompts = [render(template,
                          gold="\n".join(f"G{j + 1}. {g.text}" for j, g in enumerate(units[k].gold)),
                          predicted="\n".join(f"P{i + 1}. {p.text}" for i, p in enumerate(units[k].predicted)))
                   for k in todo]
        parsers = [_match_line_parser(len(units[k].predicted), len(units[k].gold)) for k in todo]
        for k, outcome in zip(todo, ask_parsed(self.client, prompts, parsers, max_attempts=self.max_attempts,
                                               desc="grading (matcher)")):
            um = out[k]
            um.answers = outcome.answers
            if not outcome.ok:
                um.error = outcome.error
                continue
            for p, g, why in outcome.value:
                um.matches.append(Match(p, g, None, f"grader: {why}" if why else "grader listed the match"))
            matched = {m.predicted for m in um.matches}
            um.unmatched_why = {i: "the grader matched it to no gold fact" for i in range(len(units[k].predicted)) if i not in matched}
        return out


# --- complementers ---------------------------------------------------------------------------


class NLIComplementer:
    def __init__(self, name_or_path: str, *, device: str = "auto", batch_size: int = 16, cache: DiskCache | None = None):
        from causalkg.evaluation.judging.nli import NLIScorer

        self.spec = f"nli:{name_or_path}"
        self.scorer = NLIScorer(name_or_path, device=device, batch_size=batch_size, cache=cache)

    def scores(self, premises: Sequence[str], hypotheses: Sequence[str]) -> list[tuple[float | None, str | None]]:
        return [(s, None) for s in self.scorer.entailment(premises, hypotheses, desc="entailment (complementer)")]


def parse_probability(text: str) -> float:
    """A single probability in [0, 1] from an answer such as ``0.85``, ``Probability: 0.85`` or
    ``{"entailment": 0.85}`` (ParseError otherwise)."""
    from causalkg.evaluation.judging.llm_answers import ParseError

    s = text.strip().strip("`").strip()
    m = re.fullmatch(r'(?is)\{\s*"?[a-z_ ]+"?\s*:\s*([0-9.]+)\s*\}|(?:probability|score|answer|entailment)?\s*[:=]?\s*([0-9]*\.?[0-9]+)\.?', s)
    if not m:
        raise ParseError("answer with one number between 0 and 1 and nothing else")
    value = float(m.group(1) or m.group(2))
    if not 0.0 <= value <= 1.0:
        raise ParseError(f"{value} is not between 0 and 1")
    return value


class LLMComplementer:
    def __init__(self, client: Any, *, max_attempts: int = 3):
        self.client = client
        self.spec = f"openai:{client.model}"
        self.max_attempts = max_attempts

    def scores(self, premises: Sequence[str], hypotheses: Sequence[str]) -> list[tuple[float | None, str | None]]:
        from causalkg.evaluation.judging.llm_answers import ask_parsed, load_prompt, render

        template = load_prompt("sqc_entail")
        prompts = [render(template, text=p, fact=h) for p, h in zip(premises, hypotheses)]
        outs = ask_parsed(self.client, prompts, parse_probability, max_attempts=self.max_attempts,
                          desc="entailment (complementer)")
        return [(o.value, None) if o.ok else (None, o.error) for o in outs]
