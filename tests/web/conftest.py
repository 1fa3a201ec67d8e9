"""Fixtures of the web tests (see kgfixture.py for the KG they use)."""

from __future__ import annotations

import pytest
from starlette.testclient import TestClient

from causalkg.web.app import create_app
from tests.web.kgfixture import build_project


@pytest.fixture(scope="session")
def kg_project(tmp_path_factory):
    """(root, cfg) of a data folder holding the fixture KG and its store (read-only: tests that
    write judgements pass their own judgements file)."""
    root = tmp_path_factory.mktemp("webkg")
    return root, build_project(root)


@pytest.fixture
def client(kg_project, tmp_path):
    """A TestClient of the app over the fixture KG; its judgements go to its own file
    (``client.judgements``)."""
    _, cfg = kg_project
    with TestClient(create_app(cfg, judgements=str(tmp_path / "judgements.jsonl"))) as c:
        c.judgements = tmp_path / "judgements.jsonl"
        yield c
