"""The Wikipedia half of ``corpus build``, its plan: which dump and index, which pages (the concept
titles, WEC's event infoboxes, or both), the concepts they are matched to, and the lines that
describe the plan. ``corpus.wikipedia.build_documents`` runs it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from causalkg.core.distributed import RaySettings, engine_of
from causalkg.core.config import CHECKOUT_ROOT, Config
from causalkg.core.contracts import Concept
from causalkg.core.errors import ConfigError, SchemaError, SourceError
from causalkg.core.jsonl import ReadStats, read_jsonl
from causalkg.core.manifest import describe_input, file_sha256
from causalkg.corpus import dump as dumplib
from causalkg.corpus.dump import normalize_title
from causalkg.corpus.wikitext import ConvertOptions, infobox_key


SELECT_MODES = ("concepts", "infobox", "both", "auto")
CORPUS_NAME = "corpus.jsonl"
PARTS_DIR = ".wikipedia-parts"
HASH_LIMIT = 256 * 1024 * 1024  # inputs larger than this are described by size and mtime, not hashed
SEQ_BATCH_PAGES = 32  # pages per unit in a sequential read
SEQ_BATCH_BYTES = 16 * 1024 * 1024
FILL_FIELDS = ("text", "first_section", "categories", "infobox", "headings", "sections", "timelines",
               "event_concepts", "revision_id", "timestamp")


# --- event infoboxes (WEC) -------------------------------------------------------------------


_TITLE_NUMBER_RE = re.compile(r"\s?\d\d?th\s|[12][90][0-9][0-9]|\b[MDCLXVI]+\b")


@dataclass(frozen=True)
class EventInfoboxes:
    """WEC's event infobox list (``en_all_event_infoboxs.json``), matched as WEC matches it.

    An infobox name is normalized (lower case, no spaces, without ``infobox``: ``Infobox civilian
    attack`` -> ``civilianattack``) and matches a listed name that occurs in it (so
    ``nuclearweaponstest`` matches ``weaponstest``, and ``athleticconference`` matches
    ``conference``: WEC's rule, false positives included). Groups with ``include: false`` never
    match. Groups checked by WEC's ``TitleWithDateInfoboxValidator`` (awards) also need a year,
    an ordinal or a Roman numeral in the title. WEC's further validators (time spans, persons)
    are not applied: a war lasting years is an event for a causal KG.
    """

    groups: tuple[tuple[str, tuple[str, ...], bool], ...]  # (type, names, title needs a number)

    @classmethod
    def load(cls, path: Path) -> "EventInfoboxes":
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
            groups = []
            for g in data["infoboxConfigs"]:
                if not g.get("include", True):
                    continue
                names = tuple(str(n).lower() for n in g.get("infoboxs", []) if n)
                needs_number = str(g.get("useValidatorClass", "")).endswith("TitleWithDateInfoboxValidator")
                groups.append((str(g["corefType"]), names, needs_number))
        except FileNotFoundError:
            raise SourceError(f"event infobox list not found: {path}",
                              hint="set wikipedia.event_infoboxes (default snapshots/enwiki/event_infoboxes.json)") from None
        except (ValueError, KeyError, TypeError) as exc:
            raise SchemaError(f"{path}: not a WEC infobox config ({{'infoboxConfigs': [...]}}): {exc}") from None
        return cls(tuple(groups))

    def match(self, infobox_name: str, title: str) -> str | None:
        """The event type (WEC's ``corefType``) of an infobox name on a page, or None."""
        key = infobox_key(infobox_name)
        if not key:
            return None
        for kind, names, needs_number in self.groups:
            if any(n in key for n in names):
                if needs_number and not _TITLE_NUMBER_RE.search(title):
                    continue
                return kind
        return None


# --- resolving inputs ------------------------------------------------------------------------


def _resolve(cfg: Config, key: str) -> Path | None:
    """An input path from the config (the bundled snapshot is found from any directory)."""
    return cfg.input_path(key)


def _bundled(key: str) -> Path:
    from causalkg.core.config import load_defaults

    return CHECKOUT_ROOT / load_defaults()["wikipedia"][key]


def _same_file(a: Path | None, b: Path) -> bool:
    """``a`` is ``b``, or a copy of it (same size and SHA-256: the bundled snapshot copied
    elsewhere, or found in another checkout than the one the package runs from)."""
    try:
        if a is None or not a.is_file() or not b.is_file():
            return False
        if a.samefile(b):
            return True
        return a.stat().st_size == b.stat().st_size and file_sha256(a) == file_sha256(b)
    except OSError:
        return False


def _sibling_index(dump: Path) -> Path | None:
    name = dump.name
    if "multistream" in name and name.endswith(".xml.bz2"):
        cand = dump.with_name(name[: -len(".xml.bz2")] + "-index.txt.bz2")
        if cand.is_file():
            return cand
    return None


def _describe(path: Path) -> dict[str, Any]:
    st = path.stat()
    if st.st_size <= HASH_LIMIT:
        return describe_input(path)
    return {"path": str(path), "bytes": st.st_size, "mtime": int(st.st_mtime), "sha256": None,
            "note": f"not hashed (larger than {HASH_LIMIT // (1024 * 1024)} MiB): size and mtime identify it"}


@dataclass(frozen=True, slots=True)
class _TitledConcept:
    """What a document takes from the concept its title is the sitelink of (a Concept record
    holds much more; at 181,006 concepts the records took 320 MB of the driver's memory)."""

    id: str
    label: str | None
    aliases: tuple[str, ...]
    seed_classes: tuple[str, ...]
    kind: str


@dataclass
class _Concepts:
    labels: dict[str, str | None] = field(default_factory=dict)  # every concept's label, by id
    by_title: dict[str, _TitledConcept] = field(default_factory=dict)
    instance_titles: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    stats: ReadStats = field(default_factory=ReadStats)


def _load_concepts(path: Path | None) -> _Concepts:
    out = _Concepts()
    if path is None or not path.is_file():
        return out
    for c in read_jsonl(path, Concept, stats=out.stats):
        out.labels.setdefault(c.id, c.label)
        if c.enwiki_title:
            t = normalize_title(c.enwiki_title)
            prev = out.by_title.get(t)
            if prev is not None and prev.id != c.id:
                out.conflicts.append(f"{t!r}: {prev.id} and {c.id} (kept {prev.id})")
                continue
            if prev is None:
                out.by_title[t] = _TitledConcept(c.id, c.label, tuple(c.aliases), tuple(c.seed_classes), c.kind)
                if c.kind == "instance":
                    out.instance_titles.append(t)
    return out


# --- plan ------------------------------------------------------------------------------------


@dataclass
class _Plan:
    dump: Path
    index: Path | None
    bundled: bool
    mode: str
    workers: int
    titles: list[str]
    infoboxes: EventInfoboxes | None
    infobox_path: Path | None
    options: ConvertOptions
    url_base: str
    max_hops: int
    notes: list[str]
    ray: Any = None  # RaySettings when run.engine = "ray" (units run as Ray tasks)


def _make_plan(cfg: Config, concepts_path: Path, dry_run: bool) -> tuple[_Plan, _Concepts]:
    wp = cfg["wikipedia"]
    notes: list[str] = []
    dump = _resolve(cfg, "wikipedia.dump")
    if dump is None or not dump.is_file():
        raise SourceError(
            f"Wikipedia dump not found: {dump if dump is not None else '(wikipedia.dump is empty)'}",
            hint="download enwiki-<date>-pages-articles-multistream.xml.bz2 and its -index.txt.bz2 from "
                 "https://dumps.wikimedia.org/enwiki/ and pass --dump/--index, or leave them unset for the bundled snapshot",
        )
    bundled = _same_file(dump, _bundled("dump"))
    index = _resolve(cfg, "wikipedia.index")
    if index is not None and not bundled and _same_file(index, _bundled("index")):
        # --dump given alone: the bundled index does not belong to it
        sib = _sibling_index(dump)
        notes.append(f"the configured index is the bundled snapshot's, not {dump.name}'s: "
                     + (f"using {sib} found beside the dump" if sib else "reading the dump sequentially"))
        index = sib
    if index is not None and not index.is_file():
        raise SourceError(f"dump index not found: {index}",
                          hint="pass the dump's -multistream-index.txt.bz2 with --index, or --index '' to read the dump sequentially")
    if index is None and dump.name.endswith(".xml.bz2") and "multistream" in dump.name:
        notes.append("no index: the multistream dump is read sequentially (slower, one decompressing process)")
    if bundled:
        notes.append(f"bundled enwiki snapshot: {dump.name} (264 pages; see snapshots/enwiki/SOURCE.md)")

    select = str(wp["select"])
    if select not in SELECT_MODES:
        raise ConfigError(f"wikipedia.select must be one of {', '.join(SELECT_MODES)}, got {select!r}")
    mode = select
    if select == "auto":
        mode = "both" if bundled else "concepts"
        notes.append(f"select=auto: {mode} ({'the bundled snapshot' if bundled else 'not the bundled snapshot: an infobox scan reads the whole dump; use --select both for it'})")

    concepts = _load_concepts(concepts_path)
    if mode in ("concepts", "both") and not concepts_path.is_file():
        if not dry_run:
            raise SourceError(f"no concepts file at {concepts_path}",
                              hint="build the Wikidata part first: causalkg corpus build --only wikidata")
        notes.append(f"the concepts file {concepts_path} does not exist yet (it is written by the Wikidata part)")
    if mode == "infobox" and not concepts_path.is_file():
        notes.append(f"no concepts file at {concepts_path}: every document is unresolved (document_concept.id null)")
    if concepts.conflicts:
        notes.append(f"{len(concepts.conflicts)} enwiki titles claimed by several concepts: " + "; ".join(concepts.conflicts[:5]))
    titles = sorted(concepts.instance_titles) if mode in ("concepts", "both") else []

    infoboxes = None
    infobox_path = None
    if mode in ("infobox", "both"):
        infobox_path = _resolve(cfg, "wikipedia.event_infoboxes")
        if infobox_path is None:
            raise ConfigError("wikipedia.event_infoboxes is empty but select needs it")
        infoboxes = EventInfoboxes.load(infobox_path)

    workers = dumplib.default_workers(int(cfg.get("run.workers", 0) or 0))
    ray = RaySettings.from_config(cfg) if engine_of(cfg) == "ray" else None
    drop = tuple(str(s) for s in wp.get("drop_sections", ()))
    words = tuple(str(s) for s in wp.get("timeline_words", ())) or ("timeline", "chronolog")
    plan = _Plan(
        dump=dump, index=index, bundled=bundled, mode=mode, workers=workers, titles=titles, ray=ray,
        infoboxes=infoboxes, infobox_path=infobox_path, options=ConvertOptions(drop, words),
        url_base=str(wp["url_base"]), max_hops=int(wp.get("max_redirect_hops", 3)), notes=notes,
    )
    return plan, concepts


def _plan_lines(p: _Plan, concepts_path: Path, out_dir: Path) -> list[str]:
    how = f"through the index {p.index}" if p.index else "sequentially (no index)"
    sel = {
        "concepts": f"{len(p.titles)} enwiki titles of instance concepts in {concepts_path}",
        "infobox": f"articles whose first infobox is an event infobox ({p.infobox_path})",
        "both": f"{len(p.titles)} enwiki titles of instance concepts, and articles whose first infobox is an event infobox",
    }[p.mode]
    return [
        f"dump: {p.dump} ({p.dump.stat().st_size / 1e6:.1f} MB), read {how}",
        f"select: {p.mode}: {sel}",
        f"workers: {p.workers}",
        f"drop sections: {', '.join(p.options.drop_sections)}",
        f"write: {out_dir / CORPUS_NAME}, {out_dir / 'manifest.json'} (checkpoints in {out_dir / PARTS_DIR})",
    ]
