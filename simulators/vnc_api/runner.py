"""Serving the embedded config API: in the current gevent hub, or in a thread of its own for tests.

- `EmbeddedServer` runs `ConfigApiApp` on `gevent.pywsgi` in the calling thread's hub. It is what
  `contrail-kube-manager vnc-server` and the daemon's `vnc_endpoint_ip = embedded` mode use.
- `run_in_background()` starts one in a new native thread with its own gevent hub and returns a
  `BackgroundServer` handle once it listens. This works for blocking code (the official library
  and `requests` without monkey-patching) and equally after `gevent.monkey.patch_all()`, because the
  thread, its start/stop handshake and the store lock are taken from the unpatched `_thread`
  module: the server never depends on the caller's hub or greenlets. Stopping is a thread-safe
  callback into the server's loop, so no sleep is ever needed to synchronise.

Stopping closes idle keep-alive connections at once and gives requests in progress a grace period.
"""
from __future__ import annotations

import errno
import logging
import socket
from dataclasses import replace
from typing import Any, BinaryIO, Iterator, Optional, Set

import gevent
import gevent.event
from gevent.monkey import get_original
from gevent.pool import Pool
from gevent.pywsgi import WSGIHandler, WSGIServer

from vnc_client.headerlines import HeaderLines

from .api import ConfigApi
from .app import ConfigApiApp
from .faults import DropConnection, FaultInjector, RequestCounters, ServerOptions
from .store import Store

log = logging.getLogger(__name__)

_start_new_thread = get_original("_thread", "start_new_thread")
_allocate_lock = get_original("_thread", "allocate_lock")

START_TIMEOUT = 10.0
STOP_GRACE = 1.0
class _Handler(WSGIHandler):
    """Tracks its connection (so stop can close idle ones), disables Nagle's algorithm, and turns
    `DropConnection` into a connection closed without an answer. Keeps no access log."""

    busy = False
    greenlet: Optional[gevent.Greenlet] = None

    def MessageClass(self, rfile: BinaryIO, *_args: Any) -> HeaderLines:  # noqa: N802 - pywsgi's name
        # pywsgi hands the lines to `http.client.parse_headers`, which builds an email message per
        # request: every answer, and so every round trip of a client's, would wait for it.
        return HeaderLines(rfile)

    def handle(self) -> None:
        connections: Set["_Handler"] = self.server.connections
        self.greenlet = gevent.getcurrent()
        # pywsgi sends the headers and the body in two writes: without this, Nagle's algorithm and
        # the client's delayed ACK hold every keep-alive answer back (as introspect's server says).
        self.socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        connections.add(self)
        rfile = self.rfile
        try:
            super().handle()
        finally:
            connections.discard(self)
            # pywsgi only drops its reference to the socket's reader, which then keeps the socket
            # open until the collector finds it, possibly after this server's hub is gone (closing
            # it then raises inside gevent). Closed here, the socket closes with the connection.
            rfile.close()

    def handle_one_response(self) -> None:
        self.busy = True
        try:
            super().handle_one_response()
        finally:
            self.busy = False

    def run_application(self) -> None:
        try:
            super().run_application()
        except DropConnection:
            self.close_connection = True
            # An error pywsgi treats as "peer went away": no answer is written, the socket closes.
            raise socket.error(errno.ECONNRESET, "injected fault: connection dropped") from None

    def log_request(self) -> None:
        """Nothing: the server is made with `log=None` and the app logs what matters, but pywsgi
        would still format an access line for every request only to throw it away."""


class _Server(WSGIServer):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.connections: Set[_Handler] = set()


def make_app(options: Optional[ServerOptions] = None, store: Optional[Store] = None) -> ConfigApiApp:
    """A fresh app: a `ConfigApi` over `store` (new, with the default objects, when None)."""
    return ConfigApiApp(ConfigApi(store), FaultInjector(options or ServerOptions()), RequestCounters())


class EmbeddedServer:
    """The config API served by gevent in the current thread's hub."""

    def __init__(self, host: str = "127.0.0.1", port: int = 8082, *, app: Optional[ConfigApiApp] = None,
                 options: Optional[ServerOptions] = None, store: Optional[Store] = None) -> None:
        self.app = app if app is not None else make_app(options, store)
        self._server = _Server((host, port), self.app, handler_class=_Handler, spawn=Pool(), log=None,
                               error_log=logging.getLogger(__name__ + ".wsgi"))

    def start(self) -> None:
        """Bind and start accepting (returns at once; the hub serves while the caller waits)."""
        self._server.start()
        log.info("embedded config API listening on %s (latency=%.3fs fail_rate=%.2f drop_rate=%.2f)", self.url,
                 self.app.faults.options.latency, self.app.faults.options.fail_rate,
                 self.app.faults.options.drop_rate)

    def stop(self, grace: float = STOP_GRACE) -> None:
        """Stop accepting, close idle connections, let busy requests finish within `grace` seconds."""
        self._server.close()
        idle = [h.greenlet for h in list(self._server.connections) if not h.busy and h.greenlet is not None]
        gevent.killall(idle, block=True, timeout=grace)
        self._server.stop(timeout=grace)
        log.info("embedded config API on %s stopped", self.url)

    @property
    def host(self) -> str:
        return self._server.address[0]

    @property
    def port(self) -> int:
        return self._server.address[1]

    @property
    def url(self) -> str:
        host = self.host
        return f"http://[{host}]:{self.port}" if ":" in host else f"http://{host}:{self.port}"


class BackgroundServer:
    """An `EmbeddedServer` in its own native thread and hub; see `run_in_background`."""

    def __init__(self, app: ConfigApiApp, host: str, port: int) -> None:
        self.app = app
        self._server: Optional[EmbeddedServer] = None
        self._loop: Any = None
        self._stop_event: Optional[gevent.event.Event] = None
        self._error: Optional[BaseException] = None
        self._stopped = False
        self._ready = _allocate_lock()
        self._ready.acquire()
        self._done = _allocate_lock()
        self._done.acquire()
        _start_new_thread(self._run, (host, port))
        if not self._ready.acquire(True, START_TIMEOUT):
            raise RuntimeError(f"embedded config API did not start within {START_TIMEOUT}s")
        if self._error is not None:
            raise self._error

    # --- what tests use -------------------------------------------------------------------------

    @property
    def url(self) -> str:
        return self._require().url

    @property
    def host(self) -> str:
        return self._require().host

    @property
    def port(self) -> int:
        return self._require().port

    @property
    def api(self) -> ConfigApi:
        return self.app.api

    @property
    def store(self) -> Store:
        return self.app.api.store

    @property
    def counters(self) -> RequestCounters:
        return self.app.counters

    @property
    def faults(self) -> FaultInjector:
        return self.app.faults

    @property
    def running(self) -> bool:
        return not self._stopped

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the server and wait for its thread to finish (idempotent)."""
        stop_event = self._stop_event
        if self._stopped or stop_event is None:  # stopped already, or its thread never started
            return
        self._stopped = True
        self._loop.run_callback_threadsafe(stop_event.set)
        if not self._done.acquire(True, timeout):
            raise RuntimeError(f"embedded config API did not stop within {timeout}s")

    def __enter__(self) -> "BackgroundServer":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # --- the server thread ----------------------------------------------------------------------

    def _require(self) -> EmbeddedServer:
        assert self._server is not None
        return self._server

    def _run(self, host: str, port: int) -> None:
        hub = gevent.get_hub()
        try:
            self._stop_event = gevent.event.Event()
            server = EmbeddedServer(host, port, app=self.app)
            server.start()
            self._server = server
            self._loop = hub.loop
        except BaseException as exc:  # noqa: BLE001 - reported to the starting thread
            self._error = exc
            self._stopped = True
            self._ready.release()
            hub.destroy(destroy_loop=True)
            self._done.release()
            return
        self._ready.release()
        try:
            self._stop_event.wait()
            server.stop()
        finally:
            hub.destroy(destroy_loop=True)
            self._done.release()


def run_in_background(host: str = "127.0.0.1", port: int = 0, *, store: Optional[Store] = None,
                      options: Optional[ServerOptions] = None, **option_fields: Any) -> BackgroundServer:
    """Start the embedded config API in a thread of its own; returns once it listens.

    `port=0` picks a free port (see `.url`). `store` reuses the objects of an earlier server (a
    "restart"); `options` and/or keyword fields of `ServerOptions` (`latency`, `fail_rate`,
    `drop_rate`, `seed`) set the test knobs, which `.faults` can change later.
    """
    merged = replace(options or ServerOptions(), **option_fields)
    return BackgroundServer(make_app(merged, store), host, port)
