"""Write docs/cli.md: the CLI reference, generated from the parsers' --help texts.

Run ``make docs`` (or ``python scripts/gen_cli_docs.py``) after changing a command; a test
checks that docs/cli.md matches the parsers. ``--check`` exits 1 when the file is stale.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from causalkg.cli import build_parser  # noqa: E402


def _walk(parser: argparse.ArgumentParser, path: list[str]):
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _walk(sub, path + [name])


def render() -> str:
    os.environ["COLUMNS"] = "100"
    parser = build_parser()
    out = [
        "# CLI reference",
        "",
        "Generated from `causalkg ... --help` by `scripts/gen_cli_docs.py` (`make docs`). Do not edit by hand.",
        "",
    ]
    for path, p in _walk(parser, ["causalkg"]):
        title = " ".join(path)
        out += [f"## `{title}`", "", "```text", p.format_help().rstrip(), "```", ""]
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--check", action="store_true", help="fail when docs/cli.md is out of date")
    args = ap.parse_args()
    target = REPO / "docs" / "cli.md"
    text = render()
    if args.check:
        current = target.read_text(encoding="utf-8") if target.exists() else ""
        if current != text:
            print("docs/cli.md is out of date: run make docs", file=sys.stderr)
            return 1
        return 0
    target.write_text(text, encoding="utf-8")
    print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
