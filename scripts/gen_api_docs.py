"""Write docs/api.md: the Python API reference, generated from the docstrings.

It lists what ``import causalkg as ck`` gives (the ``__all__`` of each module in
``causalkg.COMMAND_MODULES``): each function with its signature, module and docstring, the
configuration and error classes, then each command's result class with its fields. Run
``make docs`` (or ``python scripts/gen_api_docs.py``) after changing the API; a test checks that
docs/api.md matches the code. ``--check`` exits 1 when the file is stale.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import gendoc  # noqa: E402  (scripts/gendoc.py, beside this file)

import causalkg  # noqa: E402
from causalkg.core import results  # noqa: E402


def _doc(obj: object) -> str:
    return inspect.cleandoc(obj.__doc__ or "(no docstring)")


def _signature(name: str, fn: object) -> str:
    sig = str(inspect.signature(fn))
    # Keep addresses and environment out of the file: defaults such as Path() print the same everywhere.
    sig = re.sub(r" at 0x[0-9a-f]+", "", sig)
    return f"ck.{name}{sig}"


def _names() -> list[tuple[str, str, object]]:
    """(name, module, object) for every public name, in the order of ``COMMAND_MODULES``."""
    out = []
    for module_name in causalkg.COMMAND_MODULES:
        module = importlib.import_module(module_name)
        out += [(name, module_name, getattr(module, name)) for name in module.__all__]
    return out


def render() -> str:
    names = _names()
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
    for name, module, obj in names:
        if not inspect.isclass(obj):
            out += [f"### `ck.{name}`", "", "```python", _signature(name, obj), "```", "",
                    f"In `{module}`.", "", _doc(obj), ""]
    out += ["## Classes and errors", ""]
    for name, module, obj in names:
        if inspect.isclass(obj) and not issubclass(obj, results.Result):
            out += [f"### `ck.{name}`", "", _doc(obj), ""]
    out += ["## Results (`causalkg.core.results`)", "", _doc(results), ""]
    for name, module, obj in [("Result", "causalkg.core.results", results.Result),
                              ("TableResult", "causalkg.core.results", results.TableResult), *names]:
        if not (inspect.isclass(obj) and issubclass(obj, results.Result)):
            continue
        out += [f"### `{'ck.' if module != 'causalkg.core.results' else 'causalkg.core.results.'}{name}`", "",
                f"In `{module}`.", "", _doc(obj), ""]
        if dataclasses.is_dataclass(obj):
            fields = [f for f in dataclasses.fields(obj) if f.name != "detail"]
            if fields:
                out += ["| field | type |", "|---|---|"]
                out += [f"| `{f.name}` | `{f.type}` |" for f in fields]
                out.append("")
    return "\n".join(out).rstrip("\n") + "\n"


def main(argv: list[str] | None = None) -> int:
    return gendoc.main(REPO / "docs" / "api.md", render, __doc__, argv)


if __name__ == "__main__":
    sys.exit(main())
