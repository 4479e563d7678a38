"""What the emulated API server holds of kube-manager's status reports (SPEC 15): Events and
ClusterNetworkPolicy conditions, read from its store for the end-to-end tests of kube_manager/status."""
from __future__ import annotations

from typing import Any, Dict, List, Optional

from tests.support.e2e_support import Environment

CNP_RESOURCE = "clusternetworkpolicies"


def events(env: Environment, namespace: Optional[str] = None) -> List[Dict[str, Any]]:
    """Every Event (of `namespace`), by namespace and name."""
    return env.kube.call(lambda store: store.events.list(namespace))


def events_about(env: Environment, kind: str, name: str, reason: Optional[str] = None) -> List[Dict[str, Any]]:
    return [event for event in events(env) if event["regarding"]["kind"] == kind
            and event["regarding"]["name"] == name and reason in (None, event["reason"])]


def reasons_about(env: Environment, kind: str, name: str) -> List[str]:
    return sorted(event["reason"] for event in events_about(env, kind, name))


def count_of(event: Dict[str, Any]) -> int:
    """How many times the Event was observed: 1 without a series."""
    return int((event.get("series") or {}).get("count", 1))


def conditions(env: Environment, name: str) -> Dict[str, Dict[str, Any]]:
    """A ClusterNetworkPolicy's conditions by type."""
    held = env.kube.store.get(CNP_RESOURCE, "", name)
    return {c["type"]: c for c in (held.get("status") or {}).get("conditions") or []}


def status_writes(env: Environment) -> int:
    return env.kube.call(lambda store: store.status_writes)


def events_fault(env: Environment, mode: str) -> None:
    """The Events API answers 403 (`forbidden`), never answers (`hang`), or works again (`""`)."""
    env.kube.call(lambda store: store.events.fail(mode))
