"""The typed results of the Python API (``import causalkg as ck``), one class per step.

Every function of ``causalkg.api`` returns one of these dataclasses. Each has one way to be
shown: ``result.to_table(fmt)`` with ``fmt`` one of ``FORMATS`` (``text``, ``md``, ``csv``,
``json``); ``str(result)`` is ``result.to_table("text")``; ``result.to_dict()`` is the
JSON-ready data. The CLI prints exactly ``to_table(--format)``, so a Python user and a shell
user see the same thing.

The library object a step returned stays available as ``result.detail`` (an
``AssembleResult``, a ``RecallReport``, ...); attributes not defined here are looked up there,
so ``ck.recall(...).rows()`` works as it does on the report.

Where it sits: above every stage (it only reads the objects they return); nothing in a stage
imports it.
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Mapping, Sequence

from causalkg.core.errors import ConfigError
from causalkg.core.tables import render_table

FORMATS: tuple[str, ...] = ("text", "md", "csv", "json")
"""The output formats of every result and of every command's ``--format``."""


def check_format(fmt: str) -> str:
    """``fmt`` when it is one of ``FORMATS``; ConfigError otherwise."""
    if fmt not in FORMATS:
        raise ConfigError(f"unknown format {fmt!r}", hint=f"choose one of: {', '.join(FORMATS)}")
    return fmt


def _plain(value: Any) -> Any:
    """``value`` made JSON-ready: paths as strings, dataclasses and mappings as dicts."""
    if isinstance(value, Path):
        return str(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [_plain(v) for v in value]
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def _dumps(data: Any) -> str:
    return json.dumps(_plain(data), indent=2, ensure_ascii=False, default=str)


def _table(rows: Sequence[Mapping[str, Any]], columns: Sequence[str] | None, fmt: str, floatfmt: str = ".4f") -> str:
    clean = [{k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in r.items()} for r in rows]
    return render_table(clean, columns, fmt, floatfmt=floatfmt)


@dataclass
class Result:
    """Base of the API's results: ``to_table(fmt)``, ``__str__``, ``to_dict()``.

    Subclasses implement ``_render(fmt)`` for ``text``, ``md`` and ``csv``; ``json`` is
    ``to_dict()`` unless a subclass keeps a documented JSON shape of its own (``_json``).
    """

    detail: Any = field(default=None, repr=False, compare=False, kw_only=True)

    formats: ClassVar[tuple[str, ...]] = FORMATS

    def to_table(self, fmt: str = "text") -> str:
        """The result rendered as ``fmt`` (``text``, ``md``, ``csv`` or ``json``)."""
        check_format(fmt)
        if fmt == "json":
            return _dumps(self._json())
        return self._render(fmt)

    def to_dict(self) -> dict[str, Any]:
        """The result as JSON-ready data (the library object in ``detail`` left out)."""
        return {f.name: _plain(getattr(self, f.name)) for f in dataclasses.fields(self) if f.name != "detail"}

    def _json(self) -> Any:
        return self.to_dict()

    def _render(self, fmt: str) -> str:
        rows = [{"key": k, "value": json.dumps(v, ensure_ascii=False, default=str) if isinstance(v, (dict, list)) else v}
                for k, v in self.to_dict().items()]
        return _table(rows, ["key", "value"], fmt)

    def __str__(self) -> str:
        return self.to_table("text")

    def __getattr__(self, name: str) -> Any:
        # Only called for attributes the dataclass lacks: look them up on the library object.
        if name.startswith("__"):
            raise AttributeError(name)
        detail = self.__dict__.get("detail")
        if detail is None:
            raise AttributeError(f"{type(self).__name__!s} has no attribute {name!r}")
        return getattr(detail, name)


def _lines_block(lines: Sequence[str], fmt: str) -> str:
    """Narrative lines: as they are for text and md; as a one-column table for csv."""
    if fmt == "csv":
        return _table([{"line": line} for line in lines], ["line"], "csv")
    return "\n".join(lines)


def _counts_value(key: str, value: Any) -> str:
    """A count for a summary: fill rates as percentages, other maps as ``k v, k v``."""
    if isinstance(value, dict):
        if not value:
            return "none"
        if key == "fill_rates":
            return ", ".join(f"{k} {v:.0%}" for k, v in value.items())
        return ", ".join(f"{k} {v}" for k, v in value.items())
    return str(value)


# --- configuration -------------------------------------------------------------------------


@dataclass
class ConfigView(Result):
    """The resolved configuration (``causalkg config show``): text is TOML, json is JSON."""

    data: dict[str, Any] = field(default_factory=dict)
    sources: list[str] = field(default_factory=list)

    def _json(self) -> Any:
        return self.data

    def _render(self, fmt: str) -> str:
        if fmt == "csv":
            rows = [{"key": k, "value": v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)}
                    for k, v in flat_items(self.data)]
            return _table(rows, ["key", "value"], "csv")
        text = to_toml(self.data).rstrip("\n")
        return f"```toml\n{text}\n```" if fmt == "md" else text


def flat_items(data: Mapping[str, Any], sections: "set[str] | None" = None, prefix: str = "") -> list[tuple[str, Any]]:
    """``(dotted key, value)`` for every setting; sections (``eval.sqc``) are walked into."""
    if sections is None:
        from causalkg.core.config import section_names

        sections = section_names()
    out: list[tuple[str, Any]] = []
    for k, v in data.items():
        name = f"{prefix}{k}"
        if isinstance(v, dict) and name in sections:
            out += flat_items(v, sections, f"{name}.")
        else:
            out.append((name, v))
    return out


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{json.dumps(k)} = {_toml_value(x)}" for k, x in v.items()) + " }"
    raise TypeError(type(v))


def to_toml(data: Mapping[str, Any], sections: "set[str] | None" = None, prefix: str = "") -> str:
    """``data`` as TOML text. ``sections``: the dotted names written as ``[a.b]`` tables (default:
    the sections of ``causalkg/core/defaults.toml``); other table values are written inline."""
    if sections is None:
        from causalkg.core.config import section_names

        sections = section_names()
    lines: list[str] = []
    nested: list[tuple[str, Mapping[str, Any]]] = []
    for section, values in data.items():
        name = f"{prefix}{section}"
        lines.append(f"[{name}]")
        for k, v in values.items():
            if isinstance(v, dict) and f"{name}.{k}" in sections:
                nested.append((f"{name}.{k}", v))
            else:
                lines.append(f"{k} = {_toml_value(v)}")
        lines.append("")
        for sub, v in nested:
            lines.append(to_toml({sub.rsplit(".", 1)[1]: v}, sections, prefix=sub.rsplit(".", 1)[0] + "."))
        nested.clear()
    return "\n".join(lines)


@dataclass
class RegistryListing(Result):
    """What is registered (``list_registry``): one row per kind and versioned name."""

    entries: list[dict[str, str]] = field(default_factory=list)

    def rows(self) -> list[dict[str, str]]:
        return self.entries

    def _json(self) -> Any:
        return self.entries

    def _render(self, fmt: str) -> str:
        return _table(self.entries, ["kind", "name", "aliases", "target"], fmt)


# --- corpus ----------------------------------------------------------------------------------


@dataclass
class CorpusBuild(Result):
    """What ``build_corpus`` did: the Wikidata part and the Wikipedia part (those that ran)."""

    wikidata: dict[str, Any] | None = None
    wikipedia: dict[str, Any] | None = None
    dry_run: bool = False

    def _render(self, fmt: str) -> str:
        return _lines_block(self.lines(), fmt)

    def lines(self) -> list[str]:
        out: list[str] = []
        if self.dry_run:
            out.append("dry run: nothing written")
        wd = self.wikidata
        if wd is not None:
            if self.dry_run:
                out.append("wikidata plan:")
                out += [f"  {line}" for line in wd["plan"]]
            else:
                c = wd["counts"]
                o = wd["outputs"]
                out.append(f"wikidata (source: {wd['source']}, {wd['endpoint']}):")
                out.append(f"  {o['event_classes']['path']}: {c['event_classes']} event classes "
                           f"({c['event_classes_seed']} seed, {c['event_classes_discovered']} discovered)")
                out.append(f"  {o['concepts']['path']}: {c['concepts']} concepts "
                           f"({c['concepts_class']} classes, {c['concepts_instance']} instances, "
                           f"{c['concepts_with_enwiki_title']} with an enwiki title)")
                out.append(f"  {o['base_kg']['path']}: {c['base_kg_lines']} lines, "
                           f"{c['base_kg_class_pairs']} class pairs, {c['base_kg_instance_pairs']} instance pairs")
                q = wd["queries"]
                live = "requests" in q and wd["source"] == "live"
                out.append(f"  queries: {q['queries']}" + (f", HTTP requests: {q['requests']}, cache hits: "
                                                          f"{q['cache_hits']}, retries: {q['retries']}" if live else ""))
                out += [f"  note: {note}" for note in wd["notes"]]
        wp = self.wikipedia
        if wp is not None:
            if self.dry_run:
                out.append("wikipedia plan:")
                out += [f"  {line}" for line in wp.get("plan") or []]
            else:
                out.append("wikipedia:")
                out += [f"  {k}: {v}" for k, v in (wp.get("outputs") or {}).items()]
                out += [f"  {k}: {_counts_value(k, v)}" for k, v in (wp.get("counts") or {}).items()]
            for note in wp.get("notes") or []:
                if not (self.dry_run and note.startswith("plan: ")):  # the plan lines, shown above
                    out.append(f"  note: {note}")
        return out


# --- linking ---------------------------------------------------------------------------------


@dataclass
class IndexBuild(Result):
    """What ``build_index`` did: built (with the reasons) or found current."""

    folder: Path = Path()
    built: bool = False
    model: str = ""
    index: dict[str, Any] = field(default_factory=dict)
    counts: dict[str, Any] = field(default_factory=dict)
    reasons: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "IndexBuild":
        return cls(folder=Path(d["folder"]), built=bool(d["built"]), model=d["model"], index=dict(d["index"]),
                   counts=dict(d["counts"]), reasons=list(d["reasons"]), notes=list(d["notes"]),
                   seconds=float(d["seconds"]), detail=d)

    def _render(self, fmt: str) -> str:
        c = self.counts
        what = (f"{c.get('surfaces')} surface forms of {c.get('concepts')} concepts "
                f"({c.get('classes')} classes, {c.get('instances')} instances), "
                f"model {self.model}, index {self.index.get('type')}")
        if self.built:
            lines = [f"built concept index in {self.folder}: {what} ({self.seconds:.1f} s)"]
            lines += [f"  reason: {r}" for r in self.reasons]
        else:
            lines = [f"concept index in {self.folder} is current: {what} (--force rebuilds it)"]
        lines += [f"  note: {n}" for n in self.notes]
        return _lines_block(lines, fmt)


@dataclass
class Links(Result):
    """What ``link`` found: per phrase, its normal form, ranked candidates and a note."""

    phrases: list[dict[str, Any]] = field(default_factory=list)

    COLUMNS: ClassVar[list[str]] = ["rank", "qid", "label", "surface", "score", "kind", "match"]

    def _json(self) -> Any:
        return self.phrases

    def rows(self) -> list[dict[str, Any]]:
        """One row per (phrase, candidate)."""
        return [{"phrase": p["phrase"], "rank": i + 1, **c} for p in self.phrases for i, c in enumerate(p["candidates"])]

    def _render(self, fmt: str) -> str:
        if fmt == "csv":
            return _table(self.rows(), ["phrase"] + self.COLUMNS, "csv", ".3f")
        blocks = []
        for row in self.phrases:
            shown = row["phrase"] if len(row["phrase"]) <= 80 else row["phrase"][:77] + "..."
            head = f"{json.dumps(shown, ensure_ascii=False)} -> {json.dumps(row['normalised'][:80], ensure_ascii=False)}"
            lines = [head]
            if row["candidates"]:
                table = [{"rank": i + 1, **c} for i, c in enumerate(row["candidates"])]
                lines += ["  " + line for line in _table(table, self.COLUMNS, fmt, ".3f").splitlines()]
            if row["note"]:
                lines.append(f"  ({row['note']})")
            blocks.append("\n".join(lines))
        return "\n\n".join(blocks)


# --- kg --------------------------------------------------------------------------------------


@dataclass
class Training(Result):
    """What ``train_qa`` did: trained (steps, validation) or skipped (why); a dry run's plan."""

    output: Path = Path()
    skipped: bool = False
    reason: str = ""
    steps: int = 0
    seconds: float = 0.0
    validation: dict[str, Any] = field(default_factory=dict)
    plan: dict[str, Any] | None = None

    def _render(self, fmt: str) -> str:
        if self.plan is not None:
            return _lines_block(_dumps(self.plan).splitlines(), fmt)
        if self.skipped:
            return _lines_block([f"nothing to do: {self.reason}"], fmt)
        v = self.validation
        tuned = v.get("at_tuned_threshold", {})
        return _lines_block([
            f"trained {self.steps} steps in {self.seconds:.0f} s; saved to {self.output}",
            f"validation ({v.get('questions')} questions): F1 {tuned.get('f1', 0):.1f}, exact {tuned.get('exact', 0):.1f}, "
            f"has-answer F1 {tuned.get('has_ans_f1', 0):.1f}, no-answer accuracy {tuned.get('no_ans_acc', 0):.1f} "
            f"(no-answer threshold {v.get('null_threshold')}, checkpoint of step {v.get('selected_step')})",
        ], fmt)


@dataclass
class Extraction(Result):
    """What ``extract`` did: the output, documents and extractions written, counts; a dry run's plan."""

    output: Path = Path()
    manifest_path: Path = Path()
    skipped: bool = False
    documents: int = 0
    extractions: int = 0
    counts: dict[str, Any] = field(default_factory=dict)
    plan: dict[str, Any] = field(default_factory=dict)

    def _render(self, fmt: str) -> str:
        c = self.counts
        if self.skipped and not c:
            return _lines_block(_dumps(self.plan).splitlines(), fmt)
        lines = []
        if self.skipped:
            lines.append(f"{self.output} is up to date (same input and settings); nothing was redone")
        lines.append(f"wrote {self.extractions} extractions from {self.documents} documents to {self.output}")
        if c.get("sentences"):
            lines.append(f"candidate sentences: {c.get('candidates', 0)} of {c['sentences']} "
                         f"({100 * c.get('candidates', 0) / c['sentences']:.1f}%)")
        if c.get("shards_resumed"):
            lines.append(f"resumed: {c['shards_resumed']} of {c['shards']} shards were already done")
        if c.get("invalid_lines_skipped"):
            lines.append(f"skipped {c['invalid_lines_skipped']} invalid input lines (--lenient)")
        lines.append(f"manifest: {self.manifest_path}")
        return _lines_block(lines, fmt)


@dataclass
class Assembly(Result):
    """What ``assemble`` did: the KG folder, its counts and notes; a dry run's plan."""

    out: Path = Path()
    skipped: bool = False
    counts: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    plan: dict[str, Any] | None = None

    def _render(self, fmt: str) -> str:
        if self.plan is not None:
            p = self.plan
            o = p["options"]
            linker = p["linker"] + ("" if p["linking_index_exists"] or "load" not in p["linker"]
                                    else " (missing: run causalkg link build)")
            corpus = p["corpus"]["path"] + ("" if p["corpus"]["exists"]
                                            else " (missing: no titles/URLs beyond the extractions)")
            return _lines_block([
                f"plan: assemble the causal KG into {p['out']}",
                f"  {p['source']['kind']}: {p['source']['path']}",
                f"  corpus: {corpus}",
                f"  concepts: {p['concepts']['path']}",
                f"  linker: {linker}",
                f"  shards of {o['shard_size']} (done: {p['shards_done']}), lift={o['lift']}, "
                f"min_support={o['min_support']}, allow_self_loops={o['allow_self_loops']}, top_k={o['k']}, "
                f"threshold={o['threshold']}",
                "  outputs are up to date: nothing to do" if p["up_to_date"] else "  outputs will be (re)built",
            ], fmt)
        c = self.counts
        head = "is up to date (--force rebuilds it)" if self.skipped else "written"
        lines = [f"causal KG in {self.out} {head}: {c.get('edges', 0)} edges ({c.get('edges_class', 0)} class, "
                 f"{c.get('edges_instance', 0)} instance, {c.get('edges_mixed', 0)} mixed), {c.get('nodes', 0)} "
                 f"concepts, {c.get('mentions', 0)} mentions, {c.get('triples', 0)} triples"]
        if not self.skipped:
            lines.append(f"  linked {c.get('link_linked', 0)} of {c.get('link_extractions', 0)} pairs at both ends; "
                         f"{c.get('link_self_loops_dropped', 0)} self-loops dropped; "
                         f"{c.get('aggregate_lifted_edges', 0)} class edges lifted from instances")
        lines += [f"  note: {n}" for n in self.notes]
        return _lines_block(lines, fmt)


@dataclass
class Export(Result):
    """What ``export`` did: the target store, the triples per named graph, notes."""

    target: str = ""
    graphs: dict[str, int] = field(default_factory=dict)
    skipped: bool = False
    dry_run: bool = False
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)

    def rows(self) -> list[dict[str, Any]]:
        return [{"graph": g, "triples": n} for g, n in self.graphs.items()]

    def _render(self, fmt: str) -> str:
        if fmt == "csv":
            return _table(self.rows(), ["graph", "triples"], "csv")
        if self.dry_run:
            head = f"plan: load into {self.target}"
        else:
            state = "is up to date (--force reloads it)" if self.skipped else f"loaded in {self.seconds:.1f} s"
            head = f"{self.target} {state}:"
        lines = [head] + [f"  <{g}>: {n} triples" for g, n in self.graphs.items()]
        return "\n".join(lines + [f"  note: {n}" for n in self.notes])


@dataclass
class QueryAnswer(Result):
    """The answer of ``query``: SELECT rows, an ASK boolean or CONSTRUCT triples."""

    def _json(self) -> Any:
        from causalkg.kg.store import format_result

        return json.loads(format_result(self.detail, "json"))

    def to_table(self, fmt: str = "text") -> str:
        from causalkg.kg.store import format_result

        check_format(fmt)
        return format_result(self.detail, {"text": "table"}.get(fmt, fmt))

    def to_dict(self) -> dict[str, Any]:
        return self._json()


@dataclass
class Stats(Result):
    """Graph statistics of the KG (``stats``) and its agreement with the Base KG."""

    def to_table(self, fmt: str = "text") -> str:
        from causalkg.kg.stats import render_stats

        check_format(fmt)
        if fmt == "csv":  # the headline measures; the other tables are in the json
            s = self.detail
            rows = [{"measure": "nodes", "value": s.nodes}, {"measure": "edges", "value": s.edges},
                    *({"measure": f"edges_{k}", "value": v} for k, v in s.levels.items()),
                    {"measure": "self_loops", "value": s.self_loops}, {"measure": "cycles", "value": s.cycles},
                    {"measure": "components", "value": s.components},
                    {"measure": "largest_component", "value": s.largest_component}]
            return _table(rows, ["measure", "value"], "csv")
        return render_stats(self.detail, fmt)

    def to_dict(self) -> dict[str, Any]:
        return self.detail.to_dict()


@dataclass
class Summary(Result):
    """Counts and the best-supported edges of the KG (``summary``)."""

    def to_table(self, fmt: str = "text", width: int | None = None) -> str:
        """``width``: fit the text lines to that many columns (the CLI's terminal unless --wide)."""
        from causalkg.kg.stats import render_summary

        check_format(fmt)
        if fmt == "csv":  # the best-supported edges; the counts are in the json
            return _table(self.detail.top, ["cause", "effect", "level", "sentences", "documents", "best_score",
                                            "evidence"], "csv", ".3f")
        return render_summary(self.detail, fmt, width)

    def to_dict(self) -> dict[str, Any]:
        return json.loads(self.to_table("json"))


# --- evaluation ------------------------------------------------------------------------------


@dataclass
class Recall(Result):
    """Recall of each KG against the Base KG (``recall``): rows per KG and view."""

    base_kg: Path = Path()
    per_class: bool = False
    notes: list[str] = field(default_factory=list)
    written: dict[str, str] = field(default_factory=dict)

    def rows(self) -> list[dict[str, Any]]:
        """One row per KG and view (full, classes, instances)."""
        return self.detail.rows

    def _json(self) -> Any:
        return json.loads(self.detail.render("json"))

    def to_dict(self) -> dict[str, Any]:
        return {"base_kg": str(self.base_kg), "rows": self._json(), "notes": self.notes, "written": self.written}

    def _render(self, fmt: str) -> str:
        text = self.detail.render(fmt)
        if self.per_class:
            text += "\n\n" + self.detail.render_by_class(fmt)
        return text


@dataclass
class Precision(Result):
    """Precision of each KG judged by a language model (``precision``)."""

    judge: str = ""
    reference_table: bool = False
    notes: list[str] = field(default_factory=list)
    failed: list[dict[str, Any]] = field(default_factory=list)
    written: dict[str, str] = field(default_factory=dict)

    def rows(self) -> list[dict[str, Any]]:
        """One row per KG and view (full, types, instances)."""
        return self.detail.rows

    def _json(self) -> Any:
        return self.detail.to_json()

    def to_dict(self) -> dict[str, Any]:
        return self._json()

    def _render(self, fmt: str) -> str:
        r = self.detail
        text = r.render_reference(fmt) if self.reference_table else r.render(fmt)
        if fmt in ("md", "text"):
            text += "\n\n" + r.usage_line()
            if r.consistency_line():
                text += "\n" + r.consistency_line()
        return text


@dataclass
class HumanPrecisionResult(Result):
    """Precision from people's judgements (``human_precision``), with a Wilson interval."""

    precision: float = float("nan")
    ci_low: float = float("nan")
    ci_high: float = float("nan")
    notes: list[str] = field(default_factory=list)

    def rows(self) -> list[dict[str, Any]]:
        return self.detail.rows()

    def _json(self) -> Any:
        return self.detail.to_json()

    def to_dict(self) -> dict[str, Any]:
        return self._json()

    def _render(self, fmt: str) -> str:
        return self.detail.render(fmt)


@dataclass
class Report(Result):
    """What ``report`` wrote (data/eval/report.md) and what it had to skip."""

    path: Path = Path()
    status: int = 0

    def to_dict(self) -> dict[str, Any]:
        r = self.detail
        return {"path": str(self.path), "status": self.status,
                "missing": [_plain(i) for i in r.missing], "empty": [_plain(i) for i in r.empty],
                "precision": r.precision.to_json() if r.precision is not None else None,
                "precision_error": r.precision_error}

    def _render(self, fmt: str) -> str:
        r = self.detail
        lines = [f"wrote {self.path}"]
        lines += [f"missing {i.role}: {i.path} (make it with: {i.make})" for i in r.missing]
        lines += [f"empty {i.role}: {i.path} (0 bytes: the stage that wrote it found nothing; see its output, or: {i.make})"
                  for i in r.empty]
        if r.precision is None and r.precision_error is None:
            lines.append("precision skipped: no judge configured (set eval.precision.judge or pass --judge)")
        elif r.precision is not None:
            lines += [r.precision.render_reference("md"), r.precision.usage_line()]
        return _lines_block(lines, fmt) if fmt == "csv" else "\n".join(lines)


@dataclass
class SoftScores(Result):
    """Soft edge measures of predicted graphs against gold ones (``soft``)."""

    out: Path | None = None

    def rows(self) -> list[dict[str, Any]]:
        return self.detail.rows()

    def _json(self) -> Any:
        return json.loads(_table(self.rows(), None, "json"))

    def _render(self, fmt: str) -> str:
        text = _table(self.rows(), None, fmt)
        if fmt == "csv":
            return text
        c = self.detail.counts
        note = f"{c['units']} units"
        if c["units_missing_pred"] or c["units_missing_gold"]:
            note += (f" ({c['units_missing_pred']} without a prediction, {c['units_missing_gold']} without gold: "
                     "scored as empty)")
        if self.out:
            note += f"; per-unit scores in {self.out}/units.jsonl"
        return f"{text}\n\n{note}"


@dataclass
class EloRatings(Result):
    """Elo ratings of annotations (``elo``)."""

    out: Path | None = None
    COLUMNS: ClassVar[list[str]] = ["unit", "player", "rating", "rank", "games", "wins", "losses", "ties", "winner"]

    def rows(self) -> list[dict[str, Any]]:
        return self.detail.rows()

    def _json(self) -> Any:
        return json.loads(_table(self.rows(), self.COLUMNS, "json"))

    def _render(self, fmt: str) -> str:
        text = _table(self.rows(), self.COLUMNS, fmt)
        if fmt == "csv":
            return text
        c = self.detail.counts
        return (f"{text}\n\n{c['judgements']} judgements ({c['ties']} ties) over {c['units']} units"
                + (f"; {c['unreadable']} unreadable judge answers recorded as ties" if c.get("unreadable") else "")
                + (f"; written to {self.out}" if self.out else ""))


@dataclass
class MetaEvaluation(Result):
    """Soft measures meta-evaluated against Elo ratings (``meta``)."""

    out: Path | None = None

    def rows(self) -> list[dict[str, Any]]:
        return self.detail.table()

    def _json(self) -> Any:
        return json.loads(_table(self.rows(), None, "json"))

    def _render(self, fmt: str) -> str:
        text = _table(self.rows(), None, fmt)
        if fmt == "csv":
            return text
        run = self.detail
        best = ", ".join(f"{m}={t:g}" for m, t in run.best().items())
        unknown = run.counts["unknown_rated_annotators"]
        return (f"{text}\n\nbest theta: {best}; {run.counts['units_scored']} units"
                + (f"; rated but without graphs: {', '.join(unknown)}" if unknown else ""))


@dataclass
class Alignment(Result):
    """Structure-first alignment of predicted to gold graphs (``align``): one row per view."""

    out: Path | None = None
    COLUMNS: ClassVar[list[str]] = ["view", "units", "exact_units", "matched", "gold_edges", "pred_edges", "micro_p",
                                    "micro_r", "micro_f1", "macro_p", "macro_r", "macro_f1", "macro_f1_gold_units"]

    def rows(self) -> list[dict[str, Any]]:
        return self.detail.summaries

    def columns(self) -> list[str]:
        run = self.detail
        extra = sorted({k for s in run.summaries for k in s if k.endswith("_f1") and k not in self.COLUMNS})
        return self.COLUMNS + extra + (["node_cosine"] if run.tiers else [])

    def _json(self) -> Any:
        return json.loads(_table(self.rows(), self.columns(), "json"))

    def _render(self, fmt: str) -> str:
        text = _table(self.rows(), self.columns(), fmt)
        if fmt == "csv":
            return text
        run = self.detail
        c = run.counts
        lower = c["unit_views"] - c["exact_unit_views"]
        lines = [text, "", f"{c['units']} units; {c['exact_unit_views']} of {c['unit_views']} unit views solved exactly"
                 + (f", {lower} stopped at the time limit (lower bounds)" if lower else "")
                 + (f"; per-unit results in {self.out}/units.jsonl" if self.out else "")]
        for v, t in (run.tiers or {}).items():
            parts = [f"{name}: {val['pairs']} ({val['share']:.0%})" for name, val in t.items() if isinstance(val, dict)]
            lines.append(f"node validation [{v}] mean cosine {t.get('mean', float('nan')):.3f} over {t['pairs']} pairs; "
                         + "; ".join(parts))
        return "\n".join(lines)


@dataclass
class Agreement(Result):
    """Cohen's and Fleiss' kappa between annotators (``agreement``)."""

    def rows(self) -> list[dict[str, Any]]:
        return self.detail.rows

    def _json(self) -> Any:
        return json.loads(_table(self.rows(), None, "json"))

    def _render(self, fmt: str) -> str:
        text = _table(self.rows(), None, fmt)
        if fmt == "csv":
            return text
        c = self.detail.counts
        return f"{text}\n\n{c['units']} units annotated by all {c['annotators']} annotators"


@dataclass
class SQCScore(Result):
    """SQC-Score of predicted facts against gold facts (``sqc``); a dry run's plan."""

    out: Path | None = None
    explain: bool = False
    plan: dict[str, Any] | None = None

    COLUMNS: ClassVar[list[str]] = ["scope", "units", "predicted", "gold", "matched", "credited", "weight",
                                    "precision", "recall", "sqc"]

    def _json(self) -> Any:
        if self.plan is not None:
            return self.plan
        s = self.detail.summary
        return {k: s[k] for k in ("micro", "macro", "tau", "tau_source", "matcher", "complementer", "failed_units")}

    def to_table(self, fmt: str = "text") -> str:
        check_format(fmt)
        if self.plan is not None:
            return _dumps(self.plan)
        text = _dumps(self._json()) if fmt == "json" else self._render(fmt)
        if self.explain:
            from causalkg.evaluation.judging.sqc import iter_report_lines

            text += "\n\n" + "\n".join(iter_report_lines(self.detail))
        return text

    def _render(self, fmt: str) -> str:
        s = self.detail.summary
        text = _table(self.detail.rows(), self.COLUMNS, fmt)
        if fmt in ("md", "text"):
            tau = f"{s['tau']:.4f} ({s['tau_source']})" if s["tau"] is not None else s["tau_source"]  # n/a (why)
            text += f"\n\nmatcher {s['matcher']}; complementer {s['complementer']}; tau {tau}"
        return text


@dataclass
class Consistency(Result):
    """Causal epistemic consistency of a judge (``consistency``); a dry run's plan."""

    plan: dict[str, Any] | None = None

    def _json(self) -> Any:
        if self.plan is not None:
            return self.plan
        r = self.detail
        return {"judge": r.judge, "method": r.method, "headline": r.headline, "pairs": r.pairs, "scored": r.scored,
                "failures": r.failures, "summary": r.summary}

    def to_table(self, fmt: str = "text") -> str:
        check_format(fmt)
        if self.plan is not None:
            return _dumps(self.plan)
        return super().to_table(fmt)

    def _render(self, fmt: str) -> str:
        from causalkg.evaluation.judging.consistency import METRICS

        r = self.detail
        rows = r.rows()
        if fmt == "csv":
            return _table(rows, ["ranking", "pairs"] + [c for m in METRICS for c in (m, f"{m}_std")], "csv")
        shown = [{"ranking": row["ranking"], "pairs": row["pairs"],
                  **{m: (f"{row[m]:.3f}" + (f" ± {row[m + '_std']:.3f}" if row[m + "_std"] is not None else ""))
                     if row[m] is not None else "n/a" for m in METRICS}} for row in rows]
        return (_table(shown, ["ranking", "pairs", *METRICS], fmt)
                + f"\n\njudge {r.judge}: {r.scored} of {r.pairs} pairs ranked; headline: {r.headline}")


@dataclass
class WordNetInstall(Result):
    """What ``setup_wordnet`` installed."""

    corpus_dir: Path = Path()
    files: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    def _render(self, fmt: str) -> str:
        return _lines_block([f"WordNet 3.0 for NLTK in {self.corpus_dir}: {len(self.files)} files written"
                             + (f", {len(self.skipped)} already there (--force replaces them)" if self.skipped else "")],
                            fmt)


__all__ = [
    "FORMATS", "check_format", "Result", "ConfigView", "RegistryListing", "CorpusBuild", "IndexBuild", "Links", "Training", "Extraction",
    "Assembly", "Export", "QueryAnswer", "Stats", "Summary", "Recall", "Precision", "HumanPrecisionResult", "Report", "SoftScores",
    "EloRatings", "MetaEvaluation", "Alignment", "Agreement", "SQCScore", "Consistency", "WordNetInstall",
]
