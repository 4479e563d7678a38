"""Fixtures every folder may use, and the markers given by folder (a folder's own fixtures live in
its own conftest.py: tests/reconciler/ has `setup`, tests/simulators/ has `http`).

- `server`: a fresh embedded config API server in its own thread, stopped after the test;
- `kube`: a fresh emulated Kubernetes API server (a module may override it, e.g. with a history
  limit or objects already created).
The simulators are imported inside the fixtures, so tests that use none of them never load them.

Every test under tests/e2e/ is marked `e2e`; `slow` is set by the modules that take long; the inner
loop is `python3 -m pytest -m "not slow and not e2e"` (DEVELOPMENT.md).
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Iterator, List

import pytest

if TYPE_CHECKING:
    from simulators.kube_api.runner import EmulatorRunner
    from simulators.vnc_api.runner import BackgroundServer

E2E = Path(__file__).parent / "e2e"


def pytest_collection_modifyitems(items: List[pytest.Item]) -> None:
    for item in items:
        if E2E in item.path.parents:
            item.add_marker(pytest.mark.e2e)


@pytest.fixture
def server() -> Iterator["BackgroundServer"]:
    from simulators.vnc_api.runner import run_in_background
    with run_in_background() as srv:
        yield srv


@pytest.fixture
def kube() -> Iterator["EmulatorRunner"]:
    from simulators.kube_api.runner import EmulatorRunner
    with EmulatorRunner() as runner:
        yield runner
