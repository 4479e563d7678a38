"""The object store behind the emulated Kubernetes API server.

Holds namespaces, pods, NetworkPolicies and ClusterNetworkPolicies in memory with what etcd gives
watchers: one resourceVersion counter bumped by every write, a bounded history of events (a watch
resumes from an older version; "410 Gone" once it is compacted away). Writers are the tests and the
HTTP handlers; readers the HTTP list and watch handlers, and listeners (the emulated CNI).

It lives in one gevent hub: every method must be called from that hub's thread (the runner in
`runner` marshals calls from other threads). Watch subscriptions are gevent queues filled
synchronously at write time, so a watcher sees every event exactly once and in order.

Objects are stored as the API server returns them: plain JSON dicts with `kind`, `apiVersion`,
`metadata.uid`, `metadata.resourceVersion`, `metadata.creationTimestamp` and, for namespaced kinds, a
`metadata.namespace` that defaults to `default`. The methods here are the cluster's own writes (a
test standing for the kubelet, a controller, or what an older server left in etcd): specs are kept
as given (no validation nor defaulting: that is `admission`'s, for what clients send over HTTP), so
that what the daemon reads matches what `translate` reads from the same manifests. As on a real
cluster: one resourceVersion sequence for every kind (Leases and Events included), the system
namespaces exist from the start (and may not be deleted), every namespace carries the
`kubernetes.io/metadata.name` label, and a deleted namespace is Terminating (`deletionTimestamp`,
`status.phase`) until the namespace controller has deleted its content; with `namespace_controller`
False (a bare control plane, apiserver and etcd only) it stays so until `finish_namespace_deletion`.

Custom resources (ClusterNetworkPolicy) are served only while their CRD is installed (`install_crd`,
`uninstall_crd`); until then their URLs answer 404, as a cluster without the CRD does.
"""
from __future__ import annotations

import logging
import time
import uuid
from collections import Counter, deque
from typing import Any, Callable, Deque, Dict, Iterable, List, Optional, Set, Tuple

from kube_manager.observability.logging_setup import kv
from kube_manager.registry import KINDS, NAMESPACES, PODS, Resource
from kube_manager.offline.manifests import Manifests
from simulators.kube_api.errors import (ApiError, copy_json, forbidden_in_terminating, missing_resource_version,
                                        not_found, qualified)
from simulators.kube_api.events import EventStore, merge_patch
from simulators.kube_api.leases import LeaseStore
from simulators.kube_api.seed import load_seed
from simulators.kube_api.watches import (CLOSE, DROP, FREEZE, Bookmark, Subscription, WatchCacheVersions, WatchEvent,
                                         event_line, expired)

_RESOURCES = KINDS.resources()  # the product's kinds, served by REST plural

log = logging.getLogger(__name__)

Key = Tuple[str, str]  # (namespace or "", name)
Listener = Callable[[str, str, Dict[str, Any]], None]  # (resource, event type, object)
NAME_LABEL = "kubernetes.io/metadata.name"
DEFAULT_HISTORY_LIMIT = 1000
DEFAULT_PROGRESS_INTERVAL = 10.0  # seconds: how often kube-apiserver renews its own Lease
# uids are uuid5 of the object's identity and how many times it was created, so that a run from the
# same manifests gives the same uids while a delete + re-create still gives a new one.
_UID_NAMESPACE = uuid.UUID("6f1c3a52-4a43-4b1e-9d55-2c8a3f4e7b10")


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


# The namespaces an API server makes itself (the first three it also refuses to delete).
SYSTEM_NAMESPACES = ("default", "kube-node-lease", "kube-public", "kube-system")
IMMORTAL_NAMESPACES = ("default", "kube-public", "kube-system")


class KubeStore:
    """The served kinds' objects with resourceVersions, history and watch fan-out."""

    def __init__(self, history_limit: int = DEFAULT_HISTORY_LIMIT,
                 crds: Optional[Iterable[str]] = None, namespace_controller: bool = True,
                 system_namespaces: bool = True, progress_interval: float = DEFAULT_PROGRESS_INTERVAL) -> None:
        """`crds`: the custom resources installed at start (their REST plurals); None installs
        every one the table knows, `()` starts a cluster without any (see `install_crd`).
        `system_namespaces` False starts with none (only for tests that count versions from 1)."""
        self._objects: Dict[str, Dict[Key, Dict[str, Any]]] = {name: {} for name in _RESOURCES}
        self._crds: Set[str] = {name for name, res in _RESOURCES.items() if res.crd}
        if crds is not None:
            self._crds = {_known_crd(name).name for name in crds}
        self._rv = 0
        self._cache_versions = WatchCacheVersions(progress_interval)
        self._history: Deque[WatchEvent] = deque()
        self._history_limit = history_limit
        self._compacted_rv = 0  # watches from an older version get 410 Gone
        self._subs: Dict[int, Subscription] = {}
        self._listeners: List[Listener] = []
        self._creations: Counter = Counter()
        self.namespace_controller = namespace_controller
        self.leases = LeaseStore(self.namespace_exists, self._next_rv)  # served apart: not watched
        self.events = EventStore(self._next_rv)  # the same
        self.status_writes = 0  # writes through a status subresource, for tests
        for name in SYSTEM_NAMESPACES if system_namespaces else ():
            self.create({"kind": "Namespace", "metadata": {"name": name}})

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
        return ("", name) in self._objects[NAMESPACES.name]

    def get(self, resource: str, namespace: str, name: str) -> Dict[str, Any]:
        res = self._resource(resource)
        obj = self._objects[res.name].get(self._key(res, namespace, name))
        if obj is None:
            raise _not_found(res, name)
        return copy_json(obj)

    def list(self, resource: str, namespace: Optional[str] = None) -> List[Dict[str, Any]]:
        """The objects of `resource` (in `namespace` when given), ordered by namespace and name."""
        res = self._resource(resource)
        items = sorted(self._objects[res.name].items())
        return [copy_json(obj) for key, obj in items if namespace is None or key[0] == namespace]

    # --- writing ---------------------------------------------------------------------------------

    def create(self, obj: Dict[str, Any]) -> Dict[str, Any]:
        """Store a new object (409 AlreadyExists if its name is taken) and notify the watchers."""
        res, new = self.prepare(obj)
        key = self._key(res, new["metadata"].get("namespace", ""), new["metadata"]["name"])
        if key in self._objects[res.name]:
            raise ApiError(409, "AlreadyExists", f'{qualified((res.group, res.name))} "{key[1]}" already exists',
                           {"name": key[1], "group": res.group, "kind": res.name})
        if res.namespaced:
            self._check_namespace_open(res, key)
        self._creations[(res.name, key)] += 1
        meta = new["metadata"]
        meta.setdefault("uid", str(uuid.uuid5(
            _UID_NAMESPACE, f"{res.name}/{key[0]}/{key[1]}/{self._creations[(res.name, key)]}")))
        meta["creationTimestamp"] = _now()
        if res is not NAMESPACES:  # every kind here but namespaces has a generation
            meta["generation"] = 1
        else:
            new.setdefault("spec", {"finalizers": ["kubernetes"]})
            new["status"] = {"phase": "Active"}
        return self._write(res, key, new, "ADDED")

    def update(self, obj: Dict[str, Any], check_version: bool = False) -> Dict[str, Any]:
        """Replace an object (404 if absent), keeping its uid and creation time.

        With `check_version` (a client's PUT), a `metadata.resourceVersion` in `obj` that is not the
        current one is a 409 Conflict, and none at all a 422 for a custom resource (whose strategy
        allows no unconditional update), as the real API server answers.
        """
        res, new = self.prepare(obj)
        key = self._key(res, new["metadata"].get("namespace", ""), new["metadata"]["name"])
        old = self._objects[res.name].get(key)
        if old is None:
            raise _not_found(res, key[1])
        given = new["metadata"].get("resourceVersion")
        if check_version:
            self._check_version(res, key[1], given, old)
        for kept in ("uid", "creationTimestamp", "deletionTimestamp"):
            if kept in old["metadata"]:
                new["metadata"][kept] = old["metadata"][kept]
        if res.crd or res is NAMESPACES:  # the status subresource's: a write of the object leaves it alone
            new.pop("status", None)
            if "status" in old:
                new["status"] = old["status"]
        if "generation" in old["metadata"]:  # moved by a change of the spec (for a CR: of anything but metadata)
            changed = (_content(new) != _content(old)) if res.crd else (new.get("spec") != old.get("spec"))
            new["metadata"]["generation"] = old["metadata"]["generation"] + changed
        return self._write(res, key, new, "MODIFIED")

    def update_status(self, resource: str, name: str, body: Dict[str, Any], *, patch: bool,
                      namespace: str = "", check: Callable[[Dict[str, Any]], None] = lambda obj: None) -> Dict[str, Any]:
        """A write through the status subresource (a custom resource's, or a pod's as the kubelet
        writes it): a merge patch or a replacement (which needs the current resourceVersion where the
        kind allows no unconditional update) that changes `status` alone and leaves
        `metadata.generation` where it was; `check(new object)` may refuse it (the schema)."""
        res = self._resource(resource)
        key = self._key(res, namespace, name)
        old = self._objects[res.name].get(key)
        if old is None or not (res.crd or res is PODS):
            raise _not_found(res, name)
        if not isinstance(body, dict):
            raise ApiError(400, "BadRequest", "the body must be a JSON object")
        given = (body.get("metadata") or {}).get("resourceVersion")
        if given or not patch:
            self._check_version(res, name, given, old)
        new = copy_json(old)
        status = merge_patch(old, body).get("status") if patch else body.get("status")
        new.pop("status", None)
        if status is not None:
            new["status"] = status
        check(new)
        self.status_writes += 1
        return self._write(res, key, new, "MODIFIED")

    def apply(self, obj: Dict[str, Any]) -> Dict[str, Any]:
        """Create or replace."""
        res, new = self.prepare(obj)
        key = self._key(res, new["metadata"].get("namespace", ""), new["metadata"]["name"])
        return self.update(new) if key in self._objects[res.name] else self.create(new)

    def delete(self, resource: str, namespace: str, name: str) -> Dict[str, Any]:
        """Remove an object. A namespace becomes Terminating (the answer), then, with the namespace
        controller running, its pods and NetworkPolicies are deleted and then the namespace itself,
        as on a real cluster; the system namespaces may not be deleted (403)."""
        res = self._resource(resource)
        key = self._key(res, namespace, name)
        old = self._objects[res.name].get(key)
        if old is None:
            raise _not_found(res, name)
        if res is NAMESPACES:
            return self._terminate_namespace(key, old)
        del self._objects[res.name][key]
        gone = copy_json(old)
        return self._record(res, key, gone, "DELETED")

    def finish_namespace_deletion(self, name: str) -> None:
        """Do what the namespace controller does for a Terminating namespace: delete its content,
        then the namespace (a no-op for a namespace that is not Terminating)."""
        old = self._objects[NAMESPACES.name].get(("", name))
        if old is None or not old["metadata"].get("deletionTimestamp"):
            return
        for other in _RESOURCES.values():
            if other.namespaced:
                for inner in [k for k in self._objects[other.name] if k[0] == name]:
                    self.delete(other.name, *inner)
        del self._objects[NAMESPACES.name][("", name)]
        self._record(NAMESPACES, ("", name), copy_json(old), "DELETED")

    def _terminate_namespace(self, key: Key, old: Dict[str, Any]) -> Dict[str, Any]:
        if key[1] in IMMORTAL_NAMESPACES:
            raise ApiError(403, "Forbidden", f'namespaces "{key[1]}" is forbidden: this namespace may not be deleted',
                           {"name": key[1], "kind": "namespaces"})
        if not old["metadata"].get("deletionTimestamp"):
            terminating = copy_json(old)
            terminating["metadata"]["deletionTimestamp"] = _now()
            terminating["status"] = {"phase": "Terminating"}
            old = self._write(NAMESPACES, key, terminating, "MODIFIED")
        if self.namespace_controller:
            self.finish_namespace_deletion(key[1])
        return old

    def _check_namespace_open(self, res: Resource, key: Key) -> None:
        """404 for a missing namespace, 403 for a Terminating one (the NamespaceLifecycle admission)."""
        space = self._objects[NAMESPACES.name].get(("", key[0]))
        if space is None:
            raise not_found(("", "namespaces"), key[0])
        if space["metadata"].get("deletionTimestamp"):
            raise forbidden_in_terminating((res.group, res.name), key[1], key[0])

    def _check_version(self, res: Resource, name: str, given: Any, old: Dict[str, Any]) -> None:
        """The precondition of a client's replace: 409 for a stale version, 422 for none where the
        kind's strategy allows no unconditional update (custom resources)."""
        if not given:
            if res.crd:
                raise missing_resource_version((res.group, res.name), name)
            return
        if given != old["metadata"]["resourceVersion"]:
            raise ApiError(409, "Conflict", f'Operation cannot be fulfilled on {qualified((res.group, res.name))} "{name}": the object '
                                            "has been modified; please apply your changes to the latest version and try again",
                           {"name": name, "group": res.group, "kind": res.name})

    def load(self, manifests: Manifests) -> None:
        """Load `manifests` as what etcd already holds (`seed.load_seed`: no admission)."""
        load_seed(self, manifests)

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
        without a resourceVersion. A version older than the compacted history is 410 Gone. One newer
        than the store is accepted, as the real watch cache does: the watch then stays silent (no
        event, no bookmark) until the store passes it (the server checks `Subscription.since`).
        """
        res = self._resource(resource)
        if since:
            if since < self._compacted_rv:
                raise expired(f"too old resource version: {since} ({self._compacted_rv})")
            replay = [e.line for e in self._history
                      if e.resource_version > since and e.resource is res
                      and namespace in (None, e.namespace)]
        else:
            replay = [event_line("ADDED", obj) for key, obj in sorted(self._objects[res.name].items())
                      if namespace in (None, key[0])]
        sub = Subscription(res, namespace, since or 0)
        self._subs[id(sub)] = sub
        return replay, sub

    def unsubscribe(self, sub: Subscription) -> None:
        self._subs.pop(id(sub), None)

    def bookmark_line(self, resource: Resource, resource_version: int, initial_events_end: bool = False) -> bytes:
        meta: Dict[str, Any] = {"resourceVersion": str(resource_version)}
        if initial_events_end:
            meta["annotations"] = {"k8s.io/initial-events-end": "true"}
        return event_line("BOOKMARK", {"kind": resource.kind, "apiVersion": resource.api_version, "metadata": meta})

    def bookmark_version(self, resource: Resource) -> int:
        """The version of a periodic bookmark of `resource` now (`WatchCacheVersions`)."""
        return self._cache_versions.version(resource.name, self._next_rv)  # the API server's own Lease

    def listed(self, resource: Resource) -> None:
        self._cache_versions.written(resource.name, self._rv)

    def send_bookmarks(self) -> int:
        """A progress notification: a bookmark at the current version on every watch; returns how
        many watches."""
        self._cache_versions.notify(self._rv)
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
        """Forget the whole event history, as a real server whose watch cache evicted it (or a new
        API server) does: a watch or a continue from an older version now gets 410 Gone."""
        self._history.clear()
        self._compacted_rv = self._rv

    def add_listener(self, listener: Listener) -> None:
        """Call `listener(resource, event_type, object)` after every write (the emulated CNI)."""
        self._listeners.append(listener)

    def remove_listener(self, listener: Listener) -> None:
        self._listeners.remove(listener)

    # --- internals -------------------------------------------------------------------------------

    def prepare(self, obj: Dict[str, Any]) -> Tuple[Resource, Dict[str, Any]]:
        if not isinstance(obj, dict):
            raise ApiError(400, "BadRequest", "object must be a JSON object")
        kind = obj.get("kind")
        # A list is no key: a 400, not a crash.
        res = KINDS[kind].resource if isinstance(kind, str) and kind in KINDS else None
        if res is None:
            raise ApiError(400, "BadRequest", f"kind {obj.get('kind')!r} is not served here")
        self._resource(res.name)  # 404 for a custom resource whose CRD is not installed
        new = copy_json(obj)
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

    def _next_rv(self) -> int:
        self._rv += 1
        return self._rv

    def _record(self, res: Resource, key: Key, obj: Dict[str, Any],
                event_type: str) -> Dict[str, Any]:
        obj["metadata"]["resourceVersion"] = str(self._next_rv())
        event = WatchEvent(self._rv, res, key[0], event_line(event_type, obj))
        self._cache_versions.written(res.name, self._rv)
        self._history.append(event)
        while len(self._history) > self._history_limit:
            self._compacted_rv = self._history.popleft().resource_version
        for sub in list(self._subs.values()):
            if sub.wants(res, key[0]) and self._rv > sub.since:
                sub.queue.put(event.line)
        for listener in list(self._listeners):
            try:
                listener(res.name, event_type, copy_json(obj))
            except Exception:  # a broken listener must not break the API server
                log.exception("emulator listener failed", extra=kv(resource=res.name))
        return copy_json(obj)

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
    return not_found((res.group, res.name), name)


def _content(obj: Dict[str, Any]) -> Dict[str, Any]:
    return {k: v for k, v in obj.items() if k != "metadata"}

