"""``install_models`` and ``causalkg kg install-models``: the function of the Python API and its
parser (the work and its result, ``InstallModelsResult``, are ``kg.modelpack``'s)."""

from __future__ import annotations

import argparse
from typing import Any

from causalkg.core.config import CfgLike, Config, PathLike, resolve_config
from causalkg.options import add_command, add_force


def install_models(*, package: PathLike | None = None, force: bool = False, cfg: CfgLike = None):
    """Install the shipped gate, QA and verifier models (``causalkg kg install-models``) from
    ``package`` (default extract.model_package) into extract.gate.model, extract.qa.model and
    kg.verifier.model, in float32,
    after checking every file's SHA-256. Returns ``kg.modelpack.InstallModelsResult``."""
    from causalkg.kg.modelpack import install_models as _install_models

    return _install_models(resolve_config(cfg), package=package, force=force)


# --- the command line ----------------------------------------------------------------------


def register(group: Any) -> None:
    """Add ``install-models`` to the ``kg`` group."""
    p = add_command(
        group, "install-models", _install_models_cli,
        "install the shipped gate, QA and verifier models (models/causal-gate, causal-qa, causal-verifier)",
        description=(
            "Verify the SHA-256 of every file of the model package (extract.model_package, default\n"
            "modelpack/), convert its float16 weights to float32 and write extract.gate.model,\n"
            "extract.qa.model and kg.verifier.model as the trainers would. Models already installed\n"
            "from the same package are left as they are. 'make models' retrains the three and\n"
            "rebuilds the package."
        ),
    )
    p.add_argument("--package", metavar="DIR", help="model package folder (default: extract.model_package)")
    add_force(p, "reinstall even when the models are already installed from this package")


def _install_models_cli(args: argparse.Namespace, cfg: Config) -> int:
    print(install_models(package=args.package, force=args.force, cfg=cfg).render())
    return 0


# What ``import causalkg as ck`` gives from this module (listed again in causalkg.COMMANDS).
__all__ = ["install_models"]
