"""Causal epistemic consistency, the protocol: the intended order of the ten intermediates, the
seeded presentation order, generating the intermediates and ranking them with an LLM (prompts), or
ranking them by the token probability of the effect with a local causal LM.
"""

from __future__ import annotations

import functools
import random
import statistics
import string
from dataclasses import dataclass, field
from typing import Any, Sequence

from causalkg.core.errors import ConfigError
from causalkg.evaluation.judging.consistency_metrics import COMBINED, INTENDED_LABELS, LETTERS, N_ITEMS, pair_metrics, ranks_from_order
from causalkg.evaluation.judging.consistency_input import _clean, CausalPair
from causalkg.evaluation.judging.consistency_parse import parse_ranking, parse_seed, parse_variants


# --- the LLM protocol ------------------------------------------------------------------------


def intended_order(defeater: str, supporter: str, d: dict[str, str], s: dict[str, str]) -> list[str]:
    """The ten intermediates in intended order (SD2 ... SS2) from the originals and their versions."""
    return [d["much_stronger"], d["slightly_stronger"], defeater, d["slightly_weaker"], d["much_weaker"],
            s["much_weaker"], s["slightly_weaker"], supporter, s["slightly_stronger"], s["much_stronger"]]


def presentation_order(pair_id: str, seed: int) -> list[int]:
    """The shuffled order the ten intermediates are shown in for ranking (``perm[k]`` = the
    intended index shown under letter k), seeded by the run seed and the pair id."""
    perm = list(range(N_ITEMS))
    random.Random(f"{seed}:{pair_id}").shuffle(perm)
    return perm


def ranking_prompt(template: string.Template, pair: CausalPair, intermediates: Sequence[str], perm: Sequence[int]) -> str:
    from causalkg.evaluation.judging.llm_answers import render

    lines = "\n".join(f"{LETTERS[k]}. {_clean(intermediates[i])}" for k, i in enumerate(perm))
    return render(template, cause=pair.cause, effect=pair.effect, statements=lines)


@dataclass
class PairRun:
    """Everything one pair went through: for the per-pair report."""

    pair: CausalPair
    intermediates: list[str] | None = None
    presentation: list[int] | None = None
    rankings: dict[str, list[int]] = field(default_factory=dict)  # variant -> ranks
    scores: dict[str, list[float]] = field(default_factory=dict)  # tokenprob: variant -> log CS per item
    answers: dict[str, list[str]] = field(default_factory=dict)
    error: str | None = None

    def record(self, igc: str) -> dict[str, Any]:
        p = self.pair
        return {
            "id": p.id, "cause": p.cause, "effect": p.effect, "supporter": p.supporter, "defeater": p.defeater,
            "intermediates": (
                [{"label": INTENDED_LABELS[i], "text": t} for i, t in enumerate(self.intermediates)]
                if self.intermediates else None
            ),
            "presentation": [INTENDED_LABELS[i] for i in self.presentation] if self.presentation else None,
            "rankings": self.rankings,
            "metrics": {k: pair_metrics(v, igc=igc) for k, v in self.rankings.items()},
            "log_cs": self.scores or None,
            "answers": self.answers,
            "error": self.error,
            "meta": p.meta,
        }


def _generate(client: Any, runs: list[PairRun], *, max_attempts: int, temperature: float) -> None:
    """Fill ``run.intermediates`` (seeding supporters/defeaters first where they are missing)."""
    from causalkg.evaluation.judging.llm_answers import ask_parsed, load_prompt, render

    seed_t = load_prompt("consistency_seed")
    need_seed = [r for r in runs if r.error is None and r.intermediates is None and (not r.pair.supporter or not r.pair.defeater)]
    if need_seed:
        prompts = [render(seed_t, cause=r.pair.cause, effect=r.pair.effect) for r in need_seed]
        for r, out in zip(need_seed, ask_parsed(client, prompts, parse_seed, max_attempts=max_attempts,
                                                temperature=temperature, desc="writing supporters and defeaters")):
            r.answers["seed"] = out.answers
            if not out.ok:
                r.error = f"seeding: {out.error}"
                continue
            r.pair.supporter = r.pair.supporter or out.value["supporter"]
            r.pair.defeater = r.pair.defeater or out.value["defeater"]
    todo = [r for r in runs if r.error is None and r.intermediates is None]
    if not todo:
        return
    templates = {"defeater": load_prompt("consistency_generate_defeater"),
                 "supporter": load_prompt("consistency_generate_supporter")}
    prompts, keys = [], []
    for r in todo:
        for role in ("defeater", "supporter"):
            prompts.append(render(templates[role], cause=r.pair.cause, effect=r.pair.effect,
                                  statement=getattr(r.pair, role)))
            keys.append((r, role))
    parsers = [functools.partial(parse_variants, original=getattr(r.pair, role)) for r, role in keys]
    outs = ask_parsed(client, prompts, parsers, max_attempts=max_attempts,
                      temperature=temperature, desc="writing stronger and weaker versions")
    got: dict[int, dict[str, dict[str, str]]] = {}
    for (r, role), out in zip(keys, outs):
        r.answers[f"generate_{role}"] = out.answers
        if not out.ok:
            r.error = r.error or f"generating {role} versions: {out.error}"
            continue
        got.setdefault(id(r), {})[role] = out.value
    for r in todo:
        parts = got.get(id(r), {})
        if r.error is None and len(parts) == 2:
            r.intermediates = intended_order(r.pair.defeater, r.pair.supporter, parts["defeater"], parts["supporter"])
            if len({t.lower() for t in r.intermediates}) != N_ITEMS:
                r.intermediates, r.error = None, "the ten intermediates are not all different"


def _rank_llm(client: Any, runs: list[PairRun], *, seed: int, max_attempts: int, temperature: float) -> None:
    from causalkg.evaluation.judging.llm_answers import ask_parsed, load_prompt

    template = load_prompt("consistency_rank")
    todo = [r for r in runs if r.error is None and r.intermediates]
    for r in todo:
        r.presentation = presentation_order(r.pair.id, seed)
    prompts = [ranking_prompt(template, r.pair, r.intermediates, r.presentation) for r in todo]
    outs = ask_parsed(client, prompts, parse_ranking, max_attempts=max_attempts, temperature=temperature,
                      desc="ranking intermediates")
    for r, out in zip(todo, outs):
        r.answers["rank"] = out.answers
        if not out.ok:
            r.error = f"ranking: {out.error}"
            continue
        order = [r.presentation[LETTERS.index(x)] for x in out.value]  # intended indices, ranked
        r.rankings["llm"] = ranks_from_order(order)


def split_template(template: str) -> tuple[str, list[str]]:
    """Check a token-probability template: it must end with ``{effect}`` and use only the fields
    cause, intermediate, conjunction, effect. Returns (the prefix part, its field names)."""
    fields = [f for _, f, _, _ in string.Formatter().parse(template) if f is not None]
    allowed = {"cause", "intermediate", "conjunction", "effect"}
    if not template.rstrip().endswith("{effect}") or fields.count("effect") != 1 or set(fields) - allowed:
        raise ConfigError(
            f"bad consistency template {template!r}",
            hint="use the fields {cause}, {intermediate}, {conjunction} and end with {effect}",
        )
    return template.rstrip()[: -len("{effect}")].rstrip(), fields


def _clause(text: str) -> str:
    """A statement as a clause inside the template: no final full stop."""
    return _clean(text).rstrip(" .;:!")


def tokenprob_inputs(pair: CausalPair, intermediates: Sequence[str], conjunction: str, template: str) -> list[tuple[str, str]]:
    """(prefix, continuation) for each intermediate: prefix "C and I, {conjunction}", continuation E."""
    prefix_t, _ = split_template(template)
    out = []
    for inter in intermediates:
        prefix = prefix_t.format(cause=_clause(pair.cause), intermediate=_clause(inter), conjunction=conjunction)
        out.append((prefix, _clause(pair.effect)))
    return out


def ranks_from_scores(scores: Sequence[float], tie_seed: str) -> list[int]:
    """Ranks by ascending score (the lowest causal strength gets position 0); exact ties are
    broken at random (seeded), never in favour of the intended order."""
    tie = list(range(len(scores)))
    random.Random(tie_seed).shuffle(tie)
    order = sorted(range(len(scores)), key=lambda i: (scores[i], tie[i]))
    return ranks_from_order(order)


def _rank_tokenprob(scorer: Any, runs: list[PairRun], *, conjunctions: Sequence[str], template: str, seed: int) -> None:
    todo = [r for r in runs if r.error is None and r.intermediates]
    prefixes, conts, where = [], [], []
    for r in todo:
        for conj in conjunctions:
            for k, (p, c) in enumerate(tokenprob_inputs(r.pair, r.intermediates, conj, template)):
                prefixes.append(p)
                conts.append(c)
                where.append((r, conj, k))
    values = scorer.logprobs(prefixes, conts, desc="token probabilities") if prefixes else []
    for (r, conj, k), v in zip(where, values):
        r.scores.setdefault(conj, [0.0] * N_ITEMS)[k] = v
    for r in todo:
        for conj in conjunctions:
            r.rankings[conj] = ranks_from_scores(r.scores[conj], f"{seed}:{r.pair.id}:{conj}")
        # Combined: the mean log CS over the conjunctions (the log of their geometric mean).
        r.scores[COMBINED] = [statistics.fmean(r.scores[c][k] for c in conjunctions) for k in range(N_ITEMS)]
        r.rankings[COMBINED] = ranks_from_scores(r.scores[COMBINED], f"{seed}:{r.pair.id}:{COMBINED}")
