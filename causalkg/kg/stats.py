"""Graph analysis of the assembled KG (networkx), and the summary that ends ``make kg``.

Flow: reads ``data/kg/causal_kg_pairs.jsonl`` (and ``manifest.json``) written by
``kg assemble``, the Base KG ``data/wikidata/base_kg.jsonl`` for agreement, and the embedded
store's triple counts when there is one. ``causalkg kg stats`` and ``causalkg kg summary`` print
what ``stats`` and ``summary`` return; ``notebooks/explore_kg.ipynb`` draws with the helpers
here (``top_subgraph``, ``degree_distribution``, ``evidence_rows``), so no logic lives only in
the notebook.
"""

from __future__ import annotations

import heapq
import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence

from causalkg.core.config import Config
from causalkg.core.contracts import BaseKGLine, KGEdge, KGMention
from causalkg.core.errors import ConfigError, SourceError
from causalkg.core.jsonl import read_jsonl
from causalkg.core.manifest import read_manifest
from causalkg.core.tables import render_table
from causalkg.core.layout import PAIRS_FILE, default_paths, kg_dir
from causalkg.kg.aggregate import edge_rank
from causalkg.kg.kgfiles import read_edges, reading_kg

LEVELS = ("all", "class", "instance", "mixed")


def load_edges(cfg: Config | None = None, *, kg: str | Path | None = None, level: str = "all") -> list[KGEdge]:
    """The KG's edges (``kg``: the folder, default ``<paths.data>/kg``), those of one level or all."""
    if level not in LEVELS:
        raise ConfigError(f"level must be one of {', '.join(LEVELS)}, got {level!r}")
    if kg is None and cfg is None:
        raise ConfigError("load_edges needs a config or a KG folder")
    return [e for e in _each_edge(cfg, kg) if level == "all" or e.level == level]


def _each_edge(cfg: Config | None, kg: str | Path | None) -> Iterator[KGEdge]:
    """Every edge of the KG, one at a time (what ``load_edges`` lists): the generation is held
    while the caller reads."""
    folder = Path(kg) if kg is not None else kg_dir(cfg)  # type: ignore[arg-type]
    if not (folder / "manifest.json").exists():  # a pairs file of the user's own (or none: SourceError)
        yield from read_edges(folder / PAIRS_FILE)
        return
    # One generation, checked against its manifest: never a mix of two builds.
    with reading_kg(folder) as (view, _):
        yield from read_edges(view / PAIRS_FILE)


def to_networkx(edges: Iterable[KGEdge]):
    """A networkx DiGraph: nodes are QIDs (``label``, ``kind``), edges carry ``support``
    (distinct sentences), ``documents``, ``score``, ``level``, ``edge_id``."""
    import networkx as nx

    g = nx.DiGraph()
    for e in edges:
        c, f = e.cause.id[0], e.effect.id[0]
        g.add_node(c, label=e.cause.label or c, kind=e.cause_kind)
        g.add_node(f, label=e.effect.label or f, kind=e.effect_kind)
        g.add_edge(c, f, support=e.support.sentences, documents=e.support.documents, score=e.score.best,
                   level=e.level, edge_id=e.edge_id)
    return g


def degree_distribution(g: Any) -> dict[str, dict[int, int]]:
    """``{"in"|"out"|"total": {degree: number of nodes}}``, degrees ascending."""
    out: dict[str, dict[int, int]] = {}
    for name, view in (("in", g.in_degree()), ("out", g.out_degree()), ("total", g.degree())):
        counts = Counter(d for _, d in view)
        out[name] = dict(sorted(counts.items()))
    return out


def base_pairs(path: str | Path) -> dict[str, set[tuple[str, str]]]:
    """The Base KG as pair sets: ``classes`` (event -> consequence), ``instances`` (examples),
    ``full`` (both), as WikiCausal's recall script reads them."""
    classes: set[tuple[str, str]] = set()
    instances: set[tuple[str, str]] = set()
    for line in read_jsonl(path, BaseKGLine):
        for c in line.consequences:
            classes.add((line.event.id, c.id))
            for ex in c.examples:
                instances.add((ex.cause.id, ex.effect.id))
    return {"classes": classes, "instances": instances, "full": classes | instances}


def agreement(edges: Sequence[KGEdge], base: dict[str, set[tuple[str, str]]]) -> list[dict[str, Any]]:
    """Our edges against the Base KG in three views: class edges vs its class pairs, edges with
    an instance end (instance and mixed: what our nested file lists as examples) vs its examples,
    and everything vs everything, as WikiCausal's recall script reads ``causal_kg.jsonl``.
    ``share_in_base``: of our edges, how many the Base KG has; ``base_found``: of the Base KG's
    pairs, how many we have."""
    ours = {
        "classes": {(e.cause.id[0], e.effect.id[0]) for e in edges if e.level == "class"},
        "instances": {(e.cause.id[0], e.effect.id[0]) for e in edges if e.level != "class"},
        "full": {(e.cause.id[0], e.effect.id[0]) for e in edges},
    }
    rows = []
    for view in ("classes", "instances", "full"):
        hits = ours[view] & base[view]
        rows.append({
            "view": view,
            "ours": len(ours[view]),
            "base": len(base[view]),
            "both": len(hits),
            "share_in_base": len(hits) / len(ours[view]) if ours[view] else 0.0,
            "base_found": len(hits) / len(base[view]) if base[view] else 0.0,
        })
    return rows


def mention_keys(e: KGEdge) -> frozenset[tuple[str, int, int]]:
    """The sentences of an edge's own mentions as (document, start, end)."""
    return frozenset((m.doc_id, m.sentence.start, m.sentence.end) for m in e.mentions)


def sentence_keys(e: KGEdge, own: Mapping[str, frozenset[tuple[str, int, int]]]) -> set[tuple[str, int, int]]:
    """The sentences behind an edge as (document, start, end): its own mentions' and those of
    the lower edges it was lifted from (``own``: every edge's ``mention_keys`` by id, so the
    mentions themselves need not be held)."""
    return set(own[e.edge_id]).union(*(own[x.edge_id] for x in e.examples if x.edge_id in own))


def confirmed_edges(edges: Sequence[KGEdge], base: dict[str, set[tuple[str, str]]]) -> list[KGEdge]:
    """Our edges whose (cause, effect) pair is in the Base KG (any view), best-supported first."""
    return sorted((e for e in edges if (e.cause.id[0], e.effect.id[0]) in base["full"]), key=edge_rank)


def _edge_row(e: KGEdge) -> dict[str, Any]:
    return {
        "cause": e.cause.label or e.cause.id[0],
        "cause_id": e.cause.id[0],
        "effect": e.effect.label or e.effect.id[0],
        "effect_id": e.effect.id[0],
        "level": e.level,
        "sentences": e.support.sentences,
        "documents": e.support.documents,
        "best_score": e.score.best,
    }


@dataclass
class KGStats:
    """What ``causalkg kg stats`` prints (``to_dict`` for JSON)."""

    level: str
    nodes: int
    edges: int
    levels: dict[str, int]
    degree: dict[str, dict[int, int]]
    top_causes: list[dict[str, Any]]
    top_effects: list[dict[str, Any]]
    self_loops: int
    cycles: int
    cycles_capped: bool
    cycle_examples: list[list[str]]
    components: int
    largest_component: int
    component_sizes: dict[int, int]
    agreement: list[dict[str, Any]] | None
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        d["degree"] = {k: {str(deg): n for deg, n in v.items()} for k, v in self.degree.items()}
        d["component_sizes"] = {str(k): v for k, v in self.component_sizes.items()}
        return d


def stats(cfg: Config, *, kg: str | Path | None = None, base_kg: str | Path | None = None, level: str = "all",
          top: int | None = None) -> KGStats:
    """Graph statistics of the KG: nodes, edges by level, degree distributions, top causes and
    effects (by out-/in-degree, ties by support: the distinct sentences behind a node's edges),
    self-loops, simple cycles (up to ``kg.cycle_length`` long, at most ``kg.max_cycles``
    counted), weakly connected components, and agreement with the Base KG (``base_kg``, default
    ``<paths.data>/wikidata/base_kg.jsonl``; skipped with a note when missing). Raises
    SourceError when the KG was not assembled, ConfigError on an unknown ``level``."""
    import networkx as nx

    if level not in LEVELS:
        raise ConfigError(f"level must be one of {', '.join(LEVELS)}, got {level!r}")
    top = int(top if top is not None else cfg["kg"]["top"])
    # The KG is read once and not held: each edge without its mentions (the sentence texts are
    # most of an edge), and each edge's sentences as (document, start, end) keys, by edge id.
    own: dict[str, frozenset[tuple[str, int, int]]] = {}
    edges: list[KGEdge] = []
    for e in _each_edge(cfg, kg):
        own[e.edge_id] = mention_keys(e)
        if level == "all" or e.level == level:
            edges.append(e.model_copy(update={"mentions": []}))
    g = to_networkx(edges)
    notes: list[str] = []

    # A node's support: the distinct sentences behind its edges (one sentence behind two of its
    # edges, or behind an instance edge and the class edge lifted from it, counts once).
    sentences: dict[str, dict[str, set]] = {"out": {}, "in": {}}
    for e in edges:
        keys = sentence_keys(e, own)
        sentences["out"].setdefault(e.cause.id[0], set()).update(keys)
        sentences["in"].setdefault(e.effect.id[0], set()).update(keys)

    def ranked(degree_view: Any, weight: str) -> list[dict[str, Any]]:
        rows = [{"id": n, "label": g.nodes[n]["label"], "kind": g.nodes[n]["kind"], "edges": deg,
                 "sentences": len(sentences[weight].get(n, ()))} for n, deg in degree_view if deg > 0]
        rows.sort(key=lambda r: (-r["edges"], -r["sentences"], int(r["id"][1:])))
        return rows[:top]

    max_cycles = int(cfg["kg"]["max_cycles"])
    bound = int(cfg["kg"]["cycle_length"])
    cycles: list[list[str]] = []
    capped = False
    for cyc in nx.simple_cycles(g, length_bound=bound):
        if len(cyc) == 1:
            continue  # self-loops are counted on their own
        if len(cycles) >= max_cycles:
            capped = True
            break
        cycles.append(cyc)
    if capped:
        notes.append(f"cycle enumeration stopped at {max_cycles} (kg.max_cycles)")
    comps = [len(c) for c in nx.weakly_connected_components(g)]
    base_path = Path(base_kg) if base_kg is not None else default_paths(cfg)["base_kg"]
    agree = None
    if base_path.is_file():
        agree = agreement(edges, base_pairs(base_path))
    else:
        notes.append(f"no Base KG at {base_path}: agreement not computed (run causalkg corpus build)")
    return KGStats(
        level=level,
        nodes=g.number_of_nodes(),
        edges=g.number_of_edges(),
        levels=dict(sorted(Counter(e.level for e in edges).items())),
        degree=degree_distribution(g),
        top_causes=ranked(g.out_degree(), "out"),
        top_effects=ranked(g.in_degree(), "in"),
        self_loops=nx.number_of_selfloops(g),
        cycles=len(cycles),
        cycles_capped=capped,
        cycle_examples=[[g.nodes[n]["label"] for n in c] for c in sorted(cycles, key=len)[:5]],
        components=len(comps),
        largest_component=max(comps) if comps else 0,
        component_sizes=dict(sorted(Counter(comps).items(), reverse=True)),
        agreement=agree,
        notes=notes,
    )


def render_stats(s: KGStats, fmt: str = "text") -> str:
    """``text`` or ``md``: sections of tables; ``json``: one JSON document."""
    if fmt == "json":
        return json.dumps(s.to_dict(), ensure_ascii=False, indent=2)
    tfmt = "md" if fmt == "md" else "text"
    parts = []
    overview = [
        {"measure": "nodes", "value": s.nodes},
        {"measure": "edges", "value": s.edges},
        *({"measure": f"edges ({k})", "value": v} for k, v in s.levels.items()),
        {"measure": "self-loops", "value": s.self_loops},
        {"measure": "cycles (length 2+)", "value": f"{s.cycles}{'+' if s.cycles_capped else ''}"},
        {"measure": "weakly connected components", "value": s.components},
        {"measure": "largest component (nodes)", "value": s.largest_component},
    ]
    parts.append(f"KG statistics ({s.level} edges)\n\n" + render_table(overview, ["measure", "value"], tfmt))
    deg_rows = []
    for deg in sorted(set(s.degree["in"]) | set(s.degree["out"]) | set(s.degree["total"])):
        deg_rows.append({"degree": deg, "in": s.degree["in"].get(deg, 0), "out": s.degree["out"].get(deg, 0),
                         "total": s.degree["total"].get(deg, 0)})
    parts.append("Degree distribution (nodes with each degree)\n\n" + render_table(deg_rows, ["degree", "in", "out", "total"], tfmt))
    cols = ["label", "id", "kind", "edges", "sentences"]
    parts.append("Top causes (out-degree)\n\n" + render_table(s.top_causes, cols, tfmt))
    parts.append("Top effects (in-degree)\n\n" + render_table(s.top_effects, cols, tfmt))
    if s.cycle_examples:
        parts.append("Shortest cycles\n\n" + "\n".join(" -> ".join(c + [c[0]]) for c in s.cycle_examples))
    if s.agreement is not None:
        parts.append("Agreement with the Base KG\n\n" + render_table(
            s.agreement, ["view", "ours", "base", "both", "share_in_base", "base_found"], tfmt))
    if s.notes:
        parts.append("\n".join(f"note: {n}" for n in s.notes))
    return "\n\n".join(parts)


# --- the summary -----------------------------------------------------------------------------


@dataclass
class KGSummary:
    counts: dict[str, Any]
    top: list[dict[str, Any]]
    store: dict[str, int] | None
    out: str


def summary(cfg: Config, *, kg: str | Path | None = None, top: int | None = None) -> KGSummary:
    """Counts from the assembly manifest, the store's triple counts (when exported), and the
    ``top`` best-supported edges with labels and one evidence sentence each. Raises
    SourceError when the KG was not assembled."""
    from causalkg.kg.store import store_counts

    folder = Path(kg) if kg is not None else kg_dir(cfg)
    n = int(top if top is not None else cfg["kg"]["top"])
    best: list[dict[str, Any]] = []
    with reading_kg(folder) as (view, manifest):  # one generation, checked: never a mix of two builds
        # The KG is streamed, never held: the n best edges (heapq.nsmallest is sorted()[:n],
        # ties in file order), then, for a lifted edge among them, the instance edges it was
        # lifted from (its evidence), in a second pass read only when one is there.
        top_edges = heapq.nsmallest(n, read_edges(view / PAIRS_FILE), key=edge_rank)
        wanted = {x.edge_id for e in top_edges if not e.mentions for x in e.examples}
        sources = {e.edge_id: e for e in read_edges(view / PAIRS_FILE) if e.edge_id in wanted} if wanted else {}
    for e in top_edges:
        row = _edge_row(e)
        row["evidence"] = evidence_of(e, sources)
        best.append(row)
    return KGSummary(dict(manifest.get("counts", {})), best, store_counts(cfg), str(folder))


def evidence_strength(m: KGMention) -> float:
    """How strongly a mention's sentence states its pair, to pick the sentence shown for an
    edge: the extraction score, times the pair verifier's probability that the pair is causal
    as written when the verifier read it (``kg.verifier``; the probability of ``reversed`` for
    a pair it flipped). Without a verdict (verifier off, structured sources): the score."""
    verdict = (m.model_extra or {}).get("verifier")
    probs = verdict.get("probabilities") if isinstance(verdict, dict) else None
    if not isinstance(probs, dict):
        return float(m.score)
    p = probs.get("reversed" if verdict.get("flipped") else "causal")
    return float(m.score) * (float(p) if isinstance(p, (int, float)) else 1.0)


def best_mention(e: KGEdge, edges: Mapping[str, KGEdge] | None = None) -> KGMention | None:
    """The strongest mention behind an edge (``evidence_strength``): its own, or (for an edge
    lifted from instance edges) that of its examples when ``edges`` (all edges by id) is given."""
    pool = list(e.mentions)
    if not pool and edges is not None:
        pool = [m for x in e.examples if x.edge_id in edges for m in edges[x.edge_id].mentions]
    if not pool:
        return None
    return max(pool, key=lambda m: (evidence_strength(m), m.score, m.doc_id, -m.sentence.start))


def evidence_of(e: KGEdge, edges: Mapping[str, KGEdge] | None = None, limit: int = 160) -> str:
    """One sentence behind an edge, shortened to ``limit``; ``[lifted]`` marks a sentence of an
    instance edge the class edge was lifted from."""
    m = best_mention(e, edges)
    if m is None:
        return ""
    text = " ".join(m.sentence.text.split())
    if not e.mentions:
        text = "[lifted] " + text
    return text if len(text) <= limit else text[: limit - 1] + "…"


def render_summary(s: KGSummary, fmt: str = "text", width: int | None = None) -> str:
    """The summary as text, md or json. ``width``: in text, the lines are wrapped and the
    evidence sentences shortened (ending in "...") to fit that many columns; None: full lines."""
    if fmt == "json":
        return json.dumps(s.__dict__, ensure_ascii=False, indent=2)
    c = s.counts
    lines = [
        f"causal KG in {s.out}: {c.get('edges', 0)} edges ({c.get('edges_class', 0)} class, "
        f"{c.get('edges_instance', 0)} instance, {c.get('edges_mixed', 0)} mixed) between {c.get('nodes', 0)} concepts, "
        f"from {c.get('mentions', 0)} mentions in {c.get('documents', 0)} documents; {c.get('triples', 0)} RDF triples",
        f"linking: {c.get('link_linked', 0)} of {c.get('link_extractions', 0)} extracted pairs linked at both ends "
        f"({c.get('link_cause_unlinked', 0)} cause, {c.get('link_effect_unlinked', 0)} effect, "
        f"{c.get('link_both_unlinked', 0)} both unlinked; {c.get('link_self_loops_dropped', 0)} self-loops dropped)",
    ]
    if s.store is not None:
        lines.append("store: " + ", ".join(f"<{g}> {n} triples" for g, n in sorted(s.store.items())))
    else:
        lines.append("store: not exported yet (run causalkg kg export)")
    tfmt = "md" if fmt == "md" else "text"
    columns = ["cause", "effect", "level", "sentences", "documents", "best_score", "evidence"]
    table = render_table(s.top, columns, tfmt, floatfmt=".3f")
    if tfmt == "text" and width:
        import textwrap

        lines = [w for line in lines for w in (textwrap.wrap(line, width, subsequent_indent="  ") or [""])]
        longest = max((len(line) for line in table.splitlines()), default=0)
        if longest > width and s.top:
            # Labels are cut to 20 characters first; then the evidence column (the last one) gives
            # up what the lines are still too long by.
            rows = list(s.top)
            for names, floor in ((("cause", "effect"), 20), (("evidence",), 12)):
                longest = max(len(line) for line in table.splitlines())
                if longest <= width:
                    break
                for name in names:
                    longest_cell = max(len(str(r.get(name) or "")) for r in rows)
                    over = longest - width if name == "evidence" else longest_cell - floor
                    cap = max(floor, longest_cell - over)
                    rows = [{**r, name: _shorten(str(r.get(name) or ""), cap)} for r in rows]
                table = render_table(rows, columns, tfmt, floatfmt=".3f")
            # Still too wide (a narrow terminal): the least needed columns go, one at a time
            # (--wide shows them all).
            for name in ("documents", "best_score", "level", "sentences"):
                if max(len(line) for line in table.splitlines()) <= width:
                    break
                columns = [c for c in columns if c != name]
                table = render_table(rows, columns, tfmt, floatfmt=".3f")
    lines.append("")
    lines.append(f"The {len(s.top)} best-supported edges")
    lines.append("")
    lines.append(table)
    return "\n".join(lines)


def _shorten(text: str, cap: int) -> str:
    return text if len(text) <= cap else text[: cap - 3].rstrip() + "..."


# --- helpers for the notebook ----------------------------------------------------------------


def top_subgraph(edges: Sequence[KGEdge], n: int = 25, level: str = "class"):
    """The ``n`` best-supported edges of one level (or ``all``) as a networkx DiGraph."""
    chosen = [e for e in sorted(edges, key=edge_rank) if level == "all" or e.level == level][:n]
    return to_networkx(chosen)


def evidence_rows(edges: Sequence[KGEdge], n: int = 20) -> list[dict[str, Any]]:
    """The ``n`` best-supported edges with one evidence sentence each (a lifted edge shows one of
    its instance edges', marked ``[lifted]``): labels, level, support, the sentence, the page,
    the extractor."""
    by_id = {e.edge_id: e for e in edges}
    rows = []
    for e in sorted(edges, key=edge_rank)[:n]:
        m = best_mention(e, by_id)
        row = _edge_row(e)
        text = " ".join(m.sentence.text.split()) if m else ""
        row.update(sentence=("[lifted] " + text) if m and not e.mentions else text,
                   page=(m.title or m.doc_id) if m else "",
                   extractor=m.extractor if m else "")
        rows.append(row)
    return rows


def draw_top(edges: Sequence[KGEdge], ax: Any = None, *, n: int = 25, level: str = "class", seed: int = 7) -> Any:
    """Draw the ``n`` best-supported edges of one level on a matplotlib axis (line width grows
    with support; instances are orange, classes blue). Returns the axis."""
    import matplotlib.pyplot as plt
    import networkx as nx

    g = top_subgraph(edges, n=n, level=level)
    if ax is None:
        _, ax = plt.subplots(figsize=(11, 8))
    pos = nx.spring_layout(g, seed=seed, k=1.2 / max(1, g.number_of_nodes()) ** 0.5)
    colours = ["#fdae6b" if g.nodes[v]["kind"] == "instance" else "#9ecae1" for v in g.nodes]
    widths = [0.8 + min(6.0, d["support"]) for _, _, d in g.edges(data=True)]
    nx.draw_networkx_nodes(g, pos, ax=ax, node_color=colours, node_size=700)
    nx.draw_networkx_edges(g, pos, ax=ax, width=widths, edge_color="#636363", arrowsize=16,
                           connectionstyle="arc3,rad=0.08", node_size=700)
    nx.draw_networkx_labels(g, pos, ax=ax, labels={v: g.nodes[v]["label"] for v in g.nodes}, font_size=9)
    ax.set_title(f"The {g.number_of_edges()} best-supported {level if level != 'all' else ''} edges".replace("  ", " "))
    ax.set_axis_off()
    return ax


def plot_degrees(g: Any, ax: Any = None) -> Any:
    """In-, out- and total degree distributions on log-log axes. Returns the axis."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(7, 4.5))
    for name, marker in (("in", "o"), ("out", "s"), ("total", "^")):
        dist = {d: c for d, c in degree_distribution(g)[name].items() if d > 0}
        if dist:
            ax.loglog(list(dist), list(dist.values()), marker=marker, linestyle="none", label=f"{name}-degree")
    ax.set_xlabel("degree")
    ax.set_ylabel("nodes")
    ax.set_title("Degree distribution")
    ax.legend()
    return ax
