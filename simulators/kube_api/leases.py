"""`coordination.k8s.io/v1` Leases in the emulated API server, so that several kube-managers can
elect a leader against one emulator (tests, benchmarks, the demo).

Get, create (409 AlreadyExists), replace and delete, with the Lease strategy's rules
(`pkg/registry/coordination/lease/strategy.go`, `pkg/apis/coordination/validation`): a replace of a
missing Lease creates it; a replace of an existing one needs `metadata.resourceVersion` (422 without,
as no unconditional update is allowed) and answers 409 Conflict when the Lease changed since it was
read; `leaseDurationSeconds` must be > 0 and `leaseTransitions` >= 0 (422); a create carrying a
resourceVersion is a 500, as from the real storage. Leases share the cluster's resourceVersion
sequence (`next_rv`) but are not watched by kube-manager, so they keep no event history. As on a
real server, a Lease cannot be created in a namespace that does not exist (404); the system
namespaces (`default`, `kube-system`, ...) always exist.

Faults for tests (the emulator's alone; a real server has no such switch): `fail_writes_from(identity, mode)` makes every create or replace whose holder is
`identity` fail, with a 500 (`"error"`) or by never answering (`"hang"`); `clear_faults()` ends that.
"""
from __future__ import annotations

import itertools
import time
import uuid
from typing import Any, Callable, Dict, List, Optional, Tuple

import gevent

from simulators.kube_api.errors import (ApiError, Cause, already_exists, bad_value, conflict, copy_json, invalid,
                                        missing_resource_version, namespaced_body, not_found)
from simulators.kube_api.names import name_causes

API_VERSION = "coordination.k8s.io/v1"
KIND = "Lease"
GROUP = "coordination.k8s.io"
RESOURCE = (GROUP, "leases")
PREFIX = f"/apis/{API_VERSION}/namespaces/"
HANG_SECONDS = 3600.0
FAULT_MODES = ("error", "hang")


class LeaseStore:
    """Leases by (namespace, name); `namespace_exists` answers for the emulated cluster."""

    def __init__(self, namespace_exists: Callable[[str], bool] = lambda namespace: True,
                 next_rv: Optional[Callable[[], int]] = None) -> None:
        self._namespace_exists = namespace_exists
        self._leases: Dict[Tuple[str, str], Dict[str, Any]] = {}
        self._next_rv = next_rv if next_rv is not None else itertools.count(1).__next__
        self._faults: Dict[str, str] = {}
        self.writes = 0  # successful creates and replaces, for tests

    def get(self, namespace: str, name: str) -> Dict[str, Any]:
        lease = self._leases.get((namespace, name))
        if lease is None:
            raise not_found(RESOURCE, name)
        return copy_json(lease)

    def create(self, namespace: str, body: Dict[str, Any]) -> Dict[str, Any]:
        lease = _checked(namespace, body)
        key = (namespace, lease["metadata"]["name"])
        self._fault(lease)
        if lease["metadata"].get("resourceVersion"):
            raise ApiError(500, "InternalError", "Internal error occurred: resourceVersion should not "
                                                 "be set on objects to be created")
        if key in self._leases:
            raise already_exists(RESOURCE, key[1])
        if not self._namespace_exists(namespace):
            raise not_found(("", "namespaces"), namespace)
        meta = lease["metadata"]
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        return self._store(key, lease)

    def replace(self, namespace: str, name: str, body: Dict[str, Any]) -> Dict[str, Any]:
        lease = _checked(namespace, body)
        if lease["metadata"]["name"] != name:
            raise ApiError(400, "BadRequest", "the name of the object does not match the URL")
        self._fault(lease)
        old = self._leases.get((namespace, name))
        given = lease["metadata"].pop("resourceVersion", None)
        if old is None:  # the strategy allows create on update, whatever version was given
            return self.create(namespace, lease)
        if not given:
            raise missing_resource_version(RESOURCE, name)
        if given != old["metadata"]["resourceVersion"]:
            raise conflict(RESOURCE, name)
        for kept in ("uid", "creationTimestamp"):
            lease["metadata"][kept] = old["metadata"][kept]
        return self._store((namespace, name), lease)

    def delete(self, namespace: str, name: str) -> Dict[str, Any]:
        lease = self._leases.pop((namespace, name), None)
        if lease is None:
            raise not_found(RESOURCE, name)
        return lease

    def holder(self, namespace: str, name: str) -> str:
        """The holder identity of a Lease ("" when none or no Lease), for tests."""
        lease = self._leases.get((namespace, name))
        return ((lease or {}).get("spec") or {}).get("holderIdentity") or ""

    def fail_writes_from(self, identity: str, mode: str = "error") -> None:
        if mode not in FAULT_MODES:
            raise ValueError(f"fault mode must be one of {FAULT_MODES}, got {mode!r}")
        self._faults[identity] = mode

    def clear_faults(self) -> None:
        self._faults.clear()

    def _fault(self, lease: Dict[str, Any]) -> None:
        mode = self._faults.get((lease.get("spec") or {}).get("holderIdentity") or "")
        if mode == "hang":
            gevent.sleep(HANG_SECONDS)
        if mode is not None:
            raise ApiError(500, "InternalError", "injected fault: lease write refused")

    def _store(self, key: Tuple[str, str], lease: Dict[str, Any]) -> Dict[str, Any]:
        lease["metadata"]["resourceVersion"] = str(self._next_rv())
        self._leases[key] = lease
        self.writes += 1
        return copy_json(lease)


def _checked(namespace: str, body: Any) -> Dict[str, Any]:
    lease = namespaced_body(KIND, API_VERSION, namespace, body)
    spec = lease.get("spec", {})
    if not isinstance(spec, dict):
        raise ApiError(400, "BadRequest", "Lease in version \"v1\" cannot be handled as a Lease: spec must be an object")
    causes: List[Cause] = name_causes(lease["metadata"]["name"])
    duration = spec.get("leaseDurationSeconds")
    if duration is not None and (not isinstance(duration, int) or duration <= 0):
        causes.append(bad_value("spec.leaseDurationSeconds", duration, "must be greater than 0"))
    transitions = spec.get("leaseTransitions")
    if transitions is not None and (not isinstance(transitions, int) or transitions < 0):
        causes.append(bad_value("spec.leaseTransitions", transitions, "must be greater than or equal to 0"))
    if causes:
        raise invalid(GROUP, KIND, lease["metadata"]["name"], causes)
    return lease


def lease_route(path: str) -> "Tuple[str, str] | None":
    """(namespace, name or "") for a Lease URL, else None."""
    if not path.startswith(PREFIX):
        return None
    parts = path[len(PREFIX):].split("/")
    if len(parts) in (2, 3) and parts[0] and parts[1] == "leases":
        if len(parts) == 2:
            return parts[0], ""
        if parts[2]:
            return parts[0], parts[2]
    return None
