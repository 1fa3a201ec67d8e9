"""The KG figures the README states, from a build: ``python scripts/kg_figures.py [--data DIR]``
prints them; ``--write`` stores them in ``tests/fixtures/kg/snapshot-figures.json`` (what
``tests/reliability/test_readme_figures.py`` holds the README to); ``--check`` fails when the
build in DIR does not give the committed figures. Run it after a fresh-clone ``make kg``."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FIGURES = REPO / "tests" / "fixtures" / "kg" / "snapshot-figures.json"
KEYS = ("extractions", "edges", "edges_class", "edges_instance", "edges_mixed", "nodes", "mentions", "documents",
        "triples")


def figures(data: Path) -> dict[str, int]:
    sys.path.insert(0, str(REPO))
    from causalkg.kg.kgfiles import reading_kg

    with reading_kg(data / "kg") as (_, manifest):
        counts = manifest["counts"]
    extract = json.loads((data / "kg" / "extractions.manifest.json").read_text(encoding="utf-8"))
    return {"extractions": int(extract["counts"]["extractions"]), **{k: int(counts[k]) for k in KEYS[1:]}}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--data", type=Path, default=REPO / "data")
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args(argv)
    got = figures(args.data)
    print(json.dumps(got, indent=1))
    if args.write:
        record = {"source": f"scripts/kg_figures.py --write on a fresh-clone make kg ({args.data})", "figures": got}
        FIGURES.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    if args.check:
        want = json.loads(FIGURES.read_text(encoding="utf-8"))["figures"]
        if want != got:
            print(f"the build in {args.data} gives other figures than {FIGURES}: {want}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
