"""The same extractions on a CPU with fewer instruction sets, as far as the environment can limit
them without an emulator: PyTorch's vector code held at its default (no AVX) level
(``ATEN_CPU_CAPABILITY=default``), oneDNN at SSE4.1 (``DNNL_MAX_CPU_ISA=SSE41``) and MKL's code
path fixed (``MKL_CBWR=COMPATIBLE``). The shipped models (``modelpack/``) extract from three real
Wikipedia articles on PyTorch (``extract.backend = torch``), once as this CPU allows and once
limited, each in its own process: the two extraction files are identical byte for byte.

ONNX Runtime (the default backend) has no such variables; ``python -m bench isa`` runs the whole
extraction and assembly under an emulated CPU (qemu-user) instead, too slow for the suite
(docs/reliability.md, "The same KG on every CPU")."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from causalkg.core.config import load_config
from causalkg.kg.modelpack import install_models
from tests.conftest import FIXTURES, REPO

LIMITS = {"ATEN_CPU_CAPABILITY": "default", "DNNL_MAX_CPU_ISA": "SSE41", "MKL_CBWR": "COMPATIBLE"}


@pytest.fixture(scope="module")
def shipped(tmp_path_factory) -> Path:
    """A project folder with the shipped models installed into its own ``models/`` (never the repo's)."""
    root = tmp_path_factory.mktemp("isa")
    cfg = load_config(search_cwd=False, overrides={
        "extract.gate.model": str(root / "models" / "causal-gate"),
        "extract.qa.model": str(root / "models" / "causal-qa"),
        "kg.verifier.model": str(root / "models" / "causal-verifier"),
        "extract.model_package": str(REPO / "modelpack")})
    assert set(install_models(cfg).installed) == {"causal-gate", "causal-qa", "causal-verifier"}
    return root


def _extract(root: Path, name: str, env: dict[str, str]) -> tuple[bytes, str]:
    out = root / name / "extractions.jsonl"
    full = {**os.environ, "PYTHONPATH": str(REPO), "CAUSALKG_PROGRESS": "never", **env}
    for key in LIMITS:
        if key not in env:
            full.pop(key, None)
    r = subprocess.run([sys.executable, "-m", "causalkg.cli", "--quiet", "--set", f"paths.data={root / name}",
                        "--set", "extract.backend=torch", "kg", "extract",
                        "--input", str(FIXTURES / "extract" / "wiki_docs.jsonl"), "--out", str(out)],
                       cwd=root, env=full, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr
    probe = subprocess.run([sys.executable, "-c", "import torch; print(torch.backends.cpu.get_cpu_capability())"],
                           env=full, capture_output=True, text=True, timeout=300)
    return out.read_bytes(), probe.stdout.strip()


def test_extractions_are_identical_with_pytorch_held_to_sse(shipped):
    native, level = _extract(shipped, "native", {})
    limited, limited_level = _extract(shipped, "limited", LIMITS)
    assert limited_level == "DEFAULT"  # the limit took: ATen's vector code has no AVX
    assert native.count(b"\n") >= 5  # the real models extract pairs from these articles
    assert limited == native, f"ATen {level} and ATen {limited_level} extract differently"
