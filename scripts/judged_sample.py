"""Build the KGs whose evidence is judged by hand, and list what is not judged yet.

    .venv/bin/python scripts/judged_sample.py [--extractions data/kg/extractions.jsonl] [--out data/judging]

From one extractions file it assembles (with the persisted linker, nothing else changes):

- ``baseline/``: the settings of main before issue 13 (no assertion check, no sense check, no
  structured sources, lifted self-loops kept): the baseline KG whose edges the bench compares;
  its edges are copied to ``tests/fixtures/judged/baseline_edges.jsonl`` (mention candidates
  left out) with ``--write-baseline``;
- ``current/``: the default settings;
- ``permissive/``: the default linking with every flag kept (``kg.drop = []``) and the
  structured sources: the linked mentions the filters act on.

Then writes ``<out>/todo.jsonl``: every evidence item of the three KGs with no judgement in
``tests/fixtures/judged/judgements.jsonl`` (a template per item: fill the rubric answers by
reading the sentence and append the lines to the fixture).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
JUDGED = REPO / "tests" / "fixtures" / "judged"

SETTINGS = {
    "baseline": {"kg.assess": False, "kg.sense_check": False, "kg.structured": [], "kg.lift_self_loops": True},
    "current": {},
    "permissive": {"kg.drop": []},
}


def main() -> None:
    from causalkg.core.config import load_config
    from causalkg.core.contracts import KGEdge
    from causalkg.core.jsonl import read_jsonl
    from causalkg.kg.assemble import assemble
    from causalkg.kg.judged import evidence, load, todo_records
    from causalkg.linking.linker import Linker

    ap = argparse.ArgumentParser()
    ap.add_argument("--extractions", default=str(REPO / "data" / "kg" / "extractions.jsonl"))
    ap.add_argument("--out", default=str(REPO / "data" / "judging"))
    ap.add_argument("--write-baseline", action="store_true")
    ap.add_argument("--only", nargs="*", default=list(SETTINGS))
    args = ap.parse_args()
    out = Path(args.out)
    judgements = load(JUDGED / "judgements.jsonl")
    linker = None
    todo: dict = {}
    for name in args.only:
        cfg = load_config(overrides=SETTINGS[name])
        if linker is None:
            linker = Linker.load(cfg)
        r = assemble(cfg, extractions=args.extractions, out=out / name, linker=linker)
        edges = list(read_jsonl(r.out / "causal_kg_pairs.jsonl", KGEdge))
        items = evidence(edges)
        new = [it for it in items if it.key not in judgements]
        for it in new:
            todo.setdefault(it.key, it)
        print(f"{name}: {len(edges)} edges, {sum(len(e.mentions) for e in edges)} mentions, "
              f"{len(items)} evidence items, {len(new)} not judged; counts: "
              + ", ".join(f"{k}={v}" for k, v in r.counts.items() if k.startswith("link_") and v))
        if name == "baseline" and args.write_baseline:
            JUDGED.mkdir(parents=True, exist_ok=True)
            with open(JUDGED / "baseline_edges.jsonl", "w", encoding="utf-8") as fh:
                for e in edges:
                    d = json.loads(e.model_dump_json())
                    for m in d["mentions"]:
                        m["cause_candidates"] = m["cause_candidates"][:1]
                        m["effect_candidates"] = m["effect_candidates"][:1]
                    fh.write(json.dumps(d, ensure_ascii=False) + "\n")
    (out / "todo.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n"
                                            for r in todo_records(todo.values())), encoding="utf-8")
    print(f"{len(todo)} evidence items to judge in {out / 'todo.jsonl'}")


if __name__ == "__main__":
    main()
