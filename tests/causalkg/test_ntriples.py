"""Bulk loading N-Triples in slices (causalkg/core/ntriples.py): every triple lands whatever the
slice size, and a bad line is reported at its line in the whole file."""

from __future__ import annotations

import io

import pyoxigraph as ox
import pytest

from causalkg.core.ntriples import bulk_load_slices

EX = "http://example.org/"


def _lines(n: int) -> list[bytes]:
    return [f'<{EX}s{i}> <{EX}p> "v{i} ü" .\n'.encode() for i in range(n)]


@pytest.mark.parametrize("lines", [1, 3, 10, 11, 100_000])
def test_every_triple_lands_in_the_graph_whatever_the_slice(lines):
    store, graph = ox.Store(), ox.NamedNode(EX + "g")
    assert bulk_load_slices(store, io.BytesIO(b"".join(_lines(10))), to_graph=graph, lines=lines) == 10
    got = sorted(q.object.value for q in store.quads_for_pattern(None, None, None, graph))
    assert got == sorted(f"v{i} ü" for i in range(10))
    assert not list(store.quads_for_pattern(None, None, None, ox.DefaultGraph()))


def test_a_bad_line_is_reported_at_its_line_in_the_whole_file():
    data = _lines(10)
    data[7] = f'<{EX}s7> <{EX}p> "unclosed .\n'.encode()
    store = ox.Store()
    with pytest.raises(SyntaxError) as err:
        bulk_load_slices(store, io.BytesIO(b"".join(data)), lines=3)  # the slice of lines 7-9
    assert err.value.lineno == 8 and str(err.value).startswith("line 8: ")
    assert len(store) == 6  # the two slices before it


def test_a_slice_must_hold_a_line():
    with pytest.raises(ValueError):
        bulk_load_slices(ox.Store(), io.BytesIO(b""), lines=0)
