"""Elo ratings of annotations from pairwise judgements, and an LLM judge that runs the tournament.

Judgements are JSONL, one comparison per line, applied in file order (Elo depends on the order,
so the order is part of the input)::

    {"unit": "p1", "a": "alice", "b": "llama3", "winner": "alice"}
    {"unit": "p1", "a": "bob", "b": "alice", "winner": "tie"}      # or "tie": true

Per unit every annotator starts at ``start`` (1000); after a comparison of A and B with score
S_A (1 win, 0 loss, 0.5 tie) the expected score is E_A = 1 / (1 + 10^((R_B - R_A) / 400)) and
R_A += K (S_A - E_A), R_B += K ((1 - S_A) - (1 - E_A)), K = 32. Ties are skipped (the
soft-measures study) or scored 0.5 (standard Elo). A unit's winner is its highest-rated annotator
(ties broken by first appearance). ``run_tournament`` asks an LLM (``causalkg.core.llm.ChatClient``) to
pick the better of two graphs of the same passage by the study's rater guidelines
(``prompts/elo_judge.txt``) and writes the judgements it made. Part of the evaluation stage;
``causalkg eval elo`` wraps ``elo``.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import random
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from string import Template
from typing import Any, Iterable, Sequence

from causalkg.core.config import Config
from causalkg.core.errors import ConfigError, SourceError
from causalkg.core.jsonl import ReadStats, read_jsonl, write_json, write_jsonl
from causalkg.core.layout import Layout
from causalkg.core.manifest import build_manifest, write_manifest
from causalkg.evaluation.graph.graphs import Graph, read_graphs

log = logging.getLogger(__name__)

TIE = "tie"
PROMPTS = Path(__file__).with_name("prompts")


@dataclass(frozen=True)
class Judgement:
    unit: str
    a: str
    b: str
    winner: str  # a's name, b's name, or "tie"
    reason: str | None = None

    def score_a(self) -> float:
        return 0.5 if self.winner == TIE else (1.0 if self.winner == self.a else 0.0)


def _check_judgement(rec: Any) -> str | None:
    if not isinstance(rec, dict):
        return "expected a JSON object"
    for k in ("unit", "a", "b"):
        if rec.get(k) is None or str(rec.get(k)).strip() == "":
            return f"missing {k!r}"
    if str(rec["a"]) == str(rec["b"]):
        return f"an annotator cannot meet itself ({rec['a']!r})"
    tie = rec.get("tie") is True or str(rec.get("winner", "")).strip().lower() == TIE
    if not tie and str(rec.get("winner")) not in (str(rec["a"]), str(rec["b"])):
        return f"winner must be {rec['a']!r}, {rec['b']!r} or 'tie', got {rec.get('winner')!r}"
    return None


def read_judgements(path: str | os.PathLike, *, lenient: bool = False, stats: ReadStats | None = None) -> list[Judgement]:
    """The judgements of a JSONL file, in file order. Raises SchemaError ``path:line: ...``."""
    out = []
    for rec in read_jsonl(path, lenient=lenient, stats=stats, check=_check_judgement):
        tie = rec.get("tie") is True or str(rec.get("winner", "")).strip().lower() == TIE
        out.append(Judgement(str(rec["unit"]), str(rec["a"]), str(rec["b"]), TIE if tie else str(rec["winner"]),
                             rec.get("reason")))
    return out


@dataclass
class PlayerRating:
    unit: str
    player: str
    rating: float
    games: int = 0
    wins: int = 0
    losses: int = 0
    ties: int = 0
    rank: int = 0


@dataclass
class UnitRatings:
    unit: str
    players: dict[str, PlayerRating] = field(default_factory=dict)

    @property
    def winner(self) -> str | None:
        # max() keeps the first of equal ratings: first appearance breaks ties, as the study's
        # max(dict, key=...) did over its fixed annotator order.
        if not self.players:
            return None
        return max(self.players.values(), key=lambda p: p.rating).player

    def ratings(self) -> dict[str, float]:
        return {name: p.rating for name, p in self.players.items()}


def expected_score(ra: float, rb: float) -> float:
    """Elo's expected score of A against B."""
    return 1.0 / (1.0 + 10.0 ** ((rb - ra) / 400.0))


def elo_ratings(
    judgements: Iterable[Judgement],
    *,
    k: float = 32.0,
    start: float = 1000.0,
    ties: str = "skip",
    players: Sequence[str] | None = None,
) -> dict[str, UnitRatings]:
    """Per-unit Elo ratings from judgements applied in order.

    ``ties``: ``skip`` (no update, counted as a tie) or ``half`` (0.5 each). ``players``: names
    that start every unit at ``start`` even if they never play there. Returns units in order of
    first appearance.
    """
    if ties not in ("skip", "half"):
        raise ConfigError(f"unknown tie rule {ties!r}", hint="use skip or half")
    units: dict[str, UnitRatings] = {}
    for j in judgements:
        u = units.get(j.unit)
        if u is None:
            u = units[j.unit] = UnitRatings(j.unit)
            for name in players or ():
                u.players[name] = PlayerRating(j.unit, name, start)
        pa = u.players.setdefault(j.a, PlayerRating(j.unit, j.a, start))
        pb = u.players.setdefault(j.b, PlayerRating(j.unit, j.b, start))
        pa.games += 1
        pb.games += 1
        if j.winner == TIE:
            pa.ties += 1
            pb.ties += 1
            if ties == "skip":
                continue
        elif j.winner == j.a:
            pa.wins += 1
            pb.losses += 1
        else:
            pb.wins += 1
            pa.losses += 1
        sa = j.score_a()
        ea = expected_score(pa.rating, pb.rating)
        eb = 1.0 - ea
        pa.rating, pb.rating = pa.rating + k * (sa - ea), pb.rating + k * ((1.0 - sa) - eb)
    for u in units.values():
        order = sorted(u.players.values(), key=lambda p: -p.rating)
        for rank, p in enumerate(order, 1):
            p.rank = rank
    return units


def read_ratings(path: str | os.PathLike) -> dict[str, dict[str, float]]:
    """Ratings written by ``eval elo`` (``ratings.jsonl``: unit, player, rating) -> {unit: {player: rating}}."""

    def check(rec: Any) -> str | None:
        if not isinstance(rec, dict) or not {"unit", "player", "rating"} <= set(rec):
            return "expected an object with unit, player and rating"
        if not isinstance(rec["rating"], (int, float)):
            return "rating must be a number"
        return None

    out: dict[str, dict[str, float]] = {}
    for rec in read_jsonl(path, check=check):
        out.setdefault(str(rec["unit"]), {})[str(rec["player"])] = float(rec["rating"])
    return out


# -- the LLM tournament ----------------------------------------------------------------------


def load_prompt(name: str = "elo_judge") -> Template:
    return Template((PROMPTS / f"{name}.txt").read_text(encoding="utf-8"))


def graph_tuples(g: Graph) -> list[dict[str, Any]]:
    """A graph as the judge sees it: one object per edge, labels and attributes only."""
    out = []
    for e in g.edges:
        item: dict[str, Any] = {"cause": g.label(e.source), "effect": g.label(e.target)}
        if e.type != "directional":
            item["type"] = e.type
        if e.direction is not None:
            item["direction"] = e.direction
        out.append(item)
    return out


def judge_prompt(template: Template, text: str, graph_a: Graph, graph_b: Graph) -> str:
    """Fill the judge prompt. The passage and graphs enter only as JSON strings (json.dumps),
    so no annotation can break the prompt's structure."""
    return template.substitute(
        passage=json.dumps(text or "", ensure_ascii=False),
        graph_a=json.dumps(graph_tuples(graph_a), ensure_ascii=False, indent=1),
        graph_b=json.dumps(graph_tuples(graph_b), ensure_ascii=False, indent=1),
    )


_ANSWER_RE = re.compile(r'"winner"\s*:\s*"\s*(A|B|tie)\s*"', re.IGNORECASE)


def parse_verdict(text: str) -> tuple[str | None, str | None]:
    """The judge's answer -> ("A" | "B" | "tie" | None, reason). Accepts the JSON it was asked
    for, or a bare A / B / tie."""
    reason = None
    try:
        obj = json.loads(text.strip().removeprefix("```json").removeprefix("```").removesuffix("```"))
        if isinstance(obj, dict):
            w = str(obj.get("winner", "")).strip()
            reason = obj.get("reason")
            if w.upper() in ("A", "B"):
                return w.upper(), reason
            if w.lower() == TIE:
                return TIE, reason
    except (json.JSONDecodeError, ValueError):
        pass
    m = _ANSWER_RE.search(text)
    if m:
        w = m.group(1)
        return (TIE if w.lower() == TIE else w.upper()), reason
    bare = text.strip().strip(".").strip()
    if bare.upper() in ("A", "B"):
        return bare.upper(), None
    if bare.lower() == TIE:
        return TIE, None
    return None, None


def tournament_schedule(
    annotations: dict[str, dict[str, Graph]], *, rounds: int = 1, seed: int = 13
) -> list[tuple[str, str, str, bool]]:
    """(unit, a, b, swap) for every pair of annotators of every unit, ``rounds`` times, in a
    seeded shuffled order per unit; ``swap`` shows b's graph first (against position bias)."""
    rng = random.Random(seed)
    names = list(annotations)
    units: dict[str, None] = {}
    for name in names:
        for uid in annotations[name]:
            units[uid] = None
    schedule = []
    for uid in units:
        present = [n for n in names if uid in annotations[n]]
        pairs = list(itertools.combinations(present, 2)) * max(1, rounds)
        rng.shuffle(pairs)
        for a, b in pairs:
            schedule.append((uid, a, b, rng.random() < 0.5))
    return schedule


def run_tournament(
    annotations: dict[str, dict[str, Graph]],
    client: Any,
    *,
    rounds: int = 1,
    seed: int = 13,
    template: Template | None = None,
    max_tokens: int = 200,
) -> tuple[list[Judgement], dict[str, int]]:
    """Let an LLM judge every pair of annotations of every unit. Returns the judgements (in the
    scheduled order) and counts (``asked``, ``unreadable``: answers with no A/B/tie, recorded as
    ties and said in the log). ``client`` is a ``causalkg.core.llm.ChatClient``; requests are sent
    concurrently and cached by it."""
    from causalkg.core.llm import ChatRequest

    template = template or load_prompt()
    schedule = tournament_schedule(annotations, rounds=rounds, seed=seed)
    requests = []
    for i, (uid, a, b, swap) in enumerate(schedule):
        ga, gb = annotations[a][uid], annotations[b][uid]
        text = ga.text or gb.text or ""
        first, second = (gb, ga) if swap else (ga, gb)
        # try_index makes the same pair asked again in a later round a distinct request.
        round_no = sum(1 for s in schedule[:i] if s[:3] == (uid, a, b))
        requests.append(ChatRequest.of(judge_prompt(template, text, first, second), temperature=0.0,
                                       max_tokens=max_tokens, try_index=round_no))
    answers = client.chat_many(requests, desc="Elo tournament", return_exceptions=True)
    judgements = []
    unreadable = 0
    for (uid, a, b, swap), ans in zip(schedule, answers):
        if isinstance(ans, Exception):
            raise ans if isinstance(ans, SourceError) else SourceError(f"judge failed on unit {uid}: {ans}")
        verdict, reason = parse_verdict(ans.text)
        if verdict is None:
            unreadable += 1
            log.warning("unit %s, %s vs %s: unreadable judge answer %r; recorded as a tie", uid, a, b, ans.text[:80])
            verdict = TIE
        if verdict == TIE:
            winner = TIE
        else:
            shown_first = b if swap else a
            shown_second = a if swap else b
            winner = shown_first if verdict == "A" else shown_second
        judgements.append(Judgement(uid, a, b, winner, reason if isinstance(reason, str) else None))
    return judgements, {"asked": len(schedule), "unreadable": unreadable}


# -- the command -----------------------------------------------------------------------------


@dataclass
class EloRun:
    units: dict[str, UnitRatings]
    judgements: list[Judgement]
    counts: dict[str, Any]
    out_dir: Path | None = None

    def rows(self) -> list[dict[str, Any]]:
        rows = []
        for u in self.units.values():
            for p in sorted(u.players.values(), key=lambda p: p.rank):
                rows.append({**asdict(p), "winner": p.player == u.winner})
        return rows


def elo(
    judgements: str | os.PathLike | None = None,
    *,
    graphs: dict[str, str | os.PathLike] | None = None,
    judge: str | None = None,
    k: float | None = None,
    start: float | None = None,
    ties: str | None = None,
    rounds: int | None = None,
    seed: int | None = None,
    out_dir: str | os.PathLike | None = None,
    cfg: Config | None = None,
    client: Any = None,
) -> EloRun:
    """Elo ratings per unit (``causalkg eval elo``).

    Either ``judgements`` (a JSONL of comparisons) or ``graphs`` ({annotator: graph file}) with
    an LLM ``judge`` (``openai:MODEL``; default ``eval.elo.judge`` or ``llm.model``) that runs the
    tournament first. Writes ``ratings.jsonl``, ``winners.json`` (and ``judgements.jsonl`` after
    a tournament) and ``manifest.json`` under ``out_dir`` (default ``<paths.data>/eval/elo``; an
    empty string writes nothing). Raises ConfigError on bad options, SchemaError on bad input,
    SourceError when the judge's server fails.
    """
    from causalkg.core.config import load_config

    cfg = cfg or load_config(search_cwd=False)
    ev = cfg["eval"]
    k = float(ev["elo"]["k"] if k is None else k)
    start = float(ev["elo"]["start"] if start is None else start)
    ties = ties or ev["elo"]["ties"]
    counts: dict[str, Any] = {}
    inputs: dict[str, Any] = {}
    if (judgements is None) == (not graphs):
        raise ConfigError("give either a judgements file or --graphs NAME=FILE ... for an LLM tournament")
    made = False
    if judgements is not None:
        js = read_judgements(judgements)
        inputs["judgements"] = judgements
    else:
        assert graphs is not None
        if len(graphs) < 2:
            raise ConfigError("a tournament needs at least two annotators", hint="--graphs A=a.jsonl --graphs B=b.jsonl")
        annotations = {name: read_graphs(path) for name, path in graphs.items()}
        inputs.update({f"graphs.{n}": p for n, p in graphs.items()})
        if client is None:
            client = make_judge_client(cfg, judge)
        js, tcounts = run_tournament(
            annotations, client, rounds=int(ev["elo"]["rounds"] if rounds is None else rounds),
            seed=int(ev["elo"]["seed"] if seed is None else seed),
        )
        counts.update(tcounts)
        counts["llm_usage"] = client.usage.as_dict()
        made = True
    units = elo_ratings(js, k=k, start=start, ties=ties)
    counts.update(judgements=len(js), units=len(units), ties=sum(1 for j in js if j.winner == TIE))
    run = EloRun(units, js, counts)
    if out_dir is None:
        out_dir = Layout.from_config(cfg).eval_out("elo")
    if out_dir:
        out = Path(out_dir)
        write_jsonl(out / "ratings.jsonl", run.rows())
        write_json(out / "winners.json", {u.unit: u.winner for u in units.values()})
        outputs = {"ratings": "ratings.jsonl", "winners": "winners.json"}
        if made:
            write_jsonl(out / "judgements.jsonl", ({k2: v for k2, v in asdict(j).items() if v is not None} for j in js))
            outputs["judgements"] = "judgements.jsonl"
        write_manifest(out, build_manifest("eval.elo", cfg, inputs=inputs, outputs=outputs, counts=counts,
                                           extra={"options": {"k": k, "start": start, "ties": ties}}))
        run.out_dir = out
    return run


def make_judge_client(cfg: Config, judge: str | None = None) -> Any:
    """A ChatClient for the tournament judge: ``openai:MODEL`` (or the ``[llm]`` model)."""
    from causalkg.core.llm import ChatClient
    from causalkg.registry import parse_spec

    spec_text = judge or cfg["eval"]["elo"]["judge"] or f"openai:{cfg['llm']['model']}"
    spec = parse_spec(spec_text, default_backend="openai")
    if spec.backend != "openai":
        raise ConfigError(f"unknown Elo judge backend {spec.backend!r}", hint="use openai:MODEL (any OpenAI-compatible server, llm.base_url)")
    return ChatClient.from_config(cfg, model=spec.arg or cfg["llm"]["model"])


__all__ = ["Judgement", "read_judgements", "elo_ratings", "expected_score", "run_tournament", "elo", "read_ratings"]
