"""scripts/tune_extract.py chooses decoding settings on the validation split only."""

from __future__ import annotations

import importlib.util
import json

import pytest

from tests.conftest import REPO


def _script():
    spec = importlib.util.spec_from_file_location("tune_extract", REPO / "scripts" / "tune_extract.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_it_reads_the_validation_split_never_the_test_split():
    mod = _script()
    val = mod.validation_records()
    assert val and all(r["source"] == "cnc" and r["causal"] and r["relations"] for r in val)
    test_ids = {json.loads(x)["id"] for x in (REPO / "snapshots" / "qa-training" / "test.jsonl").read_text().splitlines()}
    assert not {r["id"] for r in val} & test_ids
    assert mod.VAL.name == "val.jsonl"
    # every setting of the default grid is a valid override of the extract section
    from causalkg.core.config import load_config

    for over in mod.DEFAULT_GRID:
        load_config(search_cwd=False, overrides=over)


def test_a_grid_that_is_not_a_list_of_objects_is_refused():
    with pytest.raises(SystemExit) as e:
        _script().main(["--grid", '{"extract.qa.max_causes": 2}'])
    assert e.value.code == 2
