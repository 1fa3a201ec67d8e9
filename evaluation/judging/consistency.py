"""Causal epistemic consistency: does a judge rank its own supporting and defeating intermediates
of a cause-effect pair in the order it generated them?

Stage 4 (evaluation), beside LLM-judged precision: the figures here say how far to trust a judge.
For a cause C, an effect E, one supporter and one defeater, the judge writes two stronger and two
weaker versions of each; with the originals that gives ten intermediates in an *intended order*
of causal strength (position 0 .. 9):

    SD2  SD1  OD  WD1  WD2 | WS2  WS1  OS  SS1  SS2
    strongest defeater ... weakest defeater | weakest supporter ... strongest supporter

(``S``/``W``: stronger/weaker, 2 = two steps, ``O``: the original). The judge then *ranks* all
ten, shuffled, from "makes E least likely" to "makes E most likely". A ranking is stored as
``ranks[i]``: the position (0 = least likely) the judge gave to the intermediate of intended
position ``i``; so positions 0-4 of the intended order are the defeaters, 5-9 the supporters.

Metrics (Cui et al., "causal epistemic consistency"; reference code cui-shaobo/causal-consistency
``metrics/confusion.py`` and ``metrics/clustering.py``, commit d42e8dad48b9cf19b45a16c774fae4088e1f4a6f):
Kendall tau within the defeaters, within the supporters and over all ten; cross-group position
CGP = 1 - #(supporter ranked below a defeater) / 25; intra-group clustering IGC, the mean
silhouette of the polarity sequence under the polarity-change distance (or the reference's
density score, as an option). Means and sample standard deviations over pairs, and a confusion
matrix (intended x ranked position) drawn as a PNG.

Two judges: an LLM behind any OpenAI-compatible endpoint (``openai:MODEL``: it generates and ranks
through prompts) and a local causal LM (``transformers:PATH``: it ranks by the token probability
of E after "C and I, {conjunction} E"; the intermediates come from an LLM generator or from an
earlier run's ``pairs.jsonl``).

Results go to ``data/eval/consistency/<judge>/<run>/`` with a manifest; ``load_judge_consistency``
finds the latest one for a judge, so ``eval precision`` can print it beside the precision.
"""

from __future__ import annotations

import csv
import functools
import json
import logging
import math
import random
import re
import statistics
import string
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

from pydantic import ValidationError

from causalkg.cache import DiskCache
from causalkg.config import Config
from causalkg.contracts import FlatPair
from causalkg.errors import ConfigError, SchemaError
from causalkg.jsonl import ReadStats, format_validation_error, iter_json_lines, write_json, write_jsonl
from causalkg.layout import Layout
from causalkg.models import stage_device
from causalkg.manifest import build_manifest, describe_input, fingerprint, read_manifest, write_manifest
from causalkg.registry import Spec, parse_spec, registry, split_version

log = logging.getLogger(__name__)

N_ITEMS = 10
INTENDED_LABELS = ("SD2", "SD1", "OD", "WD1", "WD2", "WS2", "WS1", "OS", "SS1", "SS2")
DEFEATERS = tuple(range(0, 5))
SUPPORTERS = tuple(range(5, 10))
LETTERS = "ABCDEFGHIJ"
METRICS = ("tau_supporters", "tau_defeaters", "tau_all", "cgp", "igc")
IGC_VARIANTS = ("silhouette", "density")
DEFAULT_CONJUNCTIONS = ("so", "therefore", "thus", "hence", "because", "since", "as")
DELTA_CAUSAL_COLUMNS = ("ID", "cause", "long_term_effect", "defeater", "supporter")
COMBINED = "combined"

# --- metrics on one ranking ------------------------------------------------------------------


def check_ranks(ranks: Sequence[int], n: int = N_ITEMS) -> list[int]:
    """``ranks`` as a list of ints, checked to be a permutation of 0..n-1 (ValueError if not)."""
    r = [int(x) for x in ranks]
    if sorted(r) != list(range(n)):
        raise ValueError(f"a ranking must be a permutation of 0..{n - 1}, got {list(ranks)}")
    return r


def ranks_from_order(order: Sequence[int]) -> list[int]:
    """From an ordering (``order[p]`` = intended index of the item put at position p) to ranks."""
    ranks = [0] * len(order)
    for position, item in enumerate(order):
        ranks[item] = position
    return check_ranks(ranks, len(order))


def order_from_ranks(ranks: Sequence[int]) -> list[int]:
    """The inverse of ``ranks_from_order``: the intended indices in ranked order."""
    r = check_ranks(ranks, len(ranks))
    order = [0] * len(r)
    for item, position in enumerate(r):
        order[position] = item
    return order


def kendall_tau(x: Sequence[float], y: Sequence[float]) -> float:
    """Kendall's tau-a of two sequences without ties: (concordant - discordant) / (n choose 2)."""
    n = len(x)
    if n != len(y) or n < 2:
        raise ValueError("kendall_tau needs two sequences of the same length, at least 2")
    score = 0
    for i in range(n):
        for j in range(i + 1, n):
            s = (x[i] - x[j]) * (y[i] - y[j])
            score += (s > 0) - (s < 0)
    return score / (n * (n - 1) / 2)


def cross_group_position(ranks: Sequence[int], defeaters: Sequence[int] = DEFEATERS,
                         supporters: Sequence[int] = SUPPORTERS) -> float:
    """CGP = 1 - #{(s, d): s ranked below d} / (|S| |D|): 1 when every supporter is ranked above
    every defeater, 0 when every supporter is ranked below every defeater."""
    worst = len(defeaters) * len(supporters)
    if worst == 0:
        return 1.0
    violations = sum(1 for s in supporters for d in defeaters if ranks[s] < ranks[d])
    return 1.0 - violations / worst


def polarity_sequence(ranks: Sequence[int], defeaters: Sequence[int] = DEFEATERS) -> list[int]:
    """The polarity (0 = defeater, 1 = supporter) of the item at each ranked position."""
    d = set(defeaters)
    return [0 if item in d else 1 for item in order_from_ranks(ranks)]


def polarity_change_distance(labels: Sequence[int]) -> list[list[float]]:
    """d(i, j) for positions i < j: the number of polarity changes on the way from i to j that
    go to a polarity other than that of i (changes back to i's polarity do not count); made
    symmetric from the earlier position, as in the reference ``metrics/clustering.py``."""
    n = len(labels)
    dist = [[0.0] * n for _ in range(n)]
    for i in range(n):
        changes = 0
        for j in range(i + 1, n):
            if labels[j] != labels[j - 1] and labels[j] != labels[i]:
                changes += 1
            dist[i][j] = dist[j][i] = float(changes)
    return dist


def silhouette(dist: Sequence[Sequence[float]], labels: Sequence[int]) -> float:
    """Mean silhouette over all samples of a precomputed distance matrix (sklearn's definition:
    s = (b - a) / max(a, b), 0 for a sample alone in its cluster or when a = b = 0)."""
    n = len(labels)
    clusters = sorted(set(labels))
    if len(clusters) < 2:
        raise ValueError("a silhouette needs at least two clusters")
    total = 0.0
    for i in range(n):
        same = [j for j in range(n) if j != i and labels[j] == labels[i]]
        if not same:
            continue  # s = 0
        a = sum(dist[i][j] for j in same) / len(same)
        b = min(
            sum(dist[i][j] for j in range(n) if labels[j] == c) / sum(1 for j in range(n) if labels[j] == c)
            for c in clusters if c != labels[i]
        )
        m = max(a, b)
        total += (b - a) / m if m > 0 else 0.0
    return total / n


def igc_silhouette(ranks: Sequence[int], defeaters: Sequence[int] = DEFEATERS) -> float:
    """IGC: the mean silhouette of the ranked polarity sequence under the polarity-change distance."""
    labels = polarity_sequence(ranks, defeaters)
    return silhouette(polarity_change_distance(labels), labels)


def igc_density(ranks: Sequence[int], defeaters: Sequence[int] = DEFEATERS,
                supporters: Sequence[int] = SUPPORTERS) -> float:
    """The reference's density variant (``calculate_intra_group_clustering``): per group, the
    density n / span of its ranked positions, times (1 - largest gap / span) when there is a gap;
    averaged over the two groups. Positions are those of the group's items in the ranking."""

    def group_score(group: Sequence[int]) -> float:
        positions = sorted(ranks[i] for i in group)
        if len(positions) < 2:
            return 1.0
        max_gap = max(b - a for a, b in zip(positions, positions[1:])) - 1
        span = positions[-1] - positions[0] + 1
        density = len(positions) / span
        return density if max_gap == 0 else density * (1 - max_gap / span)

    return (group_score(defeaters) + group_score(supporters)) / 2


def pair_metrics(ranks: Sequence[int], *, igc: str = "silhouette") -> dict[str, float]:
    """The five figures for one ranking (``ranks[i]`` = position given to intended item i)."""
    r = check_ranks(ranks)
    if igc not in IGC_VARIANTS:
        raise ConfigError(f"unknown IGC variant {igc!r}", hint=f"choose one of: {', '.join(IGC_VARIANTS)}")
    return {
        "tau_supporters": kendall_tau(list(SUPPORTERS), [r[i] for i in SUPPORTERS]),
        "tau_defeaters": kendall_tau(list(DEFEATERS), [r[i] for i in DEFEATERS]),
        "tau_all": kendall_tau(list(range(N_ITEMS)), r),
        "cgp": cross_group_position(r),
        "igc": igc_silhouette(r) if igc == "silhouette" else igc_density(r),
    }


def summarize(per_pair: Sequence[dict[str, float]]) -> dict[str, dict[str, float | None]]:
    """Mean and sample standard deviation of each metric over pairs (std None below two pairs)."""
    out: dict[str, dict[str, float | None]] = {}
    for m in METRICS:
        values = [p[m] for p in per_pair]
        out[m] = {
            "mean": statistics.fmean(values) if values else None,
            "std": statistics.stdev(values) if len(values) >= 2 else None,
        }
    return out


def confusion_matrix(rankings: Iterable[Sequence[int]]) -> list[list[int]]:
    """counts[i][p]: how often the intermediate of intended position i was ranked at position p."""
    counts = [[0] * N_ITEMS for _ in range(N_ITEMS)]
    for ranks in rankings:
        for i, p in enumerate(check_ranks(ranks)):
            counts[i][p] += 1
    return counts


def plot_confusion(counts: Sequence[Sequence[int]], path: str | Path, title: str) -> Path:
    """Draw the confusion matrix (rows: intended position, columns: ranked position) as a PNG."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(6.4, 5.6))
    try:
        im = ax.imshow(counts, cmap="Blues")
        top = max((max(row) for row in counts), default=0)
        for i, row in enumerate(counts):
            for j, v in enumerate(row):
                ax.text(j, i, str(v), ha="center", va="center", fontsize=8,
                        color="white" if top and v > top / 2 else "black")
        ax.set_xticks(range(N_ITEMS), [str(p) for p in range(N_ITEMS)])
        ax.set_yticks(range(N_ITEMS), list(INTENDED_LABELS))
        ax.set_xlabel("ranked position (0 = makes the effect least likely)")
        ax.set_ylabel("intended position")
        ax.axhline(4.5, color="grey", lw=0.8)
        ax.axvline(4.5, color="grey", lw=0.8)
        ax.set_title(title, fontsize=10)
        fig.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
        fig.tight_layout()
        tmp = path.with_name(f".{path.name}.tmp.png")
        fig.savefig(tmp, dpi=120)
        tmp.replace(path)
    finally:
        plt.close(fig)
    return path


# --- input: cause-effect pairs ---------------------------------------------------------------


@dataclass
class CausalPair:
    """A cause-effect pair with (optionally) one supporter, one defeater and the ten intermediates."""

    id: str
    cause: str
    effect: str
    supporter: str | None = None
    defeater: str | None = None
    intermediates: list[str] | None = None  # in intended order, when already generated
    meta: dict[str, Any] = field(default_factory=dict)


def _clean(text: Any) -> str:
    return " ".join(str(text).split()) if text is not None else ""


def _pair_from_json(value: Any, where: str) -> CausalPair:
    if not isinstance(value, dict):
        raise SchemaError(f"{where}: expected a JSON object, got {type(value).__name__}")
    cause, effect = value.get("cause"), value.get("effect")
    if isinstance(cause, dict) or isinstance(effect, dict):  # a KG edge in the flat WikiCausal shape
        try:
            edge = FlatPair.model_validate(value)
        except ValidationError as exc:
            raise SchemaError(f"{where}: not a KG edge: {format_validation_error(exc)}") from None
        if not edge.cause.label or not edge.effect.label:
            raise SchemaError(f"{where}: a KG edge needs cause.label and effect.label")
        pid = str(value.get("id") or f"{edge.cause.id[0]}->{edge.effect.id[0]}")
        return CausalPair(pid, _clean(edge.cause.label), _clean(edge.effect.label),
                          meta={"cause_id": edge.cause.id, "effect_id": edge.effect.id, "source": "kg"})
    if not isinstance(cause, str) or not isinstance(effect, str) or not cause.strip() or not effect.strip():
        raise SchemaError(f"{where}: needs non-empty 'cause' and 'effect' strings (or a KG edge)")
    inter = value.get("intermediates")
    if inter is not None:
        if isinstance(inter, list) and inter and isinstance(inter[0], dict):
            inter = [x.get("text") for x in inter]
        if not (isinstance(inter, list) and len(inter) == N_ITEMS and all(isinstance(x, str) and x.strip() for x in inter)):
            raise SchemaError(f"{where}: 'intermediates' must be a list of {N_ITEMS} non-empty strings in intended order")
        inter = [_clean(x) for x in inter]
    sup, dfe = value.get("supporter"), value.get("defeater")
    for name, v in (("supporter", sup), ("defeater", dfe)):
        if v is not None and (not isinstance(v, str) or not v.strip()):
            raise SchemaError(f"{where}: '{name}' must be a non-empty string when given")
    pid = value.get("id")
    return CausalPair(
        str(pid) if pid is not None else f"line-{where.rsplit(':', 1)[-1]}", _clean(cause), _clean(effect),
        _clean(sup) if sup else None, _clean(dfe) if dfe else None, inter,
        meta={k: v for k, v in value.items() if k in ("domain", "keyword", "source")},
    )


def read_pairs(path: str | Path, *, lenient: bool = False, stats: ReadStats | None = None) -> list[CausalPair]:
    """Cause-effect pairs from a delta-CAUSAL CSV (columns ID, cause, long_term_effect, defeater,
    supporter, ...) or a JSONL file: ``{"id", "cause", "effect", "supporter", "defeater"}`` lines,
    lines that also carry ``intermediates`` (a previous run's ``pairs.jsonl``), or KG edges in the
    flat shape (no supporter or defeater: the generator writes them first).

    Raises SchemaError with ``path:line:`` on a bad line (skipped and counted when lenient).
    """
    path = Path(path)
    stats = stats if stats is not None else ReadStats()
    stats.path = str(path)
    if not path.exists():
        raise SchemaError(f"{path}: no such file")
    pairs: list[CausalPair] = []
    if path.suffix.lower() == ".csv":
        with open(path, newline="", encoding="utf-8-sig") as fh:
            reader = csv.DictReader(fh)
            missing = [c for c in DELTA_CAUSAL_COLUMNS if c not in (reader.fieldnames or [])]
            if missing:
                raise SchemaError(f"{path}:1: not a delta-CAUSAL CSV: missing column(s) {', '.join(missing)}")
            for row in reader:
                lineno = reader.line_num
                stats.lines = lineno
                empty = [c for c in DELTA_CAUSAL_COLUMNS if not (row.get(c) or "").strip()]
                if empty:
                    msg = f"{path}:{lineno}: empty {', '.join(empty)}"
                    if not lenient:
                        raise SchemaError(msg)
                    stats.note_skip(msg)
                    continue
                pairs.append(CausalPair(
                    row["ID"].strip(), _clean(row["cause"]), _clean(row["long_term_effect"]),
                    _clean(row["supporter"]), _clean(row["defeater"]),
                    meta={"domain": row.get("domain"), "keyword": row.get("keyword"), "source": "delta-causal"},
                ))
                stats.records += 1
        return pairs
    for lineno, value in iter_json_lines(path, lenient=lenient, stats=stats):
        try:
            pair = _pair_from_json(value, f"{path}:{lineno}")
        except SchemaError as exc:
            if not lenient:
                raise
            stats.note_skip(str(exc))
            continue
        pairs.append(pair)
        stats.records += 1
    ids = [p.id for p in pairs]
    if len(set(ids)) != len(ids):
        seen: dict[str, int] = {}
        for p in pairs:  # KG edges may repeat a (cause, effect): keep ids unique for the report
            n = seen.get(p.id, 0)
            seen[p.id] = n + 1
            if n:
                p.id = f"{p.id}#{n}"
    return pairs


def sample_pairs(pairs: list[CausalPair], limit: int, seed: int) -> list[CausalPair]:
    """A seeded random sample of ``limit`` pairs (all when ``limit`` <= 0), kept in file order."""
    if limit <= 0 or limit >= len(pairs):
        return list(pairs)
    keep = sorted(random.Random(seed).sample(range(len(pairs)), limit))
    return [pairs[i] for i in keep]


# --- parsing the judge's answers -------------------------------------------------------------

_FENCE = re.compile(r"^```[a-zA-Z]*\s*|\s*```$", re.M)


def _json_object(text: str) -> Any:
    """The first JSON object or array in ``text`` (code fences and prose around it ignored)."""
    from causalkg.evaluation.judging.llm_answers import ParseError

    body = _FENCE.sub("", text.strip())
    decoder = json.JSONDecoder()
    for i, ch in enumerate(body):
        if ch in "{[":
            try:
                value, _ = decoder.raw_decode(body[i:])
                return value
            except json.JSONDecodeError:
                continue
    raise ParseError("no JSON object found in the answer")


def _norm_key(key: str) -> str:
    return re.sub(r"[^a-z]+", "_", key.lower()).strip("_")


def parse_seed(text: str) -> dict[str, str]:
    """``{"supporter": ..., "defeater": ...}`` from the seeding answer (ParseError otherwise)."""
    from causalkg.evaluation.judging.llm_answers import ParseError

    value = _json_object(text)
    if not isinstance(value, dict):
        raise ParseError("expected a JSON object with keys supporter and defeater")
    got = {_norm_key(k): v for k, v in value.items()}
    out = {}
    for key in ("supporter", "defeater"):
        v = got.get(key)
        if not isinstance(v, str) or not v.strip():
            raise ParseError(f"the key {key!r} must hold a non-empty statement")
        out[key] = _clean(v)
    if out["supporter"].lower() == out["defeater"].lower():
        raise ParseError("the supporter and the defeater are the same statement")
    return out


VARIANT_KEYS = ("much_stronger", "slightly_stronger", "slightly_weaker", "much_weaker")


def parse_variants(text: str, original: str | None = None) -> dict[str, str]:
    """The four versions of a supporter or defeater, keyed by ``VARIANT_KEYS`` (ParseError otherwise)."""
    from causalkg.evaluation.judging.llm_answers import ParseError

    value = _json_object(text)
    if not isinstance(value, dict):
        raise ParseError(f"expected a JSON object with the keys {', '.join(VARIANT_KEYS)}")
    got = {_norm_key(k): v for k, v in value.items()}
    missing = [k for k in VARIANT_KEYS if not isinstance(got.get(k), str) or not got[k].strip()]
    if missing:
        raise ParseError(f"missing or empty key(s): {', '.join(missing)}")
    out = {k: _clean(got[k]) for k in VARIANT_KEYS}
    texts = [v.lower() for v in out.values()] + ([original.lower()] if original else [])
    if len(set(texts)) != len(texts):
        raise ParseError("the versions must differ from each other and from the original statement")
    return out


_LABEL_ITEM = re.compile(r"^\W*(?:statement|option|item)?\s*\(?\[?([A-Za-z])\)?\]?(?:[.:)\]\s-]|$)")


def _label_of(item: Any, labels: str) -> str | None:
    if not isinstance(item, str):
        return None
    s = item.strip()
    if len(s) == 1:
        return s.upper() if s.upper() in labels else None
    m = _LABEL_ITEM.match(s)
    if m and m.group(1) in labels:  # beyond a bare letter, only capitals count as labels
        return m.group(1)
    return None


def _check_permutation(seq: list[str], labels: str) -> list[str]:
    from causalkg.evaluation.judging.llm_answers import ParseError

    missing = [x for x in labels if x not in seq]
    repeated = sorted({x for x in seq if seq.count(x) > 1})
    if missing or repeated or len(seq) != len(labels):
        parts = []
        if missing:
            parts.append(f"missing {', '.join(missing)}")
        if repeated:
            parts.append(f"repeated {', '.join(repeated)}")
        if len(seq) != len(labels) and not parts:
            parts.append(f"{len(seq)} items instead of {len(labels)}")
        raise ParseError(f"the ranking must use each of the letters {', '.join(labels)} exactly once: " + "; ".join(parts))
    return seq


def parse_ranking(text: str, labels: str = LETTERS) -> list[str]:
    """The labels in ranked order, from a JSON answer (``{"ranking": ["C", "A", ...]}`` or a bare
    list), or failing that from a line such as ``C > A > ...`` / ``C, A, ...`` or a numbered list
    with one label per line. Every label must occur exactly once (ParseError otherwise)."""
    from causalkg.evaluation.judging.llm_answers import ParseError

    try:
        value = _json_object(text)
    except ParseError:
        value = None
    if isinstance(value, dict):
        lists = [v for k, v in value.items() if isinstance(v, list)]
        ranked = value.get("ranking", lists[0] if len(lists) == 1 else None)
        if not isinstance(ranked, list):
            raise ParseError('expected {"ranking": [the letters in order]}')
        value = ranked
    if isinstance(value, list):
        seq = [_label_of(x, labels) for x in value]
        if None in seq:
            bad = value[seq.index(None)]
            raise ParseError(f"{bad!r} in the ranking is not one of the letters {', '.join(labels)}")
        return _check_permutation([s for s in seq if s], labels)
    # No JSON: a one-line ranking, or one label per line.
    body = _FENCE.sub("", text.strip())
    token = re.compile(r"(?<![A-Za-z])([" + labels + r"])(?![A-Za-z])")
    for line in body.splitlines():
        stripped = re.sub(r"^\s*(?:ranking|answer|order)\s*[:=]", "", line, flags=re.I)
        if re.fullmatch(r"[\s" + labels + r",;>→<\-\[\]()\"'.]*", stripped) and stripped.strip():
            seq = token.findall(stripped)
            if len(seq) >= 2:
                return _check_permutation(seq, labels)
    per_line = [_label_of(re.sub(r"^\s*\d+\s*[.)]\s*", "", line), labels) for line in body.splitlines() if line.strip()]
    per_line = [x for x in per_line if x]
    if len(per_line) >= 2:
        return _check_permutation(per_line, labels)
    raise ParseError('no ranking found: answer with {"ranking": [the ten letters in order]}')


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


# --- the run ---------------------------------------------------------------------------------


@dataclass
class ConsistencyResult:
    judge: str
    method: str
    variants: list[str]  # ranking variants: ["llm"] or the conjunctions + "combined"
    headline: str  # the variant whose figures stand for the judge
    summary: dict[str, dict[str, dict[str, float | None]]]  # variant -> metric -> mean/std
    confusion: dict[str, list[list[int]]]
    pairs: int  # pairs attempted
    scored: int  # pairs with a ranking
    failures: list[dict[str, str]]
    out: Path | None
    usage: dict[str, Any] | None = None
    plan: dict[str, Any] | None = None  # set by a dry run (nothing was asked)

    def rows(self) -> list[dict[str, Any]]:
        rows = []
        for v in self.variants:
            row: dict[str, Any] = {"ranking": v, "pairs": self.scored}
            for m in METRICS:
                row[m] = self.summary[v][m]["mean"]
                row[f"{m}_std"] = self.summary[v][m]["std"]
            rows.append(row)
        return rows

    def headline_figures(self) -> dict[str, Any]:
        return {m: dict(self.summary[self.headline][m]) for m in METRICS}


def judge_slug(judge: str) -> str:
    """A folder name for a judge spec (the manifest keeps the exact spec)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", judge).strip("_") or "judge"


def llm_ranking(arg: str, *, cfg: Config, runs: list["PairRun"], clients: dict[str, Any], seed: int,
                max_attempts: int, temperature: float, **_: Any) -> tuple[list[str], str]:
    """The ``openai`` judge: the LLM protocol ranks the ten intermediates of each pair by prompt."""
    spec = Spec("openai", arg)
    client = clients.get(str(spec)) or _chat_client(cfg, spec)
    clients[str(spec)] = client
    _rank_llm(client, runs, seed=seed, max_attempts=max_attempts, temperature=temperature)
    return ["llm"], "llm"


def tokenprob_ranking(arg: str, *, cfg: Config, runs: list["PairRun"], seed: int, conjunctions: list[str],
                      template: str, **_: Any) -> tuple[list[str], str]:
    """The ``transformers`` judge: rank by the causal LM's probability of the effect after each
    intermediate, per conjunction and combined."""
    from causalkg.evaluation.judging.causal_lm import CausalLMScorer

    ev = cfg["eval"]["consistency"]
    scorer = CausalLMScorer(arg, device=stage_device(cfg, "eval.consistency.device"), batch_size=ev["batch_size"],
                            cache=DiskCache(cfg.path("paths.cache") / "eval-models.sqlite"))
    _rank_tokenprob(scorer, runs, conjunctions=conjunctions, template=template, seed=seed)
    return conjunctions + [COMBINED], COMBINED


llm_ranking.method = "llm"  # type: ignore[attr-defined]  (recorded in manifests as "method")
tokenprob_ranking.method = "tokenprob"  # type: ignore[attr-defined]
JUDGES = registry("consistency-judge")  # causalkg.registry.CATALOG: openai.v1, transformers.v1


def normalize_judge(judge: str) -> Spec:
    """``openai:MODEL`` or ``transformers:PATH``; a bare name means ``openai:NAME``."""
    spec = parse_spec(judge, default_backend="openai")
    if split_version(spec.backend)[0] not in JUDGES.bases():
        raise ConfigError(f"unknown consistency judge backend {spec.backend!r}",
                          hint="use openai:MODEL (the LLM protocol) or transformers:PATH (token probabilities)")
    if not spec.arg:
        raise ConfigError(f"judge {judge!r} names no model", hint="e.g. openai:gpt-4o-mini or transformers:models/gpt2")
    return spec


def _chat_client(cfg: Config, spec: Spec) -> Any:
    from causalkg.llm import ChatClient

    return ChatClient.from_config(cfg, model=spec.arg)


def consistency(
    cfg: Config,
    *,
    pairs: str | Path,
    judge: str | None = None,
    generator: str | None = None,
    limit: int | None = None,
    seed: int | None = None,
    igc: str | None = None,
    conjunctions: Sequence[str] | None = None,
    template: str | None = None,
    out: str | Path | None = None,
    lenient: bool = False,
    dry_run: bool = False,
) -> ConsistencyResult:
    """Measure a judge's causal epistemic consistency on cause-effect pairs (``causalkg eval consistency``).

    ``pairs``: a delta-CAUSAL CSV, a JSONL of pairs (with or without ``intermediates``), or a KG
    in the flat shape. ``judge``: ``openai:MODEL`` (generate and rank by prompts) or
    ``transformers:PATH`` (rank by token probability); default ``eval.consistency.judge`` or
    ``openai:<llm.model>``. ``generator``: who writes missing intermediates (default: an openai
    judge itself; required for a transformers judge unless every pair carries intermediates).
    Other arguments default to the ``eval.consistency.*`` keys. Writes ``pairs.jsonl``,
    ``summary.json``, ``confusion.png`` and ``manifest.json`` under ``out`` (default
    ``<paths.data>/eval/consistency/<judge>/<input>-<hash>/``).

    Returns a ConsistencyResult (with ``dry_run``, one whose ``plan`` holds what would run). Raises ConfigError on
    bad options, SchemaError on bad input lines, SourceError / ModelError when the judge fails.
    """
    ev = cfg["eval"]
    spec = normalize_judge(judge or ev["consistency"]["judge"] or f"openai:{cfg['llm']['model']}")
    judge_s = str(spec)
    ranker = JUDGES.get(spec.backend)
    method = ranker.method
    limit = ev["consistency"]["limit"] if limit is None else int(limit)
    seed = ev["consistency"]["seed"] if seed is None else int(seed)
    igc = igc or ev["consistency"]["igc"]
    if igc not in IGC_VARIANTS:
        raise ConfigError(f"unknown IGC variant {igc!r}", hint=f"choose one of: {', '.join(IGC_VARIANTS)}")
    conjunctions = list(conjunctions or ev["consistency"]["conjunctions"])
    template = template or ev["consistency"]["template"]
    if method == "tokenprob":
        if not conjunctions:
            raise ConfigError("no conjunctions for the token-probability judge", hint="set eval.consistency.conjunctions")
        split_template(template)
    max_attempts = int(ev["consistency"]["max_attempts"])
    temperature = float(ev["consistency"]["temperature"])

    stats = ReadStats()
    all_pairs = read_pairs(pairs, lenient=lenient, stats=stats)
    chosen = sample_pairs(all_pairs, limit, seed)
    gen_spec: Spec | None = None
    lacking = sum(p.intermediates is None for p in chosen)
    gen_text = generator or ev["consistency"]["generator"] or (judge_s if method == "llm" else "")
    if lacking and not gen_text and lacking == len(chosen):
        raise ConfigError(
            "the token-probability judge ranks intermediates but does not write them",
            hint="pass --generator openai:MODEL, or --pairs a previous run's pairs.jsonl (it carries intermediates)",
        )
    if lacking and gen_text:
        gen_spec = normalize_judge(gen_text)
        if JUDGES.base(gen_spec.backend) != "openai":
            raise ConfigError(f"generator {gen_spec} cannot write intermediates", hint="use an openai:MODEL generator")
    settings = {
        "judge": judge_s, "method": method, "generator": str(gen_spec) if gen_spec else None, "limit": limit,
        "seed": seed, "igc": igc, "conjunctions": conjunctions if method == "tokenprob" else None,
        "template": template if method == "tokenprob" else None, "input": describe_input(pairs)["sha256"],
    }
    if out is None:
        root = Layout.from_config(cfg).eval_out("consistency")
        out = root / judge_slug(judge_s) / f"{judge_slug(Path(pairs).stem)}-{fingerprint(settings)[:10]}"
    out = Path(out)
    plan = {"judge": judge_s, "method": method, "generator": settings["generator"], "pairs_in_file": len(all_pairs),
            "pairs": len(chosen), "needs_generation": sum(p.intermediates is None for p in chosen),
            "igc": igc, "conjunctions": settings["conjunctions"], "out": str(out)}
    if dry_run:
        return ConsistencyResult(judge_s, method, [], "", {}, {}, 0, 0, [], out, plan=plan)

    started = time.time()
    runs = [PairRun(p, intermediates=list(p.intermediates) if p.intermediates else None) for p in chosen]
    if gen_spec is None:  # some pairs of a previous run came without intermediates (that run failed them)
        for r in runs:
            if r.intermediates is None:
                r.error = "no intermediates (pass --generator openai:MODEL to write them)"
    clients: dict[str, Any] = {}
    if gen_spec is not None:
        clients[str(gen_spec)] = _chat_client(cfg, gen_spec)
        _generate(clients[str(gen_spec)], runs, max_attempts=max_attempts, temperature=temperature)
    variants, headline = ranker(spec.arg, cfg=cfg, runs=runs, clients=clients, seed=seed, max_attempts=max_attempts,
                                temperature=temperature, conjunctions=conjunctions, template=template)
    elapsed = time.time() - started

    scored = [r for r in runs if r.error is None and r.rankings]
    summary = {v: summarize([pair_metrics(r.rankings[v], igc=igc) for r in scored]) for v in variants}
    confusion = {v: confusion_matrix(r.rankings[v] for r in scored) for v in variants}
    failures = [{"id": r.pair.id, "error": r.error or "no ranking"} for r in runs if r.error is not None or not r.rankings]
    usage = {name: c.usage.as_dict() for name, c in clients.items()} or None
    result = ConsistencyResult(judge_s, method, variants, headline, summary, confusion, len(runs), len(scored),
                               failures, out, usage)

    write_jsonl(out / "pairs.jsonl", (r.record(igc) for r in runs))
    summary_doc = {
        "judge": judge_s, "method": method, "headline": headline, "igc": igc, "pairs": len(runs),
        "scored": len(scored), "failed": len(failures), "failures": failures, "summary": summary,
        "confusion": confusion, "intended_labels": list(INTENDED_LABELS), "usage": usage,
    }
    write_json(out / "summary.json", summary_doc)
    if scored:
        plot_confusion(confusion[headline], out / "confusion.png",
                       f"{judge_s} ({headline}): {len(scored)} pairs")
    notes = [f"{len(failures)} pair(s) without a ranking (listed in summary.json)"] if failures else []
    if stats.skipped:
        notes.append(f"{stats.skipped} bad input line(s) skipped (--lenient)")
    manifest = build_manifest(
        "eval.consistency", cfg, inputs={"pairs": pairs}, outputs={"pairs": "pairs.jsonl", "summary": "summary.json",
                                                                    "confusion": "confusion.png" if scored else None},
        counts={"pairs_in_file": len(all_pairs), "pairs": len(runs), "scored": len(scored), "failed": len(failures)},
        timings={"total": elapsed}, models={"judge": judge_s, "generator": settings["generator"]}, notes=notes,
        extra={"judge": judge_s, "method": method, "settings": settings, "headline": headline,
               "figures": result.headline_figures(), "usage": usage},
    )
    write_manifest(out, manifest)
    return result


def load_judge_consistency(cfg: Config, judge_spec: str) -> dict[str, Any] | None:
    """The latest consistency figures saved for a judge, or None when it was never measured.

    Looks at every ``manifest.json`` under ``<paths.data>/eval/consistency/`` whose judge is
    ``judge_spec`` (``openai:MODEL`` / ``transformers:PATH``; a bare model name means openai) and
    returns the newest: ``{"judge", "method", "headline", "created", "path", "pairs", "scored",
    "failed", "figures": {metric: {"mean", "std"}}}`` with metrics tau_supporters, tau_defeaters,
    tau_all, cgp, igc.
    """
    try:
        wanted = str(normalize_judge(judge_spec))
    except ConfigError:
        return None
    root = Layout.from_config(cfg).eval_out("consistency")
    best: dict[str, Any] | None = None
    for mpath in sorted(root.glob("*/*/manifest.json")):
        m = read_manifest(mpath.parent)
        if not m or m.get("stage") != "eval.consistency" or m.get("judge") != wanted or not m.get("figures"):
            continue
        counts = m.get("counts", {})
        if not counts.get("scored"):
            continue
        found = {
            "judge": wanted, "method": m.get("method"), "headline": m.get("headline"), "created": m.get("created"),
            "path": str(mpath.parent), "pairs": counts.get("pairs"), "scored": counts.get("scored"),
            "failed": counts.get("failed"), "figures": m["figures"],
        }
        key = (found["created"] or "", mpath.stat().st_mtime)
        if best is None or key > best["_key"]:
            best = {**found, "_key": key}
    if best is not None:
        best.pop("_key")
    return best


def format_judge_consistency(found: dict[str, Any]) -> str:
    """One line for a report: ``judge consistency (openai:x, 200 pairs, 2024-..): tau 0.71 ± 0.20, CGP ...``."""
    f = found["figures"]

    def cell(m: str) -> str:
        mean, std = f[m]["mean"], f[m]["std"]
        if mean is None:
            return "n/a"
        return f"{mean:.3f}" + (f" ± {std:.3f}" if std is not None and not math.isnan(std) else "")

    return (f"judge consistency ({found['judge']}, {found['scored']} pairs, {found['created']}): "
            f"tau all {cell('tau_all')}, tau supporters {cell('tau_supporters')}, "
            f"tau defeaters {cell('tau_defeaters')}, CGP {cell('cgp')}, IGC {cell('igc')}")
