"""``manifest.json``: what made an output folder.

Every stage writes one beside its outputs: the stage name, the tool version, the resolved
configuration, checksums of its inputs, model ids, counts, timings and notes (what could not be
computed, and why). Stages also read manifests to decide whether a step can be skipped: when the
inputs' checksums and the relevant configuration are unchanged, the outputs are current.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import platform
import sys
from pathlib import Path
from typing import Any, Mapping

from causalkg.core import __version__
from causalkg.core.config import Config
from causalkg.core.jsonl import atomic_write

MANIFEST_NAME = "manifest.json"


def file_sha256(path: str | os.PathLike, chunk: int = 1 << 20) -> str:
    """Hex SHA-256 of a file's bytes, read in 1 MiB chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while True:
            block = fh.read(chunk)
            if not block:
                break
            h.update(block)
    return h.hexdigest()


def describe_input(path: str | os.PathLike) -> dict[str, Any]:
    """Path, size and SHA-256 of an input file (or of every file in a folder, sorted)."""
    p = Path(path)
    if p.is_dir():
        h = hashlib.sha256()
        size = 0
        for f in sorted(x for x in p.rglob("*") if x.is_file()):
            h.update(str(f.relative_to(p)).encode())
            h.update(file_sha256(f).encode())
            size += f.stat().st_size
        return {"path": str(p), "bytes": size, "sha256": h.hexdigest()}
    return {"path": str(p), "bytes": p.stat().st_size, "sha256": file_sha256(p)}


def now_iso() -> str:
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat()


def build_manifest(
    stage: str,
    cfg: Config | Mapping[str, Any] | None,
    *,
    inputs: Mapping[str, str | os.PathLike] | None = None,
    outputs: Mapping[str, Any] | None = None,
    counts: Mapping[str, Any] | None = None,
    timings: Mapping[str, float] | None = None,
    models: Mapping[str, Any] | None = None,
    notes: list[str] | None = None,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Assemble a manifest dict. Inputs are described by path, size and SHA-256."""
    config = cfg.to_dict() if isinstance(cfg, Config) else (dict(cfg) if cfg else {})
    manifest: dict[str, Any] = {
        "stage": stage,
        "tool": "causalkg",
        "version": __version__,
        "created": now_iso(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "config": config,
        "inputs": {k: describe_input(v) for k, v in (inputs or {}).items()},
        "outputs": dict(outputs or {}),
        "models": dict(models or {}),
        "counts": dict(counts or {}),
        "timings_s": {k: round(float(v), 3) for k, v in (timings or {}).items()},
        "notes": list(notes or []),
    }
    if extra:
        manifest.update(extra)
    return manifest


def write_manifest(folder: str | os.PathLike, manifest: Mapping[str, Any]) -> Path:
    """Write ``folder/manifest.json`` atomically and return its path."""
    path = Path(folder) / MANIFEST_NAME
    with atomic_write(path) as fh:
        json.dump(manifest, fh, ensure_ascii=False, indent=2)
        fh.write("\n")
    return path


def read_manifest(folder: str | os.PathLike) -> dict[str, Any] | None:
    """The manifest of a folder, or None when there is none (or it is unreadable)."""
    path = Path(folder) / MANIFEST_NAME
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except (FileNotFoundError, json.JSONDecodeError):
        return None


def fingerprint(*parts: Any) -> str:
    """A stable SHA-256 of JSON-serialisable parts: for cache keys and up-to-date checks."""
    text = json.dumps(parts, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def trained_model_is_current(folder: str | os.PathLike, plan_fingerprint: str, stage: str) -> tuple[bool, str]:
    """Whether ``folder`` holds a Hugging Face model that ``stage`` trained with this plan
    fingerprint (and why not). A folder causalkg did not train (no manifest of ``stage``) counts as
    current: it is the user's own model, left as it is."""
    folder = Path(folder)
    if not folder.is_dir():
        return False, f"{folder} does not exist"
    manifest = read_manifest(folder)
    if manifest is None or manifest.get("stage") != stage:
        return True, f"{folder} exists and was not trained by causalkg; left as it is"
    if manifest.get("training", {}).get("fingerprint") != plan_fingerprint:
        return False, f"{folder} was trained with other data or settings"
    if not any((folder / n).is_file() for n in ("model.safetensors", "pytorch_model.bin")):
        return False, f"{folder} has a manifest but no weights"
    return True, f"{folder} is current (training fingerprint {plan_fingerprint[:12]})"

