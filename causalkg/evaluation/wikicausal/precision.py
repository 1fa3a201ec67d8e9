"""Precision of a causal KG judged by a language model instead of people.

Stage 4 (evaluation). ``eval_precision`` (the ``causalkg eval precision`` command) follows the
WikiCausal reference script (``scripts/precision.py`` of IBM/wikicausal) where it is right:

- the unit is a unique (cause label, effect label) pair; views ``full`` (all pairs), ``types``
  (class pairs: event -> consequence, and every flat line) and ``instances`` (example pairs);
- each pair is put to the judge in the instruction template (or the question template), both
  verbatim in ``evaluation/wikicausal/prompts/``; an answer is *yes* when, lower-cased and stripped, it starts
  with "yes"; a pair is correct when at least floor(K/2)+1 of K tries say yes;
  precision = correct / judged, per view.

It departs from the reference where the reference is wrong, and shows the reference's result on
request (``reference_quirks=True``, ``--reference-quirks``):

- the reference takes ``cause.label[0]``, the first *character* of a flat line's cause label, as
  the cause text ("Could a result in death?"); we use the whole label;
- the reference files a pair under the view it was first seen in only (a pair seen as a class
  pair and later as an example is not an instance pair); we file it under every view it is in;
- the reference decodes its K tries greedily, so they are one answer asked K times; we sample
  K > 1 tries with a temperature and a seed per try, and ask a greedy judge once.

Beyond it: a 95% Wilson interval, the mean share of yes answers, how many pairs the tries agree
on, per-pair judgements (pair, prompt, answers, verdict) in JSONL, token and cost accounting, and
the judge's consistency figures beside the precision when ``eval consistency`` measured them.
"""

from __future__ import annotations

import importlib
import logging
import math
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from causalkg.core.config import Config
from causalkg.core.errors import ConfigError
from causalkg.core.jsonl import atomic_write, write_jsonl
from causalkg.core.layout import Layout
from causalkg.core.manifest import build_manifest, write_manifest
from causalkg.registry import versioned_spec
from causalkg.core.tables import render_table
from causalkg.evaluation.wikicausal.judges import Judge, JudgeQuery, create_judge
from causalkg.evaluation.wikicausal.kgread import CLASS, FLAT, KGReadStats, iter_kg_pairs

log = logging.getLogger(__name__)

PROMPTS_DIR = Path(__file__).with_name("prompts")
TEMPLATES = {"instruction": "precision_instruction.txt", "question": "precision_question.txt"}
VIEWS = ("full", "types", "instances")
REFERENCE_HEADERS = ["input_kg_file_name", "full precision", "types precision", "instances precision"]
SUMMARY_COLUMNS = [
    "input_kg_file_name", "view", "pairs", "judged", "correct", "precision", "ci_low", "ci_high",
    "mean_yes", "unanimous", "failed", "abstained", "unparsed",
]

_PLACEHOLDER = re.compile(r"\{(cause|effect)\}")
_CONTROL = re.compile(r"[\r\n\t\v\f]")


# -- prompts and verdicts -----------------------------------------------------------------------


@dataclass(frozen=True)
class PromptTemplate:
    """A prompt with ``{cause}`` and ``{effect}`` slots, filled in one pass (a label holding the
    text ``{effect}`` is left as it is)."""

    name: str
    text: str

    def render(self, cause: str, effect: str) -> str:
        # Line breaks in a label would change the prompt's layout: they become spaces.
        values = {"cause": _CONTROL.sub(" ", cause), "effect": _CONTROL.sub(" ", effect)}
        return _PLACEHOLDER.sub(lambda m: values[m.group(1)], self.text)


def load_template(name: str) -> PromptTemplate:
    """``instruction`` or ``question`` (the reference's two templates), or a path to a text file
    with ``{cause}`` and ``{effect}``. A single trailing newline of the file is dropped.
    Raises ConfigError for an unknown name or a template without both slots."""
    if name in TEMPLATES:
        path = PROMPTS_DIR / TEMPLATES[name]
    else:
        path = Path(os.path.expanduser(name))
        if not path.is_file():
            raise ConfigError(f"unknown precision template {name!r}",
                              hint=f"use {' or '.join(TEMPLATES)}, or a text file with {{cause}} and {{effect}}")
    text = path.read_text(encoding="utf-8")
    if text.endswith("\n"):
        text = text[:-1]
    if "{cause}" not in text or "{effect}" not in text:
        raise ConfigError(f"precision template {path} must contain {{cause}} and {{effect}}")
    return PromptTemplate(name, text)


def is_yes(answer: str) -> bool:
    """The reference's reading of an answer: lower-cased and stripped, it starts with "yes"."""
    return answer.strip().lower().startswith("yes")


_NO = re.compile(r"no\b")
_LEAD = re.compile(r"^[\s\"'`*_(\[]+")


def read_answer(answer: str) -> str:
    """``yes``, ``no``, or ``unparsed`` (neither: "Perhaps.", "", "I cannot tell").

    ``yes`` is the reference's reading (``is_yes``); an unparsed answer is not a yes either, so
    verdicts stay the reference's, but it is counted and reported apart from a "no"."""
    text = _LEAD.sub("", answer.strip().lower())
    if text.startswith("yes") or is_yes(answer):
        return "yes"
    if _NO.match(text):
        return "no"
    return "unparsed"


def majority(tries: int) -> int:
    """Yes answers needed for a correct pair: floor(K/2) + 1."""
    return tries // 2 + 1


def check_tries(tries: int) -> int:
    """``tries`` when it is at least 1; else ConfigError."""
    if tries < 1:
        raise ConfigError(f"--tries must be at least 1, got {tries}")
    return tries


def wilson_interval(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval of a proportion k/n (95% by default); (0, 0) when n is 0."""
    if n == 0:
        return 0.0, 0.0
    p = k / n
    d = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / d
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return max(0.0, centre - half), min(1.0, centre + half)


# -- pairs --------------------------------------------------------------------------------------


@dataclass
class LabelPair:
    """A unique (cause label, effect label) pair with the views and ids it was seen with."""

    cause: str
    effect: str
    views: list[str]
    cause_ids: list[str]
    effect_ids: list[str]
    lineno: int


@dataclass
class PairCollection:
    path: str
    pairs: dict[tuple[str, str], LabelPair]
    unlabelled: int = 0  # pairs without a cause or effect label: they cannot be asked about
    in_both_views: int = 0  # pairs seen as a class pair and as an instance pair
    stats: KGReadStats = field(default_factory=KGReadStats)

    def view(self, name: str) -> list[LabelPair]:
        if name == "full":
            return list(self.pairs.values())
        return [p for p in self.pairs.values() if name in p.views]


def collect_label_pairs(path: str | os.PathLike, *, reference_quirks: bool = False,
                        lenient: bool = False) -> PairCollection:
    """The unique label pairs of a KG (either shape), in file order, with their views.

    ``reference_quirks``: take the first character of a flat line's cause label, and file each
    pair only under the view it was first seen in, as the reference script does.
    Raises SchemaError (``path:line``) on a bad line unless ``lenient``.
    """
    coll = PairCollection(str(path), {})
    for p in iter_kg_pairs(path, lenient=lenient, stats=coll.stats):
        cause, effect = p.cause_label, p.effect_label
        if not cause or not effect:
            coll.unlabelled += 1
            continue
        if reference_quirks and p.shape == FLAT:
            cause = cause[0]
        view = "types" if p.kind == CLASS else "instances"
        key = (cause, effect)
        seen = coll.pairs.get(key)
        if seen is None:
            coll.pairs[key] = LabelPair(cause, effect, [view], [p.cause], [p.effect], p.lineno)
            continue
        if p.cause not in seen.cause_ids:
            seen.cause_ids.append(p.cause)
        if p.effect not in seen.effect_ids:
            seen.effect_ids.append(p.effect)
        if view not in seen.views and not reference_quirks:
            seen.views.append(view)
            coll.in_both_views += 1
    return coll


# -- judging ------------------------------------------------------------------------------------


@dataclass
class PrecisionResult:
    """One KG judged: its summary rows (one per view), the reference row, the judgements."""

    kg: str
    rows: list[dict[str, Any]]
    reference_row: dict[str, Any]
    judgements: list[dict[str, Any]]
    unlabelled: int
    in_both_views: int
    skipped_by_limit: int


@dataclass
class PrecisionReport:
    results: list[PrecisionResult]
    judge: dict[str, Any]
    usage: dict[str, Any]
    settings: dict[str, Any]
    consistency: Mapping[str, Any] | None = None
    notes: list[str] = field(default_factory=list)
    written: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def rows(self) -> list[dict[str, Any]]:
        return [r for res in self.results for r in res.rows]

    @property
    def failed(self) -> list[dict[str, Any]]:
        """Pairs the judge could not answer (an error; a rerun asks them again)."""
        return [j for res in self.results for j in res.judgements if j["verdict"] is None and not j.get("abstained")]

    @property
    def abstained(self) -> list[dict[str, Any]]:
        """Pairs whose every answer was neither yes nor no: no verdict, and a rerun would not change it."""
        return [j for res in self.results for j in res.judgements if j.get("abstained")]

    def columns(self) -> list[str]:
        return list(SUMMARY_COLUMNS) + list(consistency_columns(self.consistency))

    def table_rows(self) -> list[dict[str, Any]]:
        extra = consistency_columns(self.consistency)
        return [{**r, **extra} for r in self.rows]

    def render(self, fmt: str = "md") -> str:
        return render_table(self.table_rows(), self.columns(), fmt)

    def render_reference(self, fmt: str = "md") -> str:
        """The reference's table layout (``results/precision-v1.md``): precision to 4 decimals."""
        rows = [{k: (f"{v:.4f}" if isinstance(v, float) else v) for k, v in r.reference_row.items()}
                for r in self.results]
        return render_table(rows, REFERENCE_HEADERS, fmt)

    def usage_line(self) -> str:
        u = self.usage
        cost = "unknown (no price for this model in llm.prices)" if u.get("cost_usd") is None else f"${u['cost_usd']:.4f}"
        return (f"judge {self.judge.get('spec')}: {u.get('requests', 0)} requests, {u.get('cache_hits', 0)} cache hits, "
                f"{u.get('retries', 0)} retries, {u.get('failures', 0)} failures, "
                f"{u.get('prompt_tokens', 0)} prompt + {u.get('completion_tokens', 0)} completion tokens, cost {cost}")

    def consistency_line(self) -> str | None:
        if not self.consistency:
            return None
        if "figures" in self.consistency:
            try:
                from causalkg.evaluation.judging.consistency import format_judge_consistency

                return format_judge_consistency(dict(self.consistency))
            except Exception:  # noqa: BLE001 - fall back to the plain figures below
                pass
        figures = ", ".join(f"{k.removeprefix('judge_')} " + (f"{v:.4f}" if isinstance(v, float) else str(v))
                            for k, v in consistency_columns(self.consistency).items())
        return f"judge consistency (eval consistency): {figures}"

    def to_json(self) -> dict[str, Any]:
        return {"rows": self.rows, "reference": [r.reference_row for r in self.results], "judge": self.judge,
                "usage": self.usage, "settings": self.settings, "consistency": dict(self.consistency or {}) or None,
                "notes": self.notes}


def judge_consistency(judge_spec: str, cfg: Config) -> Mapping[str, Any] | None:
    """The judge's consistency figures when ``eval consistency`` measured them, else None.

    The hook between precision and the consistency measure (``evaluation.judging.consistency``, issue 9):
    its ``load_judge_consistency(cfg, judge_spec)`` returns the newest saved run for the judge,
    ``{"judge", "scored", "created", "figures": {metric: {"mean", "std"}}, ...}``, and
    ``format_judge_consistency(found)`` one line for people. ``eval precision`` and
    ``eval report`` show the means as ``judge_<metric>`` columns beside the precision and the
    line under the table. A flat mapping ``{metric: value}`` passed as ``consistency=`` to
    ``eval_precision`` is shown the same way. Any failure to read them only hides them.
    """
    try:
        module = importlib.import_module("causalkg.evaluation.judging.consistency")
        load = getattr(module, "load_judge_consistency", None)
        return load(cfg, judge_spec) if load is not None else None
    except Exception as exc:  # noqa: BLE001 - a missing measure must never stop precision
        log.debug("no judge consistency figures: %s", exc)
        return None


def consistency_columns(consistency: Mapping[str, Any] | None) -> dict[str, Any]:
    """``judge_<metric>`` -> value: the means of a saved consistency run, or a flat mapping."""
    if not consistency:
        return {}
    figures = consistency.get("figures")
    if isinstance(figures, Mapping):
        return {f"judge_{m}": (v.get("mean") if isinstance(v, Mapping) else v) for m, v in figures.items()}
    return {f"judge_{k}": v for k, v in consistency.items()}


def _view_row(kg_name: str, view: str, judgements: list[dict[str, Any]]) -> dict[str, Any]:
    judged = [j for j in judgements if j["verdict"] is not None]
    correct = sum(1 for j in judged if j["verdict"])
    lo, hi = wilson_interval(correct, len(judged))
    return {
        "input_kg_file_name": kg_name, "view": view, "pairs": len(judgements), "judged": len(judged),
        "correct": correct, "precision": correct / len(judged) if judged else 0.0, "ci_low": lo, "ci_high": hi,
        "mean_yes": (sum(j["yes"] / j["tries"] for j in judged) / len(judged)) if judged else 0.0,
        "unanimous": sum(1 for j in judged if j["yes"] in (0, j["tries"])),
        "failed": sum(1 for j in judgements if j["verdict"] is None and not j.get("abstained")),
        "abstained": sum(1 for j in judgements if j.get("abstained")),
        "unparsed": sum(j.get("unparsed", 0) for j in judgements),
    }


def judge_pairs(coll: PairCollection, judge: Judge, template: PromptTemplate, tries: int, *,
                sample: bool, limit: int = 0, kg_name: str | None = None) -> PrecisionResult:
    """Ask ``judge`` about every pair of ``coll`` (the first ``limit`` when > 0) and score them.

    ``sample``: K sampled tries per pair; otherwise one greedy answer stands for all K tries.
    Pairs whose answers could not all be had get verdict None (``failed``), not a guess.
    """
    kg_name = kg_name or os.path.basename(coll.path)
    pairs = list(coll.pairs.values())
    skipped = 0
    if limit and len(pairs) > limit:
        skipped = len(pairs) - limit
        pairs = pairs[:limit]
    asks = tries if sample else 1
    prompts = [template.render(p.cause, p.effect) for p in pairs]
    queries = [JudgeQuery(prompt, t, sample) for prompt in prompts for t in range(asks)]
    answers = judge.answer(queries, desc=f"judging {kg_name}") if queries else []
    need = majority(tries)
    judgements = []
    for n, (p, prompt) in enumerate(zip(pairs, prompts)):
        got = answers[n * asks:(n + 1) * asks]
        errors = [a for a in got if isinstance(a, Exception)]
        texts = [a for a in got if isinstance(a, str)]
        if not sample:
            texts = texts * tries
        yes = sum(is_yes(a) for a in texts)
        # answers that are neither yes nor no: counted apart; a pair with no other answer has
        # no verdict (abstained), not a silent "no"
        asked_texts = [a for a in got if isinstance(a, str)]
        unparsed = sum(read_answer(a) == "unparsed" for a in asked_texts)
        abstained = not errors and bool(asked_texts) and unparsed == len(asked_texts)
        judgements.append({
            "kg": kg_name, "cause": p.cause, "effect": p.effect, "cause_ids": p.cause_ids,
            "effect_ids": p.effect_ids, "views": p.views, "line": p.lineno, "prompt": prompt,
            "answers": [a if isinstance(a, str) else None for a in got], "yes": yes, "tries": tries,
            "asked": asks, "verdict": None if errors or abstained else yes >= need,
            "unparsed": unparsed, "abstained": abstained,
            "error": (getattr(errors[0], "message", str(errors[0])) if errors
                      else f"the judge answered neither yes nor no: {asked_texts[0]!r}" if abstained else None),
            "judge": judge.spec,
        })
    by_view = {"full": judgements,
               "types": [j for j in judgements if "types" in j["views"]],
               "instances": [j for j in judgements if "instances" in j["views"]]}
    rows = [_view_row(kg_name, v, by_view[v]) for v in VIEWS]
    reference_row = {"input_kg_file_name": kg_name, **{f"{r['view']} precision": r["precision"] for r in rows}}
    return PrecisionResult(coll.path, rows, reference_row, judgements, coll.unlabelled, coll.in_both_views, skipped)


def eval_precision(
    kgs: Sequence[str | os.PathLike],
    judge: str | Judge,
    *,
    cfg: Config,
    tries: int | None = None,
    template: str | None = None,
    temperature: float | None = None,
    seed: int | None = None,
    reference_quirks: bool = False,
    limit: int | None = None,
    lenient: bool = False,
    out: str | os.PathLike | None = None,
    consistency: Mapping[str, Any] | None = None,
    write: bool = True,
) -> PrecisionReport:
    """Judge each KG's unique label pairs with ``judge`` (the ``causalkg eval precision`` command).

    ``judge``: a spec (``openai:MODEL``, ``transformers:MODEL``) or a ``Judge``. ``tries``,
    ``template``, ``temperature``, ``seed``, ``limit`` default to ``eval.precision.*``.
    ``consistency``: the judge's consistency figures to show beside the precision (see
    ``judge_consistency``). Writes, unless ``write`` is false, into ``out`` (default
    ``<paths.data>/eval/precision``): ``precision.md|csv|json``, ``precision-reference.md|csv``
    (the reference layout), ``<kg>/judgements.jsonl`` per KG, ``precision.png`` and
    ``manifest.json``. Pairs the judge could not answer are counted as ``failed``, never guessed.
    Raises ConfigError on bad options, SchemaError on a bad KG line (unless ``lenient``).
    """
    if not kgs:
        raise ConfigError("no KG to judge", hint="pass --kg FILE (repeatable)")
    ev = cfg["eval"]
    tries = check_tries(int(ev["precision"]["tries"] if tries is None else tries))
    tmpl = load_template(template or ev["precision"]["template"])
    limit = int(ev["precision"]["limit"] if limit is None else limit)
    if isinstance(judge, str):
        if not judge:
            raise ConfigError("no judge configured", hint=NO_JUDGE_HINT)
        judge = create_judge(judge, cfg, temperature=temperature, seed=seed)
    else:
        if temperature is not None:
            judge.temperature = float(temperature)  # type: ignore[attr-defined]
        if seed is not None:
            judge.seed = int(seed)  # type: ignore[attr-defined]
    temp = float(getattr(judge, "temperature", 0.0))
    sample = tries > 1 and temp > 0
    notes = []
    if tries > 1 and not sample:
        notes.append(f"temperature 0: one greedy answer per pair stands for all {tries} tries "
                     f"(the reference asks the same greedy question {tries} times)")
    if reference_quirks:
        notes.append("--reference-quirks: flat-shape cause labels cut to their first character, "
                     "pairs filed under the view first seen, as the reference script does")
    started = time.perf_counter()
    results = []
    for path in kgs:
        coll = collect_label_pairs(path, reference_quirks=reference_quirks, lenient=lenient)
        res = judge_pairs(coll, judge, tmpl, tries, sample=sample, limit=limit)
        results.append(res)
        name = os.path.basename(str(path))
        if coll.stats.skipped:
            notes.append(coll.stats.summary())
        if coll.unlabelled:
            notes.append(f"{name}: {coll.unlabelled} pairs without a cause or effect label were not judged")
        if res.skipped_by_limit:
            notes.append(f"{name}: only the first {limit} of {limit + res.skipped_by_limit} pairs judged (limit)")
        unparsed = sum(j["unparsed"] for j in res.judgements)
        if unparsed:
            abstained = sum(1 for j in res.judgements if j["abstained"])
            example = next(a for j in res.judgements for a in j["answers"]
                           if isinstance(a, str) and read_answer(a) == "unparsed")
            notes.append(f"{name}: {unparsed} answers were neither yes nor no (e.g. {example!r}): counted as unparsed, "
                         f"not as no; {abstained} pairs got no other answer and have no verdict (abstained)")
        if coll.in_both_views:
            notes.append(f"{name}: {coll.in_both_views} pairs are both a type and an instance pair (counted in both views)")
    settings = {"tries": tries, "template": tmpl.name, "template_text": tmpl.text, "sampled": sample,
                "majority": majority(tries), "reference_quirks": reference_quirks, "limit": limit}
    report = PrecisionReport(results, {"spec": judge.spec, **judge.describe()}, judge.usage(), settings,
                             consistency, notes, seconds=time.perf_counter() - started)
    if write:
        root = Path(out) if out is not None else Layout.from_config(cfg).eval_out("precision")
        if report.failed:  # never replace the last complete results with an incomplete run
            write_partial_precision(report, root)
        else:
            write_precision_outputs(report, root, cfg=cfg, inputs={f"kg{i}": k for i, k in enumerate(kgs)})
            (root / PARTIAL_JSON).unlink(missing_ok=True)
    return report


PARTIAL_JSON = "precision.partial.json"


def write_partial_precision(report: PrecisionReport, root: Path) -> Path:
    """Write an incomplete run (some pairs could not be judged) to ``root/precision.partial.json``
    only: the summary, every judgement with its error, and ``"complete": false``. The complete
    results already in ``root`` (``precision.*``, the judgements, the manifest) stay as they
    were. Returns the path written."""
    from causalkg.core.jsonl import write_json

    root.mkdir(parents=True, exist_ok=True)
    path = root / PARTIAL_JSON
    write_json(path, {"complete": False, "failed": len(report.failed), **report.to_json(),
                      "judgements": [j for res in report.results for j in res.judgements]})
    report.written["partial"] = str(path)
    return path


NO_JUDGE_HINT = (
    "pass --judge openai:MODEL (an OpenAI-compatible endpoint: set llm.base_url and the key in "
    "$OPENAI_API_KEY) or --judge transformers:NAME_OR_PATH (a local model, e.g. "
    "allenai/tk-instruct-3b-def as in the reference), or set eval.precision.judge in causalkg.toml"
)


def _stem(path: str) -> str:
    name = os.path.basename(path)
    for suffix in (".gz", ".jsonl", ".json"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    return name or "kg"


def write_precision_outputs(report: PrecisionReport, root: Path, *, cfg: Config | None = None,
                            inputs: Mapping[str, Any] | None = None, plot: bool = True) -> dict[str, str]:
    """Write the summary (md, csv, json), the reference-layout table, per-KG judgements JSONL,
    the plot and the manifest under ``root``. Returns the paths written."""
    root.mkdir(parents=True, exist_ok=True)
    written: dict[str, str] = {}
    for fmt in ("md", "csv"):
        _write(root / f"precision.{fmt}", report.render(fmt) + "\n")
        written[f"summary_{fmt}"] = str(root / f"precision.{fmt}")
    from causalkg.core.jsonl import write_json

    write_json(root / "precision.json", report.to_json())
    written["summary_json"] = str(root / "precision.json")
    _write(root / "precision-reference.md", "# Precision Results\n\n" + report.render_reference("md") + "\n")
    _write(root / "precision-reference.csv", report.render_reference("csv") + "\n")
    written["reference_md"] = str(root / "precision-reference.md")
    written["reference_csv"] = str(root / "precision-reference.csv")
    for res in report.results:
        p = root / _stem(res.kg) / "judgements.jsonl"
        write_jsonl(p, ({"schema_version": "1", **j} for j in res.judgements))
        written[f"judgements:{os.path.basename(res.kg)}"] = str(p)
    if plot and any(r["judged"] for r in report.rows):
        from causalkg.evaluation.wikicausal.plots import plot_precision

        plot_precision(report.rows, root / "precision.png")
        written["plot"] = str(root / "precision.png")
    manifest = build_manifest(
        "eval-precision", cfg, inputs={k: v for k, v in (inputs or {}).items() if Path(v).exists()},
        outputs=written, models={"judge": _recorded_judge(report.judge)},
        counts={"pairs": sum(r["pairs"] for r in report.rows if r["view"] == "full"),
                "failed": len(report.failed), "abstained": len(report.abstained), **{f"usage_{k}": v for k, v in report.usage.items()}},
        timings={"total": report.seconds}, notes=report.notes, extra={"settings": report.settings},
    )
    write_manifest(root, manifest)
    report.written.update(written)
    return written


def _recorded_judge(judge: Mapping[str, Any]) -> dict[str, Any]:
    """The judge as the manifest records it: its spec by versioned registry name (``openai.v1:MODEL``);
    a judge handed in as an object under an unregistered name keeps its spec."""
    out = dict(judge)
    if out.get("spec"):
        out["spec"] = versioned_spec("judge", out["spec"], keep_unknown=True)
    return out


def _write(path: Path, text: str) -> None:
    with atomic_write(path) as fh:
        fh.write(text)
