"""Linking benchmark: quality on real labels, agreement with IBM's linking, throughput, and FAISS
against a NumPy brute-force search in the same run.

    python -m bench linking

Inputs (no ``../shared``): ``tests/fixtures/linking/base_kg_concepts.jsonl`` (the Base KG as
Concept records, see its SOURCE.md) and ``snapshots/wikicausal/`` (base-kg-v1 and the two
CauseNet KGs IBM linked to Wikidata).

1. Alias hold-out: an index of primary labels only (no aliases), queried with the aliases of the
   Base KG classes (event and consequence ``labels`` lists, the label itself and case variants
   of it left out); accuracy@1 and @5 for our linker and two baselines in the same run
   (nearest neighbour of the raw phrase only; exact match of the normalised phrase only); then
   the same aliases as an extractor returns them ("the X", "a wave of X", "widespread X": real
   aliases, the decoration is ours); and how precise nearest-neighbour answers are at each
   threshold.
2. Agreement with IBM: CauseNet concept strings, linked by us over the full Base KG vocabulary,
   against the QIDs IBM's linker chose: how often our top-1 is in their list. Disagreements are
   printed for inspection.
3. Context: does the document-concept bonus help? Alias queries of an event class (the cause
   side) and of its consequences (the effect side), each in the context of a document about a
   real cause instance of that pair, at several bonus values.
4. Throughput: phrases/s end to end (normalise, embed, search), batched against one call per
   phrase; FAISS flat against NumPy brute force over the same random unit vectors (10k and 100k),
   with the share of identical top-10 answers; HNSW and IVF recall@10 against exact search.
"""

from __future__ import annotations

import json
import os
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bench import ThroughputTable, timed
from causalkg.core.config import load_config
from causalkg.core.tables import render_table

REPO = Path(__file__).resolve().parents[1]
CONCEPTS = REPO / "tests" / "fixtures" / "linking" / "base_kg_concepts.jsonl"
BASE_KG = REPO / "snapshots" / "wikicausal" / "base-kg-v1.jsonl"
CAUSENET = {name: REPO / "snapshots" / "wikicausal" / f"causenet-{name}-linked-v1.jsonl" for name in ("full", "precision")}


def _cfg(**linking):
    return load_config(search_cwd=False, overrides={f"linking.{k}": v for k, v in linking.items()})


def _read(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def _labels_only(concepts: list[dict]) -> list[dict]:
    return [{**c, "aliases": []} for c in concepts]


def holdout_queries(base: list[dict]) -> list[tuple[str, str]]:
    """(alias, class QID) for every class of the Base KG (events and consequences), the label
    and its case/punctuation variants left out."""
    from causalkg.linking.normalize import clean, fold

    seen = set()
    out = []
    for line in base:
        for node in [line["event"], *line.get("consequences", [])]:
            label_key = fold(clean(node.get("label") or ""))
            for alias in node.get("labels") or []:
                if fold(clean(alias)) == label_key or (alias, node["id"]) in seen:
                    continue
                seen.add((alias, node["id"]))
                out.append((alias, node["id"]))
    return out


def _accuracy(results, gold: list[str], k: int) -> float:
    return sum(1 for cands, g in zip(results, gold) if g in [c.qid for c in cands[:k]]) / max(len(gold), 1)


@dataclass
class _Hit:
    qid: str
    score: float


def _nearest_raw(linker, encoder, phrases: list[str], k: int = 5) -> list[list[_Hit]]:
    """The baseline: the raw phrase embedded and searched, best surface form per concept."""
    D, I = linker.index.search(encoder.encode(phrases), 8 * k)
    out = []
    for drow, irow in zip(D, I):
        seen, cands = set(), []
        for s, r in zip(drow, irow):
            q = linker.row_qid[r]
            if q not in seen:
                seen.add(q)
                cands.append(_Hit(q, float(s)))
        out.append(cands[:k])
    return out


def bench_holdout(base, concepts, encoder) -> dict:
    from causalkg.linking.linker import Linker

    queries = holdout_queries(base)
    phrases = [q for q, _ in queries]
    gold = [g for _, g in queries]
    linker = Linker.from_concepts(_labels_only(concepts), _cfg(), encoder=encoder)
    # Aliases that are another concept's label: no linker can get these right from the string.
    label_owner = defaultdict(set)
    from causalkg.linking.normalize import clean, fold

    for c in concepts:
        label_owner[fold(clean(c["label"] or ""))].add(c["id"])
    clash = sum(1 for p, g in queries if label_owner.get(fold(clean(p))) and g not in label_owner[fold(clean(p))])

    rows = []
    ours = linker.link(phrases, k=5, threshold=-1.0, instance_threshold=-1.0)
    ours_t = linker.link(phrases, k=5)
    # The same threshold without the stricter one for instances (what linking.instance_threshold buys).
    ours_t_inst = linker.link(phrases, k=5, instance_threshold=linker.threshold)
    # Baseline 1: nearest neighbour of the raw phrase, no normalisation, no exact match.
    nn_raw = _nearest_raw(linker, encoder, phrases)
    # Baseline 2: exact match of the normalised phrase only.
    from causalkg.linking.normalize import normalise

    exact_only = [[_Hit(q, 1.0) for q, _, _ in linker.exact(normalise(p))][:5] for p in phrases]
    th = linker.threshold
    # The sense check of the KG assembly (linking/sense.py) on top, the alias as its own sentence:
    # it may only remove answers, so what it costs is answered queries, and it should not
    # lower the accuracy of what stays.
    from causalkg.linking.sense import SenseCheck

    sensed = SenseCheck(linker.concepts, encoder=linker.embed).filter(phrases, ours_t, phrases)
    answered_s = [i for i, r in enumerate(sensed) if r]
    answered_t = [i for i, r in enumerate(ours_t) if r]
    for name, res in [("ours, no threshold", ours),
                      (f"ours, threshold {th}, no instance threshold", ours_t_inst),
                      (f"ours, threshold {th}, instance threshold {linker.instance_threshold}", ours_t),
                      ("baseline: nearest neighbour of the raw phrase", nn_raw),
                      ("baseline: exact match of the normalised phrase", exact_only),
                      (f"ours, threshold {th}, instance threshold {linker.instance_threshold}, + sense check", sensed)]:
        rows.append({"queries": "aliases", "system": name, "n": len(phrases), "answered": sum(1 for r in res if r),
                     "acc@1": _accuracy(res, gold, 1), "acc@5": _accuracy(res, gold, 5)})
    # The same aliases as an extractor returns them: with a determiner or a quantity in front.
    for pattern in ("the {}", "a wave of {}", "widespread {}"):
        decorated = [pattern.format(p) for p in phrases]
        ours_d = linker.link(decorated, k=5, threshold=-1.0, instance_threshold=-1.0)
        raw_d = _nearest_raw(linker, encoder, decorated)
        for name, res in [("ours, no threshold", ours_d), ("baseline: nearest neighbour of the raw phrase", raw_d)]:
            rows.append({"queries": f"'{pattern.format('alias')}'", "system": name, "n": len(decorated),
                         "answered": sum(1 for r in res if r), "acc@1": _accuracy(res, gold, 1),
                         "acc@5": _accuracy(res, gold, 5)})
    print(f"### Alias hold-out: index of {len(linker)} primary labels ({len(concepts)} concepts); "
          f"{len(phrases)} alias queries of {len(set(gold))} classes\n")
    print(render_table(rows, ["queries", "system", "n", "answered", "acc@1", "acc@5"], "md", floatfmt=".3f"))
    def _acc_on(res, idx):
        return sum(1 for i in idx if res[i] and res[i][0].qid == gold[i]) / max(len(idx), 1)

    print(f"\nAccuracy@1 among answered queries: {_acc_on(ours_t, answered_t):.3f} of {len(answered_t)} at the "
          f"thresholds, {_acc_on(sensed, answered_s):.3f} of {len(answered_s)} with the sense check.")
    print(f"\n{clash} of the {len(phrases)} aliases are the label of another concept "
          "(e.g. 'conflict' is an alias of war Q198 and the label of Q180684): counted as errors.\n")

    # Threshold calibration: how often a nearest-neighbour top-1 at or above t is right.
    cal = []
    for t in (0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9):
        kept = [(r[0].qid == g) for r, g in zip(ours, gold) if r and r[0].match == "nearest" and r[0].score >= t]
        n_near = sum(1 for r in ours if r and r[0].match == "nearest")
        cal.append({"threshold": t, "nearest top-1 kept": len(kept), "of": n_near,
                    "precision": (sum(kept) / len(kept)) if kept else None})
    print("Nearest-neighbour top-1 answers (no exact match) kept at each threshold, and how many are right:\n")
    print(render_table(cal, ["threshold", "nearest top-1 kept", "of", "precision"], "md", floatfmt=".3f"))
    print()
    return {"phrases": phrases, "gold": gold, "linker": linker}


def bench_ibm(concepts, encoder) -> None:
    from causalkg.linking.linker import Linker
    from causalkg.linking.normalize import normalise

    vocab_ids = {c["id"] for c in concepts}
    full = Linker.from_concepts(concepts, _cfg(), encoder=encoder)
    labels_only = Linker.from_concepts(_labels_only(concepts), _cfg(), encoder=encoder)
    rows = []
    disagreements: dict[str, tuple] = {}
    for name, path in CAUSENET.items():
        lines = _read(path)
        occurrences = Counter()
        ibm: dict[str, set] = defaultdict(set)
        for line in lines:
            for side in ("cause", "effect"):
                occurrences[line[side]["label"]] += 1
                ibm[line[side]["label"]].update(line[side]["id"])
        strings = sorted(ibm)
        qids = set().union(*ibm.values())
        covered = len(qids & vocab_ids)
        for vname, linker in (("full Base KG vocabulary", full), ("labels only", labels_only)):
            res = linker.link(strings, k=5)
            top1 = {s: (r[0] if r else None) for s, r in zip(strings, res)}
            agree = [s for s in strings if top1[s] is not None and top1[s].qid in ibm[s]]
            answered = [s for s in strings if top1[s] is not None]
            exact = [s for s in strings if top1[s] is not None and top1[s].match == "exact"]
            rows.append({
                "KG": f"causenet-{name}", "vocabulary": vname, "strings": len(strings),
                "IBM QIDs in vocab": f"{covered}/{len(qids)}", "answered": len(answered),
                "exact": len(exact), "top-1 in IBM list": len(agree) / len(strings),
                "weighted by occurrences": sum(occurrences[s] for s in agree) / sum(occurrences.values()),
                "in top-5": sum(1 for s, r in zip(strings, res) if ibm[s] & {c.qid for c in r}) / len(strings),
            })
            if vname == "labels only":
                for s in strings:
                    if s not in agree:
                        disagreements[s] = (top1[s], sorted(ibm[s]), occurrences[s], normalise(s).text)
    print("### Agreement with IBM's linking of CauseNet concepts (distinct strings)\n")
    cols = ["KG", "vocabulary", "strings", "IBM QIDs in vocab", "answered", "exact", "top-1 in IBM list",
            "weighted by occurrences", "in top-5"]
    print(render_table(rows, cols, "md", floatfmt=".3f"))
    names = {c["id"]: c["label"] for c in concepts}
    print("\nOver the full Base KG vocabulary every CauseNet string is a label or alias (IBM linked them with "
          "these lists), so agreement there measures lookup only; the labels-only rows make the linker generalise.")
    print(f"\nDisagreements over the labels-only vocabulary, both KGs ({len(disagreements)} strings, "
          "most frequent first): string, occurrences, ours, IBM\n")
    drows = []
    for s, (top, theirs, n, norm) in sorted(disagreements.items(), key=lambda kv: -kv[1][2]):
        ours = f"{top.qid} {top.label} ({top.match} via '{top.surface}', {top.score:.2f})" if top else "(none above threshold)"
        drows.append({"string": s, "n": n, "ours": ours, "IBM": ", ".join(f"{q} {names.get(q)}" for q in theirs)})
    print(render_table(drows, ["string", "n", "ours", "IBM"], "md"))
    print()


def bench_context(base, concepts, encoder) -> None:
    from causalkg.linking.linker import Linker, LinkContext
    from causalkg.linking.normalize import clean, fold

    cause_q, effect_q = [], []
    for line in base:
        ev = line["event"]
        ev_aliases = [a for a in ev.get("labels") or [] if fold(clean(a)) != fold(clean(ev["label"] or ""))]
        for cons in line.get("consequences") or []:
            cons_aliases = [a for a in cons.get("labels") or [] if fold(clean(a)) != fold(clean(cons["label"] or ""))]
            docs = sorted({ex["cause"]["id"] for ex in cons.get("examples") or []})
            for doc in docs:
                cause_q += [(a, ev["id"], doc) for a in ev_aliases]
                effect_q += [(a, cons["id"], doc) for a in cons_aliases]
    cause_q, effect_q = sorted(set(cause_q)), sorted(set(effect_q))
    rows = []
    for vname, linker in (("labels only", Linker.from_concepts(_labels_only(concepts), _cfg(), encoder=encoder)),
                          ("full", Linker.from_concepts(concepts, _cfg(), encoder=encoder))):
        for bonus in (0.0, 0.02, 0.05, 0.1):
            linker.context_bonus = bonus
            accs = {}
            for side, qs in (("cause side", cause_q), ("effect side", effect_q)):
                res = linker.link([q for q, _, _ in qs], k=1, contexts=[LinkContext(document_concept=d) for _, _, d in qs])
                accs[side] = _accuracy(res, [g for _, g, _ in qs], 1)
            n = len(cause_q) + len(effect_q)
            accs["all"] = (accs["cause side"] * len(cause_q) + accs["effect side"] * len(effect_q)) / n
            rows.append({"vocabulary": vname, "bonus": bonus, **accs})
    print(f"### Context bonus: acc@1 of alias queries in the context of a real cause instance's document\n"
          f"({len(cause_q)} cause-side queries: aliases of the event class; {len(effect_q)} effect-side: aliases "
          "of its consequence classes)\n")
    print(render_table(rows, ["vocabulary", "bonus", "cause side", "effect side", "all"], "md", floatfmt=".3f"))
    print()


def bench_throughput(holdout: dict, encoder) -> None:
    from causalkg.linking.linker import Linker
    from causalkg.linking.normalize import normalise

    concepts = _read(CONCEPTS)
    linker = Linker.from_concepts(concepts, _cfg(), encoder=encoder)
    # Distinct phrases (after normalisation), so batching gains nothing from repeated texts.
    pool = holdout["phrases"] + [s["surface"] for s in linker.surfaces]
    for path in CAUSENET.values():
        pool += [line[side]["label"] for line in _read(path) for side in ("cause", "effect")]
    seen, phrases = set(), []
    for p in pool:
        t = normalise(p).text
        if t and t not in seen:
            seen.add(t)
            phrases.append(p)
    import torch

    linker.link(phrases[:8])  # warm up
    table = ThroughputTable(f"Linking end to end (normalise + embed + exact + FAISS flat over {len(linker)} "
                            f"surface forms), {len(phrases)} distinct phrases", unit="phrases")
    few = phrases[:50]
    threads_before = torch.get_num_threads()
    agree = []
    # Both thread settings: on a busy machine one torch thread is faster for one-phrase calls.
    for threads in sorted({1, os.cpu_count() or 1}):
        torch.set_num_threads(threads)
        with timed() as t:
            batched = linker.link(phrases, k=5)
        table.add(f"batched: one link() call, {threads} torch thread(s)", len(phrases), t.seconds)
        with timed() as t:
            single = [linker.link([p], k=5)[0] for p in few]
        table.add(f"baseline: one link() call per phrase, {threads} torch thread(s)", len(few), t.seconds,
                  baseline=(threads == 1))
        with timed() as t:
            linker.embed([normalise(p).text for p in phrases])
        table.add(f"of which: embedding alone, batched, {threads} torch thread(s)", len(phrases), t.seconds)
        agree.append(sum(1 for a, b in zip(batched, single) if [c.qid for c in a] == [c.qid for c in b]))
    torch.set_num_threads(threads_before)
    table.print()
    print(f"Same candidates batched and one by one: {', '.join(f'{a}/{len(few)}' for a in agree)}.\n")

    import faiss

    rng = np.random.default_rng(0)
    d, nq, k = 384, 500, 10
    search = ThroughputTable(f"Exact search, {nq} queries, top-{k}, d={d}: FAISS IndexFlatIP against NumPy "
                             "brute force (matrix product + argpartition) over the same random unit vectors", unit="queries")
    notes = []
    for n in (10_000, 100_000):
        x = _unit(rng, n, d)
        q = _unit(rng, nq, d)
        index = faiss.IndexFlatIP(d)
        index.add(x)
        with timed() as t:
            Df, If = index.search(q, k)
        tf = t.seconds
        with timed() as t:
            s = q @ x.T
            part = np.argpartition(-s, k, axis=1)[:, :k]
            order = np.argsort(-np.take_along_axis(s, part, axis=1), axis=1)
            In = np.take_along_axis(part, order, axis=1)
            Dn = np.take_along_axis(s, In, axis=1)
        tn = t.seconds
        search.add(f"numpy brute force, {n // 1000}k vectors", nq, tn, baseline=(n == 10_000))
        search.add(f"faiss IndexFlatIP, {n // 1000}k vectors", nq, tf)
        same_sets = np.mean([set(a) == set(b) for a, b in zip(If, In)])
        same_order = np.mean([(a == b).all() for a, b in zip(If, In)])
        notes.append(f"{n // 1000}k vectors: identical top-{k} sets {same_sets:.3f}, identical order {same_order:.3f}, "
                     f"largest score difference {np.abs(Df - Dn).max():.1e}; FAISS is {tn / tf:.2f}x NumPy's speed")
    search.print()
    for line in notes:
        print(line)
    print()

    # Approximate indexes: recall@k against exact search, on the real vocabulary (queries: the
    # hold-out aliases) and on random unit vectors (no structure: the hardest case for ANN).
    n_ann = int(os.environ.get("CAUSALKG_BENCH_ANN_VECTORS", "20000"))
    real_x = linker.index.reconstruct_n(0, linker.index.ntotal)
    real_q = linker.embed(holdout["phrases"])
    for title, x, q in [
        (f"real vocabulary ({len(real_x)} MiniLM surface vectors, {len(real_q)} alias queries)", real_x, real_q),
        (f"{n_ann // 1000}k random unit vectors, {nq} queries (set CAUSALKG_BENCH_ANN_VECTORS for another size)",
         _unit(rng, n_ann, d), _unit(rng, nq, d)),
    ]:
        ann = ThroughputTable(f"Approximate search, top-{k}, recall against exact: {title}", unit="queries")
        _ann_rows(ann, x, q, k)
        ann.print()


def _unit(rng, n: int, d: int) -> np.ndarray:
    x = rng.standard_normal((n, d), dtype=np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x


def _ann_rows(table: ThroughputTable, x: np.ndarray, q: np.ndarray, k: int) -> None:
    """Flat (exact, the baseline) against the configured HNSW and IVF settings."""
    import faiss

    from causalkg.linking.index import IvfBounds, build_settings, fill_index, ivf_nlist, make_faiss_index
    from causalkg.linking.linker import exact_similarity

    cfg = _cfg()
    lk = cfg["linking"]
    k = min(k, len(x))
    with timed() as tb:
        flat = faiss.IndexFlatIP(x.shape[1])
        flat.add(x)
    with timed() as t:
        _, exact = flat.search(q, k)
    table.add("flat (exact)", len(q), t.seconds, baseline=True, recall=1.0, **{f"recall_at_{float(lk['threshold'])}": 1.0},
              build_s=tb.seconds)
    hnsw = build_settings(_cfg(index="hnsw"))
    ivf = build_settings(_cfg(index="ivf"))
    nlist = ivf_nlist(ivf["nlist"], len(x))
    threshold = float(lk["threshold"])
    # the similarities (not the rows: two concepts with the same name have the same vector, and
    # either may fill the k-th place) of the exact top k at or above the threshold
    above = [Counter(np.round(s[s >= threshold], 6).tolist()) for s in _scores(x, q, exact)]
    for name, settings, params in [
        (f"hnsw M={hnsw['m']} efC={hnsw['ef_construction']} efSearch={lk['hnsw_ef_search']}", hnsw,
         faiss.SearchParametersHNSW(efSearch=int(lk["hnsw_ef_search"]))),
        (f"ivf nlist={nlist} nprobe=16", ivf, faiss.SearchParametersIVF(nprobe=16)),
        (f"ivf nlist={nlist} nprobe=64", ivf, faiss.SearchParametersIVF(nprobe=64)),
        (f"ivf nlist={nlist} exact at or above {threshold} (nprobe 0, the linker's)", ivf, None),
    ]:
        with timed() as tb:
            idx = make_faiss_index(settings, x.shape[1], len(x))
            idx = fill_index(idx, x)
            bounds = IvfBounds(idx) if params is None else None
        with timed() as t:
            if params is None:  # a range search: the rows at or above the threshold, best first, top k
                # (so its plain recall counts the rows below the threshold as missed: see recall_at)
                hits = bounds.rows_within(q, threshold)
                found = [r[np.argsort(-exact_similarity(v, x[r]), kind="stable")][:k] for v, r in zip(q, hits)]
            else:
                _, found = idx.search(q, k, params=params)
        recall = float(np.mean([len(set(a) & set(b)) / k for a, b in zip(found, exact)]))
        kept = sum(sum(a.values()) for a in above)
        got = [Counter(np.round(s[s >= threshold], 6).tolist()) for s in _scores(x, q, found)]
        recall_above = sum(sum((a & g).values()) for a, g in zip(above, got)) / kept if kept else float("nan")
        table.add(name, len(q), t.seconds, recall=recall, **{f"recall_at_{threshold}": recall_above}, build_s=tb.seconds)


def _scores(x: np.ndarray, q: np.ndarray, rows) -> list[np.ndarray]:
    """The linker's exact similarities of each query with its rows (-1 rows: -inf)."""
    from causalkg.linking.linker import exact_similarity

    out = []
    for v, r in zip(q, rows):
        r = np.asarray(r, dtype=np.int64)
        out.append(np.where(r >= 0, exact_similarity(v, x[np.maximum(r, 0)]), -np.inf))
    return out


def bench_nil(holdout: dict) -> dict:
    """Absent concepts: the alias queries of the hold-out, answered once with the gold concept in
    the vocabulary (accuracy@1 of the answers given at the default thresholds) and once with it
    removed (the share of queries that get NIL, i.e. no candidate, rather than a wrong concept).

    Removing the gold concept is done on the candidate list (the linker asked for enough
    candidates that the next ones fill the gap), which gives what an index without that
    concept returns, without rebuilding the index once per concept."""
    from causalkg.linking.sense import SenseCheck

    phrases, gold, linker = holdout["phrases"], holdout["gold"], holdout["linker"]
    wide = linker.link(phrases, k=20)
    present = [r[:5] for r in wide]
    absent = [[c for c in r if c.qid != g][:5] for r, g in zip(wide, gold)]
    sense = SenseCheck(linker.concepts, encoder=linker.embed)
    rows = []
    out = {}
    for name, pres, abs_ in [("linker at its thresholds", present, absent),
                             ("+ sense check", sense.filter(phrases, present, phrases),
                              sense.filter(phrases, absent, phrases))]:
        answered = [i for i, r in enumerate(pres) if r]
        right = sum(1 for i in answered if pres[i][0].qid == gold[i])
        nil = sum(1 for r in abs_ if not r)
        rows.append({"system": name, "n": len(phrases), "present: answered": len(answered),
                     "present: acc@1 of all": right / max(len(phrases), 1),
                     "present: acc@1 of answered": right / max(len(answered), 1),
                     "absent: NIL rate": nil / max(len(phrases), 1)})
        out[name] = rows[-1]
    print("### Absent concepts: the same alias queries with the gold concept in the vocabulary, "
          "and with it removed (the right answer is then NIL)\n")
    print(render_table(rows, ["system", "n", "present: answered", "present: acc@1 of all",
                              "present: acc@1 of answered", "absent: NIL rate"], "md", floatfmt=".3f"))
    wrong = Counter((p, r[0].qid) for p, r in zip(phrases, absent) if r)
    print("\nFirst wrong answers with the gold concept absent: "
          + "; ".join(f"{p!r} -> {q}" for (p, q), _ in list(wrong.items())[:12]) + "\n")
    return out


def main() -> None:
    import torch

    from causalkg.linking.encoder import Encoder

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    # One torch thread: faster on a shared machine; the throughput table also runs with all cores.
    torch.set_num_threads(1)
    base = _read(BASE_KG)
    concepts = _read(CONCEPTS)
    encoder = Encoder(_cfg()["linking"]["model"], device="auto")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"Model {encoder.name} ({encoder.fingerprint[:19]}...), device {encoder.device}, "
          f"{torch.get_num_threads()} torch threads, {os.cpu_count()} CPUs, load average {load:.1f} at start; "
          f"vocabulary {CONCEPTS.relative_to(REPO)}: {len(concepts)} concepts\n")
    holdout = bench_holdout(base, concepts, encoder)
    if os.environ.get("CAUSALKG_BENCH_ONLY") == "nil":
        bench_nil(holdout)
        return
    bench_nil(holdout)
    bench_ibm(concepts, encoder)
    bench_context(base, concepts, encoder)
    bench_throughput(holdout, encoder)


if __name__ == "__main__":
    main()
