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
                    "kg export", "kg query", "kg stats", "kg summary", "eval recall", "eval precision",
                    "eval report", "eval soft", "eval elo", "eval meta", "eval align", "eval agreement",
                    "eval sqc", "eval consistency", "eval setup-wordnet", "config show"):
        assert f"## `causalkg {command}`" in text, command
