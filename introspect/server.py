"""The introspect HTTP server: gevent's WSGI server on `http_server_ip:http_server_port`.

It runs in the daemon's gevent loop beside the watchers and the reconciler: each request is one
greenlet, so a slow client never blocks the loop. Access lines go to the module logger at DEBUG
(health probes hit the server every few seconds and would drown INFO).
"""
from __future__ import annotations

import logging
import socket
from typing import Any, Callable, Optional, Tuple

from gevent.pywsgi import WSGIServer

log = logging.getLogger(__name__)


class _LogWriter:
    """The file-like object gevent.pywsgi writes its access and error lines to."""

    def __init__(self, level: int) -> None:
        self._level = level

    def write(self, line: str) -> None:
        log.log(self._level, "%s", line.rstrip())


class _NoDelayServer(WSGIServer):
    """Answers without Nagle's delay: on a kept-alive connection (a browser's, a `requests`
    session's) each answer otherwise waited for the client's delayed ACK (docs/operations.md,
    "Measurements behind the code")."""

    def handle(self, sock: Any, address: Any) -> Any:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return super().handle(sock, address)


class IntrospectServer:
    """Serves a WSGI app (normally `create_app(...)`) until stopped.

    `port` 0 binds an ephemeral port; `address` tells which after `start()`.
    """

    def __init__(self, host: str, port: int, app: Callable[..., Any]) -> None:
        self.host = host
        self.port = port
        self._server: Optional[WSGIServer] = None
        self._app = app

    @property
    def address(self) -> Tuple[str, int]:
        if self._server is None:
            raise RuntimeError("the introspect server is not started")
        return self._server.address[:2]

    @property
    def url(self) -> str:
        host, port = self.address
        return f"http://{'[' + host + ']' if ':' in host else host}:{port}"

    def start(self) -> None:
        """Bind and start serving in the background (in the current gevent hub)."""
        if self._server is not None:
            raise RuntimeError("the introspect server is already started")
        # SERVER_NAME given: gevent would look the listen address up in the DNS (`getfqdn`, a
        # reverse lookup that yields to the hub, and can wait for a resolver's timeout) at start.
        server = _NoDelayServer((self.host, self.port), self._app, log=_LogWriter(logging.DEBUG),
                                error_log=_LogWriter(logging.ERROR), environ={"SERVER_NAME": self.host})
        server.start()  # raises OSError naming the address when it cannot bind
        self._server = server
        log.info("introspect server listening on %s", self.url)

    def stop(self, timeout: float = 5.0) -> None:
        """Stop accepting, and give requests in flight `timeout` seconds to finish."""
        if self._server is None:
            return
        server, self._server = self._server, None
        server.stop(timeout=timeout)
        log.info("introspect server stopped")

    def __enter__(self) -> "IntrospectServer":
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
