"""Assembly, the step: extracted phrase pairs -> linked mentions -> causal edges -> the KG files.

Flow: ``kg extract`` writes ``data/kg/extractions.jsonl``; ``assemble`` links every cause and
effect phrase with ``linking.linker.Linker`` (one call per shard of extractions), keeps a pair
when both ends link above the threshold, aggregates the mentions by (cause QID, effect QID) into
edges, lifts instance edges to classes, and writes into ``data/kg/``:

- ``causal_kg_pairs.jsonl``: one ``KGEdge`` per line (the flat WikiCausal pair shape plus level,
  support, scores, examples and every mention as provenance);
- ``causal_kg.jsonl``: the nested WikiCausal Base KG shape (``event`` / ``consequences`` /
  ``examples``), one line per cause class, read as is by WikiCausal's ``recall.py`` and
  ``precision.py`` (classes, instances and both);
- ``causal_kg.ttl``, ``nt/causal_kg-NNNNN.nt`` (RDF, see ``kg/rdf.py``), ``causal_kg.graphml``;
- ``manifest.json`` (written last): config, inputs' checksums, the linker, counts, outputs.

Linking is checkpointed per shard in ``data/kg/linked/``: a killed run restarted links only the
shards that were not finished, and gives the same outputs. When the inputs and the settings are
unchanged (manifest fingerprint), ``assemble`` does nothing.

This module holds the step itself (options, fingerprints, resume, the manifest); the work is in:

- ``kg/inputs.py``: the concepts file and the corpus documents' provenance;
- ``kg/mentions.py``: linking a shard of extracted pairs into mentions;
- ``kg/aggregate.py``: mentions -> edges, lifting to classes, confidence, ranking;
- ``kg/kgfiles.py``: the KG files: names, writers, and ``reading_kg`` / ``read_edges`` for readers.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import Any, Iterable, Iterator

from causalkg.core.config import Config
from causalkg.core.contracts import Extraction, KGEdge, KGMention
from causalkg.core import faults, generations
from causalkg.core.errors import ConfigError, SourceError
from causalkg.core.interrupts import Interrupted
from causalkg.core.jsonl import LineSpan, ReadStats, atomic_write, iter_json_lines, line_spans, read_jsonl, to_json_line
from causalkg.core.manifest import build_manifest, file_sha256, fingerprint, read_manifest, write_manifest
from causalkg.core.models import release_free_heap
from causalkg.core.progress import progress
from causalkg.core.shards import Shards
from causalkg.core.layout import NESTED_FILE, PAIRS_FILE, default_paths, kg_dir
from causalkg.kg.aggregate import LIFT_MODES, AggregateCounts, aggregate_on_disk, apply_confidence
from causalkg.kg.assembly import Assembly
from causalkg.kg.inputs import DocInfo, load_concepts, load_documents
from causalkg.kg.kgfiles import OUTPUT_NAMES, Hook, write_outputs
from causalkg.kg.mentions import STRUCTURED_PAGES, LinkCounts, link_shard, link_structured
from causalkg.kg.mentionstore import MentionStore

log = logging.getLogger(__name__)

LINKED_DIR = "linked"
# Bump FORMAT_VERSION when the linked checkpoints change for the same inputs other than through the
# rule modules (whose source _code_digest fingerprints: it relinks everything), OUTPUT_VERSION when
# the KG files change for the same mentions (kg/aggregate.py, kg/kgfiles.py, kg/rdf.py; it rewrites
# them, no relinking).
FORMAT_VERSION = "2"
OUTPUT_VERSION = "2"


# --- the step --------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Inputs:
    """Where one run reads and writes, resolved from the arguments and the configuration."""

    out_dir: Path
    source: Path  # the extractions, or (prelinked) mentions linked elsewhere
    prelinked: bool
    corpus: Path
    concepts: Path
    # The index's manifest identifies a linker loaded from the persisted index (Linker.load, or
    # None: loaded when needed); None for mentions linked elsewhere or a linker built in memory.
    linking_manifest: Path | None


def assemble(
    cfg: Config,
    *,
    extractions: str | Path | None = None,
    linked: str | Path | None = None,
    corpus: str | Path | None = None,
    concepts: str | Path | None = None,
    out: str | Path | None = None,
    force: bool = False,
    lenient: bool = False,
    linker: Any = None,
    hook: Hook | None = None,
    dry_run: bool = False,
) -> Assembly:
    """Build the causal KG in ``out`` (default ``<paths.data>/kg``).

    Inputs: ``extractions`` (default ``extract.output``, ``data/kg/extractions.jsonl``), linked here with
    ``linker`` (default ``Linker.load(cfg)``), or ``linked``: a JSONL of ``KGMention`` records
    already linked elsewhere (then no linker is used). ``corpus`` gives titles, URLs and
    revisions for provenance (optional); ``concepts`` labels, kinds and the classes to lift to.
    ``force`` relinks every shard (none is taken from ``linked/``) and rewrites the KG, even
    when the outputs are current; ``lenient`` skips bad input lines
    (counted in the manifest). ``hook(event, info)`` is called after each linked shard
    (``"shard"``), each linked group of pages (``"structured"``) and each written output
    (``"output"``). ``dry_run`` checks the inputs and
    settings and returns the plan (``result.plan``) without linking or writing anything.

    Returns an Assembly. Raises SourceError when an input is missing (with the command
    that makes it), SchemaError on a bad line, ConfigError on bad settings.
    """
    t0 = time.perf_counter()
    opts = _options(cfg)
    inp = _resolve_inputs(cfg, extractions=extractions, linked=linked, corpus=corpus, concepts=concepts, out=out,
                          linker=linker)
    link_fp, full_fp = _fingerprints(inp, opts, linker)
    with generations.reading(inp.out_dir) as view:
        manifest = read_manifest(view)
        current = _outputs_current(view, manifest, full_fp)
    if dry_run:
        plan = _plan(cfg, inp, opts, link_fp, linker, up_to_date=current and not force, force=force)
        return Assembly(inp.out_dir, True, {}, {}, plan=plan)
    if not force and current:
        # debug, not info: the CLI prints the outcome itself (one line per fact).
        log.debug("the KG in %s is up to date (inputs and settings unchanged); use --force to rebuild", inp.out_dir)
        # nothing to write, but what killed runs left (an unpublished generation, scratch) goes
        generations.sweep(inp.out_dir, int(cfg["kg"].get("keep_generations", 2)), scratch=(".aggregate-",))
        return Assembly(inp.out_dir, True, dict(manifest.get("counts", {})), dict(manifest.get("outputs", {})))
    with generations.writer_lock(inp.out_dir, "kg assemble"):
        return _assemble_locked(cfg, opts, inp, link_fp, full_fp, linker=linker, lenient=lenient, hook=hook, t0=t0,
                                force=force)


# --- the inputs, the fingerprints and the plan -----------------------------------------------


def _resolve_inputs(cfg: Config, *, extractions: str | Path | None, linked: str | Path | None,
                    corpus: str | Path | None, concepts: str | Path | None, out: str | Path | None,
                    linker: Any) -> _Inputs:
    """The paths of a run (arguments over the data layout). Raises SourceError when an input is
    missing, with the command that makes it."""
    paths = default_paths(cfg)
    out_dir = Path(out) if out is not None else kg_dir(cfg)
    concepts_path = Path(concepts) if concepts is not None else paths["concepts"]
    corpus_path = Path(corpus) if corpus is not None else paths["corpus"]
    if linked is not None:
        source = Path(linked)
        if not source.is_file():
            raise SourceError(f"linked mentions file not found: {source}")
    else:
        source = Path(extractions) if extractions is not None else paths["extractions"]
        if not source.is_file():
            raise SourceError(f"extractions file not found: {source}", hint="run causalkg kg extract first")
    if not concepts_path.is_file():
        raise SourceError(f"concepts file not found: {concepts_path}",
                          hint="run causalkg corpus build, or pass --concepts FILE")
    linking_manifest = paths["linking_manifest"] if linked is None and _persisted(linker) else None
    return _Inputs(out_dir, source, linked is not None, corpus_path, concepts_path, linking_manifest)


def _persisted(linker: Any) -> bool:
    """A linker loaded from the persisted index (Linker.load, or None: loaded when needed) is
    identified by the index's manifest; one built in memory by its model and threshold."""
    return linker is None or getattr(linker, "folder", None) is not None


def _code_digest() -> str:
    """The source of the modules whose rules decide which mentions linking gives (assertion
    flags, the linker's matching, the index's reading and search, the phrase encoder, the sense
    check, the page event), hashed: part of the linked checkpoints' fingerprint, so a changed rule
    relinks instead of reusing the old mentions."""
    import hashlib

    from causalkg.kg import mentions, polarity, verifier
    from causalkg.linking import encoder, index, linker, normalize, sense

    h = hashlib.sha256()
    for mod in (polarity, mentions, verifier, linker, index, encoder, normalize, sense):
        h.update(Path(mod.__file__).read_bytes())
    return h.hexdigest()


def _fingerprints(inp: _Inputs, opts: dict[str, Any], linker: Any) -> tuple[str, str]:
    """(the linked checkpoints' fingerprint, the whole KG's): the first changes when linking
    would give other mentions (everything is relinked), the second also when the KG files would
    differ for the same mentions (they are rewritten)."""
    in_memory = None if _persisted(linker) or inp.prelinked else (
        getattr(linker, "model_id", None), getattr(linker, "threshold", None),
        getattr(linker, "model_fingerprint", None), getattr(linker, "search_settings", None))
    link_fp = fingerprint(
        FORMAT_VERSION, None if inp.prelinked else _code_digest(), "linked" if inp.prelinked else "extractions",
        _sha(inp.source),
        _sha(inp.corpus), _sha(inp.linking_manifest), in_memory,
        {k: opts[k] for k in ("shard_size", "use_context", "allow_self_loops", "k", "threshold", "linking_model",
                              "linking", "assess", "drop", "sense_check", "structured", "structured_min_link")},
        # only when on: a run with the verifier off keeps the fingerprint it had before there was one
        *([opts["verifier"]] if "verifier" in opts else []),
    )
    full_fp = fingerprint(link_fp, OUTPUT_VERSION, _sha(inp.concepts), opts)
    return link_fp, full_fp


def _plan(cfg: Config, inp: _Inputs, opts: dict[str, Any], link_fp: str, linker: Any, *,
          up_to_date: bool, force: bool = False) -> dict[str, Any]:
    """What a dry run reports: the inputs, the linker, the options and how much is done."""
    done = 0 if force else Shards.count_done(inp.out_dir / LINKED_DIR, link_fp, prefix="shard-")
    linking_manifest = default_paths(cfg)["linking_manifest"]
    return {
        "out": str(inp.out_dir),
        "source": {"path": str(inp.source), "kind": "linked mentions" if inp.prelinked else "extractions"},
        "corpus": {"path": str(inp.corpus), "exists": inp.corpus.is_file()},
        "concepts": {"path": str(inp.concepts), "exists": True},
        "linker": ("none (mentions already linked)" if inp.prelinked
                   else "given" if linker is not None else f"Linker.load: {linking_manifest.parent}"),
        "linking_index_exists": linking_manifest.is_file(),
        "options": opts,
        "up_to_date": up_to_date,
        "shards_done": done,
    }


def _options(cfg: Config) -> dict[str, Any]:
    kg = cfg["kg"]
    lift = kg["lift"]
    if lift not in LIFT_MODES:
        raise ConfigError(f"kg.lift must be one of {', '.join(LIFT_MODES)}, got {lift!r}")
    if int(kg["shard_size"]) < 1:
        raise ConfigError(f"kg.shard_size must be at least 1, got {kg['shard_size']}")
    if int(kg["min_support"]) < 1:
        raise ConfigError(f"kg.min_support must be at least 1, got {kg['min_support']}")
    from causalkg.kg.polarity import FLAGS

    drop = list(kg.get("drop", []))
    bad = [f for f in drop if f not in FLAGS]
    if bad:
        raise ConfigError(f"kg.drop takes {', '.join(FLAGS)}; got {', '.join(map(repr, bad))}")
    opts = {
        "shard_size": int(kg["shard_size"]),
        "use_context": bool(kg["use_context"]),
        "allow_self_loops": bool(kg["allow_self_loops"]),
        "lift": lift,
        "min_support": int(kg["min_support"]),
        "assess": bool(kg.get("assess", True)),
        "drop": drop,
        "sense_check": bool(kg.get("sense_check", True)),
        "lift_self_loops": bool(kg.get("lift_self_loops", False)),
        "structured": list(kg.get("structured", [])),
        "structured_min_link": float(kg.get("structured_min_link", 0.8)),
        "min_confidence": float(kg.get("min_confidence", 0.0)),
        "wikidata_effect": bool(kg["wikidata_effect"]),
        "nt_chunk_triples": int(kg["nt_chunk_triples"]),
        "k": int(cfg["linking"]["top_k"]),
        "threshold": float(cfg["linking"]["threshold"]),
        "linking_model": cfg["linking"]["model"],
        # every [linking] setting: the query-time ones (instance_threshold, context_bonus, ...)
        # change which concept a phrase links to, so they must invalidate the linked shards
        "linking": dict(cfg["linking"]),
        "lang": (cfg["wikidata"]["languages"] or ["en"])[0],
        "url_base": cfg["wikipedia"]["url_base"],
    }
    if bool(kg["verifier"]["enabled"]):
        opts["verifier"] = _verifier_options(cfg)
    return opts


def _verifier_options(cfg: Config) -> dict[str, Any]:
    """The settings of the pair verifier that decide which mentions linking gives, with the
    training fingerprint of its model (a retrained verifier relinks)."""
    from causalkg.kg.verifier import REVERSED_MODES

    v = cfg["kg"]["verifier"]
    if v["reversed"] not in REVERSED_MODES:
        raise ConfigError(f"kg.verifier.reversed must be one of {', '.join(REVERSED_MODES)}, got {v['reversed']!r}")
    folder = cfg.path("kg.verifier.model")
    manifest = read_manifest(folder) or {}
    return {"model": str(folder), "trained": manifest.get("training", {}).get("fingerprint"),
            "threshold": float(v["threshold"]), "reversed": str(v["reversed"]), "backend": str(v["backend"])}


def _sha(path: Path | None) -> str | None:
    return file_sha256(path) if path is not None and path.is_file() else None


def _outputs_current(out: Path, manifest: dict | None, fp: str) -> bool:
    if not manifest or manifest.get("fingerprint") != fp:
        return False
    try:
        generations.verify(out, what="KG files")
    except generations.MixedSetError:
        return False
    return True


# --- a run -----------------------------------------------------------------------------------


def _assemble_locked(cfg: Config, opts: dict[str, Any], inp: _Inputs, link_fp: str, full_fp: str, *,
                     linker: Any, lenient: bool, hook: Hook | None, t0: float, force: bool = False) -> Assembly:
    """Link (or read) the mentions, aggregate them into edges, write a new generation of the KG
    files and its manifest, and publish it."""
    concept_table = load_concepts(inp.concepts, lenient=lenient)
    notes: list[str] = []
    stats = ReadStats()
    timings: dict[str, float] = {}
    run: dict[str, Any] = {}
    mentions, counts, models = _mentions(cfg, opts, inp, link_fp, linker=linker, lenient=lenient, stats=stats,
                                         hook=hook, notes=notes, timings=timings, run=run, force=force)

    with _scratch(inp.out_dir) as scratch, MentionStore(scratch / "mentions.sqlite") as store:
        # The mentions go to an SQLite file and the edges are built from it one at a time:
        # memory holds the edges' headers, never every mention of the corpus.
        t2 = time.perf_counter()
        agg = AggregateCounts()
        kg = aggregate_on_disk(mentions, concept_table, store, lift=opts["lift"], min_support=opts["min_support"],
                               counts=agg, lift_self_loops=opts["lift_self_loops"])
        if inp.prelinked:
            counts.extractions = counts.linked = stats.records
        if stats.skipped:
            notes.append(f"{stats.skipped} bad input lines skipped (--lenient): " + "; ".join(stats.errors[:3]))
        edges = apply_confidence(kg.edges, opts["min_confidence"], agg, features_of=kg.features)
        kg.edges = edges
        timings["aggregate"] = time.perf_counter() - t2
        t3 = time.perf_counter()
        gen = generations.begin(inp.out_dir)
        try:
            outputs, checksums, rdf_counts = write_outputs(edges, concept_table, gen.path, opts,
                                                           verify=bool(cfg["kg"]["verify_rdf"]), hook=hook,
                                                           source=kg)
        except BaseException:
            # A failed write (a full disk, a read-only folder) leaves no unfinished generation.
            shutil.rmtree(gen.path, ignore_errors=True)
            raise
        timings["write"] = time.perf_counter() - t3
        timings["total"] = time.perf_counter() - t0
        all_counts = _all_counts(stats, counts, agg, edges, rdf_counts, documents=kg.documents())
        top = [kg.full(e) for e in edges[: int(cfg["kg"]["top"])]]

    if rdf_counts["nested_unlisted_edges"]:
        notes.append(f"{rdf_counts['nested_unlisted_edges']} instance/mixed edges have no class to lift to "
                     f"(kg.lift = {opts['lift']}): they are in {PAIRS_FILE} and the RDF, not in {NESTED_FILE}")
    man = build_manifest("kg.assemble", cfg, inputs=_manifest_inputs(inp), outputs=outputs, counts=all_counts,
                         timings=timings, models=models, notes=notes,
                         extra={"fingerprint": full_fp, "generation": gen.id, "checksums": checksums,
                                "options": opts, "graph": cfg["kg"]["graph"],
                                **({"linking": run} if run else {})})
    try:
        write_manifest(gen.path, man)
    except BaseException:
        shutil.rmtree(gen.path, ignore_errors=True)
        raise
    faults.point("assemble.before-publish")
    generations.publish(gen, OUTPUT_NAMES, keep=int(cfg["kg"].get("keep_generations", 2)))
    return Assembly(inp.out_dir, False, all_counts, outputs, notes, top)


@contextlib.contextmanager
def _scratch(out_dir: Path) -> Iterator[Path]:
    """A scratch folder in ``out_dir`` for the run's mention store (on the KG's disk, not in
    /tmp), removed afterwards; one a killed run left behind is removed first (the caller holds
    the writer lock, so no other run is using it)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    for stale in out_dir.glob(".aggregate-*"):
        shutil.rmtree(stale, ignore_errors=True)
    with tempfile.TemporaryDirectory(dir=out_dir, prefix=".aggregate-") as tmp:
        yield Path(tmp)


def _mentions(cfg: Config, opts: dict[str, Any], inp: _Inputs, link_fp: str, *, linker: Any, lenient: bool,
              stats: ReadStats, hook: Hook | None, notes: list[str], timings: dict[str, float],
              run: dict[str, Any], force: bool = False) -> tuple[Iterable[KGMention], LinkCounts, dict[str, Any]]:
    """The linked mentions, their counts and the manifest's ``models``: read as they are when
    the source holds mentions linked elsewhere, else linked here (``_link_all``, which fills
    ``run``: where the shards were linked)."""
    if inp.prelinked:
        # read as aggregation consumes them; the counts are set from ``stats`` afterwards
        mentions = read_jsonl(inp.source, KGMention, lenient=lenient, stats=stats)
        counts = LinkCounts()
        notes.append(f"mentions read already linked from {inp.source}; no linker was run")
        return mentions, counts, {}
    t1 = time.perf_counter()
    linked, counts, linker_info = _link_all(cfg, opts, inp, link_fp, linker=linker, lenient=lenient, stats=stats,
                                            hook=hook, run=run, force=force)
    timings["link"] = time.perf_counter() - t1
    if not inp.corpus.is_file():
        notes.append(f"no corpus at {inp.corpus}: titles, URLs and revisions come only from the extractions")
    return _iter_mentions(linked), counts, {"linker": linker_info}


def _all_counts(stats: ReadStats, counts: LinkCounts, agg: AggregateCounts, edges: list[KGEdge],
                rdf_counts: dict[str, int], *, documents: int) -> dict[str, Any]:
    """The manifest's counts: input lines, ``link_*``, ``aggregate_*``, and the KG's size."""
    levels = Counter(e.level for e in edges)
    nodes = {e.cause.id[0] for e in edges} | {e.effect.id[0] for e in edges}
    return {
        "input_lines": stats.lines,
        "input_records": stats.records,
        "input_skipped": stats.skipped,
        **{f"link_{k}": v for k, v in counts.__dict__.items()},
        **{f"aggregate_{k}": v for k, v in agg.__dict__.items()},
        "edges": len(edges),
        "edges_class": levels.get("class", 0),
        "edges_instance": levels.get("instance", 0),
        "edges_mixed": levels.get("mixed", 0),
        "nodes": len(nodes),
        "mentions": sum(e.support.direct_mentions for e in edges),
        "documents": documents,
        "nested_lines": rdf_counts["nested_lines"],
        "nested_unlisted_edges": rdf_counts["nested_unlisted_edges"],
        "triples": rdf_counts["triples"],
    }


def _manifest_inputs(inp: _Inputs) -> dict[str, Path]:
    """The inputs the manifest records (with their checksums)."""
    inputs = {"concepts": inp.concepts, "source": inp.source}
    if inp.corpus.is_file() and not inp.prelinked:
        inputs["corpus"] = inp.corpus
    if inp.linking_manifest is not None and inp.linking_manifest.is_file():
        inputs["linking_manifest"] = inp.linking_manifest
    return inputs


# --- linking in shards, resumable ------------------------------------------------------------


def _link_all(
    cfg: Config, opts: dict[str, Any], inp: _Inputs, link_fp: str, *,
    linker: Any, lenient: bool, stats: ReadStats, hook: Hook | None, run: dict[str, Any] | None = None,
    force: bool = False,
) -> tuple[list[Path], LinkCounts, dict[str, Any]]:
    """Link the extractions shard by shard, then the structured pairs of the corpus pages
    (``kg.structured``) a group of pages at a time, reusing what an earlier run with the same
    fingerprint finished (``linked/``, a ``causalkg.core.shards`` folder: ``shard-NNNNN.jsonl`` and
    ``structured-NNNNN.jsonl`` of linked mentions, each with its ``.done.json``; ``force``: none
    is reused). Returns the linked files in order (the mentions stay on disk), the counts,
    linker info."""
    shards = Shards(inp.out_dir / LINKED_DIR, link_fp, force=force)
    lazy = _Linking(cfg, opts, linker, inp, lenient)
    corpus = inp.corpus if opts["structured"] and inp.corpus.is_file() else None
    return _link_shards(shards, lazy, opts, inp.source, corpus, lenient=lenient, stats=stats, hook=hook,
                        progress_mode=cfg["run"]["progress"], run=run)


class _Linking:
    """The linker, the sense check and the corpus documents of a run, each loaded when first
    needed: a run whose shards are all checkpointed loads none of them. Picklable before it has
    loaded anything (without a caller's linker): the parallel engines send it to their workers,
    each of which loads its own."""

    def __init__(self, cfg: Config, opts: dict[str, Any], linker: Any, inp: _Inputs, lenient: bool) -> None:
        self.cfg, self.opts, self.inp, self.lenient = cfg, opts, inp, lenient
        self._linker = linker
        self.given = linker is not None  # a caller's linker cannot go to other processes
        self._sense: Any = None
        self._verifier: Any = None
        self.docs: dict[str, DocInfo] | None = None  # None until a shard is linked here

    def linker(self) -> Any:
        if self._linker is None:
            from causalkg.linking.linker import Linker

            self._linker = Linker.load(self.cfg)
        return self._linker

    def documents(self) -> dict[str, DocInfo]:
        if self.docs is None:
            self.docs = load_documents(self.inp.corpus, _doc_ids(self.inp.source, self.lenient))
        return self.docs

    def sense(self) -> Any:
        if self._sense is None and self.opts["sense_check"]:
            from causalkg.linking.sense import SenseCheck

            self._sense = SenseCheck.from_config(self.cfg, self.linker())
        return self._sense

    def verifier(self) -> Any:
        if self._verifier is None and "verifier" in self.opts:
            from causalkg.kg.verifier import PairVerifier

            self._verifier = PairVerifier.from_config(self.cfg)
        return self._verifier

    def fresh(self) -> "_Linking":
        """A copy with nothing loaded, to send to a worker."""
        return _Linking(self.cfg, self.opts, None, self.inp, self.lenient)

    def link(self, job: list[Extraction] | LineSpan) -> tuple[str, int, dict[str, Any], dict[str, Any]]:
        """One job linked: a shard of extractions (``kg.mentions.link_shard``), or the lines of
        the corpus in a ``LineSpan``, whose pages' structured pairs are linked
        (``kg.mentions.link_structured``). Returns (the checkpoint file's exact text, the number of
        mentions, the counts, the linker info): the same in this process, a pool worker or a Ray
        actor."""
        linker, sense, opts = self.linker(), self.sense(), self.opts
        if isinstance(job, LineSpan):
            # a structured pair carries its page's provenance: no corpus document is needed
            records = (rec for _, rec in iter_json_lines(self.inp.corpus, lenient=self.lenient, span=job)
                       if isinstance(rec, dict))
            found, c = link_structured(records, linker, {}, sources=opts["structured"], k=opts["k"], sense=sense,
                                       allow_self_loops=opts["allow_self_loops"],
                                       min_link=opts["structured_min_link"])
        else:
            found, c = link_shard(job, linker, self.documents(), k=opts["k"], use_context=opts["use_context"],
                                  allow_self_loops=opts["allow_self_loops"],
                                  drop=opts["drop"] if opts["assess"] else None, sense=sense,
                                  verifier=self.verifier())
        # the encoder's and the index search's freed buffers back to the system, or a worker's
        # heap grows shard by shard (about 150 MB over 8 calls at 181,006 concepts)
        release_free_heap()
        info = {"model": getattr(linker, "model_id", None), "threshold": getattr(linker, "threshold", None),
                "model_fingerprint": getattr(linker, "model_fingerprint", None)}
        return "".join(to_json_line(m) + "\n" for m in found), len(found), dict(c.__dict__), info


class LinkWorker:
    """A Ray actor of the ``ray`` engine for assemble's linking, or a worker process of the local
    pool: loads the linker and the sense check once (the corpus documents with its first shard of
    extractions), then links shards of extractions and groups of corpus pages into shard texts."""

    def __init__(self, lazy: _Linking):
        self.lazy = lazy
        lazy.linker(), lazy.sense(), lazy.verifier()

    def link(self, job: list[Extraction] | LineSpan) -> tuple[str, int, dict[str, Any], dict[str, Any]]:
        return self.lazy.link(job)


# The local pool is used only when at least this many shards are left to link: a worker's start
# and linker load (about 10 s on a laptop core) costs more than linking a few shards of 2,000.
POOL_MIN_SHARDS = 4


def _link_workers(cfg: Config) -> int:
    from causalkg.corpus.dump import default_workers

    return default_workers(int(cfg["run"].get("workers", 0) or 0))


# A job of the linking: (index, checkpoint key, a shard of extractions or a span of corpus lines)
_Job = tuple[int, str, "list[Extraction] | LineSpan"]


def _link_shards(shards: Shards, lazy: _Linking, opts: dict[str, Any], source: Path, corpus: Path | None, *,
                 lenient: bool, stats: ReadStats, hook: Hook | None, progress_mode: str,
                 run: dict[str, Any] | None = None) -> tuple[list[Path], LinkCounts, dict[str, Any]]:
    """Every shard of the extractions, then (with ``corpus``) every group of ``STRUCTURED_PAGES``
    corpus lines for its pages' structured pairs: kept when an earlier run finished it, else
    linked and checkpointed. Returns the checkpoint files in order; ``run`` (the manifest's
    ``linking``) gets where they were linked: the engine, ``where`` (``process``, ``pool`` or
    ``ray``), the workers, the shards and those resumed, the groups of pages and those resumed,
    ``structured`` (where the groups were linked, when any was in this run), and the Ray
    engine's retries.

    Where: ``run.engine = "ray"``: on a Ray actor pool (``LinkWorker``, one linker per actor);
    ``"local"``: in a pool of ``run.workers`` processes (0: one per core), each loading the
    linker once, when at least ``POOL_MIN_SHARDS`` jobs are left; in this process with one
    worker, fewer jobs, or a linker given by the caller. The shards and the groups are one stream
    of jobs, so the groups are shared out like the shards. The driver writes every checkpoint in
    order, so ``linked/`` is the same bytes whichever links."""
    from causalkg.core.distributed import engine_of

    counts = LinkCounts()
    paths: list[Path] = []
    state: dict[str, Any] = {"info": {}}
    engine = engine_of(lazy.cfg)
    workers = 1 if lazy.given else _link_workers(lazy.cfg)
    bar = progress(desc="linking shards", unit="shard", total=None, mode=progress_mode)
    tally = Counter()
    where = "process"

    def add_structured(c: dict[str, Any]) -> None:
        # the pairs of the pages count apart from the extractions; what else linking them
        # counted (unlinked ends, senses rejected) is not reported
        counts.structured_pairs += int(c.get("extractions", 0))
        counts.structured_linked += int(c.get("linked", 0))

    def finished(job: _Job, text: str, n: int, c: dict[str, Any], info: dict[str, Any]) -> None:
        i, key, payload = job
        with atomic_write(shards.path(key), allow_empty=True) as fh:  # a shard may link nothing
            fh.write(text)
        if isinstance(payload, LineSpan):
            shards.finish(key, {"shard": key, "start": payload.start, "end": payload.end, "counts": c, "linker": info})
            add_structured(c)
            tally["structured_linked"] += 1
        else:
            shards.finish(key, {"shard": i, "size": len(payload), "counts": c, "linker": info})
            counts.add(c)
            faults.point("assemble.shard-linked")
        state["info"] = info
        bar.update(1)
        if hook is not None:
            hook("shard" if key.startswith("shard-") else "structured",
                 {"index": i, "path": str(shards.path(key)), "mentions": n})

    def kept(key: str, expect: dict[str, Any]) -> dict[str, Any] | None:
        path = shards.path(key)
        paths.append(path)
        done = shards.done(key, expect)
        if done is None or not path.is_file():
            return None
        state["info"] = done.get("linker", state["info"])
        bar.update(1)
        return done

    def jobs() -> Iterator[_Job]:
        for i, shard in enumerate(_iter_shards(source, opts["shard_size"], lenient=lenient, stats=stats)):
            key = f"shard-{i:05d}"
            done = kept(key, {"size": len(shard)})
            if done is None:
                yield i, key, shard
            else:
                tally["shards_resumed"] += 1
                counts.add(done["counts"])
        if corpus is None:
            return
        for g, span in enumerate(line_spans(corpus, STRUCTURED_PAGES)):
            key = f"structured-{g:05d}"
            tally["structured_groups"] += 1
            done = kept(key, {"start": span.start, "end": span.end})
            if done is None:
                yield g, key, span
            else:
                tally["structured_resumed"] += 1
                add_structured(done["counts"])

    try:
        if lazy.given or (engine == "local" and workers <= 1):
            for job in jobs():
                finished(job, *lazy.link(job[2]))
        else:
            # Read ahead: a few jobs left are linked here (a worker's start, a linker load, costs
            # more than they do); more go to a pool.
            it = jobs()
            todo = list(islice(it, POOL_MIN_SHARDS))
            if engine == "local" and len(todo) < POOL_MIN_SHARDS:
                for job in todo:
                    finished(job, *lazy.link(job[2]))
            elif todo:
                from itertools import chain

                runner = _ray_link if engine == "ray" else _pool_link_all
                where = "ray" if engine == "ray" else "pool"
                for job, result in runner(lazy, chain(todo, it), workers, state):
                    finished(job, *result)
    except KeyboardInterrupt as exc:
        # The pool's workers are ended at once; the shards they finished behind one still
        # running are checkpointed too, so a rerun links only what is left.
        salvaged = state.pop("salvaged", None)
        pool = state.pop("pool", None)
        if salvaged is None and pool is not None:
            salvaged = pool.salvage()
            pool.stop()
        for job, result in salvaged or []:
            finished(job, *result)
        done = sum(1 for p in paths if shards.done(p.name[: -len(".jsonl")]) is not None and p.is_file())
        raise Interrupted.of(exc, f"{done} linking shard{'' if done == 1 else 's'} done and kept in {shards.folder}; "
                                  f"run the same command again to resume") from None
    finally:
        bar.close()
        if run is not None:
            run.update({"engine": engine, "where": where, "workers": 1 if where == "process" else workers,
                        "shards": sum(1 for p in paths if p.name.startswith("shard-")),
                        "shards_resumed": tally["shards_resumed"]})
            if corpus is not None:
                run.update({"structured_groups": tally["structured_groups"],
                            "structured_resumed": tally["structured_resumed"]})
                if tally["structured_linked"]:
                    run["structured"] = where
            if "ray" in state:
                run["ray"] = state["ray"].to_dict()
    return paths, counts, state["info"]


def _pool_link_all(lazy: _Linking, jobs: Iterable[_Job], workers: int,
                   state: dict[str, Any]) -> Iterator[tuple[_Job, Any]]:
    """The local engine's pool (``causalkg.core.processes.WorkerPool``): ``workers`` spawned
    processes, each a ``LinkWorker`` with its own linker, at most two jobs in flight per worker;
    results yielded in job order."""
    from causalkg.core.processes import WorkerPool

    pool = WorkerPool(LinkWorker, (lazy.fresh(),), workers, name="linking worker process",
                      hint="rerun with fewer run.workers (each holds a linker; finished shards are kept and resumed)")
    state["pool"] = pool  # an interrupt while a result is written here: the caller stops it
    try:
        yield from pool.map_ordered("link", jobs, lambda job: (job[2],), what=lambda job: job[1])
    except KeyboardInterrupt:  # while waiting for a worker: keep what is finished, end the rest now
        state["salvaged"] = pool.salvage()
        pool.stop()
        raise
    finally:
        state.pop("pool", None)
        pool.close()


def _ray_link(lazy: _Linking, jobs: Iterable[_Job], workers: int,
              state: dict[str, Any]) -> Iterator[tuple[_Job, Any]]:
    """The ray engine: the jobs on an actor pool of ``LinkWorker`` (one linker per actor,
    ``num_gpus`` per actor when the cluster has GPUs), results in job order; retries and
    failures counted in ``state["ray"]`` (a RayStats)."""
    from causalkg.core.distributed import ActorPool, RaySettings, RayStats

    stats = state.setdefault("ray", RayStats())
    pool = ActorPool(LinkWorker, (lazy.fresh(),), RaySettings.from_config(lazy.cfg), stats=stats)
    try:
        yield from pool.map_ordered("link", jobs, lambda job: (job[2],), what=lambda job: job[1])
    finally:
        pool.close()
        log.info("linking on Ray: %s", stats.to_dict())


def _iter_shards(path: Path, size: int, *, lenient: bool, stats: ReadStats) -> Iterator[list[Extraction]]:
    it = read_jsonl(path, Extraction, lenient=lenient, stats=stats)
    while True:
        shard = list(islice(it, size))
        if not shard:
            return
        yield shard


def _iter_mentions(paths: Iterable[Path]) -> Iterator[KGMention]:
    """The linked mentions of the shard files, in order, one at a time."""
    for path in paths:
        for _, m in iter_json_lines(path):
            yield KGMention.model_validate(m)


def _doc_ids(source: Path, lenient: bool) -> set[str]:
    ids: set[str] = set()
    for _, rec in iter_json_lines(source, lenient=lenient):
        if isinstance(rec, dict) and "doc_id" in rec:
            ids.add(str(rec["doc_id"]))
    return ids
