"""The shipped model package: the trained gate, QA and pair-verifier models, stored in the
repository so that a first ``make kg`` installs them instead of training them.

The package is a folder (``extract.model_package``, default ``modelpack/``) holding one sub-folder
per model, laid out as the trainers write them, except that the transformer weights
(``*.safetensors``) are stored in float16 to halve their size. ``MANIFEST.json`` names the package
version, the SHA-256 and size of every file, and which weight files were stored in float16.

``install_models`` checks every checksum, converts the weights back to float32 and writes
``models/causal-gate``, ``models/causal-qa`` and ``models/causal-verifier`` (``extract.gate.model``,
``extract.qa.model``, ``kg.verifier.model``) atomically, with the training manifests as they are:
their training fingerprints are what ``train-gate``, ``train-qa`` and ``train-verifier`` with
``--if-missing`` compare, so those find the installed models current. ``build_model_package``
makes the package from trained model folders (``causalkg kg build-modelpack``, ``make models``; the
card and its measured figures are ``kg.modelcard``'s).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from causalkg.core.config import Config
from causalkg.core.errors import ModelError
from causalkg.core.jsonl import atomic_dir, atomic_write
from causalkg.core.manifest import read_manifest, write_manifest

PACKAGE_MANIFEST = "MANIFEST.json"
PACKAGE_VERSION = "1.1.0"  # of the package `causalkg kg build-modelpack` makes (modelpack/ holds this version)
PACKAGE_NAME = "causalkg-models"
# The models of the package: its sub-folder, the config key of the installed folder, and the
# files and folders copied (the ONNX export is a cache rebuilt at extraction, never shipped).
MODELS = {
    "causal-gate": "extract.gate.model",
    "causal-qa": "extract.qa.model",
    "causal-verifier": "kg.verifier.model",
}
SKIP_NAMES = {"onnx", "__pycache__"}
# The manifest stage of each model as its trainer writes it.
_STAGES = {"causal-gate": "kg.train-gate", "causal-qa": "kg.train-qa", "causal-verifier": "kg.train-verifier"}
INSTALLED_KEY = "installed_from"


@dataclass
class InstallModelsResult:
    """What ``install_models`` did: the folders written, or why each was skipped."""

    package: Path
    version: str
    installed: dict[str, Path] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)

    def render(self) -> str:
        lines = [f"model package {self.package} (version {self.version})"]
        for name, path in self.installed.items():
            lines.append(f"  {name}: installed to {path}")
        for name, reason in self.skipped.items():
            lines.append(f"  {name}: {reason}")
        return "\n".join(lines)


@dataclass
class BuildModelPackageResult:
    """What ``build_model_package`` wrote: the package folder, its version, files and bytes."""

    package: Path
    version: str
    files: int
    bytes: int
    measured: dict[str, Any] | None = None  # validation figures, trained beside packaged (``modelcard.measure``)

    def render(self) -> str:
        line = f"model package {self.package} (version {self.version}): {self.files} files, {self.bytes / 1e6:.1f} MB"
        return line if not self.measured else json.dumps(self.measured, indent=2) + "\n" + line


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _model_files(folder: Path) -> list[Path]:
    """The files of a trained model folder that the package carries, sorted, relative."""
    out = []
    for p in sorted(folder.rglob("*")):
        rel = p.relative_to(folder)
        if p.is_file() and not any(part in SKIP_NAMES or part.startswith(".") for part in rel.parts):
            out.append(rel)
    return out


def _convert_safetensors(src: Path, dst: Path, *, to: str) -> None:
    """Copy a safetensors file with its floating tensors cast to ``to`` (float16 or float32);
    integer tensors and the file's metadata are kept."""
    import torch
    from safetensors import safe_open
    from safetensors.torch import save_file

    dtype = {"float16": torch.float16, "float32": torch.float32}[to]
    with safe_open(str(src), framework="pt") as fh:
        metadata = fh.metadata()
        tensors = {k: fh.get_tensor(k) for k in fh.keys()}
    tensors = {k: (v.to(dtype).contiguous() if v.is_floating_point() else v) for k, v in tensors.items()}
    save_file(tensors, str(dst), metadata=metadata)


def read_package_manifest(package: Path) -> dict[str, Any]:
    path = package / PACKAGE_MANIFEST
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ModelError(f"{path} not found: no model package there (set extract.model_package, "
                         f"or train the models with 'make models')") from None
    except json.JSONDecodeError as exc:
        raise ModelError(f"{path} is not valid JSON ({exc.msg}); restore it with 'git checkout -- {package}'") from None
    if manifest.get("package") != PACKAGE_NAME or not isinstance(manifest.get("files"), dict):
        raise ModelError(f"{path} is not a {PACKAGE_NAME} manifest")
    return manifest


def verify_package(package: Path, manifest: dict[str, Any]) -> None:
    """Check the size and SHA-256 of every file the manifest lists; the first mismatch raises a
    one-line ``ModelError`` naming the file."""
    for rel, want in sorted(manifest["files"].items()):
        path = package / rel
        if not path.is_file():
            raise ModelError(f"model package file {path} is missing; restore it with 'git checkout -- {package}'")
        if path.stat().st_size != want["bytes"] or sha256_file(path) != want["sha256"]:
            raise ModelError(f"model package file {path} does not match its SHA-256 in {PACKAGE_MANIFEST}; "
                             f"restore it with 'git checkout -- {package}' or rebuild it with 'make models'")


def _package_id(package: Path) -> str:
    return sha256_file(package / PACKAGE_MANIFEST)


def _is_installed(target: Path, package_id: str) -> bool:
    manifest = read_manifest(target)
    return bool(manifest) and manifest.get(INSTALLED_KEY, {}).get("manifest_sha256") == package_id


def _is_foreign(target: Path, name: str) -> bool:
    """Whether ``target`` exists and holds something other than a causalkg model of this kind
    (a model of the user's own, pointed to by the config): never overwritten without ``force``."""
    if not target.exists():
        return False
    manifest = read_manifest(target) or {}
    return manifest.get("stage") != _STAGES[name]


def _install_one(package: Path, name: str, manifest: dict[str, Any], target: Path, package_id: str) -> None:
    """Write one model folder from the package: a temporary sibling, then two renames."""
    prefix = f"{name}/"
    half = set(manifest.get("float16", []))
    with atomic_dir(target) as tmp:
        for rel in sorted(r for r in manifest["files"] if r.startswith(prefix)):
            inner = rel[len(prefix):]
            if inner == "manifest.json":
                continue
            dst = tmp / inner
            dst.parent.mkdir(parents=True, exist_ok=True)
            if rel in half:
                _convert_safetensors(package / rel, dst, to="float32")
            else:
                shutil.copyfile(package / rel, dst)
        trained = json.loads((package / prefix / "manifest.json").read_text(encoding="utf-8"))
        trained[INSTALLED_KEY] = {"package": PACKAGE_NAME, "version": manifest["version"],
                                  "manifest_sha256": package_id,
                                  "weights": "float16 in the package, float32 here"}
        write_manifest(tmp, trained)


def install_models(cfg: Config, *, package: str | os.PathLike | None = None, force: bool = False) -> InstallModelsResult:
    """Install the shipped models from ``package`` (default ``extract.model_package``) into
    ``extract.gate.model``, ``extract.qa.model`` and ``kg.verifier.model``, in float32.

    Every file's checksum is verified first (``ModelError`` naming the first bad file). A model
    folder already installed from the same package is left as it is, and so is a folder holding
    something causalkg did not make (a model of your own), unless ``force``; a model trained
    here by ``train-gate`` / ``train-qa`` / ``train-verifier`` is replaced by the package's."""
    pkg = Path(package) if package is not None else cfg.input_path("extract.model_package")
    if pkg is None:
        raise ModelError("extract.model_package is empty: name the model package folder")
    manifest = read_package_manifest(pkg)
    package_id = _package_id(pkg)
    result = InstallModelsResult(pkg, str(manifest.get("version")))
    todo = {}
    for name, key in MODELS.items():
        target = cfg.path(key)
        if f"{name}/manifest.json" not in manifest.get("files", {}):
            # an older or partial package: the model is trained here, or the step using it is off
            result.skipped[name] = f"the package holds no {name} ('make models' builds one that does)"
        elif not force and _is_installed(target, package_id):
            result.skipped[name] = f"{target} is already installed from this package"
        elif not force and _is_foreign(target, name):
            result.skipped[name] = f"{target} holds a model not made by causalkg; left as it is (--force replaces it)"
        else:
            todo[name] = target
    if not todo:
        return result
    verify_package(pkg, manifest)
    for name, target in todo.items():
        _install_one(pkg, name, manifest, target, package_id)
        result.installed[name] = target
    return result


def build_model_package(models: dict[str, str | os.PathLike], out: str | os.PathLike, *, version: str,
                        model_card: str | None = None) -> BuildModelPackageResult:
    """Make a model package at ``out`` from trained model folders (``{"causal-gate": dir,
    "causal-qa": dir, "causal-verifier": dir}``): safetensors weights stored in float16, every
    other file copied, the ONNX cache left out, ``MANIFEST.json`` written last. ``model_card``: the text of
    ``MODEL_CARD.md``. The folder is replaced as a whole (temporary sibling, then renames)."""
    out = Path(out)
    files: dict[str, dict[str, Any]] = {}
    half: list[str] = []
    with atomic_dir(out) as tmp:
        for name, folder in models.items():
            if name not in MODELS:
                raise ModelError(f"unknown model {name!r}; the package holds {', '.join(MODELS)}")
            src = Path(folder)
            if read_manifest(src) is None:
                raise ModelError(f"{src} holds no manifest.json: not a model trained by causalkg")
            for rel in _model_files(src):
                dst = tmp / name / rel
                dst.parent.mkdir(parents=True, exist_ok=True)
                if rel.suffix == ".safetensors":
                    _convert_safetensors(src / rel, dst, to="float16")
                    half.append(f"{name}/{rel.as_posix()}")
                else:
                    shutil.copyfile(src / rel, dst)
        if model_card is not None:
            (tmp / "MODEL_CARD.md").write_text(model_card, encoding="utf-8")
        for p in sorted(tmp.rglob("*")):
            if p.is_file():
                files[p.relative_to(tmp).as_posix()] = {"sha256": sha256_file(p), "bytes": p.stat().st_size}
        manifest = {"package": PACKAGE_NAME, "version": version, "models": sorted(models),
                    "float16": sorted(half), "files": files}
        _write_package_manifest(tmp, manifest)
    return _built(out, manifest)


def _write_package_manifest(folder: Path, manifest: dict[str, Any]) -> None:
    with atomic_write(folder / PACKAGE_MANIFEST) as fh:
        json.dump(manifest, fh, indent=2, sort_keys=True)
        fh.write("\n")


def _built(package: Path, manifest: dict[str, Any]) -> BuildModelPackageResult:
    """What a package holds: its files (the manifest too) and their bytes."""
    files = manifest["files"]
    return BuildModelPackageResult(package, str(manifest["version"]), len(files) + 1,
                                   sum(f["bytes"] for f in files.values()) + (package / PACKAGE_MANIFEST).stat().st_size)


def write_model_card(package: str | os.PathLike, text: str) -> BuildModelPackageResult:
    """Replace the ``MODEL_CARD.md`` of a package made by ``build_model_package`` and its entry in
    ``MANIFEST.json`` (each written atomically; every other file stays as it is)."""
    package = Path(package)
    manifest = read_package_manifest(package)
    card = package / "MODEL_CARD.md"
    with atomic_write(card) as fh:
        fh.write(text)
    manifest["files"]["MODEL_CARD.md"] = {"sha256": sha256_file(card), "bytes": card.stat().st_size}
    _write_package_manifest(package, manifest)
    return _built(package, manifest)


__all__ = ["install_models", "build_model_package", "write_model_card", "verify_package", "InstallModelsResult", "BuildModelPackageResult"]
