"""Running the emulated API server in the background, for tests, benchmarks and the demo mode.

Two ways, chosen automatically:
- In an ordinary (not monkey-patched) process, such as the test suite where the watchers use the
  blocking `kubernetes` client, the server runs in its own OS thread with its own gevent hub. The
  store must only be touched from that hub, so `call` (and the `store` proxy built on it) hands the
  function over with `loop.run_callback_threadsafe` and waits for its result.
- In a process where gevent has patched `threading` (the daemon), a second OS thread is not
  available, and not needed: the server simply runs in the current hub and calls run inline.

Usage:

    with EmulatorRunner(manifests) as kube:
        client = api_client_for_url(kube.url)
        kube.store.create({"kind": "Namespace", "metadata": {"name": "dev"}})
"""
from __future__ import annotations

import threading
from typing import Any, Callable, Dict, Iterable, Optional, TypeVar

import gevent
import gevent.event
from gevent import monkey

from simulators.kube_api.server import DEFAULT_BOOKMARK_INTERVAL, EmulatedApiServer
from simulators.kube_api.store import DEFAULT_HISTORY_LIMIT, DEFAULT_PROGRESS_INTERVAL, KubeStore
from kube_manager.offline.manifests import Manifests

T = TypeVar("T")


class StoreProxy:
    """Every public `KubeStore` method and property, run where the store lives."""

    def __init__(self, runner: "EmulatorRunner") -> None:
        self._runner = runner

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        attr = getattr(KubeStore, name)  # AttributeError for a misspelt name, before any call
        if isinstance(attr, property):
            return self._runner.call(lambda store: getattr(store, name))
        return lambda *args, **kwargs: self._runner.call(
            lambda store: getattr(store, name)(*args, **kwargs))


class EmulatorRunner:
    """An `EmulatedApiServer` started in the background; `url` is where the client connects."""

    def __init__(self, manifests: Optional[Manifests] = None, host: str = "127.0.0.1",
                 port: int = 0, history_limit: int = DEFAULT_HISTORY_LIMIT,
                 bookmark_interval: float = DEFAULT_BOOKMARK_INTERVAL,
                 call_timeout: float = 60.0, crds: Optional[Iterable[str]] = None,
                 system_namespaces: bool = True, namespace_controller: bool = True,
                 progress_interval: float = DEFAULT_PROGRESS_INTERVAL) -> None:
        """The store's options are `KubeStore`'s; `bookmark_interval` is the server's period of
        bookmarks, which carry a version past a quiet watch's only every `progress_interval`."""
        self._manifests = manifests
        self._store_options: Dict[str, Any] = {"system_namespaces": system_namespaces,
                                               "namespace_controller": namespace_controller,
                                               "progress_interval": progress_interval}
        self._crds = crds  # KubeStore's: None serves every custom resource, () none
        self._host = host
        self._port = port
        self._history_limit = history_limit
        self._bookmark_interval = bookmark_interval
        self._call_timeout = call_timeout
        self.threaded = not monkey.is_module_patched("threading")
        self.store = StoreProxy(self)
        self._server: Optional[EmulatedApiServer] = None
        self._thread: Optional[threading.Thread] = None
        self._ready = threading.Event()
        self._startup_error: Optional[BaseException] = None
        self._loop: Any = None
        self._stopping: Optional[gevent.event.Event] = None

    def __enter__(self) -> "EmulatorRunner":
        return self.start()

    def __exit__(self, *exc_info: Any) -> None:
        self.stop()

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("the emulator is not running")
        return self._server.url

    def start(self) -> "EmulatorRunner":
        """Start serving; returns once the port is bound (raises what binding raised)."""
        if not self.threaded:
            self._server = self._make_server()
            return self
        self._thread = threading.Thread(target=self._thread_main, name="kube-emulator", daemon=True)
        self._thread.start()
        self._ready.wait()
        if self._startup_error is not None:
            raise self._startup_error
        return self

    def call(self, func: Callable[[KubeStore], T]) -> T:
        """Run `func(store)` in the emulator's hub and return (or raise) its outcome."""
        if self._server is None:
            raise RuntimeError("the emulator is not running")
        store = self._server.store
        if not self.threaded:
            return func(store)
        done = threading.Event()
        outcome: Dict[str, Any] = {}

        def run() -> None:
            try:
                outcome["value"] = func(store)
            except BaseException as exc:  # handed back to the calling thread
                outcome["error"] = exc
            finally:
                done.set()

        # A greenlet, not the callback itself: listeners (the emulated CNI) may block.
        self._loop.run_callback_threadsafe(gevent.spawn, run)
        if not done.wait(self._call_timeout):
            raise TimeoutError(f"the emulator did not answer within {self._call_timeout} s")
        if "error" in outcome:
            raise outcome["error"]
        return outcome["value"]

    def stop(self) -> None:
        """Stop serving; open watches are broken off. Idempotent."""
        if self._server is None:
            return
        if not self.threaded:
            self._server.stop()
        elif self._thread is not None and self._stopping is not None:  # both set once it started
            self._loop.run_callback_threadsafe(self._stopping.set)
            self._thread.join()
        self._server = None

    def _make_server(self) -> EmulatedApiServer:
        server = EmulatedApiServer(KubeStore(self._history_limit, self._crds, **self._store_options), self._host, self._port,
                                   self._bookmark_interval)
        if self._manifests is not None:
            server.store.load(self._manifests)
        server.start()
        return server

    def _thread_main(self) -> None:
        hub = gevent.get_hub()  # this thread's own hub
        try:
            self._server = self._make_server()
            self._loop = hub.loop
            self._stopping = gevent.event.Event()
        except BaseException as exc:
            self._startup_error = exc
            self._ready.set()
            hub.destroy(destroy_loop=True)
            return
        self._ready.set()
        self._stopping.wait()
        self._server.stop()
        hub.destroy(destroy_loop=True)
