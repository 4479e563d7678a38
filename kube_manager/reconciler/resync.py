"""The resync: list what the config API holds, repair drift, garbage-collect leftovers (SPEC 7).

At start, then every `kube_timer_interval` (the daemon decides when), a resync lists our objects
once per type plus all VMIs, a page at a time (paging.py), the next page (and the next listing's
first) under way while the last is folded in; replaces what the reconciler believed with what is
there, keeping what was written since the listing began; and queues every key whose desired and
actual differ. A restart's first listings all go out early, before the initial Kubernetes lists
are translated (`send_early`), so that the config API renders them meanwhile.

It only drives the reconciler's books (`Bookkeeping`, the pod worker, the parked keys): what is
queued, and how a key is handled, stays the reconciler's (core.py).
"""
from __future__ import annotations

import logging
import time
from contextlib import closing
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterable, List, Optional, Protocol, Tuple

import gevent

from kube_manager.observability.logging_setup import kv
from kube_manager.plumbing.gcpolicy import collector_paused, freeze_young
from kube_manager.records.db import SYNCED, Key
from kube_manager.settings import ReconcilerSettings
from kube_manager.translator.published import DesiredState

from .diff import ObjKey
from .ownership import OWNED_TYPES, Lister, OwnershipMarks, list_type
from .paging import PageWalk
from .pod_worker import PodKeyWorker
from .pods import VMI, PodKey
from .shared import Bookkeeping

log = logging.getLogger(__name__)

# Order in which a resync lists them (after the VMIs): the largest listings first, so that the
# config API renders the next one while the reconciler folds in the last.
LIST_ORDER = ("firewall-rule", "firewall-policy", "tag", "address-group", "application-policy-set")
assert sorted(LIST_ORDER) == sorted(OWNED_TYPES)
# Seconds the first listings of a restart are given to go out before the initial lists are
# translated: a connect and a request to a config API on the same LAN take well under that.
LISTINGS_SEND_GRACE = 0.01

Listings = Tuple[int, PageWalk[Any]]  # the `since` of their loads, the walk


class ResyncTimer(Protocol):
    """Where a resync's duration goes (the reconciler's observer)."""

    def reconciled(self, kind: str, seconds: float) -> None: ...


@dataclass(eq=False)
class Resync:
    """One reconciler's resyncs; see the module docstring."""

    client: Lister
    desired: DesiredState
    marks: OwnershipMarks
    settings: ReconcilerSettings
    books: Bookkeeping
    pods: PodKeyWorker
    parked: Dict[Any, str]  # the reconciler's parked keys: a resync tries them again
    pod_keys: Callable[[], Iterable[Key]]  # every pod Kubernetes knows
    enqueue: Callable[[Any], None]
    order: Callable[[Any], Any]  # the queue order: what others refer to first
    done: Callable[[], None]  # the reconciler's: a first resync is in, every state may have moved
    timer: Optional[ResyncTimer] = None
    _early: Optional[Listings] = field(default=None, init=False)  # the first resync's, sent early

    def send_early(self) -> None:
        """Every first Kubernetes list is in and about to be translated: the first page of each of
        the first resync's listings is asked for now, so that the config API renders them while
        this process translates; their answers are read when the resync wants them."""
        if self._early is not None:
            return
        self._early = self._list_all(early=1 + len(LIST_ORDER))
        # A moment for the requests to go out (connect, send) before this process translates for
        # seconds without yielding; one turn of the hub was not always enough for a connect, and a
        # request still unsent by then merely goes out after the translation, as before.
        gevent.sleep(LISTINGS_SEND_GRACE)

    def abandon(self) -> None:
        """The term is over: listings sent early are never read."""
        if self._early is not None:
            self._early[1].close()
            self._early = None

    def run(self) -> int:
        """List what the config API holds, repair and garbage-collect; returns the keys queued."""
        started = time.monotonic()
        listings, self._early = self._early, None
        since, walk = listings or self._list_all()
        # Each page is folded in (and dropped) in turn, the next page under way meanwhile (the
        # config API renders it while we fold); decoded listings hold no reference cycles for the
        # collector to look for. What the fold builds lives until the next resync: it is frozen at
        # the end in one young pass, not walked by the young and middle passes that the first
        # allocations after the pause would start.
        with collector_paused():
            queued = self._fold_and_queue(walk, since)
            freeze_young()
        if self.timer is not None:
            self.timer.reconciled("resync", time.monotonic() - started)
        log.info("resync done", extra=kv(queued=queued, owned=self.books.actual.count(),
                                         desired=sum(map(len, self.desired.objects.values())),
                                         seconds=round(time.monotonic() - started, 3)))
        return queued

    def _fold_and_queue(self, walk: PageWalk[Any], since: int) -> int:
        """The resync's listings folded in, a page at a time; every key that is not settled queued
        (how many)."""
        actual = self.books.actual
        with closing(walk):
            self.pods.load(walk.pages(VMI), since)
            for obj_type in LIST_ORDER:
                actual.load(obj_type, walk.pages(obj_type), since)
        self.books.counters.reads += walk.count
        actual.loaded(since)
        self.books.progress.deferred.clear()
        self.parked.clear()  # a resync tries parked keys again
        # Only what is to be queued is sorted (queue order matters; after a restart with nothing
        # changed, nothing is queued, and sorting every key was a tenth of the resync).
        unsettled: List[ObjKey] = list(actual.unsettled())
        for key in sorted(unsettled, key=self.order):
            self.enqueue(key)
        tagger = self.pods.tagger
        untagged: List[PodKey] = []
        for pod in self.pods.keys(self.pod_keys()):
            if tagger.needs_work(pod.pod):
                untagged.append(pod)
            else:
                tagger.mark(pod.pod, SYNCED)
        for pod in sorted(untagged):
            self.enqueue(pod)
        self.done()
        return len(unsettled) + len(untagged)

    def _list_all(self, early: int = 0) -> Listings:
        """A resync's listings (the VMIs, then each type) a page at a time (reconciler/paging.py),
        the first page of the first `early` asked for at once; with the `since` of their `load`s."""
        actual = self.books.actual
        since = actual.begin_listing()
        fields = actual.compared_fields()  # the translator's fields: known before it translates
        limit = self.settings.list_page_limit
        walk: PageWalk[Any] = PageWalk([(VMI, self.pods.tagger.vmi_pages(limit)), *(
            (t, list_type(self.client, self.marks, t, fields.get(t), limit)) for t in LIST_ORDER)], early)
        return since, walk
