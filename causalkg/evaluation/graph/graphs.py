"""Graph input for the graph measures (soft edge measures, Elo, alignment, agreement).

A *unit* is one passage, abstract or document with its graph. Three inputs are read:

- the documented graph JSONL (``GraphRecord``): one unit per line with ``id``, optional
  ``text``, ``nodes`` (``id``, ``label``, optional ``level``: higher|lower) and ``edges``
  (``source``, ``target``, ``type``: directional|correlational|moderation|hierarchy, optional
  ``direction``: increase|decrease (positive|negative|+|- are read as these), optional ``validation``: validated|null|hypothesized);
- the simple tuple form ``{"id", "text", "edges": [{"src", "tgt", "direction"}]}`` (also with the
  key ``"causal relations"``, as the soft-measures study writes it): nodes are the distinct
  strings, every edge is directional, the direction string is kept as written;
- a Label Studio JSON export of span-and-relation annotations: spans labelled as variables become
  nodes (a ``var_name`` text area renames them), relation labels become edge types
  (``hierarchy``, ``direction*``, ``correlation*``, ``moderation*``, with a ``__validated`` /
  ``__null`` / ``__hypothesized`` suffix), as in the EmpiriGraph-Psy annotation project.

``read_graphs`` picks the reader from the file (``.json`` = Label Studio, JSONL lines with
``nodes`` = documented form, with ``src``/``tgt`` edges = tuple form) and returns ``Graph``
objects keyed by unit id. Errors name ``path:line`` (JSONL) or ``path: task N`` (JSON).
Part of the evaluation stage; used by ``evaluation.graph.soft``, ``evaluation.graph.align`` and the rest.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from causalkg.core.errors import ConfigError, SchemaError
from causalkg.core.jsonl import ReadStats, RecordProblem, read_jsonl, write_jsonl

SCHEMA_VERSION = 1
EDGE_TYPES = ("directional", "correlational", "moderation", "hierarchy")
VALIDATIONS = ("validated", "null", "hypothesized")
DIRECTIONS = ("increase", "decrease")
_DIRECTION_ALIASES = {"positive": "increase", "+": "increase", "negative": "decrease", "-": "decrease"}


# -- the in-memory graph ---------------------------------------------------------------------


@dataclass(frozen=True)
class Node:
    id: str
    label: str
    level: str | None = None  # higher | lower | None


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    type: str = "directional"
    direction: str | None = None
    validation: str | None = None


@dataclass
class Graph:
    """One unit's graph. ``nodes`` keeps insertion order; edges may repeat (lists, as annotated)."""

    id: str
    text: str | None = None
    nodes: dict[str, Node] = field(default_factory=dict)
    edges: list[Edge] = field(default_factory=list)

    def label(self, node_id: str) -> str:
        node = self.nodes.get(node_id)
        return node.label if node is not None else node_id

    def add_node(self, node_id: str, label: str | None = None, level: str | None = None) -> Node:
        node = self.nodes.get(node_id)
        if node is None:
            node = Node(node_id, label if label is not None else node_id, level)
            self.nodes[node_id] = node
        return node

    def add_edge(self, edge: Edge) -> None:
        self.add_node(edge.source)
        self.add_node(edge.target)
        self.edges.append(edge)

    def to_tuple_record(self) -> dict[str, Any]:
        """The simple tuple form (labels and raw direction strings; types and levels are lost)."""
        rec: dict[str, Any] = {"id": self.id}
        if self.text is not None:
            rec["text"] = self.text
        rec["edges"] = [{"src": self.label(e.source), "tgt": self.label(e.target), "direction": e.direction}
                        for e in self.edges]
        return rec

    def to_record(self) -> dict[str, Any]:
        """The documented JSONL record for this graph."""
        rec: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "id": self.id}
        if self.text is not None:
            rec["text"] = self.text
        rec["nodes"] = [
            {"id": n.id, "label": n.label, **({"level": n.level} if n.level else {})} for n in self.nodes.values()
        ]
        rec["edges"] = [
            {
                "source": e.source,
                "target": e.target,
                "type": e.type,
                **({"direction": e.direction} if e.direction is not None else {}),
                **({"validation": e.validation} if e.validation is not None else {}),
            }
            for e in self.edges
        ]
        return rec


# -- the documented JSONL contract ------------------------------------------------------------


class NodeRecord(BaseModel):
    model_config = ConfigDict(extra="allow")
    id: str = Field(min_length=1)
    label: str
    level: Literal["higher", "lower"] | None = None


class EdgeRecord(BaseModel):
    model_config = ConfigDict(extra="allow")
    source: str = Field(min_length=1)
    target: str = Field(min_length=1)
    type: Literal["directional", "correlational", "moderation", "hierarchy"] = "directional"
    direction: Literal["increase", "decrease"] | None = None
    validation: Literal["validated", "null", "hypothesized"] | None = None

    @field_validator("type", "direction", "validation", mode="before")
    @classmethod
    def _lower(cls, v: Any) -> Any:
        return v.strip().lower() if isinstance(v, str) else v

    @field_validator("direction", mode="before")
    @classmethod
    def _direction_alias(cls, v: Any) -> Any:
        # positive/negative (the soft-measures study's words) and +/- name the same two values.
        # Pydantic runs "before" validators last-defined first, so this one sees the raw value.
        if not isinstance(v, str):
            return v
        key = v.strip().lower()
        return _DIRECTION_ALIASES.get(key, key)


class GraphRecord(BaseModel):
    """One unit of the documented graph JSONL (``docs/graph-measures.md``)."""

    model_config = ConfigDict(extra="allow")
    schema_version: int = SCHEMA_VERSION
    id: str = Field(min_length=1)
    text: str | None = None
    nodes: list[NodeRecord] = Field(default_factory=list)
    edges: list[EdgeRecord] = Field(default_factory=list)

    @field_validator("id", mode="before")
    @classmethod
    def _id_str(cls, v: Any) -> Any:
        return str(v) if isinstance(v, int) and not isinstance(v, bool) else v

    def problem(self) -> str | None:
        """What is wrong beyond the field types (repeated node ids, edges naming unknown nodes)."""
        ids = [n.id for n in self.nodes]
        dup = sorted({i for i in ids if ids.count(i) > 1})
        if dup:
            return f"nodes: duplicate node id(s) {', '.join(map(repr, dup))}"
        known = set(ids)
        for i, e in enumerate(self.edges):
            for end in (e.source, e.target):
                if end not in known:
                    return f"edges.{i}: node {end!r} is not in nodes"
        return None

    def to_graph(self) -> Graph:
        g = Graph(self.id, self.text)
        for n in self.nodes:
            g.add_node(n.id, n.label, n.level)
        for e in self.edges:
            g.add_edge(Edge(e.source, e.target, e.type, e.direction, e.validation))
        return g


class TupleEdgeRecord(BaseModel):
    model_config = ConfigDict(extra="allow")
    src: str
    tgt: str
    direction: str | None = None


class TupleRecord(BaseModel):
    """The simple tuple form: edges are (src, tgt, direction) strings."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)
    id: str
    text: str | None = None
    edges: list[TupleEdgeRecord] = Field(default_factory=list)

    @field_validator("id", mode="before")
    @classmethod
    def _id_str(cls, v: Any) -> Any:
        return str(v) if isinstance(v, int) and not isinstance(v, bool) else v

    def to_graph(self) -> Graph:
        g = Graph(self.id, self.text)
        for e in self.edges:
            g.add_edge(Edge(e.src, e.tgt, "directional", e.direction, None))
        return g


# -- readers ----------------------------------------------------------------------------------


def _tuple_form(value: dict) -> bool:
    edges = value.get("edges", value.get("causal relations"))
    if "nodes" in value:
        return False
    if isinstance(edges, list) and edges and isinstance(edges[0], dict):
        return "src" in edges[0] or "tgt" in edges[0]
    return "causal relations" in value


def iter_graph_jsonl(
    path: str | os.PathLike, *, lenient: bool = False, stats: ReadStats | None = None
) -> Iterator[Graph]:
    """Stream the units of a graph JSONL file (documented or tuple form, per line).

    A line without ``id`` gets its 0-based record number as id (the tuple files of the
    soft-measures study are positional). Raises SchemaError ``path:line: ...`` on a bad line
    unless ``lenient`` (then it is skipped and counted in ``stats``).
    """
    index = 0

    def to_graph(value: Any) -> Graph:
        if not isinstance(value, dict):
            raise RecordProblem("expected a JSON object")
        value = dict(value)
        value.setdefault("id", str(index))
        if _tuple_form(value):
            if "causal relations" in value and "edges" not in value:
                value["edges"] = value.pop("causal relations")
            return TupleRecord.model_validate(value).to_graph()
        record = GraphRecord.model_validate(value)
        problem = record.problem()
        if problem is not None:
            raise RecordProblem(problem)
        return record.to_graph()

    for graph in read_jsonl(path, lenient=lenient, stats=stats, convert=to_graph):
        index += 1
        yield graph


_LS_TYPE_PREFIXES = (("hierarchy", "hierarchy"), ("direction", "directional"),
                     ("correlation", "correlational"), ("moderation", "moderation"))
_LS_DIRECTIONS = {"increase": "increase", "positive": "increase", "decrease": "decrease", "negative": "decrease"}


def _ls_edge_type(label: str) -> str | None:
    low = label.strip().lower()
    for prefix, kind in _LS_TYPE_PREFIXES:
        if low.startswith(prefix):
            return kind
    return None


def _ls_validation(label: str, default: str | None) -> str | None:
    low = label.lower()
    for v in VALIDATIONS:  # "validated" before "null" before "hypothesized", as annotated
        if v in low:
            return v
    if "hypothesis" in low:
        return "hypothesized"
    return default


def read_label_studio(
    path: str | os.PathLike,
    *,
    variable_labels: Iterable[str] = ("Variable",),
    rename_field: str = "var_name",
    text_fields: Iterable[str] = ("text", "AB"),
    annotator: str | int | None = None,
    default_validation: str = "validated",
    stats: ReadStats | None = None,
) -> list[Graph]:
    """Read a Label Studio JSON export (a list of tasks) into one graph per task.

    Spans whose labels include one of ``variable_labels`` become nodes (label: the span text, or
    the ``rename_field`` text area's value). Each relation label gives one edge: its type from the
    prefix (hierarchy, direction..., correlation..., moderation...), its validation from the
    ``__validated|__null|__hypothesized`` suffix (``default_validation`` without one; hierarchy
    edges carry none), and ``increase``/``decrease`` (or positive/negative) labels set the
    direction of the relation's directional edge. Hierarchy sources are marked ``higher``,
    targets ``lower``. The first non-cancelled annotation is read, or the one ``completed_by``
    ``annotator``. Unknown relation labels are counted in ``stats.errors`` (not silently lost).
    Raises SchemaError ``path: task N (id X): ...`` on a malformed task.
    """
    stats = stats if stats is not None else ReadStats()
    stats.path = str(path)
    p = Path(path)
    if not p.exists():
        raise SchemaError(f"{path}: no such file")
    try:
        tasks = json.loads(p.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise SchemaError(f"{path}: not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})") from None
    if isinstance(tasks, dict):
        tasks = [tasks]
    if not isinstance(tasks, list):
        raise SchemaError(f"{path}: expected a list of Label Studio tasks")
    var_labels = {v.lower() for v in variable_labels}
    graphs: list[Graph] = []
    for n, task in enumerate(tasks, 1):
        stats.lines = n
        where = f"{path}: task {n}"
        if not isinstance(task, dict):
            raise SchemaError(f"{where}: expected a JSON object")
        task_id = task.get("id", n)
        where += f" (id {task_id})"
        anns = [a for a in task.get("annotations") or [] if isinstance(a, dict) and not a.get("was_cancelled")]
        if annotator is not None:
            anns = [a for a in anns if str(a.get("completed_by")) == str(annotator)]
        data = task.get("data") or {}
        text = next((data[f] for f in text_fields if isinstance(data.get(f), str)), None)
        g = Graph(str(task_id), text)
        if not anns:
            stats.note_skip(f"{where}: no annotation{' by ' + str(annotator) if annotator is not None else ''}; empty graph")
            graphs.append(g)
            stats.records += 1
            continue
        result = anns[0].get("result")
        if not isinstance(result, list):
            raise SchemaError(f"{where}: annotations[0].result must be a list")
        names: dict[str, str] = {}
        for r in result:
            if not isinstance(r, dict):
                raise SchemaError(f"{where}: a result item is not an object")
            value = r.get("value") or {}
            if r.get("type") == "labels" and var_labels & {str(x).lower() for x in value.get("labels", [])}:
                if "id" not in r:
                    raise SchemaError(f"{where}: a labelled span has no id")
                names[r["id"]] = str(value.get("text", "")).strip()
        for r in result:
            if r.get("type") == "textarea" and r.get("from_name") == rename_field and r.get("id") in names:
                new = (r.get("value") or {}).get("text", "")
                if isinstance(new, list):
                    new = new[0] if new else ""
                if str(new).strip():
                    names[r["id"]] = str(new).strip()
        for span_id, label in names.items():
            g.add_node(span_id, label)
        levels: dict[str, str] = {}
        for r in result:
            if r.get("type") != "relation":
                continue
            src, tgt = r.get("from_id"), r.get("to_id")
            if src not in names or tgt not in names:
                stats.note_skip(f"{where}: relation {src}->{tgt} joins a span that is not a variable; skipped")
                continue
            labels = [str(x) for x in r.get("labels") or []]
            direction = next((_LS_DIRECTIONS[x.strip().lower()] for x in labels if x.strip().lower() in _LS_DIRECTIONS), None)
            typed = False
            for lbl in labels:
                if lbl.strip().lower() in _LS_DIRECTIONS:
                    continue
                kind = _ls_edge_type(lbl)
                if kind is None:
                    stats.note_skip(f"{where}: unknown relation label {lbl!r}; skipped")
                    continue
                typed = True
                if kind == "hierarchy":
                    g.edges.append(Edge(src, tgt, "hierarchy", None, None))
                    levels.setdefault(src, "higher")
                    levels[tgt] = "lower"
                else:
                    g.edges.append(Edge(src, tgt, kind, direction if kind == "directional" else None,
                                        _ls_validation(lbl, default_validation)))
            if not typed and direction is not None:
                # A bare "increase"/"decrease" relation is a directional edge.
                g.edges.append(Edge(src, tgt, "directional", direction, default_validation))
        for node_id, level in levels.items():
            node = g.nodes[node_id]
            g.nodes[node_id] = Node(node.id, node.label, level)
        graphs.append(g)
        stats.records += 1
    return graphs


def read_graphs(
    path: str | os.PathLike, *, lenient: bool = False, stats: ReadStats | None = None, **label_studio: Any
) -> dict[str, Graph]:
    """All units of a graph file, keyed by unit id, in file order.

    ``.json`` files are read as Label Studio exports (``label_studio`` options are passed to
    ``read_label_studio``); anything else as graph JSONL. Raises SchemaError on a repeated unit id.
    """
    p = str(path)
    stats = stats if stats is not None else ReadStats()
    if p.endswith(".json"):
        graphs: Iterable[Graph] = read_label_studio(path, stats=stats, **label_studio)
    else:
        graphs = iter_graph_jsonl(path, lenient=lenient, stats=stats)
    out: dict[str, Graph] = {}
    for g in graphs:
        if g.id in out:
            raise SchemaError(f"{path}: unit id {g.id!r} appears twice", hint="give every unit a distinct id")
        out[g.id] = g
    return out


def read_fcm_csv(path: str | os.PathLike) -> dict[str, dict[str, Graph]]:
    """The soft-measures study's tuple CSV (columns ``Causal claim``, ``Independent variable
    (coded)``, ``Dependent variable (coded)``, ``Relationship``, ``source``) as graphs per source:
    ``{source: {unit_id: Graph}}``. A unit is a passage; its id is the first 12 hex digits of the
    SHA-1 of the stripped passage text, so the same passage annotated by two sources shares an id.
    Directions are kept as written (Positive|Negative). Raises SchemaError ``path:line`` when a
    column is missing or a row lacks a passage, cause or effect.
    """
    import csv
    import hashlib

    need = ("Causal claim", "Independent variable (coded)", "Dependent variable (coded)", "Relationship")
    out: dict[str, dict[str, Graph]] = {}
    if not Path(path).exists():
        raise SchemaError(f"{path}: no such file")
    with open(path, newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        missing = [c for c in need if c not in (reader.fieldnames or [])]
        if missing:
            raise SchemaError(f"{path}:1: missing column(s) {', '.join(missing)}")
        for row in reader:
            line = reader.line_num
            text = (row.get("Causal claim") or "").strip()
            cause, effect = row.get("Independent variable (coded)") or "", row.get("Dependent variable (coded)") or ""
            if not text or not cause.strip() or not effect.strip():
                raise SchemaError(f"{path}:{line}: a row needs a passage, a cause and an effect")
            uid = hashlib.sha1(text.encode("utf-8")).hexdigest()[:12]
            graphs = out.setdefault(row.get("source") or "", {})
            g = graphs.get(uid)
            if g is None:
                g = graphs[uid] = Graph(uid, text)
            g.add_edge(Edge(cause, effect, "directional", row.get("Relationship"), None))
    return out


def write_graphs(path: str | os.PathLike, graphs: Iterable[Graph], *, form: str = "documented") -> int:
    """Write graphs as the documented JSONL (or ``form="tuple"``), atomically. Returns the count."""
    if form not in ("documented", "tuple"):
        raise ConfigError(f"unknown graph form {form!r}", hint="documented or tuple")
    return write_jsonl(path, (g.to_record() if form == "documented" else g.to_tuple_record() for g in graphs))


_NAME_RE = re.compile(r"^[^=]+=.+$")


def parse_named_paths(items: Iterable[str], what: str = "--graphs") -> dict[str, str]:
    """``["NAME=PATH", ...]`` -> ``{NAME: PATH}`` (for the commands that take several annotators)."""
    out: dict[str, str] = {}
    for item in items:
        if not _NAME_RE.match(item):
            raise ConfigError(f"{what} {item!r}: expected NAME=PATH", hint=f"e.g. {what} alice=alice.jsonl")
        name, path = item.split("=", 1)
        out[name.strip()] = path.strip()
    return out
