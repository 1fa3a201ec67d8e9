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

The pieces: ``sqc_facts`` (facts and units), ``sqc_matchers`` (matchers and complementers) and
``sqc_scoring`` (the figures); this module builds the graders from their specs and runs the measure
(``sqc``, the ``causalkg eval sqc`` command), and re-exports their names.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any, Iterable

from causalkg.core.cache import DiskCache
from causalkg.core.config import Config
from causalkg.core.errors import ConfigError
from causalkg.core.jsonl import write_json, write_jsonl
from causalkg.core.layout import Layout
from causalkg.core.models import stage_device
from causalkg.core.manifest import build_manifest, write_manifest
from causalkg.registry import Registry, Spec, parse_spec, registry, split_version, versioned_spec
from causalkg.evaluation.judging.sqc_facts import read_units, Templates
from causalkg.evaluation.judging.sqc_matchers import EmbeddingMatcher, LLMComplementer, LLMMatcher, NLIComplementer
from causalkg.evaluation.judging.sqc_scoring import score_units, SQCResult
# Re-exported, so that the SQC API stays in one place.
from causalkg.evaluation.judging.sqc_facts import (  # noqa: F401
    ALL_UNITS, DUPLICATE_MODES, Fact, fact_from_record, Unit,
)
from causalkg.evaluation.judging.sqc_matchers import (  # noqa: F401
    Match, parse_probability, UnitMatches, _match_line_parser,
)
from causalkg.evaluation.judging.sqc_scoring import sqc_figures  # noqa: F401

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
    from causalkg.core.llm import ChatClient

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
    from causalkg.core.llm import ChatClient

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


# An incomplete run (some units could not be graded) is written under these names, beside the
# complete result of an earlier run (units.jsonl, summary.json, manifest.json), which it never replaces.
PARTIAL_UNITS, PARTIAL_SUMMARY = "units.partial.jsonl", "summary.partial.json"


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
    if result.summary["failed_units"]:
        # Incomplete: written beside the last complete result, which is kept as it is.
        write_jsonl(out / PARTIAL_UNITS, result.units)
        write_json(out / PARTIAL_SUMMARY, result.summary)
        result.partial = True
        return result
    write_jsonl(out / "units.jsonl", result.units)
    write_json(out / "summary.json", result.summary)
    for name in (PARTIAL_UNITS, PARTIAL_SUMMARY):  # a complete result replaces an earlier partial one
        (out / name).unlink(missing_ok=True)
    inputs = {k: v for k, v in (("units", units), ("predicted", predicted), ("gold", gold), ("texts", texts)) if v is not None}
    notes = [s.summary() for s in stats if s.skipped]
    if result.summary["failed_units"]:
        notes.append(f"{len(result.summary['failed_units'])} unit(s) could not be graded (summary.json lists them)")
    write_manifest(out, build_manifest(
        "eval.sqc", cfg, inputs=inputs, outputs={"units": "units.jsonl", "summary": "summary.json"},
        counts={"units": len(unit_list), "scored_units": result.summary["micro"]["units"],
                "predicted": plan["predicted"], "gold": plan["gold"]},
        timings={"total": time.time() - started},
        models={"matcher": versioned_spec("sqc-matcher", m.spec, keep_unknown=True),
                "complementer": versioned_spec("sqc-complementer", c.spec, keep_unknown=True) if c else "none"},
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
