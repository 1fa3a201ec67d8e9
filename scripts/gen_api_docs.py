"""Write docs/api.md: the Python API reference, generated from the docstrings.

It lists what ``import causalkg as ck`` gives (``causalkg._API``): each function with its
signature and docstring, then each result class of ``causalkg.results`` with its fields. Run
``make docs`` (or ``python scripts/gen_api_docs.py``) after changing the API; a test checks that
docs/api.md matches the code. ``--check`` exits 1 when the file is stale.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import inspect
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import causalkg  # noqa: E402
from causalkg import results  # noqa: E402


def _doc(obj: object) -> str:
    return inspect.cleandoc(obj.__doc__ or "(no docstring)")


def _signature(name: str, fn: object) -> str:
    sig = str(inspect.signature(fn))
    # Keep addresses and environment out of the file: defaults such as Path() print the same everywhere.
    sig = re.sub(r" at 0x[0-9a-f]+", "", sig)
    return f"ck.{name}{sig}"


def _target(name: str) -> object:
    module, _, attr = causalkg._API[name].partition(":")
    return getattr(importlib.import_module(module), attr)


def render() -> str:
    out = [
        "# Python API reference",
        "",
        "Generated from the docstrings by `scripts/gen_api_docs.py` (`make docs`). Do not edit by hand.",
        "",
        _doc(causalkg),
        "",
        "## Functions",
        "",
    ]
    for name in causalkg._API:
        obj = _target(name)
        if inspect.isclass(obj):
            continue
        out += [f"### `ck.{name}`", "", "```python", _signature(name, obj), "```", "", _doc(obj), ""]
    out += ["## Classes and errors", ""]
    for name in causalkg._API:
        obj = _target(name)
        if inspect.isclass(obj):
            out += [f"### `ck.{name}`", "", _doc(obj), ""]
    out += ["## Results (`causalkg.results`)", "", _doc(results), ""]
    for name in results.__all__:
        obj = getattr(results, name)
        if not inspect.isclass(obj):
            continue
        out += [f"### `{name}`", "", _doc(obj), ""]
        if dataclasses.is_dataclass(obj):
            fields = [f for f in dataclasses.fields(obj) if f.name != "detail"]
            if fields:
                out += ["| field | type |", "|---|---|"]
                out += [f"| `{f.name}` | `{f.type}` |" for f in fields]
                out.append("")
    return "\n".join(out).rstrip("\n") + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--check", action="store_true", help="fail when docs/api.md is out of date")
    args = ap.parse_args()
    target = REPO / "docs" / "api.md"
    text = render()
    if args.check:
        current = target.read_text(encoding="utf-8") if target.exists() else ""
        if current != text:
            print("docs/api.md is out of date: run make docs", file=sys.stderr)
            return 1
        return 0
    target.write_text(text, encoding="utf-8")
    print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
