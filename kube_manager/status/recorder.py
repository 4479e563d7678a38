"""Events about policies, aggregated as client-go's recorder does (SPEC 15).

The first occurrence of (object, reason, note) creates an Event named `<object>.<nanoseconds in
hex>` (client-go's naming); a recurrence within `window` seconds of the last one patches that
Event's `series` (count, lastObservedTime) instead of creating another, and a recurrence after a
longer quiet creates a new Event. What was recorded is remembered in this process only: a new
leader starts afresh.

The recorder decides and queues; the `StatusOutbox` sends (never the caller's greenlet). A series
patch that finds its Event gone (expired on the API server, or never created because the server
refused it) creates it, series included.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, Tuple

from kubernetes.client.exceptions import ApiException

from kube_manager.registry import KINDS
from kube_manager.status.verdicts import EventSpec, PolicyFacts

log = logging.getLogger(__name__)

CONTROLLER = "contrail-kube-manager"
WINDOW = 600.0  # seconds: a recurrence within it is the same Event's series
CLUSTER_EVENTS_NAMESPACE = "default"  # where Events about cluster-scoped objects go
# The API server's bounds: reportingInstance at most 128 characters; an Event's name, a DNS subdomain,
# at most 253 (the object's name, a dot and up to 16 hex digits).
INSTANCE_LIMIT = 128
NAME_PREFIX_LIMIT = 253 - 1 - 16
_MERGE_PATCH = "application/merge-patch+json"

AggregationKey = Tuple[str, str, str, str, str, str]  # kind, namespace, name, uid, reason, note


def micro_time(seconds: float) -> str:
    """A Kubernetes MicroTime."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{int(seconds % 1 * 1e6):06d}Z"


@dataclass
class _Recorded:
    """One Event created, and its series so far."""

    namespace: str
    name: str
    count: int
    last: float


@dataclass(frozen=True)
class EventWrite:
    """An Event to create (count 1) or whose series to patch (count > 1); one job of the outbox."""

    namespace: str
    name: str
    body: Dict[str, Any]
    count: int
    observed_at: str
    reason: str

    target = "event"

    def describe(self) -> str:
        regarding = self.body["regarding"]
        return f"Event {self.reason} about {regarding['kind']} {regarding.get('namespace', '')}/{regarding['name']}"

    def run(self, apis: Any, timeout: float) -> bool:
        series = {"count": self.count, "lastObservedTime": self.observed_at}
        if self.count > 1:
            try:
                apis.events.patch_namespaced_event(self.name, self.namespace, {"series": series},
                                                   _content_type=_MERGE_PATCH, _request_timeout=timeout)
                return True
            except ApiException as exc:
                if exc.status != 404:
                    raise
        body = dict(self.body, series=series) if self.count > 1 else self.body
        apis.events.create_namespaced_event(self.namespace, body, _request_timeout=timeout)
        return True


class EventRecorder:
    """Decides create or series patch for each Event and hands it to `send` (the outbox)."""

    def __init__(self, send: Callable[[EventWrite], None], identity: str, *,
                 clock: Callable[[], float] = time.time, window: float = WINDOW) -> None:
        self._send = send
        self._identity = identity
        self._clock = clock
        self._window = window
        self._recorded: Dict[AggregationKey, _Recorded] = {}
        self._prune_at = 1024  # entries: past it the stale ones go (amortised: it doubles)
        self._stamp = 0  # the last name's nanoseconds

    def record(self, facts: PolicyFacts, spec: EventSpec) -> None:
        now = self._clock()
        key = (facts.kind, facts.namespace, facts.name, facts.uid, spec.reason, spec.note)
        recorded = self._recorded.get(key)
        if recorded is not None and now - recorded.last <= self._window:
            recorded.count += 1
            recorded.last = now
        else:
            if len(self._recorded) >= self._prune_at:
                self._forget_older_than(now - self._window)
            namespace = facts.namespace or CLUSTER_EVENTS_NAMESPACE
            # Unique even for Events of one instant (the clock's resolution is coarser than its unit).
            self._stamp = max(int(now * 1e9), self._stamp + 1)
            prefix = facts.name[:NAME_PREFIX_LIMIT].rstrip(".-")  # a long name cut where it still ends a label
            recorded = self._recorded[key] = _Recorded(namespace, f"{prefix}.{self._stamp:x}", 1, now)
        self._send(EventWrite(recorded.namespace, recorded.name, self._body(facts, spec, recorded, now),
                              recorded.count, micro_time(now), spec.reason))

    def _body(self, facts: PolicyFacts, spec: EventSpec, recorded: _Recorded, now: float) -> Dict[str, Any]:
        regarding = {"apiVersion": KINDS[facts.kind].resource.api_version, "kind": facts.kind, "name": facts.name, "uid": facts.uid}
        if facts.namespace:
            regarding["namespace"] = facts.namespace
        return {"apiVersion": "events.k8s.io/v1", "kind": "Event",
                "metadata": {"name": recorded.name, "namespace": recorded.namespace},
                "eventTime": micro_time(now), "reportingController": CONTROLLER,
                "reportingInstance": self._identity[:INSTANCE_LIMIT], "action": spec.action, "reason": spec.reason,
                "type": spec.type, "regarding": regarding, "note": spec.note}

    def _forget_older_than(self, horizon: float) -> None:
        """Drop what can no longer be aggregated (bounded memory under a stream of distinct notes)."""
        for key in [k for k, r in self._recorded.items() if r.last < horizon]:
            del self._recorded[key]
        self._prune_at = max(1024, 2 * len(self._recorded))
