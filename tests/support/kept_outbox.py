"""A status outbox that keeps what it is given instead of sending it, and a store-backed stand-in
for the Kubernetes calls its conditions writes make (tests of kube_manager/status)."""
from __future__ import annotations

from typing import Any, Dict, List

from kube_manager.status.outbox import StatusOutbox
from simulators.kube_api.store import KubeStore


class KeptOutbox(StatusOutbox):
    """Keeps the jobs queued since the term began."""

    def __init__(self) -> None:
        super().__init__()
        self.jobs: List[Any] = []

    def open(self, apis: Any, gate: Any) -> None:
        self.jobs = []

    def put(self, job: Any) -> None:
        self.jobs.append(job)


def said(outbox: KeptOutbox) -> List[str]:
    """The reasons of the Events queued (`status` for a conditions write), in order."""
    return [getattr(job, "reason", "status") for job in outbox.jobs]


class StoreApis:
    """The official client's calls a conditions write makes (`CustomObjectsApi`'s status
    subresource), answered in process by an emulated API server's store: what Kubernetes holds,
    and how many status writes it took (`store.status_writes`), are the store's."""

    def __init__(self, store: KubeStore) -> None:
        self.store = store
        self.custom = self

    def get_cluster_custom_object_status(self, group: str, version: str, plural: str, name: str,
                                         **_options: Any) -> Dict[str, Any]:
        return self.store.get(plural, "", name)

    def patch_cluster_custom_object_status(self, group: str, version: str, plural: str, name: str,
                                           body: Dict[str, Any], **_options: Any) -> Dict[str, Any]:
        return self.store.update_status(plural, name, body, patch=True)


def send_status(outbox: KeptOutbox, apis: StoreApis) -> List[bool]:
    """Run the conditions writes kept, in order, as the outbox's greenlet would, and forget every
    job kept: whether each wrote."""
    jobs, outbox.jobs = outbox.jobs, []
    return [job.run(apis, 5.0) for job in jobs if job.target == "status"]
