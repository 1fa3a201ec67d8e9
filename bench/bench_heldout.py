"""Edge quality on the held-out Wikipedia event set, dev and test beside the snapshot KG.

    python -m bench heldout                       # build both splits' KGs (or reuse current ones), report
    python bench/bench_heldout.py --split dev     # one split
    python bench/bench_heldout.py --limit 4       # the first 4 articles of each split (a quick check)
    python bench/bench_heldout.py --domain geology --skip-build   # one SW100 domain or HESE kind, the KGs already built
    python -m bench heldout --curve               # precision / size over kg.min_confidence on each split
    python -m bench heldout --curve --fit         # also refit the confidence on dev (alone, and with the snapshot)
    python -m bench heldout --own-concepts        # the articles' own concepts added to the vocabulary (<split>-own)
    python -m bench heldout --ablation            # each family of assertion rules left out of kg.drop in turn

Each split (``snapshots/heldout/{dev,test}.jsonl``, built by ``scripts/build_heldout.py``) goes
through the default pipeline: ``kg extract --input SPLIT`` then ``kg assemble`` against the
snapshot vocabulary and the models of ``make kg``, into ``data/heldout/<split>/``. Its edges are
read against the split's own judgements, ``tests/fixtures/judged/heldout-<split>/judgements.jsonl``
(rubric and keying in ``causalkg/kg/judged.py``): an edge whose evidence item (cause QID, effect
QID, sentence) was never judged counts neither as good nor bad; it is listed and written to
``data/heldout/<split>/judge_todo.jsonl`` as a template to judge. The snapshot row reads
``data/kg/causal_kg_pairs.jsonl`` against ``tests/fixtures/judged/judgements.jsonl`` when that KG
exists. Only dev (and the snapshot) may inform a rule, threshold or model; test is only run and
read for the report.

``--curve`` assembles each split again from its extractions with ``kg.min_confidence = 0`` (into
``data/heldout/<split>-all/``, every edge the confidence would drop kept) and prints the
precision / size curve over ``kg.min_confidence`` on its judged edges. ``--fit`` refits the
confidence's weights (``causalkg/kg/confidence.py``) on the dev split's judged edges, alone and
pooled with the snapshot's (``bench edges --fit``), and prints each refit's curve on dev and the
snapshot, where a choice between them is made; test's curve is printed for the weights in use only.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from causalkg.core.jsonl import atomic_write

REPO = Path(__file__).resolve().parents[1]
HELDOUT = REPO / "snapshots" / "heldout"
JUDGED = REPO / "tests" / "fixtures" / "judged"
SPLITS = ("dev", "test")


def select(split: str, limit: int | None = None, domain: str | None = None) -> list[str]:
    """The JSONL lines of one split, in file order: only ``domain``'s articles (``split.tsv``)
    when given, then the first ``limit``."""
    lines = [ln for ln in (HELDOUT / f"{split}.jsonl").read_text(encoding="utf-8").split("\n") if ln.strip()]
    if domain is not None:
        rows = [r.split("\t") for r in (HELDOUT / "split.tsv").read_text(encoding="utf-8").split("\n")[1:] if r.strip()]
        ids = {int(r[0]) for r in rows if r[2] == domain}
        lines = [ln for ln in lines if json.loads(ln)["id"] in ids]
    return lines[:limit] if limit is not None else lines


def build(split: str, work: Path, lines: list[str] | None = None, cfg=None, extractions: Path | None = None) -> Path:
    """Extract and assemble one split's KG (all of it, or only ``lines`` of it) in ``work``;
    returns its flat pairs file. ``extractions``: pairs extracted before (no extraction is run)."""
    import causalkg as ck

    src = HELDOUT / f"{split}.jsonl"
    work.mkdir(parents=True, exist_ok=True)
    if lines is not None:
        src = work / "input.jsonl"
        with atomic_write(src, allow_empty=True) as fh:
            fh.write("".join(ln + "\n" for ln in lines))
    if extractions is None:
        extractions = work / "extractions.jsonl"
        ck.extract(input=src, out=extractions, cfg=cfg)
    ck.assemble(extractions=extractions, corpus=src, out=work / "kg", cfg=cfg)
    return work / "kg" / "causal_kg_pairs.jsonl"


def figures(name: str, pairs: Path, judgements_path: Path, n_articles: int | None, todo: Path | None = None) -> dict:
    """One row of the table: edges, judged, supported % with its 95% Wilson interval over the
    judged edges (one edge moves a share of 20 edges by 5 points: the interval says how far the
    share could be from the pipeline's rate on more text of the kind), plausible %, supported per
    100 articles, unjudged evidence items (written to ``todo`` when given)."""
    from causalkg.core.contracts import KGEdge
    from causalkg.evaluation.wikicausal.precision import wilson_interval
    from causalkg.core.jsonl import read_jsonl
    from causalkg.kg.judged import load, report, todo_records

    if not pairs.is_file():
        raise SystemExit(f"error: {pairs} is missing: build it with `python -m bench heldout` (after `make kg`)")
    edges = list(read_jsonl(pairs, KGEdge))
    r = report(edges, load(judgements_path))
    if todo is not None:
        with atomic_write(todo, allow_empty=True) as fh:
            fh.write("".join(json.dumps(t, ensure_ascii=False) + "\n" for t in todo_records(r.unjudged)))
    per100 = round(100 * r.supported / n_articles, 1) if n_articles else None
    return {"set": name, "articles": n_articles, "edges": r.edges, "judged": r.judged_edges,
            "supported %": round(100 * r.supported_share, 1) if r.judged_edges else None,
            "supported 95% interval": _interval(r.supported, r.judged_edges, wilson_interval),
            "plausible %": round(100 * r.plausible_share, 1) if r.judged_edges else None,
            "supported": r.supported, "supported / 100 articles": per100,
            "unjudged items": len(r.unjudged), "unjudged edges": r.edges - r.judged_edges}


def _interval(k: int, n: int, wilson) -> str | None:
    """``"43-80"``: the Wilson interval of k/n in whole percents (None for no judged edge)."""
    if not n:
        return None
    lo, hi = wilson(k, n)
    return f"{100 * lo:.0f}-{100 * hi:.0f}"


def run(splits=SPLITS, limit: int | None = None, domain: str | None = None, data: Path | None = None,
        skip_build: bool = False, snapshot: bool = True, cfg=None, own_concepts: bool = False) -> list[dict]:
    """Build (unless ``skip_build``) and judge each split's KG under ``data/heldout/``; the rows
    of the table, the snapshot's last when its KG exists. ``own_concepts``: link against the
    snapshot vocabulary with the held-out articles' own concepts added (``own_vocabulary``), into
    ``data/heldout/<split>-own/``, from the extractions of the plain build when it has them."""
    data = data or REPO / "data"
    if own_concepts and not skip_build:
        cfg = own_vocabulary(data, cfg)
    rows = []
    for split in splits:
        part = limit is not None or domain is not None
        name = split + (f"-{domain}" if domain else "") + (f"-first{limit}" if limit is not None else "")
        plain = data / "heldout" / name
        work = data / "heldout" / (name + "-own") if own_concepts else plain
        lines = select(split, limit, domain)
        pairs = work / "kg" / "causal_kg_pairs.jsonl"
        if not skip_build:
            before = plain / "extractions.jsonl" if own_concepts and (plain / "extractions.jsonl").is_file() else None
            pairs = build(split, work, lines if part else None, cfg, extractions=before)
        rows.append(figures(name + ("-own" if own_concepts else ""), pairs,
                            JUDGED / f"heldout-{split}" / "judgements.jsonl", len(lines),
                            work / "judge_todo.jsonl"))
    snap = data / "kg" / "causal_kg_pairs.jsonl"
    if snapshot and snap.is_file():
        rows.append(figures("snapshot", snap, JUDGED / "judgements.jsonl", None))
    return rows


def own_vocabulary(data: Path, cfg=None):
    """The config of a data folder ``data/heldout/vocab/`` whose vocabulary is the snapshot's
    (``data/wikidata/concepts.jsonl``) plus the resolved document concept of every held-out
    article, both splits, as a live build's vocabulary holds every corpus article's event. Each
    added concept is an instance with the source's label and the article title (without a
    bracketed qualifier) as an alias when it differs; no class is given (the sources have none).
    The concept index is built there (or found current); models and cache stay where ``cfg`` has them."""
    from causalkg.core.config import load_config
    from causalkg.linking.cli import build_index

    cfg = cfg or load_config(search_cwd=False)
    src = data / "wikidata"
    if not (src / "concepts.jsonl").is_file():
        raise SystemExit(f"error: {src / 'concepts.jsonl'} is missing: run `make kg` first")
    root = data / "heldout" / "vocab"
    (root / "wikidata").mkdir(parents=True, exist_ok=True)
    lines = [ln for ln in (src / "concepts.jsonl").read_text(encoding="utf-8").split("\n") if ln.strip()]
    have = {json.loads(ln)["id"] for ln in lines}
    for split in SPLITS:
        for ln in select(split):
            rec = json.loads(ln)
            dc = rec.get("document_concept") or {}
            if not dc.get("id") or dc["id"] in have:
                continue
            title = re.sub(r"\s*\([^)]*\)$", "", rec["title"]).strip()
            aliases = sorted({a for a in [title, *(dc.get("labels") or [])] if a and a != dc.get("label")})
            lines.append(json.dumps({"schema_version": "1", "id": dc["id"], "kind": "instance",
                                     "label": dc.get("label") or title, "aliases": aliases, "description": None,
                                     "instance_of": [], "subclass_of": [], "seed_classes": [],
                                     "enwiki_title": rec["title"]}, ensure_ascii=False))
            have.add(dc["id"])
    for name, text in [("concepts.jsonl", "".join(ln + "\n" for ln in lines)),
                       *((f, (src / f).read_text(encoding="utf-8")) for f in ("base_kg.jsonl", "event_classes.jsonl")
                         if (src / f).is_file())]:
        out = root / "wikidata" / name
        if not out.is_file() or out.read_text(encoding="utf-8") != text:
            with atomic_write(out) as fh:
                fh.write(text)
    own = cfg.with_overrides({"paths.data": str(root), "paths.models": str(cfg.path("paths.models")),
                              "paths.cache": str(cfg.path("paths.cache"))})
    build_index(cfg=own)
    return own


THRESHOLDS = (0.0, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8)


def build_all(split: str, data: Path | None = None) -> Path:
    """Assemble ``split`` again from its extractions (``python -m bench heldout`` writes them) with
    ``kg.min_confidence = 0`` into ``data/heldout/<split>-all/``; returns its flat pairs file."""
    from causalkg.core.config import load_config

    data = data or REPO / "data"
    extractions = data / "heldout" / split / "extractions.jsonl"
    if not extractions.is_file():
        raise SystemExit(f"error: {extractions} is missing: run `python -m bench heldout` first")
    cfg = load_config(search_cwd=False, overrides={"kg.min_confidence": 0.0})
    return build(split, data / "heldout" / f"{split}-all", cfg=cfg, extractions=extractions)


def ablation(splits=SPLITS, data: Path | None = None, snapshot: bool = True, families=None,
             overrides: dict | None = None, skip_build: bool = False) -> list[dict]:
    """The ``--ablation`` report: each split (and the snapshot) assembled again from its
    extractions with one family of assertion rules left out of ``kg.drop`` (the others and the
    verifier on), and with none dropped, into ``data/heldout/<set>-keep-<family>/``; one row per
    setting with each set's edges, supported edges and supported share over the judged edges.
    Unjudged evidence items are written to each folder's ``judge_todo.jsonl`` and counted.
    ``families``: only these flags are left out one at a time (default: every flag of ``kg.drop``);
    ``overrides``: other settings for every assembly (``paths.data`` of a test's vocabulary);
    ``skip_build``: report the KGs already in those folders (after judging their new items)."""
    import causalkg as ck
    from causalkg.core.config import load_config
    from causalkg.kg.polarity import DEFAULT_DROP

    data = data or REPO / "data"
    sets = {s: (data / "heldout" / s / "extractions.jsonl", HELDOUT / f"{s}.jsonl",
                JUDGED / f"heldout-{s}" / "judgements.jsonl") for s in splits}
    if snapshot:
        sets["snapshot"] = (data / "kg" / "extractions.jsonl", data / "corpus" / "corpus.jsonl",
                            JUDGED / "judgements.jsonl")
    for name, (extractions, _, _) in sets.items():
        if not extractions.is_file():
            raise SystemExit(f"error: {extractions} is missing: run `make kg` and `python -m bench heldout` first")
    settings = [("nothing (the default)", list(DEFAULT_DROP), "default")]
    settings += [(flag, [f for f in DEFAULT_DROP if f != flag], flag) for flag in (families or DEFAULT_DROP)]
    settings.append((f"all {len(DEFAULT_DROP)}", [], "all"))
    rows = []
    for label, drop, tag in settings:
        cfg = load_config(search_cwd=False, overrides={**(overrides or {}), "kg.drop": drop})
        row: dict = {"left out of kg.drop": label}
        for name, (extractions, corpus, judgements) in sets.items():
            work = data / "heldout" / f"{name}-keep-{tag}"
            if not (skip_build and (work / "kg" / "causal_kg_pairs.jsonl").is_file()):
                ck.assemble(extractions=extractions, corpus=corpus, out=work / "kg", cfg=cfg)
            r = figures(name, work / "kg" / "causal_kg_pairs.jsonl", judgements, None, work / "judge_todo.jsonl")
            row[f"{name} edges"] = r["edges"]
            row[f"{name} supported"] = r["supported"]
            row[f"{name} supported %"] = r["supported %"]
            row[f"{name} unjudged"] = r["unjudged edges"]
        rows.append(row)
    return rows


def judged_features(pairs: Path, judgements_path: Path) -> list[tuple[dict[str, float], int, int]]:
    """(confidence features, supported, plausible) of every judged edge of the KG at ``pairs``."""
    from causalkg.kg.judged import load

    return list(_bench_edges().judged_rows(pairs, load(judgements_path)).values())


def _bench_edges():
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import bench_edges

    return bench_edges


def curve(rows: list[tuple[dict[str, float], int, int]], weights=None, thresholds=THRESHOLDS) -> list[dict]:
    """Judged edges kept, supported and plausible at each ``kg.min_confidence`` in ``thresholds``
    under ``weights`` (the ones in use when None)."""
    from causalkg.kg.confidence import confidence

    out = []
    for t in thresholds:
        kept = [(s, p) for f, s, p in rows if confidence(f, weights) >= t]
        sup, pl = sum(s for s, _ in kept), sum(p for _, p in kept)
        out.append({"min_confidence": t, "judged edges": len(kept), "supported": sup,
                    "supported %": round(100 * sup / len(kept), 1) if kept else None,
                    "plausible %": round(100 * pl / len(kept), 1) if kept else None})
    return out


def curves(splits=SPLITS, fit: bool = False, data: Path | None = None) -> dict:
    """The ``--curve`` report: each split's curve under the weights in use, and with ``fit`` the
    refits on dev (alone; pooled with the snapshot's judged edges) and their curves on dev and
    the snapshot pool (the judged edges of the snapshot KG and of its baseline KG, whatever the
    pipeline keeps today)."""
    from causalkg.kg.confidence import WEIGHTS
    from causalkg.kg.confidence import fit as fit_weights

    data = data or REPO / "data"
    rows = {s: judged_features(build_all(s, data), JUDGED / f"heldout-{s}" / "judgements.jsonl") for s in splits}
    out: dict = {"in use": {"weights": dict(WEIGHTS), **{s: curve(r) for s, r in rows.items()}}}
    if fit:
        if "dev" not in rows:
            raise SystemExit("error: --fit refits on dev: leave --split out or include dev")
        snap = _bench_edges().judged_pool(data / "kg" / "causal_kg_pairs.jsonl")
        dev = rows["dev"]
        for name, pool in (("refit on dev", dev), ("refit on dev + snapshot", dev + snap)):
            w = fit_weights([f for f, _, _ in pool], [s for _, s, _ in pool], l2=5.0)
            out[name] = {"weights": w, "dev": curve(dev, w), "snapshot pool": curve(snap, w)}
        out["in use"]["snapshot pool"] = curve(snap)
    return out


def main(argv: list[str] | None = None) -> None:
    from causalkg.core.tables import render_table

    p = argparse.ArgumentParser(prog="bench heldout", description=__doc__.split("\n")[0])
    p.add_argument("--split", choices=SPLITS, action="append", help="only this split (repeatable)")
    p.add_argument("--limit", type=int, help="only the first N articles of each split")
    p.add_argument("--domain", help="only the articles of this domain or kind (split.tsv), e.g. geology, civil-war")
    p.add_argument("--skip-build", action="store_true", help="report the KGs already in data/heldout/")
    p.add_argument("--curve", action="store_true",
                   help="precision / size over kg.min_confidence on each split (assembles <split>-all)")
    p.add_argument("--own-concepts", action="store_true",
                   help="link against the snapshot vocabulary plus the held-out articles' own concepts (<split>-own)")
    p.add_argument("--fit", action="store_true", help="with --curve: refit the confidence on dev and show its curves")
    p.add_argument("--ablation", action="store_true",
                   help="each family of assertion rules left out of kg.drop in turn, on each split and the snapshot")
    a = p.parse_args(argv if argv is not None else [])
    if a.ablation:
        print(render_table(ablation(tuple(a.split or SPLITS), skip_build=a.skip_build), fmt="text", floatfmt=".1f"))
        print("\nunjudged items: data/heldout/<set>-keep-<family>/judge_todo.jsonl")
        return
    if a.curve:
        for name, block in curves(tuple(a.split or SPLITS), a.fit).items():
            print(f"### {name}: {block['weights']}\n")
            for where, rows in block.items():
                if where != "weights":
                    print(f"{where}:\n" + render_table(rows, fmt="text", floatfmt=".1f") + "\n")
        return
    rows = run(tuple(a.split or SPLITS), a.limit, a.domain, skip_build=a.skip_build, own_concepts=a.own_concepts)
    print(render_table(rows, fmt="text", floatfmt=".1f"))
    print("\nunjudged items are listed in data/heldout/<split>/judge_todo.jsonl (judge, then append to "
          "tests/fixtures/judged/heldout-<split>/judgements.jsonl)")


if __name__ == "__main__":
    main(sys.argv[1:])
