"""The Lease as a lock: one leader election record, read, created and replaced by its REST path
over the official `kubernetes` client's `ApiClient` (plumbing/raw_requests.py), as client-go's
`resourcelock.LeaseLock` does.

Optimistic concurrency is the API server's: a replace carries the resourceVersion of the Lease as
last read, so that of two candidates who read the same expired Lease only one can take it (the other
gets 409 Conflict and reads again on its next try). The record is compared as the server stores it
(`raw`), because a candidate judges expiry by when *it* last saw the record change, never by the
times written in it (another host's clock).

Bodies are sent as plain dicts with times formatted as the API's MicroTime, and answers are read as
JSON: the record is compared exactly as the server stores it.
"""
from __future__ import annotations

import datetime
import json
from dataclasses import dataclass
from typing import Any, Dict, Optional, Tuple

from kubernetes.client.rest import ApiException

from kube_manager.kube import raw_requests
from kube_manager.plumbing.refusal import refusal
from vnc_client import jsoncodec


class LockError(Exception):
    """The Lease could not be read or written (connection error, timeout, error status)."""

    def __init__(self, message: str, status: int = 0) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class LeaseRecord:
    """What the Lease's spec says: client-go's `LeaderElectionRecord`."""

    holder: str = ""
    lease_duration: int = 0      # seconds, as the holder asked others to wait
    acquire_time: str = ""
    renew_time: str = ""
    transitions: int = 0

    @classmethod
    def from_spec(cls, spec: Optional[Dict[str, Any]]) -> "LeaseRecord":
        spec = spec if isinstance(spec, dict) else {}
        return cls(holder=_text(spec.get("holderIdentity")), lease_duration=_count(spec.get("leaseDurationSeconds")),
                   acquire_time=_text(spec.get("acquireTime")), renew_time=_text(spec.get("renewTime")),
                   transitions=_count(spec.get("leaseTransitions")))

    def to_spec(self) -> Dict[str, Any]:
        return {"holderIdentity": self.holder, "leaseDurationSeconds": self.lease_duration,
                "acquireTime": self.acquire_time or None, "renewTime": self.renew_time or None,
                "leaseTransitions": self.transitions}


def micro_time(moment: Optional[datetime.datetime] = None) -> str:
    """A MicroTime string (UTC, microseconds), as the API server stores Lease times.

    The client re-reads it into a datetime and sends `isoformat()`, which drops the fraction when the
    microseconds are 0; the server's MicroTime wants six digits, so that one instant moves by a microsecond."""
    moment = moment or datetime.datetime.now(datetime.timezone.utc)
    if moment.microsecond == 0:
        moment = moment.replace(microsecond=1)
    return moment.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaseLock:
    """The Lease `namespace/name`; `get` remembers the object so that `update` replaces exactly the
    version read (client-go keeps the same state in its LeaseLock)."""

    def __init__(self, api_client: Any, namespace: str, name: str) -> None:
        self._api_client = api_client
        self._leases = f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases"
        self.namespace = namespace
        self.name = name
        self._lease: Optional[Dict[str, Any]] = None

    def describe(self) -> str:
        return f"{self.namespace}/{self.name}"

    def get(self, timeout: float) -> Optional[Tuple[LeaseRecord, str]]:
        """The record and its raw form, or None when the Lease does not exist."""
        try:
            lease = self._call("GET", f"{self._leases}/{self.name}", timeout)
        except LockError as exc:
            if exc.status == 404:
                self._lease = None
                return None
            raise
        self._lease = lease
        spec = lease.get("spec")
        return LeaseRecord.from_spec(spec), json.dumps(spec, sort_keys=True)

    def create(self, record: LeaseRecord, timeout: float) -> str:
        """Create the Lease (409 when someone else just did); returns the raw record stored."""
        body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"name": self.name, "namespace": self.namespace}, "spec": record.to_spec()}
        self._lease = self._call("POST", self._leases, timeout, body)
        return json.dumps(self._lease.get("spec"), sort_keys=True)

    def update(self, record: LeaseRecord, timeout: float) -> str:
        """Replace the Lease last read or written (409 when it changed since); returns the raw
        record stored."""
        if self._lease is None:
            raise LockError("the Lease must be read before it is updated")
        body = {**self._lease, "spec": record.to_spec()}
        self._lease = self._call("PUT", f"{self._leases}/{self.name}", timeout, body)
        return json.dumps(self._lease.get("spec"), sort_keys=True)

    def _call(self, method: str, path: str, timeout: float, body: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
        try:
            response = raw_requests.request(self._api_client, method, path, body=body, timeout=timeout)
            try:
                data = jsoncodec.loads(response.data or b"null")
            finally:
                response.release_conn()
        except ApiException as exc:
            raise LockError(refusal(exc), exc.status) from None
        except ValueError as exc:
            raise LockError(f"the answer is not JSON: {exc}") from None
        except Exception as exc:  # connection refused, reset, timed out: all mean "not this time"
            raise LockError(f"{type(exc).__name__}: {exc}") from None
        if not isinstance(data, dict):
            raise LockError("the answer is not a Lease object")
        return data


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0
