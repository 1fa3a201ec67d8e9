"""A read-only, in-memory view of the assembled KG for the web pages.

Reads ``<paths.data>/kg/causal_kg_pairs.jsonl`` (every edge with its mentions),
``<paths.data>/wikidata/concepts.jsonl`` (labels, aliases, descriptions, Wikipedia titles) and
``<paths.data>/wikidata/base_kg.jsonl`` (to mark edges the Base KG confirms). ``KGViews.current``
returns the view of the files as they are now: it compares the files' (mtime, size, inode) with
those of the view it holds and reloads only when they changed. A reload that fails (a file being
replaced, a bad line) keeps serving the previous view; with no previous view the error is raised
(the pages show it). ``kg assemble`` replaces each file atomically, so a view never sees half a file.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence
from urllib.parse import quote, urlsplit

from causalkg.core.config import Config
from causalkg.core.contracts import Concept, KGEdge, KGMention, is_qid
from causalkg.core.errors import SourceError
from causalkg.core.jsonl import read_jsonl
from causalkg.core.layout import PAIRS_FILE, default_paths, kg_dir
from causalkg.kg.aggregate import edge_rank
from causalkg.kg.stats import base_pairs, evidence_strength

log = logging.getLogger(__name__)

LEVELS = ("class", "instance", "mixed")
WIKIDATA_ITEM = "https://www.wikidata.org/wiki/"


@dataclass
class Node:
    qid: str
    label: str
    kind: str  # class | instance | unknown
    aliases: list[str] = field(default_factory=list)
    description: str | None = None
    enwiki_title: str | None = None
    out_degree: int = 0
    in_degree: int = 0
    classes: list[str] = field(default_factory=list)  # P31 of an instance, else P279 (QIDs)

    @property
    def degree(self) -> int:
        return self.out_degree + self.in_degree

    @property
    def wikidata_url(self) -> str:
        return WIKIDATA_ITEM + self.qid

    def wikipedia_url(self, url_base: str) -> str | None:
        if not self.enwiki_title:
            return None
        return url_base + quote(self.enwiki_title.replace(" ", "_"), safe="()_,'-.:")

    def to_json(self) -> dict[str, Any]:
        return {"qid": self.qid, "label": self.label, "kind": self.kind, "degree": self.degree,
                "causes": self.in_degree, "effects": self.out_degree, "description": self.description}


def highlight(m: KGMention) -> list[tuple[str, str | None]]:
    """The mention's sentence cut into (text, role) pieces, role ``cause``/``effect`` for the
    spans (from their character offsets, which are into the document: the sentence's own start
    is subtracted) and None elsewhere. A span whose offsets do not point at its text in the
    sentence is searched for by its text; one not found is not highlighted."""
    text = m.sentence.text
    spans = []
    for role, span in (("cause", m.cause), ("effect", m.effect)):
        s, e = span.start - m.sentence.start, span.end - m.sentence.start
        if not (0 <= s < e <= len(text) and text[s:e] == span.text):
            s = text.find(span.text) if span.text else -1
            e = s + len(span.text)
        if s >= 0 and e > s:
            spans.append((s, e, role))
    spans.sort()
    pieces: list[tuple[str, str | None]] = []
    pos = 0
    for s, e, role in spans:
        if s < pos:  # overlapping spans: keep the first
            continue
        if s > pos:
            pieces.append((text[pos:s], None))
        pieces.append((text[s:e], role))
        pos = e
    if pos < len(text):
        pieces.append((text[pos:], None))
    return pieces


# The bundled enwiki snapshot assigns revision ids from 3,000,000,001 up to pages that came
# without one (snapshots/enwiki/SOURCE.md): far above any id Wikipedia has issued (about 1.3
# billion in 2025), so an id this high names no Wikipedia revision and must not be linked as one.
ASSIGNED_REVISIONS_FROM = 3_000_000_000


def is_assigned_revision(revision_id: int | None) -> bool:
    """Whether a revision id was assigned by the bundled snapshot (not a Wikipedia revision)."""
    return revision_id is not None and int(revision_id) >= ASSIGNED_REVISIONS_FROM


def revision_url(m: KGMention) -> str | None:
    """The exact revision the sentence was read from: ``<site>/w/index.php?oldid=N``; None
    when there is none or the id was assigned by the bundled snapshot (the page link stands)."""
    if m.revision_id is None or not m.url or is_assigned_revision(m.revision_id):
        return None
    parts = urlsplit(m.url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return None
    return f"{parts.scheme}://{parts.netloc}/w/index.php?oldid={int(m.revision_id)}"


@dataclass
class Evidence:
    """One distinct piece of text behind an edge, as the edge page shows it: the best-scored
    mention of that text, the lower edge it came from (for a lifted edge), and the other
    mentions of the same text on this edge (another extractor, other spans), folded into it."""

    mention: KGMention
    origin: KGEdge | None = None
    duplicates: list[KGMention] = field(default_factory=list)

    @property
    def kind(self) -> str:
        """``sentence``, ``infobox`` or ``list`` (what the text is)."""
        return {"wikipedia_infobox": "infobox", "wikipedia_list": "list"}.get(self.mention.source, "sentence")

    @property
    def field_name(self) -> str | None:
        """The infobox field (``field = value`` text) or the heading a list item sits under."""
        if self.kind == "infobox":
            name, sep, _ = self.mention.sentence.text.partition(" = ")
            return name.strip() if sep else None
        if self.kind == "list":
            return self.mention.sentence.section
        return None

    @property
    def extractors(self) -> list[str]:
        return sorted({self.mention.extractor, *(m.extractor for m in self.duplicates)})


def text_key(text: str) -> str:
    """A sentence as a key: whitespace runs are one space (the judgements' key too)."""
    return " ".join(text.split())


def snapshot_note(m: KGMention) -> str | None:
    """What to say instead of a revision link when the revision id was assigned by the bundled
    snapshot; None for a real revision (or none)."""
    if is_assigned_revision(m.revision_id):
        return f"bundled snapshot page (id {m.revision_id} assigned here, not a Wikipedia revision)"
    return None


def _stat_key(path: Path) -> tuple | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)


class KGView:
    """One consistent reading of the KG files. Built by ``load``; never changed afterwards."""

    def __init__(self, edges: Sequence[KGEdge], concepts: dict[str, Concept], base: set[tuple[str, str]],
                 *, source: str = "", url_base: str = "https://en.wikipedia.org/wiki/") -> None:
        self.source = source
        self.url_base = url_base
        self.edges: dict[str, KGEdge] = {e.edge_id: e for e in sorted(edges, key=edge_rank)}
        self.concepts = concepts
        self.base = base
        self.out_edges: dict[str, list[str]] = {}
        self.in_edges: dict[str, list[str]] = {}
        self.nodes: dict[str, Node] = {}
        for c in concepts.values():
            self.nodes[c.id] = Node(c.id, c.label or c.id, c.kind, list(c.aliases), c.description, c.enwiki_title,
                                    classes=list(c.instance_of if c.kind == "instance" else c.subclass_of)
                                    or list(c.instance_of) or list(c.subclass_of))
        for e in self.edges.values():
            for qid, label, kind in ((e.cause.id[0], e.cause.label, e.cause_kind),
                                     (e.effect.id[0], e.effect.label, e.effect_kind)):
                if qid not in self.nodes:
                    self.nodes[qid] = Node(qid, label or qid, kind)
            self.out_edges.setdefault(e.cause.id[0], []).append(e.edge_id)
            self.in_edges.setdefault(e.effect.id[0], []).append(e.edge_id)
            self.nodes[e.cause.id[0]].out_degree += 1
            self.nodes[e.effect.id[0]].in_degree += 1
        self._search_keys = [(n, [n.label.casefold(), *(a.casefold() for a in n.aliases)])
                             for n in self.nodes.values()]
        self._by_label: dict[str, list[str]] = {}
        for n in self.nodes.values():
            self._by_label.setdefault(n.label.casefold(), []).append(n.qid)

    # --- lookups ---------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self.edges)

    def node(self, qid: str) -> Node | None:
        return self.nodes.get(qid) if is_qid(qid) else None

    def confirmed(self, e: KGEdge) -> bool:
        """Whether the Base KG (Wikidata's own causal statements) has this (cause, effect) pair."""
        return (e.cause.id[0], e.effect.id[0]) in self.base

    def instance_edges(self, e: KGEdge) -> list[KGEdge]:
        """The lower edges a lifted class edge was lifted from (its examples), best first."""
        return [self.edges[x.edge_id] for x in e.examples if x.edge_id in self.edges]

    def all_mentions(self, e: KGEdge) -> list[KGMention]:
        """The edge's own mentions, then those of the edges it was lifted from."""
        return list(e.mentions) + [m for x in self.instance_edges(e) for m in x.mentions]

    def extractors(self, e: KGEdge) -> list[str]:
        return sorted({m.extractor for m in self.all_mentions(e)})

    def evidence(self, e: KGEdge) -> list[Evidence]:
        """The distinct texts behind an edge (its own mentions, then those of the edges it was
        lifted from): mentions of the same text are one entry, the strongest first."""
        groups: dict[str, Evidence] = {}
        pool = [(m, None) for m in e.mentions] + [(m, x) for x in self.instance_edges(e) for m in x.mentions]
        for m, origin in pool:
            key = text_key(m.sentence.text)
            have = groups.get(key)
            if have is None:
                groups[key] = Evidence(m, origin)
            elif evidence_strength(m) > evidence_strength(have.mention) and (origin is None) == (have.origin is None):
                have.duplicates.append(have.mention)
                have.mention = m
            else:
                have.duplicates.append(m)
        return list(groups.values())

    def best_evidence(self, e: KGEdge) -> Evidence | None:
        """The strongest distinct text behind an edge (``kg.stats.evidence_strength``; its own
        before its examples')."""
        ev = self.evidence(e)
        own = [x for x in ev if x.origin is None] or ev
        return max(own, key=lambda x: (evidence_strength(x.mention), x.mention.score, -x.mention.sentence.start)) if own else None

    def all_extractors(self) -> list[str]:
        return sorted({m.extractor for e in self.edges.values() for m in e.mentions})

    def find_mention(self, e: KGEdge, mention_id: str) -> KGMention | None:
        return next((m for m in self.all_mentions(e) if m.mention_id == mention_id), None)

    def describe(self, n: Node) -> dict[str, Any]:
        """A concept as search results give it: ``to_json`` with its aliases, its classes
        (instance of, or subclass of) with labels, ``same_label`` (how many other concepts
        carry its label) and ``hint``, one line that tells it apart: the Wikidata description
        when the concepts file has one, else its kind and classes."""
        classes = [{"qid": q, "label": self.nodes[q].label if q in self.nodes else q} for q in n.classes]
        if n.description:
            hint = n.description
        else:
            rel = "instance of" if n.kind == "instance" else "subclass of"
            hint = n.kind + (f", {rel} " + ", ".join(c["label"] for c in classes) if classes else "")
        same = len(self._by_label.get(n.label.casefold(), ())) - 1
        return {**n.to_json(), "aliases": n.aliases, "classes": classes, "same_label": same, "hint": hint}

    # --- search ----------------------------------------------------------------------------

    def search(self, text: str, limit: int = 20) -> list[Node]:
        """Concepts whose label or an alias matches ``text`` (case-insensitive): exact matches
        first, then prefixes, word prefixes, substrings; a QID matches itself. Within a rank,
        concepts with edges first, by degree."""
        q = " ".join(text.split()).casefold()
        if not q:
            return []
        if is_qid(text.strip().upper()) and text.strip().upper() in self.nodes:
            return [self.nodes[text.strip().upper()]]
        scored = []
        for node, keys in self._search_keys:
            best = None
            for k in keys:
                if k == q:
                    r = 0
                elif k.startswith(q):
                    r = 1
                elif any(w.startswith(q) for w in k.split()):
                    r = 2
                elif q in k:
                    r = 3
                else:
                    continue
                best = r if best is None else min(best, r)
            if best is not None:
                scored.append((best, node.degree == 0, -node.degree, node.label.casefold(), node.qid))
        scored.sort()
        return [self.nodes[s[-1]] for s in scored[:limit]]

    # --- a concept's neighbourhood ---------------------------------------------------------

    def neighbours(self, qid: str, direction: str, *, level: str = "", min_support: int = 0,
                   extractor: str = "") -> list[KGEdge]:
        """The edges into (``causes``) or out of (``effects``) a concept, best-supported first,
        filtered by level, the fewest distinct sentences, and an extractor behind a mention."""
        ids = self.in_edges.get(qid, []) if direction == "causes" else self.out_edges.get(qid, [])
        out = []
        for eid in ids:
            e = self.edges[eid]
            if level and e.level != level:
                continue
            if e.support.sentences < min_support:
                continue
            if extractor and extractor not in self.extractors(e):
                continue
            out.append(e)
        return sorted(out, key=edge_rank)

    def graph_elements(self, qid: str, *, min_support: int = 0, level: str = "", limit: int = 60) -> dict[str, Any]:
        """Cytoscape elements of a concept's neighbourhood (one step both ways, the
        best-supported ``limit`` edges, of ``level`` when given): nodes with label, kind and
        role (center, cause, effect), edges with support, level and Base KG confirmation."""
        centre = self.node(qid)
        if centre is None:
            return {"nodes": [], "edges": []}
        edges = (self.neighbours(qid, "causes", min_support=min_support, level=level)
                 + self.neighbours(qid, "effects", min_support=min_support, level=level))
        edges = sorted({e.edge_id: e for e in edges}.values(), key=edge_rank)[:limit]
        nodes = {qid: self._node_element(centre, "center")}
        for e in edges:
            c, f = e.cause.id[0], e.effect.id[0]
            if c != qid and c not in nodes:
                nodes[c] = self._node_element(self.nodes[c], "cause")
            if f != qid and f not in nodes:
                nodes[f] = self._node_element(self.nodes[f], "effect")
        return {"nodes": list(nodes.values()),
                "edges": [{"data": {"id": e.edge_id, "source": e.cause.id[0], "target": e.effect.id[0],
                                    "support": e.support.sentences, "level": e.level,
                                    "confirmed": self.confirmed(e)}} for e in edges]}

    @staticmethod
    def _node_element(n: Node, role: str) -> dict[str, Any]:
        return {"data": {"id": n.qid, "label": n.label, "kind": n.kind, "role": role, "degree": n.degree,
                         "description": n.description}}

    # --- paths -----------------------------------------------------------------------------

    def paths(self, source: str, target: str, k: int = 5, max_hops: int = 6) -> dict[str, list[list[KGEdge]]]:
        """Causal chains from ``source`` to ``target`` along edge directions:

        - ``shortest``: up to ``k`` paths with the fewest edges (then the better supported);
        - ``best_supported``: up to ``k`` paths with the least total cost, an edge costing
          1 / its distinct sentences: a well-supported edge is cheap, so a longer chain of
          well-attested edges beats a short one through a single-sentence edge.

        Paths longer than ``max_hops`` edges are not listed."""
        import itertools

        import networkx as nx

        out: dict[str, list[list[KGEdge]]] = {"shortest": [], "best_supported": []}
        if source not in self.nodes or target not in self.nodes or source == target:
            return out
        g = nx.DiGraph()
        for e in self.edges.values():
            g.add_edge(e.cause.id[0], e.effect.id[0], cost=1.0 / max(1, e.support.sentences), edge_id=e.edge_id)
        if source not in g or target not in g or not nx.has_path(g, source, target):
            return out

        def as_edges(path: list[str]) -> list[KGEdge]:
            return [self.edges[g[u][v]["edge_id"]] for u, v in zip(path, path[1:])]

        def first(gen: Iterable[list[str]]) -> list[list[KGEdge]]:
            found = []
            for p in itertools.islice(gen, 50 * k):
                if len(p) - 1 <= max_hops:
                    found.append(as_edges(p))
                if len(found) >= k:
                    break
            return found

        shortest = first(nx.shortest_simple_paths(g, source, target))
        shortest.sort(key=lambda p: (len(p), -min(e.support.sentences for e in p)))
        out["shortest"] = shortest
        out["best_supported"] = first(nx.shortest_simple_paths(g, source, target, weight="cost"))
        return out


def load_view(cfg: Config, *, kg: str | Path | None = None) -> KGView:
    """Read the KG files into a KGView. Raises SourceError when there is no assembled KG."""
    folder = Path(kg) if kg is not None else kg_dir(cfg)
    pairs = folder / PAIRS_FILE
    if not pairs.is_file():
        raise SourceError(f"no KG at {pairs}", hint="run make kg (or causalkg kg assemble)")
    paths = default_paths(cfg)
    edges = list(read_jsonl(pairs, KGEdge))
    concepts: dict[str, Concept] = {}
    if paths["concepts"].is_file():
        concepts = {c.id: c for c in read_jsonl(paths["concepts"], Concept)}
    base: set[tuple[str, str]] = set()
    if paths["base_kg"].is_file():
        base = base_pairs(paths["base_kg"])["full"]
    return KGView(edges, concepts, base, source=str(pairs), url_base=cfg["wikipedia"]["url_base"])


class KGViews:
    """Hands out the current KGView, reloading it when the files change (thread-safe)."""

    def __init__(self, cfg: Config, *, kg: str | Path | None = None) -> None:
        self.cfg = cfg
        self.kg = kg
        self._lock = threading.Lock()
        self._view: KGView | None = None
        self._key: tuple | None = None

    def _files(self) -> list[Path]:
        folder = Path(self.kg) if self.kg is not None else kg_dir(self.cfg)
        paths = default_paths(self.cfg)
        return [folder / PAIRS_FILE, paths["concepts"], paths["base_kg"]]

    def current(self) -> KGView:
        key = tuple(_stat_key(p) for p in self._files())
        with self._lock:
            if self._view is not None and key == self._key:
                return self._view
            try:
                view = load_view(self.cfg, kg=self.kg)
            except Exception as exc:
                if self._view is not None:
                    log.warning("the KG files changed but could not be read (%s); serving the previous KG", exc)
                    return self._view
                raise
            self._view, self._key = view, key
            return view
