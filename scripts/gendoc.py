"""The shared command line of the generated documentation pages (``gen_cli_docs.py``,
``gen_api_docs.py``, ``gen_config_docs.py``): write the page, or with ``--check`` exit 1 when the
page on disk differs from what the code renders (a test runs each with ``--check``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Callable

REPO = Path(__file__).resolve().parents[1]


def main(target: Path, render: Callable[[], str], description: str, argv: list[str] | None = None) -> int:
    """Write ``render()`` to ``target`` (a path in the repository), or check it is current."""
    name = target.relative_to(REPO)
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--check", action="store_true", help=f"exit 1 when {name} is out of date")
    args = ap.parse_args(argv)
    text = render()
    if args.check:
        current = target.read_text(encoding="utf-8") if target.exists() else ""
        if current != text:
            print(f"{name} is out of date: run `make docs`", file=sys.stderr)
            return 1
        return 0
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(target)
    print(f"wrote {name}")
    return 0
