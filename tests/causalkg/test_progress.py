"""causalkg.core.progress: bars on a terminal, silence in pipes and CI, and the switch that overrides both."""

from __future__ import annotations

import io

import pytest

from causalkg.core.progress import progress, progress_enabled


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def unset(monkeypatch):
    monkeypatch.delenv("CAUSALKG_PROGRESS", raising=False)  # the suite sets it to never
    monkeypatch.delenv("CI", raising=False)
    return monkeypatch


def test_auto_means_a_terminal_and_not_ci(unset):
    unset.setattr("sys.stderr", _Tty())
    assert progress_enabled("auto") and progress_enabled(None)
    unset.setenv("CI", "true")
    assert not progress_enabled("auto")
    unset.delenv("CI")
    unset.setattr("sys.stderr", io.StringIO())  # a pipe
    assert not progress_enabled("auto")


def test_always_never_and_the_environment_wins(unset):
    unset.setattr("sys.stderr", io.StringIO())
    assert progress_enabled("always") and not progress_enabled("never")
    unset.setenv("CAUSALKG_PROGRESS", "never")
    assert not progress_enabled("always")
    unset.setenv("CAUSALKG_PROGRESS", "ALWAYS")
    assert progress_enabled("never")


def test_the_bar_draws_on_stderr_only_when_enabled(unset):
    err = io.StringIO()
    unset.setattr("sys.stderr", err)
    with progress(total=3, desc="shards", mode="never") as bar:
        bar.update(3)
    assert err.getvalue() == "" and bar.disable
    with progress(total=3, desc="shards", mode="always") as bar:
        bar.update(3)
    # the first draw is made at once; later redraws depend on tqdm's clock, so only it is checked
    assert "shards:" in err.getvalue() and "0/3" in err.getvalue() and bar.n == 3
    assert list(progress(range(4), mode="never")) == [0, 1, 2, 3]  # wraps an iterable unchanged


def test_away_from_a_terminal_the_bar_is_a_plain_line_each_interval(unset):
    err = io.StringIO()
    unset.setattr("sys.stderr", err)
    unset.setenv("CAUSALKG_PROGRESS_INTERVAL", "0")  # a line at every update
    with progress(total=4, desc="extracting", unit="doc") as bar:
        bar.update(1)
        bar.update(3)
    lines = err.getvalue().splitlines()
    assert "\r" not in err.getvalue() and lines[-1].startswith("extracting: 4/4 doc (100%) [")
    assert "extracting: 1/4 doc (25%) [" in lines[1] and "doc/s]" in lines[1]  # counts, elapsed<ETA, rate
    err.truncate(0), err.seek(0)
    bar = progress(desc="linking shards", unit="shard")  # no total: counts and rate only
    bar.update(2)
    bar.close()
    assert err.getvalue().splitlines()[-1].startswith("linking shards: 2 shard [")


def test_a_short_run_away_from_a_terminal_adds_nothing(unset):
    err = io.StringIO()
    unset.setattr("sys.stderr", err)
    unset.setenv("CAUSALKG_PROGRESS_INTERVAL", "3600")  # nothing lasts an hour here
    with progress(total=2, desc="shards") as bar:
        bar.update(2)
    assert err.getvalue() == ""


def test_quiet_wins_over_the_environment_and_any_callers_mode(unset):
    from causalkg.core.progress import progress_for_command, progress_style

    unset.setattr("sys.stderr", io.StringIO())
    unset.setenv("CAUSALKG_PROGRESS", "always")
    with progress_for_command(quiet=True, configured="always"):
        assert progress_style("always") == progress_style(None) == "off"
    assert progress_style(None) == "bar"  # put back
    unset.delenv("CAUSALKG_PROGRESS")
    with progress_for_command(configured="never"):  # run.progress: for the bars that name no mode
        assert progress_style(None) == "off" and progress_style("lines") == "lines"
    assert progress_style(None) == "lines"


def test_make_kg_ends_with_the_next_commands_to_try():
    import shutil
    import subprocess
    from pathlib import Path

    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    repo = Path(__file__).resolve().parents[2]
    import os

    # run as from a shell, also under `make test` (whose MAKELEVEL would make it print directories)
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS", "MAKEOVERRIDES")}
    plan = subprocess.run(["make", "--no-print-directory", "-n", "kg"], cwd=repo, capture_output=True, text=True,
                          timeout=120, env=env)
    assert plan.returncode == 0, plan.stderr
    last = plan.stdout.strip().splitlines()[-1]
    assert "make serve" in last and "make eval" in last
