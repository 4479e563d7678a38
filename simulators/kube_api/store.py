"""The object store behind the emulated Kubernetes API server.

Holds namespaces, pods, NetworkPolicies and ClusterNetworkPolicies in memory with the bookkeeping the real API server (etcd)
gives watchers: one cluster-wide resourceVersion counter bumped by every write, a bounded history of
events so that a watch can resume from an older version, and "410 Gone" once that version has been
compacted away. Writers are the tests and the emulator's HTTP handlers; readers are the HTTP list
and watch handlers, and in-process listeners (the emulated CNI).

It lives in one gevent hub: every method must be called from that hub's thread (the runner in
`runner` marshals calls from other threads). Watch subscriptions are gevent queues filled
synchronously at write time, so a watcher sees every event exactly once and in order.

Objects are stored as the API server returns them: plain JSON dicts with `kind`, `apiVersion`,
`metadata.uid`, `metadata.resourceVersion`, `metadata.creationTimestamp` and, for namespaced kinds, a
`metadata.namespace` that defaults to `default`. Specs are kept exactly as given (no defaulting), so
that what the daemon reads matches what `translate` reads from the same manifests; the one exception
is the `kubernetes.io/metadata.name` label the API server sets on every namespace.

Custom resources (ClusterNetworkPolicy) are served only while their CRD is installed: a store can
start without it and have it installed (`install_crd`) or removed (`uninstall_crd`) later; until
then their URLs answer 404, as a cluster without the CRD does.
"""
from __future__ import annotations

import json
import logging
import time
import uuid
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Any, Callable, Deque, Dict, Iterable, List, Optional, Set, Tuple

from gevent.queue import Queue

from kube_manager.observability.logging_setup import kv
from kube_manager.registry import KINDS, NAMESPACES, Resource
from kube_manager.offline.manifests import Manifests
from simulators.kube_api.errors import ApiError
from simulators.kube_api.events import EventStore, merge_patch
from simulators.kube_api.leases import LeaseStore

_RESOURCES = KINDS.resources()  # the product's kinds, served by REST plural

log = logging.getLogger(__name__)

Key = Tuple[str, str]  # (namespace or "", name)
Listener = Callable[[str, str, Dict[str, Any]], None]  # (resource, event type, object)
NAME_LABEL = "kubernetes.io/metadata.name"
DEFAULT_HISTORY_LIMIT = 1000
# uids are uuid5 of the object's identity and how many times it was created, so that a run from the
# same manifests gives the same uids while a delete + re-create still gives a new one.
_UID_NAMESPACE = uuid.UUID("6f1c3a52-4a43-4b1e-9d55-2c8a3f4e7b10")


def expired(message: str) -> ApiError:
    return ApiError(410, "Expired", message)


# Control items a subscription queue can carry besides event lines.
DROP = "drop"     # break the connection without ending the chunked stream (a network failure)
CLOSE = "close"   # end the stream cleanly (as when the server-side timeout expires)
FREEZE = "freeze"  # keep the connection open but send nothing more, not even bookmarks


@dataclass(frozen=True)
class Bookmark:
    resource_version: int


@dataclass
class Subscription:
    """One open watch: which objects it wants, and the queue its events go to."""

    resource: Resource
    namespace: Optional[str]  # None: all namespaces
    queue: Queue = field(default_factory=Queue)

    def wants(self, resource: Resource, namespace: str) -> bool:
        return resource is self.resource and self.namespace in (None, namespace)


@dataclass(frozen=True)
class _Event:
    resource_version: int
    resource: Resource
    namespace: str
    line: bytes  # the serialised watch event, newline-terminated


def event_line(event_type: str, obj: Dict[str, Any]) -> bytes:
    return json.dumps({"type": event_type, "object": obj}, separators=(",", ":")).encode() + b"\n"


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _copy(obj: Any) -> Any:
    """A deep copy through JSON: also proves the object is what an API server could hold."""
    return json.loads(json.dumps(obj))


# The namespaces an API server makes itself: Leases may be created there whatever was loaded.
SYSTEM_NAMESPACES = frozenset({"default", "kube-system", "kube-public", "kube-node-lease"})


class KubeStore:
    """The served kinds' objects with resourceVersions, history and watch fan-out."""

    def __init__(self, history_limit: int = DEFAULT_HISTORY_LIMIT,
                 crds: Optional[Iterable[str]] = None) -> None:
        """`crds`: the custom resources installed at start (their REST plurals); None installs
        every one the table knows, `()` starts a cluster without any (see `install_crd`)."""
        self._objects: Dict[str, Dict[Key, Dict[str, Any]]] = {name: {} for name in _RESOURCES}
        self._crds: Set[str] = {name for name, res in _RESOURCES.items() if res.crd}
        if crds is not None:
            self._crds = {_known_crd(name).name for name in crds}
        self._rv = 0
        self._history: Deque[_Event] = deque()
        self._history_limit = history_limit
        self._compacted_rv = 0  # watches from an older version get 410 Gone
        self._subs: Dict[int, Subscription] = {}
        self._listeners: List[Listener] = []
        self._creations: Counter = Counter()
        self.leases = LeaseStore(self.namespace_exists)  # served apart: not watched, no shared resourceVersion
        self.events = EventStore()  # the same
        self.status_writes = 0  # writes through a status subresource, for tests

    # --- reading ---------------------------------------------------------------------------------

    @property
    def resource_version(self) -> int:
        return self._rv

    @property
    def compacted_resource_version(self) -> int:
        return self._compacted_rv

    @property
    def watch_count(self) -> int:
        return len(self._subs)

    def served(self, resource: str) -> bool:
        """Whether `resource` is served: a built-in kind, or a custom one whose CRD is installed."""
        res = _RESOURCES.get(resource)
        return res is not None and (not res.crd or res.name in self._crds)

    def namespace_exists(self, name: str) -> bool:
        """A Namespace object of this store, or one every cluster has (and never lists here)."""
        return name in SYSTEM_NAMESPACES or ("", name) in self._objects[NAMESPACES.name]

    def get(self, resource: str, namespace: str, name: str) -> Dict[str, Any]:
        res = self._resource(resource)
        obj = self._objects[res.name].get(self._key(res, namespace, name))
        if obj is None:
            raise _not_found(res, name)
        return _copy(obj)

    def list(self, resource: str, namespace: Optional[str] = None) -> List[Dict[str, Any]]:
        """The objects of `resource` (in `namespace` when given), ordered by namespace and name."""
        res = self._resource(resource)
        items = sorted(self._objects[res.name].items())
        return [_copy(obj) for key, obj in items if namespace is None or key[0] == namespace]

    # --- writing ---------------------------------------------------------------------------------

    def create(self, obj: Dict[str, Any]) -> Dict[str, Any]:
        """Store a new object (409 AlreadyExists if its name is taken) and notify the watchers."""
        res, new = self._prepare(obj)
        key = self._key(res, new["metadata"].get("namespace", ""), new["metadata"]["name"])
        if key in self._objects[res.name]:
            raise ApiError(409, "AlreadyExists",
                           f'{res.name} "{key[1]}" already exists')
        if res.namespaced and ("", key[0]) not in self._objects[NAMESPACES.name]:
            raise ApiError(404, "NotFound", f'namespaces "{key[0]}" not found')
        self._creations[(res.name, key)] += 1
        meta = new["metadata"]
        meta.setdefault("uid", str(uuid.uuid5(
            _UID_NAMESPACE, f"{res.name}/{key[0]}/{key[1]}/{self._creations[(res.name, key)]}")))
        meta["creationTimestamp"] = _now()
        if res.crd or res.name == "networkpolicies":  # the kinds whose generation kube-manager reads
            meta["generation"] = 1
        return self._write(res, key, new, "ADDED")

    def update(self, obj: Dict[str, Any], check_version: bool = False) -> Dict[str, Any]:
        """Replace an object (404 if absent), keeping its uid and creation time.

        With `check_version`, a `metadata.resourceVersion` in `obj` that is not the current one is a
        409 Conflict, as for a PUT to the real API server.
        """
        res, new = self._prepare(obj)
        key = self._key(res, new["metadata"].get("namespace", ""), new["metadata"]["name"])
        old = self._objects[res.name].get(key)
        if old is None:
            raise _not_found(res, key[1])
        given = new["metadata"].get("resourceVersion")
        if check_version and given and given != old["metadata"]["resourceVersion"]:
            raise ApiError(409, "Conflict", f'Operation cannot be fulfilled on {res.name} "{key[1]}": '
                                            "the object has been modified")
        for kept in ("uid", "creationTimestamp"):
            new["metadata"][kept] = old["metadata"][kept]
        if "generation" in old["metadata"]:  # moved by a change of the spec alone
            new["metadata"]["generation"] = old["metadata"]["generation"] + (new.get("spec") != old.get("spec"))
        if res.crd:  # the status subresource's: a write of the object leaves it alone
            new.pop("status", None)
            if "status" in old:
                new["status"] = old["status"]
        return self._write(res, key, new, "MODIFIED")

    def update_status(self, resource: str, name: str, body: Dict[str, Any], *, patch: bool) -> Dict[str, Any]:
        """A write through the status subresource of a cluster-scoped custom resource: a merge patch
        or a replacement (with the resourceVersion precondition) that changes `status` alone and
        leaves `metadata.generation` where it was."""
        res = self._resource(resource)
        key = self._key(res, "", name)
        old = self._objects[res.name].get(key)
        if old is None or not res.crd:
            raise _not_found(res, name)
        if not isinstance(body, dict):
            raise ApiError(400, "BadRequest", "the body must be a JSON object")
        given = (body.get("metadata") or {}).get("resourceVersion")
        if not patch and given and given != old["metadata"]["resourceVersion"]:
            raise ApiError(409, "Conflict", f'Operation cannot be fulfilled on {res.name} "{name}": '
                                            "the object has been modified")
        new = _copy(old)
        status = merge_patch(old, body).get("status") if patch else body.get("status")
        new.pop("status", None)
        if status is not None:
            new["status"] = status
        self.status_writes += 1
        return self._write(res, key, new, "MODIFIED")

    def apply(self, obj: Dict[str, Any]) -> Dict[str, Any]:
        """Create or replace."""
        res, new = self._prepare(obj)
        key = self._key(res, new["metadata"].get("namespace", ""), new["metadata"]["name"])
        return self.update(new) if key in self._objects[res.name] else self.create(new)

    def delete(self, resource: str, namespace: str, name: str) -> Dict[str, Any]:
        """Remove an object; a namespace takes its pods and NetworkPolicies with it, as on a real
        cluster (which deletes them before the namespace itself disappears)."""
        res = self._resource(resource)
        key = self._key(res, namespace, name)
        old = self._objects[res.name].get(key)
        if old is None:
            raise _not_found(res, name)
        if res is NAMESPACES:
            for other in _RESOURCES.values():
                if other.namespaced:
                    for inner in [k for k in self._objects[other.name] if k[0] == name]:
                        self.delete(other.name, *inner)
        del self._objects[res.name][key]
        gone = _copy(old)
        return self._record(res, key, gone, "DELETED")

    def load(self, manifests: Manifests) -> None:
        """Apply every object of `manifests`; namespaces referred to but not given are created, so
        that the cluster matches what `translate` assumes for the same manifests."""
        objects = manifests.objects
        for namespace_obj in objects["Namespace"]:
            self.apply(namespace_obj)
        for obj in list(objects["Pod"]) + list(objects["NetworkPolicy"]):
            namespace = (obj.get("metadata") or {}).get("namespace") or "default"
            if ("", namespace) not in self._objects[NAMESPACES.name]:
                self.create({"kind": "Namespace", "metadata": {"name": namespace}})
            self.apply(obj)
        for obj in objects["ClusterNetworkPolicy"]:  # 404 without the CRD, as on a real cluster
            self.apply(obj)

    def install_crd(self, resource: str) -> None:
        """Serve a custom resource from now on (`kubectl apply -f` its CRD); idempotent."""
        self._crds.add(_known_crd(resource).name)

    def uninstall_crd(self, resource: str) -> None:
        """Stop serving a custom resource as the API server does when its CRD is deleted: every
        object of it is deleted (watchers see each DELETED), its open watches end, and from then on
        its URLs answer 404."""
        res = _known_crd(resource)
        if res.name not in self._crds:
            return
        for key in sorted(self._objects[res.name]):
            self.delete(res.name, *key)
        self._crds.discard(res.name)
        for sub in self._subs.values():
            if sub.resource is res:
                sub.queue.put(CLOSE)

    # --- watch support ---------------------------------------------------------------------------

    def subscribe(self, resource: str, namespace: Optional[str],
                  since: Optional[int]) -> Tuple[List[bytes], Subscription]:
        """Open a watch: the event lines to replay first, and the subscription for what follows.

        `since` None (or 0) replays the current objects as ADDED, as the API server does for a watch
        without a resourceVersion. A version older than the compacted history is 410 Gone; so is one
        newer than the store (an emulator restarted under a client), which makes clients re-list.
        """
        res = self._resource(resource)
        if since:
            if since < self._compacted_rv:
                raise expired(f"too old resource version: {since} ({self._compacted_rv})")
            if since > self._rv:
                raise expired(f"too large resource version: {since} ({self._rv})")
            replay = [e.line for e in self._history
                      if e.resource_version > since and e.resource is res
                      and namespace in (None, e.namespace)]
        else:
            replay = [event_line("ADDED", obj) for key, obj in sorted(self._objects[res.name].items())
                      if namespace in (None, key[0])]
        sub = Subscription(res, namespace)
        self._subs[id(sub)] = sub
        return replay, sub

    def unsubscribe(self, sub: Subscription) -> None:
        self._subs.pop(id(sub), None)

    def bookmark_line(self, resource: Resource, resource_version: int) -> bytes:
        return event_line("BOOKMARK", {"kind": resource.kind, "apiVersion": resource.api_version,
                                       "metadata": {"resourceVersion": str(resource_version)}})

    def send_bookmarks(self) -> int:
        """Queue a bookmark at the current version on every watch; returns how many watches."""
        return self._broadcast(Bookmark(self._rv))

    def drop_watches(self) -> int:
        """Break every open watch connection, as a network failure would."""
        return self._broadcast(DROP)

    def freeze_watches(self) -> int:
        """Stall every open watch: open, no data, no bookmarks (a stuck proxy or API server).
        Watches opened afterwards work; `drop_watches` / `close_watches` still end stalled ones."""
        return self._broadcast(FREEZE)

    def close_watches(self) -> int:
        """End every open watch cleanly, as the server-side timeout does."""
        return self._broadcast(CLOSE)

    def compact(self) -> None:
        """Forget the whole event history: a watch from any older version now gets 410 Gone."""
        self._history.clear()
        self._compacted_rv = self._rv

    def add_listener(self, listener: Listener) -> None:
        """Call `listener(resource, event_type, object)` after every write (the emulated CNI)."""
        self._listeners.append(listener)

    def remove_listener(self, listener: Listener) -> None:
        self._listeners.remove(listener)

    # --- internals -------------------------------------------------------------------------------

    def _prepare(self, obj: Dict[str, Any]) -> Tuple[Resource, Dict[str, Any]]:
        if not isinstance(obj, dict):
            raise ApiError(400, "BadRequest", "object must be a JSON object")
        kind = obj.get("kind")
        # A list is no key: a 400, not a crash.
        res = KINDS[kind].resource if isinstance(kind, str) and kind in KINDS else None
        if res is None:
            raise ApiError(400, "BadRequest", f"kind {obj.get('kind')!r} is not served here")
        self._resource(res.name)  # 404 for a custom resource whose CRD is not installed
        new = _copy(obj)
        meta = new.get("metadata")
        if not isinstance(meta, dict) or not isinstance(meta.get("name"), str) or not meta["name"]:
            raise ApiError(422, "Invalid", f"{res.kind}: metadata.name is required")
        new["apiVersion"] = res.api_version
        if res.namespaced:
            meta["namespace"] = meta.get("namespace") or "default"
        else:
            meta.pop("namespace", None)
        if res is NAMESPACES:
            labels = meta.get("labels") or {}
            labels[NAME_LABEL] = meta["name"]
            meta["labels"] = labels
        return res, new

    @staticmethod
    def _key(res: Resource, namespace: Optional[str], name: str) -> Key:
        return ((namespace or "") if res.namespaced else "", name)

    def _write(self, res: Resource, key: Key, obj: Dict[str, Any], event_type: str) -> Dict[str, Any]:
        self._objects[res.name][key] = obj
        return self._record(res, key, obj, event_type)

    def _record(self, res: Resource, key: Key, obj: Dict[str, Any],
                event_type: str) -> Dict[str, Any]:
        self._rv += 1
        obj["metadata"]["resourceVersion"] = str(self._rv)
        event = _Event(self._rv, res, key[0], event_line(event_type, obj))
        self._history.append(event)
        while len(self._history) > self._history_limit:
            self._compacted_rv = self._history.popleft().resource_version
        for sub in list(self._subs.values()):
            if sub.wants(res, key[0]):
                sub.queue.put(event.line)
        for listener in list(self._listeners):
            try:
                listener(res.name, event_type, _copy(obj))
            except Exception:  # a broken listener must not break the API server
                log.exception("emulator listener failed", extra=kv(resource=res.name))
        return _copy(obj)

    def _broadcast(self, item: Any) -> int:
        for sub in self._subs.values():
            sub.queue.put(item)
        return len(self._subs)


    def _resource(self, name: str) -> Resource:
        """The served resource `name`; 404 as the API server answers for what it does not serve."""
        if not self.served(name):
            raise ApiError(404, "NotFound", f"the server could not find the requested resource {name!r}")
        return _RESOURCES[name]


def _known_crd(name: str) -> Resource:
    """The custom resource `name` of the table (a ValueError for any other: a test's typo)."""
    res = _RESOURCES.get(name)
    if res is None or not res.crd:
        raise ValueError(f"{name!r} is not a custom resource of the table")
    return res


def _not_found(res: Resource, name: str) -> ApiError:
    return ApiError(404, "NotFound", f'{res.name} "{name}" not found')

