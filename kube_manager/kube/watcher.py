"""List then watch one Kubernetes resource over the official client's ApiClient, losing no event.

One `KubeWatcher` per registered kind (`kube/kinds.py`: its resource, lister and trimmer), all
sharing one `ApiClient`. The cycle is the one client-go's reflector uses:
1. list (paged) and take the list's resourceVersion;
2. watch from that version with bookmarks, a server-side `timeoutSeconds` drawn between 300 and 600
   s (so that the watches of many clients do not all expire together), and a client-side read
   timeout of `silence_timeout` (90 s): the API server sends a bookmark about every minute, so a
   watch on which neither an event nor a bookmark arrived for that long is stuck (SPEC section 7,
   "silence is a fault") and is restarted at once from the last version seen, counted as a
   `silent` restart;
3. when the server ends the watch, watch again from the last version seen (events and bookmarks
   advance it); on a connection or API error, the same after a backoff of 0.8 s doubling up to 30 s
   (reset by the next success). A watch silent again right after a silent restart (nothing at all
   between them) is re-listed instead: the API server accepts a watch from a version it has not
   reached and says nothing until it does (after etcd was restored from a backup, every version a
   client holds is ahead of it), so watching from that version again would wait in silence and then
   miss every change made before the server reached it;
4. on 410 Gone (the version was compacted away), list again and emit the differences against what
   was seen before as synthetic events, so that nothing is lost, then a RELISTED signal. The re-list
   is immediate, unless the previous watch also expired before delivering anything (then the same
   backoff applies);
5. a custom resource the API server answers 404 for (its CRD is not installed) is absent, a normal
   state: it reads as an empty list (LISTED, so the initial lists are not held up; what was known of
   it is DELETED), is logged once as a WARNING, and is looked for again every `absent_recheck`
   seconds and at each `look_again` (the daemon's resyncs); once served, it is listed and watched.

Events go to `on_event(resource, event_type, obj)` (in the daemon, `EventDispatcher.on_event`
itself: the watcher calls downstream only):
- `ADDED` / `MODIFIED` / `DELETED` with `obj` a plain dict in API-server form, trimmed to what the
  translator reads (the kind's trimmer, `kube_manager/handlers/`); normalised against what this
  watcher has seen (`kube/seen.py`): ADDED once per object lifetime, MODIFIED only on a change,
  DELETED only for a known object;
- `LISTED` once, when the first list has been delivered; `RELISTED` after each re-list's
  differences. `obj` is then `{"resourceVersion": rv}`. Until LISTED, the picture is incomplete, so
  nothing should be garbage-collected on its basis.
The callback runs in the watcher's greenlet/thread; an exception it raises is logged and the event
counts as delivered. It gets its own copy of the object.

The watcher keeps `Database.kube_connections[resource]` (a `ConnectionStatus`) up to date for the
introspect page and `/livez` (`last_event_at`: the last event or bookmark; `last_progress_at`: the
same, a completed list or a watch the server accepted), and the `kube_events` / `watch_restarts` metrics when given a `Metrics` (watch
events by their type, and every object of a list or re-list as type `LISTED`).
Blocking calls are plain socket I/O: in the daemon, after `gevent.monkey.patch_all()`, `run` is a
greenlet; in tests it runs in a thread. `stop` may be called from anywhere.
"""
from __future__ import annotations

import logging
import random
import threading
import time
from typing import Any, Callable, Dict, Iterable, List, Optional

import urllib3
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from kubernetes.watch.watch import iter_resp_lines

from kube_manager.records.db import ConnectionStatus, Database
from kube_manager.kube.kinds import Kind, KindRegistry
from kube_manager.observability.logging_setup import kv
from kube_manager.observability.metrics import Metrics
from kube_manager.kube.seen import ADDED, DELETED, MODIFIED, Event, Key, SeenObjects, trimmed_key
from kube_manager.settings import WatchSettings
from vnc_client import jsoncodec
from vnc_client.ratelimit import ExponentialRateLimiter

log = logging.getLogger(__name__)

LISTED, RELISTED = "LISTED", "RELISTED"
BOOKMARK, ERROR = "BOOKMARK", "ERROR"

OnEvent = Callable[[str, str, Dict[str, Any]], None]


class WatchError(Exception):
    """An ERROR event other than 410, or a line that is not a watch event."""


class _Gone(Exception):
    """410: the resourceVersion is too old; only a new list can continue."""


class _Silent(Exception):
    """Neither an event nor a bookmark within `silence_timeout`: the watch is stuck."""


class _Absent(Exception):
    """404 for a custom resource: its CRD is not installed (a normal state, never a fault); or
    403: kube-manager may not read it (RBAC not updated), which must not hold up the other kinds."""


# The two backoff items of a watcher: errors (reset by any progress) and 410s right after a re-list.
_FAILED, _EXPIRED = "failed", "expired"

# Failures after which the watch is retried with backoff.
RETRYABLE = (urllib3.exceptions.HTTPError, ApiException, OSError, WatchError, ValueError)


def _object(value: Any) -> Dict[str, Any]:
    """`value` when it is an object, else `{}`: a malformed event never stops the watch."""
    return value if isinstance(value, dict) else {}


class KubeWatcher:
    """Lists then watches one resource until `stop`; see the module docstring for the contract."""

    def __init__(self, api_client: client.ApiClient, kind: Kind, on_event: OnEvent,
                 db: Database, *, metrics: Optional[Metrics] = None,
                 settings: WatchSettings = WatchSettings(),
                 sleep: Optional[Callable[[float], None]] = None,
                 rand: Optional[random.Random] = None,
                 clock: Callable[[], float] = time.time,
                 explain: Callable[[BaseException], Optional[str]] = lambda exc: None) -> None:
        """`explain`: the line for a failure only a setting can fix (a wrong CA, a refused
        identity; kube/access.py), which logs it itself; None for the others."""
        self.resource = kind.resource
        assert kind.lister is not None and kind.trimmer is not None  # checked when registered
        self._list_fn = kind.lister(api_client)
        self._trim = kind.trimmer
        self._on_event = on_event
        self._metrics = metrics
        self._settings = settings
        self._stopped = threading.Event()
        self._sleep = sleep if sleep is not None else self._stopped.wait
        self._rand = rand if rand is not None else random.Random()
        self._clock = clock
        self._explain = explain
        # Two items with their own counts: connection/API errors, and expiries right after a re-list.
        self._backoff = ExponentialRateLimiter(settings.initial_backoff, settings.max_backoff)
        self._expired_again = False  # no watch event since the last 410
        self._silent_again = False  # nothing received since the last silent restart
        self._seen = SeenObjects()  # what was delivered: to tell real changes, to deliver a DELETED
        self._rv: Optional[str] = None
        self._listed = False
        self._look_again = threading.Event()
        self._response: Any = None
        self.status: ConnectionStatus = db.kube_connections.setdefault(
            kind.name, ConnectionStatus(name=kind.name))
        self.status.url = (api_client.configuration.host.rstrip("/")
                           + f"{self.resource.api_prefix}/{self.resource.name}")

    # --- control ---------------------------------------------------------------------------------

    def run(self) -> None:
        """List and watch until `stop` is called."""
        while not self._stopped.is_set():
            try:
                if self._rv is None:
                    self._list()
                self._watch()
            except _Gone as exc:
                self._restarted("expired", f"410 Gone: {exc}")
                self._rv = None
                # The first expiry re-lists at once; one right after a re-list (a server whose
                # watch cache lags its lists) backs off, so as not to list the cluster in a loop.
                delay = self._backoff.when(_EXPIRED) if self._expired_again else 0.0
                self._expired_again = True
                log.info("watch expired, re-listing", extra=kv(resource=self.resource.name,
                                                               relist_in=delay))
                if delay:
                    self._sleep(delay)
            except _Absent as exc:
                self._absent(str(exc))
                self._look_again.wait(self._settings.absent_recheck)
                self._look_again.clear()
            except _Silent as exc:
                self._restarted("silent", str(exc))
                relist = self._silent_again
                log.warning("watch silent again, re-listing" if relist else "watch silent, restarting", extra=kv(
                    resource=self.resource.name, silent_for=self._settings.silence_timeout, rv=self._rv))
                if relist:
                    self._rv = None
                self._silent_again = not relist
            except RETRYABLE as exc:
                if self._stopped.is_set():
                    break
                reason = ("timeout" if isinstance(exc, urllib3.exceptions.TimeoutError)
                          # urllib3 derives a refused connection from ConnectTimeoutError
                          and not isinstance(exc, urllib3.exceptions.NewConnectionError) else "error")
                explained = self._explain(exc)
                self._restarted(reason, explained or f"{type(exc).__name__}: {exc}")
                delay = self._backoff.when(_FAILED)
                if explained is None:  # else said once already, for every watcher
                    log.warning("watch failed, retrying", extra=kv(
                        resource=self.resource.name, error=self.status.last_error, retry_in=delay))
                self._sleep(delay)
        self.status.connected = False

    def look_again(self) -> None:
        """Ask the API server again now whether it serves an absent custom resource (at a resync)."""
        self._look_again.set()

    def stop(self) -> None:
        """Make `run` return soon: wakes its sleep and breaks its open connection."""
        self._stopped.set()
        self._look_again.set()
        response = self._response
        if response is not None:
            try:
                response.shutdown()
            except (OSError, ValueError, RuntimeError):
                pass  # already closed or released: run notices the flag by itself

    # --- list ------------------------------------------------------------------------------------

    def _list(self) -> None:
        items: Dict[Key, Dict[str, Any]] = {}
        rv: Optional[str] = None
        token: Optional[str] = None
        while True:
            kwargs: Dict[str, Any] = {"limit": self._settings.page_size}
            if token:
                kwargs["_continue"] = token
            page = self._read_json(**kwargs)
            metadata = page.get("metadata") or {}
            rv = rv or metadata.get("resourceVersion")
            for item in page.get("items") or []:
                trimmed = self._trim(item)
                items[trimmed_key(trimmed)] = trimmed
            token = metadata.get("continue")
            if not token:
                break
        if not rv:
            raise WatchError("the list carried no resourceVersion")
        if self.status.absent:
            self.status.absent = False
            log.info("custom resource served now, listing and watching it", extra=kv(
                resource=self.resource.name, api_version=self.resource.api_version))
        self.status.last_progress_at = self._clock()
        if self._metrics is not None:  # objects a list delivered: type LISTED, one per object
            self._metrics.kube_events.labels(resource=self.resource.name, type=LISTED).inc(len(items))
        self._mark_connected(rv)
        self._backoff.forget(_FAILED)
        self._apply_list(items)
        signal = RELISTED if self._listed else LISTED
        self._listed = True
        self.status.initial_list_done = True
        log.info("listed", extra=kv(resource=self.resource.name, objects=len(items), rv=rv,
                                    relist=signal == RELISTED))
        self._emit(signal, {"resourceVersion": rv})

    def _call(self, read_timeout: float, **kwargs: Any) -> Any:
        """The raw urllib3 response of a list or watch request; 410 (an expired continue token,
        or a server that refuses an old watch version outright) becomes _Gone."""
        try:
            response = self._list_fn(_preload_content=False,
                                     _request_timeout=(self._settings.connect_timeout, read_timeout),
                                     **kwargs)
        except ApiException as exc:
            if exc.status == 410:
                raise _Gone(exc.reason) from None
            if exc.status in (403, 404) and self.resource.crd:
                raise _Absent(f"{exc.status} {exc.reason}") from None
            raise
        self._response = response
        return response

    def _read_json(self, **kwargs: Any) -> Dict[str, Any]:
        response = self._call(self._settings.list_read_timeout, **kwargs)
        try:
            return jsoncodec.loads(response.data)
        finally:
            self._response = None
            response.release_conn()

    def _apply_list(self, items: Dict[Key, Dict[str, Any]]) -> None:
        self._emit_all(self._seen.listed(items))

    # --- watch -----------------------------------------------------------------------------------

    def _watch(self) -> None:
        timeout = self._rand.randint(self._settings.min_timeout_seconds,
                                     self._settings.max_timeout_seconds)
        response = self._call(self._settings.silence_timeout, watch=True,
                              resource_version=self._rv, allow_watch_bookmarks=True,
                              timeout_seconds=timeout)
        try:
            # `stop` either set the flag before this check, or finds `_response` and shuts it.
            if self._stopped.is_set():
                return
            self._mark_connected(self._rv)
            # The server took the watch: progress, as a list is (SPEC 7). A watch restarted for
            # silence on a quiet cluster is thus no stall; one that cannot be restarted is.
            self.status.last_progress_at = self._clock()
            log.debug("watching", extra=kv(resource=self.resource.name, rv=self._rv,
                                           timeout=timeout))
            for line in iter_resp_lines(response):
                if self._stopped.is_set():
                    return
                if line:
                    self._handle(line)
        except urllib3.exceptions.ReadTimeoutError:
            if self._stopped.is_set():
                return
            raise _Silent(f"neither an event nor a bookmark for {self._settings.silence_timeout:g} s") from None
        finally:
            self._response = None
            response.close()  # never hand a half-read stream back to the pool
            response.release_conn()
        self._backoff.forget(_FAILED)  # a clean end of the stream: the server's timeout

    def _handle(self, line: str) -> None:
        try:
            event = jsoncodec.loads(line)
            event_type, obj = event["type"], event["object"]
        except (ValueError, KeyError, TypeError):
            raise WatchError(f"not a watch event: {line[:200]!r}") from None
        if not isinstance(obj, dict):
            raise WatchError(f"watch event without an object: {line[:200]!r}")
        self.status.last_event_at = self.status.last_progress_at = self._clock()
        if self._metrics is not None:
            self._metrics.kube_events.labels(resource=self.resource.name, type=event_type).inc()
        if event_type == ERROR:
            if obj.get("code") == 410:
                raise _Gone(obj.get("message", ""))
            raise WatchError(f"{obj.get('code')} {obj.get('reason')}: {obj.get('message')}")
        rv = _object(obj.get("metadata")).get("resourceVersion")
        if event_type in (ADDED, MODIFIED, DELETED):
            trimmed = self._trim(obj)
            if event_type == DELETED:
                gone = self._seen.deleted(trimmed)
                if gone is not None:
                    self._emit(*gone)
            else:
                self._emit_all(self._seen.upserted(trimmed))
        elif event_type != BOOKMARK:
            log.warning("unknown watch event type ignored",
                        extra=kv(resource=self.resource.name, type=event_type))
        if rv and isinstance(rv, str):
            self._rv = rv
            self.status.resource_version = rv
        self._backoff.forget(_FAILED)
        self._backoff.forget(_EXPIRED)
        self._expired_again = self._silent_again = False

    # --- absent custom resource ------------------------------------------------------------------

    def _absent(self, answer: str) -> None:
        """The API server does not serve the resource (404), or not to us (403): to the consumer,
        an empty list (what it knew of the kind is deleted, and the initial lists are not held
        up); logged once per disappearance; looked for again at each resync, never fatal."""
        self._rv = None
        self.status.last_progress_at = self._clock()  # the server answered: not a stuck watch
        forbidden = answer.startswith("403")
        if forbidden:
            self.status.last_error = f"{answer}: may not list {self.resource.name}"
            self.status.last_error_at = self._clock()
        if self.status.absent and self._listed:
            log.debug("custom resource still not served", extra=kv(resource=self.resource.name, answer=answer))
            return
        self.status.absent = True
        self.status.connected = False
        self._look_again.clear()  # a resync asked while it was served: nothing to look for then
        fields = kv(resource=self.resource.name, crd=f"{self.resource.name}.{self.resource.group}",
                    api_version=self.resource.api_version, answer=answer)
        if forbidden:
            log.warning("custom resource forbidden (grant list and watch on it, see the RBAC in "
                        "docs/operations.md): running without it, looking again at each resync", extra=fields)
        else:
            log.warning("custom resource not served (its CRD is not installed): looking for it again "
                        "at each resync", extra=fields)
        self._backoff.forget(_FAILED)
        self._apply_list({})
        signal = RELISTED if self._listed else LISTED
        self._listed = True
        self.status.initial_list_done = True
        self._emit(signal, {"resourceVersion": ""})

    # --- shared ----------------------------------------------------------------------------------

    def _emit_all(self, events: Iterable[Event]) -> None:
        for event_type, obj in events:
            self._emit(event_type, obj)

    def _emit(self, event_type: str, obj: Dict[str, Any]) -> None:
        """Deliver `obj`, which nothing here keeps (SeenObjects keeps a packed copy)."""
        try:
            self._on_event(self.resource.name, event_type, obj)
        except Exception:  # a consumer bug must not stop the watch; the resync repairs
            log.exception("event handler failed", extra=kv(resource=self.resource.name,
                                                            type=event_type))

    def _mark_connected(self, rv: Optional[str]) -> None:
        self._rv = rv
        self.status.connected = True
        self.status.resource_version = rv or ""

    def _restarted(self, reason: str, error: str) -> None:
        self.status.connected = False
        self.status.last_error = error
        self.status.last_error_at = self._clock()
        self.status.reconnects += 1
        if self._metrics is not None:
            self._metrics.watch_restarts.labels(resource=self.resource.name, reason=reason).inc()


def make_watchers(api_client: client.ApiClient, kinds: KindRegistry, on_event: OnEvent, db: Database,
                  **kwargs: Any) -> List[KubeWatcher]:
    """One watcher per registered kind (in registry order), sharing `api_client`; call `run` on each."""
    return [KubeWatcher(api_client, kind, on_event, db, **kwargs) for kind in kinds]
