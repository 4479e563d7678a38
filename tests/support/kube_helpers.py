"""Helpers for the Kubernetes-side tests: an event recorder, a watcher thread, scripted servers
(manifests come from builders.py)."""
from __future__ import annotations

import contextlib
import json
import socket
import threading
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

from kubernetes.watch.watch import iter_resp_lines

from kube_manager.records.db import Database
from kube_manager.handlers import KINDS
from kube_manager.kube.watcher import KubeWatcher
from tests.support.waiting import DEADLINE, wait_until

def raw_watch(api_call: Any, *args: Any, **kwargs: Any) -> Any:
    """The raw streaming response of a watch call (what the daemon's watcher reads)."""
    return api_call(*args, watch=True, _preload_content=False, _request_timeout=(5, 10), **kwargs)


def read_events(response: Any, count: int) -> List[Dict[str, Any]]:
    """The first `count` events of a raw watch response, parsed; closes the response."""
    events = []
    for line in iter_resp_lines(response):
        if line:
            events.append(json.loads(line))
        if len(events) == count:
            break
    response.close()
    return events


class Recorder:
    """The `on_event` callback of the tests: keeps every event and the state they build."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.events: List[Tuple[str, str, Dict[str, Any]]] = []
        self.state: Dict[Tuple[str, str, str], Dict[str, Any]] = {}

    def __call__(self, resource: str, event_type: str, obj: Dict[str, Any]) -> None:
        with self._lock:
            self.events.append((resource, event_type, obj))
            if event_type in ("ADDED", "MODIFIED", "DELETED"):
                meta = obj["metadata"]
                key = (resource, meta.get("namespace", ""), meta["name"])
                if event_type == "DELETED":
                    assert self.state.pop(key)["metadata"]["uid"] == meta["uid"]
                else:
                    assert (event_type == "ADDED") == (key not in self.state), (event_type, key)
                    self.state[key] = obj

    def types(self, resource: Optional[str] = None) -> List[Tuple[str, str]]:
        """(event type, name) in arrival order; names are empty for LISTED/RELISTED."""
        with self._lock:
            return [(t, o.get("metadata", {}).get("name", "")) for r, t, o in self.events
                    if resource in (None, r)]

    def count(self, event_type: str) -> int:
        with self._lock:
            return sum(1 for _r, t, _o in self.events if t == event_type)

    def wait_for(self, event_type: str, name: str = "", count: int = 1) -> None:
        wait_until(lambda: self.types().count((event_type, name)) >= count,
                   f"{count} x {event_type} {name}")


@contextlib.contextmanager
def running(watchers: List[KubeWatcher]) -> Iterator[List[KubeWatcher]]:
    """Run each watcher in a thread; stop and join them (the test fails if one hangs)."""
    threads = [threading.Thread(target=w.run, name=f"watch-{w.resource.name}", daemon=True)
               for w in watchers]
    for thread in threads:
        thread.start()
    try:
        yield watchers
    finally:
        for watcher in watchers:
            watcher.stop()
        for thread in threads:
            thread.join(DEADLINE)
        assert not any(t.is_alive() for t in threads), "a watcher did not stop"


def watcher(api_client: Any, resource: str, recorder: Recorder, db: Optional[Database] = None,
            **kwargs: Any) -> KubeWatcher:
    return KubeWatcher(api_client, KINDS[resource], recorder, db if db is not None else Database(),
                       **kwargs)


def http_response(body: bytes = b"", chunks: Optional[List[bytes]] = None, end: bool = True) -> bytes:
    """A raw HTTP/1.1 200 response: `body` with a length, or chunked `chunks` (ended when `end`)."""
    if chunks is None:
        return (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n"
                b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
    raw = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    raw += b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk) for chunk in chunks)
    return raw + (b"0\r\n\r\n" if end else b"")


class ScriptedServer:
    """A bare HTTP server that answers each connection's request with `respond(request)`.

    For failures the emulator does not stage: a response that is never finished (a dead peer), or
    a server that expires every watch. Connections stay open until the `with` block ends, which also
    ends the server's thread: one left blocked in `accept` would make every later fork of the test
    process a fork of a multi-threaded one (`plumbing/forked.py`).
    """

    def __init__(self, respond: Callable[[bytes], bytes]) -> None:
        self._respond = respond
        self._listener = socket.socket()
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(8)
        self._connections: List[socket.socket] = []
        self._lock = threading.Lock()  # the connections, and whether the server is closing
        self._closing = False
        self.requests: List[bytes] = []
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                if self._closing:
                    conn.close()
                    return
                self._connections.append(conn)
            try:
                request = conn.recv(65536)
                self.requests.append(request)
                conn.sendall(self._respond(request))
            except OSError:  # shut down by `__exit__`
                return

    def __enter__(self) -> "ScriptedServer":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        # A close from another thread wakes no `accept` or `recv` blocked on the socket (Linux);
        # a shutdown does.
        with self._lock:
            self._closing = True
            sockets = [self._listener, *self._connections]
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
        self._thread.join(DEADLINE)
        assert not self._thread.is_alive(), "the scripted server's thread did not end"
