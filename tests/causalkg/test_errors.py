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
