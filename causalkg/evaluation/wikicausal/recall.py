"""Recall of a causal KG against the Base KG: the causal facts Wikidata already holds.

Stage 4 (evaluation). ``eval_recall`` (the ``causalkg eval recall`` command) reads KGs with
``evaluation.wikicausal.kgread`` and scores each against a Base KG exactly as the WikiCausal reference
script does (``scripts/recall.py`` of IBM/wikicausal):

- Base pairs: each (event.id, consequence.id) is a *class* pair, each example's
  (cause.id, effect.id) an *instance* pair; *full* is their union. KG pairs the same way; a flat
  line gives (cause.id[0], effect.id[0]) as a class pair.
- Per view: ``hit_count`` = |KG ∩ Base|, ``rel_count`` = |KG|, ``base_kg_size`` = |Base|,
  ``recall`` = hit/|Base|, ``precision`` = hit/|KG| (0 when the KG is empty), ``base_count`` =
  distinct Base cause ids also seen as a KG cause, ``base_coverage`` = base_count / distinct
  Base cause ids. All are over sets: duplicates count once.

Beyond the reference, as extra columns that never change the reference ones: ``any_id_*``
(a flat pair hits when any of its candidate ids match), ``reachable_*`` (only Base pairs whose
cause concept has a document in the corpus), a per-class breakdown, every Base pair marked
found or missed with labels, and a plot of recall per seed class.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence

from causalkg.core.config import Config
from causalkg.core.errors import ConfigError
from causalkg.core.jsonl import ReadStats, atomic_write, write_jsonl
from causalkg.core.manifest import build_manifest, write_manifest
from causalkg.core.tables import render_table
from causalkg.evaluation.wikicausal.kgread import (
    CLASS, FLAT, INSTANCE, NESTED, KGReadStats, pairs_of_nested, iter_kg_pairs, iter_kg_records, read_document_concepts,
)


VIEWS = ("full", "classes", "instances")
# The reference CSV's columns, in its order.
REFERENCE_COLUMNS = [
    "input_kg_file_name", "base_kg_file_name", "eval_type", "recall", "hit_count", "rel_count",
    "base_kg_size", "base_count", "base_coverage",
]
ANY_ID_COLUMNS = ["any_id_recall", "any_id_hit_count", "any_id_rel_count", "any_id_precision", "any_id_base_count"]
REACHABLE_COLUMNS = ["reachable_recall", "reachable_hit_count", "reachable_base_size", "reachable_base_count",
                     "reachable_base_coverage"]

Pair = tuple[str, str]


def recall_measures(kg: set[Pair], base: set[Pair]) -> dict[str, Any]:
    """The reference measures of one view: KG pairs against Base pairs (both sets of QID pairs).

    Returns hit_count, rel_count, base_kg_size, recall, precision, base_count, base_coverage.
    An empty Base gives recall and base_coverage 0 (the reference divides by zero there).
    """
    base_causes = {c for c, _ in base}
    kg_causes = {c for c, _ in kg}
    base_count = len(base_causes & kg_causes)
    hit = len(kg & base)
    return {
        "hit_count": hit,
        "rel_count": len(kg),
        "base_kg_size": len(base),
        "recall": hit / len(base) if base else 0.0,
        "precision": hit / len(kg) if kg else 0.0,
        "base_count": base_count,
        "base_coverage": base_count / len(base_causes) if base_causes else 0.0,
    }


def any_id_measures(units: set[tuple[tuple[str, ...], tuple[str, ...]]], base: set[Pair]) -> dict[str, Any]:
    """``--any-id`` for one view: each KG unit is (cause candidates, effect candidates); a Base
    pair is hit when some unit holds its cause among the cause candidates and its effect among
    the effect candidates. ``any_id_precision`` is the share of units that hit a Base pair."""
    return any_id_views({"view": units}, {"view": base}, full=False)["view"]


def _covers(units: Iterable[tuple[tuple[str, ...], tuple[str, ...]]], by_cause: dict[str, set[str]]):
    """(unit, Base pairs it covers, its cause candidates) for each unit; one pass."""
    for unit in units:
        causes, effects = unit
        covered = None
        for c in causes:
            targets = by_cause.get(c)
            if targets:
                for e in effects:
                    if e in targets:
                        if covered is None:
                            covered = set()
                        covered.add((c, e))
        yield unit, covered


def any_id_views(units: Mapping[str, set], bases: Mapping[str, set[Pair]], *, full: bool = True) -> dict[str, dict[str, Any]]:
    """The any-id measures of several views in one pass over each view's units.

    ``units`` and ``bases`` map view names (``classes``, ``instances``) to KG units and Base
    pairs; with ``full`` the ``full`` view (union of both) is added without a second pass.
    Each value holds ``any_id_recall``, ``any_id_hit_count``, ``any_id_rel_count``,
    ``any_id_precision``, ``any_id_base_count`` and ``_covered`` (the Base pairs hit).
    """
    base_full: set[Pair] = set().union(*bases.values())
    by_cause: dict[str, set[str]] = {}
    for c, e in base_full:
        by_cause.setdefault(c, set()).add(e)
    out: dict[str, dict[str, Any]] = {}
    full_covered: set[Pair] = set()
    full_hits: set = set()
    full_causes: set[str] = set()
    for view, view_units in units.items():
        vbase = bases[view]
        covered: set[Pair] = set()
        hit_units = 0
        causes: set[str] = set()
        for unit, cov in _covers(view_units, by_cause):
            causes.update(unit[0])
            if cov:
                full_covered |= cov
                full_hits.add(unit)
                mine = cov & vbase
                if mine:
                    covered |= mine
                    hit_units += 1
        full_causes |= causes
        out[view] = _any_id_row(covered, hit_units, len(view_units), vbase, causes)
    if full:
        sets = list(units.values())
        rel = len(sets[0]) + sum(len(s - sets[0]) for s in sets[1:]) if sets else 0
        out["full"] = _any_id_row(full_covered, len(full_hits), rel, base_full, full_causes)
    return out


def _any_id_row(covered: set[Pair], hit_units: int, rel: int, base: set[Pair], kg_causes: set[str]) -> dict[str, Any]:
    base_causes = {c for c, _ in base}
    return {
        "any_id_recall": len(covered) / len(base) if base else 0.0,
        "any_id_hit_count": len(covered),
        "any_id_rel_count": rel,
        "any_id_precision": hit_units / rel if rel else 0.0,
        "any_id_base_count": len(base_causes & kg_causes),
        "_covered": covered,
    }


@dataclass
class BaseKG:
    """The Base KG's pair sets, with labels and the event class each pair is listed under."""

    path: str
    classes: set[Pair] = field(default_factory=set)
    instances: set[Pair] = field(default_factory=set)
    labels: dict[str, str] = field(default_factory=dict)
    class_order: list[str] = field(default_factory=list)  # event classes in file order
    by_class: dict[str, dict[str, set[Pair]]] = field(default_factory=dict)  # class -> view -> pairs
    groups: dict[Pair, list[str]] = field(default_factory=dict)  # (kind, pair) listing classes

    def view(self, name: str) -> set[Pair]:
        if name == "classes":
            return self.classes
        if name == "instances":
            return self.instances
        return self.classes | self.instances


def read_base_kg(path: str | os.PathLike, *, lenient: bool = False, stats: KGReadStats | None = None) -> BaseKG:
    """Read a Base KG (nested base-KG shape only). Raises SchemaError ``path:line`` on bad lines
    unless ``lenient``; lines skipped then are counted in ``stats``."""
    base = BaseKG(str(path))
    stats = stats if stats is not None else KGReadStats()
    for p in iter_kg_pairs(path, lenient=lenient, stats=stats, require=NESTED):
        pair = (p.cause, p.effect)
        if p.cause_label is not None:
            base.labels.setdefault(p.cause, p.cause_label)
        if p.effect_label is not None:
            base.labels.setdefault(p.effect, p.effect_label)
        if p.group not in base.by_class:
            base.class_order.append(p.group)
            base.by_class[p.group] = {"classes": set(), "instances": set()}
        view = "classes" if p.kind == CLASS else "instances"
        (base.classes if p.kind == CLASS else base.instances).add(pair)
        base.by_class[p.group][view].add(pair)
        listed = base.groups.setdefault((view, pair), [])  # type: ignore[index]
        if p.group not in listed:
            listed.append(p.group)
    return base


@dataclass
class KGPairs:
    """A KG's pair sets (and, for ``--any-id``, its candidate units) plus what the reader saw."""

    path: str
    classes: set[Pair] = field(default_factory=set)
    instances: set[Pair] = field(default_factory=set)
    class_units: set | None = None
    instance_units: set | None = None
    stats: KGReadStats = field(default_factory=KGReadStats)

    def view(self, name: str) -> set[Pair]:
        if name == "classes":
            return self.classes
        if name == "instances":
            return self.instances
        return self.classes | self.instances

    def units(self, name: str) -> set:
        assert self.class_units is not None and self.instance_units is not None
        if name == "classes":
            return self.class_units
        if name == "instances":
            return self.instance_units
        return self.class_units | self.instance_units


def read_kg_pairs(path: str | os.PathLike, *, any_id: bool = False, lenient: bool = False) -> KGPairs:
    """Read a KG in either shape into pair sets (class and instance). Streams the file.

    Flat lines are taken straight from the validated records (no per-pair objects): this is the
    loop a million-pair KG goes through."""
    kg = KGPairs(str(path))
    class_units: set | None = set() if any_id else None
    inst_units: set | None = set() if any_id else None
    kg.class_units, kg.instance_units = class_units, inst_units
    add_class, add_inst = kg.classes.add, kg.instances.add
    n_class = n_inst = 0
    for lineno, shape, rec in iter_kg_records(path, lenient=lenient, stats=kg.stats):
        if shape == FLAT:
            cids, eids = rec["cause"]["id"], rec["effect"]["id"]
            add_class((cids[0], eids[0]))
            n_class += 1
            if class_units is not None:
                class_units.add((tuple(cids), tuple(eids)))
            continue
        for p in pairs_of_nested(rec, lineno):
            if p.kind == CLASS:
                add_class((p.cause, p.effect))
                n_class += 1
                if class_units is not None:
                    class_units.add((p.cause_ids, p.effect_ids))
            else:
                add_inst((p.cause, p.effect))
                n_inst += 1
                if inst_units is not None:
                    inst_units.add((p.cause_ids, p.effect_ids))
    kg.stats.pairs.update({CLASS: n_class, INSTANCE: n_inst})
    return kg  # skipped lines are in kg.stats (eval_recall turns them into one note each)


@dataclass
class RecallResult:
    """One KG scored against one Base KG: rows per view, per-class rows, Base pairs marked."""

    kg: str
    base_kg: str
    rows: list[dict[str, Any]]
    by_class: list[dict[str, Any]]
    pairs: "BasePairRows"  # every Base pair marked, made as it is read (iterable, sized)
    read: dict[str, Any]


@dataclass
class RecallReport:
    results: list[RecallResult]
    columns: list[str]
    notes: list[str] = field(default_factory=list)
    written: dict[str, str] = field(default_factory=dict)

    @property
    def rows(self) -> list[dict[str, Any]]:
        return [r for res in self.results for r in res.rows]

    def render(self, fmt: str = "md") -> str:
        return render_table(self.rows, self.columns, fmt)

    def render_by_class(self, fmt: str = "md") -> str:
        rows = [r for res in self.results for r in res.by_class]
        return render_table(rows, BY_CLASS_COLUMNS, fmt)


BY_CLASS_COLUMNS = [
    "input_kg_file_name", "base_kg_file_name", "class_id", "class_label", "class_pairs", "class_hits",
    "class_recall", "instance_pairs", "instance_hits", "instance_recall", "full_recall",
]


def score_kg(kg: KGPairs, base: BaseKG, *, any_id: bool = False,
             reachable: set[str] | None = None) -> RecallResult:
    """Score one read KG against one read Base KG (see the module docstring for the measures)."""
    kg_name, base_name = os.path.basename(kg.path), os.path.basename(base.path)
    rows: list[dict[str, Any]] = []
    found: dict[str, set[Pair]] = {}
    found_any: dict[str, set[Pair]] = {}
    kg_views = {v: kg.view(v) for v in VIEWS}  # the full view is a union: build it once
    any_rows = (any_id_views({"classes": kg.units("classes"), "instances": kg.units("instances")},
                             {"classes": base.classes, "instances": base.instances}) if any_id else {})
    for view in VIEWS:
        kv, bv = kg_views[view], base.view(view)
        m = recall_measures(kv, bv)
        row: dict[str, Any] = {"input_kg_file_name": kg_name, "base_kg_file_name": base_name, "eval_type": view}
        row.update(m)
        found[view] = kv & bv
        if any_id:
            a = dict(any_rows[view])
            found_any[view] = a.pop("_covered")
            row.update(a)
        if reachable is not None:
            # The same measures over the Base pairs the corpus could reach (cause with a document).
            r = recall_measures(kv, {p for p in bv if p[0] in reachable})
            row.update(reachable_recall=r["recall"], reachable_hit_count=r["hit_count"],
                       reachable_base_size=r["base_kg_size"], reachable_base_count=r["base_count"],
                       reachable_base_coverage=r["base_coverage"])
        rows.append(row)

    by_class = []
    for cls in base.class_order:
        views = base.by_class[cls]
        bc, bi = views["classes"], views["instances"]
        hc, hi = len(bc & kg.classes), len(bi & kg.instances)
        both = bc | bi
        hb = len(both & kg_views["full"])
        by_class.append({
            "input_kg_file_name": kg_name, "base_kg_file_name": base_name,
            "class_id": cls, "class_label": base.labels.get(cls),
            "class_pairs": len(bc), "class_hits": hc, "class_recall": hc / len(bc) if bc else 0.0,
            "instance_pairs": len(bi), "instance_hits": hi, "instance_recall": hi / len(bi) if bi else 0.0,
            "full_recall": hb / len(both) if both else 0.0,
        })

    pairs = BasePairRows(kg_name, base, found, found_any if any_id else None, reachable)
    read = {"lines": kg.stats.lines, "records": kg.stats.records, "skipped": kg.stats.skipped,
            "shapes": dict(kg.stats.shapes), "pairs": dict(kg.stats.pairs)}
    return RecallResult(kg.path, base.path, rows, by_class, pairs, read)


class BasePairRows:
    """Every Base pair, marked found (``found_any_id``, ``reachable`` where measured) for one
    scored KG: class pairs then instance pairs, each view sorted. The rows are made as they are
    read (iterate as often as needed; ``len`` counts them) from the Base KG and the KG's hits, so
    a report that scores several KGs against a Base KG of 112,000 pairs does not hold a dict per
    pair for each (about 100 MB per KG at the 68,391 world's Base KG)."""

    def __init__(self, kg_name: str, base: BaseKG, found: dict[str, set[Pair]],
                 found_any: dict[str, set[Pair]] | None, reachable: set[str] | None) -> None:
        self.kg_name, self.base, self.found, self.found_any, self.reachable = kg_name, base, found, found_any, reachable

    def __len__(self) -> int:
        return len(self.base.classes) + len(self.base.instances)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        base, labels = self.base, self.base.labels
        for view in ("classes", "instances"):
            for pair in sorted(base.view(view)):
                c, e = pair
                rec: dict[str, Any] = {
                    "kg": self.kg_name, "view": view,
                    "cause": {"id": c, "label": labels.get(c)},
                    "effect": {"id": e, "label": labels.get(e)},
                    "base_classes": [{"id": g, "label": labels.get(g)} for g in base.groups[(view, pair)]],  # type: ignore[index]
                    "found": pair in self.found[view],
                }
                if self.found_any is not None:
                    rec["found_any_id"] = pair in self.found_any[view]
                if self.reachable is not None:
                    rec["reachable"] = c in self.reachable
                yield rec


def recall_columns(any_id: bool, reachable: bool) -> list[str]:
    """The table columns: the reference's, then ``precision``, then the extras asked for."""
    cols = REFERENCE_COLUMNS + ["precision"]
    if any_id:
        cols += ANY_ID_COLUMNS
    if reachable:
        cols += REACHABLE_COLUMNS
    return cols


def eval_recall(
    kgs: Sequence[str | os.PathLike],
    base_kg: str | os.PathLike,
    *,
    any_id: bool = False,
    corpus: str | os.PathLike | None = None,
    lenient: bool = False,
    out: str | os.PathLike | None = None,
    plot: bool = True,
    cfg: Config | None = None,
) -> RecallReport:
    """Score each KG in ``kgs`` against ``base_kg`` (the ``causalkg eval recall`` command).

    ``any_id`` adds the any-candidate-id columns; ``corpus`` (a corpus JSONL) adds reachable
    recall; ``out`` (a folder) receives ``recall.md|csv|json``, ``recall_by_class.csv``,
    ``recall_pairs.jsonl`` (every Base pair, found or missed, with labels), ``recall_by_class.png``
    and ``manifest.json``. Raises SchemaError (``path:line``) on a bad line unless ``lenient``,
    ConfigError when no KG is given.
    """
    if not kgs:
        raise ConfigError("no KG to score", hint="pass --kg FILE (repeatable)")
    started = time.perf_counter()
    base_stats = KGReadStats()
    base = read_base_kg(base_kg, lenient=lenient, stats=base_stats)
    corpus_stats = ReadStats()
    reachable = read_document_concepts(corpus, lenient=lenient, stats=corpus_stats) if corpus is not None else None
    notes = [s.summary() for s in (base_stats, corpus_stats) if s.skipped]
    if reachable is not None:
        notes.append(f"reachable: {len(reachable)} document concepts in {corpus}")
    results = []
    for path in kgs:
        kg = read_kg_pairs(path, any_id=any_id, lenient=lenient)
        results.append(score_kg(kg, base, any_id=any_id, reachable=reachable))
        if kg.stats.skipped:
            notes.append(kg.stats.summary())
    report = RecallReport(results, recall_columns(any_id, reachable is not None), notes)
    if out is not None:
        write_recall_outputs(report, Path(out), cfg=cfg, plot=plot,
                             inputs={"base_kg": base_kg, **({"corpus": corpus} if corpus else {}),
                                     **{f"kg{i}": k for i, k in enumerate(kgs)}},
                             seconds=time.perf_counter() - started)
    return report


def write_recall_outputs(report: RecallReport, out: Path, *, cfg: Config | None = None, plot: bool = True,
                         inputs: Mapping[str, Any] | None = None, seconds: float = 0.0,
                         prefix: str = "recall") -> dict[str, str]:
    """Write the tables, the per-class breakdown, the marked Base pairs and the plot into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    written = {}
    for fmt in ("md", "csv", "json"):
        p = out / f"{prefix}.{fmt}"
        text = report.render(fmt)
        if fmt == "md":
            text = "# Recall Results\n\n" + text
        _write_text(p, text + "\n")
        written[f"table_{fmt}"] = str(p)
    _write_text(out / f"{prefix}_by_class.csv", report.render_by_class("csv") + "\n")
    written["by_class"] = str(out / f"{prefix}_by_class.csv")
    write_jsonl(out / f"{prefix}_pairs.jsonl", (p for r in report.results for p in r.pairs))
    written["pairs"] = str(out / f"{prefix}_pairs.jsonl")
    if plot:
        from causalkg.evaluation.wikicausal.plots import plot_recall_by_class

        png = out / f"{prefix}_by_class.png"
        plot_recall_by_class(report.results, png)
        written["plot"] = str(png)
    manifest = build_manifest(
        "eval-recall", cfg, inputs={k: v for k, v in (inputs or {}).items() if Path(v).exists()},
        outputs=written, counts={"kgs": len(report.results), "rows": len(report.rows)},
        timings={"total": seconds}, notes=report.notes,
        extra={"reads": {os.path.basename(r.kg): r.read for r in report.results}},
    )
    write_manifest(out, manifest)
    report.written.update(written)
    return written


def _write_text(path: Path, text: str) -> None:
    with atomic_write(path) as fh:
        fh.write(text)


__all__ = [
    "VIEWS", "REFERENCE_COLUMNS", "recall_measures", "any_id_measures", "read_base_kg", "read_kg_pairs",
    "score_kg", "eval_recall", "write_recall_outputs", "RecallReport", "RecallResult", "BaseKG", "KGPairs", "BasePairRows",
]
