"""bench scale's full-size estimates elsewhere (``bench.bench_scale.elsewhere``): assembly counts
as a model stage only for its linking's share of its time; the rest stays serial in the driver."""

from __future__ import annotations

import pytest

from bench.bench_scale import elsewhere


def _row(stage, part=None):
    r = {"stage": stage, "wall_h": 2.0, "cpu_h": 2.6}
    if part is not None:
        r["model_part"] = part
    return r


def test_assembly_is_serial_only_for_what_is_not_linking():
    rows = [_row("export"), _row("link"), _row("assemble", 0.0), _row("assemble", 1.0), _row("assemble", 0.9)]
    elsewhere(rows, ray_ratio=1.03)
    export, link, none, whole, most = rows
    # a serial stage and an assembly with no linking keep their 2-core time everywhere
    assert export["gpu_h"] == export["cluster_h"] == 2.0
    assert none["gpu_h"] == none["cluster_h"] == 2.0
    # an assembly that is all linking costs what a model stage of the same times costs
    assert whole["gpu_h"] == pytest.approx(link["gpu_h"]) and whole["cluster_h"] == pytest.approx(link["cluster_h"])
    assert whole["gpu_h"] < 0.2 and whole["cluster_h"] < whole["gpu_h"]
    # in between: the serial tenth bounds it from below on any number of nodes
    assert most["cluster_h"] > 0.2 and most["gpu_h"] == pytest.approx(0.9 * link["gpu_h"] + 0.2)
