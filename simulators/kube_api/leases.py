"""`coordination.k8s.io/v1` Leases in the emulated API server, so that several kube-managers can
elect a leader against one emulator (tests, benchmarks, the demo).

Get, create (409 AlreadyExists), replace with the resourceVersion precondition (409 Conflict when
the Lease changed since it was read, as the real server answers) and delete. Leases are not watched
by kube-manager, so they have their own resourceVersion counter and no event history. As on a real
server, a Lease cannot be created in a namespace that does not exist (404); the system namespaces
(`default`, `kube-system`, ...) always exist, even when the manifests loaded do not list them.

Faults for tests: `fail_writes_from(identity, mode)` makes every create or replace whose holder is
`identity` fail, with a 500 (`"error"`) or by never answering (`"hang"`); `clear_faults()` ends that.
"""
from __future__ import annotations

import time
from typing import Any, Callable, Dict, Tuple

import gevent

from simulators.kube_api.errors import ApiError, copy_json, namespaced_body

API_VERSION = "coordination.k8s.io/v1"
KIND = "Lease"
PREFIX = f"/apis/{API_VERSION}/namespaces/"
HANG_SECONDS = 3600.0
FAULT_MODES = ("error", "hang")


class LeaseStore:
    """Leases by (namespace, name); `namespace_exists` answers for the emulated cluster."""

    def __init__(self, namespace_exists: Callable[[str], bool] = lambda namespace: True) -> None:
        self._namespace_exists = namespace_exists
        self._leases: Dict[Tuple[str, str], Dict[str, Any]] = {}
        self._rv = 0
        self._faults: Dict[str, str] = {}
        self.writes = 0  # successful creates and replaces, for tests

    def get(self, namespace: str, name: str) -> Dict[str, Any]:
        lease = self._leases.get((namespace, name))
        if lease is None:
            raise ApiError(404, "NotFound", f'leases.coordination.k8s.io "{name}" not found')
        return copy_json(lease)

    def create(self, namespace: str, body: Dict[str, Any]) -> Dict[str, Any]:
        lease = _checked(namespace, body)
        key = (namespace, lease["metadata"]["name"])
        self._fault(lease)
        if key in self._leases:
            raise ApiError(409, "AlreadyExists", f'leases.coordination.k8s.io "{key[1]}" already exists')
        if not self._namespace_exists(namespace):
            raise ApiError(404, "NotFound", f'namespaces "{namespace}" not found')
        meta = lease["metadata"]
        meta["uid"] = f"lease-{namespace}-{key[1]}-{self._rv + 1}"
        meta["creationTimestamp"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        return self._store(key, lease)

    def replace(self, namespace: str, name: str, body: Dict[str, Any]) -> Dict[str, Any]:
        lease = _checked(namespace, body)
        if lease["metadata"]["name"] != name:
            raise ApiError(400, "BadRequest", "the name of the object does not match the URL")
        self._fault(lease)
        old = self._leases.get((namespace, name))
        if old is None:
            raise ApiError(404, "NotFound", f'leases.coordination.k8s.io "{name}" not found')
        given = lease["metadata"].get("resourceVersion")
        if given and given != old["metadata"]["resourceVersion"]:
            raise ApiError(409, "Conflict", f'Operation cannot be fulfilled on leases.coordination.k8s.io "{name}": '
                                            "the object has been modified; please apply your changes to the "
                                            "latest version and try again")
        for kept in ("uid", "creationTimestamp"):
            lease["metadata"][kept] = old["metadata"][kept]
        return self._store((namespace, name), lease)

    def delete(self, namespace: str, name: str) -> Dict[str, Any]:
        lease = self._leases.pop((namespace, name), None)
        if lease is None:
            raise ApiError(404, "NotFound", f'leases.coordination.k8s.io "{name}" not found')
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
        self._rv += 1
        lease["metadata"]["resourceVersion"] = str(self._rv)
        self._leases[key] = lease
        self.writes += 1
        return copy_json(lease)


def _checked(namespace: str, body: Any) -> Dict[str, Any]:
    lease = namespaced_body(KIND, API_VERSION, namespace, body)
    if not isinstance(lease.get("spec", {}), dict):
        raise ApiError(422, "Invalid", "Lease: spec must be an object")
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
