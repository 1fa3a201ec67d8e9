"""Write a large file of linked mentions for `causalkg kg assemble --linked`, to measure the
assembly's memory and time at sizes the bundled snapshot cannot reach.

    python scripts/synthetic_mentions.py COPIES OUT [--kg data/kg]

Every linked mention of a built KG (``<kg>/linked/*.jsonl``, both ends linked) is written COPIES
times. Copy i stands in a generated document (``doc_id`` ``gen-<i>-<doc_id>``, title marked
``(generated <i>)``, a new ``mention_id``), and its effect concept is rotated through the effects
the KG has, so the edges stay a bounded set (as a real KG's class edges saturate) while the
mentions behind them grow with COPIES. The texts are the snapshot's real sentences, unchanged.
Nothing is written into the repository's data.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path


def _linked(kg: Path) -> list[dict]:
    rows = []
    for path in sorted((kg / "linked").glob("*.jsonl")):
        with path.open(encoding="utf-8") as f:
            for line in f:
                if line.strip():
                    row = json.loads(line)
                    if (row.get("cause") or {}).get("qid") and (row.get("effect") or {}).get("qid"):
                        rows.append(row)
    if not rows:
        raise SystemExit(f"no linked mentions under {kg / 'linked'}: run `causalkg kg assemble` first")
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("copies", type=int)
    ap.add_argument("out", type=Path)
    ap.add_argument("--kg", type=Path, default=Path("data/kg"), help="a built KG folder (default data/kg)")
    a = ap.parse_args(argv)
    if a.copies < 1:
        ap.error("COPIES must be at least 1")
    rows = _linked(a.kg)
    ends = [(r["effect"]["qid"], r["effect"]["label"], r["effect"]["kind"]) for r in rows]
    effects = sorted(set(ends))
    first = [effects.index(e) for e in ends]  # each row's effect's place in the rotation
    tmp = a.out.with_name(a.out.name + ".tmp")
    n = 0
    with tmp.open("w", encoding="utf-8") as f:
        for i in range(a.copies):
            for row, start in zip(rows, first):
                r = json.loads(json.dumps(row))
                r["doc_id"] = f"gen-{i}-{row['doc_id']}"
                r["title"] = f"{row['title']} (generated {i})"
                r["document_concept"] = None
                r["mention_id"] = hashlib.sha1(f"{i}:{row['mention_id']}".encode()).hexdigest()[:20]
                if i:
                    qid, label, kind = effects[(start + i) % len(effects)]
                    if qid != r["cause"]["qid"]:
                        r["effect"].update(qid=qid, label=label, kind=kind)
                f.write(json.dumps(r, ensure_ascii=False) + "\n")
                n += 1
    tmp.replace(a.out)
    print(f"{n} mentions ({len(rows)} linked mentions x {a.copies}, {len(effects)} effect concepts) in {a.out}",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
