"""Fixtures: one real `basalt server` per test session, and happybase connections to it with
every client setting (buffered or framed transport, binary or compact protocol)."""

import itertools
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))

from basalt_server import BasaltServer  # noqa: E402

SETTINGS = [
    pytest.param({"transport": t, "protocol": p}, id=f"{t}-{p}")
    for t, p in itertools.product(["buffered", "framed"], ["binary", "compact"])
]


@pytest.fixture(scope="session")
def server():
    with BasaltServer() as s:
        yield s
        assert s.alive(), "the server died during the tests:\n" + s.log()


@pytest.fixture(params=SETTINGS)
def settings(request, server):
    return dict(host=server.host, port=server.port, **request.param)


_names = itertools.count()


@pytest.fixture
def conn(settings):
    import happybase

    c = happybase.Connection(**settings)
    yield c
    c.close()


@pytest.fixture
def table(conn):
    """A fresh table: cf1 (3 versions), cf2 (defaults), cf3 (1 version)."""
    name = f"t{next(_names)}"
    conn.create_table(name, {"cf1": {"max_versions": 3}, "cf2": {}, "cf3": {"max_versions": 1}})
    yield conn.table(name)
    conn.delete_table(name, disable=True)
