"""``causalkg kg extract``: cause -> effect phrase pairs from a corpus, with provenance.

Reads the corpus JSONL (``CorpusDocument``: its ``sections``, ``document_concept`` and
``event_concepts`` are used) or any JSONL of ``{"id", "text"}`` records (``TextRecord``);
splits each text into sentences and marks candidates (``kg.sentences``, ``kg.cues``); runs one
extractor (``kg.extractors``: qa, patterns, llm) and writes ``Extraction`` records
(``causalkg.core.contracts``) to ``data/kg/extractions.jsonl``, which the KG assembly reads.

Work is done in shards of ``extract.shard_size`` documents, the unit of batching: each shard's
records go to ``<output stem>.shards/NNNNN.jsonl`` with a ``.done.json`` beside it holding the
shard's fingerprint (run settings + the shard's input lines) and counts (``causalkg.core.shards``, the
checkpoints every long stage shares). A killed run restarted
skips the shards already done and gives the same output; the output file is the shards
concatenated in order, written atomically. When the input checksum and every setting are
unchanged the whole run is skipped. ``<output stem>.manifest.json`` holds the resolved
configuration, the input checksum, the model, counts and timings.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping

from pydantic import ValidationError

from causalkg.core import faults
from causalkg.core.models import stage_device
from causalkg.core.config import EXTRACT_RENAMED, Config, block, flat_items
from causalkg.core.distributed import ActorPool, RaySettings, RayStats, engine_of
from causalkg.core.contracts import CorpusDocument, Extraction, TextRecord
from causalkg.core.errors import ConfigError, SchemaError
from causalkg.core.interrupts import Interrupted
from causalkg.core.jsonl import ReadStats, atomic_write, format_validation_error, iter_json_lines
from causalkg.core.layout import extract_input, extract_output
from causalkg.core.manifest import build_manifest, describe_input, file_sha256, fingerprint
from causalkg.core.processes import WorkerPool
from causalkg.core.progress import progress
from causalkg.core.shards import Shards
from causalkg.kg.cues import BASE_CUES, CNC_CUES
from causalkg.kg.extractors import Document, Extractor, create_extractor, sort_records
from causalkg.kg.sentences import Segmenter, concept_labels, make_cue_segmenter
from causalkg.kg.settings import GateSettings

log = logging.getLogger(__name__)

STAGE = "kg.extract"
# Keys of [extract] that do not change what a shard holds (flat names: see _fingerprinted_keys).
_IO_KEYS = {"input", "output", "shard_size", "extractor", "device", "batch_size", "gate_batch_size", "tagger_batch_size",
            "workers"}


@dataclass
class ExtractResult:
    """What ``extract`` did. ``skipped``: the output was current and nothing ran."""

    output: Path
    manifest_path: Path
    skipped: bool = False
    documents: int = 0
    extractions: int = 0
    counts: dict[str, Any] = field(default_factory=dict)
    plan: dict[str, Any] = field(default_factory=dict)


def side_paths(output: Path) -> tuple[Path, Path]:
    """(shards folder, manifest path) beside an output file."""
    stem = output.name[: -len(".jsonl")] if output.name.endswith(".jsonl") else output.name
    return output.with_name(f"{stem}.shards"), output.with_name(f"{stem}.manifest.json")


def make_segmenter(cfg: Config, *, with_gate: bool = False) -> Segmenter:
    """The sentence splitter with the configured cue lexicon; ``with_gate``: and the learned
    gate (``make_gate``) that marks which sentences are read."""
    seg = make_cue_segmenter(cfg["extract"])
    if with_gate:
        seg.gate = make_gate(cfg, segmenter=seg)
    return seg


def make_gate(cfg: Config, *, segmenter: Segmenter | None = None) -> Any:
    """The learned sentence gate (``kg.gate.SentenceGate``) when ``extract.gate.kind`` is "learned"
    and ``extract.candidates_only`` is on; None otherwise (the cue gate, or every sentence).
    With ``extract.gate.first_pass`` its first pass is set (``kg.gate.load_first_pass``: from
    the gate's manifest, or computed once from its validation file and cached under
    ``paths.cache``); ``segmenter``: the cue lexicon's, made here when None.
    Raises ConfigError for an unknown gate, ModelError when the gate model is missing."""
    ex = cfg["extract"]
    gs = block(cfg, "extract.gate", GateSettings)
    if gs.kind not in ("learned", "cues"):
        raise ConfigError(f"extract.gate.kind must be 'learned' or 'cues', not {gs.kind!r}")
    if gs.kind != "learned" or not ex["candidates_only"]:
        return None
    from causalkg.kg.gate import SentenceGate, encoder_backend, gate_dtype, load_first_pass

    t = float(gs.threshold)
    gate = SentenceGate(cfg.path("extract.gate.model"), device=stage_device(cfg, "extract.device"),
                        batch_size=int(gs.batch_size), threshold=None if t < 0 else t, dtype=gate_dtype(cfg),
                        **encoder_backend(cfg))
    if gs.first_pass:
        data = cfg.input_path("extract.gate.train.data")  # the bundled snapshot from any folder
        validation = data / "val.jsonl" if data is not None else None
        gate.first_pass, gate.first_pass_source = load_first_pass(
            gate, keep=float(gs.first_pass_keep), validation=validation,
            segmenter=segmenter or make_cue_segmenter(ex), cache_dir=cfg.path("paths.cache") / "gate-first-pass")
    return gate


def extract_workers(cfg: Config) -> int:
    """``extract.workers``: the local engine's extraction processes, each with its own segmenter
    and models (0: one per CPU core). ConfigError on a negative or non-integer value."""
    raw = cfg.get("extract.workers", 1)
    if isinstance(raw, bool) or not isinstance(raw, int) or raw < 0:
        raise ConfigError(f"extract.workers must be 0 (one per CPU core) or a positive number of processes, got {raw!r}")
    return raw or (os.cpu_count() or 1)


def _gate_settings(cfg: Config) -> dict[str, Any]:
    ex = cfg["extract"]
    kind = block(cfg, "extract.gate", GateSettings).kind
    if kind != "learned" or not ex["candidates_only"]:
        return {"gate": kind if ex["candidates_only"] else "none"}
    folder = cfg.path("extract.gate.model")
    weights = folder / "gate.npz"
    return {"gate": "learned", "model": str(folder),
            "sha256": file_sha256(weights) if weights.is_file() else None,
            "manifest_sha256": file_sha256(folder / "manifest.json") if (folder / "manifest.json").is_file() else None}


def prepare(record: dict[str, Any], segmenter: Segmenter) -> Document:
    """A validated input record (corpus document or text record, as a dict) -> a Document."""
    extras: dict[str, Any] = {}
    for key in ("revision_id", "title", "url"):
        if record.get(key) is not None:
            extras[key] = record[key]
    dc = record.get("document_concept")
    if isinstance(dc, dict):
        extras["document_concept"] = {"id": dc.get("id"), "label": dc.get("label")}
    text = record["text"]
    sentences = segmenter.split(text, record.get("sections"), concept_labels(record))
    return Document(str(record["id"]), text, sentences, extras)


def _validate_line(value: Any, path: Path, lineno: int) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise SchemaError(f"{path}:{lineno}: expected a JSON object")
    model = CorpusDocument if "document_concept" in value else TextRecord
    try:
        model.model_validate(value)
    except ValidationError as exc:
        raise SchemaError(f"{path}:{lineno}: {format_validation_error(exc)}") from None
    return value


def _shards(path: Path, size: int, lenient: bool, stats: ReadStats) -> Iterator[tuple[list[dict], str]]:
    """Shards of validated records with a digest of their raw lines."""
    batch: list[dict] = []
    digest = hashlib.sha256()
    for lineno, value in iter_json_lines(path, lenient=lenient, stats=stats):
        try:
            rec = _validate_line(value, path, lineno)
        except SchemaError as exc:
            if not lenient:
                raise
            stats.note_skip(str(exc))
            continue
        stats.records += 1
        batch.append(rec)
        digest.update(json.dumps(value, sort_keys=True, ensure_ascii=False).encode())
        if len(batch) >= size:
            yield batch, digest.hexdigest()
            batch, digest = [], hashlib.sha256()
    if batch:
        yield batch, digest.hexdigest()


def _count_lines(path: Path) -> int:
    # bytes, not text: a line that is not UTF-8 is reported by the reader with its path:line
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rb") as fh:
        return sum(1 for line in fh if line.strip())


def _fingerprinted_keys(section: Mapping[str, Any]) -> dict[str, Any]:
    """The [extract] settings a shard's output depends on (not the I/O and batch sizes, not the
    trainers'), keyed by their flat names of before the section was split into blocks
    (``gate_threshold`` for ``extract.gate.threshold``): the same settings give the same
    fingerprint as before the split, so finished extractions stay current."""
    old_name = {new: old for old, new in EXTRACT_RENAMED.items()}
    out: dict[str, Any] = {}
    for dotted, value in flat_items(section, prefix="extract."):
        key = dotted[len("extract."):]
        key = old_name.get(key, None if "." in key else key)  # None: a trainer key with no flat name
        if key is not None and key not in _IO_KEYS and not key.startswith(("train_", "gate_train", "tagger_train")):
            out[key] = value
    return out


def _settings(cfg: Config, extractor_spec: str) -> dict[str, Any]:
    """Everything the output depends on, known without loading a model: the [extract] keys
    that matter, the lexicon files, and the model's identity (a QA folder's checksum)."""
    from causalkg.registry import Spec, parse_spec, registry, versioned_spec
    from causalkg.kg.extractors.patterns import PATTERNS
    from causalkg.core.models import local_model_path

    ex = _fingerprinted_keys(cfg["extract"])
    qa_model, tagger_model = cfg["extract"]["qa"]["model"], cfg["extract"]["tagger"]["model"]
    # The extractor by versioned name (qa -> qa.v1): "qa" and "qa.v1" are one setting.
    out: dict[str, Any] = {"extract": ex, "extractor": versioned_spec("extractor", extractor_spec),
                           "lexicon": {"base": file_sha256(BASE_CUES), "cnc": file_sha256(CNC_CUES)},
                           "gate": _gate_settings(cfg)}
    given = parse_spec(extractor_spec)
    spec = Spec(registry("extractor").base(given.backend), given.arg)
    if spec.backend == "qa":
        path, local = local_model_path(spec.arg or qa_model, cfg.base_dir)
        out["model"] = {"name": spec.arg or qa_model,
                        "sha256": describe_input(path)["sha256"] if local else None}
    elif spec.backend == "tagger":
        path, local = local_model_path(spec.arg or tagger_model, cfg.base_dir)
        out["model"] = {"name": spec.arg or tagger_model,
                        "sha256": describe_input(path)["sha256"] if local else None}
    elif spec.backend == "patterns":
        p = Path(spec.arg) if spec.arg else PATTERNS
        out["model"] = {"patterns": str(p), "sha256": file_sha256(p) if p.is_file() else None}
    elif spec.backend == "llm":
        out["model"] = {"name": spec.arg or cfg["llm"]["model"], "base_url": cfg["llm"]["base_url"]}
    return out


def extract(cfg: Config, *, extractor: str | None = None, input: str | os.PathLike | None = None,
            output: str | os.PathLike | None = None, shard_size: int | None = None, lenient: bool = False,
            force: bool = False, dry_run: bool = False, limit: int | None = None,
            extractor_obj: Extractor | None = None, extractor_factory: Any = None) -> ExtractResult:
    """Extract cause-effect pairs from ``input`` to ``output`` (defaults: ``extract.input``,
    ``extract.output``) with ``extractor`` (``qa``, ``patterns``, ``llm``, or ``name:arg``).

    ``lenient`` skips invalid input lines (counted); ``force`` redoes every shard; ``dry_run``
    checks the input and settings and returns the plan; ``limit`` stops after that many
    documents. ``extractor_obj`` supplies a ready extractor (tests, benchmarks; it runs in this
    process); ``extractor_factory`` a picklable callable that makes one (in each Ray actor with
    ``run.engine = "ray"``, where the shards run on a Ray cluster, see causalkg.core.distributed; in
    each worker process with ``extract.workers`` > 1).
    Raises ConfigError (settings), SchemaError (``path:line:`` of a bad input line),
    ModelError (the QA model), SourceError (the LLM server).
    """
    ex = cfg["extract"]
    spec = extractor or ex["extractor"]
    in_path = Path(input) if input is not None else extract_input(cfg)
    out_path = Path(output) if output is not None else extract_output(cfg)
    size = int(shard_size if shard_size is not None else ex["shard_size"])
    if size < 1:
        raise ConfigError("extract.shard_size must be at least 1")
    if limit is not None and int(limit) < 1:
        raise ConfigError(f"--limit {limit} is out of range: must be an integer >= 1")
    # The extractor's name is resolved before anything else, so a dry run refuses what the real
    # run refuses.
    from causalkg.registry import parse_spec, registry
    registry("extractor").base(parse_spec(spec).backend)
    workers = extract_workers(cfg)
    if not in_path.is_file():
        hint = ("build the corpus with 'causalkg corpus build'" if input is None
                else "give a JSONL file of corpus documents or {\"id\", \"text\"} records")
        raise ConfigError(f"input not found: {in_path}", hint=hint)
    shards_dir, manifest_path = side_paths(out_path)
    total_docs = _count_lines(in_path)
    if limit is not None:
        total_docs = min(total_docs, int(limit))
    plan = {"input": str(in_path), "output": str(out_path), "extractor": spec, "documents": total_docs,
            "shard_size": size, "shards": -(-total_docs // size), "shards_dir": str(shards_dir),
            "manifest": str(manifest_path)}
    if dry_run:
        # Read every line once so a bad record fails now, not half-way through.
        stats = ReadStats()
        for _ in _shards(in_path, size, lenient, stats):
            pass
        plan["invalid_lines"] = stats.skipped
        return ExtractResult(out_path, manifest_path, skipped=True, plan=plan)

    t0 = time.perf_counter()
    input_sha = file_sha256(in_path)
    settings = _settings(cfg, spec)
    # The extractor is only built when there is work: loading a QA model takes seconds.
    previous = None if force else _previous_run(manifest_path, out_path, settings, input_sha, limit)
    if previous is not None:
        return ExtractResult(out_path, manifest_path, skipped=True, documents=previous["counts"].get("documents", 0),
                             extractions=previous["counts"].get("extractions", 0), counts=previous["counts"],
                             plan=plan)

    t_load = time.perf_counter()
    engine = engine_of(cfg)
    pool: ActorPool | WorkerPool | None = None
    ray_stats = RayStats()
    # Worker processes only for more than one shard, never more of them than shards.
    n_workers = min(workers, plan["shards"]) if engine == "local" and extractor_obj is None else 1
    if engine == "ray":
        # One actor per CPU (or per GPU): each loads the segmenter and the model once.
        pool = ActorPool(ShardWorker, (cfg, spec, extractor_factory), RaySettings.from_config(cfg), stats=ray_stats)
    elif n_workers > 1:
        # extract.workers processes, each loading the segmenter and the model once (on a GPU they share it).
        pool = WorkerPool(ShardWorker, (cfg, spec, extractor_factory), n_workers, name="extraction worker process",
                          hint="rerun with fewer extract.workers (each holds its models); finished shards are kept "
                               "and resumed")
    if pool is not None:
        segmenter = None
        try:  # what the workers' extractor and gate are (a model that does not load fails here)
            who = pool.call("identity")
        except KeyboardInterrupt:
            _stop(pool)
            raise
        except BaseException:
            pool.close()
            raise
        ext = _RemoteExtractor(*who)
    else:
        ext = extractor_obj or (extractor_factory() if extractor_factory is not None else create_extractor(spec, cfg))
        segmenter = make_segmenter(cfg, with_gate=True)
    gate = segmenter.gate if segmenter is not None else None
    gate_described = gate.describe() if gate is not None else getattr(ext, "gate_described", None)
    load_seconds = time.perf_counter() - t_load
    run_fp = fingerprint(settings, ext.describe())
    shards = Shards(shards_dir, run_fp, force=force)
    stats = ReadStats()
    bar = progress(total=total_docs, desc=f"extracting ({ext.name})", unit="doc")
    try:
        if pool is not None:
            totals, n_docs, shard_keys, resumed = _extract_pool(pool, in_path, size, lenient, stats, limit, shards,
                                                                run_fp, bar)
        else:
            totals, n_docs, shard_keys, resumed = _extract_local(segmenter, ext, in_path, size, lenient, stats, limit,
                                                                 shards, run_fp, bar)
    except KeyboardInterrupt as exc:
        if pool is not None:
            _stop(pool)
        raise Interrupted.of(exc, f"{len(shards.keys())} of {plan['shards']} shards of {out_path} done and kept in "
                                  f"{shards_dir}; run the same command again to resume") from None
    finally:
        bar.close()
        if pool is not None:
            pool.close()
    # Shards of an earlier, longer input are not part of this output.
    shards.keep_only(shard_keys)
    faults.point("extract.before-output")
    n_out = _concatenate(shards, shard_keys, out_path)
    seconds = time.perf_counter() - t0
    totals["documents"] = n_docs
    totals["extractions"] = n_out
    totals["invalid_lines_skipped"] = stats.skipped
    totals["shards"] = len(shard_keys)
    totals["shards_resumed"] = resumed
    notes = _run_notes(cfg, totals, stats, ext)
    manifest = build_manifest(
        STAGE, cfg, inputs={"input": in_path}, counts=totals,
        timings={"total": seconds, "load": load_seconds},
        models={"extractor": ext.describe(), "gate": gate_described or _gate_settings(cfg)},
        notes=notes,
        extra={"settings": settings, "limit": limit, "extractor_stats": ext.stats(), "engine": engine,
               **({"workers": n_workers} if engine == "local" else {}),
               **({"ray": ray_stats.to_dict()} if engine == "ray" else {})},
    )
    manifest["outputs"] = {"extractions": {"path": str(out_path), "sha256": file_sha256(out_path), "records": n_out},
                           "shards": str(shards_dir)}
    with atomic_write(manifest_path) as fh:
        json.dump(manifest, fh, ensure_ascii=False, indent=2)
        fh.write("\n")
    return ExtractResult(out_path, manifest_path, documents=n_docs, extractions=n_out, counts=totals, plan=plan)


def _previous_run(manifest_path: Path, out_path: Path, settings: dict[str, Any], input_sha: str,
                  limit: int | None) -> dict[str, Any] | None:
    """The manifest of an earlier run with the same input, settings and limit whose output is
    intact (then nothing needs doing), else None."""
    previous = _read_json(manifest_path)
    if (previous and out_path.is_file() and previous.get("settings") == settings
            and previous.get("inputs", {}).get("input", {}).get("sha256") == input_sha
            and previous.get("limit") == limit
            and previous.get("outputs", {}).get("extractions", {}).get("sha256") == file_sha256(out_path)):
        return previous
    return None


def _extract_local(segmenter: Segmenter, ext: Extractor, in_path: Path, size: int, lenient: bool, stats: ReadStats,
                   limit: int | None, shards: Shards, run_fp: str, bar: Any) -> tuple[dict[str, int], int, list[str], int]:
    """The shard loop of the local engine: each shard is skipped when its record says it is done
    with the same fingerprint, else extracted here and recorded. Returns (counts, documents, shard
    keys in order, shards resumed)."""
    totals: dict[str, int] = {}
    n_docs = resumed = 0
    keys: list[str] = []
    for k, (records, digest) in enumerate(_shards(in_path, size, lenient, stats)):
        if limit is not None and n_docs >= limit:
            break
        if limit is not None:
            records = records[: limit - n_docs]
        key = f"{k:05d}"
        shard_fp = fingerprint(run_fp, digest, len(records))
        done = shards.done(key, {"fingerprint": shard_fp})
        if done is not None and shards.path(key).is_file():
            counts = done["counts"]
            resumed += 1
        else:
            counts = _run_shard(records, segmenter, ext, shards.path(key))
            shards.finish(key, {"fingerprint": shard_fp, "documents": len(records), "counts": counts})
            faults.point("extract.shard-done")
        for name, v in counts.items():
            totals[name] = totals.get(name, 0) + int(v)
        keys.append(key)
        n_docs += len(records)
        bar.update(len(records))
    return totals, n_docs, keys, resumed


def _concatenate(shards: Shards, keys: list[str], out_path: Path) -> int:
    """Write the shards in order as the output, atomically. Returns the records written."""
    n_out = 0
    with atomic_write(out_path) as fh:
        for key in keys:
            with open(shards.path(key), encoding="utf-8") as src:
                for line in src:
                    fh.write(line)
                    n_out += 1
    return n_out


def _run_notes(cfg: Config, totals: dict[str, int], stats: ReadStats, ext: Any) -> list[str]:
    notes = []
    sentences = totals.get("sentences", 0)
    candidates = totals.get("candidates", 0)
    if sentences:
        notes.append(f"the {_gate_settings(cfg)['gate']} gate kept {candidates} of {sentences} sentences "
                     f"({100 * candidates / sentences:.1f}%)")
    if stats.skipped:
        notes.append(f"{stats.skipped} invalid input lines skipped (--lenient); first: {stats.errors[0]}")
    if totals.get("documents_too_long"):
        notes.append(f"{totals['documents_too_long']} documents longer than extract.max_document_chars "
                     f"({cfg['extract']['max_document_chars']:,} characters) were skipped")
    if ext.name == "llm" and totals.get("not_in_text"):
        notes.append(f"{totals['not_in_text']} LLM relations named text not in the passage and were dropped")
    return notes


def _extract_pool(pool: "ActorPool | WorkerPool", in_path: Path, size: int, lenient: bool, stats: ReadStats,
                  limit: int | None, shards: Shards, run_fp: str, bar: Any) -> tuple[dict[str, int], int, list[str], int]:
    """The shard loop of the ray engine (an actor pool) and of local worker processes
    (``extract.workers``): the same shards, fingerprints and checkpoint files as the local loop;
    shards not yet done go to the pool, their results are written here in shard order (so the
    shard files, and the output, are the one-process loop's bytes)."""
    totals: dict[str, int] = {}
    state = {"n_docs": 0, "resumed": 0}
    keys: dict[int, str] = {}

    def add(counts: dict[str, Any], n: int) -> None:
        for key, v in counts.items():
            totals[key] = totals.get(key, 0) + int(v)
        state["n_docs"] += n
        bar.update(n)

    def todo() -> Iterator[tuple[int, list[dict], str]]:
        seen = 0
        for k, (records, digest) in enumerate(_shards(in_path, size, lenient, stats)):
            if limit is not None and seen >= limit:
                return
            if limit is not None:
                records = records[: limit - seen]
            seen += len(records)
            shard_fp = fingerprint(run_fp, digest, len(records))
            keys[k] = f"{k:05d}"
            done = shards.done(keys[k], {"fingerprint": shard_fp})
            if done is not None and shards.path(keys[k]).is_file():
                state["resumed"] += 1
                add(done["counts"], len(records))
                continue
            yield k, records, shard_fp

    def write(k: int, records: list[dict], shard_fp: str, text: str, counts: dict[str, Any]) -> None:
        with atomic_write(shards.path(keys[k]), allow_empty=True) as fh:  # a shard may find nothing
            fh.write(text)
        shards.finish(keys[k], {"fingerprint": shard_fp, "documents": len(records), "counts": counts})

    try:
        for (k, records, shard_fp), (text, counts) in pool.map_ordered(
                "run", todo(), lambda job: (job[1],), what=lambda job: f"shard {job[0]:05d}"):
            write(k, records, shard_fp, text, counts)
            add(counts, len(records))
    except KeyboardInterrupt:
        # Shards the workers finished behind one still running are kept too: a rerun skips them.
        for (k, records, shard_fp), (text, counts) in getattr(pool, "salvage", list)():
            write(k, records, shard_fp, text, counts)
        raise
    return totals, state["n_docs"], [keys[k] for k in sorted(keys)], state["resumed"]


def _stop(pool: "ActorPool | WorkerPool") -> None:
    """End a pool's work now, on an interrupt (worker processes are killed; a Ray pool, which
    has no such call, is closed)."""
    getattr(pool, "stop", pool.close)()


def _numeric(stats: dict[str, Any]) -> dict[str, int]:
    return {k: int(v) for k, v in stats.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}


def _shard_output(records: list[dict], segmenter: Segmenter, ext: Extractor) -> tuple[str, dict[str, int]]:
    """A shard's extraction lines (the shard file's exact text) and its counts."""
    # A document over extract.max_document_chars is not read: one pathological record (a
    # 50 MB line) must not stall the run. It is counted and reported at the end.
    limit = int(getattr(segmenter, "max_document_chars", 0) or 0)
    too_long = [r for r in records if limit and len(r["text"]) > limit]
    docs = [prepare(r, segmenter) for r in records if not (limit and len(r["text"]) > limit)]
    if getattr(segmenter, "gate", None) is not None:
        segmenter.gate.mark([s for d in docs for s in d.sentences])
    order = {d.id: i for i, d in enumerate(docs)}
    before = _numeric(ext.stats())
    out = sort_records(ext.extract(docs), order)
    # The extractor's own counters (questions, answers, requests, not_in_text, ...) for this
    # shard, kept with it so a resumed run still reports them.
    after = _numeric(ext.stats())
    delta = {k: v - before.get(k, 0) for k, v in after.items() if k not in ("sentences", "extractions")}
    lines = []
    for rec in out:
        Extraction.model_validate(rec)  # our own records must honour the contract
        lines.append(json.dumps(rec, ensure_ascii=False, separators=(",", ":")) + "\n")
    n_sent = sum(len(d.sentences) for d in docs)
    n_cand = sum(1 for d in docs for s in d.sentences if s.is_candidate)
    return "".join(lines), {"sentences": n_sent, "candidates": n_cand,
                            "candidates_cue": sum(1 for d in docs for s in d.sentences if s.cues),
                            "candidates_concept": sum(1 for d in docs for s in d.sentences if s.concept_mentions),
                            "empty_documents": sum(1 for d in docs if not d.sentences),
                            "documents_too_long": len(too_long),
                            **delta}


def _run_shard(records: list[dict], segmenter: Segmenter, ext: Extractor, shard_file: Path) -> dict[str, int]:
    text, counts = _shard_output(records, segmenter, ext)
    with atomic_write(shard_file, allow_empty=True) as fh:  # a checkpoint: a shard may extract nothing
        fh.write(text)
    return counts


class ShardWorker:
    """A Ray actor of the ``ray`` engine, or a worker process of the local one
    (``extract.workers``): loads the segmenter and the extractor once (one model load per
    worker), then turns shards of records into (shard text, counts)."""

    def __init__(self, cfg: Config, spec: str, factory: Any = None):
        self.ext = factory() if factory is not None else create_extractor(spec, cfg)
        self.segmenter = make_segmenter(cfg, with_gate=True)

    def identity(self) -> tuple[str, Any, Any]:
        gate = getattr(self.segmenter, "gate", None)
        return self.ext.name, self.ext.describe(), gate.describe() if gate is not None else None

    def run(self, records: list[dict]) -> tuple[str, dict[str, int]]:
        return _shard_output(records, self.segmenter, self.ext)


class _RemoteExtractor:
    """What the stage needs to know of the actors' extractor on the driver."""

    def __init__(self, name: str, described: Any, gate_described: Any = None):
        self.name, self._described, self.gate_described = name, described, gate_described

    def describe(self) -> Any:
        return self._described

    def stats(self) -> dict[str, Any]:
        return {}


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        with open(path, encoding="utf-8") as fh:
            value = json.load(fh)
        return value if isinstance(value, dict) else None
    except (FileNotFoundError, json.JSONDecodeError):
        return None

