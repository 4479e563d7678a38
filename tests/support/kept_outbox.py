"""A status outbox that keeps what it is given instead of sending it (tests of kube_manager/status)."""
from __future__ import annotations

from typing import Any, List

from kube_manager.status.outbox import StatusOutbox


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
