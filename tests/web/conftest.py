"""Fixtures of the web tests (see kgfixture.py for the KG they use)."""

from __future__ import annotations

import pytest

from tests.web.kgfixture import build_project


@pytest.fixture(scope="session")
def kg_project(tmp_path_factory):
    """(root, cfg) of a data folder holding the fixture KG and its store (read-only: tests that
    write judgements pass their own judgements file)."""
    root = tmp_path_factory.mktemp("webkg")
    return root, build_project(root)
