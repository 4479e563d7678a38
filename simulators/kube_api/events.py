"""`events.k8s.io/v1` Events in the emulated API server, so that the demo and the tests can see what
kube-manager reports about its policies (SPEC 15).

Create (409 AlreadyExists), get, patch (a JSON merge patch, whatever patch type the client names:
Events hold no list a strategic merge would treat otherwise) and list, in one namespace or in all.
Events are not watched by kube-manager, so they have their own resourceVersion counter and no
history; the namespace need not exist (`default` always does on a real cluster).

Faults for tests: `fail("forbidden")` answers every Events request 403, as an API server does to an
account without the RBAC rules; `fail("hang")` never answers; `fail("")` ends that. `requests`
counts the requests that reached the store, faults included.
"""
from __future__ import annotations

import re
import time
from typing import Any, Dict, List, Optional, Tuple

import gevent

from simulators.kube_api.errors import ApiError, copy_json, namespaced_body

API_VERSION = "events.k8s.io/v1"
KIND = "Event"
HANG_SECONDS = 3600.0
FAULT_MODES = ("", "forbidden", "hang")
_ROUTE = re.compile(r"^/apis/events\.k8s\.io/v1(?:/namespaces/([^/]+))?/events(?:/([^/]+))?$")


class EventStore:
    """Events by (namespace, name)."""

    def __init__(self) -> None:
        self._events: Dict[Tuple[str, str], Dict[str, Any]] = {}
        self._rv = 0
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
        event = _checked(namespace, body)
        key = (namespace, event["metadata"]["name"])
        if key in self._events:
            raise ApiError(409, "AlreadyExists", f'events.events.k8s.io "{key[1]}" already exists')
        event["metadata"]["uid"] = f"event-{namespace}-{key[1]}"
        event["metadata"]["creationTimestamp"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        return self._store(key, event)

    def get(self, namespace: str, name: str) -> Dict[str, Any]:
        event = self._events.get((namespace, name))
        if event is None:
            raise ApiError(404, "NotFound", f'events.events.k8s.io "{name}" not found')
        return copy_json(event)

    def patch(self, namespace: str, name: str, patch: Any) -> Dict[str, Any]:
        if not isinstance(patch, dict):
            raise ApiError(400, "BadRequest", "the patch must be a JSON object")
        event = merge_patch(self.get(namespace, name), patch)
        return self._store((namespace, name), _checked(namespace, event))

    def list(self, namespace: Optional[str] = None) -> List[Dict[str, Any]]:
        """The Events (of `namespace` when given), by namespace and name."""
        return [copy_json(event) for key, event in sorted(self._events.items()) if namespace in (None, key[0])]

    def _store(self, key: Tuple[str, str], event: Dict[str, Any]) -> Dict[str, Any]:
        self._rv += 1
        event["metadata"]["resourceVersion"] = str(self._rv)
        self._events[key] = event
        return copy_json(event)


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


def _checked(namespace: str, body: Any) -> Dict[str, Any]:
    event = namespaced_body(KIND, API_VERSION, namespace, body)
    if not event.get("eventTime") or not event.get("reportingController") or not event.get("action"):
        raise ApiError(422, "Invalid", "Event: eventTime, reportingController and action are required")
    if len(str(event.get("note", "")).encode()) > 1024:
        raise ApiError(422, "Invalid", "Event: note must have at most 1024 bytes")
    return event
