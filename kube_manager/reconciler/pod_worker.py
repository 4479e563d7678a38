"""Pods in the work queue: their own key type (`PodKey`) and handler, beside the Contrail objects'.

A pod key is handled by `PodTagger.sync` (pods.py): tagged, waiting for tags being created (parked
on them), or retried with its own backoff while its VM or VMI is missing (the CNI takes seconds).
While a pod is being given tags it holds back the deny rules that use them (see gates.py); a pod
that keeps old tags for the tier deny rules (tiers.py) holds nothing back and waits for those. A pod's tagging state has one writer: the tagger, told here of failures.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Dict, Iterable, List

from kube_manager.records.db import PARKED, RETRYING, Key
from kube_manager.settings import ReconcilerSettings
from vnc_client.ratelimit import ExponentialRateLimiter, half_jitter

from .gates import Gates
from .pods import PodKey, PodTagger, pod_key
from .progress import ACTIVE, BLOCKED
from .shared import Bookkeeping


@dataclass(eq=False)
class PodKeyWorker:
    """Work-queue handling of pod keys."""

    metric_kind: ClassVar[str] = "pod"

    tagger: PodTagger
    _gates: Gates
    books: Bookkeeping
    settings: ReconcilerSettings
    _written_at: Dict[str, int] = field(default_factory=dict, init=False)  # VMI uuid -> write sequence

    def __post_init__(self) -> None:
        cap = max(self.settings.retry_base, self.settings.pod_retry_cap)
        self._backoff = ExponentialRateLimiter(self.settings.retry_base, cap, half_jitter)

    def keys(self, pods: Iterable[Key]) -> List[PodKey]:
        """The work-queue keys of the pods that can be tagged at all."""
        return [pod_key(*pod) for pod in pods if not self.tagger.untaggable(pod)]

    def load(self, pages: Iterable[List[Dict[str, Any]]], since: int) -> None:
        """A resync: the VMIs listed, a page at a time (keeping the VMIs tagged after `since`)."""
        written = self._written_at  # the map tagging adds to while the pages come in
        self.tagger.load(pages, kept=lambda vmi: written.get(vmi, -1) > since)
        self._written_at = {k: s for k, s in self._written_at.items() if s > since}

    def handle(self, key: PodKey) -> None:
        books = self.books
        outcome = self.tagger.sync(key.pod)
        if outcome.written:
            books.counters.wrote("set_tag", len(outcome.written))
        for vmi in outcome.written:
            books.actual.seq += 1
            if books.actual.listing:  # as ActualState notes writes: only what a listing could undo
                self._written_at[vmi] = books.actual.seq
        if outcome.pending:
            books.progress.park(key, outcome.pending, (), ACTIVE)
        elif outcome.done and outcome.holding:
            self._gates.tagging(key, None)  # it carries its new tags: the rules waiting for it may go
            books.progress.park(key, (), outcome.holding, ACTIVE)  # looked at again as they change
            books.progress.notify(key)
        elif outcome.done:
            self._backoff.forget(key)
            books.progress.set(key, None)
        else:
            books.queue.add_after(key, self._backoff.when(key))
            books.progress.set(key, BLOCKED)

    def activated(self, key: PodKey) -> None:
        """Queued to be tagged: the deny rules using the tags it lacks wait for it."""
        self._gates.tagging(key, self.tagger.missing(key.pod))

    def left_active(self, key: PodKey) -> None:
        """Tagged, or waiting for its VM / retrying: it holds nothing back."""
        self._gates.tagging(key, None)

    def failed(self, key: PodKey, reason: str, permanent: bool) -> None:
        self.tagger.mark(key.pod, PARKED if permanent else RETRYING, reason)
