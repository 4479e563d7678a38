"""Fixtures shared by the test modules (pytest finds them here; nothing imports this module).

- `server`: a fresh embedded config API server in its own thread, stopped after the test;
- `http`: a plain `requests` session on it (vnc_server_support.Http);
- `kube`: a fresh emulated Kubernetes API server (a module may override it, e.g. with a history
  limit or objects already created);
- `setup`: makes reconcilers over the in-process config API (reconciler_support.Setup), each
  stopped after the test.
The simulators are imported inside the fixtures, so tests that use none of them never load them.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Iterator, List

import pytest

if TYPE_CHECKING:
    from kube_manager.sim.kube_api.runner import EmulatorRunner
    from kube_manager.sim.vnc_api.runner import BackgroundServer
    from tests.reconciler_support import Setup
    from vnc_server_support import Http


@pytest.fixture
def server() -> Iterator["BackgroundServer"]:
    from kube_manager.sim.vnc_api.runner import run_in_background
    with run_in_background() as srv:
        yield srv


@pytest.fixture
def http(server: "BackgroundServer") -> Iterator["Http"]:
    from vnc_server_support import Http
    client = Http(server.url)
    yield client
    client.session.close()


@pytest.fixture
def kube() -> Iterator["EmulatorRunner"]:
    from kube_manager.sim.kube_api.runner import EmulatorRunner
    with EmulatorRunner() as runner:
        yield runner


@pytest.fixture
def setup() -> Iterator[Callable[..., "Setup"]]:
    from tests.reconciler_support import Setup
    made: List["Setup"] = []

    def make(**kwargs: Any) -> "Setup":
        made.append(Setup(**kwargs))
        return made[-1]
    yield make
    for s in made:
        s.stop()
