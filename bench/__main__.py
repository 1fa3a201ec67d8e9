"""Run the benchmarks: ``python -m bench`` (all), ``python -m bench NAME [NAME ...]``, or one
benchmark with its options: ``python -m bench NAME --OPTION ...`` (as ``python bench/bench_NAME.py
--OPTION ...``)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import sys
import time
from pathlib import Path


def main(argv: list[str]) -> int:
    here = Path(__file__).parent
    names = sorted(m.name[len("bench_"):] for m in pkgutil.iter_modules([str(here)]) if m.name.startswith("bench_"))
    cut = next((i for i, a in enumerate(argv) if a.startswith("-")), len(argv))
    chosen, options = argv[:cut] or names, argv[cut:]
    if options and len(chosen) != 1:
        print("error: options go to one benchmark: python -m bench NAME --OPTION ...", file=sys.stderr)
        return 2
    unknown = [n for n in chosen if n not in names]
    if unknown:
        print(f"error: unknown benchmark(s) {', '.join(unknown)}; choose from {', '.join(names)}", file=sys.stderr)
        return 2
    for name in chosen:
        print(f"## bench {name}\n", flush=True)
        start = time.perf_counter()
        module = importlib.import_module(f"bench.bench_{name}")
        saved = sys.argv
        sys.argv = [module.__file__, *options]  # a benchmark reads its options as when run as a script
        try:
            if "argv" in inspect.signature(module.main).parameters:
                module.main(options)
            else:
                module.main()
        finally:
            sys.argv = saved
        print(f"(bench {name}: {time.perf_counter() - start:.1f} s)\n", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
