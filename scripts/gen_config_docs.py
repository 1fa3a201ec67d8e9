"""Write docs/config-reference.md: every configuration key, generated from the declared blocks.

The defaults, their comments and the sections come from ``causalkg/core/defaults.toml`` (the
one place defaults are written); the allowed ranges from ``causalkg/core/ranges.py``; the typed
dataclass a component reads its block as from the ``block(cfg, "section", Class)`` calls in the
code. Run ``make docs`` (or ``python scripts/gen_config_docs.py``) after changing a key; a test
checks the file is current. ``--check`` exits 1 when it is stale.
"""

from __future__ import annotations

import json
import re
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import gendoc  # noqa: E402  (scripts/gendoc.py, beside this file)

from causalkg.core.ranges import range_of  # noqa: E402

DEFAULTS = REPO / "causalkg" / "core" / "defaults.toml"
OUT = REPO / "docs" / "config-reference.md"
BLOCK_CALL = re.compile(r"""\bblock\(\s*\w+\s*,\s*"([\w.]+)"\s*,\s*(\w+)\s*\)""")
HEADER = re.compile(r"^\[([\w.]+)\]\s*(#.*)?$")
KEY = re.compile(r"^([A-Za-z_][\w-]*)\s*=")
LONG = 60  # a default rendered longer than this is shortened


@dataclass
class Key:
    name: str
    meaning: list[str] = field(default_factory=list)


@dataclass
class Section:
    name: str
    parts: list[list[str] | list[Key]] = field(default_factory=list)  # prose paragraphs and key runs, in file order


def _comment(text: str) -> str:
    return text.strip().removeprefix("#").strip()


def _inline_comment(line: str) -> str:
    """The trailing ``# ...`` of a key line, outside any string."""
    quote = None
    for i, ch in enumerate(line):
        if quote:
            if ch == "\\":
                continue
            if ch == quote:
                quote = None
        elif ch in "\"'":
            quote = ch
        elif ch == "#":
            return _comment(line[i:])
    return ""


def parse(text: str) -> list[Section]:
    """The sections of defaults.toml with their comments, in file order."""
    sections: list[Section] = []
    prose: list[str] = []
    last: Key | None = None
    depth = 0  # inside a value spread over several lines ([ ... ])
    for raw in text.splitlines():
        line = raw.rstrip()
        if depth:
            depth += line.count("[") - line.count("]")
            continue
        if not line.strip():
            last = None
            if prose:
                prose.append("")
            continue
        head = HEADER.match(line)
        if head:
            sections.append(Section(head.group(1)))
            prose, last = [], None
            continue
        if not sections:
            continue  # the file's own header comment
        if line.lstrip().startswith("#"):
            if last is not None and raw[:1].isspace():
                last.meaning.append(_comment(line))  # a key's comment continued below it
            else:
                last = None
                prose.append(_comment(line))
            continue
        key = KEY.match(line)
        if not key:
            raise ValueError(f"{DEFAULTS.name}: cannot read the line {line!r}")
        section = sections[-1]
        if any(p.strip() for p in prose):
            section.parts.append(" ".join(p for p in prose if p).split("\n"))
        prose = []
        last = Key(key.group(1), [c for c in [_inline_comment(line)] if c])
        if not section.parts or not isinstance(section.parts[-1][0], Key):
            section.parts.append([])
        section.parts[-1].append(last)  # type: ignore[arg-type]
        value = line.split("=", 1)[1]
        depth = max(0, value.count("[") - value.count("]"))
    return sections


def _value(data: dict, dotted: str):
    for part in dotted.split("."):
        data = data[part]
    return data


def _render_default(value) -> str:
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        text = f"{len(value)} entries"
    else:
        text = json.dumps(value, ensure_ascii=False, separators=(", ", " = ") if isinstance(value, dict) else (", ", ": "))
    if len(text) > LONG and isinstance(value, list):
        text = json.dumps(value[:2], ensure_ascii=False)[:-1] + f", ... ({len(value)} entries)]"
    return "`" + text.replace("|", "\\|") + "`"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def blocks_in_code() -> dict[str, list[str]]:
    """Section -> the dataclasses the code reads it as (``block(cfg, "extract.gate", GateSettings)``)."""
    found: dict[str, set[str]] = {}
    for path in sorted((REPO / "causalkg").rglob("*.py")):
        for section, cls in BLOCK_CALL.findall(path.read_text(encoding="utf-8")):
            found.setdefault(section, set()).add(cls)
    return {k: sorted(v) for k, v in found.items()}


def render() -> str:
    text = DEFAULTS.read_text(encoding="utf-8")
    data = tomllib.loads(text)
    typed = blocks_in_code()
    out = [
        "# Configuration reference",
        "",
        "<!-- generated by scripts/gen_config_docs.py from causalkg/core/defaults.toml; do not edit by hand -->",
        "",
        "Every key causalkg reads, by section, with its default, its allowed range (checked when the",
        "configuration loads) and what it does. Set a key in `causalkg.toml` (or `--config FILE`), with",
        "`--set section.key=value`, or for every command of a shell with `CAUSALKG_SET`; see",
        "[configuration.md](configuration.md) for how the layers combine. Sections marked *typed* are",
        "handed to their component as a frozen dataclass whose fields are exactly the section's keys",
        "(`causalkg.core.config.block`).",
        "",
        "| section | keys | typed as |",
        "|---|---|---|",
    ]
    sections = parse(text)
    for s in sections:
        n = sum(len(p) for p in s.parts if p and isinstance(p[0], Key))
        anchor = s.name.replace(".", "")
        out.append(f"| [`[{s.name}]`](#{anchor}) | {n} | {', '.join(f'`{c}`' for c in typed.get(s.name, [])) or ''} |")
    for s in sections:
        out += ["", f"## [{s.name}]", ""]
        if s.name in typed:
            out += [f"*Typed:* read in code as {', '.join(f'`{c}`' for c in typed[s.name])}.", ""]
        for part in s.parts:
            if part and isinstance(part[0], Key):
                out += ["| key | default | allowed | meaning |", "|---|---|---|---|"]
                for key in part:
                    dotted = f"{s.name}.{key.name}"
                    rng = range_of(dotted)
                    out.append(f"| `{key.name}` | {_render_default(_value(data, dotted))} | "
                               f"{rng.describe() if rng else ''} | {_cell(' '.join(key.meaning))} |")
                out.append("")
            else:
                out += [" ".join(line for line in part if line), ""]
    return "\n".join(out).rstrip() + "\n"


def main(argv: list[str] | None = None) -> int:
    return gendoc.main(OUT, render, __doc__.splitlines()[0], argv)


if __name__ == "__main__":
    sys.exit(main())
