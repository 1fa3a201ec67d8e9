"""The shipped model package: two functions of the Python API with their parsers.

- ``install_models`` / ``causalkg kg install-models`` (the work and ``InstallModelsResult``: ``kg.modelpack``)
- ``build_modelpack`` / ``causalkg kg build-modelpack`` (the work: ``kg.modelcard.make_model_package``;
  the result, ``BuildModelPackageResult``: ``kg.modelpack``)
"""

from __future__ import annotations

import argparse
from typing import Any

from causalkg.core.config import CfgLike, Config, PathLike, resolve_config
from causalkg.options import add_command, add_force, add_out


def install_models(*, package: PathLike | None = None, force: bool = False, cfg: CfgLike = None):
    """Install the shipped gate, QA and verifier models (``causalkg kg install-models``) from
    ``package`` (default extract.model_package) into extract.gate.model, extract.qa.model and
    kg.verifier.model, in float32,
    after checking every file's SHA-256. Returns ``kg.modelpack.InstallModelsResult``."""
    from causalkg.kg.modelpack import install_models as _install_models

    return _install_models(resolve_config(cfg), package=package, force=force)


def build_modelpack(*, gate: PathLike | None = None, qa: PathLike | None = None, verifier: PathLike | None = None,
                    out: PathLike | None = None, measure: bool = False, figures: PathLike | None = None,
                    cfg: CfgLike = None):
    """Make the model package (``causalkg kg build-modelpack``) at ``out`` (default
    extract.model_package) from the trained gate, QA and verifier folders (default
    extract.gate.model, extract.qa.model, kg.verifier.model): float16 weights, SHA-256 of every
    file, and MODEL_CARD.md. ``measure`` installs the package into a temporary folder and puts
    the validation figures of the packaged weights beside the trained ones into the card;
    ``figures`` reuses a JSON of such figures. Returns ``kg.modelpack.BuildModelPackageResult``."""
    from pathlib import Path

    from causalkg.kg.modelcard import make_model_package

    c = resolve_config(cfg)
    pick = lambda given, key: Path(given) if given is not None else c.path(key)  # noqa: E731
    return make_model_package(c, gate=pick(gate, "extract.gate.model"), qa=pick(qa, "extract.qa.model"),
                              verifier=pick(verifier, "kg.verifier.model"), out=pick(out, "extract.model_package"),
                              measure_figures=measure, figures=None if figures is None else Path(figures))


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


    p = add_command(
        group, "build-modelpack", _build_modelpack_cli,
        "make the model package (modelpack/) from the trained gate, QA and verifier models",
        description=(
            "Store the three trained model folders (extract.gate.model, extract.qa.model,\n"
            "kg.verifier.model) as a model package in float16 with the SHA-256 of every file and a\n"
            "MODEL_CARD.md, at --out (default extract.model_package). With --measure the package is\n"
            "installed into a temporary folder and the validation splits are scored with the packaged\n"
            "weights beside the trained ones; the figures go into the card. 'make models' trains the\n"
            "three models and runs this with --measure."
        ),
        skip=("--engine", "--force", "--allow-shrink"),
    )
    p.add_argument("--gate", metavar="DIR", help="trained gate folder (default: extract.gate.model)")
    p.add_argument("--qa", metavar="DIR", help="trained QA model folder (default: extract.qa.model)")
    p.add_argument("--verifier", metavar="DIR", help="trained verifier folder (default: kg.verifier.model)")
    add_out(p, "package folder to write (default: extract.model_package); replaced as a whole")
    p.add_argument("--measure", action="store_true",
                   help="score the validation splits with the packaged weights and put the figures in the card")
    p.add_argument("--figures", metavar="JSON", help="figures an earlier --measure printed, for the card (the same weights)")


def _build_modelpack_cli(args: argparse.Namespace, cfg: Config) -> int:
    print(build_modelpack(gate=args.gate, qa=args.qa, verifier=args.verifier, out=args.out, measure=args.measure,
                          figures=args.figures, cfg=cfg).render())
    return 0


def _install_models_cli(args: argparse.Namespace, cfg: Config) -> int:
    print(install_models(package=args.package, force=args.force, cfg=cfg).render())
    return 0


# What ``import causalkg as ck`` gives from this module (listed again in causalkg.COMMANDS).
__all__ = ["install_models", "build_modelpack"]
