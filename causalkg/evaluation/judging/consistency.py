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

The pieces: ``consistency_metrics`` (the metrics), ``consistency_input`` (the pairs),
``consistency_parse`` (reading the judge's answers) and ``consistency_protocol`` (generating and
ranking); this module runs them (``consistency``, the ``causalkg eval consistency`` command) and
re-exports their names.

Results go to ``data/eval/consistency/<judge>/<run>/`` with a manifest; ``load_judge_consistency``
finds the latest one for a judge, so ``eval precision`` can print it beside the precision.
"""

from __future__ import annotations

import logging
import math
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from causalkg.core.cache import DiskCache
from causalkg.core.config import Config
from causalkg.core.errors import ConfigError
from causalkg.core.jsonl import ReadStats, write_json, write_jsonl
from causalkg.core.layout import Layout
from causalkg.core.models import stage_device
from causalkg.core.manifest import build_manifest, describe_input, fingerprint, read_manifest, write_manifest
from causalkg.registry import Spec, parse_spec, registry, split_version, versioned_spec
from causalkg.evaluation.judging.consistency_metrics import (
    COMBINED, IGC_VARIANTS, INTENDED_LABELS, METRICS, confusion_matrix, pair_metrics, plot_confusion,
    summarize,
)
from causalkg.evaluation.judging.consistency_input import CausalPair, read_pairs, sample_pairs
from causalkg.evaluation.judging.consistency_protocol import (
    PairRun, split_template, _generate, _rank_llm, _rank_tokenprob,
)
# Re-exported, so that the consistency API stays in one place.
from causalkg.evaluation.judging.consistency_metrics import (  # noqa: F401
    DEFAULT_CONJUNCTIONS, DEFEATERS, DELTA_CAUSAL_COLUMNS, LETTERS, N_ITEMS, SUPPORTERS, check_ranks,
    cross_group_position, igc_density, igc_silhouette, kendall_tau, order_from_ranks,
    polarity_change_distance, polarity_sequence, ranks_from_order, silhouette,
)
from causalkg.evaluation.judging.consistency_parse import (  # noqa: F401
    VARIANT_KEYS, parse_ranking, parse_seed, parse_variants,
)
from causalkg.evaluation.judging.consistency_protocol import (  # noqa: F401
    intended_order, presentation_order, ranking_prompt, ranks_from_scores, tokenprob_inputs,
)

log = logging.getLogger(__name__)


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
    from causalkg.core.llm import ChatClient

    return ChatClient.from_config(cfg, model=spec.arg)


@dataclass(frozen=True)
class _Options:
    """The resolved options of one run (arguments over the ``eval.consistency.*`` keys)."""

    spec: Spec
    judge: str
    ranker: Any
    method: str  # "llm" | "tokenprob"
    limit: int
    seed: int
    igc: str
    conjunctions: list[str]
    template: str
    max_attempts: int
    temperature: float


def _resolve_options(cfg: Config, *, judge: str | None, limit: int | None, seed: int | None, igc: str | None,
                     conjunctions: Sequence[str] | None, template: str | None) -> _Options:
    ev = cfg["eval"]
    spec = normalize_judge(judge or ev["consistency"]["judge"] or f"openai:{cfg['llm']['model']}")
    ranker = JUDGES.get(spec.backend)
    method = ranker.method
    igc = igc or ev["consistency"]["igc"]
    if igc not in IGC_VARIANTS:
        raise ConfigError(f"unknown IGC variant {igc!r}", hint=f"choose one of: {', '.join(IGC_VARIANTS)}")
    conjunctions = list(conjunctions or ev["consistency"]["conjunctions"])
    template = template or ev["consistency"]["template"]
    if method == "tokenprob":
        if not conjunctions:
            raise ConfigError("no conjunctions for the token-probability judge", hint="set eval.consistency.conjunctions")
        split_template(template)
    return _Options(spec, str(spec), ranker, method,
                    ev["consistency"]["limit"] if limit is None else int(limit),
                    ev["consistency"]["seed"] if seed is None else int(seed),
                    igc, conjunctions, template,
                    int(ev["consistency"]["max_attempts"]), float(ev["consistency"]["temperature"]))


def _generator_spec(cfg: Config, opts: _Options, chosen: Sequence[CausalPair], generator: str | None) -> Spec | None:
    """Who writes the intermediates the chosen pairs lack (None: nobody needs to, or nobody can)."""
    lacking = sum(p.intermediates is None for p in chosen)
    gen_text = generator or cfg["eval"]["consistency"]["generator"] or (opts.judge if opts.method == "llm" else "")
    if lacking and not gen_text and lacking == len(chosen):
        raise ConfigError(
            "the token-probability judge ranks intermediates but does not write them",
            hint="pass --generator openai:MODEL, or --pairs a previous run's pairs.jsonl (it carries intermediates)",
        )
    if not (lacking and gen_text):
        return None
    gen_spec = normalize_judge(gen_text)
    if JUDGES.base(gen_spec.backend) != "openai":
        raise ConfigError(f"generator {gen_spec} cannot write intermediates", hint="use an openai:MODEL generator")
    return gen_spec


def _judge_runs(cfg: Config, opts: _Options, runs: list[PairRun], gen_spec: Spec | None) -> tuple[list[str], str, dict[str, Any]]:
    """Generate the missing intermediates and rank every pair. Returns the ranking variants, the
    headline variant and the chat clients used (for their usage)."""
    if gen_spec is None:  # some pairs of a previous run came without intermediates (that run failed them)
        for r in runs:
            if r.intermediates is None:
                r.error = "no intermediates (pass --generator openai:MODEL to write them)"
    clients: dict[str, Any] = {}
    if gen_spec is not None:
        clients[str(gen_spec)] = _chat_client(cfg, gen_spec)
        _generate(clients[str(gen_spec)], runs, max_attempts=opts.max_attempts, temperature=opts.temperature)
    variants, headline = opts.ranker(opts.spec.arg, cfg=cfg, runs=runs, clients=clients, seed=opts.seed,
                                     max_attempts=opts.max_attempts, temperature=opts.temperature,
                                     conjunctions=opts.conjunctions, template=opts.template)
    return variants, headline, clients


def _write_run(cfg: Config, result: ConsistencyResult, runs: list[PairRun], *, opts: _Options, pairs: str | Path,
               pairs_in_file: int, settings: dict[str, Any], stats: ReadStats, elapsed: float) -> None:
    """``pairs.jsonl``, ``summary.json``, ``confusion.png`` (when a pair was scored), ``manifest.json``."""
    out, headline = result.out, result.headline
    write_jsonl(out / "pairs.jsonl", (r.record(opts.igc) for r in runs))
    summary_doc = {
        "judge": opts.judge, "method": opts.method, "headline": headline, "igc": opts.igc, "pairs": len(runs),
        "scored": result.scored, "failed": len(result.failures), "failures": result.failures,
        "summary": result.summary, "confusion": result.confusion, "intended_labels": list(INTENDED_LABELS),
        "usage": result.usage,
    }
    write_json(out / "summary.json", summary_doc)
    if result.scored:
        plot_confusion(result.confusion[headline], out / "confusion.png",
                       f"{opts.judge} ({headline}): {result.scored} pairs")
    notes = [f"{len(result.failures)} pair(s) without a ranking (listed in summary.json)"] if result.failures else []
    if stats.skipped:
        notes.append(f"{stats.skipped} bad input line(s) skipped (--lenient)")
    # The judge and the generator by versioned registry name (openai.v1:MODEL).
    judge = versioned_spec("consistency-judge", opts.spec)
    generator = versioned_spec("consistency-judge", settings["generator"]) if settings["generator"] else None
    manifest = build_manifest(
        "eval.consistency", cfg, inputs={"pairs": pairs}, outputs={"pairs": "pairs.jsonl", "summary": "summary.json",
                                                                    "confusion": "confusion.png" if result.scored else None},
        counts={"pairs_in_file": pairs_in_file, "pairs": len(runs), "scored": result.scored,
                "failed": len(result.failures)},
        timings={"total": elapsed}, models={"judge": judge, "generator": generator}, notes=notes,
        extra={"judge": judge, "method": opts.method, "settings": settings, "headline": headline,
               "figures": result.headline_figures(), "usage": result.usage},
    )
    write_manifest(out, manifest)


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
    opts = _resolve_options(cfg, judge=judge, limit=limit, seed=seed, igc=igc, conjunctions=conjunctions,
                            template=template)
    stats = ReadStats()
    all_pairs = read_pairs(pairs, lenient=lenient, stats=stats)
    chosen = sample_pairs(all_pairs, opts.limit, opts.seed)
    gen_spec = _generator_spec(cfg, opts, chosen, generator)
    tokenprob = opts.method == "tokenprob"
    settings = {
        "judge": opts.judge, "method": opts.method, "generator": str(gen_spec) if gen_spec else None,
        "limit": opts.limit, "seed": opts.seed, "igc": opts.igc,
        "conjunctions": opts.conjunctions if tokenprob else None, "template": opts.template if tokenprob else None,
        "input": describe_input(pairs)["sha256"],
    }
    if out is None:
        root = Layout.from_config(cfg).eval_out("consistency")
        out = root / judge_slug(opts.judge) / f"{judge_slug(Path(pairs).stem)}-{fingerprint(settings)[:10]}"
    out = Path(out)
    if dry_run:
        plan = {"judge": opts.judge, "method": opts.method, "generator": settings["generator"],
                "pairs_in_file": len(all_pairs), "pairs": len(chosen),
                "needs_generation": sum(p.intermediates is None for p in chosen),
                "igc": opts.igc, "conjunctions": settings["conjunctions"], "out": str(out)}
        return ConsistencyResult(opts.judge, opts.method, [], "", {}, {}, 0, 0, [], out, plan=plan)

    started = time.time()
    runs = [PairRun(p, intermediates=list(p.intermediates) if p.intermediates else None) for p in chosen]
    variants, headline, clients = _judge_runs(cfg, opts, runs, gen_spec)
    elapsed = time.time() - started

    scored = [r for r in runs if r.error is None and r.rankings]
    summary = {v: summarize([pair_metrics(r.rankings[v], igc=opts.igc) for r in scored]) for v in variants}
    confusion = {v: confusion_matrix(r.rankings[v] for r in scored) for v in variants}
    failures = [{"id": r.pair.id, "error": r.error or "no ranking"} for r in runs if r.error is not None or not r.rankings]
    usage = {name: c.usage.as_dict() for name, c in clients.items()} or None
    result = ConsistencyResult(opts.judge, opts.method, variants, headline, summary, confusion, len(runs), len(scored),
                               failures, out, usage)
    _write_run(cfg, result, runs, opts=opts, pairs=pairs, pairs_in_file=len(all_pairs), settings=settings,
               stats=stats, elapsed=elapsed)
    return result


def load_judge_consistency(cfg: Config, judge_spec: str) -> dict[str, Any] | None:
    """The latest consistency figures saved for a judge, or None when it was never measured.

    Looks at every ``manifest.json`` under ``<paths.data>/eval/consistency/`` whose judge is
    ``judge_spec`` (``openai:MODEL`` / ``transformers:PATH``; a bare model name means openai; the
    manifests name it by version, ``openai.v1:MODEL``, as does ``judge_spec`` or not) and returns
    the newest: ``{"judge", "method", "headline", "created", "path", "pairs", "scored",
    "failed", "figures": {metric: {"mean", "std"}}}`` with metrics tau_supporters, tau_defeaters,
    tau_all, cgp, igc.
    """
    try:
        wanted = str(normalize_judge(judge_spec))
        wanted_versioned = _versioned_judge(wanted)
    except ConfigError:
        return None
    if wanted_versioned is None:
        return None
    root = Layout.from_config(cfg).eval_out("consistency")
    best: dict[str, Any] | None = None
    for mpath in sorted(root.glob("*/*/manifest.json")):
        m = read_manifest(mpath.parent)
        if (not m or m.get("stage") != "eval.consistency" or not m.get("figures")
                or _versioned_judge(str(m.get("judge") or "")) != wanted_versioned):
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


def _versioned_judge(spec: str) -> str | None:
    """A judge spec by versioned name, so that ``openai:m`` (older manifests) and ``openai.v1:m``
    match; None when it is not a consistency judge."""
    try:
        return versioned_spec("consistency-judge", normalize_judge(spec))
    except ConfigError:
        return None


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
