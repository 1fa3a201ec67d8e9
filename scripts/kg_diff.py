"""Compare the KG outputs of two data folders: ``python scripts/kg_diff.py A B`` (``A`` and ``B``
are ``paths.data`` folders, e.g. two copies of ``data/``). Exits 0 when they hold the same KG,
1 (after printing every difference) when they do not, 2 on a usage error.

What is compared, file by file:

- ``kg/``: every file of the current generation (``causal_kg_pairs.jsonl``, ``causal_kg.jsonl``,
  ``causal_kg.ttl``, ``nt/*.nt``, ``causal_kg.graphml``, ``manifest.json``), the linked
  checkpoints in ``kg/linked/``, the other files at the top of ``kg/`` (the extractions and their
  manifest), and where the documented links (``kg/causal_kg.jsonl`` ...) point;
- ``store/`` (when present): its manifest (graphs and their triple counts, fingerprint), and, when
  pyoxigraph can open it, every quad of the store.

Data files are compared byte for byte (the first differing lines are shown). JSON files (the
manifests, ``*.done.json``) are compared as JSON after leaving out only what legitimately varies
between two runs of the same build: ``created`` (timestamps), ``timings_s`` (timings),
``generation`` (generation ids, also inside paths), the absolute path of each data folder (as
given, and as its manifests recorded it: a copied folder names the one it was built in), of its
parent and of ``paths.models``, and in the store's manifest the checksum and size
of the KG manifest it was loaded from (that file holds timestamps). Lock files are not compared.
"""

from __future__ import annotations

import argparse
import difflib
import json
import re
import sys
from pathlib import Path
from typing import Any, Iterator

VOLATILE_KEYS = {"created", "timings_s", "generation"}
GENERATION_ID = re.compile(r"\d{8}T\d{6}\.\d+Z-[0-9a-f]+")
LOCKS = {".writer.lock", ".readers.lock"}
KG_LINKS = ("causal_kg_pairs.jsonl", "causal_kg.jsonl", "causal_kg.ttl", "nt", "causal_kg.graphml", "manifest.json")


class Folder:
    """One data folder and how to make its JSON comparable with another's."""

    def __init__(self, path: Path) -> None:
        self.path = path
        roots: dict[str, str] = {}
        # The folder as given and as resolved, and the folders its manifests recorded at build
        # time (a copied folder still names the one it was built in).
        for data in (path.absolute(), path.resolve(), *self._recorded("data")):
            roots.setdefault(str(data), "<data>")
            roots.setdefault(str(data.parent), "<root>")
        for models in self._recorded("models"):
            roots.setdefault(str(models), "<models>")
        roots.pop("/", None)
        self.roots = sorted(roots.items(), key=lambda kv: -len(kv[0]))  # the longest first

    def _recorded(self, key: str) -> list[Path]:
        out = []
        for m in (self.path / "kg" / "manifest.json", self.path / "store" / "manifest.json"):
            try:
                value = json.loads(m.read_text("utf-8"))["config"]["paths"][key]
            except (OSError, ValueError, KeyError, TypeError):
                continue
            if isinstance(value, str) and Path(value).is_absolute():
                out.append(Path(value))
        return out

    def kg_files(self) -> dict[str, Path]:
        """Relative name -> file, for every KG file compared (see the module docstring)."""
        kg = self.path / "kg"
        current = kg / "current"
        gen = current if current.is_dir() else kg
        out: dict[str, Path] = {}
        for p in _files(gen):
            out[f"kg/{p.relative_to(gen).as_posix()}"] = p
        if gen is not kg:
            for p in sorted(kg.iterdir()):
                if p.is_file() and not p.is_symlink() and p.name not in LOCKS:
                    out[f"kg/{p.name}"] = p
        if (kg / "linked").is_dir():
            for p in _files(kg / "linked"):
                out[f"kg/linked/{p.relative_to(kg / 'linked').as_posix()}"] = p
        return out

    def links(self) -> dict[str, str]:
        """Where the documented paths of ``kg/`` point (generation ids left out)."""
        kg = self.path / "kg"
        return {name: GENERATION_ID.sub("<generation>", str((kg / name).readlink()))
                for name in ("current", *KG_LINKS) if (kg / name).is_symlink()}

    def normalise(self, obj: Any, *, top: bool = True) -> Any:
        if isinstance(obj, dict):
            return {k: self.normalise(v, top=False) for k, v in obj.items() if not (top and k in VOLATILE_KEYS)}
        if isinstance(obj, list):
            return [self.normalise(v, top=False) for v in obj]
        if isinstance(obj, str):
            for root, name in self.roots:
                obj = obj.replace(root, name)
            return GENERATION_ID.sub("<generation>", obj)
        return obj


def _files(folder: Path) -> Iterator[Path]:
    for p in sorted(folder.rglob("*")):
        if p.is_file() and p.name not in LOCKS:
            yield p


def _text_diff(a: Path, b: Path, name: str, limit: int = 12) -> list[str]:
    la = a.read_text(encoding="utf-8", errors="replace").splitlines()
    lb = b.read_text(encoding="utf-8", errors="replace").splitlines()
    out = [f"differs: {name} ({len(la)} lines against {len(lb)})"]
    for i, line in enumerate(difflib.unified_diff(la, lb, "A/" + name, "B/" + name, n=0, lineterm="")):
        if i >= limit:
            out.append("  ...")
            break
        out.append("  " + (line if len(line) <= 300 else line[:300] + " ..."))
    return out


def _json_diff(x: Any, y: Any, where: str = "") -> Iterator[str]:
    if isinstance(x, dict) and isinstance(y, dict):
        for k in sorted(set(x) | set(y), key=str):
            if k not in x or k not in y:
                yield f"{where}.{k}: only in {'A' if k in x else 'B'}"
            else:
                yield from _json_diff(x[k], y[k], f"{where}.{k}")
    elif isinstance(x, list) and isinstance(y, list) and len(x) == len(y):
        for i, (u, v) in enumerate(zip(x, y)):
            yield from _json_diff(u, v, f"{where}[{i}]")
    elif x != y:
        yield f"{where or '.'}: {json.dumps(x)[:200]} != {json.dumps(y)[:200]}"


def _compare_json(fa: Folder, fb: Folder, a: Path, b: Path, name: str, drop: tuple[str, ...] = ()) -> list[str]:
    try:
        ja, jb = fa.normalise(json.loads(a.read_text("utf-8"))), fb.normalise(json.loads(b.read_text("utf-8")))
    except ValueError:
        return [] if a.read_bytes() == b.read_bytes() else _text_diff(a, b, name)
    for path in drop:
        for j in (ja, jb):
            *parents, last = path.split(".")
            for p in parents:
                j = j.get(p, {}) if isinstance(j, dict) else {}
            if isinstance(j, dict):
                j.pop(last, None)
    found = list(_json_diff(ja, jb))
    return [f"differs: {name}"] + ["  " + d for d in found[:20]] if found else []


def compare_kg(fa: Folder, fb: Folder) -> tuple[list[str], int]:
    diffs: list[str] = []
    a_files, b_files = fa.kg_files(), fb.kg_files()
    if not a_files and not b_files:
        return ["no KG in either folder (kg/ is missing or empty)"], 0
    for name in sorted(set(a_files) | set(b_files)):
        if name not in a_files or name not in b_files:
            diffs.append(f"only in {'A' if name in a_files else 'B'}: {name}")
            continue
        a, b = a_files[name], b_files[name]
        if name.endswith(".json") or name.endswith(".published"):  # .published: the generations, in JSON
            diffs += _compare_json(fa, fb, a, b, name)
        elif a.read_bytes() != b.read_bytes():
            diffs += _text_diff(a, b, name)
    la, lb = fa.links(), fb.links()
    if la != lb:
        diffs.append(f"differs: the links of kg/: {la} != {lb}")
    return diffs, len(set(a_files) & set(b_files))


def _store_quads(folder: Path) -> list[str] | None:
    """Every quad of the store, sorted, or None when it cannot be read here."""
    db = folder / "store" / "oxigraph"
    if not db.is_dir():
        return None
    try:
        import pyoxigraph
    except ImportError:
        return None
    store = pyoxigraph.Store.read_only(str(db))
    return sorted(f"{q.subject} {q.predicate} {q.object} {q.graph_name}" for q in store)


def compare_store(fa: Folder, fb: Folder) -> tuple[list[str], str]:
    """The differences of the stores, and what was compared (for the summary line)."""
    ma, mb = fa.path / "store" / "manifest.json", fb.path / "store" / "manifest.json"
    if not ma.is_file() and not mb.is_file():
        return [], "no store"
    if not ma.is_file() or not mb.is_file():
        return [f"only in {'A' if ma.is_file() else 'B'}: store/manifest.json"], ""
    diffs = _compare_json(fa, fb, ma, mb, "store/manifest.json",
                          drop=("inputs.kg_manifest.sha256", "inputs.kg_manifest.bytes"))
    qa, qb = _store_quads(fa.path), _store_quads(fb.path)
    if qa is not None and qb is not None and qa != qb:
        diffs.append(f"differs: the store's quads ({len(qa)} against {len(qb)})")
        only_a, only_b = sorted(set(qa) - set(qb)), sorted(set(qb) - set(qa))
        diffs += [f"  only in A: {q[:300]}" for q in only_a[:5]] + [f"  only in B: {q[:300]}" for q in only_b[:5]]
    return diffs, "store manifest" if qa is None or qb is None else f"store manifest and {len(qa)} quads"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("a", type=Path, help="a data folder (paths.data)")
    ap.add_argument("b", type=Path, help="the other data folder")
    args = ap.parse_args(argv)
    for p in (args.a, args.b):
        if not p.is_dir():
            print(f"error: not a folder: {p}", file=sys.stderr)
            return 2
    fa, fb = Folder(args.a), Folder(args.b)
    diffs, n_files = compare_kg(fa, fb)
    store_diffs, store = compare_store(fa, fb)
    diffs += store_diffs
    for line in diffs:
        print(line)
    if diffs:
        print(f"{sum(1 for d in diffs if not d.startswith('  '))} difference(s) between {args.a} and {args.b}")
        return 1
    print(f"identical: {n_files} KG files; {store} ({args.a} and {args.b})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
