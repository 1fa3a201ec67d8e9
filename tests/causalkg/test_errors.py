"""Errors cross process boundaries whole: a worker process's or a Ray actor's error reaches the
command with its hint and any attribute of its class."""

from __future__ import annotations

import pickle

from causalkg.core.errors import CausalKGError, ModelError
from causalkg.web.sparql import QueryError


def test_errors_pickle_with_their_hint_and_attributes():
    err = pickle.loads(pickle.dumps(ModelError("cannot load the QA model in /x", hint="train one")))
    assert type(err) is ModelError and err.message == "cannot load the QA model in /x" and err.hint == "train one"
    assert str(err) == "cannot load the QA model in /x (train one)"
    q = pickle.loads(pickle.dumps(QueryError("SERVICE refused", status=403, hint="--allow-service")))
    assert (type(q), q.status, q.hint, q.args) == (QueryError, 403, "--allow-service", ("SERVICE refused",))
    assert isinstance(pickle.loads(pickle.dumps(CausalKGError("plain"))), CausalKGError)


def test_an_unexpected_exception_is_one_line_and_a_traceback_only_with_debug(monkeypatch, capsys):
    """A bug (an exception that is not a CausalKGError or an OSError) still reaches the user as one
    line naming it; --debug shows the traceback."""
    import causalkg.cli as cli_module

    def broken(*args, **kwargs):
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr(cli_module, "load_config", broken)
    code = cli_module.run(["config", "show"])
    err = capsys.readouterr().err
    assert code == 70
    assert err.strip().splitlines() == [
        "error: internal error: ZeroDivisionError: division by zero (this is a bug in causalkg: rerun with --debug "
        "for the traceback and report it)"]
    import pytest

    with pytest.raises(ZeroDivisionError):
        cli_module.run(["--debug", "config", "show"])
