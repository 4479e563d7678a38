"""The lean HTTP path of the config API client: a bounded pool of keep-alive `http.client`
connections per origin, its settings (proxy, CA bundle, TLS) worked out once, at start.

Why not `requests` on the hot path: per request it builds and prepares a `Request`, merges
cookies, hooks, `~/.netrc` and the environment's settings, and then runs urllib3's pool, which
checks, wraps and re-parses what `http.client` already does. Under gevent that machinery cost
several times the client CPU the request itself needs (docs/operations.md, "Scale"), and most of
the daemon's CPU is spent in it during a cold start. Nothing of it changes between two requests to
the same config API: the origin, its proxy, its TLS context and its headers are fixed when the
client starts. So each origin gets a `WirePool` made once, and a request is `http.client`'s
`request` / `getresponse` / `read` on a connection taken from it.

What stays as `requests` did it: the environment's proxy rules (`HTTP_PROXY`, `HTTPS_PROXY`,
`ALL_PROXY`, `NO_PROXY`, in requests' own reading of them) and CA bundle (`REQUESTS_CA_BUNDLE`,
`CURL_CA_BUNDLE`) are honoured, read once per origin when the pool is made; TLS verification is on
unless switched off, against the configured CA file or else the bundle `requests` would use
(certifi's); a connect timeout and a read timeout apart. A proxy is reached in plain HTTP (an
`https` origin through it is a CONNECT tunnel); a proxy spoken to in TLS is refused at start.
"""
from __future__ import annotations

import base64
import http.client
import os
import select
import socket
import ssl
import threading
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Tuple, Union, cast
from urllib.parse import unquote, urlsplit

import certifi
from requests.utils import get_environ_proxies, select_proxy

from .headerlines import HeaderLines

# (connect, read) seconds.
Timeout = Tuple[float, float]


class WireFailure(Exception):
    """A request that met a transport failure (refused, reset, timed out, an answer cut short, a
    TLS error): perhaps another attempt, or another endpoint, does better."""


class WireRefused(Exception):
    """A request that can never be sent as asked (an invalid URL or header): no retry helps."""


@dataclass(frozen=True)
class Answer:
    """One HTTP answer, read whole."""

    status: int
    headers: HeaderLines
    content: bytes

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", "replace")


def environment_ca_bundle(environ: Mapping[str, str]) -> Optional[str]:
    """The CA bundle the environment names for verification, as requests reads it."""
    return environ.get("REQUESTS_CA_BUNDLE") or environ.get("CURL_CA_BUNDLE") or None


def tls_context(verify: Union[bool, str]) -> ssl.SSLContext:
    """Verification against `verify` (a CA file) or certifi's bundle (True); none when False."""
    if verify is False:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        return context
    cafile = verify if isinstance(verify, str) else certifi.where()
    try:
        return ssl.create_default_context(cafile=cafile)
    except (OSError, ssl.SSLError) as exc:
        raise ValueError(f"CA file {cafile!r} cannot be loaded: {exc}") from None


class _OnePacket:
    """`http.client` sends a request's head and its body in two `send`s: two TCP segments, two
    wake-ups of the server, twice the system calls. A body given whole goes with the head."""

    _buffer: List[bytes]

    def _send_output(self, message_body: Any = None, encode_chunked: bool = False) -> None:
        if isinstance(message_body, bytes) and not encode_chunked:
            self._buffer.extend((b"", message_body))
            message, self._buffer[:] = b"\r\n".join(self._buffer), []
            self.send(message)  # type: ignore[attr-defined]
            return
        super()._send_output(message_body, encode_chunked)  # type: ignore[misc]


class _LeanResponse(http.client.HTTPResponse):
    """`http.client`'s answer with its header lines read by `HeaderLines` instead of the `email`
    package (see headerlines.py); what follows the headers (chunks, length, keep-alive) is read as
    `http.client` reads it, from the same fields."""

    def begin(self) -> None:
        if self.headers is not None:
            return
        while True:
            version, status, reason = self._read_status()
            if status != http.client.CONTINUE:
                break
            _lines(self.fp)  # a 100 Continue's own headers, skipped
        self.code = self.status = status
        self.reason = reason.strip()
        if version in ("HTTP/1.0", "HTTP/0.9"):
            self.version = 10
        elif version.startswith("HTTP/1."):
            self.version = 11
        else:
            raise http.client.UnknownProtocol(version)
        self.headers = self.msg = _lines(self.fp)
        self.chunked = (self.headers.get("transfer-encoding") or "").lower() == "chunked"
        self.chunk_left = None
        self.will_close = self._check_close()
        length = self.headers.get("content-length")
        self.length = None
        if length and not self.chunked:
            try:
                self.length = int(length) if int(length) >= 0 else None
            except ValueError:
                pass
        if status in (http.client.NO_CONTENT, http.client.NOT_MODIFIED) or 100 <= status < 200 \
                or self._method == "HEAD":
            self.length = 0
        if not self.will_close and not self.chunked and self.length is None:
            self.will_close = True


def _lines(fp: Any) -> HeaderLines:
    lines = HeaderLines(fp)
    if lines.status:
        raise http.client.HTTPException(f"answer headers refused: {lines.status}")
    return lines


class _Connection(_OnePacket, http.client.HTTPConnection):
    """Connects within the connect timeout, then waits for answers within the read timeout."""

    response_class = _LeanResponse

    def __init__(self, host: str, port: int, timeout: Timeout) -> None:
        super().__init__(host, port, timeout=timeout[0])
        self._read_timeout = timeout[1]

    def connect(self) -> None:
        super().connect()
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock.settimeout(self._read_timeout)


class _TlsConnection(_OnePacket, http.client.HTTPSConnection):
    response_class = _LeanResponse

    def __init__(self, host: str, port: int, timeout: Timeout, context: ssl.SSLContext) -> None:
        super().__init__(host, port, timeout=timeout[0], context=context)
        self._read_timeout = timeout[1]

    def connect(self) -> None:
        super().connect()
        self.sock.settimeout(self._read_timeout)


class WirePool:
    """Keep-alive connections to one origin (`scheme://host:port`), at most `maxsize` at once: a
    caller beyond that waits for a connection to come back. Safe for greenlets and threads."""

    def __init__(self, origin: str, maxsize: int, timeout: Timeout, verify: Union[bool, str]) -> None:
        parts = urlsplit(origin)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"{origin!r} is not an http(s) origin")
        self.origin = origin
        self._tls = parts.scheme == "https"
        self._host = parts.hostname
        self._port = parts.port or (443 if self._tls else 80)
        self._timeout = timeout
        if verify is True:
            verify = environment_ca_bundle(os.environ) or True
        self._context = tls_context(verify) if self._tls else None
        self._proxy_headers: Dict[str, str] = {}
        self._connect_to: Tuple[str, int] = (self._host, self._port)
        self._absolute = ""  # the origin, prefixed to each target when a plain HTTP proxy forwards it
        proxy = select_proxy(origin, get_environ_proxies(origin))
        if proxy:
            self._use_proxy(proxy)
        self._idle: List[http.client.HTTPConnection] = []
        self._slots = threading.BoundedSemaphore(maxsize)

    def _use_proxy(self, proxy: str) -> None:
        parts = urlsplit(proxy if "://" in proxy else f"http://{proxy}")
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError(f"proxy {_without_credentials(proxy)!r} for {self.origin}: only an http:// proxy is supported")
        self._connect_to = (parts.hostname, parts.port or 80)
        if parts.username is not None:
            secret = f"{unquote(parts.username)}:{unquote(parts.password or '')}".encode("latin-1")
            self._proxy_headers["Proxy-Authorization"] = "Basic " + base64.b64encode(secret).decode("ascii")
        if not self._tls:
            self._absolute = self.origin

    @property
    def proxied(self) -> bool:
        return self._connect_to != (self._host, self._port)

    def request(self, method: str, target: str, body: Optional[bytes], headers: Dict[str, str]) -> Answer:
        """Sends one request on a pooled connection and reads its answer whole. Raises WireFailure
        or WireRefused; the connection goes back to the pool only after a complete answer that
        leaves it open."""
        self._slots.acquire()
        try:
            connection = self._take()
            try:
                if self._absolute:
                    target = self._absolute + target
                    headers = {**headers, **self._proxy_headers}
                connection.request(method, target, body, headers)
                response = connection.getresponse()
                answer = Answer(response.status, cast(HeaderLines, response.headers), response.read())
            except http.client.InvalidURL as exc:
                connection.close()
                raise WireRefused(f"{type(exc).__name__}: {exc}") from None
            except (OSError, http.client.HTTPException) as exc:  # socket, TLS and protocol failures
                connection.close()
                raise WireFailure(f"{type(exc).__name__}: {exc}") from None
            except ValueError as exc:  # what http.client refuses to send (a header that splits lines)
                connection.close()
                raise WireRefused(f"{type(exc).__name__}: {exc}") from None
            except BaseException:  # a greenlet killed mid-request: its connection is in no known state
                connection.close()
                raise
            if response.will_close:
                connection.close()
            else:
                self._idle.append(connection)
            return answer
        finally:
            self._slots.release()

    def _take(self) -> http.client.HTTPConnection:
        while self._idle:
            connection = self._idle.pop()
            if connection.sock is not None and not _dropped(connection.sock):
                return connection
            connection.close()
        return self._new()

    def _new(self) -> http.client.HTTPConnection:
        host, port = self._connect_to
        if self._context is None:
            return _Connection(host, port, self._timeout)
        connection = _TlsConnection(host, port, self._timeout, self._context)
        if self.proxied:
            connection.set_tunnel(self._host, self._port, headers=self._proxy_headers or None)
        return connection

    def close(self) -> None:
        idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()


def _dropped(sock: socket.socket) -> bool:
    """Whether an idle keep-alive connection was closed by the server (it is readable: an end of
    stream, or bytes nobody asked for), so that it is not reused for a request it would lose."""
    try:
        readable, _, _ = select.select([sock], [], [], 0)
    except (OSError, ValueError):
        return True
    return bool(readable)


def _without_credentials(url: str) -> str:
    parts = urlsplit(url)
    if parts.password is None and parts.username is None:
        return url
    return parts._replace(netloc=f"***@{parts.hostname}" + (f":{parts.port}" if parts.port else "")).geturl()
