"""`events.k8s.io/v1` Events in the emulated API server, so that the demo and the tests can see what
kube-manager reports about its policies (SPEC 15), validated as the real server validates them
(`pkg/apis/core/validation/events.go`, through the internal type: `note` is checked as `message`,
`regarding` as `involvedObject`, and the causes carry those names).

Create (409 AlreadyExists), get, replace (PUT: creates a missing Event, needs no resourceVersion,
409 Conflict for a stale one, as the Event strategy allows), patch (a JSON merge patch, whatever
patch type the client names: Events hold no list a strategic merge would treat otherwise; 404 for a
missing Event) and list, in one namespace or in all. On create: eventTime, reportingController,
reportingInstance, action and reason required (the last three at most 128 characters), type Normal
or Warning, note at most 1024 bytes, the deprecated fields unset, a series with count >= 2 and a
lastObservedTime, and an Event about a cluster-scoped object only in `default` or `kube-system`. On
update everything but `series` and metadata is immutable. Every refusal is a 422 `Status` with one
cause per field, as the real server's.

Events share the cluster's resourceVersion sequence (`next_rv`) but are not watched by kube-manager,
so they keep no history; the namespace need not exist (`default` always does on a real cluster).

Faults for tests (the emulator's alone; no real server can be told to do this): `fail("forbidden")`
answers every Events request 403, as an API server does to an account without the RBAC rules;
`fail("hang")` never answers; `fail("")` ends that. `requests` counts the requests that reached the
store, faults included.
"""
from __future__ import annotations

import itertools
import re
import time
import uuid
from typing import Any, Callable, Dict, List, Optional, Tuple

import gevent

from simulators.kube_api.errors import (ApiError, Cause, already_exists, bad_value, conflict, copy_json,
                                        invalid, namespaced_body, not_found, required)
from simulators.kube_api.names import name_causes, qualified_name_causes

API_VERSION = "events.k8s.io/v1"
KIND = "Event"
GROUP = "events.k8s.io"
RESOURCE = (GROUP, "events")
HANG_SECONDS = 3600.0
FAULT_MODES = ("", "forbidden", "hang")
LENGTH_LIMIT = 128  # reportingInstance, action, reason
NOTE_LIMIT = 1024
# The namespaces an Event about a cluster-scoped object may live in.
CLUSTER_EVENT_NAMESPACES = ("default", "kube-system")
# What an update may not change: (events.k8s.io/v1 field, the internal name the cause carries).
IMMUTABLE = (("regarding", "involvedObject"), ("reason", "reason"), ("note", "message"),
             ("deprecatedSource", "source"), ("deprecatedFirstTimestamp", "firstTimestamp"),
             ("deprecatedLastTimestamp", "lastTimestamp"), ("deprecatedCount", "count"), ("type", "type"),
             ("eventTime", "eventTime"), ("action", "action"), ("related", "related"),
             ("reportingController", "reportingController"), ("reportingInstance", "reportingInstance"))
_ROUTE = re.compile(r"^/apis/events\.k8s\.io/v1(?:/namespaces/([^/]+))?/events(?:/([^/]+))?$")


class EventStore:
    """Events by (namespace, name)."""

    def __init__(self, next_rv: Optional[Callable[[], int]] = None) -> None:
        self._events: Dict[Tuple[str, str], Dict[str, Any]] = {}
        self._next_rv = next_rv if next_rv is not None else itertools.count(1).__next__
        self._fault = ""
        self.requests = 0

    def fail(self, mode: str) -> None:
        if mode not in FAULT_MODES:
            raise ValueError(f"fault mode must be one of {FAULT_MODES}, got {mode!r}")
        self._fault = mode

    def check(self) -> None:
        """Count a request and apply the fault set, if any."""
        self.requests += 1
        if self._fault == "hang":
            gevent.sleep(HANG_SECONDS)
        if self._fault:
            raise ApiError(403, "Forbidden", 'events.events.k8s.io is forbidden: User "system:serviceaccount:'
                                             'kube-system:contrail-kube-manager" cannot create resource "events"')

    def create(self, namespace: str, body: Any) -> Dict[str, Any]:
        event = namespaced_body(KIND, API_VERSION, namespace, body)
        key = (namespace, event["metadata"]["name"])
        _refuse(event, _create_causes(event))
        if event["metadata"].get("resourceVersion"):
            raise ApiError(500, "InternalError", "Internal error occurred: resourceVersion should not "
                                                 "be set on objects to be created")
        if key in self._events:
            raise already_exists(RESOURCE, key[1])
        event["metadata"]["uid"] = str(uuid.uuid4())
        event["metadata"]["creationTimestamp"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        return self._store(key, event)

    def get(self, namespace: str, name: str) -> Dict[str, Any]:
        event = self._events.get((namespace, name))
        if event is None:
            raise not_found(RESOURCE, name)
        return copy_json(event)

    def replace(self, namespace: str, name: str, body: Any) -> Dict[str, Any]:
        """PUT: an update of the Event, or its creation when it does not exist."""
        event = namespaced_body(KIND, API_VERSION, namespace, body)
        if event["metadata"]["name"] != name:
            raise ApiError(400, "BadRequest", "the name of the object does not match the name on the URL")
        old = self._events.get((namespace, name))
        if old is None:
            event["metadata"].pop("resourceVersion", None)
            return self.create(namespace, event)
        given = event["metadata"].get("resourceVersion")
        if given and given != old["metadata"]["resourceVersion"]:
            raise conflict(RESOURCE, name)
        return self._update(old, event)

    def patch(self, namespace: str, name: str, patch: Any) -> Dict[str, Any]:
        if not isinstance(patch, dict):
            raise ApiError(400, "BadRequest", "the patch must be a JSON object")
        old = self.get(namespace, name)
        given = (patch.get("metadata") or {}).get("resourceVersion")
        if given and given != old["metadata"]["resourceVersion"]:
            raise conflict(RESOURCE, name)
        return self._update(old, namespaced_body(KIND, API_VERSION, namespace, merge_patch(old, patch)))

    def list(self, namespace: Optional[str] = None) -> List[Dict[str, Any]]:
        """The Events (of `namespace` when given), by namespace and name."""
        return [copy_json(event) for key, event in sorted(self._events.items()) if namespace in (None, key[0])]

    def _update(self, old: Dict[str, Any], event: Dict[str, Any]) -> Dict[str, Any]:
        causes = _common_causes(event)
        if event.get("series") != old.get("series"):
            causes += _series_causes(event)
        causes += [bad_value(internal, event.get(field), "field is immutable")
                   for field, internal in IMMUTABLE if event.get(field) != old.get(field)]
        _refuse(event, causes)
        for kept in ("uid", "creationTimestamp"):
            event["metadata"][kept] = old["metadata"][kept]
        meta = event["metadata"]
        return self._store((meta["namespace"], meta["name"]), event)

    def _store(self, key: Tuple[str, str], event: Dict[str, Any]) -> Dict[str, Any]:
        event["metadata"]["resourceVersion"] = str(self._next_rv())
        self._events[key] = event
        return copy_json(event)


def _refuse(event: Dict[str, Any], causes: List[Cause]) -> None:
    if causes:
        raise invalid(GROUP, KIND, event["metadata"]["name"], causes)


def _common_causes(event: Dict[str, Any]) -> List[Cause]:
    """What every Event must satisfy, created or updated (the real server's legacy checks)."""
    causes: List[Cause] = []
    namespace = event["metadata"]["namespace"]
    regarding = event.get("regarding") or {}
    if not event.get("eventTime"):
        involved = regarding.get("namespace") or ""
        if (namespace != involved) if involved else (namespace != "default"):
            causes.append(bad_value("involvedObject.namespace", regarding.get("namespace", ""),
                                    "does not match event.namespace"))
        return causes
    if not regarding.get("namespace") and namespace not in CLUSTER_EVENT_NAMESPACES:
        causes.append(bad_value("involvedObject.namespace", "", "does not match event.namespace"))
    controller = str(event.get("reportingController") or "")
    if not controller:
        causes.append(required("reportingController"))
    causes += qualified_name_causes("reportingController", controller)
    for field in ("reportingInstance", "action", "reason"):
        value = str(event.get(field) or "")
        if not value:
            causes.append(required(field))
        elif len(value) > LENGTH_LIMIT:
            causes.append(bad_value(field, "", f"can have at most {LENGTH_LIMIT} characters"))
    if len(str(event.get("note") or "").encode()) > NOTE_LIMIT:
        causes.append(bad_value("message", "", f"can have at most {NOTE_LIMIT} characters"))
    return causes


def _create_causes(event: Dict[str, Any]) -> List[Cause]:
    causes = _common_causes(event) + name_causes(event["metadata"]["name"]) + _series_causes(event)
    if not event.get("eventTime"):
        causes.append(required("eventTime"))
    if event.get("type") not in ("Normal", "Warning"):
        causes.append(bad_value("type", "", f"has invalid value: {event.get('type') or ''}"))
    for field, internal in (("deprecatedFirstTimestamp", "firstTimestamp"),
                            ("deprecatedLastTimestamp", "lastTimestamp"), ("deprecatedCount", "count")):
        if event.get(field):
            causes.append(bad_value(internal, "", "needs to be unset"))
    source = event.get("deprecatedSource") or {}
    if source.get("component") or source.get("host"):
        causes.append(bad_value("source", "", "needs to be unset"))
    return causes


def _series_causes(event: Dict[str, Any]) -> List[Cause]:
    series = event.get("series")
    if series is None:
        return []
    causes: List[Cause] = []
    count = series.get("count") if isinstance(series, dict) else None
    if not isinstance(count, int) or count < 2:
        causes.append(bad_value("series.count", "", "should be at least 2"))
    if not isinstance(series, dict) or not series.get("lastObservedTime"):
        causes.append(required("series.lastObservedTime"))
    return causes


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merged key by key, null removes, anything else replaces."""
    if not isinstance(patch, dict):
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def event_route(path: str) -> Optional[Tuple[Optional[str], str]]:
    """(namespace or None for all, name or "") for an Events URL, else None."""
    found = _ROUTE.match(path)
    if found is None:
        return None
    return found.group(1), found.group(2) or ""
