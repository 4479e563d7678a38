"""The simulator tests' fixture: `http`, a plain `requests` session on the embedded config API
server (tests/support/vnc_server_support.py `Http`)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

import pytest

from tests.support.vnc_server_support import Http

if TYPE_CHECKING:
    from simulators.vnc_api.runner import BackgroundServer


@pytest.fixture
def http(server: "BackgroundServer") -> Iterator[Http]:
    client = Http(server.url)
    yield client
    client.session.close()
