"""Fixtures every folder may use, and the markers given by folder (a folder's own fixtures live in
its own conftest.py: tests/reconciler/ has `setup`, tests/simulators/ has `http`).

- `server`: a fresh embedded config API server in its own thread, stopped after the test;
- `kube`: a fresh emulated Kubernetes API server (a module may override it, e.g. with a history
  limit or objects already created);
- `real_kube`: one real kube-apiserver and etcd for the whole session (`tools/control-plane up`,
  `down` at the end; tests/support/control_plane_support.py says when it skips and when it fails);
- `uncached_kube`: another, without the watch cache, for the session too (started beside `real_kube`'s
  when the session has a test using it: `uncached_start`): its lists and watches read
  etcd itself. With the cache (the default, and `real_kube`'s), a compaction made directly in etcd
  goes unseen: the cache keeps serving the older resourceVersions.
The simulators are imported inside the fixtures, so tests that use none of them never load them.

Every test under tests/e2e/ is marked `e2e`; every test under tests/realkube/ or using `real_kube` is
marked `realkube` and `slow`; `slow` is set by the modules that take long; the inner loop is
`python3 -m pytest -m "not slow and not e2e"` (DEVELOPMENT.md).

Where the environment says not to write bytecode (PYTHONDONTWRITEBYTECODE), the session and the
Python processes it starts (every `python -m kube_manager`, the tools) keep it anyway, out of the
tree, under ~/.cache/kube-manager/pycache/ (PYTHONPYCACHEPREFIX): else each of those processes
compiles the whole package again as it starts.
"""
from __future__ import annotations

import os
import sys
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Iterator, List, Optional

import pytest

if TYPE_CHECKING:
    from simulators.kube_api.runner import EmulatorRunner
    from tests.support.control_plane_support import RealKube
    from simulators.vnc_api.runner import BackgroundServer

E2E = Path(__file__).parent / "e2e"
REALKUBE = Path(__file__).parent / "realkube"


def pytest_configure(config: pytest.Config) -> None:
    if os.environ.get("PYTHONDONTWRITEBYTECODE") and not os.environ.get("PYTHONPYCACHEPREFIX"):
        cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kube-manager" / "pycache"
        os.environ.pop("PYTHONDONTWRITEBYTECODE")
        os.environ["PYTHONPYCACHEPREFIX"] = str(cache)
        sys.pycache_prefix, sys.dont_write_bytecode = str(cache), False


def pytest_collection_modifyitems(items: List[pytest.Item]) -> None:
    for item in items:
        if E2E in item.path.parents:
            item.add_marker(pytest.mark.e2e)
        if REALKUBE in item.path.parents or {"real_kube", "uncached_kube"} & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.realkube)
            item.add_marker(pytest.mark.slow)


@pytest.fixture(autouse=True)
def gevent_clock_current() -> None:
    """Each test starts with the gevent loop's clock read afresh. A test before may have run for
    seconds without the hub (threads, subprocesses, plain sockets), and `gevent.wait` / `joinall`
    start their timeout from the loop's last-known time, not the current one: a timeout shorter
    than that stretch then fires at once when the hub runs again."""
    gevent = sys.modules.get("gevent")
    if gevent is not None:
        gevent.get_hub().loop.update_now()


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


@pytest.fixture(scope="session")
def uncached_start(request: pytest.FixtureRequest,
                   tmp_path_factory: pytest.TempPathFactory) -> Iterator[Optional["Future[RealKube]"]]:
    """`uncached_kube`'s start, begun as soon as the session needs a control plane when some test of
    the session uses it: `real_kube`'s and its control planes then boot at once."""
    if not any("uncached_kube" in getattr(item, "fixturenames", ()) for item in request.session.items):
        yield None
        return
    from tests.support.control_plane_support import start_real_kube, stop_real_kube
    pool = ThreadPoolExecutor(1)
    started = pool.submit(start_real_kube, tmp_path_factory.mktemp("uncached"), ["--watch-cache", "false"])
    # Its thread ends with the start rather than with the session: a fork in a later test (the
    # staged runs') is then a fork of a process of one thread.
    pool.shutdown(wait=False)
    yield started
    if started.exception() is None:  # a failed or skipped start is reported by uncached_kube
        stop_real_kube(started.result())


@pytest.fixture(scope="session")
def real_kube(tmp_path_factory: pytest.TempPathFactory,
              uncached_start: Optional["Future[RealKube]"]) -> Iterator["RealKube"]:
    from tests.support.control_plane_support import (MIN_REQUEST_TIMEOUT, start_real_kube,
                                                     stop_real_kube)
    real = start_real_kube(tmp_path_factory.mktemp("control-plane"),
                           ["--min-request-timeout", str(MIN_REQUEST_TIMEOUT),
                            # the server forgets compacted history within seconds, not five minutes
                            "--etcd-compaction-interval", "10s"])
    yield real
    stop_real_kube(real)


@pytest.fixture(scope="session")
def uncached_kube(uncached_start: Optional["Future[RealKube]"]) -> "RealKube":
    assert uncached_start is not None, "uncached_kube asked for by a test not collected"
    return uncached_start.result()
