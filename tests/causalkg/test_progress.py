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
