"""An emulated Kubernetes API server, for the tests, the benchmarks and the demo mode.

It serves a `KubeStore` (namespaces, pods, networking.k8s.io/v1 NetworkPolicies, and
policy.networking.k8s.io/v1alpha2 ClusterNetworkPolicies while their CRD is installed, 404 before)
over HTTP to the real `kubernetes` client, the way the real API server does where kube-manager can tell:
- list: `GET /api/v1/namespaces`, `/api/v1/pods`, `/api/v1/namespaces/<ns>/pods`,
  `/apis/networking.k8s.io/v1/networkpolicies` and the namespaced form,
  `/apis/policy.networking.k8s.io/v1alpha2/clusternetworkpolicies` (CustomObjectsApi's), with
  `metadata.resourceVersion` and `limit` / `continue` paging (`lists`: snapshots, 410, 504);
- watch: the same URLs with `?watch=true&resourceVersion=N&allowWatchBookmarks=true&timeoutSeconds=N`,
  answered as a chunked stream of JSON lines `{"type", "object"}`; headers go out at once; bookmarks
  come every `bookmark_interval` seconds and 2 s before the timeout, only at a version past the
  watch's (`watches.WatchCacheVersions`); the stream ends cleanly after timeoutSeconds; a compacted
  version is an in-stream ERROR event with a 410 `Status`, a version not reached a silent watch;
  `sendInitialEvents` (a watch-list, also what a watch from no version or "0" becomes) needs
  `resourceVersionMatch=NotOlderThan` and ends its initial events with a marked bookmark;
- get, create (POST), replace (PUT, with the resourceVersion precondition) and delete of one object,
  a client's writes going through `admission` first; errors are `Status` objects shaped as the real
  server's (`errors`);
- `coordination.k8s.io/v1` Leases (`leases`), so that several daemons can elect a leader;
- `events.k8s.io/v1` Events (`events`: create, get, replace, patch, list), and the status subresource
  of ClusterNetworkPolicies and pods (GET, PUT, PATCH `.../NAME/status`), so that the demo shows
  what kube-manager reports in Kubernetes (SPEC 15) and tests set pods' IPs as a kubelet does.

Fault injection (the store's `drop_watches`, `freeze_watches`, `close_watches`, `compact`, the Events'
`fail`, the Leases' `fail_writes_from`) is the emulator's alone: no real server has such a switch,
and tests/realkube/test_emulator_parity.py, which holds the rest to a real kube-apiserver, leaves it
out.

Runs on gevent.pywsgi in the calling hub (`EmulatedApiServer`); `runner.EmulatorRunner` starts it
in the background for blocking code. `python -m simulators.kube_api.server -f DIR` serves
manifests from the command line.
"""
from __future__ import annotations

import argparse
import errno
import json
import logging
import re
import sys
import time
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple
from urllib.parse import parse_qs

from gevent.pywsgi import WSGIServer
from gevent.queue import Empty

from simulators.kube_api.admission import admit_create, admit_status, admit_update
from simulators.kube_api.errors import ApiError, invalid, too_large_resource_version
from simulators.kube_api.events import event_route
from simulators.kube_api.leases import lease_route
from simulators.kube_api.lists import Lister
from simulators.kube_api.store import KubeStore
from simulators.kube_api.watches import (CLOSE, DROP, FREEZE, Bookmark,
                                         Subscription, event_line, expired)
from kube_manager.registry import KINDS, Resource
from kube_manager.observability.logging_setup import kv, setup_logging
from kube_manager.offline.manifests import ManifestError, load_manifests

log = logging.getLogger(__name__)

DEFAULT_BOOKMARK_INTERVAL = 60.0
DEFAULT_WATCH_TIMEOUT = 1800  # the real server picks 30-60 min when the client gives none
PRE_TIMEOUT_BOOKMARK = 2.0  # seconds before a watch's end: its last bookmark
JSON_HEADERS = [("Content-Type", "application/json")]
StartResponse = Callable[..., Callable[[bytes], None]]
Route = Tuple[Resource, Optional[str], Optional[str]]  # resource, namespace, name


def _routes() -> List[Tuple["re.Pattern[str]", Resource, bool]]:
    """(pattern, resource, has namespace group) for every URL form served."""
    routes = []
    for res in KINDS.resources().values():
        routes.append((re.compile(rf"^{re.escape(res.api_prefix)}/{res.name}(?:/([^/]+))?$"), res,
                       False))
        if res.namespaced:
            routes.append((re.compile(
                rf"^{re.escape(res.api_prefix)}/namespaces/([^/]+)/{res.name}(?:/([^/]+))?$"), res,
                True))
    return routes


ROUTES = _routes()


def match_route(path: str) -> Optional[Route]:
    for pattern, res, namespaced_url in ROUTES:
        found = pattern.match(path)
        if found:
            if namespaced_url:
                return res, found.group(1), found.group(2)
            if res.namespaced and found.group(1):
                return None  # /api/v1/pods/<name> does not exist
            return res, None, found.group(1)
    return None


class _Query:
    """The query parameters the API server honours here, validated as it does."""

    def __init__(self, environ: Dict[str, Any]) -> None:
        raw = parse_qs(environ.get("QUERY_STRING", ""))
        self._values = {key: values[-1] for key, values in raw.items()}

    def flag(self, name: str) -> bool:
        return self._values.get(name, "").lower() in ("true", "1")

    def integer(self, name: str) -> Optional[int]:
        text = self._values.get(name, "")
        if not text:
            return None
        try:
            value = int(text)
        except ValueError:
            raise ApiError(400, "BadRequest", f"invalid {name}: {text!r}") from None
        if value < 0:
            raise ApiError(400, "BadRequest", f"invalid {name}: {text!r}")
        return value

    def text(self, name: str) -> str:
        return self._values.get(name, "")


class EmulatorApp:
    """The WSGI application: routes requests to a `KubeStore`."""

    def __init__(self, store: KubeStore, bookmark_interval: float = DEFAULT_BOOKMARK_INTERVAL) -> None:
        self.store = store
        self.bookmark_interval = bookmark_interval
        self.lister = Lister(store)

    def __call__(self, environ: Dict[str, Any], start_response: StartResponse) -> Any:
        path = environ.get("PATH_INFO", "")
        method = environ.get("REQUEST_METHOD", "GET")
        try:
            if path in ("/healthz", "/livez", "/readyz"):
                return _reply(start_response, "200 OK", b"ok", [("Content-Type", "text/plain")])
            if path == "/version":
                return _json(start_response, 200, {"major": "1", "minor": "30",
                                                   "gitVersion": "v1.30.0-kube-manager-emulator"})
            lease = lease_route(path)
            if lease is not None:
                return self._lease(method, *lease, environ, start_response)
            event = event_route(path)
            if event is not None:
                return self._event(method, *event, environ, start_response)
            status = path.endswith("/status")
            route = match_route(path[:-len("/status")] if status else path)
            if route is None or (status and (route[2] is None or not (route[0].crd or route[0].name == "pods"))):
                raise ApiError(404, "NotFound", "the server could not find the requested resource")
            if status:
                return self._status(method, route, environ, start_response)
            return self._dispatch(method, route, _Query(environ), environ, start_response)
        except ApiError as exc:
            return _json(start_response, exc.code, exc.status())

    def _dispatch(self, method: str, route: Route, query: _Query, environ: Dict[str, Any],
                  start_response: StartResponse) -> Any:
        res, namespace, name = route
        store = self.store
        if name is None and method == "GET":
            if query.flag("watch"):
                return self._watch(res, namespace, query, start_response)
            return _json(start_response, 200, self.lister.answer(
                res, namespace, query.integer("limit"), query.text("continue"), query.integer("resourceVersion")))
        if name is None and method == "POST":
            body = _body(environ, res, namespace)
            if body["metadata"].get("resourceVersion"):
                raise ApiError(500, "InternalError", "Internal error occurred: resourceVersion should not be set "
                                                     "on objects to be created")
            return _json(start_response, 201, store.create(admit_create(res, store.prepare(body)[1])))
        if name is not None and method == "GET":
            return _json(start_response, 200, store.get(res.name, namespace or "", name))
        if name is not None and method == "PUT":
            body = _body(environ, res, namespace)
            if body["metadata"].get("name") != name:
                raise ApiError(400, "BadRequest", "the name of the object does not match the URL")
            old = store.get(res.name, namespace or "", name)
            return _json(start_response, 200, store.update(admit_update(res, old, store.prepare(body)[1]),
                                                           check_version=True))
        if name is not None and method == "DELETE":
            if res.name == "pods":  # deleted gracefully (at once, unscheduled): marked, then gone
                held = store.get(res.name, namespace or "", name)
                held["metadata"].update(deletionTimestamp=_now(), deletionGracePeriodSeconds=0)
                store.update(held)
            return _json(start_response, 200, store.delete(res.name, namespace or "", name))
        raise ApiError(405, "MethodNotAllowed", f"{method} is not supported on {res.name}")

    def _lease(self, method: str, namespace: str, name: str, environ: Dict[str, Any],
               start_response: StartResponse) -> Any:
        leases = self.store.leases
        if not name and method == "POST":
            return _json(start_response, 201, leases.create(namespace, _json_body(environ)))
        if name and method == "GET":
            return _json(start_response, 200, leases.get(namespace, name))
        if name and method == "PUT":  # 201 when it created the Lease, as the real server answers
            code = 200 if _exists(leases.get, namespace, name) else 201
            return _json(start_response, code, leases.replace(namespace, name, _json_body(environ)))
        if name and method == "DELETE":
            return _json(start_response, 200, leases.delete(namespace, name))
        raise ApiError(405, "MethodNotAllowed", f"{method} is not supported on leases")

    def _event(self, method: str, namespace: Optional[str], name: str, environ: Dict[str, Any],
               start_response: StartResponse) -> Any:
        events = self.store.events
        events.check()
        if namespace is None and not name and method == "GET":
            return _json(start_response, 200, _event_list(events.list()))
        if namespace is not None and not name and method == "GET":
            return _json(start_response, 200, _event_list(events.list(namespace)))
        if namespace is not None and not name and method == "POST":
            return _json(start_response, 201, events.create(namespace, _json_body(environ)))
        if namespace is not None and name and method == "GET":
            return _json(start_response, 200, events.get(namespace, name))
        if namespace is not None and name and method == "PUT":
            code = 200 if _exists(events.get, namespace, name) else 201
            return _json(start_response, code, events.replace(namespace, name, _json_body(environ)))
        if namespace is not None and name and method == "PATCH":
            return _json(start_response, 200, events.patch(namespace, name, _json_body(environ)))
        raise ApiError(405, "MethodNotAllowed", f"{method} is not supported on events")

    def _status(self, method: str, route: Route, environ: Dict[str, Any], start_response: StartResponse) -> Any:
        res, namespace, name = route
        assert name is not None
        if method == "GET":
            return _json(start_response, 200, self.store.get(res.name, namespace or "", name))
        if method in ("PUT", "PATCH"):
            return _json(start_response, 200, self.store.update_status(
                res.name, name, _json_body(environ), patch=method == "PATCH", namespace=namespace or "",
                check=lambda obj: admit_status(res, obj)))
        raise ApiError(405, "MethodNotAllowed", f"{method} is not supported on {res.name}/status")

    def _watch(self, res: Resource, namespace: Optional[str], query: _Query,
               start_response: StartResponse) -> Any:
        since = query.integer("resourceVersion")
        timeout = query.integer("timeoutSeconds") or DEFAULT_WATCH_TIMEOUT
        bookmarks = query.flag("allowWatchBookmarks")
        watch_list = _watch_list(query)
        try:
            if watch_list and (since or 0) > self.store.resource_version:
                raise too_large_resource_version(since or 0, self.store.resource_version)
            # Subscribing before any I/O: no event can slip between the replay and the queue.
            replay, sub = self.store.subscribe(res.name, namespace, None if watch_list else since)
        except ApiError as exc:
            if exc.code not in (410, 504):
                raise
            return _reply(start_response, "200 OK", event_line("ERROR", exc.status()), JSON_HEADERS)
        if watch_list:  # from the version of its initial events on, which end with a marked bookmark
            sub.since = self.store.resource_version
            if bookmarks:
                replay.append(self.store.bookmark_line(res, sub.since, initial_events_end=True))
        write = start_response("200 OK", JSON_HEADERS + [("Cache-Control", "no-cache, private")])
        write(b"")  # send the headers now: the client's call returns before the first event
        return self._stream(res, replay, sub, timeout, bookmarks)

    def _stream(self, res: Resource, replay: List[bytes], sub: Subscription, timeout: int,
                bookmarks: bool) -> Iterator[bytes]:
        """The watch's lines. As from the real watch cache, a bookmark goes out only when its
        version is past the one the watch started from (for a watch-list, its initial events'):
        on a cluster where nothing is written, a watch gets none."""
        deadline = time.monotonic() + timeout
        # Bookmarks come every interval and once shortly before the deadline, as from the real
        # server, so that a client resumes its next watch from a recent version.
        pre_timeout = deadline - PRE_TIMEOUT_BOOKMARK
        next_bookmark = min(time.monotonic() + self.bookmark_interval, pre_timeout)
        try:
            yield from replay
            while True:
                now = time.monotonic()
                if now >= deadline:
                    return
                wait = deadline - now
                if bookmarks:
                    wait = max(0.0, min(wait, next_bookmark - now))
                try:
                    item = sub.queue.get(timeout=wait)
                except Empty:
                    if bookmarks and time.monotonic() >= next_bookmark:
                        next_bookmark = time.monotonic() + self.bookmark_interval
                        if next_bookmark >= pre_timeout > time.monotonic():
                            next_bookmark = pre_timeout
                        version = self.store.bookmark_version(res)
                        if version > sub.since:
                            yield self.store.bookmark_line(res, version)
                    continue
                if item == DROP:
                    # ECONNRESET makes pywsgi close the socket without the final chunk, silently.
                    raise ConnectionResetError(errno.ECONNRESET, "watch dropped by the emulator")
                if item == CLOSE:
                    return
                if item == FREEZE:
                    while sub.queue.get() not in (DROP, CLOSE):
                        pass  # stalled: what would have been sent is lost, the connection stays
                    return
                if isinstance(item, Bookmark):
                    if bookmarks and item.resource_version > sub.since:
                        yield self.store.bookmark_line(res, item.resource_version)
                    continue
                yield item
        finally:
            self.store.unsubscribe(sub)


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _exists(get: Callable[[str, str], Any], namespace: str, name: str) -> bool:
    try:
        get(namespace, name)
    except ApiError:
        return False
    return True


def _watch_list(query: _Query) -> bool:
    """Whether a watch asks for its initial events (a watch-list), checked as the real server
    checks the options (422 for a `resourceVersionMatch` other than NotOlderThan or without it).
    As there (the WatchList feature, on by default), a watch from no version or "0" that names
    neither option is made one."""
    send, match = query.text("sendInitialEvents"), query.text("resourceVersionMatch")
    if not send and not match and query.text("resourceVersion") in ("", "0"):
        return True
    if send and match != "NotOlderThan":
        raise invalid("meta.k8s.io", "ListOptions", "", [(
            "FieldValueForbidden", "resourceVersionMatch",
            "Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan")])
    if match and not send:
        raise invalid("meta.k8s.io", "ListOptions", "", [(
            "FieldValueForbidden", "resourceVersionMatch",
            "Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided")])
    return send.lower() == "true"


def _event_list(items: List[Dict[str, Any]]) -> Dict[str, Any]:
    return {"kind": "EventList", "apiVersion": "events.k8s.io/v1", "metadata": {}, "items": items}


def _json_body(environ: Dict[str, Any]) -> Any:
    try:
        length = int(environ.get("CONTENT_LENGTH") or 0)
        return json.loads(environ["wsgi.input"].read(length) or b"null")
    except (ValueError, UnicodeDecodeError):
        raise ApiError(400, "BadRequest", "the body is not valid JSON") from None


def _body(environ: Dict[str, Any], res: Resource, namespace: Optional[str]) -> Dict[str, Any]:
    body = _json_body(environ)
    if not isinstance(body, dict):
        raise ApiError(400, "BadRequest", "the body must be a JSON object")
    body.setdefault("kind", res.kind)
    if body.get("kind") != res.kind:
        raise ApiError(400, "BadRequest", f"kind {body.get('kind')!r} sent to {res.name}")
    meta = body.setdefault("metadata", {})
    if not isinstance(meta, dict):
        raise ApiError(400, "BadRequest", "metadata must be an object")
    if namespace is not None:
        if meta.get("namespace") not in (None, "", namespace):
            raise ApiError(400, "BadRequest",
                           "the namespace of the object does not match the namespace in the URL")
        meta["namespace"] = namespace
    return body


def _reply(start_response: StartResponse, status: str, body: bytes,
           headers: List[Tuple[str, str]]) -> List[bytes]:
    start_response(status, headers + [("Content-Length", str(len(body)))])
    return [body]


_STATUS_TEXT = {200: "OK", 201: "Created", 400: "Bad Request", 403: "Forbidden", 404: "Not Found",
                405: "Method Not Allowed", 409: "Conflict", 410: "Gone",
                422: "Unprocessable Entity", 500: "Internal Server Error", 504: "Gateway Timeout"}


def _json(start_response: StartResponse, code: int, payload: Dict[str, Any]) -> List[bytes]:
    body = json.dumps(payload, separators=(",", ":")).encode()
    return _reply(start_response, f"{code} {_STATUS_TEXT.get(code, 'Error')}", body, JSON_HEADERS)


class EmulatedApiServer:
    """A `KubeStore` served over HTTP by gevent.pywsgi in the current gevent hub."""

    def __init__(self, store: Optional[KubeStore] = None, host: str = "127.0.0.1", port: int = 0,
                 bookmark_interval: float = DEFAULT_BOOKMARK_INTERVAL) -> None:
        self.store = store if store is not None else KubeStore()
        self.app = EmulatorApp(self.store, bookmark_interval)
        self._server = WSGIServer((host, port), self.app, log=None, error_log=log)

    def start(self) -> None:
        """Bind and start serving (returns at once; the server runs in greenlets)."""
        self._server.start()
        log.info("emulated Kubernetes API server listening", extra=kv(url=self.url))

    @property
    def url(self) -> str:
        host, port = self._server.address[:2]
        return f"http://{'[' + host + ']' if ':' in host else host}:{port}"

    def serve_forever(self) -> None:
        """Serve until `stop` (or an interrupt), blocking the calling greenlet."""
        self._server.serve_forever()

    def stop(self, timeout: float = 1.0) -> None:
        """Stop listening and end every open watch."""
        self.store.drop_watches()
        self._server.stop(timeout=timeout)


def main(argv: Optional[List[str]] = None) -> int:
    """Serve manifests until interrupted: `python -m simulators.kube_api.server -f examples/`."""
    parser = argparse.ArgumentParser(prog="python -m simulators.kube_api.server",
                                     description="Emulated Kubernetes API server")
    parser.add_argument("-f", "--filename", action="append", default=[], metavar="PATH",
                        help="manifest file or directory (repeatable)")
    parser.add_argument("--listen", default="127.0.0.1:8080", metavar="HOST:PORT")
    parser.add_argument("--bookmark-interval", type=float, default=DEFAULT_BOOKMARK_INTERVAL)
    args = parser.parse_args(argv)
    setup_logging(logging.INFO)
    host, _, port = args.listen.rpartition(":")
    try:
        manifests = load_manifests(args.filename)
        server = EmulatedApiServer(host=host.strip("[]") or "127.0.0.1", port=int(port),
                                   bookmark_interval=args.bookmark_interval)
        server.store.load(manifests)
        server.start()
    except (ManifestError, ApiError, ValueError, OSError) as exc:
        print(f"emulator: {exc}", file=sys.stderr)
        return 2
    print(server.url, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
