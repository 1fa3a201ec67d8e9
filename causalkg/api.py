"""The Python API: every step of the flow, with the CLI's names and arguments.

``import causalkg as ck`` reaches these functions (lazily: importing ``causalkg`` imports
none of the stages). Each step returns a typed result from ``causalkg.results`` that renders
itself with ``to_table(fmt)``; the ``causalkg`` command calls the same function and prints that.

    cfg = ck.load_config(overrides={"paths.data": "/tmp/ckdata"})
    ck.build_corpus(source="snapshot", cfg=cfg)
    ck.build_index(cfg=cfg)
    ck.extract(extractor="patterns", cfg=cfg)
    print(ck.assemble(cfg=cfg))
    print(ck.recall(cfg.path("paths.data") / "kg" / "causal_kg.jsonl", cfg=cfg).to_table("md"))

Every function takes ``cfg``: a ``Config`` (from ``load_config``), a path to a TOML file over
the defaults, or None (the defaults, and ``./causalkg.toml`` when present). Keyword options
that are settings override the configuration for this call only, and are recorded in the
manifests like ``--set`` would be. Errors are ``causalkg.core.errors.CausalKGError`` subclasses.

Where it sits: above the four stages (corpus -> linking -> kg -> evaluation), which it imports
inside each function; no stage imports this module.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any, Mapping, Sequence

from causalkg.core.config import Config, load_config
from causalkg.core.errors import ConfigError, SourceError
from causalkg.results import (
    Agreement, Alignment, Assembly, ConfigView, Consistency, CorpusBuild, EloRatings, Export, Extraction,
    HumanPrecisionResult, IndexBuild, Links, MetaEvaluation, Precision, QueryAnswer, Recall, RegistryListing, Report, SQCScore,
    SoftScores, Stats, Summary, Training, WordNetInstall,
)

PathLike = str | os.PathLike
CfgLike = Config | PathLike | None


def resolve_config(cfg: CfgLike = None, overrides: Mapping[str, Any] | None = None) -> Config:
    """A ``Config`` from what a caller passed: a Config, a TOML path, or None (the defaults and
    ``./causalkg.toml``); ``overrides`` (dotted keys, ``None`` values ignored) go over it."""
    if cfg is None or isinstance(cfg, (str, os.PathLike)):
        cfg = load_config(cfg)
    elif not isinstance(cfg, Config):
        raise ConfigError(f"cfg must be a Config, a TOML path or None, got {type(cfg).__name__}",
                          hint="use causalkg.load_config(...)")
    return cfg.with_overrides(dict(overrides or {}), origin="API")


def show_config(*, cfg: CfgLike = None) -> ConfigView:
    """The resolved configuration (``causalkg config show``)."""
    c = resolve_config(cfg)
    return ConfigView(data=c.to_dict(), sources=list(c.sources), detail=c)


def list_registry(*, kind: str | None = None) -> RegistryListing:
    """What can be swapped, by versioned name (``causalkg registry list``): extractors, judges,
    similarity measures, the SQC matcher and complementer, the consistency judge, encoders,
    export targets. ``kind`` keeps one kind. Names without a version (``qa``) mean the newest (``qa.v1``)."""
    from causalkg.registry import CATALOG, registry

    kinds = [kind] if kind else sorted(CATALOG)
    entries = []
    for k in kinds:
        reg = registry(k)
        for name in reg.names():
            base = name.rsplit(".v", 1)[0]
            aliases = ", ".join(sorted(a for a, b in reg.aliases().items() if b == base))
            entries.append({"kind": k, "name": name, "aliases": aliases, "target": reg.target(name)})
    return RegistryListing(entries=entries)


# --- corpus ----------------------------------------------------------------------------------


def build_corpus(*, source: str | None = None, endpoint: str | None = None, wikidata_dump: PathLike | None = None,
                 force: bool = False,
                 only: str | None = None, dump: PathLike | None = None, index: PathLike | None = None,
                 select: str | None = None, workers: int | None = None, dry_run: bool = False,
                 lenient: bool = False, allow_shrink: bool = False, cfg: CfgLike = None) -> CorpusBuild:
    """Build the corpus (``causalkg corpus build``): the Wikidata files in ``<paths.data>/wikidata``
    (event classes, concepts, Base KG), then the Wikipedia documents in ``<paths.data>/corpus``.

    ``source``: ``live`` | ``snapshot`` | ``auto`` | ``json-dump`` (wikidata.source; json-dump
    reads ``wikidata_dump``, a Wikidata JSON dump); ``force``: ask the endpoint
    again instead of using cached answers; ``only``: ``wikidata`` | ``wikipedia``; ``dump``,
    ``index``, ``select``, ``workers``, ``endpoint``: the settings of the same names. ``dry_run``
    validates and returns the plan. ``lenient``: build the documents even when a damaged dump
    lost some (else SourceError, saying how many and where, the corpus kept); ``allow_shrink``:
    let such a corpus, or an empty output, replace a larger one (``force`` never does). Raises
    SourceError when an input is missing or a source fails, ConfigError on bad settings.
    """
    from causalkg.core.jsonl import allowing_empty_outputs
    from causalkg.corpus.build import build

    c = resolve_config(cfg, {"wikidata.endpoint": endpoint, "wikidata.dump": _str(wikidata_dump),
                             "wikipedia.dump": _str(dump),
                             "wikipedia.index": _str(index), "wikipedia.select": select, "run.workers": workers})
    with allowing_empty_outputs(True) if allow_shrink else contextlib.nullcontext():
        d = build(c, source=source, refresh=force, only=only, dry_run=dry_run, lenient=lenient)
    return CorpusBuild(wikidata=d.get("wikidata"), wikipedia=d.get("wikipedia"), dry_run=dry_run, detail=d)


# --- linking ---------------------------------------------------------------------------------


def build_index(*, concepts: PathLike | None = None, model: str | None = None, index: str | None = None,
                force: bool = False, lenient: bool = False, cfg: CfgLike = None) -> IndexBuild:
    """Build the concept index (``causalkg link build``) in ``<paths.data>/linking``, or find it current.

    ``concepts``: the vocabulary (default ``<paths.data>/wikidata/concepts.jsonl``); ``model``,
    ``index``: linking.model and linking.index; ``force`` rebuilds a current index; ``lenient``
    skips and counts bad concept lines. Raises SourceError when the concepts file is missing.
    """
    from causalkg.linking.index import build_index as _build_index

    d = _build_index(resolve_config(cfg), concepts_path=concepts, refresh=force, model=model, index=index,
                     lenient=lenient)
    return IndexBuild.from_dict(d)


def link(phrases: str | Sequence[str], *, top_k: int | None = None, threshold: float | None = None,
         instance_threshold: float | None = None, kind: str | None = None, under: Sequence[str] | None = None,
         document_concept: str | None = None, cfg: CfgLike = None) -> Links:
    """Link phrases to Wikidata concepts (``causalkg link query``): ranked candidates per phrase.

    ``kind``: ``class`` | ``instance``; ``under``: only concepts under these classes;
    ``document_concept``: the phrases' document QID (preferred, with its seed classes). Raises
    SourceError when the index is missing or stale.
    """
    from causalkg.linking.linker import query

    items = [phrases] if isinstance(phrases, str) else list(phrases)
    rows = query(resolve_config(cfg), items, top_k=top_k, threshold=threshold, kind=kind, under=under,
                 document_concept=document_concept, instance_threshold=instance_threshold)
    return Links(phrases=rows, detail=rows)


# --- kg --------------------------------------------------------------------------------------


def train_qa(*, out: PathLike | None = None, data: PathLike | None = None, steps: int | None = None,
             batch_size: int | None = None, learning_rate: float | None = None, seed: int | None = None,
             base_model: str | None = None, device: str | None = None, if_missing: bool = False,
             dry_run: bool = False, cfg: CfgLike = None) -> Training:
    """Train the offline cause-effect QA model (``causalkg kg train-qa``) into ``out``
    (default extract.qa_model). ``if_missing``: do nothing when the folder holds a model trained
    with the same plan. ``dry_run``: check the data and return the plan."""
    from causalkg.kg.train_qa import train_qa as _train_qa

    r = _train_qa(resolve_config(cfg), output=out, data=data, steps=steps, batch_size=batch_size,
                  learning_rate=learning_rate, seed=seed, base_model=base_model, if_missing=if_missing, device=device,
                  dry_run=dry_run)
    plan = None
    if r.skipped and r.reason == "dry run":
        plan = {**dict(r.manifest.get("training", {})), "output": str(r.output)}
    return Training(output=Path(r.output), skipped=r.skipped, reason=r.reason, steps=r.steps, seconds=r.seconds,
                    validation=dict(r.validation), plan=plan, detail=r)


def install_models(*, package: PathLike | None = None, force: bool = False, cfg: CfgLike = None):
    """Install the shipped gate and QA models (``causalkg kg install-models``) from ``package``
    (default extract.model_package) into extract.gate_model and extract.qa_model, in float32,
    after checking every file's SHA-256. Returns ``kg.modelpack.InstallModelsResult``."""
    from causalkg.kg.modelpack import install_models as _install_models

    return _install_models(resolve_config(cfg), package=package, force=force)


def extract(*, extractor: str | None = None, input: PathLike | None = None, out: PathLike | None = None,
            shard_size: int | None = None, limit: int | None = None, force: bool = False, lenient: bool = False,
            dry_run: bool = False, workers: int | None = None, cfg: CfgLike = None) -> Extraction:
    """Extract cause -> effect pairs (``causalkg kg extract``) from the corpus (or any
    ``{"id", "text"}`` JSONL) to ``out`` (default ``<paths.data>/kg/extractions.jsonl``).

    ``extractor``: ``qa`` | ``patterns`` | ``llm``, optionally ``NAME:ARG`` (``qa:MODEL``,
    ``llm:MODEL``); ``force`` redoes current shards; ``limit`` stops after N documents;
    ``workers``: processes of the local engine (``extract.workers``; the same output). A killed
    run restarted resumes. Raises SchemaError on a bad input line unless ``lenient``.
    """
    from causalkg.kg.extract import extract as _extract

    c = resolve_config(cfg).with_overrides({"extract.workers": workers}, origin="kg extract")
    r = _extract(c, extractor=extractor, input=input, output=out, shard_size=shard_size,
                 lenient=lenient, force=force, dry_run=dry_run, limit=limit)
    return Extraction(output=Path(r.output), manifest_path=Path(r.manifest_path), skipped=r.skipped,
                      documents=r.documents, extractions=r.extractions, counts=dict(r.counts), plan=dict(r.plan),
                      detail=r)


def assemble(*, extractions: PathLike | None = None, linked: PathLike | None = None, corpus: PathLike | None = None,
             concepts: PathLike | None = None, out: PathLike | None = None, lift: str | None = None,
             min_support: int | None = None, allow_self_loops: bool | None = None, shard_size: int | None = None,
             force: bool = False, lenient: bool = False, dry_run: bool = False, cfg: CfgLike = None) -> Assembly:
    """Link the extracted pairs and build the causal KG (``causalkg kg assemble``) in ``out``
    (default ``<paths.data>/kg``): flat pairs, the WikiCausal nested shape, Turtle, N-Triples,
    GraphML and a manifest. ``linked``: mentions already linked (no linker is run), instead of
    ``extractions``. ``lift``, ``min_support``, ``allow_self_loops``, ``shard_size``: the kg.*
    settings. Skipped when current unless ``force`` (which relinks every shard too); resumes
    after a kill."""
    from causalkg.kg.assemble import assemble as _assemble

    if extractions and linked:
        raise ConfigError("give --extractions or --linked, not both")
    c = resolve_config(cfg).with_overrides({"kg.lift": lift, "kg.min_support": min_support,
                                            "kg.allow_self_loops": allow_self_loops, "kg.shard_size": shard_size},
                                           origin="kg assemble")
    r = _assemble(c, extractions=extractions, linked=linked, corpus=corpus, concepts=concepts, out=out, force=force,
                  lenient=lenient, dry_run=dry_run)
    return Assembly(out=Path(r.out), skipped=r.skipped, counts=dict(r.counts), notes=list(r.notes), plan=r.plan,
                    detail=r)


def export(*, endpoint: str | None = None, sparql_endpoint: str | None = None, graph: str | None = None,
           store: PathLike | None = None, kg: PathLike | None = None, base_kg: PathLike | None = None,
           with_base_kg: bool = True, chunk_triples: int | None = None, force: bool = False, dry_run: bool = False,
           cfg: CfgLike = None) -> Export:
    """Load the KG (and the Base KG) into the embedded Oxigraph store in ``<paths.data>/store``,
    or, with ``endpoint``, into any SPARQL 1.1 Graph Store HTTP Protocol service
    (``causalkg kg export``); ``kg.target`` names the export target (default ``auto``). Raises
    SourceError when the store or server fails, ConfigError for an unknown target."""
    from causalkg.kg.store import export as _export

    r = _export(resolve_config(cfg), endpoint=endpoint, sparql_endpoint=sparql_endpoint, graph=graph, store=store,
                kg=kg, base_kg=base_kg, with_base_kg=with_base_kg, chunk_triples=chunk_triples, force=force,
                dry_run=dry_run)
    return Export(target=r.target, graphs=dict(r.graphs), skipped=r.skipped, dry_run=dry_run, seconds=r.seconds,
                  notes=list(r.notes), detail=r)


def query(sparql: str, *, store: PathLike | None = None, union: bool = False, allow_service: bool = False,
          cfg: CfgLike = None) -> QueryAnswer:
    """Run a SPARQL query over the embedded store (``causalkg kg query``); the KG's named graph
    is the default graph unless ``union``. A ``SERVICE`` clause is refused (ConfigError) unless
    ``allow_service``. Raises SourceError when the store is missing."""
    from causalkg.kg.store import query as _query

    if not sparql or not sparql.strip():
        raise ConfigError("no query given", hint="causalkg kg query 'SELECT ...' or --file query.rq")
    return QueryAnswer(detail=_query(resolve_config(cfg), sparql, store=store, union=union, allow_service=allow_service))


def stats(*, kg: PathLike | None = None, base_kg: PathLike | None = None, level: str = "all", top: int | None = None,
          cfg: CfgLike = None) -> Stats:
    """Graph statistics of the KG (``causalkg kg stats``) and its agreement with the Base KG."""
    from causalkg.kg.stats import stats as _stats

    return Stats(detail=_stats(resolve_config(cfg), kg=kg, base_kg=base_kg, level=level, top=top))


def summary(*, kg: PathLike | None = None, top: int | None = None, cfg: CfgLike = None) -> Summary:
    """Counts and the best-supported edges of the KG (``causalkg kg summary``)."""
    from causalkg.kg.stats import summary as _summary

    return Summary(detail=_summary(resolve_config(cfg), kg=kg, top=top))


# --- evaluation ------------------------------------------------------------------------------


def _kgs(kg: PathLike | Sequence[PathLike]) -> list[PathLike]:
    items = [kg] if isinstance(kg, (str, os.PathLike)) else list(kg)
    if not items:
        raise ConfigError("no KG given", hint="pass one KG JSONL or a list of them")
    return items


def recall(kg: PathLike | Sequence[PathLike], *, base_kg: PathLike | None = None, any_id: bool | None = None,
           corpus: PathLike | None = None, per_class: bool = False, out: PathLike | None = None,
           lenient: bool = False, cfg: CfgLike = None) -> Recall:
    """Recall of one or more KGs against the Base KG, as WikiCausal defines it (``causalkg eval recall``).

    ``base_kg``: default eval.recall.base_kg (the bundled WikiCausal Base KG v1); ``any_id``
    (default eval.recall.any_id) adds the any-candidate-id columns; ``corpus`` adds reachable
    recall; ``per_class`` also renders the per-class table; ``out`` writes tables, per-class CSV,
    every Base pair found or missed and a plot. Raises SchemaError on a bad line unless ``lenient``.
    """
    from causalkg.evaluation.wikicausal.recall import eval_recall
    from causalkg.evaluation.wikicausal.report import bundled_path

    c = resolve_config(cfg)
    base = Path(base_kg) if base_kg else bundled_path(c, _eval(c, "recall", "base_kg"))
    report = eval_recall(_kgs(kg), base, any_id=_eval(c, "recall", "any_id") if any_id is None else any_id,
                         corpus=corpus, lenient=lenient, out=out, cfg=c)
    return Recall(base_kg=base, per_class=per_class, notes=list(report.notes), written=dict(report.written),
                  detail=report)


def precision(kg: PathLike | Sequence[PathLike] | None, *, judge: str | None = None, tries: int | None = None,
              template: str | None = None, temperature: float | None = None, seed: int | None = None,
              concurrency: int | None = None, limit: int | None = None, reference_quirks: bool = False,
              reference_table: bool = False, out: PathLike | None = None, lenient: bool = False,
              cfg: CfgLike = None) -> Precision:
    """Precision of KGs judged by a language model, as WikiCausal defines it (``causalkg eval precision``).

    ``judge``: ``openai:MODEL`` or ``transformers:NAME_OR_PATH`` (default eval.precision.judge);
    ``tries`` answers per pair, correct on a majority. Answers are cached on disk. Raises
    ConfigError when no judge is configured, SourceError when some pairs could not be judged
    (the result is on the exception's ``result``; rerunning retries them).
    """
    from causalkg.evaluation.wikicausal.judges import create_judge
    from causalkg.evaluation.wikicausal.precision import NO_JUDGE_HINT, check_tries, eval_precision, judge_consistency

    if not kg:
        raise ConfigError("no KG to judge", hint="pass --kg FILE (repeatable), or --human FILE for people's judgements")
    c = resolve_config(cfg)
    spec = judge or _eval(c, "precision", "judge")
    if not spec:
        raise ConfigError("no judge configured", hint=NO_JUDGE_HINT)
    if tries is not None:
        check_tries(tries)
    extra = {"concurrency": concurrency} if concurrency and spec.startswith("openai") else {}
    j = create_judge(spec, c, temperature=temperature, seed=seed, **extra)
    report = eval_precision(_kgs(kg), j, cfg=c, tries=tries, template=template, reference_quirks=reference_quirks,
                            limit=limit, lenient=lenient, out=out, consistency=judge_consistency(j.spec, c))
    result = Precision(judge=j.spec, reference_table=reference_table, notes=list(report.notes),
                       failed=list(report.failed), written=dict(report.written), detail=report)
    if report.failed:
        n_pairs = sum(r["pairs"] for r in report.rows if r["view"] == "full")
        kept = ""
        if report.written.get("partial"):
            partial = Path(report.written["partial"])
            kept = (f"; this run's partial result is in {partial}"
                    + (", the last complete one is kept" if (partial.parent / "precision.json").exists() else ""))
        err = SourceError(f"{len(report.failed)} of {n_pairs} pairs could not be judged "
                          f"(first error: {report.failed[0]['error']}){kept}",
                          hint="rerun the same command to retry them; answers so far are cached")
        err.result = result  # type: ignore[attr-defined]
        raise err
    return result


def human_precision(judgements: PathLike, *, llm: Sequence[PathLike] | None = None, lenient: bool = False,
                    cfg: CfgLike = None) -> HumanPrecisionResult:
    """Precision from people's judgements (``causalkg eval precision --human``): the JSONL that
    ``causalkg serve`` appends to, with a 95% Wilson interval, and Cohen's kappa with the LLM
    judge's verdicts in ``llm`` (default: every ``<paths.data>/eval/precision/*/judgements.jsonl``).
    Raises SourceError when the file is missing."""
    from causalkg.evaluation.wikicausal.human import human_precision as _human

    c = resolve_config(cfg)
    from causalkg.core.layout import Layout

    files = list(llm) if llm else sorted(Layout.from_config(c).eval_out("precision").glob("*/judgements.jsonl"))
    r = _human(judgements, llm=files, lenient=lenient)
    return HumanPrecisionResult(precision=r.precision, ci_low=r.ci_low, ci_high=r.ci_high, notes=list(r.notes), detail=r)


def report(*, judge: str | None = None, tries: int | None = None, limit: int | None = None, out: PathLike | None = None,
           plots: bool = True, cfg: CfgLike = None) -> Report:
    """Write ``<paths.data>/eval/report.md`` (``causalkg eval report``): recall of our KG and the
    peers against both Base KGs, and precision when a judge is configured. ``status`` is 1 when
    precision was asked for and failed (the report says why)."""
    from causalkg.evaluation.wikicausal.report import eval_report

    r = eval_report(resolve_config(cfg), judge=judge, out=out, tries=tries, limit=limit, plot=plots)
    return Report(path=Path(r.path), status=r.status, detail=r)


def soft(gold: PathLike, pred: PathLike, *, measures: Sequence[str] | None = None, mode: str | None = None,
         w: float | None = None, non_textual: Sequence[str] | None = None, one_to_one: bool = False,
         out: PathLike | None = None, write: bool = True, lenient: bool = False, cfg: CfgLike = None) -> SoftScores:
    """Soft edge measures of predicted graphs against gold ones (``causalkg eval soft``): P/R/F1
    with near matches (``measures``: ``NAME[:ARG][=THETA]``) and partial credit ``w``. ``write``
    false: nothing is written (``--no-write``)."""
    from causalkg.evaluation.graph.soft import soft as _soft

    run = _soft(gold, pred, measures=measures, mode=mode, w=w, non_textual=non_textual,
                assignment="one-to-one" if one_to_one else None, lenient=lenient, out_dir=_out(out, write),
                cfg=resolve_config(cfg))
    return SoftScores(out=_path(run.out_dir), detail=run)


def elo(judgements: PathLike | None = None, *, graphs: Mapping[str, PathLike] | None = None, judge: str | None = None,
        k: float | None = None, start: float | None = None, ties: str | None = None, rounds: int | None = None,
        seed: int | None = None, out: PathLike | None = None, write: bool = True, cfg: CfgLike = None) -> EloRatings:
    """Elo ratings of annotations from pairwise ``judgements`` (JSONL), or from an LLM tournament
    over ``graphs`` (name -> graph file) judged by ``judge`` (``causalkg eval elo``)."""
    from causalkg.evaluation.graph.elo import elo as _elo

    run = _elo(judgements, graphs=dict(graphs) if graphs else None, judge=judge, k=k, start=start, ties=ties,
               rounds=rounds, seed=seed, out_dir=_out(out, write), cfg=resolve_config(cfg))
    return EloRatings(out=_path(run.out_dir), detail=run)


def meta(graphs: Mapping[str, PathLike], *, ratings: PathLike | None = None, judgements: PathLike | None = None,
         measures: Sequence[str] | None = None, mode: str | None = None, orientation: str | None = None,
         bootstrap: int | None = None, seed: int | None = None, ties: str | None = None, out: PathLike | None = None,
         write: bool = True, cfg: CfgLike = None) -> MetaEvaluation:
    """Meta-evaluate soft measures against Elo ratings (``causalkg eval meta``): Spearman per unit,
    bootstrap intervals, and a threshold search for measures given without ``=THETA``."""
    from causalkg.evaluation.graph.meta import meta as _meta

    run = _meta(dict(graphs), ratings=ratings, judgements=judgements, measures=measures, mode=mode,
                orientation=orientation, bootstrap=bootstrap, seed=seed, ties=ties, out_dir=_out(out, write),
                cfg=resolve_config(cfg))
    return MetaEvaluation(out=_path(run.out_dir) if hasattr(run, "out_dir") else None, detail=run)


def align(gold: PathLike, pred: PathLike, *, views: Sequence[str] | None = None, orders: Sequence[str] | None = None,
          timeout: float | None = None, validation: str | None = None, node_encoder: str | None = None,
          all_orders: bool = False, out: PathLike | None = None, write: bool = True, lenient: bool = False,
          mode: str | None = None, cfg: CfgLike = None) -> Alignment:
    """Structure-first alignment of predicted to gold graphs (``causalkg eval align``, the
    EmpiriGraph-Psy evaluator): P/R/F1 of matched typed edges per view. ``mode="reference"``
    reproduces the authors' evaluation, quirks included."""
    from causalkg.evaluation.graph.align import align as _align

    run = _align(gold, pred, views=views, orders=orders, timeout=timeout, validation=validation,
                 node_encoder=node_encoder, all_orders=all_orders, lenient=lenient, out_dir=_out(out, write),
                 cfg=resolve_config(cfg), mode=mode)
    return Alignment(out=_path(run.out_dir), detail=run)


def agreement(files: Sequence[PathLike], *, names: Sequence[str] | None = None, mapping: str = "exact",
              ordered: bool = True, timeout: float | None = None, out: PathLike | None = None, write: bool = True,
              cfg: CfgLike = None) -> Agreement:
    """Cohen's kappa per pair of annotators and Fleiss' kappa (``causalkg eval agreement``)."""
    from causalkg.evaluation.graph.agreement import agreement as _agreement

    run = _agreement(list(files), names=names, mapping=mapping, ordered=ordered, timeout=timeout,
                     out_dir=_out(out, write), cfg=resolve_config(cfg))
    return Agreement(detail=run)


def sqc(*, units: PathLike | None = None, predicted: PathLike | None = None, gold: PathLike | None = None,
        texts: PathLike | None = None, matcher: str | None = None, complementer: str | None = None,
        threshold: float | None = None, tau: float | None = None, tau_percentile: float | None = None,
        duplicates: str | None = None, explain: bool = False, out: PathLike | None = None, lenient: bool = False,
        dry_run: bool = False, cfg: CfgLike = None) -> SQCScore:
    """SQC-Score of predicted facts against gold facts (``causalkg eval sqc``): a matcher
    (eval.sqc.matcher) pairs them, a complementer (eval.sqc.complementer) credits unmatched
    predictions the source text entails. Raises SourceError when no unit could be graded."""
    from causalkg.evaluation.judging.sqc import sqc as _sqc

    r = _sqc(resolve_config(cfg), units=units, predicted=predicted, gold=gold, texts=texts, matcher=matcher,
             complementer=complementer, threshold=threshold, tau=tau, tau_percentile=tau_percentile,
             duplicates=duplicates, out=out, lenient=lenient, dry_run=dry_run)
    if r.plan is not None:
        return SQCScore(plan=r.plan, detail=r)
    s = r.summary
    if s["failed_units"] and not s["micro"]["units"]:
        raise SourceError(f"no unit could be graded (first: {s['failed_units'][0]['error']})",
                          hint="see units.jsonl for the answers; rerun to retry (answers so far are cached)")
    return SQCScore(out=_path(r.out), explain=explain, detail=r)


def consistency(pairs: PathLike, *, judge: str | None = None, generator: str | None = None, limit: int | None = None,
                seed: int | None = None, igc: str | None = None, conjunctions: Sequence[str] | None = None,
                out: PathLike | None = None, lenient: bool = False, dry_run: bool = False,
                cfg: CfgLike = None) -> Consistency:
    """Causal epistemic consistency of a judge (``causalkg eval consistency``): it ranks ten
    intermediates of each pair; Kendall tau, CGP and IGC. Raises SourceError when no pair could
    be ranked."""
    from causalkg.evaluation.judging.consistency import consistency as _consistency

    r = _consistency(resolve_config(cfg), pairs=pairs, judge=judge, generator=generator, limit=limit, seed=seed,
                     igc=igc, conjunctions=conjunctions, out=out, lenient=lenient, dry_run=dry_run)
    if r.plan is not None:
        return Consistency(plan=r.plan, detail=r)
    if r.pairs and not r.scored:
        raise SourceError(f"no pair could be ranked (first: {r.failures[0]['error']})",
                          hint="see pairs.jsonl for the answers; rerun to retry (answers so far are cached)")
    return Consistency(detail=r)


def setup_wordnet(*, source: PathLike | None = None, target: PathLike | None = None, force: bool = False,
                  cfg: CfgLike = None) -> WordNetInstall:
    """Install WordNet 3.0 for NLTK offline (``causalkg eval setup-wordnet``) from Debian's
    wordnet-base files (default eval.soft.wordnet_source)."""
    from causalkg.evaluation.graph.wordnet import setup_wordnet as _setup

    done = _setup(source or _eval(resolve_config(cfg), "soft", "wordnet_source"), target, force=force)
    return WordNetInstall(corpus_dir=Path(done.corpus_dir), files=list(done.files), skipped=list(done.skipped),
                          detail=done)


# --- helpers ---------------------------------------------------------------------------------


def _eval(cfg: Config, family: str, key: str) -> Any:
    """An evaluation setting, ``eval.<family>.<key>``."""
    return cfg.get(f"eval.{family}.{key}")


def _str(p: PathLike | None) -> str | None:
    return None if p is None else os.fspath(p)


def _out(out: PathLike | None, write: bool) -> PathLike | None:
    return "" if not write else out


def _path(p: Any) -> Path | None:
    return Path(p) if p else None


__all__ = [
    "load_config", "resolve_config", "show_config", "list_registry", "build_corpus", "build_index", "link", "train_qa", "install_models", "extract",
    "assemble", "export", "query", "stats", "summary", "recall", "precision", "human_precision", "report", "soft", "elo", "meta", "align",
    "agreement", "sqc", "consistency", "setup_wordnet",
]
