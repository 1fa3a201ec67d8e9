"""bench scale's full-size estimates: elsewhere (``bench.bench_scale.elsewhere``), assembly counts
as a model stage only for its linking's share of its time, the rest stays serial in the driver;
the sample extraction's time is scaled per document without its one-off start and model load."""

from __future__ import annotations

import pytest

from bench.bench_scale import elsewhere, extrapolate, sample_estimate


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


def test_the_sample_extractions_model_load_is_counted_once():
    # 100 documents in 60 s of wall time (90 s CPU); the manifest's shard loop took 50 s (55 s in
    # all, 5 s of it loading): 10 s of start and load are paid once, 0.5 s per document.
    est = sample_estimate({"wall": 60.0, "cpu": 90.0}, {"total": 55.0, "load": 5.0}, 100)
    assert est["fixed_wall"] == pytest.approx(10.0) and est["doc_wall"] == pytest.approx(0.5)
    assert est["fixed_cpu"] == pytest.approx(15.0) and est["doc_cpu"] == pytest.approx(0.75)
    assert extrapolate(est, 100) == pytest.approx({"wall": 60.0, "cpu": 90.0})  # the sample itself
    assert extrapolate(est, 68_391)["wall"] == pytest.approx(10.0 + 0.5 * 68_391)
    # a manifest without timings: all of the time is per document, as before
    plain = sample_estimate({"wall": 60.0, "cpu": 90.0}, {}, 100)
    assert plain["fixed_wall"] == 0.0 and extrapolate(plain, 1000)["wall"] == pytest.approx(600.0)


def test_a_measured_gpu_rate_replaces_the_extraction_estimate(monkeypatch):
    import bench.bench_scale as bs

    rows = [_row("extract-qa (est.)"), _row("link")]
    monkeypatch.setattr(bs, "GPU_EXTRACT_DOC_S", 0.051)
    elsewhere(rows, ray_ratio=1.03)
    extract, link = rows
    assert extract["gpu_h"] == pytest.approx(0.051 * bs.FULL / 3600)  # 0.97 h: measured on an H100 machine
    assert extract["cluster_h"] == pytest.approx(extract["gpu_h"] / bs.CLUSTER_NODES * 1.03)
    estimated = [_row("link")]
    elsewhere(estimated, ray_ratio=1.03)
    assert link["gpu_h"] == pytest.approx(estimated[0]["gpu_h"])  # the other model stages stay estimated
