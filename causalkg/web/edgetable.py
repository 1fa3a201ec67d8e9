"""The edges page (``/edges``): every edge of the KG as one table, in the way Datasette shows a
database table: sortable columns, facets with counts, full-text search over the evidence
sentences, paging, and CSV or JSON of exactly the rows asked for (the same filters, sort and
page; ``size=all`` for every matching row).

The query string is the whole state, so a view is a link: ``q`` (search words, every one in the
same sentence; "quoted words" as a phrase), one parameter per facet (``level``, ``base_kg``,
``extractor``, ``confidence``, ``support``, ``judged``, ``verdict``; repeated values of one
facet are alternatives, different facets must all hold), ``sort`` (a column, ``-column`` for
descending; by default the KG's own rank: distinct sentences, documents, best score), ``page``
(from 1), ``size`` (rows per page, ``all``) and ``format`` (``html``, ``json``, ``csv``).

The rows are built once per reading of the KG (``KGView``) and cached with it; what changes
between requests (the judgements file) is looked up per request.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass, field
from typing import Any, Iterable
from urllib.parse import urlencode

from causalkg.core.contracts import KGEdge
from causalkg.web.kgview import LEVELS, KGView, text_key

FACETS: tuple[tuple[str, str], ...] = (
    ("level", "level"),
    ("base_kg", "in the Base KG"),
    ("extractor", "extractor"),
    ("confidence", "confidence"),
    ("support", "supporting sentences"),
    ("judged", "judged by a person"),
    ("verdict", "verifier verdict"),
)
FACET_NAMES = tuple(name for name, _ in FACETS)
SUPPORT_BANDS = ("1", "2", "3-4", "5-9", "10+")
CONFIDENCE_BANDS = ("0.9-1.0", "0.8-0.9", "0.7-0.8", "0.6-0.7", "0.5-0.6", "0.0-0.5", "none")
# column -> (heading, sort key); text columns sort case-insensitively
SORTS: dict[str, str] = {
    "cause": "cause", "effect": "effect", "level": "level", "sentences": "sentences",
    "documents": "documents", "score": "best score", "confidence": "confidence",
}
COLUMNS = ("edge_id", "cause", "cause_label", "effect", "effect_label", "level", "sentences", "documents",
           "best_score", "confidence", "base_kg", "extractors", "judged", "verdict", "evidence", "url")
DEFAULT_SIZE = 50
MAX_PAGE_SIZE = 1000


def support_band(n: int) -> str:
    if n <= 2:
        return str(max(1, n))
    if n <= 4:
        return "3-4"
    return "5-9" if n <= 9 else "10+"


def confidence_band(c: float | None) -> str:
    if c is None:
        return "none"
    if c < 0.5:
        return "0.0-0.5"
    tenth = min(9, int(c * 10 + 1e-9))
    return f"0.{tenth}-{'1.0' if tenth == 9 else f'0.{tenth + 1}'}"


def verifier_verdict(e: KGEdge) -> str | None:
    """The verifier's verdict on an edge when the KG carries one: an edge field ``verdict``
    (a string) or ``verifier`` (an object with ``verdict``). None otherwise."""
    extra = e.model_extra or {}
    v = extra.get("verdict")
    if v is None and isinstance(extra.get("verifier"), dict):
        v = extra["verifier"].get("verdict")
    return str(v) if v not in (None, "") else None


@dataclass
class Row:
    """One edge with what the table shows, filters and searches on."""

    edge: KGEdge
    base_kg: bool
    extractors: list[str]
    verdict: str | None
    sentences: list[str]  # the distinct evidence texts, own first
    folded: list[str]  # the same, casefolded, for the search
    facets: dict[str, list[str]] = field(default_factory=dict)


def rows_of(view: KGView) -> list[Row]:
    """The table's rows in the KG's rank order, built once per view and kept on it."""
    cached = getattr(view, "_edge_rows", None)
    if cached is not None:
        return cached
    rows = []
    for e in view.edges.values():
        ev = view.evidence(e)
        texts = [text_key(x.mention.sentence.text) for x in ev]
        extractors = sorted({x for item in ev for x in item.extractors})
        verdict = verifier_verdict(e)
        row = Row(e, view.confirmed(e), extractors, verdict, texts, [t.casefold() for t in texts])
        row.facets = {
            "level": [e.level], "base_kg": ["yes" if row.base_kg else "no"], "extractor": extractors,
            "confidence": [confidence_band(e.confidence)], "support": [support_band(e.support.sentences)],
            "verdict": [verdict] if verdict else [],
        }
        rows.append(row)
    view._edge_rows = rows  # type: ignore[attr-defined]
    return rows


def search_terms(q: str) -> list[str]:
    """Casefolded terms of a search: words, and "quoted phrases" as one term."""
    return [" ".join((a or b).split()).casefold() for a, b in re.findall(r'"([^"]+)"|(\S+)', q) if (a or b).strip()]


def matching_sentence(row: Row, terms: list[str]) -> int | None:
    """The index of the first evidence text holding every term, or None."""
    for i, text in enumerate(row.folded):
        if all(t in text for t in terms):
            return i
    return None


@dataclass
class EdgeQuery:
    """What the edges page is asked for (see the module docstring)."""

    q: str = ""
    filters: dict[str, list[str]] = field(default_factory=dict)
    sort: str = ""
    page: int = 1
    size: int | None = DEFAULT_SIZE  # None: every matching row

    @classmethod
    def from_params(cls, params: Any) -> "EdgeQuery":
        """From a request's query parameters (a Starlette ``QueryParams`` or a dict of lists);
        unknown sorts, bad numbers and empty values are ignored rather than refused."""
        def getlist(name: str) -> list[str]:
            if hasattr(params, "getlist"):
                return list(params.getlist(name))
            v = params.get(name, [])
            return list(v) if isinstance(v, (list, tuple)) else [v]

        def first(name: str) -> str:
            vals = getlist(name)
            return str(vals[0]).strip() if vals else ""

        filters = {}
        for name in FACET_NAMES:
            vals = [str(v).strip() for v in getlist(name) if str(v).strip()]
            if vals:
                filters[name] = list(dict.fromkeys(vals))
        sort = first("sort")
        if sort.lstrip("-") not in SORTS:
            sort = ""
        try:
            page = max(1, int(first("page") or 1))
        except ValueError:
            page = 1
        raw = first("size").lower()
        size: int | None
        if raw == "all":
            size = None
        else:
            try:
                size = max(1, min(MAX_PAGE_SIZE, int(raw or DEFAULT_SIZE)))
            except ValueError:
                size = DEFAULT_SIZE
        return cls(q=first("q"), filters=filters, sort=sort, page=page, size=size)

    def params(self, **change: Any) -> list[tuple[str, str]]:
        """The query as (name, value) pairs, with ``change`` applied: a facet name maps to a list
        of values (or None to drop it); ``q``, ``sort``, ``page``, ``size``, ``format`` to one."""
        filters = {k: list(v) for k, v in self.filters.items()}
        scalars: dict[str, Any] = {"q": self.q, "sort": self.sort, "page": self.page,
                                   "size": "all" if self.size is None else self.size}
        for k, v in change.items():
            if k in FACET_NAMES:
                if v:
                    filters[k] = list(v)
                else:
                    filters.pop(k, None)
            else:
                scalars[k] = v
        out: list[tuple[str, str]] = []
        if scalars.get("q"):
            out.append(("q", str(scalars["q"])))
        for name in FACET_NAMES:
            out.extend((name, v) for v in filters.get(name, []))
        if scalars.get("sort"):
            out.append(("sort", str(scalars["sort"])))
        if scalars.get("page") and int(scalars["page"]) > 1:
            out.append(("page", str(scalars["page"])))
        if str(scalars.get("size")) != str(DEFAULT_SIZE):
            out.append(("size", str(scalars["size"])))
        if scalars.get("format"):
            out.append(("format", str(scalars["format"])))
        return out

    def url(self, **change: Any) -> str:
        qs = urlencode(self.params(**change))
        return "/edges" + ("?" + qs if qs else "")

    def toggle(self, facet: str, value: str) -> str:
        """The link that adds ``value`` to a facet's filter, or takes it away (back to page 1)."""
        now = self.filters.get(facet, [])
        vals = [v for v in now if v != value] if value in now else now + [value]
        return self.url(**{facet: vals, "page": 1})


@dataclass
class FacetValue:
    value: str
    count: int
    selected: bool
    url: str


@dataclass
class EdgeTable:
    """One page of the edges table: the rows shown, how many matched, the facets."""

    query: EdgeQuery
    total: int  # rows matching the search and filters
    all_edges: int
    rows: list[tuple[Row, int | None]]  # (row, index of the evidence text to show)
    facets: dict[str, list[FacetValue]]
    judged: set[tuple[str, str]]
    pages: int

    @property
    def first_shown(self) -> int:
        if not self.rows:
            return 0
        return 1 if self.query.size is None else (self.query.page - 1) * self.query.size + 1

    def record(self, row: Row, shown: int | None) -> dict[str, Any]:
        """A row as the CSV and JSON exports write it (the columns of ``COLUMNS``)."""
        e = row.edge
        text = row.sentences[shown] if shown is not None and row.sentences else ""
        return {
            "edge_id": e.edge_id, "cause": e.cause.id[0], "cause_label": e.cause.label,
            "effect": e.effect.id[0], "effect_label": e.effect.label, "level": e.level,
            "sentences": e.support.sentences, "documents": e.support.documents,
            "best_score": round(e.score.best, 4), "confidence": e.confidence,
            "base_kg": row.base_kg, "extractors": row.extractors,
            "judged": (e.cause.id[0], e.effect.id[0]) in self.judged, "verdict": row.verdict,
            "evidence": text, "url": f"/edge/{e.edge_id}",
        }

    def to_json(self) -> dict[str, Any]:
        q = self.query
        nxt = q.url(page=q.page + 1, format="json") if q.size is not None and q.page < self.pages else None
        return {
            "total": self.total, "edges_in_kg": self.all_edges, "page": q.page,
            "size": "all" if q.size is None else q.size, "pages": self.pages, "q": q.q, "sort": q.sort or "rank",
            "filters": q.filters, "next": nxt, "columns": list(COLUMNS),
            "facets": {name: [{"value": f.value, "count": f.count, "selected": f.selected} for f in vals]
                       for name, vals in self.facets.items()},
            "rows": [self.record(r, i) for r, i in self.rows],
        }

    def to_csv(self) -> str:
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\r\n")
        w.writerow(COLUMNS)
        for r, i in self.rows:
            rec = self.record(r, i)
            rec["extractors"] = ";".join(rec["extractors"])
            rec["base_kg"] = "true" if rec["base_kg"] else "false"
            rec["judged"] = "true" if rec["judged"] else "false"
            w.writerow(["" if rec[c] is None else rec[c] for c in COLUMNS])
        return buf.getvalue()


_SORT_VALUES = {
    "cause": lambda e: (e.cause.label or e.cause.id[0]).casefold(),
    "effect": lambda e: (e.effect.label or e.effect.id[0]).casefold(),
    "level": lambda e: LEVELS.index(e.level) if e.level in LEVELS else len(LEVELS),
    "sentences": lambda e: e.support.sentences,
    "documents": lambda e: e.support.documents,
    "score": lambda e: e.score.best,
    "confidence": lambda e: -1.0 if e.confidence is None else e.confidence,
}


def edge_table(view: KGView, query: EdgeQuery, judged: Iterable[tuple[str, str]] = ()) -> EdgeTable:
    """The page of the edges table that ``query`` asks for. ``judged``: the (cause, effect)
    pairs some person has judged (the ``judged`` facet)."""
    judged = set(judged)
    rows = rows_of(view)
    terms = search_terms(query.q)

    def facet_values(row: Row) -> dict[str, list[str]]:
        pair = (row.edge.cause.id[0], row.edge.effect.id[0])
        return {**row.facets, "judged": ["yes" if pair in judged else "no"]}

    matched: list[tuple[int, Row, int | None, dict[str, list[str]]]] = []
    for rank, row in enumerate(rows):
        shown: int | None = 0 if row.sentences else None
        if terms:
            shown = matching_sentence(row, terms)
            if shown is None:
                continue
        values = facet_values(row)
        if all(any(v in values[name] for v in wanted) for name, wanted in query.filters.items()):
            matched.append((rank, row, shown, values))

    facets: dict[str, list[FacetValue]] = {}
    any_verdict = any(r.verdict for r in rows)
    for name in FACET_NAMES:
        if name == "verdict" and not any_verdict:
            continue
        counts: dict[str, int] = {}
        for _, _, _, values in matched:
            for v in values[name]:
                counts[v] = counts.get(v, 0) + 1
        for v in query.filters.get(name, []):
            counts.setdefault(v, 0)
        order = {"support": SUPPORT_BANDS, "confidence": CONFIDENCE_BANDS, "level": LEVELS,
                 "base_kg": ("yes", "no"), "judged": ("yes", "no")}.get(name)
        if order:
            keys = sorted(counts, key=lambda v: (order.index(v) if v in order else len(order), v))
        else:
            keys = sorted(counts, key=lambda v: (-counts[v], v))
        selected = set(query.filters.get(name, []))
        facets[name] = [FacetValue(v, counts[v], v in selected, query.toggle(name, v)) for v in keys]

    ordered = [(row, shown) for _, row, shown, _ in matched]  # in rank order
    if query.sort:
        value = _SORT_VALUES[query.sort.lstrip("-")]
        # a stable sort: ties keep the KG's rank order, both ways
        ordered.sort(key=lambda item: value(item[0].edge), reverse=query.sort.startswith("-"))
    total = len(ordered)
    if query.size is None:
        pages, page_rows = 1, ordered
    else:
        pages = max(1, -(-total // query.size))
        start = (query.page - 1) * query.size
        page_rows = ordered[start:start + query.size]
    return EdgeTable(query, total, len(rows), page_rows, facets, judged, pages)


__all__ = ["COLUMNS", "FACETS", "EdgeQuery", "EdgeTable", "edge_table", "rows_of", "verifier_verdict"]
