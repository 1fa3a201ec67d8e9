"""Run the benchmarks: ``python -m bench`` (all) or ``python -m bench NAME [NAME ...]``."""

from __future__ import annotations

import importlib
import pkgutil
import sys
import time
from pathlib import Path


def main(argv: list[str]) -> int:
    here = Path(__file__).parent
    names = sorted(m.name[len("bench_"):] for m in pkgutil.iter_modules([str(here)]) if m.name.startswith("bench_"))
    chosen = argv or names
    unknown = [n for n in chosen if n not in names]
    if unknown:
        print(f"error: unknown benchmark(s) {', '.join(unknown)}; choose from {', '.join(names)}", file=sys.stderr)
        return 2
    for name in chosen:
        print(f"## bench {name}\n", flush=True)
        start = time.perf_counter()
        importlib.import_module(f"bench.bench_{name}").main()
        print(f"(bench {name}: {time.perf_counter() - start:.1f} s)\n", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
