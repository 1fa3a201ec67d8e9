"""docs/cli.md is the CLI reference the README points to: it must match the parsers."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import REPO


def test_cli_reference_is_current():
    r = subprocess.run([sys.executable, str(REPO / "scripts" / "gen_cli_docs.py"), "--check"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr + " (run make docs)"


def test_every_command_is_in_the_reference():
    text = (REPO / "docs" / "cli.md").read_text(encoding="utf-8")
    for command in ("corpus build", "link build", "link query", "kg train-qa", "kg extract", "kg assemble",
                    "kg export", "kg query", "kg stats", "kg summary", "kg install-models", "kg build-modelpack", "eval recall", "eval precision",
                    "eval report", "eval soft", "eval elo", "eval meta", "eval align", "eval agreement",
                    "eval sqc", "eval consistency", "eval setup-wordnet", "config show"):
        assert f"## `causalkg {command}`" in text, command


def test_config_reference_is_current_and_covers_every_key():
    """docs/config-reference.md is generated from defaults.toml: stale means a key changed."""
    r = subprocess.run([sys.executable, str(REPO / "scripts" / "gen_config_docs.py"), "--check"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr + " (run make docs)"
    text = (REPO / "docs" / "config-reference.md").read_text(encoding="utf-8")
    from causalkg.core.config import load_config
    from causalkg.core.ranges import range_of

    cfg = load_config(search_cwd=False)
    assert "| `threshold` | `0.5` | a finite number <= 1 |" in text  # [kg.verifier]: default and range
    assert "*Typed:* read in code as `GateSettings`." in text
    for section in ("paths", "run", "extract.gate", "extract.qa.train", "kg.verifier", "eval.sqc", "web"):
        assert f"## [{section}]" in text, section
    assert range_of("kg.verifier.threshold") is not None and cfg.get("kg.verifier.threshold") == 0.5
