"""A scripted HTTP server for the config API client's tests: answers registered per method and
URL, every request recorded, over real sockets.

The client under test reaches it as its HTTP proxy (`HTTP_PROXY`, which the client reads when it
is made), so the tests keep naming the config API by the URLs the client really asks for
(`http://vnc.test:8082/tags?...`: a proxy sees the absolute URL) and can fake several endpoints
with one server. Registered answers are matched like `responses` does: by method, by URL without
its query, and by the optional `match` predicates; with `ordered`, each answer is used once, in
the order registered. An answer may instead be a failure: `DROP` closes the connection without an
answer, `CUT` sends half of a chunked answer and closes, `Slow(seconds, ...)` waits before answering.

Leaving `serve` ends every thread of the server, a `Slow` answer's wait included: a thread left
behind would make each later fork of the test process a fork of a multi-threaded one
(`kube_manager/plumbing/forked.py`), which can deadlock the child.
"""
from __future__ import annotations

import json as jsonlib
import socket
import ssl
import threading
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Dict, Iterator, List, Optional, Union
from urllib.parse import parse_qsl, urlsplit

import pytest

DROP = "drop"
CUT = "cut"


@dataclass
class Recorded:
    """One request the server received."""

    method: str
    url: str  # absolute, query included
    headers: Dict[str, str]
    body: bytes
    proxied: bool  # the request line named an absolute URL, as a client speaks to its proxy

    @property
    def params(self) -> Dict[str, str]:
        return dict(parse_qsl(urlsplit(self.url).query, keep_blank_values=True))

    def json(self) -> Any:
        return jsonlib.loads(self.body)


@dataclass
class Call:
    request: Recorded


Matcher = Callable[[Recorded], bool]


def json_params_matcher(expected: Any) -> Matcher:
    return lambda request: bool(request.body) and request.json() == expected


def header_matcher(expected: Dict[str, str]) -> Matcher:
    return lambda request: all(request.headers.get(k) == v for k, v in expected.items())


def query_param_matcher(expected: Dict[str, str]) -> Matcher:
    return lambda request: request.params == expected


@dataclass
class Slow:
    """An answer given only after `seconds` (to outlast a client's read timeout)."""

    seconds: float


@dataclass
class _Entry:
    method: str
    url: str
    status: int
    body: Union[bytes, str, Slow]
    headers: Dict[str, str]
    match: List[Matcher]
    used: int = 0

    def matches(self, request: Recorded) -> bool:
        parts = urlsplit(request.url)
        return (self.method == request.method and self.url == f"{parts.scheme}://{parts.netloc}{parts.path}"
                and all(m(request) for m in self.match))


@dataclass
class ScriptedServer:
    """Register answers with `get`/`post`/`put`/`delete`/`add`; read `calls` after."""

    ordered: bool = False
    calls: List[Call] = field(default_factory=list)
    connections: int = 0  # TCP connections accepted so far
    closed: int = 0  # and closed since
    _open: List[socket.socket] = field(default_factory=list)
    _entries: List[_Entry] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _closing: threading.Event = field(default_factory=threading.Event)  # `serve` is being left
    url: str = ""

    def add(self, method: str, url: str, *, json: Any = None, body: Union[bytes, str, Slow, None] = None,
            status: int = 200, headers: Optional[Dict[str, str]] = None, match: Optional[List[Matcher]] = None) -> None:
        headers = dict(headers or {})
        if json is not None:
            body = jsonlib.dumps(json)
            headers.setdefault("Content-Type", "application/json")
        self._entries.append(_Entry(method, url, status, b"" if body is None else body, headers, list(match or [])))

    def get(self, url: str, **kwargs: Any) -> None:
        self.add("GET", url, **kwargs)

    def post(self, url: str, **kwargs: Any) -> None:
        self.add("POST", url, **kwargs)

    def put(self, url: str, **kwargs: Any) -> None:
        self.add("PUT", url, **kwargs)

    def delete(self, url: str, **kwargs: Any) -> None:
        self.add("DELETE", url, **kwargs)

    def close_idle(self) -> None:
        """Closes every connection the server holds open (as a server does after a keep-alive timeout)."""
        with self._lock:
            for sock in self._open:
                with suppress(OSError):  # the client closed it first
                    sock.shutdown(socket.SHUT_RDWR)

    def unfired(self) -> List[str]:
        return [f"{e.method} {e.url}" for e in self._entries if not e.used]

    def answer_for(self, request: Recorded) -> Optional[_Entry]:
        with self._lock:
            self.calls.append(Call(request))
            candidates = [e for e in self._entries if not (self.ordered and e.used)]
            if self.ordered:
                candidates = candidates[:1]
            found = [e for e in candidates if e.matches(request)]
            if not found:
                return None
            entry = found[0]
            entry.used += 1
            if len(found) > 1 and not self.ordered:  # as responses does: the next one answers next
                self._entries.remove(entry)
                self._entries.append(_Entry(entry.method, entry.url, entry.status, entry.body, entry.headers,
                                            entry.match, entry.used))
            return entry


def _handler(script: ScriptedServer) -> type:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:  # quiet
            pass

        def setup(self) -> None:
            super().setup()
            with script._lock:
                script.connections += 1
                script._open.append(self.connection)
                if script._closing.is_set():  # accepted as `serve` was left, after `close_idle`
                    with suppress(OSError):
                        self.connection.shutdown(socket.SHUT_RDWR)

        def finish(self) -> None:
            super().finish()
            with script._lock:
                script._open.remove(self.connection)
                script.closed += 1

        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            scheme = script.url.split(":")[0]
            url = self.path if "://" in self.path else f"{scheme}://{self.headers.get('Host')}{self.path}"
            request = Recorded(self.command, url, dict(self.headers.items()), body, "://" in self.path)
            entry = script.answer_for(request)
            if entry is None:
                self._send(599, f"no scripted answer for {self.command} {url}".encode(), {})
                return
            payload = entry.body
            if isinstance(payload, Slow):
                if script._closing.wait(payload.seconds):
                    self.close_connection = True
                    return
                payload = b"{}"
            if payload == DROP:
                self.close_connection = True
                return
            if payload == CUT:
                self.send_response(entry.status)
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                self.wfile.write(b"100\r\npartial")
                self.wfile.flush()
                self.close_connection = True
                return
            data = payload.encode() if isinstance(payload, str) else payload
            self._send(entry.status, data, entry.headers)

        def _send(self, status: int, data: bytes, headers: Dict[str, str]) -> None:
            self.send_response(status)
            headers = {"Content-Type": "text/plain", **headers}
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PUT = do_DELETE = _serve

    return Handler


@contextmanager
def serve(script: ScriptedServer, tls: Optional[ssl.SSLContext] = None) -> Iterator[ScriptedServer]:
    """Runs `script` on a free local port (in TLS with `tls`) until the context is left."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(script))
    server.daemon_threads = False  # so that `server_close` joins each connection's thread
    if tls is not None:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    script.url = f"{'https' if tls else 'http'}://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield script
    finally:
        script._closing.set()
        server.shutdown()
        script.close_idle()  # a kept-alive connection's thread waits for its next request
        server.server_close()
        thread.join()


PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE")


def clear_proxy_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)


def scripted_proxy(monkeypatch: pytest.MonkeyPatch, *, ordered: bool = False,
                   assert_all_fired: bool = True) -> Iterator[ScriptedServer]:
    """A ScriptedServer that every client made from now on reaches as its HTTP proxy; with
    `assert_all_fired`, the test fails if an answer registered was never asked for."""
    clear_proxy_environment(monkeypatch)
    with serve(ScriptedServer(ordered=ordered)) as script:
        monkeypatch.setenv("HTTP_PROXY", script.url)
        yield script
        if assert_all_fired:
            assert not script.unfired(), f"answers never asked for: {script.unfired()}"
