"""The files of the KG: their names, how they are written, and how readers open them.

An assembled KG folder (``data/kg/``, see docs/kg.md) holds, in its current generation
(``causalkg.core.generations``; stable links at the documented paths):

- ``causal_kg_pairs.jsonl`` (``PAIRS_FILE``): one ``KGEdge`` per line;
- ``causal_kg.jsonl`` (``NESTED_FILE``): the nested WikiCausal Base KG shape (``nested_lines``);
  the instance edges it cannot hold are ``unlisted_edges``;
- ``causal_kg.ttl`` and ``nt/causal_kg-NNNNN.nt``: RDF (``kg/rdf.py``);
- ``causal_kg.graphml``: the edges for graph tools (``write_graphml``);
- ``manifest.json``: written last by the step (``kg/assemble.py``).

``write_outputs`` writes all but the manifest; ``reading_kg`` opens a KG folder for reading
(its current generation, checksums verified) and ``read_edges`` streams the flat file. A change
that writes other files for the same edges needs ``kg.assemble.OUTPUT_VERSION`` bumped.
"""

from __future__ import annotations

import contextlib
import json
from collections import defaultdict
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Protocol, Sequence

from causalkg.core import faults, generations
from causalkg.core.contracts import BaseKGConsequence, BaseKGEvent, BaseKGLine, Concept, KGEdge, KGMention
from causalkg.core.errors import SourceError
from causalkg.core.jsonl import atomic_write, read_jsonl, to_json_line
from causalkg.core.layout import NESTED_FILE, PAIRS_FILE
from causalkg.core.manifest import file_sha256, read_manifest
from causalkg.kg import rdf
from causalkg.kg.aggregate import edge_rank, qid_number

TURTLE_FILE = "causal_kg.ttl"
NT_DIR = "nt"
GRAPHML_FILE = "causal_kg.graphml"
MANIFEST_FILE = "manifest.json"
# The documented paths of data/kg/: stable links into the current generation (causalkg.core.generations).
OUTPUT_NAMES = (PAIRS_FILE, NESTED_FILE, TURTLE_FILE, NT_DIR, GRAPHML_FILE, MANIFEST_FILE)

# hook(event, info): called by the writers after each written output ("output"), and by
# kg/assemble.py after each linked shard ("shard").
Hook = Callable[[str, Mapping[str, Any]], None]


class EdgeMentions(Protocol):
    """Where the writers read an edge's own mentions and their sentences: the edges themselves
    (``OWN_MENTIONS``), or the on-disk store of ``kg.aggregate.AggregatedKG``."""

    def mentions(self, e: KGEdge) -> list[KGMention]: ...

    def sentences(self, e: KGEdge) -> set[tuple[str, int, int]]: ...


class _OwnMentions:
    def mentions(self, e: KGEdge) -> list[KGMention]:
        return list(e.mentions)

    def sentences(self, e: KGEdge) -> set[tuple[str, int, int]]:
        return {(m.doc_id, m.sentence.start, m.sentence.end) for m in e.mentions}


OWN_MENTIONS: EdgeMentions = _OwnMentions()


def _with_mentions(e: KGEdge, src: EdgeMentions) -> KGEdge:
    return e if src is OWN_MENTIONS else e.model_copy(update={"mentions": src.mentions(e)})


# --- writing ---------------------------------------------------------------------------------


def write_outputs(
    edges: Sequence[KGEdge],
    concepts: Mapping[str, Concept],
    out_dir: Path,
    opts: Mapping[str, Any],
    *,
    verify: bool = True,
    hook: Hook | None = None,
    source: EdgeMentions | None = None,
) -> tuple[dict[str, Any], dict[str, str], dict[str, int]]:
    """Write every KG file into ``out_dir`` atomically. ``source`` gives the edges' mentions
    when the edges do not carry them (``kg.aggregate.AggregatedKG``: read one edge at a time).
    Returns (outputs description, checksums by relative path, counts)."""
    src = source if source is not None else OWN_MENTIONS
    out_dir.mkdir(parents=True, exist_ok=True)
    _remove_stale_temporaries(out_dir)
    written = _Written(hook)

    pairs = out_dir / PAIRS_FILE
    with atomic_write(pairs) as fh:
        for e in edges:
            fh.write(to_json_line(_with_mentions(e, src)) + "\n")
    written.done("pairs", pairs)

    nested_path = out_dir / NESTED_FILE
    n_nested = 0
    with atomic_write(nested_path) as fh:
        # one consequence in memory at a time: a line of a big cause class can be many MB
        for pieces in iter_nested_texts(edges, concepts, src):
            for piece in pieces:
                fh.write(piece)
            fh.write("\n")
            n_nested += 1
    written.done("nested", nested_path)

    files = _write_rdf(edges, concepts, out_dir, opts, verify=verify, source=src)
    written.done("turtle", out_dir / TURTLE_FILE)
    written.paths += files.ntriples
    if hook is not None:
        hook("output", {"name": "ntriples", "paths": [str(p) for p in files.ntriples]})

    graphml = out_dir / GRAPHML_FILE
    write_graphml(edges, graphml)
    written.done("graphml", graphml)

    checksums = {str(p.relative_to(out_dir)): file_sha256(p) for p in written.paths}
    outputs = {
        "pairs": PAIRS_FILE,
        "nested": NESTED_FILE,
        "turtle": TURTLE_FILE,
        "ntriples": [str(p.relative_to(out_dir)) for p in files.ntriples],
        "graphml": GRAPHML_FILE,
    }
    return outputs, checksums, {"triples": files.triples, "nested_lines": n_nested,
                                "nested_unlisted_edges": len(unlisted_edges(edges))}


class _Written:
    """The files written so far; each finished output is a fault point and a hook event."""

    def __init__(self, hook: Hook | None) -> None:
        self.paths: list[Path] = []
        self.hook = hook

    def done(self, name: str, path: Path) -> None:
        self.paths.append(path)
        faults.point("assemble.output-written", path)
        if self.hook is not None:
            self.hook("output", {"name": name, "path": str(path)})


def _remove_stale_temporaries(out_dir: Path) -> None:
    """Temporary files a killed run left behind (atomic_write names them ".<target>.*.tmp")."""
    for stale in [*out_dir.glob(".causal_kg*.tmp"), *(out_dir / NT_DIR).glob(".causal_kg*.tmp")]:
        stale.unlink(missing_ok=True)


def _write_rdf(edges: Sequence[KGEdge], concepts: Mapping[str, Concept], out_dir: Path, opts: Mapping[str, Any], *,
               verify: bool, source: EdgeMentions) -> rdf.RdfFiles:
    """The Turtle file and the N-Triples chunks (``kg/rdf.py``), verified when ``verify``."""
    options = rdf.RdfOptions(lang=opts["lang"], revision_base=rdf.revision_base_for(opts["url_base"]),
                             wikidata_effect=opts["wikidata_effect"])
    blocks = rdf.kg_blocks(edges, concepts, options, mentions_of=source.mentions)
    files = rdf.write_rdf(blocks, turtle=out_dir / TURTLE_FILE,
                          nt_dir=out_dir / NT_DIR, chunk_triples=opts["nt_chunk_triples"])
    if verify:
        rdf.verify_rdf(files)
    return files


# --- the nested (Base KG) shape --------------------------------------------------------------


def nested_lines(edges: Sequence[KGEdge], concepts: Mapping[str, Concept],
                 source: EdgeMentions | None = None) -> list[dict[str, Any]]:
    """The class edges in the WikiCausal Base KG shape: one line per cause class, its effect
    classes as ``consequences``, and the instance (and mixed) edges lifted into each as
    ``examples``; our scores and provenance ride along in extra fields. Lines are ordered by
    support (distinct sentences behind the line), consequences best-supported first.

    An instance or mixed edge lifted into several class edges is an example of each (the
    reference scripts collect pairs into sets, so it counts once); one with no class to lift
    to is not in this file (see :func:`unlisted_edges`)."""
    return list(iter_nested_lines(edges, concepts, source))


def iter_nested_lines(edges: Sequence[KGEdge], concepts: Mapping[str, Concept],
                      source: EdgeMentions | None = None) -> Iterator[dict[str, Any]]:
    """``nested_lines`` one line at a time: the lines' order is found from the sentences
    behind each line first, then each line is built with its mentions (from ``source`` when
    the edges do not carry them), so one line's mentions are in memory at a time."""
    src = source if source is not None else OWN_MENTIONS
    by_id = {e.edge_id: e for e in edges}
    for cause, group, n_sents, n_docs in _nested_groups(edges, by_id, src):
        line = {
            "event": _nested_event(cause, group, concepts),
            "consequences": [_consequence(e, by_id, concepts, src) for e in group],
            "support": {"sentences": n_sents, "documents": n_docs, "edges": len(group)},
        }
        BaseKGLine.model_validate(line)
        yield line


def iter_nested_texts(edges: Sequence[KGEdge], concepts: Mapping[str, Concept],
                      source: EdgeMentions | None = None) -> Iterator[Iterator[str]]:
    """The lines of ``iter_nested_lines`` as compact JSON text, each line an iterator of
    pieces whose concatenation is ``json.dumps(line, ensure_ascii=False, separators=(",", ":"))``:
    a line is built and validated one consequence at a time, so the memory is one class edge's
    mentions (with its examples'), not the whole line's."""
    src = source if source is not None else OWN_MENTIONS
    by_id = {e.edge_id: e for e in edges}

    def pieces(cause: str, group: list[KGEdge], n_sents: int, n_docs: int) -> Iterator[str]:
        event = _nested_event(cause, group, concepts)
        BaseKGEvent.model_validate(event)
        yield '{"event":' + _compact(event) + ',"consequences":['
        for i, e in enumerate(group):
            item = _consequence(e, by_id, concepts, src)
            BaseKGConsequence.model_validate(item)
            yield ("," if i else "") + _compact(item)
        yield '],"support":' + _compact({"sentences": n_sents, "documents": n_docs, "edges": len(group)}) + "}"

    for cause, group, n_sents, n_docs in _nested_groups(edges, by_id, src):
        yield pieces(cause, group, n_sents, n_docs)


def _compact(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def _nested_event(cause: str, group: list[KGEdge], concepts: Mapping[str, Concept]) -> dict[str, Any]:
    label = group[0].cause.label
    return {"id": cause, "label": label, "labels": _labels(cause, label, concepts)}


def _nested_groups(edges: Sequence[KGEdge], by_id: Mapping[str, KGEdge],
                   src: EdgeMentions) -> list[tuple[str, list[KGEdge], int, int]]:
    """The nested file's lines in order: (cause class, its class edges best first, distinct
    sentences, distinct documents), by support (distinct sentences behind the line)."""
    groups: dict[str, list[KGEdge]] = defaultdict(list)
    for e in edges:
        if e.level == "class":
            groups[e.cause.id[0]].append(e)
    order: list[tuple[tuple[int, int], str, int, int]] = []
    for cause, group in groups.items():
        group.sort(key=edge_rank)
        # Distinct over the whole line: one sentence behind several consequences counts once.
        sents: set[tuple[str, int, int]] = set()
        for e in group:
            sents |= src.sentences(e)
            for ex in e.examples:
                if ex.edge_id in by_id:
                    sents |= src.sentences(by_id[ex.edge_id])
        order.append(((-len(sents), qid_number(cause)), cause, len(sents), len({d for d, _, _ in sents})))
    order.sort(key=lambda x: x[0])
    return [(cause, groups[cause], n_sents, n_docs) for _, cause, n_sents, n_docs in order]


def _labels(qid: str, label: str | None, concepts: Mapping[str, Concept]) -> list[str]:
    """The label, then the concept's aliases."""
    c = concepts.get(qid)
    out = [label] if label else []
    for a in (c.aliases if c else []):
        if a not in out:
            out.append(a)
    return out


def _consequence(e: KGEdge, by_id: Mapping[str, KGEdge], concepts: Mapping[str, Concept],
                 src: EdgeMentions) -> dict[str, Any]:
    """One class edge as a consequence of its cause's line, with its lower edges as examples."""
    examples = []
    for ex in e.examples:
        lower = by_id.get(ex.edge_id)
        item = {"cause": {"label": ex.cause.label, "id": ex.cause.id},
                "effect": {"label": ex.effect.label, "id": ex.effect.id}}
        if lower is not None:
            item.update(_edge_extras(lower, src))
        examples.append(item)
    return {
        "id": e.effect.id[0],
        "label": e.effect.label,
        "labels": _labels(e.effect.id[0], e.effect.label, concepts),
        "examples": examples,
        **_edge_extras(e, src),
    }


def _edge_extras(e: KGEdge, src: EdgeMentions) -> dict[str, Any]:
    return {
        "edge_id": e.edge_id,
        "level": e.level,
        "support": e.support.model_dump(),
        "score": e.score.model_dump(),
        "link_score": e.link_score.model_dump(),
        "mentions": [json.loads(to_json_line(m)) for m in src.mentions(e)],
    }


def unlisted_edges(edges: Sequence[KGEdge]) -> list[KGEdge]:
    """The instance and mixed edges that ``causal_kg.jsonl`` cannot hold: the nested shape
    lists a lower edge only as an example of a class edge, and these were lifted to none (an
    end with no known class, or ``kg.lift = none``). They are in the flat file and the RDF."""
    return [e for e in edges if e.level != "class" and not e.lifted_to]


# --- GraphML ---------------------------------------------------------------------------------


# --- GraphML ---------------------------------------------------------------------------------


def write_graphml(edges: Sequence[KGEdge], path: str | Path) -> None:
    """The edges as a directed graph for graph tools (Gephi, Cytoscape, networkx)."""
    import networkx as nx

    g = nx.DiGraph()
    for e in sorted(edges, key=lambda x: x.edge_id):
        for ref, kind in ((e.cause, e.cause_kind), (e.effect, e.effect_kind)):
            q = ref.id[0]
            if q not in g:
                g.add_node(q, label=ref.label or "", kind=kind)
        g.add_edge(e.cause.id[0], e.effect.id[0], edge_id=e.edge_id, level=e.level,
                   support_sentences=e.support.sentences, support_documents=e.support.documents,
                   mentions=e.support.mentions, examples=e.support.examples,
                   best_score=e.score.best, mean_score=e.score.mean)
    with atomic_write(path, "wb") as fh:
        nx.write_graphml(g, fh, encoding="utf-8", prettyprint=True)


# --- reading ---------------------------------------------------------------------------------


@contextlib.contextmanager
def reading_kg(folder: str | Path) -> Iterator[tuple[Path, dict]]:
    """``(folder to read, manifest)`` of the KG in ``folder``: its current generation (held
    against pruning while the block runs), or the folder itself when it was written without
    generations. Every file the manifest lists is checked against its checksum first, so a
    reader never uses a mix of two builds. Raises SourceError when there is no assembled KG,
    ``generations.MixedSetError`` when the files do not belong together."""
    folder = Path(folder)
    with generations.reading(folder) as view:
        manifest = read_manifest(view)
        if manifest is None or manifest.get("stage") != "kg.assemble":
            raise SourceError(f"no assembled KG in {folder}", hint="run causalkg kg assemble")
        generations.verify(view, what="KG files")
        yield view, manifest


def read_edges(path: str | Path, *, lenient: bool = False) -> Iterator[KGEdge]:
    """Stream the edges of a ``causal_kg_pairs.jsonl``. Raises SourceError when it is missing."""
    p = Path(path)
    if not p.is_file():
        raise SourceError(f"no KG at {p}", hint="run causalkg kg assemble")
    return read_jsonl(p, KGEdge, lenient=lenient)
