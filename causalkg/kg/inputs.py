"""What KG assembly reads besides the extractions: the concepts file and the corpus documents.

- ``load_concepts``: ``data/wikidata/concepts.jsonl`` as ``{qid: Concept}`` (labels, kinds and
  the classes an instance is lifted to; used by ``kg.aggregate`` and ``kg.kgfiles``);
- ``DocInfo`` / ``load_documents``: what provenance needs of a corpus document (title, URL,
  revision, the page's concept, its categories), read without validating the large text fields
  (used by ``kg.mentions`` when it builds each mention).

The step that uses them is ``kg/assemble.py``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from causalkg.core.contracts import Concept, is_qid
from causalkg.core.errors import SchemaError, SourceError
from causalkg.core.jsonl import iter_json_lines, read_jsonl


def load_concepts(path: str | Path, *, lenient: bool = False) -> dict[str, Concept]:
    """The concepts file as ``{qid: Concept}``. Raises SourceError when it is missing."""
    p = Path(path)
    if not p.is_file():
        raise SourceError(f"concepts file not found: {p}", hint="run causalkg corpus build, or pass --concepts FILE")
    return {c.id: c for c in read_jsonl(p, Concept, lenient=lenient)}


@dataclass(frozen=True)
class DocInfo:
    """What provenance needs of a corpus document."""

    title: str | None = None
    url: str | None = None
    revision_id: int | None = None
    concept: str | None = None
    categories: tuple[str, ...] = ()


def load_documents(path: str | Path | None, doc_ids: set[str] | None = None) -> dict[str, DocInfo]:
    """Title, URL, revision and document concept of corpus documents (only ``doc_ids`` when
    given), read without validating the (large) text fields. A missing corpus gives ``{}``."""
    if path is None or not Path(path).is_file():
        return {}
    out: dict[str, DocInfo] = {}
    for lineno, rec in iter_json_lines(path):
        if not isinstance(rec, dict) or "id" not in rec:
            raise SchemaError(f"{path}:{lineno}: a corpus document needs an id")
        key = str(rec["id"])
        if doc_ids is not None and key not in doc_ids:
            continue
        dc = rec.get("document_concept") or {}
        concept = dc.get("id") if isinstance(dc, dict) else None
        rev = rec.get("revision_id")
        out[key] = DocInfo(rec.get("title"), rec.get("url"), int(rev) if rev is not None else None,
                           concept if is_qid(concept) else None, tuple(rec.get("categories") or ()))
    return out
