"""SQC-Score: grading extracted facts against gold facts the way a teacher grades an open answer.

Stage 4 (evaluation), beside recall and LLM precision. After Fan et al., "Evaluating Generative
Language Models in Information Extraction as Subjective Question Correction" (reference code
THU-KEG/SQC-Score, ``sqc_score.py`` at commit 32e6f06b76ce81775da6d7b80e7722ff8fc7a20d).
For each unit (a document or passage with its source text) and its predicted and gold facts:

1. Matcher: pairs each prediction with at most one gold fact that means the same, however it is
   worded. ``embedding:ENCODER`` (MiniLM cosine by default: a maximum one-to-one assignment over
   the pairs whose similarity reaches a threshold; for causal edges and triples the similarity
   is the least of the parts', so a reversed edge never matches) or ``openai:MODEL`` (a grading
   prompt that lists the matches as ``(P<i>, G<j>)`` lines, parsed strictly).
2. Complementer: for each prediction left unmatched, an entailment score s of "the source text
   entails this fact" (the fact written as a sentence). ``nli:NAME_OR_PATH`` (a transformers NLI
   model) or ``openai:MODEL`` or ``none``. tau is the 60th percentile (configurable) of the
   gold facts' own scores against their texts; the prediction earns weight w = s when s > tau.
3. Precision = (matched + Σw) / |predicted|, Recall = (matched + Σw) / (|gold| + Σw),
   SQC = their harmonic mean; per unit and pooled over units (micro) and averaged (macro).

The reference removes matched items from its lists while iterating over them and then divides
by what is left, so its denominators shrink (precision can exceed 1); here |predicted| and |gold|
are the full (deduplicated) counts. Every prediction and gold fact is reported with what it
matched, its scores and why.
"""

from __future__ import annotations

import logging
import re
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

from causalkg.cache import DiskCache
from causalkg.config import Config
from causalkg.errors import ConfigError, SchemaError
from causalkg.jsonl import ReadStats, iter_json_lines, write_json, write_jsonl
from causalkg.layout import Layout
from causalkg.models import stage_device
from causalkg.manifest import build_manifest, write_manifest
from causalkg.registry import Registry, Spec, parse_spec, registry, split_version

log = logging.getLogger(__name__)

ALL_UNITS = "(all)"
DUPLICATE_MODES = ("drop", "count")

# --- facts and units -------------------------------------------------------------------------


@dataclass
class Fact:
    """One fact: ``text`` is the sentence shown to the grader and the NLI model; ``parts`` the
    components compared one by one by the embedding matcher (cause/effect, subject/relation/object)."""

    text: str
    kind: str  # edge | triple | text
    parts: dict[str, str] = field(default_factory=dict)
    raw: Any = None

    @property
    def key(self) -> str:
        """Normalised form for spotting duplicates: case, spacing and final punctuation ignored."""
        return re.sub(r"\s+", " ", self.text.casefold()).strip().rstrip(" .;!")


@dataclass
class Templates:
    edge: str = "{cause} causes {effect}."
    triple: str = "{subject} {relation} {object}."

    def __post_init__(self) -> None:
        for name, t, fields in (("edge", self.edge, ("cause", "effect")),
                                ("triple", self.triple, ("subject", "relation", "object"))):
            try:
                t.format(**{f: "x" for f in fields})
            except (KeyError, IndexError, ValueError) as exc:
                raise ConfigError(f"bad sqc_{name}_template {t!r}: {exc}",
                                  hint=f"use only the fields {', '.join('{' + f + '}' for f in fields)}") from None


def _end_text(value: Any) -> str | None:
    """The text of a cause or effect: a string, or a dict with ``label`` or ``text``."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        for k in ("label", "text"):
            if isinstance(value.get(k), str):
                return value[k]
    return None


def _clean(text: str) -> str:
    return " ".join(text.split())


def _part(text: str) -> str:
    """A fact's part as it goes into a sentence template: no final full stop of its own."""
    return _clean(text).rstrip(" .;")


def fact_from_record(value: Any, templates: Templates) -> Fact:
    """A Fact from a JSON value: a triple ``{"subject", "relation", "object"}`` (or a list of three
    strings, as in the reference's data), a causal edge ``{"cause", "effect"}`` whose ends are
    strings or ``{"label"|"text", ...}`` (the flat KG shape, extraction spans), or ``{"text"}``.
    Raises ValueError saying what is wrong."""
    if isinstance(value, list):
        if len(value) == 3 and all(isinstance(x, str) and x.strip() for x in value):
            value = {"subject": value[0], "relation": value[1], "object": value[2]}
        else:
            raise ValueError("a list fact must be three non-empty strings [subject, relation, object]")
    if not isinstance(value, dict):
        raise ValueError(f"a fact must be a JSON object, got {type(value).__name__}")
    if all(k in value for k in ("subject", "relation", "object")):
        parts = {k: value[k] for k in ("subject", "relation", "object")}
        if not all(isinstance(v, str) and v.strip() for v in parts.values()):
            raise ValueError("subject, relation and object must be non-empty strings")
        parts = {k: _part(v) for k, v in parts.items()}
        return Fact(_clean(templates.triple.format(**parts)), "triple", parts, value)
    if "cause" in value or "effect" in value:
        cause, effect = _end_text(value.get("cause")), _end_text(value.get("effect"))
        if not cause or not cause.strip() or not effect or not effect.strip():
            raise ValueError("a causal edge needs a cause and an effect, each a string or {\"label\"|\"text\": ...}")
        parts = {"cause": _part(cause), "effect": _part(effect)}
        return Fact(_clean(templates.edge.format(**parts)), "edge", parts, value)
    if isinstance(value.get("text"), str) and value["text"].strip():
        return Fact(_clean(value["text"]), "text", {}, value)
    raise ValueError("not a fact: expected subject/relation/object, cause/effect, or text")


@dataclass
class Unit:
    """A document or passage: its source text (None when unknown) and its facts."""

    id: str
    text: str | None
    predicted: list[Fact] = field(default_factory=list)
    gold: list[Fact] = field(default_factory=list)


def _dotted(value: dict, key: str) -> Any:
    node: Any = value
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def _unit_of(value: Any, unit_key: str) -> str | None:
    if not isinstance(value, dict):
        return None
    for key in (unit_key, "doc_id"):
        got = _dotted(value, key)
        if got is not None and not isinstance(got, (dict, list)):
            return str(got)
    return None


def _read_facts(path: str | Path, templates: Templates, unit_key: str, lenient: bool,
                stats: ReadStats) -> list[tuple[str, Fact]]:
    out: list[tuple[str, Fact]] = []
    with_unit = without_unit = 0
    for lineno, value in iter_json_lines(path, lenient=lenient, stats=stats):
        try:
            fact = fact_from_record(value, templates)
        except ValueError as exc:
            msg = f"{path}:{lineno}: {exc}"
            if not lenient:
                raise SchemaError(msg) from None
            stats.note_skip(msg)
            continue
        unit = _unit_of(value, unit_key)
        if unit is None:
            without_unit += 1
        else:
            with_unit += 1
        if with_unit and without_unit:
            raise SchemaError(f"{path}:{lineno}: some facts name their unit ({unit_key} or doc_id) and some do not",
                              hint="give every fact a unit, or none (the whole file is then one unit)")
        out.append((unit if unit is not None else ALL_UNITS, fact))
        stats.records += 1
    return out


def _read_texts(path: str | Path, lenient: bool, stats: ReadStats) -> dict[str, str]:
    texts: dict[str, str] = {}
    for lineno, value in iter_json_lines(path, lenient=lenient, stats=stats):
        uid = value.get("id", value.get("unit")) if isinstance(value, dict) else None
        text = value.get("text") if isinstance(value, dict) else None
        if uid is None or not isinstance(text, str):
            msg = f"{path}:{lineno}: a text line needs \"id\" (or \"unit\") and \"text\""
            if not lenient:
                raise SchemaError(msg)
            stats.note_skip(msg)
            continue
        texts[str(uid)] = text
        stats.records += 1
    return texts


def read_units(
    *,
    units: str | Path | None = None,
    predicted: str | Path | None = None,
    gold: str | Path | None = None,
    texts: str | Path | None = None,
    templates: Templates | None = None,
    unit_key: str = "unit",
    lenient: bool = False,
) -> tuple[list[Unit], list[ReadStats]]:
    """The units to grade, from one ``units`` JSONL (``{"unit", "text", "predicted": [...], "gold": [...]}``
    per line) or from ``predicted`` and ``gold`` fact files (each fact naming its unit by
    ``unit_key``, else ``doc_id``) with an optional ``texts`` JSONL (``{"id", "text"}``: corpus
    documents qualify). Returns the units in first-seen order and the readers' stats.
    Raises ConfigError on a bad combination of inputs, SchemaError on bad lines."""
    templates = templates or Templates()
    all_stats: list[ReadStats] = []
    if units is not None:
        if predicted is not None or gold is not None:
            raise ConfigError("give either --units or --predicted with --gold, not both")
        st = ReadStats()
        all_stats.append(st)
        out: list[Unit] = []
        seen: set[str] = set()
        for lineno, value in iter_json_lines(units, lenient=lenient, stats=st):
            try:
                if not isinstance(value, dict):
                    raise ValueError("a unit line must be a JSON object")
                uid = value.get("unit", value.get("id"))
                if uid is None:
                    raise ValueError("a unit needs \"unit\" (or \"id\")")
                if str(uid) in seen:
                    raise ValueError(f"unit {uid!r} appears twice")
                text = value.get("text")
                if text is not None and not isinstance(text, str):
                    raise ValueError("\"text\" must be a string")
                lists = {}
                for side in ("predicted", "gold"):
                    items = value.get(side, [])
                    if not isinstance(items, list):
                        raise ValueError(f"\"{side}\" must be a list of facts")
                    try:
                        lists[side] = [fact_from_record(x, templates) for x in items]
                    except ValueError as exc:
                        raise ValueError(f"{side}: {exc}") from None
            except ValueError as exc:
                msg = f"{units}:{lineno}: {exc}"
                if not lenient:
                    raise SchemaError(msg) from None
                st.note_skip(msg)
                continue
            seen.add(str(uid))
            out.append(Unit(str(uid), text, lists["predicted"], lists["gold"]))
            st.records += 1
        return out, all_stats
    if predicted is None or gold is None:
        raise ConfigError("SQC needs --units FILE, or --predicted FILE and --gold FILE")
    sp, sg = ReadStats(), ReadStats()
    all_stats += [sp, sg]
    preds = _read_facts(predicted, templates, unit_key, lenient, sp)
    golds = _read_facts(gold, templates, unit_key, lenient, sg)
    text_map: dict[str, str] = {}
    if texts is not None:
        stt = ReadStats()
        all_stats.append(stt)
        text_map = _read_texts(texts, lenient, stt)
    by_id: dict[str, Unit] = {}
    for side, items in (("predicted", preds), ("gold", golds)):
        for uid, fact in items:
            unit = by_id.setdefault(uid, Unit(uid, text_map.get(uid)))
            getattr(unit, side).append(fact)
    if texts is not None and by_id and not any(u.text for u in by_id.values()):
        raise SchemaError(f"{texts}: no text for any unit (ids such as {next(iter(by_id))!r} not found)")
    return list(by_id.values()), all_stats


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


# --- scoring ---------------------------------------------------------------------------------


def _ratio(num: float, den: float) -> float | None:
    return num / den if den > 0 else None


def _harmonic(p: float | None, r: float | None) -> float | None:
    if p is None or r is None:
        return None
    return 2 * p * r / (p + r) if p + r > 0 else 0.0


def sqc_figures(matched: int, weight: float, n_pred: int, n_gold: int) -> dict[str, float | None]:
    """Precision = (m + Σw)/|P|, Recall = (m + Σw)/(|G| + Σw), SQC = harmonic mean; None where 0/0."""
    credit = matched + weight
    p = _ratio(credit, n_pred)
    r = _ratio(credit, n_gold + weight)
    return {"precision": p, "recall": r, "sqc": _harmonic(p, r)}


@dataclass
class SQCResult:
    units: list[dict[str, Any]]  # the per-unit report
    summary: dict[str, Any]
    out: Path | None = None
    plan: dict[str, Any] | None = None  # set by a dry run (nothing was scored)

    def rows(self) -> list[dict[str, Any]]:
        return [self.summary["micro"], self.summary["macro"]]


def _dedupe(facts: list[Fact]) -> tuple[list[Fact], dict[int, int]]:
    """Unique facts and, for each repeated one, the index (in the original list) of its first copy."""
    first: dict[str, int] = {}
    unique: list[Fact] = []
    dup_of: dict[int, int] = {}
    for i, f in enumerate(facts):
        if f.key in first:
            dup_of[i] = first[f.key]
        else:
            first[f.key] = i
            unique.append(f)
    return unique, dup_of


def score_units(
    units: Sequence[Unit],
    matcher: Any,
    complementer: Any | None,
    *,
    tau_percentile: float = 60.0,
    tau: float | None = None,
    duplicates: str = "drop",
) -> SQCResult:
    """Grade every unit (see the module docstring) and pool the figures. ``complementer`` None
    means no complementing (Σw = 0). ``tau`` fixes the threshold; otherwise it is the
    ``tau_percentile``-th percentile of the gold facts' entailment scores (ConfigError when no
    gold fact has a source text to be scored against)."""
    import numpy as np

    if duplicates not in DUPLICATE_MODES:
        raise ConfigError(f"sqc_duplicates must be one of {', '.join(DUPLICATE_MODES)}, got {duplicates!r}")
    if not 0.0 <= tau_percentile <= 100.0:
        raise ConfigError(f"sqc_tau_percentile must be in [0, 100], got {tau_percentile}")
    prepared = []
    for u in units:
        preds, pdup = _dedupe(u.predicted)
        golds, gdup = _dedupe(u.gold)
        prepared.append((u, Unit(u.id, u.text, preds, golds), pdup, gdup))
    matches = matcher.match_units([d for _, d, _, _ in prepared])

    # The complementer: every gold fact (for tau) and every unmatched prediction, in one batch.
    gold_scores: dict[tuple[int, int], tuple[float | None, str | None]] = {}
    pred_scores: dict[tuple[int, int], tuple[float | None, str | None]] = {}
    if complementer is not None:
        asks: list[tuple[str, int, int]] = []
        for k, (_, d, _, _) in enumerate(prepared):
            if not d.text:
                continue
            asks += [("g", k, j) for j in range(len(d.gold))]  # every gold fact counts for tau
            if matches[k].error:
                continue
            matched = {m.predicted for m in matches[k].matches}
            asks += [("p", k, i) for i in range(len(d.predicted)) if i not in matched]
        if asks:
            premises = [prepared[k][1].text for _, k, _ in asks]
            hyps = [(prepared[k][1].gold if s == "g" else prepared[k][1].predicted)[i].text for s, k, i in asks]
            for (side, k, i), score in zip(asks, complementer.scores(premises, hyps)):
                (gold_scores if side == "g" else pred_scores)[(k, i)] = score
    gold_values = [s for s, _ in gold_scores.values() if s is not None]
    if complementer is None:
        tau_value, tau_source = None, "n/a (no complementer)"
    elif tau is not None:
        if not 0.0 <= tau <= 1.0:
            raise ConfigError(f"sqc_tau must be in [0, 1] (or negative for the percentile), got {tau}")
        tau_value, tau_source = float(tau), "fixed"
    elif gold_values:
        tau_value = float(np.percentile(gold_values, tau_percentile))
        tau_source = f"{tau_percentile:g}th percentile of {len(gold_values)} gold entailment scores"
    elif any(u.gold for u in units):
        raise ConfigError(
            "tau cannot be set: no gold fact could be scored against a source text",
            hint="give the units' texts (--texts or \"text\"), a fixed --tau, or --complementer none",
        )
    else:
        tau_value, tau_source = None, "n/a (no gold facts)"

    reports: list[dict[str, Any]] = []
    failures: list[dict[str, str]] = []
    for k, (orig, d, pdup, gdup) in enumerate(prepared):
        um = matches[k]
        if um.error:
            failures.append({"unit": orig.id, "error": um.error})
            reports.append({"unit": orig.id, "error": um.error, "answers": um.answers})
            continue
        by_pred = {m.predicted: m for m in um.matches}
        by_gold = {m.gold: m for m in um.matches}
        pred_items, weight = [], 0.0
        for i, f in enumerate(d.predicted):
            item: dict[str, Any] = {"index": i, "text": f.text, "fact": f.raw}
            if i in by_pred:
                m = by_pred[i]
                item.update(status="matched", gold=m.gold, score=m.score, weight=1.0, why=m.why)
            else:
                s, err = pred_scores.get((k, i), (None, None))
                item["entailment"] = s
                why = um.unmatched_why.get(i, "unmatched")
                if complementer is None:
                    item.update(status="unmatched", weight=0.0, why=why)
                elif not d.text:
                    item.update(status="unscored", weight=0.0, why=f"{why}; no source text for the complementer")
                elif s is None:
                    item.update(status="unscored", weight=0.0, why=f"{why}; complementer failed: {err}")
                elif tau_value is not None and s > tau_value:
                    weight += s
                    item.update(status="credited", weight=s, why=f"{why}; entailed by the text: {s:.3f} > tau {tau_value:.3f}")
                else:
                    item.update(status="unsupported", weight=0.0,
                                why=f"{why}; entailment {s:.3f} <= tau {tau_value:.3f}" if tau_value is not None else why)
            pred_items.append(item)
        unique_index = {f.key: i for i, f in enumerate(d.predicted)}
        dup_items = [{"text": orig.predicted[i].text, "status": "duplicate",
                      "duplicate_of": unique_index[orig.predicted[i].key], "weight": 0.0} for i in sorted(pdup)]
        gold_items = []
        for j, g in enumerate(d.gold):
            s, _ = gold_scores.get((k, j), (None, None))
            m = by_gold.get(j)
            gold_items.append({"index": j, "text": g.text, "fact": g.raw, "matched_by": m.predicted if m else None,
                               "entailment": s})
        n_pred = len(d.predicted) + (len(pdup) if duplicates == "count" else 0)
        figures = sqc_figures(len(um.matches), weight, n_pred, len(d.gold))
        reports.append({
            "unit": orig.id, "predicted": pred_items, "duplicates": dup_items, "gold": gold_items,
            "duplicate_gold": len(gdup),
            "counts": {"predicted": n_pred, "gold": len(d.gold), "matched": len(um.matches),
                       "credited": sum(1 for x in pred_items if x["status"] == "credited"), "weight": weight,
                       "duplicates": len(pdup)},
            **figures,
            "answers": um.answers or None,
        })

    scored = [r for r in reports if "error" not in r]
    tot = {k: sum(r["counts"][k] for r in scored) for k in ("predicted", "gold", "matched", "credited", "weight", "duplicates")}
    micro = {"scope": "micro", "units": len(scored), **tot, **sqc_figures(tot["matched"], tot["weight"], tot["predicted"], tot["gold"])}
    macro: dict[str, Any] = {"scope": "macro", "units": len(scored), **{k: None for k in tot}}
    for name in ("precision", "recall", "sqc"):
        vals = [r[name] for r in scored if r[name] is not None]
        macro[name] = statistics.fmean(vals) if vals else None
        macro[f"{name}_units"] = len(vals)
    summary = {
        "micro": micro, "macro": macro, "tau": tau_value, "tau_source": tau_source, "tau_percentile": tau_percentile,
        "gold_entailment": ({"n": len(gold_values), "min": min(gold_values), "median": statistics.median(gold_values),
                             "max": max(gold_values)} if gold_values else None),
        "matcher": matcher.spec, "complementer": complementer.spec if complementer is not None else "none",
        "duplicates": duplicates, "failed_units": failures,
    }
    return SQCResult(reports, summary)


# --- the command -----------------------------------------------------------------------------


MATCHERS = registry("sqc-matcher")  # causalkg.registry.CATALOG: embedding.v1, openai.v1
COMPLEMENTERS = registry("sqc-complementer")  # nli.v1, openai.v1


def _spec(text: str, reg: Registry, default_backend: str) -> Spec:
    """``text`` as a spec; a backend named alone (``openai``, ``embedding.v1``) takes its default model."""
    t = text.strip()
    if ":" not in t and split_version(t)[0] in reg.bases():
        return Spec(t, "")
    return parse_spec(t, default_backend=default_backend)


def embedding_matcher(arg: str, *, cfg: Config, threshold: float | None = None) -> "EmbeddingMatcher":
    """The ``embedding`` matcher: MiniLM (or ``arg``) cosine, one-to-one (eval.sqc.embedding_threshold)."""
    ev = cfg["eval"]["sqc"]
    return EmbeddingMatcher(arg or "all-MiniLM-L6-v2",
                            threshold=float(ev["embedding_threshold"] if threshold is None else threshold),
                            device=stage_device(cfg, "eval.sqc.device"))


def llm_matcher(arg: str, *, cfg: Config, threshold: float | None = None) -> "LLMMatcher":
    """The ``openai`` matcher: a grading prompt to ``arg`` (default llm.model)."""
    from causalkg.llm import ChatClient

    return LLMMatcher(ChatClient.from_config(cfg, model=arg or None), max_attempts=int(cfg["eval"]["sqc"]["max_attempts"]))


def nli_complementer(arg: str, *, cfg: Config) -> "NLIComplementer":
    """The ``nli`` complementer: a transformers NLI model (``arg``: a name or a path)."""
    if not arg:
        raise ConfigError("nli: names no model", hint="e.g. nli:microsoft/deberta-large-mnli or nli:PATH")
    ev = cfg["eval"]["sqc"]
    return NLIComplementer(arg, device=stage_device(cfg, "eval.sqc.device"), batch_size=int(ev["batch_size"]),
                           cache=DiskCache(cfg.path("paths.cache") / "eval-models.sqlite"))


def llm_complementer(arg: str, *, cfg: Config) -> "LLMComplementer":
    """The ``openai`` complementer: asks ``arg`` (default llm.model) how likely the text entails a fact."""
    from causalkg.llm import ChatClient

    return LLMComplementer(ChatClient.from_config(cfg, model=arg or None),
                           max_attempts=int(cfg["eval"]["sqc"]["max_attempts"]))


def build_matcher(cfg: Config, spec_text: str, threshold: float | None = None) -> Any:
    """The matcher named by ``spec_text`` (``embedding:ENCODER``, ``openai:MODEL``), from ``MATCHERS``."""
    return MATCHERS.create(_spec(spec_text, MATCHERS, "embedding"), cfg=cfg, threshold=threshold)


def build_complementer(cfg: Config, spec_text: str) -> Any | None:
    """The complementer named by ``spec_text`` (``nli:NAME_OR_PATH``, ``openai:MODEL``), or None for ``none``."""
    if spec_text.strip().lower() in ("none", ""):
        return None
    return COMPLEMENTERS.create(_spec(spec_text, COMPLEMENTERS, "nli"), cfg=cfg)


def sqc(
    cfg: Config,
    *,
    units: str | Path | None = None,
    predicted: str | Path | None = None,
    gold: str | Path | None = None,
    texts: str | Path | None = None,
    matcher: str | None = None,
    complementer: str | None = None,
    threshold: float | None = None,
    tau: float | None = None,
    tau_percentile: float | None = None,
    duplicates: str | None = None,
    out: str | Path | None = None,
    lenient: bool = False,
    dry_run: bool = False,
) -> SQCResult:
    """Score predicted facts against gold facts with SQC (``causalkg eval sqc``).

    Inputs: ``units`` (one JSONL line per unit with text, predicted and gold facts) or
    ``predicted`` + ``gold`` fact files and optional ``texts`` (see ``read_units``). The other
    arguments default to the ``eval.sqc.*`` keys (``tau`` < 0 there means: use the percentile).
    Writes ``units.jsonl`` (the per-item report), ``summary.json`` and ``manifest.json`` under
    ``out`` (default ``<paths.data>/eval/sqc/<input name>/``). Returns an SQCResult (with
    ``dry_run``, one whose ``plan`` holds what would run). Raises ConfigError, SchemaError, SourceError, ModelError.
    """
    ev = cfg["eval"]
    matcher_s = matcher or ev["sqc"]["matcher"]
    complementer_s = complementer if complementer is not None else ev["sqc"]["complementer"]
    tau_v = tau if tau is not None else (ev["sqc"]["tau"] if ev["sqc"]["tau"] >= 0 else None)
    pct = float(ev["sqc"]["tau_percentile"] if tau_percentile is None else tau_percentile)
    dup = duplicates or ev["sqc"]["duplicates"]
    templates = Templates(ev["sqc"]["edge_template"], ev["sqc"]["triple_template"])
    started = time.time()
    unit_list, stats = read_units(units=units, predicted=predicted, gold=gold, texts=texts, templates=templates,
                                  unit_key=ev["sqc"]["unit_key"], lenient=lenient)
    name = Path(units or predicted).stem  # type: ignore[arg-type]
    out = Path(out) if out is not None else Layout.from_config(cfg).eval_out("sqc") / re.sub(r"[^A-Za-z0-9._-]+", "_", name)
    plan = {"units": len(unit_list), "predicted": sum(len(u.predicted) for u in unit_list),
            "gold": sum(len(u.gold) for u in unit_list), "with_text": sum(1 for u in unit_list if u.text),
            "matcher": matcher_s, "complementer": complementer_s or "none", "tau": tau_v, "tau_percentile": pct,
            "duplicates": dup, "out": str(out)}
    if dry_run:
        return SQCResult([], {}, plan=plan)
    m = build_matcher(cfg, matcher_s, threshold)
    c = build_complementer(cfg, complementer_s)
    result = score_units(unit_list, m, c, tau_percentile=pct, tau=tau_v, duplicates=dup)
    result.out = out
    usage = {}
    for role, part in (("matcher", m), ("complementer", c)):
        client = getattr(part, "client", None)
        if client is not None:
            usage[role] = {"model": part.spec, **client.usage.as_dict()}
    result.summary["usage"] = usage or None
    write_jsonl(out / "units.jsonl", result.units)
    write_json(out / "summary.json", result.summary)
    inputs = {k: v for k, v in (("units", units), ("predicted", predicted), ("gold", gold), ("texts", texts)) if v is not None}
    notes = [s.summary() for s in stats if s.skipped]
    if result.summary["failed_units"]:
        notes.append(f"{len(result.summary['failed_units'])} unit(s) could not be graded (summary.json lists them)")
    write_manifest(out, build_manifest(
        "eval.sqc", cfg, inputs=inputs, outputs={"units": "units.jsonl", "summary": "summary.json"},
        counts={"units": len(unit_list), "scored_units": result.summary["micro"]["units"],
                "predicted": plan["predicted"], "gold": plan["gold"]},
        timings={"total": time.time() - started}, models={"matcher": m.spec, "complementer": c.spec if c else "none"},
        notes=notes, extra={"figures": {"micro": result.summary["micro"], "macro": result.summary["macro"]},
                            "tau": result.summary["tau"]},
    ))
    return result


def iter_report_lines(result: SQCResult) -> Iterable[str]:
    """Readable lines of the per-item report (for ``--explain``)."""
    for u in result.units:
        if "error" in u:
            yield f"[{u['unit']}] not graded: {u['error']}"
            continue
        fig = ", ".join(f"{k} {u[k]:.3f}" if u[k] is not None else f"{k} n/a" for k in ("precision", "recall", "sqc"))
        yield f"[{u['unit']}] {fig}"
        for p in u["predicted"]:
            target = f" -> G{p['gold'] + 1}" if p.get("gold") is not None else ""
            yield f"  P{p['index'] + 1} {p['status']}{target}: {p['text']} ({p['why']})"
        for dpl in u["duplicates"]:
            yield f"  duplicate of P{dpl['duplicate_of'] + 1}: {dpl['text']}"
        for g in u["gold"]:
            by = f"P{g['matched_by'] + 1}" if g["matched_by"] is not None else "nothing"
            ent = f", entailment {g['entailment']:.3f}" if g["entailment"] is not None else ""
            yield f"  G{g['index'] + 1} matched by {by}{ent}: {g['text']}"
