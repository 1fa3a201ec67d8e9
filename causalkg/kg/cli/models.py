"""``causalkg kg install-models``: a thin wrapper over ``kg.modelpack.install_models`` (same
name, same arguments)."""

from __future__ import annotations

import argparse
from typing import Any

from causalkg.cli import add_command
from causalkg.core.config import Config
from causalkg.options import add_force


def register(group: Any) -> None:
    """Add ``install-models`` to the ``kg`` group."""
    p = add_command(
        group, "install-models", _install_models,
        "install the shipped gate and QA models (models/causal-gate, models/causal-qa)",
        description=(
            "Verify the SHA-256 of every file of the model package (extract.model_package, default\n"
            "modelpack/), convert its float16 weights to float32 and write extract.gate_model and\n"
            "extract.qa_model as the trainers would. Models already installed from the same package\n"
            "are left as they are. 'make models' retrains both and rebuilds the package."
        ),
    )
    p.add_argument("--package", metavar="DIR", help="model package folder (default: extract.model_package)")
    add_force(p, "reinstall even when the models are already installed from this package")


def _install_models(args: argparse.Namespace, cfg: Config) -> int:
    from causalkg.kg.modelpack import install_models

    print(install_models(cfg, package=args.package, force=args.force).render())
    return 0
